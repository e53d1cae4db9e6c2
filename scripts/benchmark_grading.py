"""Benchmark: our grader (2 workers, sandboxed) vs plain sequential ``nbgrader autograde``.

    python -m scripts.benchmark_grading [--n 40] [--jobs 2] [--assignment lecture-ReAct-lab]

(run from the repository root, so that the ``autograder`` package is importable).

Grades N identical copies of the assignment's solution both ways, checks that every
student gets the same score on every test cell from both, and prints the wall-time ratio
and the seconds per submission. nbgrader runs in a throwaway course folder with its own
gradebook (its ``alembic`` needs the environment's ``bin/`` on PATH).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder import paths
from autograder.grade import grade_all

ROOT = paths.ROOT


def nbgrader_scores(course: Path, aid: str) -> dict:
    from nbgrader.api import Gradebook
    out = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for sub in gb.assignment_submissions(aid):
            for nb in sub.notebooks:
                for grade in nb.grades:
                    if grade.cell_type == "code" and grade.name.startswith("test_"):
                        out[(sub.student.id, grade.name)] = float(grade.score)
    return out


def run_nbgrader(source: Path, aid: str, students: list[str], tmp: Path, timeout: float):
    course = tmp / "course"
    (course / "source" / aid).mkdir(parents=True)
    shutil.copy(source, course / "source" / aid / f"{aid}.ipynb")
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        f"c.CourseDirectory.db_assignments = [dict(name={aid!r})]\n"
        f"c.CourseDirectory.db_students = [dict(id=s) for s in {students!r}]\n"
        f"c.Execute.timeout = {int(timeout)}\n")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
           f"{os.environ.get('PATH', '')}"}
    nbg = [sys.executable, "-m", "nbgrader"]
    subprocess.run(nbg + ["db", "student", "import", "/dev/null"], cwd=course, env=env,
                   capture_output=True)
    subprocess.run(nbg + ["generate_assignment", aid, "--force"], cwd=course, env=env,
                   check=True, capture_output=True)
    for s in students:
        dest = course / "submitted" / s / aid
        dest.mkdir(parents=True)
        shutil.copy(source, dest / f"{aid}.ipynb")
    t0 = time.monotonic()
    done = subprocess.run(nbg + ["autograde", aid, "--force"], cwd=course, env=env,
                          capture_output=True, text=True)
    took = time.monotonic() - t0
    if done.returncode != 0:
        print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
        raise SystemExit("nbgrader autograde failed")
    return nbgrader_scores(course, aid), took


def run_ours(source: Path, aid: str, students: list[str], tmp: Path, jobs: int,
             timeout: float):
    subs = tmp / "submissions"
    for s in students:
        dest = subs / s / aid
        dest.mkdir(parents=True)
        shutil.copy(source, dest / f"{aid}.ipynb")
    root = tmp / "root"
    (root / "solutions" / aid).mkdir(parents=True)
    shutil.copy(source, root / "solutions" / aid / f"{aid}.ipynb")
    t0 = time.monotonic()
    records, failures = grade_all(subs, root=root, out=tmp / "grades.csv", jobs=jobs,
                                  timeout=timeout, state=tmp / "state", progress=False,
                                  cache=False)  # identical copies must each be graded
    took = time.monotonic() - t0
    scores = {(r["student"], g): float(v[0]) for r in records for g, v in r["scores"].items()}
    errors = {(r["student"], g): e for r in records for g, e in r.get("errors", {}).items()}
    return scores, took, failures, errors


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=40)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--assignment", default=paths.LAB)
    p.add_argument("--timeout", type=float, default=60)
    args = p.parse_args(argv)
    source = paths.source_path(args.assignment)
    if not source.exists():
        print(f"no source notebook {source}")
        return 1
    students = [f"s{i:03d}" for i in range(args.n)]
    with tempfile.TemporaryDirectory(prefix="lreact-bench-") as tmp:
        tmp = Path(tmp)
        ours, t_ours, failures, errors = run_ours(source, args.assignment, students, tmp, args.jobs,
                                          args.timeout)
        theirs, t_nbg = run_nbgrader(source, args.assignment, students, tmp, args.timeout)
    same = ours == theirs
    lost = sorted(set(theirs) ^ set(ours))
    differ = sorted(k for k in set(ours) & set(theirs) if ours[k] != theirs[k])
    print(f"submissions: {args.n} copies of {source.relative_to(ROOT)}")
    print(f"ours ({args.jobs} workers, sandboxed): {t_ours:.1f} s, "
          f"{t_ours / args.n:.2f} s per submission, {len(failures)} failure(s)")
    print(f"nbgrader autograde (sequential):     {t_nbg:.1f} s, "
          f"{t_nbg / args.n:.2f} s per submission")
    print(f"ratio: {t_nbg / t_ours:.2f}x faster")
    print(f"scores identical on all {len(ours)} (student, test cell) pairs: {same}"
          + ("" if same else f"; missing on one side: {lost[:5]}, differing: {differ[:5]}"))
    for key in differ[:5]:
        print(f"  {key}: ours {ours[key]:g} ({errors.get(key) or 'passed'}), "
              f"nbgrader {theirs[key]:g}")
    return 0 if same and not failures else 1


if __name__ == "__main__":
    sys.exit(main())
