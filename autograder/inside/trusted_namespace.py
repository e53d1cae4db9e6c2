"""The trusted process: runs the instructor's setup and test cells and decides every verdict.

It is started inside the sandbox (no network, its own user) with the full ``lreact``.  The test
cells reach it through a pipe from the grader, never through a file.  It drives the student
process (``inside/student.py``) in notebook order: "run answer cell i", then a test cell here, and so
on.  In the test cells' namespace every name the student defined is either the plain value it
held (fetched right after the cell that set it) or, for a function, an ``Answer`` whose call
crosses the channel with plain data and comes back as plain data.  Objects a test hands to
an answer (a ScriptedLLM, a registry, a logits function) stay here; the answer gets handles
to them and its calls come back here (a random Generator's calls come back as a log that is
replayed here: ``inside/channel/link.py``).

The verdict: a test cell passes iff it ran to its end here.  Nothing the student process sends
is a verdict; at worst it is a wrong value or an exception that makes the test fail.  What a
test consumes is plain data decided here: a student's function can only be called
(``handles.StudentFunction``), a ``repeat`` reply is a list of exactly n plain values, a value
that could not be passed is ``Unavailable`` (using it says why), and a failed test's error is
written here without asking the student process anything (``error_text``).
"""
from __future__ import annotations

import builtins
import os
import signal
import sys
import time
import types

from .channel.link import (
    AnswerInterrupted,
    ChannelError,
    ChannelTimeout,
    Link,
    NotPlainData,
    Pipe,
    StudentFunction,
)
from .output import OUTPUT_CAP, Capped, clean_outputs, first_line

BLOCKED_PREFIXES = ("_", "gi_", "cr_", "ag_", "f_", "tb_", "co_")
BLOCKED_TYPES = (types.ModuleType, type, types.FrameType, types.CodeType, types.TracebackType,
                 types.CellType)
GRACE = 5.0        # seconds an interrupted answer has to reply before its process is stopped


class CellTimeout(ChannelError):
    """A test cell ran past its time limit (raised by an alarm)."""


class Answer(StudentFunction):
    """A function the student defined, reached by name: calling it crosses the channel, and
    that is all it does here (``channel.handles.StudentFunction``)."""

    __slots__ = ()

    def __init__(self, link, name):
        super().__init__(link, name, name)

    def __call__(self, *args, **kwargs):
        return self._link.call({"name": self._hid}, args, kwargs)

    def lreact_repeat(self, n: int, args, kwargs) -> list:
        """``[self(*args, **kwargs) for _ in range(n)]`` in one request (``labchecks.repeat``):
        a list of exactly n plain values, else the request fails."""
        return self._link.call({"name": self._hid}, args, kwargs, repeat=n)


class ValueUnavailable(RuntimeError):
    """A test used a student's name whose value could not be passed to the tests."""


class Unavailable:
    """A student name whose value the tests cannot have (not plain data, or too large to
    pass): any use raises ``ValueUnavailable`` saying why; a name no test uses costs nothing.
    (Not a TypeError, which a checker would report as a wrong type without the reason.)"""

    def __init__(self, name, why):
        self._why = f"{name} cannot be used by the tests: {why}"

    def _refuse(self, *a, **k):
        raise ValueUnavailable(self._why)

    def __getattr__(self, name):
        self._refuse()

    __call__ = __iter__ = __len__ = __bool__ = __getitem__ = __contains__ = _refuse
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __float__ = __int__ = __index__ = __complex__ = __array__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __abs__ = __neg__ = _refuse
    __hash__ = None

    def __repr__(self):
        return f"<unavailable: {self._why}>"


