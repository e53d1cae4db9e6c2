"""The student process runs only code its notebook shows (issue 28, the outside red team).

The student edition ships the modules that hold reference implementations compiled, without
source (``autograder/instructor/edition.py``).  Byte code can be read back (``marshal``, ``dis``)
and handed in as data: an answer cell that loads a blob of it into a function scored half of
lab 2 and was not flagged.  ``install()`` adds an audit hook (PEP 578) to the student process,
after its imports and before the first answer cell, that refuses the plain routes from data to
running code and to other programs:

- ``marshal.loads`` / ``marshal.load``: compiled code as data (the import system's own reading
  of a cached module file in a folder the answers cannot write is let through, after checking
  that the bytes are that file's);
- ``code.__new__`` (``types.CodeType(...)``, ``code.replace``) and setting a function's
  ``__code__``, ``__defaults__`` or ``__kwdefaults__``;
- starting programs (``subprocess``, ``os.system``, ``os.exec*``, ``os.spawn*``,
  ``os.posix_spawn``, ``os.fork``, ``pty.spawn``): an answer computes, it does not run a second
  Python that would load the blob.  The course's code sandbox (``lreact.actions.codeact
  .run_python``, which lab 2 hands to ``run_code_action``) still starts its runs: what runs there
  comes back as text only, and a blob sent there is flagged in the source;
- reaching the interpreter's C API through ``ctypes`` (``ctypes.pythonapi``) and opening
  ``/proc/<pid>/mem``.

An audit hook is not a boundary: code that already runs in a process can, with ``ctypes``,
write that process's memory.  The boundary is outside: the sandbox (no reference code in the
grading copy of lreact, ``sandbox/kit.py``) and the instructor's review of what
``instructor/hidden_code.py`` flags in the answers' source (``reason``: "brings code it does not
show").  This hook makes the plain routes fail loudly, with a message that says why.
"""
from __future__ import annotations

import re
import sys

MEM = re.compile(r"^/proc/[^/]+/(task/[^/]+/)?mem$")
REFUSED_ALWAYS = frozenset({"marshal.load", "code.__new__"})
STARTS_PROGRAMS = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.spawn",
                             "os.posix_spawn", "os.fork", "os.forkpty", "pty.spawn"})
# The course's code sandbox (lab 2, D.4: an answer's run_code_action gets its own copy of
# run_python, whose code runs where the answer runs): these functions of the answers' copy of
# lreact.actions.codeact build their commands themselves and may start them.
SANDBOX_STARTERS = ("run_python", "bwrap_works", "_user_process_count", "_kill_group")
WHY = ("the grader runs only code an answer shows: loading compiled code, building code "
       "objects, changing a function's code and starting programs are refused here "
       "({event}); write the function in the cell")


class HiddenCodeRefused(RuntimeError):
    """An answer tried to run code it does not show (see ``autograder/inside/guard.py``)."""


def _trusted_roots() -> tuple:
    import os
    import sysconfig
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            roots.add(sysconfig.get_path(key))
        except KeyError:
            pass
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    roots.add(here)                       # the kit (read-only inside the sandbox)
    return tuple(sorted(os.path.realpath(r) + os.sep for r in roots if r))


def _sandbox_codes() -> tuple:
    """(the code objects of ``SANDBOX_STARTERS``, those of the subprocess module's functions),
    taken before any answer runs: an answer can neither build code objects nor change a
    function's code, so a frame with one of these is theirs."""
    import subprocess
    import types
    plumbing = set()
    for owner in (subprocess, subprocess.Popen):
        for value in vars(owner).values():
            if isinstance(value, types.FunctionType):
                plumbing.add(value.__code__)
    try:
        from lreact.actions import codeact
    except ImportError:
        return frozenset(), frozenset(plumbing)
    found = [getattr(codeact, n, None) for n in SANDBOX_STARTERS]
    found = [getattr(f, "__wrapped__", f) for f in found]           # lru_cache'd ones
    starters = {f.__code__ for f in found if isinstance(f, types.FunctionType)}
    return frozenset(starters), frozenset(plumbing)


def install() -> None:
    """Add the hook (once; an audit hook cannot be removed)."""
    if getattr(sys, "_lreact_guard", False):
        return
    import os
    import importlib._bootstrap_external as external

    starters, plumbing = _sandbox_codes()

    def hook(event, args, *, _always=REFUSED_ALWAYS, _why=WHY, _error=HiddenCodeRefused,
             _starts=STARTS_PROGRAMS, _starters=starters, _plumbing=plumbing,
             _frame=sys._getframe, _compile=external._compile_bytecode.__code__,
             _roots=_trusted_roots(), _real=os.path.realpath, _open=open, _str=str,
             _isinstance=isinstance, _mem=MEM):
        if event in _always:
            raise _error(_why.format(event=event))
        if event in _starts:
            frame = _frame(1)
            while frame is not None and frame.f_code in _plumbing:
                frame = frame.f_back          # subprocess's own functions
            if frame is not None and frame.f_code in _starters:
                return                        # the course's code sandbox starting its run
            raise _error(_why.format(event=event))
        if event == "marshal.loads":
            caller = _frame(1)
            if caller.f_code is _compile:
                path = caller.f_locals.get("bytecode_path")
                if _isinstance(path, _str) and _real(path).startswith(_roots):
                    try:
                        with _open(path, "rb") as f:
                            if f.read()[16:] == bytes(args[0]):
                                return
                    except OSError:
                        pass
            raise _error(_why.format(event=event))
        if event == "object.__setattr__":
            if len(args) >= 2 and args[1] in ("__code__", "__defaults__", "__kwdefaults__"):
                raise _error(_why.format(event=f"setting {args[1]}"))
            return
        if event in ("ctypes.dlsym", "ctypes.dlsym/handle"):
            name = args[-1] if args else ""
            if _isinstance(name, _str) and (name.startswith("Py") or name.startswith("_Py")):
                raise _error(_why.format(event=f"ctypes: {name}"))
            return
        if event == "open" and args and _isinstance(args[0], (_str, bytes)):
            path = args[0] if _isinstance(args[0], _str) else args[0].decode("utf-8", "replace")
            if _mem.match(path):
                raise _error(_why.format(event=f"open {path}"))

    sys.addaudithook(hook)
    sys._lreact_guard = True
