"""Benchmark: our grader (2 workers, sandboxed) vs plain sequential ``nbgrader autograde``.

    python -m scripts.benchmark_grading [--n 40] [--jobs 2] [--assignment lecture-ReAct-lab]

(run from the repository root, so that the ``autograder`` package is importable).

Grades N identical copies of the assignment's solution both ways, checks that every
student gets the same score on every test cell from both, and prints, side by side, the
wall time and the CPU time (core-seconds) per submission of each, and two ratios:

- wall: nbgrader's wall time over ours (ours uses ``--jobs`` cores, nbgrader one);
- per core: nbgrader's core-seconds per submission over ours.  CPU time is measured, not
  inferred: for nbgrader, ``getrusage(RUSAGE_CHILDREN)`` around ``nbgrader autograde`` (it
  waits for its kernels); for ours, this process's own CPU time plus every sandboxed run's
  CPU time from its cgroup (``sandbox.RUNS_CPU``; every process of a run, the warm ones that
  were never used included), or ``RUSAGE_CHILDREN`` where there are no cgroups.  The wall
  ratio divided by the workers (``wall / jobs``) is printed too: it assumes every core busy.

nbgrader runs in a throwaway course folder with its own gradebook (its ``alembic`` needs the
environment's ``bin/`` on PATH).
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder import paths
from autograder.sandbox import launch as sandbox
from autograder.instructor.grade import grade_all

ROOT = paths.ROOT


def cpu_of(who) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


class Clock:
    """Wall time and CPU time (this process, its waited-for children, the sandboxed runs'
    cgroups) of one block."""

    def __enter__(self):
        self.t0 = time.monotonic()
        self.own0, self.kids0 = cpu_of(resource.RUSAGE_SELF), cpu_of(resource.RUSAGE_CHILDREN)
        self.runs0 = sandbox.RUNS_CPU.seconds
        return self

    def __exit__(self, *exc):
        self.wall = time.monotonic() - self.t0
        self.own = cpu_of(resource.RUSAGE_SELF) - self.own0
        kids = cpu_of(resource.RUSAGE_CHILDREN) - self.kids0
        runs = sandbox.RUNS_CPU.seconds - self.runs0
        # a run's cgroup holds the processes this one waits for (and those it cannot):
        # the larger of the two counts every process once
        self.cpu = self.own + max(kids, runs)
        return False


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
    with Clock() as took:
        done = subprocess.run(nbg + ["autograde", aid, "--force"], cwd=course, env=env,
                              capture_output=True, text=True)
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
    with Clock() as took:
        records, failures = grade_all(subs, root=root, out=tmp / "grades.csv", jobs=jobs,
                                      timeout=timeout, state=tmp / "state", progress=False,
                                      cache=False)  # identical copies must each be graded
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
    n = args.n
    print(f"n = {n} submissions: copies of {source.relative_to(ROOT)}")
    print(f"{'':32}{'wall s':>9}{'wall/sub':>10}{'CPU s':>9}{'CPU/sub':>9}")
    for name, c in ((f"ours ({args.jobs} workers, sandboxed)", t_ours),
                    ("nbgrader autograde (sequential)", t_nbg)):
        print(f"{name:32}{c.wall:9.1f}{c.wall / n:10.2f}{c.cpu:9.1f}{c.cpu / n:9.2f}")
    print(f"ratio: wall {t_nbg.wall / t_ours.wall:.2f}x, per core {t_nbg.cpu / t_ours.cpu:.2f}x "
          f"(core-seconds per submission: nbgrader {t_nbg.cpu / n:.2f}, ours "
          f"{t_ours.cpu / n:.2f}); wall / {args.jobs} workers "
          f"{t_nbg.wall / t_ours.wall / args.jobs:.2f}x")
    print(f"ours: {len(failures)} failure(s); our own process {t_ours.own:.1f} CPU s")
    print(f"scores identical on all {len(ours)} (student, test cell) pairs: {same}"
          + ("" if same else f"; missing on one side: {lost[:5]}, differing: {differ[:5]}"))
    for key in differ[:5]:
        print(f"  {key}: ours {ours[key]:g} ({errors.get(key) or 'passed'}), "
              f"nbgrader {theirs[key]:g}")
    return 0 if same and not failures else 1


if __name__ == "__main__":
    sys.exit(main())
