"""What the grader's proofs share (``tests/test_selfcheck_*.py``; ``python -m autograder
selfcheck`` runs them): time limits, the selfcheck's options, a listener that catches any
connection, digests of the files no submission may change, and the hidden-test lines no
feedback may hold."""
import hashlib
import os
import socket
import threading
from pathlib import Path

from autograder import paths

HONEST_TIMEOUT = 60
HOSTILE_TIMEOUT = 30
LISTEN_PORT = 47913  # autograder/proofs/hostile/network.py tries to reach this listener


def jobs() -> int:
    return max(1, int(os.environ.get("LREACT_SELFCHECK_JOBS", "2")))


def state_folder(default: Path) -> paths.State:
    """The selfcheck's own state folder (``selfcheck --state``), else ``default``."""
    return paths.State(os.environ.get("LREACT_SELFCHECK_STATE") or default)


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
