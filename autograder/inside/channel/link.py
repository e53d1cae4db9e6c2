"""The narrow channel between the trusted process (tests) and the student process (answers).

Two pipes, one message at a time, each a length-prefixed JSON document of plain data
(``pipe.py`` moves the bytes; ``codec.py`` says what crosses and how; ``mirror.py`` how a
test's rng does; this module holds the link: requests that nest).  A message is
checked before it is written: a reply that cannot be sent (too large, or JSON cannot write it)
becomes the failure of that one request, never the end of a process.

A side that receives a handle to the other side's object gets a stand-in (``handles.py``): the
student process a ``Proxy`` of a test's object, served for public names only; the trusted
process a ``StudentFunction`` for a student's function, which can only be called.  A request
waits for its reply while serving the other side's requests in between (calls nest: a test calls
``run_agent``, which calls the test's ``ScriptedLLM``).

``repeat`` (``Link.call(repeat=n)``) calls a function n times with the same arguments in one
request (the lab's frequency tests draw 47,000 tokens); its reply must be a list of exactly n
plain values, else the request fails.

Lecture connection: none; this is the grader's machinery (see ``autograder/README.md``).
"""
from __future__ import annotations

import contextlib
import json
import time

from .codec import ARRAY_KINDS, Codec  # noqa: F401 - Codec re-exported
from .handles import Proxy, StudentFunction
from .mirror import NotPlainData, is_generator, is_mirror, numpy_if_loaded  # noqa: F401
from .pipe import MAX_MESSAGE, AnswerInterrupted, ChannelError, ChannelTimeout, Framed, Pipe  # noqa: F401 - re-exported
from .quickkey import fresh_copy as _fresh
from .quickkey import quick_key as _quick_key

PURE_CACHE = 4096                  # replies of pure functions kept per process (``call_pure``)


# --- values a call shares with its caller -----------------------------------------------------

def _mutable(x) -> bool:
    """A top-level argument whose in-place changes the caller sees after the call, as in one
    kernel: a list (``history``), a writeable numpy array, a random Generator (its state)."""
    if isinstance(x, list):
        return True
    np = numpy_if_loaded()
    if np is None:
        return False
    if isinstance(x, np.random.Generator):
        return True
    return isinstance(x, np.ndarray) and x.flags.writeable and x.dtype.kind in ARRAY_KINDS


def _same_array(original, new) -> bool:
    import numpy as np
    return (isinstance(original, np.ndarray) and isinstance(new, np.ndarray)
            and new.shape == original.shape and original.flags.writeable)


class Raw:
    """A reply that is already plain JSON (the result of running a cell)."""

    def __init__(self, data: dict):
        self.data = data

    def without_values(self, why: str) -> dict:
        """The result with every value left out, each saying ``why``."""
        names = self.data.get("names") or {}
        return {**self.data, "names": {k: ["other", why[:300]] for k in names}}


# --- the link: requests that nest ------------------------------------------------------------

