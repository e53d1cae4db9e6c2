"""Entry point of one sandboxed grading process: ``runner.py student|tester-reused FD...``.

The grader copies this file, with ``inside/channel/link.py``, ``inside/student.py`` and ``inside.trusted_namespace.py``, into its kit
(``kit.py``); the sandbox shows the kit read-only at ``/grading/kit``.  The process prepares
the scratch folders its environment names, imports what every run needs (so a warm process
waits for its job with the imports done), then reads its job on stdin.
"""
from __future__ import annotations

import ctypes
import glob
import os
import shutil
import sys


def no_dump() -> None:
    """Forbid ptrace and /proc/<pid>/{mem,environ,fd} to other processes of the same uid."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    except Exception:  # noqa: BLE001 - not Linux: nothing to do
        pass


def prepare_scratch() -> None:
    for var in ("HOME", "TMPDIR", "MPLCONFIGDIR", "IPYTHONDIR", "XDG_CACHE_HOME"):
        if os.environ.get(var):
            os.makedirs(os.environ[var], exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    for fonts in glob.glob(os.path.join(here, "fontlist-*.json")):
        if os.environ.get("MPLCONFIGDIR"):
            shutil.copy(fonts, os.environ["MPLCONFIGDIR"])


def skip_slow_optional_imports() -> None:
    """``jsonschema`` imports ``rfc3987_syntax`` when it is installed (JupyterLab's event
    schemas pull it in), and that import builds a parser for a second of CPU per process, for
    the ``iri`` format checks only, which the course never asks for (no ``format_checker``).
    Marking it absent makes jsonschema skip those two checkers, as it does where the package
    is not installed."""
    sys.modules.setdefault("rfc3987_syntax", None)


def main(argv) -> int:
    role, fds = argv[0], [int(x) for x in argv[1:]]
    no_dump()
    skip_slow_optional_imports()
    prepare_scratch()
    for fd in fds:
        os.set_inheritable(fd, False)
    if role == "tester-reused":        # one job after another (trusted.TrustedProcess): control, result
        from autograder.inside import trusted
        trusted.preload()
        return trusted.serve(*fds)
    if role == "student":
        from autograder.inside import student
        student.preload()
        return student.main(*fds)
    raise SystemExit(f"unknown role {role!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
