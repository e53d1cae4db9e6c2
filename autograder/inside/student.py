"""The student process: runs the answer cells (and the instructor cells they need), answers calls.

It is started inside the sandbox with a copy of ``lreact`` that has no reference code (see
``lreact/reference.py``) and receives, on stdin, ONLY the cells it runs: the submission's answer
cells and the instructor's non-test cells.  It never sees a test cell, an expected value or the
verdict: the trusted process (``inside.trusted_namespace.py``) asks it, over the channel (``inside/channel/link.py``), to run
cell i, to give the value of a name, or to call one of its functions with plain data.

Cells run in an in-process IPython shell (magics and ``get_ipython()`` work as in Jupyter); what
a cell prints is captured for the student's feedback, capped in size.  The values a cell sets go
to the tests as plain data when they fit (``codec.py``'s limits, ``VALUES_ROOM`` per cell); one
that does not (a 20-million-float array) is sent as its reason instead, so it costs nothing
unless a test uses it, and that test fails saying why.  A reply that cannot be sent fails its
one request (``Link.serve``); the process lives on.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback

from .channel import codec as codecs
from .channel.codec import shared_function
from .channel.link import (
    MAX_MESSAGE,
    ChannelError,
    Link,
    NotPlainData,
    Pipe,
    Raw,
    _mutable,
    is_mirror,
)
from . import guard
from .output import OUTPUT_CAP, Capped

HIDDEN_NAMES = {"In", "Out", "get_ipython", "exit", "quit"}
_IMMUTABLE = frozenset((type(None), bool, int, float, complex, str, bytes))
MAX_REPEAT = 1_000_000        # calls in one ``repeat`` request
MAX_NAMES = 10_000            # names one cell may pass on (each at most MAX_NAME characters)
MAX_NAME = 200
VALUES_ROOM = MAX_MESSAGE - 8 * 1024 * 1024   # bytes of values in one cell's reply (the rest:
#                                               its outputs, at most 3 x OUTPUT_CAP characters)


def make_shell():
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config
    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "nocolor"
    config.InteractiveShell.autocall = 0
    return InteractiveShell.instance(config=config)


def kind_of(value) -> str:
    import types
    if isinstance(value, type) and value.__module__ == "__main__":
        return "data"                    # a class of the notebook: crosses as its shape
    if isinstance(value, (types.ModuleType, type)):
        return "other"
    return "callable" if callable(value) else "data"


class Interrupts:
    """What a kernel does on a timeout: the trusted process writes a byte to the interrupt
    pipe, a watcher thread turns it into SIGINT for the main thread, and the answer code that is
    running gets KeyboardInterrupt, so its call fails and the process goes on serving.  Only
    answer code is interrupted: while the channel's own code runs (a reply being written, a
    callback under way) the interrupt waits until the answer code resumes."""

    def __init__(self, fd=None):
        self.armed = False
        self.pending = False
        if fd is None:
            return
        import signal
        import threading
        signal.signal(signal.SIGINT, self._on_sigint)
        main = threading.main_thread().ident

        def watch():
            while True:
                try:
                    if not os.read(fd, 1):
                        return
                except OSError:
                    return
                signal.pthread_kill(main, signal.SIGINT)

        threading.Thread(target=watch, name="interrupts", daemon=True).start()

    def _on_sigint(self, signum, frame):
        if self.armed:
            self.pending = False
            raise KeyboardInterrupt
        self.pending = True

    def run(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)`` as answer code: interruptible."""
        self.pending = False
        self.armed = True
        try:
            return fn(*args, **kwargs)
        finally:
            self.armed = False

    @contextlib.contextmanager
    def paused(self):
        """While answer code waits for a callback: not interruptible; a pending interrupt is
        raised as soon as the answer code resumes."""
        was, self.armed = self.armed, False
        try:
            yield
        finally:
            self.armed = was
        if was and self.pending:
            self.pending = False
            raise KeyboardInterrupt