class Link:
    """Requests and replies over a Pipe; a request waits for its reply and serves the other
    side's requests meanwhile (``handler(msg) -> (value, sync)``)."""

    handle_types = (Proxy, StudentFunction)     # stand-ins that go back as the handle they are
    #                                             (and classes.StudentObject, by its class)
    passthrough: tuple = (ChannelError,)        # what ``serve`` lets through instead of replying
    unsendable = "the reply cannot be passed on"

    def __init__(self, pipe: Pipe, side: str, handler):
        self.pipe = pipe
        self.codec = Codec(side, self)
        self.handler = handler
        self.deadline = None               # time.monotonic() by which a reply must come
        self.broken = None                 # why the link cannot be used any more
        self.refusing = None               # why no request may be made just now
        self.on_timeout = None             # () -> seconds of grace after an interrupt, or None
        self.on_names = None               # (names, gone): the answers' names a call changed;
        #                                    set on the tests' side while a test reads them
        self.scope_of = None               # () -> the answers' names a test deleted or rebound
        self.reply_extra = None            # what the handler adds to its reply (out, err, names)
        self._proxies: dict = {}
        self._pure_replies: dict = {}      # (handle, encoded arguments) -> reply
        self._pure_values: dict = {}       # (handle, ``_quick_key`` of the arguments) -> value

    def proxy(self, side, hid, is_callable, pure=False):
        """The one stand-in for the other side's object ``hid`` (so a method cache lasts)."""
        if type(hid) is not int:
            raise NotPlainData("a malformed handle")
        found = self._proxies.get((side, hid))
        if found is None:
            if self.codec.side == "S":
                found = Proxy(self, side, hid, is_callable, pure=pure and is_callable)
            elif is_callable:
                found = StudentFunction(self, hid)
            else:
                raise NotPlainData("an object of the student's process that is not a function "
                                   "(only plain data, and functions to call, cross to the tests)")
            self._proxies[(side, hid)] = found
        return found

    @contextlib.contextmanager
    def refused(self, why: str):
        """No request may be made meanwhile (e.g. while a test's error is written)."""
        was, self.refusing = self.refusing, why
        try:
            yield
        finally:
            self.refusing = was

    def request(self, msg):
        """Send ``msg``; return the decoded value of the reply (or raise its exception)."""
        return self.reply_value(self.request_raw(msg))

    def request_raw(self, msg) -> dict:
        if self.broken:
            raise ChannelError(self.broken)
        if self.refusing:
            raise ChannelError(f"the other process is not asked while {self.refusing}")
        interrupted = False
        try:
            self.pipe.send({"k": "q", **msg})
            while True:
                try:
                    m = self.pipe.recv(self.deadline)
                except ChannelTimeout:
                    grace = None if interrupted or self.on_timeout is None else self.on_timeout()
                    if grace is None:
                        raise
                    interrupted = True         # wait a little longer for the interrupted reply
                    self.deadline = time.monotonic() + grace
                    continue
                if m.get("k") == "r":
                    break
                if m.get("k") == "q":
                    self.pipe.send(self.serve(m))
                else:
                    raise ChannelError("a malformed message")
        except ChannelError as e:
            self.broken = self.broken or str(e)
            raise
        if interrupted:
            target = msg.get("target") if isinstance(msg.get("target"), dict) else {}
            raise AnswerInterrupted(str(target.get("name") or "an answer"), m)
        return m

    def reply_value(self, m):
        try:
            if "x" in m:
                exc = self.codec.decode_exception(m["x"])
            else:
                return self.codec.decode(m.get("v"))
        except NotPlainData as e:
            raise TypeError(f"the other side sent something that is not plain data: {e}") \
                from None
        raise exc

    def call_pure(self, hid: int, args, kwargs):
        """A call of a pure function of the tests (``lreact.labchecks.PURE``, flagged by the
        trusted side): the reply for the same encoded arguments is reused, decoded afresh each
        time (so a caller that changes the result changes only its copy). Only this side's own
        answers could be misled by a wrong cache, and only about values they were already given."""
        quick = _quick_key(hid, args, kwargs)
        if quick is not None and quick in self._pure_values:
            return _fresh(self._pure_values[quick])
        enc_args, enc_kwargs = self.codec.encode_arguments(args, kwargs)
        key = (hid, json.dumps([enc_args, enc_kwargs], sort_keys=True, separators=(",", ":")))
        m = self._pure_replies.get(key)
        if m is None:
            m = self.request_raw({"op": "call", "target": {"ref": hid}, "args": enc_args,
                                  "kwargs": enc_kwargs, "sync": []})
            if "x" not in m and len(self._pure_replies) < PURE_CACHE:
                self._pure_replies[key] = m
        value = self.reply_value(m)
        if quick is not None and _fresh(value) is not None and len(self._pure_values) < PURE_CACHE:
            self._pure_values[quick] = _fresh(value)
        return value

    def call(self, target: dict, args, kwargs, repeat: int | None = None):
        """Call a function of the other side (``repeat`` times: the list of the values, exactly
        ``repeat`` plain values); top-level list, array and Generator arguments are synced
        back.  Decoding the reply is bounded (``codec.Budget``)."""
        enc_args, enc_kwargs = self.codec.encode_arguments(args, kwargs)
        lists = {str(i): a for i, a in enumerate(args) if _mutable(a)}
        lists.update({k: v for k, v in kwargs.items() if _mutable(v)})
        msg = {"op": "call", "target": target, "args": enc_args, "kwargs": enc_kwargs,
               "sync": sorted(lists)}
        if repeat is not None:
            msg["repeat"] = repeat = int(repeat)
        if self.on_names is not None:
            msg["names"] = 1
        scope = self.scope_of() if self.scope_of is not None else None
        if scope:
            msg["scope"] = scope
        m = self.request_raw(msg)
        self.forward_output(m)
        with self.codec.receiving(handles=repeat is None):
            value = self.reply_value(m)
            if repeat is not None and (type(value) is not list or len(value) != repeat):
                name = target.get("name") if isinstance(target.get("name"), str) else "fn"
                got = f"a list of {len(value)}" if type(value) is list else \
                    f"a {type(value).__name__}, not a list of values"
                raise TypeError(f"repeat({name}, {repeat}, ...) must give one value per call, "
                                f"{repeat} in all; the student's process sent {got}")
            self._sync(lists, m.get("sync"))
        if self.on_names is not None and "names" in m:
            self.on_names(m.get("names"), m.get("gone"))
        return value

    @staticmethod
    def forward_output(m) -> None:
        """What the answer printed during the call, written where a test that captures
        ``sys.stdout`` (or ``sys.stderr``) reads it, as in one kernel.  Not into the test cell's
        own output (a stream marked ``lreact_cell``): what an answer prints while a hidden test
        runs may carry that test's arguments, and the graded notebook keeps none of it
        (autograder/README.md, "Feedback")."""
        import sys
        for key, stream in (("out", sys.stdout), ("err", sys.stderr)):
            text = m.get(key)
            if isinstance(text, str) and text and not getattr(stream, "lreact_cell", False):
                stream.write(text)

    def _sync(self, lists: dict, synced) -> None:
        for key, original in lists.items() if isinstance(synced, dict) else ():
            if key in synced and is_generator(original):
                entry = synced[key]
                try:
                    if type(entry) is not dict or set(entry) != {"log"}:
                        raise NotPlainData("a malformed rng log")
                    self.codec.replay(original, entry["log"])
                except NotPlainData as e:
                    raise TypeError(f"the rng's calls came back malformed: {e}") from None
            elif key in synced:
                try:
                    new = self.codec.decode(synced[key])
                except NotPlainData as e:
                    raise TypeError(f"a list passed in came back as something that is not "
                                    f"plain data: {e}") from None
                if type(new) is list and isinstance(original, list):
                    original[:] = new
                elif _same_array(original, new):
                    original[...] = new      # an answer that writes into its argument

    def serve(self, m) -> Framed:
        """The reply to the other side's request ``m``, checked and ready to send: a failure
        (of the handler, of encoding, of size) is a reply too, never an exception here."""
        with self.codec.sending():
            self.reply_extra = None
            try:
                value, sync = self.handler(m)
            except self.passthrough:
                raise
            except BaseException as e:  # noqa: BLE001 - every failure is a reply
                failure = e
            else:
                try:
                    if isinstance(value, Raw):
                        return self.pipe.frame({"k": "r", "raw": value.data})
                    out = {"k": "r", "v": self.codec.encode(value), **self._extra()}
                    if sync:
                        out["sync"] = sync
                    return self.pipe.frame(out)
                except (NotPlainData, RecursionError) as e:
                    if isinstance(value, Raw):      # the cell ran: say so, without its values
                        return self.pipe.frame({"k": "r", "raw": value.without_values(str(e))})
                    failure = TypeError(f"{self.unsendable}: {e}")
        return self.error_reply(failure)

    def _extra(self) -> dict:
        """What the handler added to this reply: what the answer printed (``out``, ``err``)
        and the answers' names the call changed (``names``, ``gone``)."""
        extra, self.reply_extra = self.reply_extra or {}, None
        return {k: v for k, v in extra.items() if k in ("out", "err", "names", "gone")}

    def error_reply(self, e: BaseException) -> Framed:
        extra = self._extra()
        try:
            return self.pipe.frame({"k": "r", "x": self.codec.encode_exception(e), **extra})
        except NotPlainData:
            return self.pipe.frame({"k": "r", "x": {"e": ["RuntimeError", [
                f"{type(e).__name__} (its message could not be sent)"]]}})

    def decode_call(self, m):
        return self.codec.decode_arguments(m.get("args", []), m.get("kwargs", []))