class TrustedNamespace:
    """The test cells' namespace and the requests the student process may make of us."""

    def __init__(self, link_pipe: Pipe, events, timeout: float, interrupt_fd=None):
        self.link = Link(link_pipe, "T", self.handle)
        self.events = events
        self.timeout = float(timeout)
        self.interrupt_fd = interrupt_fd
        if interrupt_fd is not None:
            self.link.on_timeout = self.interrupt
        self.ns = {"__name__": "__main__", "__builtins__": builtins,
                   "get_ipython": lambda: _NoShell()}
        self.protected = set(dir(builtins)) | {"get_ipython"}
        self.installed: dict = {}     # name -> object installed from the student's namespace
        self.stopped = None           # why the student process cannot be used any more
        self.link.scope_of = self.scope
        self.link.codec.classes.known = self.own_class

    # requests from the student process, on objects of ours it holds handles to
    def handle(self, m):
        op = m.get("op")
        target = m.get("target") if op == "call" else m
        obj = self.link.codec.local(target.get("ref") if isinstance(target, dict) else None)
        if op == "call":
            if not callable(obj):
                raise TypeError("not callable")
            args, kwargs = self.link.decode_call(m)
            return obj(*args, **kwargs), None
        if op == "getattr":
            name = m.get("name")
            if not isinstance(name, str) or name.startswith(BLOCKED_PREFIXES):
                raise AttributeError(f"the tests' objects do not show {name!r}")
            value = getattr(obj, name)
            if isinstance(value, BLOCKED_TYPES):
                raise AttributeError(f"the tests' objects do not show {name!r}")
            return value, None
        if op == "getitem":
            return obj[self.link.codec.decode(m.get("key"))], None
        if op == "len":
            return len(obj), None
        if op == "iter":
            return iter(obj), None
        if op == "next":
            return next(obj), None
        if op == "contains":
            return self.link.codec.decode(m.get("item")) in obj, None
        if op == "bool":
            return bool(obj), None
        if op == "repr":
            return repr(obj)[:2000], None
        raise ValueError(f"unknown request {op!r}")

    # the student's names
    def install(self, names: dict, gone: list) -> None:
        """The names a cell (or a call, ``watch_names``) set, as plain values (decoded within
        one reply's budget) or as the student's functions; a value that cannot be had is
        ``Unavailable``, saying why.  A name the tests' code has bound itself stays theirs."""
        names = names if isinstance(names, dict) else {}
        with self.link.codec.receiving():
            for name, entry in names.items():
                if not isinstance(name, str) or not name.isidentifier() \
                        or name in self.protected \
                        or (name in self.ns and self.ns[name] is not self.installed.get(name)):
                    continue
                kind, value, same = (entry + [None, None, None])[:3] \
                    if isinstance(entry, list) else (None, None, None)
                if kind == "callable":
                    obj = Answer(self.link, name)
                elif kind == "data":
                    try:
                        obj = self.link.codec.decode(value)
                    except (NotPlainData, RecursionError) as e:
                        obj = Unavailable(name, f"the value sent was refused: {e}")
                    else:
                        if same == 1 and _update_in_place(self.installed.get(name), obj):
                            continue     # the same object, changed in place, as in one kernel
                else:
                    why = value if isinstance(value, str) and value else \
                        "it is a module, a class or another object, not plain data"
                    obj = Unavailable(name, why[:300])
                self.ns[name] = obj
                self.installed[name] = obj
        for name in gone if isinstance(gone, list) else []:
            if isinstance(name, str) and name in self.installed \
                    and self.ns.get(name) is self.installed[name]:
                del self.ns[name]

    def scope(self):
        """The answers' names this namespace deleted or rebound (a test's ``del squares`` or
        ``squares = ...``): each call of an answer sees them so, as in one kernel
        (``student.StudentNamespace.enter_scope``); None when there is none.  Only names that
        crossed as values or functions count (a module both sides imported is each side's own),
        and a rebinding to something the answers cannot receive, or to a callable the tests
        imported rather than defined (``_may_rebind``), is left out."""
        gone, pairs = [], []
        for name, obj in self.installed.items():
            if isinstance(obj, Unavailable):
                continue
            if name not in self.ns:
                gone.append(name)
            elif self.ns[name] is not obj:
                if not self._may_rebind(self.ns[name]):
                    continue
                try:
                    pairs.append([name, self.link.codec.encode(self.ns[name])])
                except NotPlainData:
                    continue
        if not gone and not pairs:
            return None
        out = {"del": gone} if gone else {}
        if pairs:
            out["set"] = pairs
        return out

    def _may_rebind(self, value) -> bool:
        """A rebinding reaches an answer's call when it is data, one of the answers' own
        functions, or a function the tests' cells defined; never a callable the tests imported
        (``from lreact.labchecks import reference`` in a test must not hand the answer that uses
        the same name the course's reference implementation)."""
        if isinstance(value, Answer) or not callable(value):
            return True
        return getattr(value, "__globals__", None) is self.ns

    def own_class(self, name: str):
        """A class the tests' own cells (set-up or test) bound to ``name``, else None: a value
        of a class of that name and shape is then built as this class (``channel.classes``)."""
        value = self.ns.get(name) if name in self.protected else None
        return value if isinstance(value, type) else None

    def watch_names(self, read_by_tests: frozenset) -> None:
        """While a test cell runs: when the tests' code reads any of the answers' data names,
        each call of an answer brings back the names it changed (``Link.on_names``), so a value
        a function filled in place reaches the test as it would in one kernel; otherwise calls
        carry nothing extra."""
        data = {n for n, o in self.installed.items() if not isinstance(o, Answer)}
        self.link.on_names = self.install if data & read_by_tests else None

    def interrupt(self):
        """An answer ran past the time limit: interrupt it, as a kernel is interrupted on a
        timeout (nbgrader does the same), and give it ``GRACE`` seconds to reply."""
        try:
            os.write(self.interrupt_fd, b"!")
        except OSError:
            return None
        return GRACE

    def stop(self, why: str) -> None:
        if not self.stopped:
            self.stopped = why
            self.link.broken = why
            self.events({"event": "stop_student", "why": why})

    # cells
    def run_student(self, index: int) -> dict:
        if self.stopped:
            return {"ran": False, "ok": False, "error": f"not run: {self.stopped}",
                    "outputs": []}
        self.link.deadline = time.monotonic() + self.timeout
        try:
            m = self.link.request_raw({"op": "run", "index": index})
        except AnswerInterrupted as e:
            if self.link.broken:
                self.stop(f"the cell did not finish within {self.timeout:g} s")
                return {"ran": False, "ok": False, "error": f"timeout: {self.stopped}",
                        "outputs": []}
            raw = e.reply.get("raw") if isinstance(e.reply.get("raw"), dict) else {}
            self.install(raw.get("names") if isinstance(raw.get("names"), dict) else {},
                         raw.get("gone"))
            return {"ran": True, "ok": False, "outputs": clean_outputs(raw.get("outputs")),
                    "error": f"timeout: the cell did not finish within {self.timeout:g} s and "
                             "was interrupted"}
        except ChannelTimeout:
            self.stop(f"the cell did not finish within {self.timeout:g} s")
            return {"ran": False, "ok": False, "error": f"timeout: {self.stopped}",
                    "outputs": []}
        except ChannelError as e:
            self.stop(f"the process running the answers ended ({e})")
            return {"ran": False, "ok": False, "error": self.stopped, "outputs": []}
        finally:
            self.link.deadline = None
        raw = m.get("raw")
        if not isinstance(raw, dict):
            return {"ran": True, "ok": False, "error": "the cell could not run", "outputs": []}
        self.install(raw.get("names") if isinstance(raw.get("names"), dict) else {},
                     raw.get("gone"))
        return {"ran": True, "ok": raw.get("ok") is True, "error": None,
                "outputs": clean_outputs(raw.get("outputs"))}

    def run_here(self, source: str, label: str) -> dict:
        out, err = Capped(OUTPUT_CAP), Capped(OUTPUT_CAP)
        out.lreact_cell = err.lreact_cell = True   # the cell's own output: no answer text
        saved = sys.stdout, sys.stderr
        error = failed = None
        self.link.deadline = time.monotonic() + self.timeout
        signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, self.timeout + GRACE + 5)
        try:
            sys.stdout, sys.stderr = out, err
            code = compile(_python(source), label, "exec")
            exec(code, self.ns)
        except AnswerInterrupted as e:
            if self.link.broken:
                self.stop(f"an answer did not reply within {self.timeout:g} s in {label}")
                error = f"timeout: {self.stopped}"
            else:
                error = (f"timeout: {e} did not finish within {self.timeout:g} s and was "
                         f"interrupted (in {label})")
        except ChannelTimeout:
            self.stop(f"an answer did not reply within {self.timeout:g} s in {label}")
            error = f"timeout: {self.stopped}"
        except CellTimeout:
            self.stop(f"{label} ran past {self.timeout:g} s")
            error = f"timeout: {self.stopped}"
        except ChannelError as e:
            if not self.stopped:
                self.stop(f"the process running the answers ended ({e})")
            error = f"the answers cannot be reached: {self.stopped}"
        except BaseException as e:  # noqa: BLE001 - the test did not run to its end
            failed = e
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            sys.stdout, sys.stderr = saved
            self.link.deadline = None
        if failed is not None:
            error = self.error_text(failed)
            if self.stopped and isinstance(failed, NameError):
                error = f"{error} (the answers cannot be reached: {self.stopped})"
        outputs = []
        if out.size:
            outputs.append({"output_type": "stream", "name": "stdout", "text": out.text()})
        if err.size:
            outputs.append({"output_type": "stream", "name": "stderr", "text": err.text()})
        if error:
            ename, _, evalue = error.partition(": ")
            outputs.append({"output_type": "error", "ename": ename, "evalue": evalue})
        return {"ran": error is None, "ok": error is None, "error": error, "outputs": outputs}

    def error_text(self, e: BaseException) -> str:
        """The first line of a failed test's error, written here from plain data only: the
        student process is not asked meanwhile (a stand-in's repr is local anyway), so an
        error can never hang or become a grader error, whatever that process does."""
        with self.link.refused("a test's error is written"):
            try:
                text = f"{type(e).__name__}: {e}"
            except BaseException:  # noqa: BLE001 - a message that cannot be written here
                text = f"{type(e).__name__}: (its message could not be written)"
        return first_line(text) or type(e).__name__

    def protect_own_names(self) -> None:
        """Names a setup or test cell bound here are the tests' own: a student's later name of
        the same spelling never replaces them in the tests' namespace."""
        for k, v in self.ns.items():
            if isinstance(k, str) and self.installed.get(k) is not v:
                self.protected.add(k)
                self.installed.pop(k, None)


