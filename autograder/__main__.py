"""``python -m autograder <command>``: the instructor's tool for this unit.

Commands: release, student-edition, check-course, grade, cluster-certs, feedback, export,
catalogue, class-server, selfcheck. ``python -m autograder
COMMAND --help`` describes each one. Run everything from the repository root.
"""
from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from . import paths

LAYOUTS = """\
accepted submission layouts (inside SUBMISSIONS):
  <student>/<assignment>/<notebook>.ipynb    nbgrader's submitted/ layout
  <student>.zip, <student>_<anything>.zip    an LMS export: the notebook(s) anywhere inside,
                                             named after the assignment id
  <student>_<anything>.ipynb                 loose notebooks, named after the assignment id
  <student>/<notebook or zip>                one student's folder, notebooks or zips inside
  Canvas "Download Submissions" (unzipped):  <lastfirst>[_LATE]_<userid>_<fileid>_<file>,
                                             the student is the Canvas user id
  Moodle "Download all submissions":         <Full Name>_<id>_assignsubmission_file/<file>
                                             (or ..._file_<file>), the participant id
  Blackboard "Assignment File Download":     <assignment>_<username>_attempt_<time>_<file>,
                                             the username (names of one download are read
                                             together: usernames may hold '_')
  Otherwise the student is the name before the first '_' (no id: two students with one first
  name collide). A name that reads as two students' (free text holding another id) is graded
  for nobody (reason "ambiguous name"). A notebook's file name or path names the assignment id
  (with one assignment, any notebook). A zip is extracted safely (no absolute paths, no '..',
  no links, size limits) into the state folder. A broken upload (bad zip, a zip without the
  assignment's notebook, a file that is not a notebook) is one row of that student, not
  graded, with its reason. Two notebooks of one student and assignment are never picked
  silently: identical copies are graded once, attempts of one Blackboard account by the newest
  attempt time, otherwise neither (reason "duplicate upload: none graded"). A row not graded
  has blank score cells, never 0; the summary lists each case."""

CACHE = """\
cache:
  Grades are cached in <state>/cache/, keyed by the submission's bytes, the source notebook,
  every file of lreact/ and autograder/, the Python and library versions and the grading
  options (--timeout, sandbox mode). Re-running grades only what is new or changed; delete the
  folder to grade everything again."""

HAND = """\
hand grading:
  grade records every submission in nbgrader's gradebook (gradebook.db in the course folder,
  next to its nbgrader_config.py; the repository root by default) and writes the graded
  notebooks to autograded/<student>/<assignment>/. Open formgrader with `make formgrader`
  (JupyterLab at the repository root, nbgrader's Formgrader panel), score and comment the
  cells listed in the CSV's needs_manual_grade column (the mark scheme is shown under each
  answer), then run grade (or feedback) again: hand scores, comments and corrections of
  autograded scores are read back from the gradebook."""


EXPORT = """\
who is who (--ids MAPPING.csv):
  A CSV with a 'submission' column (the student's name in grades.csv) and any of name,
  first_name, last_name, id, sis_user_id, sis_login_id, section, email, username, idnumber
  (an LMS's own export headers such as "SIS Login ID" or "Email address" work; other columns
  are ignored). A student the mapping does not name is LEFT OUT and listed in a warning.
  Without --ids every student is written under the submission name (Canvas: SIS Login ID;
  Moodle: Username) with what nbgrader's gradebook holds (name, email, lms_user_id as ID).
  Text cells are neutralised against spreadsheet formulas (safecsv); scores are numbers."""


CLASS_SERVER = """\
the roster (ROSTER.csv):
  A CSV (UTF-8; ',' or ';' separated) with a header. The student is the first of these columns
  the header has: id, sis_user_id, sis_login_id, username, idnumber, email, submission (an LMS's
  own headers such as "SIS Login ID" or "ID number" work; Canvas's gradebook export and
  Moodle's participants export have them). Every row needs a value there; no id, SIS id, login,
  email or username may belong to two rows. Blank rows and Canvas's "Points Possible" row are
  skipped. Identity columns (those, and name, first_name, last_name, section) are copied to
  keys.csv; other columns are ignored.

the keys folder (--keys DIR, mode 0700, every file 0600):
  keys.csv            the roster's identity columns and "API key": hand each student their row
  keys.json           which key is whose (read again on the next start)
  api-keys.txt        what llama-server reads (--api-key-file)
  instructor-key.txt  your own key
  llama-server.log    the server's log (no key is ever written to it)

students:
  export LREACT_BACKEND=openai LREACT_BASE_URL=http://HOST:PORT/v1 LREACT_API_KEY=<their key>
  then lreact.check_setup() says whether the server answers and accepts the key."""