class StudentNamespace:
    """The student's namespace and the requests the trusted process may make of it."""

    def __init__(self, cells: dict, interrupts: Interrupts | None = None):
        self.cells = cells            # index -> source
        self.shell = make_shell()
        self.ns = self.shell.user_ns
        self.link = None
        self.interrupts = interrupts or Interrupts()
        self.sent: dict = {}          # name -> (object, its encoding as last sent, or None)

    def visible_names(self):
        return {k: v for k, v in self.ns.items()
                if isinstance(k, str) and not k.startswith("_") and k not in HIDDEN_NAMES}

    def run(self, index: int):
        source = self.cells.get(str(index))
        if source is None:
            raise KeyError(f"no cell {index} here")
        out, err = Capped(), Capped()
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err
        try:
            result = self.interrupts.run(self.shell.run_cell, source, store_history=True)
        finally:
            sys.stdout, sys.stderr = saved
        outputs = []
        if out.size:
            outputs.append({"output_type": "stream", "name": "stdout", "text": out.text()})
        if err.size:
            outputs.append({"output_type": "stream", "name": "stderr", "text": err.text()})
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            outputs.append({"output_type": "error", "ename": type(error).__name__,
                            "evalue": str(error)[:OUTPUT_CAP]})
        names, gone = self.changes()
        return {"ok": error is None, "outputs": outputs, "names": names, "gone": gone}

    def changes(self) -> tuple[dict, list]:
        """What the tests must learn since the last report, as one kernel would show it: the
        names bound to another object, the values changed in place (a dict filled by a later
        cell, a list a function appended to: compared by their encoding with what was sent),
        and the names deleted.  ``({name: [kind, encoded value or why not, in place]}, gone)``."""
        now = {k: v for k, v in self.visible_names().items() if len(k) <= MAX_NAME}
        changed = []
        for k, v in now.items():
            seen = self.sent.get(k)
            if seen is None or seen[0] is not v:
                changed.append((k, v, False))
            elif seen[1] is not None and type(v) not in _IMMUTABLE:
                changed.append((k, v, True))         # the same object: sent only if it changed
        gone = [k for k in self.sent if k not in now][:MAX_NAMES]
        for k in gone:
            del self.sent[k]
        return self.values(changed[:MAX_NAMES]), gone

    def values(self, changed) -> dict:
        """``{name: [kind, encoded value or why not, in place]}`` for the names given, each
        ``(name, value, same object as last sent)``; a value sent before and unchanged is left
        out.  A value too large to pass (or that JSON cannot write) is not sent: the tests get a
        name that says why when a test uses it, and a name no test reads costs nothing.  Each
        value is encoded on a budget of its own (one reply decodes at most ``codec.MAX_ITEMS``
        values in all: counted here too)."""
        names, room, items = {}, VALUES_ROOM, 0
        codec = self.link.codec
        with codec.apart():
            for k, v, same in changed:
                kind = kind_of(v)
                if kind != "data":
                    self.sent[k] = (v, None)
                    if not same:
                        names[k] = [kind, None]
                    continue
                try:
                    with codec.sending() as budget:
                        value = codec.encode(v)
                    if same and value == self.sent[k][1]:
                        continue
                    size = len(Pipe.text(value))
                    if size > room or items + budget.items > codecs.MAX_ITEMS:
                        raise NotPlainData(f"too large to pass: {size:,} bytes, more than the "
                                           f"{room:,} left in this reply")
                except (NotPlainData, RecursionError) as e:
                    self.sent[k] = (v, None)
                    names[k] = ["other", str(e)[:300] or type(e).__name__]
                    continue
                self.sent[k] = (v, value)
                names[k] = [kind, value, 1] if same else [kind, value]
                room -= size
                items += budget.items
        return names

    def enter_scope(self, scope):
        """A test deleted or rebound some of the answers' names before calling an answer: for
        that call they are gone or bound to what the test bound, as in one kernel (nbgrader's
        "uses" test deletes a helper to see whether another function calls it).  Returns the
        function that puts them back."""
        if not isinstance(scope, dict):
            return lambda: None
        saved, missing = {}, object()
        for name in [n for n in scope.get("del") or [] if isinstance(n, str)]:
            saved.setdefault(name, self.ns.pop(name, missing))
        for pair in scope.get("set") or []:
            name, value = pair if isinstance(pair, list) and len(pair) == 2 else (None, None)
            if isinstance(name, str) and name.isidentifier():
                saved.setdefault(name, self.ns.get(name, missing))
                self.ns[name] = self.link.codec.decode(value)

        def restore():
            for name, value in saved.items():
                if value is missing:
                    self.ns.pop(name, None)
                else:
                    self.ns[name] = value
        return restore

    def handle(self, m):
        op = m.get("op")
        if op == "run":
            return Raw(self.run(int(m["index"]))), None
        if op == "get":
            return self.ns[str(m["name"])], None
        if op == "call":
            target = m.get("target") or {}
            if "name" in target:
                fn = self.ns[str(target["name"])]
            elif "shared" in target:       # the course's code sandbox: this side's own copy
                fn = shared_function(str(target["shared"]))
            else:
                fn = self.link.codec.local(target.get("ref"))
            args, kwargs = self.link.decode_call(m)
            keys = [str(k) for k in m.get("sync") or []]
            out, err = Capped(), Capped()
            saved = sys.stdout, sys.stderr
            restore = self.enter_scope(m.get("scope"))
            try:
                sys.stdout, sys.stderr = out, err
                if "repeat" in m:
                    n = m["repeat"]
                    if type(n) is not int or not 0 <= n <= MAX_REPEAT:
                        raise ValueError(f"repeat must be an int in 0..{MAX_REPEAT}")
                    value = self.interrupts.run(lambda: [fn(*args, **kwargs) for _ in range(n)])
                else:
                    value = self.interrupts.run(fn, *args, **kwargs)
            finally:
                sys.stdout, sys.stderr = saved
                restore()
                self.link.reply_extra = {k: v.text() for k, v in (("out", out), ("err", err))
                                         if v.size}
            sync = {}
            for k in keys:
                v = args[int(k)] if k.isdigit() and int(k) < len(args) else kwargs.get(k)
                log = getattr(v, "lreact_log", None) if is_mirror(v) else None
                if log is not None:
                    sync[k] = {"log": log}     # the rng's calls, replayed on the test's rng
                elif _mutable(v):
                    sync[k] = self.link.codec.encode(v)
            if m.get("names"):             # a test reads the answers' names: what changed
                names, gone = self.changes()
                self.link.reply_extra.update(names=names, gone=gone)
            return value, sync
        if op == "getattr":                # an attribute of one of this side's objects
            name = m.get("name")
            if not isinstance(name, str) or not name.isidentifier() or name.startswith("__"):
                raise AttributeError(f"the tests may not read {name!r}")
            obj = self.link.codec.local(m.get("ref"))
            return self.interrupts.run(getattr, obj, name), None
        if op == "bye":
            raise SystemExit(0)
        raise ValueError(f"unknown request {op!r}")


