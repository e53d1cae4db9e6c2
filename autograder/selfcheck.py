"""``python -m autograder selfcheck``: every grading proof in one command (CI runs it).

1. ``release --check``: the committed student versions are what release generates.
2. Each source notebook scores full marks on every autograded test cell.
3. Each unchanged student version scores zero on every autograded test cell.
4. Every wrong answer in ``autograder/wrong_answers/<assignment>/`` loses marks on its
   ``test_<grade_id>*`` cells (the notebook is cut after the last of them, to save time).
5. The hostile class: honest students with known scores plus every entry of
   ``autograder/hostile/``, graded together in the sandbox. Each hostile one scores zero,
   every honest grade equals its grade when graded alone, the files they tried to read
   leaked nothing, the files they tried to write are unchanged, no connection got out.
Exits non-zero on any failure. A missing source notebook is skipped loudly (a failure in CI).
"""
from __future__ import annotations

import hashlib
import os
import socket
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

from . import engine, paths, sandbox
from .release import generate, release

HONEST_TIMEOUT = 60
HOSTILE_TIMEOUT = 15
LISTEN_PORT = 47913  # the network hostile tries to reach this listener


class Report:
    def __init__(self):
        self.failures = 0

    def ok(self, text):
        print(f"  PASS  {text}", flush=True)

    def fail(self, text):
        self.failures += 1
        print(f"  FAIL  {text}", flush=True)

    def check(self, cond, text, detail=""):
        (self.ok if cond else self.fail)(text if cond or not detail else f"{text}: {detail}")
        return cond

    def section(self, title):
        print(f"\n== {title}", flush=True)


def _ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def tests_of(nb, gid: str) -> list[str]:
    return [engine.grade_id(c) for c in nb.cells if engine.is_autograded_test(c)
            and (engine.grade_id(c) == f"test_{gid}"
                 or engine.grade_id(c).startswith(f"test_{gid}__"))]


def cut_after(nb, test_ids) -> nbformat.NotebookNode:
    """The notebook up to its last cell in ``test_ids`` (later cells cannot change them)."""
    last = max(i for i, c in enumerate(nb.cells) if engine.grade_id(c) in set(test_ids))
    out = engine.load(nb)
    out.cells = out.cells[: last + 1]
    return out


def read_wrong_answers(aid: str):
    folder = paths.WRONG_ANSWERS_DIR / aid
    return sorted(folder.glob("*.py")) if folder.is_dir() else []


def check_assignment(aid: str, source: Path, pool, report: Report) -> None:
    src = engine.load(source)
    student = nbformat.reads(generate(source), as_version=4)
    full = pool.submit(engine.grade_notebook, aid, src, HONEST_TIMEOUT, source=src)
    stub = pool.submit(engine.grade_notebook, aid, student, HONEST_TIMEOUT, source=src)
    jobs = []
    for f in read_wrong_answers(aid):
        gid = f.name.split("__")[0]
        text = f.read_text(encoding="utf-8")
        tests = tests_of(src, gid)
        if not text.startswith("# WRONG:") or not tests:
            jobs.append((f, gid, tests, None))
            continue
        try:
            nb = engine.replace_cell(src, gid, text)
        except KeyError:
            jobs.append((f, gid, [], None))
            continue
        cut = cut_after(nb, tests)
        jobs.append((f, gid, tests, pool.submit(engine.grade_notebook, aid, cut,
                                                HONEST_TIMEOUT, source=cut_after(src, tests))))
    r = full.result()
    missing = {g: e for g, e in r.errors.items()}
    report.check(r.total == r.possible and not missing and r.possible > 0,
                 f"{aid}: source scores full marks ({r.total:g}/{r.possible:g} on "
                 f"{len(r.scores)} test cells)", f"lost: {missing}")
    r = stub.result()
    earned = {g: a for g, (a, p) in r.scores.items() if a}
    report.check(r.total == 0, f"{aid}: unchanged student version scores zero "
                 f"(0/{r.possible:g})", f"earned: {earned}")
    caught = 0
    for f, gid, tests, fut in jobs:
        if fut is None:
            report.fail(f"{aid}: {f.name}: not a usable wrong answer (first line must be "
                        f"'# WRONG: ...', grade_id {gid!r} must have test cells)")
            continue
        res = fut.result()
        got = sum(res.scores[t][0] for t in tests)
        pts = sum(res.scores[t][1] for t in tests)
        if got < pts:
            caught += 1
        else:
            report.fail(f"{aid}: wrong answer {f.name} NOT caught: {got:g}/{pts:g} on {tests}")
    n = len(jobs)
    short = paths.SHORT.get(aid, aid)
    report.check(caught == n, f"{short}: {caught}/{n} wrong answers caught")