def _d(text: str) -> str:
    return textwrap.fill(text, 92)


def _formatter(prog):
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32, width=96)


def _common(p, *, out_default: str, out_help: str) -> None:
    p.add_argument("submissions", type=Path, metavar="SUBMISSIONS",
                   help="folder holding the class's submissions (see the layouts below)")
    p.add_argument("--out", type=Path, default=Path(out_default), help=out_help)
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="submissions graded at the same time (default: the number of cores)")
    p.add_argument("--timeout", type=float, default=60, metavar="S",
                   help="seconds each cell may run before it is stopped (default: 60)")
    p.add_argument("--root", type=Path, default=paths.ROOT, metavar="DIR",
                   help="the course folder: solutions/<id>/<id>.ipynb and nbgrader_config.py; "
                        "its gradebook.db and autograded/ are written here "
                        "(default: the repository, %(default)s)")
    p.add_argument("--state", type=Path, default=None, metavar="DIR",
                   help="folder for everything else the grader writes: cache, extracted "
                        "zips, scratch (default: $LREACT_GRADING_DIR or .grading/ in the "
                        "repository)")
    p.add_argument("--no-gradebook", action="store_true",
                   help="do not use nbgrader's gradebook: autograded scores only, hand-graded "
                        "cells left empty (default: use it)")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m autograder", description=__doc__,
                                formatter_class=_formatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser(
        "release", formatter_class=_formatter,
        help="regenerate exercises/ and lab/ from solutions/",
        description=_d(
            "Regenerate the student versions (exercises/, lab/) from the source "
            "notebooks in solutions/ with nbgrader's generate_assignment; running it "
            "twice changes nothing."))
    r.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 naming every committed student version that "
                        "differs from what release generates (default: write them)")

    g = sub.add_parser(
        "grade", formatter_class=_formatter,
        help="grade a folder of submissions into a CSV and nbgrader's gradebook",
        description=_d(
            "Autograde every submission in SUBMISSIONS (each in its own sandboxed "
            "run, in parallel), record it in nbgrader's gradebook and write the grade "
            "sheet: student, assignment, one column per graded cell (autograded and "
            "by hand), total and max out of all points, needs_manual_grade (cells "
            "still to grade in formgrader) and reason (why a row lost points: timeout, "
            "kernel died, other; or why it was not graded, its score cells left blank, never "
            "0: duplicate upload, ambiguous name, bad zip, not a notebook, no notebook, grader "
            "error (the grader's own fault only)). Every CSV cell is written so that "
            "no spreadsheet evaluates it (OWASP's CSV injection rule) and every name in the "
            "summary has its control characters shown escaped."),
        epilog="\n\n".join([LAYOUTS, CACHE, HAND]))
    _common(g, out_default="grades.csv",
            out_help="the CSV grade sheet to write (default: grades.csv)")
    g.add_argument("--cluster", default=None, metavar="tls://HOST:8786",
                   help="grade on the workers of this Dask scheduler, over mutual TLS only "
                        "(README.md, \"Grading on a cluster\"); the cache, gradebook and CSV "
                        "stay on this machine, and --jobs is ignored (default: "
                        "$LREACT_DASK_SCHEDULER; unset: this machine)")
    g.add_argument("--cluster-certs", default=None, type=Path, metavar="DIR",
                   help="the folder `cluster-certs DIR` wrote: this machine's certificate for "
                        "--cluster (default: $LREACT_DASK_CERTS)")

    k = sub.add_parser(
        "cluster-certs", formatter_class=_formatter,
        help="make the certificates of a grading cluster (mutual TLS)",
        description=_d(
            "Write a private certificate authority and, signed by it, a certificate and key "
            "for the Dask scheduler, for the workers and for this machine's grade --cluster "
            "into DIR (a new or empty folder), and print which file goes to which machine and "
            "the commands that start the scheduler and the workers with them. The CA's key "
            "stays in DIR; keys are written mode 0600. README.md, \"Grading on a cluster\"."))
    k.add_argument("folder", type=Path, metavar="DIR",
                   help="new or empty folder for the certificates")

    f = sub.add_parser(
        "feedback", formatter_class=_formatter,
        help="one HTML feedback page per student and assignment",
        description=_d(
            "Write OUT/<student>/<assignment>.html for every submission: the "
            "student's answers, the visible part of every test, each test's score "
            "with its first error and hint, and each hand-graded cell's score and "
            "comment from the gradebook. Never hidden tests, solutions or mark "
            "schemes. Maths is typeset to MathML while the page is written, so a page "
            "needs no network and no script. Grades come from the cache (grading what "
            "is missing), so run it after grade and after hand grading in formgrader. "
            "What the answers printed and the errors shown come from a second run of "
            "each submission with the released tests only (no hidden test has run in "
            "it, so nothing a hidden test passed can reach the page; cached like a "
            "grade); a test that lost points only in its hidden part shows just the "
            "kind of error and its visible hint."),
        epilog="\n\n".join([LAYOUTS, CACHE, HAND]))
    _common(f, out_default="feedback",
            out_help="folder for the HTML pages (default: feedback/)")

    e = sub.add_parser(
        "student-edition", formatter_class=_formatter,
        help="write the students' copy of the course (no answers) to a new folder",
        description=_d(
            "Write the student edition to OUT: the lecture, the released exercises and labs, "
            "lreact (the modules that hold reference implementations compiled, without their "
            "source), a student README, Makefile, environment and Binder files. It is searched "
            "for every hidden test, solution and reference implementation before the command "
            "returns; a leak deletes it and fails (autograder/README.md, \"Two editions\")."))
    e.add_argument("out", type=Path, metavar="OUT", help="a new or empty folder")
    e.add_argument("--root", type=Path, default=paths.ROOT,
                   help="the course folder (default: this repository)")

    k = sub.add_parser(
        "check-course", formatter_class=_formatter,
        help="check the source notebooks against the rules the grader and the proofs need",
        description=_d(
            "Read solutions/<assignment>/<assignment>.ipynb (and the catalogues) and print "
            "every rule a cell breaks, with the fix; exit 1 if any. Rules of kind 'grading' "
            "are what this grader needs to grade right; 'house' rules are this unit's "
            "conventions for students (autograder/README.md, \"Adapting the unit\"; "
            "autograder/proofs/course_rules.py)."))
    k.add_argument("assignment", nargs="*", metavar="ASSIGNMENT",
                   help="assignment ids (default: every assignment in solutions/)")
    k.add_argument("--root", type=Path, default=paths.ROOT,
                   help="the course folder (default: this repository)")
    k.add_argument("--grading-only", action="store_true",
                   help="only the rules this grader needs (not the unit's house rules; default: both)")

    c = sub.add_parser(
        "catalogue", formatter_class=_formatter,
        help="list and check the wrong-answer catalogue",
        description=_d(
            "List every wrong answer of autograder/proofs/wrong_answers/<assignment>/ with "
            "the mistake it models, and check that each edit applies to its solution "
            "cell (exit 1 naming the first that does not). File formats: "
            "autograder/proofs/catalogue.py."))
    c.add_argument("assignment", nargs="*", metavar="ASSIGNMENT",
                   help="assignment ids (default: every assignment in solutions/)")
    c.add_argument("--show", metavar="FILE",
                   help="print the full answer cell one entry produces (file name or stem; "
                        "default: list every entry)")
    c.add_argument("--convert", type=Path, metavar="FILE.py",
                   help="turn a whole-cell entry into a .edit of its solution cell, printed "
                        "(nothing is written; default: no conversion)")

    x = sub.add_parser(
        "export", formatter_class=_formatter,
        help="the gradebook as a CSV that Canvas or Moodle imports",
        description=_d(
            "Write the scores of nbgrader's gradebook (as grade leaves it, hand grades "
            "included) as a CSV an LMS imports: one row per student, one column per "
            "assignment, in points; a score is the total of its row in grades.csv. A student "
            "without a submission of an assignment, or whose submission the last grade run "
            "did not grade, gets an empty cell, never 0; a student with nothing graded gets "
            "no row (the LMS keeps what it has)."),
        epilog=EXPORT)
    x.add_argument("--format", required=True, choices=("canvas", "moodle", "csv"),
                   help="canvas: Canvas's gradebook import (Student, ID, SIS User ID, SIS "
                        "Login ID, Section, a Points Possible row); moodle: Moodle's CSV grade "
                        "import (First name, Last name, ID number, Email address, Username); "
                        "csv: student, name, email, id, section, ..., total, max (required: no default)")
    x.add_argument("--out", type=Path, default=None, metavar="FILE",
                   help="the CSV to write (default: canvas-grades.csv, moodle-grades.csv or "
                        "plain-grades.csv)")
    x.add_argument("--ids", type=Path, default=None, metavar="MAPPING.csv",
                   help="who is who in the LMS (see below; default: the submission names)")
    x.add_argument("--assignment", action="append", default=None, metavar="ID[=TITLE]",
                   help="export this assignment, its column titled TITLE (default: id); "
                        "repeat for more (default: every assignment of the gradebook)")
    x.add_argument("--root", type=Path, default=paths.ROOT, metavar="DIR",
                   help="the course folder whose gradebook.db is read (default: the "
                        "repository, %(default)s)")

    v = sub.add_parser(
        "class-server", formatter_class=_formatter,
        help="serve one model to a class: a key per student, llama-server with slots",
        description=_d(
            "Write one API key per student of ROSTER (an LMS export) into the --keys folder "
            "(keys.csv to hand out; every file mode 0600; a student keeps their key on the next "
            "start) and start llama.cpp's llama-server with them (--api-key-file), SLOTS "
            "requests answered at once and CTX tokens of context for each. Prints what it "
            "started and how students connect (never a key), then serves until Ctrl-C. "
            "README.md, \"A class on one model server\": sizing, and what it does not do "
            "(budgets, rate limits)."),
        epilog=CLASS_SERVER)
    v.add_argument("roster", type=Path, metavar="ROSTER.csv",
                   help="the class's roster as the LMS exports it (a header naming each "
                        "student's id; see below)")
    v.add_argument("--model", required=True, type=Path, metavar="FILE.gguf",
                   help="the GGUF model file to serve (required: no default)")
    v.add_argument("--slots", type=int, default=4, metavar="N",
                   help="requests answered at the same time; more wait their turn (default: 4)")
    v.add_argument("--ctx", type=int, default=4096, metavar="N",
                   help="tokens of context for each slot: the longest history plus reply one "
                        "request may have (default: 4096)")
    v.add_argument("--port", type=int, default=8080, metavar="P", help="port (default: 8080)")
    v.add_argument("--host", default="0.0.0.0", metavar="ADDRESS",
                   help="address to listen on (default: 0.0.0.0, every network of this "
                        "machine; 127.0.0.1: this machine only)")
    v.add_argument("--keys", type=Path, default=Path("class-server"), metavar="DIR",
                   help="folder of the keys and the server's log (default: class-server/ "
                        "in the current folder)")
    v.add_argument("--new-key", action="append", default=[], metavar="ID",
                   help="give this student a new key (the old one stops working); repeat "
                        "for more (default: everyone keeps theirs)")
    v.add_argument("--max-tokens", type=int, default=1024, metavar="N",
                   help="reply length for a request that sets none (default: 1024)")
    v.add_argument("--threads", type=int, default=None, metavar="N",
                   help="CPU threads generating (default: llama-server's, the cores)")
    v.add_argument("--http-threads", type=int, default=None, metavar="N",
                   help="connections handled at once (default: max(32, 4 x slots))")
    v.add_argument("--cache-ram", type=int, default=0, metavar="MIB",
                   help="host memory for llama-server's prompt cache (default: 0, off)")
    v.add_argument("--gpu-layers", default=None, metavar="N",
                   help="layers on the GPU, a number or 'all' (default: llama-server's, "
                        "'auto'; needs a llama-server built for the GPU)")
    v.add_argument("--chat-template-file", type=Path, default=None, metavar="FILE.jinja",
                   help="chat template instead of the model file's own (default: the file's)")
    v.add_argument("--tls-cert", type=Path, default=None, metavar="CERT.pem",
                   help="serve HTTPS with this certificate (with --tls-key; default: HTTP)")
    v.add_argument("--tls-key", type=Path, default=None, metavar="KEY.pem",
                   help="the certificate's private key (default: none)")

    s = sub.add_parser(
        "selfcheck", formatter_class=_formatter,
        help="every grading proof in one command (CI runs it)",
        description=_d(
            "Release is current, solutions score full marks, student versions zero, "
            "every catalogued wrong answer loses marks, the hostile class is "
            "contained. Exits non-zero on any failure."))
    s.add_argument("--jobs", type=int, default=2, metavar="N",
                   help="gradings at the same time (default: 2)")
    s.add_argument("--quick", action="store_true",
                   help="skip the hostile class (default: run it)")
    s.add_argument("--state", type=Path, default=None, metavar="DIR",
                   help="folder for what the proofs write: caches, scratch (default: a "
                        "throwaway folder per proof)")
    s.add_argument("pytest_args", nargs="*", metavar="PYTEST_ARG",
                   help="more pytest arguments after --, e.g. -- -k lecture-ReAct-lab to prove "
                        "one assignment (default: none)")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.command == "release":
        from .instructor.release import release
        return release(check=args.check)
    if args.command == "grade":
        from .instructor.grade import grade_all, summary
        from .scale.cluster import address
        runner = None
        if address(args.cluster):
            from .scale.cluster import Cluster
            runner = Cluster(address(args.cluster), certs=args.cluster_certs)
        try:
            records, failures = grade_all(args.submissions, root=args.root, out=args.out,
                                          jobs=args.jobs, timeout=args.timeout,
                                          state=args.state, gradebook=not args.no_gradebook,
                                          runner=runner)
        finally:
            if runner is not None:
                runner.close()
        print(summary(records, failures))
        print(f"wrote {args.out}")
        return 0
    if args.command == "cluster-certs":
        from .scale.certs import command
        return command(args.folder)
    if args.command == "feedback":
        from .feedback.pages import feedback_all
        written = feedback_all(args.submissions, args.out, root=args.root, jobs=args.jobs,
                               timeout=args.timeout, state=args.state,
                               gradebook=not args.no_gradebook)
        print(f"wrote {len(written)} feedback file(s) to {args.out}")
        return 0
    if args.command == "export":
        from .instructor.export import command
        return command(args.format, args.out, root=args.root, ids=args.ids,
                       assignments=args.assignment)
    if args.command == "student-edition":
        from .instructor.edition import command
        return command(args.out, root=args.root)
    if args.command == "check-course":
        from .proofs.course_rules import command
        return command(args.assignment, root=args.root, grading_only=args.grading_only)
    if args.command == "catalogue":
        from .proofs.catalogue import command
        return command(args.assignment, show=args.show, convert=args.convert)
    if args.command == "class-server":
        from .instructor.class_server import Settings, command
        settings = Settings(slots=args.slots, ctx=args.ctx, port=args.port, host=args.host,
                            max_tokens=args.max_tokens, threads=args.threads,
                            http_threads=args.http_threads, cache_ram=args.cache_ram,
                            gpu_layers=args.gpu_layers,
                            chat_template_file=args.chat_template_file, tls_cert=args.tls_cert,
                            tls_key=args.tls_key)
        return command(args.roster, args.model, keys_dir=args.keys, settings=settings,
                       new_keys_for=args.new_key)
    if args.command == "selfcheck":
        import inspect

        from .proofs.selfcheck import selfcheck
        params = inspect.signature(selfcheck).parameters
        more = {k: v for k, v in (("state", args.state), ("extra", tuple(args.pytest_args)))
                if k in params}
        return selfcheck(jobs=args.jobs, quick=args.quick, **more)
    return 2


if __name__ == "__main__":
    sys.exit(main())