class StudentLink(Link):
    interrupts = None
    passthrough = (ChannelError, SystemExit)    # "bye", or an answer that ends its process
    unsendable = "the answer returned something the tests cannot receive"

    def request_raw(self, msg) -> dict:
        """A callback from answer code to the tests' objects: not interrupted meanwhile."""
        if self.interrupts is None:
            return super().request_raw(msg)
        with self.interrupts.paused():
            return super().request_raw(msg)


def main(rfd: int, wfd: int, interrupt_fd: int | None = None) -> int:
    job = json.loads(sys.stdin.read() or "{}")
    if not job:
        return 0
    os.makedirs(job.get("cwd") or ".", exist_ok=True)
    os.chdir(job.get("cwd") or ".")
    interrupts = Interrupts(interrupt_fd)
    answers = StudentNamespace(job.get("cells", {}), interrupts)
    guard.install()             # from here on, only code the notebook shows runs (guard.py)
    link = StudentLink(Pipe(rfd, wfd), "S", answers.handle)
    link.interrupts = interrupts
    answers.link = link
    try:
        while True:
            m = link.pipe.recv(None)
            if m.get("k") == "q":
                link.pipe.send(link.serve(m))
    except SystemExit:
        return 0
    except BaseException:  # noqa: BLE001 - the channel closed: the run is over
        if os.environ.get("LREACT_GRADER_DEBUG") == "1":
            traceback.print_exc()
        return 0


def preload() -> None:
    """What every run needs, imported before the job arrives (a warm process)."""
    import IPython.core.interactiveshell  # noqa: F401
    import jsonschema  # noqa: F401 - the lab's setup cell imports it
    import matplotlib.pyplot  # noqa: F401 - the lab's setup cell imports it
    import numpy  # noqa: F401

    import lreact  # noqa: F401
    import lreact.reference  # noqa: F401