# --- the hostile class ----------------------------------------------------------------------

def hostile_entries():
    """(name, assignment id, grade_id, source text) for every file in autograder/hostile/."""
    out = []
    for f in sorted(paths.HOSTILE_DIR.glob("*.py")):
        text = f.read_text(encoding="utf-8")
        head = text.splitlines()[0] if text else ""
        if head.startswith("# HOSTILE:"):
            aid, gid = head[len("# HOSTILE:"):].split(":")[0].split()
            out.append((f.stem, aid, gid, text))
    return out


def _digest_tree(*roots) -> dict:
    found = {}
    for root in roots:
        root = Path(root)
        if root.is_file():
            found[str(root)] = hashlib.sha256(root.read_bytes()).hexdigest()
        elif root.is_dir():
            for p in sorted(root.rglob("*")):
                if p.is_file():
                    found[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return found


class Listener:
    """A TCP listener on the grader's side: any connection from a submission is a leak."""

    def __init__(self, port):
        self.hits = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind(("127.0.0.1", port))
            self.sock.listen(8)
            self.sock.settimeout(0.5)
            self.ok = True
        except OSError:
            self.ok = False
        self.stop = False
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while self.ok and not self.stop:
            try:
                conn, _ = self.sock.accept()
                self.hits += 1
                conn.close()
            except OSError:
                pass

    def close(self):
        self.stop = True
        self.sock.close()


def hostile_class(jobs: int, report: Report) -> None:
    from .grade import grade_all
    entries = hostile_entries()
    aids = sorted({aid for _, aid, _, _ in entries})
    for aid in aids:
        if not paths.source_path(aid).exists():
            msg = f"hostile class for {aid}: SKIPPED, no source notebook yet"
            (report.fail if _ci() else print)(f"  SKIP  {msg}" if not _ci() else msg)
            entries = [e for e in entries if e[1] != aid]
    if not entries:
        return
    if not sandbox.bwrap_works():
        msg = ("hostile class: NOT RUN, bubblewrap is not usable here, so hostile code would "
               "run unconfined. " + sandbox.describe())
        if _ci() or sandbox.required():
            report.fail(msg)
        else:
            print(f"  SKIP  {msg}")
        return
    with tempfile.TemporaryDirectory(prefix="lreact-selfcheck-") as tmp:
        tmp = Path(tmp)
        klass, alone_state, class_state = tmp / "class", tmp / "alone", tmp / "state"
        honest = {}
        for aid in aids:
            src = engine.load(paths.source_path(aid))
            stub = nbformat.reads(generate(paths.source_path(aid)), as_version=4)
            half = engine.load(src)
            answers = [c for c in half.cells if engine.is_answer(c)]
            for c in answers[1::2]:
                c.source = engine.stub(c).source
            honest.update({("honest_full", aid): src, ("honest_stub", aid): stub,
                           ("honest_half", aid): half})
            for name, haid, gid, text in entries:
                if haid == aid:
                    honest_or_not = engine.replace_cell(stub, gid, text)
                    _write(klass / f"hostile_{name}" / aid / f"{aid}.ipynb", honest_or_not)
        alone = tmp / "alone_class"
        for (student, aid), nb in honest.items():
            _write(alone / student / aid / f"{aid}.ipynb", nb)
            _write(klass / student / aid / f"{aid}.ipynb", nb)
        records, _ = grade_all(alone, out=None, jobs=jobs, timeout=HOSTILE_TIMEOUT,
                               state=alone_state, sandbox="require", progress=False)
        baseline = {(r["student"], r["assignment"]): r for r in records}
        for (student, aid), r in sorted(baseline.items()):
            if student == "honest_full":
                report.check(r["total"] == r["possible"], f"{aid}: honest_full graded alone "
                             f"{r['total']:g}/{r['possible']:g}", f"errors {r['errors']}")
            if student == "honest_stub":
                report.check(r["total"] == 0, f"{aid}: honest_stub graded alone 0")
        protected = [klass, alone_state / "cache", paths.ROOT / "solutions",
                     paths.ROOT / "autograder", paths.STATE_DIR / "cache"]
        before = _digest_tree(*protected)
        gradebook = paths.ROOT / "gradebook.db"
        gradebook_before = gradebook.exists()
        listener = Listener(LISTEN_PORT)
        t0 = time.monotonic()
        records, failures = grade_all(klass, out=tmp / "grades.csv", jobs=jobs,
                                      timeout=HOSTILE_TIMEOUT, state=class_state,
                                      sandbox="require", progress=False)
        took = time.monotonic() - t0
        listener.close()
        after = _digest_tree(*protected)
        print(f"  (graded {len(records)} submissions of the class in {took:.0f} s)")
        for r in records:
            key = (r["student"], r["assignment"])
            outputs = _all_text(r)
            if r["student"].startswith("hostile_"):
                why = f" ({r['failure']})" if r["failure"] else ""
                report.check(r["total"] == 0 and "LEAK" not in outputs,
                             f"{r['student']}: scores 0/{r['possible']:g}{why}",
                             f"got {r['total']:g}; leaks: "
                             f"{[ln for ln in outputs.splitlines() if 'LEAK' in ln][:3]}")
            else:
                base = baseline[key]
                report.check(r["scores"] == base["scores"],
                             f"{r['student']}: {r['total']:g}/{r['possible']:g}, same as "
                             "when graded alone",
                             f"class {r['scores']} vs alone {base['scores']}")
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        report.check(not changed, "no protected file was changed or created "
                     "(class folder, grade caches, solutions/, autograder/)",
                     f"{changed[:5]}")
        report.check(gradebook.exists() == gradebook_before,
                     "the repository gradebook was not created or touched")
        report.check(listener.ok and listener.hits == 0,
                     "no submission reached the grader's TCP listener",
                     f"listener ok={listener.ok}, connections={listener.hits}")


def _write(path: Path, nb) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.from_dict(nb), path)


