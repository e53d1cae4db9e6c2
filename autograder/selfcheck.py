"""``python -m autograder selfcheck``: every grading proof, as pytest tests (CI runs it).

The proofs are the tests ``tests/test_selfcheck_*.py`` (marker ``selfcheck``); this command runs
that selection with pytest and returns its exit status, nothing more:

- ``test_selfcheck_release``: the committed student versions are what release generates;
- ``test_selfcheck_grading``: for every assignment in ``solutions/``, the source scores full
  marks, the student version zero, and every wrong answer of the catalogue runs and loses marks
  on its ``test_<grade_id>*`` cells;
- ``test_selfcheck_hostile``: honest students and every ``autograder/hostile/`` entry graded
  together in the sandbox: each hostile one scores zero, honest grades equal their graded-alone
  grades, no protected file changes, no hidden test reaches a feedback notebook, no connection
  reaches the grader.

The helpers below are what those tests share (which assignments exist, the hostile entries, a
notebook cut after a function's tests, a TCP listener, digests of protected folders).
"""
from __future__ import annotations

import hashlib
import os
import socket
import sys
import threading
from pathlib import Path

from . import cells, paths

HONEST_TIMEOUT = 60
HOSTILE_TIMEOUT = 30
LISTEN_PORT = 47913  # the network hostile tries to reach this listener
TESTS = ("tests/test_selfcheck_release.py", "tests/test_selfcheck_grading.py",
         "tests/test_selfcheck_hostile.py")


def selfcheck(jobs: int = 2, quick: bool = False, state=None, extra=()) -> int:
    """Run the proofs with pytest; its exit status (0: every proof holds)."""
    import pytest
    os.environ["LREACT_SELFCHECK_JOBS"] = str(max(1, int(jobs)))
    if state is not None:
        os.environ["LREACT_SELFCHECK_STATE"] = str(state)
    files = [str(paths.ROOT / t) for t in TESTS if not (quick and "hostile" in t)]
    args = ["-m", "selfcheck", "-p", "no:cacheprovider", "-q", "-rfE",
            f"--rootdir={paths.ROOT}", *files, *extra]
    return int(pytest.main(args))


# --- shared by the selfcheck tests ------------------------------------------------------------

def assignments(root: Path = paths.ROOT) -> list[str]:
    """Every assignment with a source notebook ``solutions/<id>/<id>.ipynb``, sorted."""
    return sorted(p.parent.name for p in (Path(root) / "solutions").glob("*/*.ipynb")
                  if p.stem == p.parent.name)


def jobs() -> int:
    return max(1, int(os.environ.get("LREACT_SELFCHECK_JOBS", "2")))


def state_folder(default: Path) -> paths.State:
    """The selfcheck's own state folder (``selfcheck --state``), else ``default``."""
    return paths.State(os.environ.get("LREACT_SELFCHECK_STATE") or default)


def tests_of(nb, gid: str) -> list[str]:
    """The autograded test cells of answer ``gid``: ``test_<gid>`` and ``test_<gid>__*``."""
    return [cells.grade_id(c) for c in nb.cells if cells.is_autograded_test(c)
            and (cells.grade_id(c) == f"test_{gid}"
                 or cells.grade_id(c).startswith(f"test_{gid}__"))]


def cut_after(nb, test_ids):
    """The notebook up to its last cell in ``test_ids`` (later cells cannot change them)."""
    wanted = set(test_ids)
    last = max(i for i, c in enumerate(nb.cells) if cells.grade_id(c) in wanted)
    out = cells.load(nb)
    out.cells = out.cells[: last + 1]
    return out


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


def hidden_lines(nb, student_text: str = "") -> list[str]:
    """Distinctive lines of the hidden tests that the student version (``student_text``) does
    not show anywhere: what must never reach a feedback notebook."""
    found = []
    for cell in nb.cells:
        inside = False
        for line in cell.source.splitlines():
            if "BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "END HIDDEN TESTS" in line:
                inside = False
            elif inside and len(line.strip()) >= 30 and not line.strip().startswith("#") \
                    and line.strip() not in student_text:
                found.append(line.strip())
    return found


def digest_tree(*roots) -> dict:
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


def outputs_text(executed) -> str:
    """Every output of a feedback notebook as text (not the cells' sources)."""
    parts = []
    for cell in (executed or {}).get("cells", []):
        for out in cell.get("outputs", []):
            parts.append(str(out.get("text", "")))
            parts.append(str(out.get("evalue", "")))
            parts.append(str(out.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


class Listener:
    """A TCP listener on the grader's side: any connection from a submission is a leak."""

    def __init__(self, port=LISTEN_PORT):
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


if __name__ == "__main__":
    sys.exit(selfcheck())
