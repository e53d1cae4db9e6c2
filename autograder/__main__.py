"""``python -m autograder <command>``: release, grade, feedback, selfcheck."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import paths


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("release", help="regenerate exercises/ and lab/ from solutions/")
    r.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if a committed student version is stale")

    g = sub.add_parser("grade", help="autograde a folder of submissions into a CSV")
    g.add_argument("submissions", type=Path)
    g.add_argument("--out", type=Path, default=Path("grades.csv"))
    g.add_argument("--jobs", type=int, default=None, help="parallel workers (default: cores)")
    g.add_argument("--timeout", type=float, default=60, help="seconds per cell (default 60)")
    g.add_argument("--root", type=Path, default=paths.ROOT, help=argparse.SUPPRESS)
    g.add_argument("--state", type=Path, default=None, help=argparse.SUPPRESS)

    f = sub.add_parser("feedback", help="per-student HTML feedback (no hidden tests)")
    f.add_argument("submissions", type=Path)
    f.add_argument("--out", type=Path, default=Path("feedback"))
    f.add_argument("--jobs", type=int, default=None)
    f.add_argument("--timeout", type=float, default=60)
    f.add_argument("--root", type=Path, default=paths.ROOT, help=argparse.SUPPRESS)
    f.add_argument("--state", type=Path, default=None, help=argparse.SUPPRESS)

    s = sub.add_parser("selfcheck", help="every proof in one command (CI runs it)")
    s.add_argument("--jobs", type=int, default=2)
    s.add_argument("--quick", action="store_true", help="skip the hostile class")

    args = p.parse_args(argv)
    if args.command == "release":
        from .release import release
        return release(check=args.check)
    if args.command == "grade":
        from .grade import grade_all, summary
        records, failures = grade_all(args.submissions, root=args.root, out=args.out,
                                      jobs=args.jobs, timeout=args.timeout, state=args.state)
        print(summary(records, failures))
        print(f"wrote {args.out}")
        return 0
    if args.command == "feedback":
        from .feedback import feedback_all
        written = feedback_all(args.submissions, args.out, root=args.root, jobs=args.jobs,
                               timeout=args.timeout, state=args.state)
        print(f"wrote {len(written)} feedback file(s) to {args.out}")
        return 0
    if args.command == "selfcheck":
        from .selfcheck import selfcheck
        return selfcheck(jobs=args.jobs, quick=args.quick)
    return 2


if __name__ == "__main__":
    sys.exit(main())