def _all_text(record) -> str:
    nb = record.get("executed") or {}
    parts = []
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            parts.append(str(out.get("text", "")))
            parts.append(str(out.get("evalue", "")))
            parts.append(str(out.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


# --- everything --------------------------------------------------------------------------

def selfcheck(jobs: int = 2, quick: bool = False) -> int:
    report = Report()
    t0 = time.monotonic()
    print(sandbox.describe())
    report.section("release --check")
    lines = []
    status = release(check=True, out=lines.append)
    for line in lines:
        (report.ok if "up to date" in line else
         report.fail if "--check:" in line and status else print)(line)
    report.section("source full marks, student versions zero, wrong answers caught")
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for aid in paths.ASSIGNMENTS:
            source = paths.source_path(aid)
            if not source.exists():
                msg = f"{aid}: no source notebook {source.relative_to(paths.ROOT)}"
                if _ci():
                    report.fail(msg + " (missing counts as a failure in CI)")
                else:
                    print(f"  SKIP  !!! {msg}: NOT CHECKED !!!")
                continue
            check_assignment(aid, source, pool, report)
    if not quick:
        report.section("hostile class (sandboxed)")
        hostile_class(jobs, report)
    took = time.monotonic() - t0
    print(f"\nselfcheck: {'FAILED' if report.failures else 'passed'}"
          f" ({report.failures} failure(s), {took:.0f} s)")
    return 1 if report.failures else 0