class _NoShell:
    """``get_ipython()`` in the trusted process: magics in a setup cell do nothing here."""

    def run_line_magic(self, *a, **k):
        return None

    run_cell_magic = system = run_line_magic


def _update_in_place(old, new) -> bool:
    """Make ``old`` (the tests' copy of an answer's value) equal to ``new`` without replacing
    it, so every reference a test holds sees the change; False where the types differ."""
    if old is None or type(old) is not type(new):
        return False
    if type(old) is list:
        old[:] = new
    elif type(old) is dict:
        old.clear()
        old.update(new)
    elif type(old) is set:
        old.clear()
        old.update(new)
    else:
        import numpy as np
        if not (type(old) is np.ndarray and old.shape == new.shape and old.dtype == new.dtype
                and old.flags.writeable):
            return False
        old[...] = new
    return True


def names_read(sources) -> frozenset:
    """Every name the tests' code (setup and test cells) reads."""
    import ast
    found = set()
    for source in sources:
        try:
            tree = ast.parse(_python(source))
        except SyntaxError:
            continue
        found.update(n.id for n in ast.walk(tree) if isinstance(n, ast.Name))
    return frozenset(found)


def _alarm(signum, frame):
    raise CellTimeout("time limit")


def _python(source: str) -> str:
    """IPython syntax (magics, ``!cmd``) as plain Python, as the kernel would transform it."""
    from IPython.core.inputtransformer2 import TransformerManager
    return TransformerManager().transform_cell(source)
