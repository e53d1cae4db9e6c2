"""The narrow channel between the trusted process (tests) and the student process (answers).

Two pipes, one message at a time, each a length-prefixed JSON document.  What crosses is plain
data only, tagged so that nothing is ever executed or looked up by name while decoding:

    None, bool, int, float (nan/inf too), str, list        as JSON
    {"t": [...]} tuple   {"d": [[k, v], ...]} dict   {"s": [...]} set   {"b": base64} bytes
    {"a": [dtype, shape, flat]} numpy array (bool/int/uint/float/str)   {"n": [dtype, x]} scalar
    {"m": [record name, [[field, value], ...]]}  a dataclass record of ``lreact.messages``
    {"e": [exception name, [args]]}              an allowed exception type and its arguments
    {"g": [bit generator name, state]}           a numpy random Generator: its mirror
    {"f": name}                                  one of the course's given pure functions
                                                 (``SHARED_FUNCTIONS``), each side's own copy
    {"T": [id, callable]} / {"S": [id, callable]} a handle to an object that stays on the
                                                 trusted (T) or student (S) side

A side that receives a handle to the other side's object gets a proxy: calling it, reading a
public attribute, indexing, ``len``, iterating send a request and wait for the reply, while
serving the other side's requests in between (calls nest: a test calls ``run_agent``, which
calls the test's ``ScriptedLLM``).  The trusted side answers requests on its objects for public
names only, never hands out modules, classes, frames or code, and never sets anything.

A test's random ``Generator`` stays in the trusted process, but its calls are batched instead of
making a round trip per draw: the answer gets a *mirror* (a ``Generator`` subclass built from
the rng's state, so it draws exactly what the test's rng would draw), which logs every method
call it serves (name and plain-data arguments).  The log comes back with the reply and the
trusted process replays it on the test's own rng, so that rng moves only through its own methods
called here, as it would through a handle; nothing the answer sends sets its state.
``repeat`` calls a function n times with the same arguments in one request (the lab's frequency
tests draw 47,000 tokens).  The toy model's ``lreact.grammar.toy_logits``, a given pure function
that both sides have, crosses by its name, so an answer calls its own copy instead of calling
back once per token; a logits function a test defines stays a handle.

Lecture connection: none; this is the grader's machinery (see ``autograder/README.md``).
"""
from __future__ import annotations

import base64
import builtins
import dataclasses
import functools
import json
import os
import select
import struct
import time
import types

MAX_MESSAGE = 64 * 1024 * 1024     # bytes; a larger message ends the channel
MAX_DEPTH = 60                     # nesting of a value
_HEADER = struct.Struct(">I")


class ChannelError(BaseException):
    """The other side is gone, too slow, or broke the protocol (not catchable by ``except
    Exception`` in a test, so a test cannot mistake it for an answer's exception)."""


class ChannelTimeout(ChannelError):
    pass


class AnswerInterrupted(ChannelError):
    """The other side did not reply in time, was interrupted (as a kernel is on a timeout) and
    then replied: the request failed, the link still works.  ``reply`` is that late reply."""

    def __init__(self, message, reply=None):
        super().__init__(message)
        self.reply = reply or {}


class NotPlainData(TypeError):
    pass


# --- framing -------------------------------------------------------------------------------

class Pipe:
    """One message at a time over a pair of file descriptors."""

    def __init__(self, rfd: int, wfd: int):
        self.rfd, self.wfd = rfd, wfd
        self.closed = False
        self.buffer = bytearray()

    def send(self, obj) -> None:
        if self.closed:
            raise ChannelError("the channel is closed")
        data = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        if len(data) > MAX_MESSAGE:
            raise NotPlainData(f"a value of {len(data)} bytes is too large to pass")
        view = memoryview(_HEADER.pack(len(data)) + data)
        try:
            while view:
                view = view[os.write(self.wfd, view):]
        except OSError as e:
            self.closed = True
            raise ChannelError(f"the other process is gone ({e.strerror})") from None

    def _read(self, n: int, deadline):
        buf = self.buffer
        while len(buf) < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.rfd], [], [], left)[0]:
                    raise ChannelTimeout("time limit")
            try:
                chunk = os.read(self.rfd, max(n - len(buf), 1 << 16))
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                raise ChannelError("the other process ended")
            buf += chunk
        out = bytes(buf[:n])
        del buf[:n]
        return out

    def recv(self, deadline=None):
        if self.closed:
            raise ChannelError("the channel is closed")
        (size,) = _HEADER.unpack(self._read(_HEADER.size, deadline))
        if size > MAX_MESSAGE:
            self.closed = True
            raise ChannelError(f"a message of {size} bytes is over the limit")
        try:
            msg = json.loads(self._read(size, deadline).decode("utf-8"))
        except (ValueError, RecursionError) as e:
            self.closed = True
            raise ChannelError(f"a malformed message ({type(e).__name__})") from None
        if not isinstance(msg, dict):
            self.closed = True
            raise ChannelError("a malformed message")
        return msg


# --- plain data ------------------------------------------------------------------------------

ARRAY_KINDS = "biufU"
BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
# Given functions (never an answer, never a reference implementation) that are pure and that
# both processes hold in their own lreact: (module, name).
SHARED_FUNCTIONS = (("lreact.grammar", "toy_logits"),)


def _shared_function(name):
    """The named function of ``SHARED_FUNCTIONS`` from this process's own lreact."""
    import importlib
    for module, attr in SHARED_FUNCTIONS:
        if name == f"{module}.{attr}":
            return getattr(importlib.import_module(module), attr)
    raise NotPlainData(f"not a shared function: {name!r}")


MAX_LOG = 2_000_000                # rng calls one reply may log (replayed one by one)
# what a mirror logs and the trusted side replays: the Generator's public drawing methods
REPLAYED = frozenset((
    "beta", "binomial", "bytes", "chisquare", "choice", "dirichlet", "exponential", "f",
    "gamma", "geometric", "gumbel", "hypergeometric", "integers", "laplace", "logistic",
    "lognormal", "logseries", "multinomial", "multivariate_hypergeometric",
    "multivariate_normal", "negative_binomial", "noncentral_chisquare", "noncentral_f",
    "normal", "pareto", "permutation", "permuted", "poisson", "power", "random", "rayleigh",
    "shuffle", "standard_cauchy", "standard_exponential", "standard_gamma", "standard_normal",
    "standard_t", "triangular", "uniform", "vonmises", "wald", "weibull", "zipf"))


def _is_generator(x) -> bool:
    np = _numpy_if_loaded()
    return np is not None and isinstance(x, np.random.Generator)


def _logged(state: dict, name: str, method):
    """``method`` of a mirror, logging each call in ``state["lreact_log"]``."""

    def logged(*args, **kwargs):
        log, codec = state["lreact_log"], state["lreact_codec"]
        try:
            entry = [name, *codec.encode_arguments(args, kwargs)]
        except NotPlainData as e:
            raise TypeError(f"rng.{name} was given something the grader cannot pass on to the "
                            f"test's rng: {e}") from None
        last = log[-1] if log else None
        same = last is not None and last[0] == name and last[1] == entry[1] \
            and last[2] == entry[2] and last[3] < MAX_LOG
        if not same and len(log) >= MAX_LOG:
            raise RuntimeError(f"more than {MAX_LOG} different rng calls in one call")
        state["lreact_depth"] = 1
        try:
            value = method(*args, **kwargs)
        finally:
            state["lreact_depth"] = 0
        if same:
            last[3] += 1
        else:
            log.append(entry + [1])
        return value

    return logged


def is_mirror(x) -> bool:
    """Is ``x`` a mirror of a test's rng (made by this side's decoding)?"""
    return _numpy_if_loaded() is not None and type(x) is _mirror_class()


@functools.cache
def _mirror_class():
    """``MirrorGenerator``: a numpy Generator that logs its outermost method calls (made once,
    when the first mirror is needed, so that this module imports without numpy)."""
    import numpy as np

    class MirrorGenerator(np.random.Generator):
        """The answer's copy of a test's rng: it draws what the test's rng would draw and logs
        each call, already encoded (so a later change to an argument cannot alter the log);
        consecutive identical calls (a sampling loop) are one entry with a count."""

        def __init__(self, bits, codec):
            super().__init__(bits)
            self.lreact_log = []
            self.lreact_codec = codec
            self.lreact_depth = 0       # calls a method makes inside (choice -> random): no log
            self.lreact_logged = {}

        def __getattribute__(self, name):
            if name in REPLAYED:
                state = object.__getattribute__(self, "__dict__")
                if not state["lreact_depth"]:
                    logged = state["lreact_logged"].get(name)
                    if logged is None:
                        logged = state["lreact_logged"][name] = _logged(
                            state, name, super().__getattribute__(name))
                    return logged
            return super().__getattribute__(name)

    return MirrorGenerator


def _numpy_if_loaded():
    import sys
    return sys.modules.get("numpy")


_SCALARS = frozenset((type(None), bool, int, float, str))


def _records():
    from lreact import messages
    found = {}
    for name, obj in vars(messages).items():
        if isinstance(obj, type) and dataclasses.is_dataclass(obj) \
                and obj.__module__ == messages.__name__:
            found[name] = obj
    return found


def _exceptions():
    found = {n: c for n, c in vars(builtins).items()
             if isinstance(c, type) and issubclass(c, Exception)}
    import lreact.models
    import lreact.reference
    from lreact.messages import ToolCallError
    found.update(ToolCallError=ToolCallError,
                 ReferenceUnavailable=lreact.reference.ReferenceUnavailable,
                 ScriptExhaustedError=lreact.models.ScriptExhaustedError)
    return found


class Codec:
    """Plain values to tagged JSON and back, for one side (``"T"`` trusted or ``"S"``)."""

    def __init__(self, side: str, link=None):
        self.side, self.other = side, ("S" if side == "T" else "T")
        self.link = link                   # the Link whose proxies decoded handles become
        self.records = _records()
        self.record_of = {cls: name for name, cls in self.records.items()}
        self.exceptions = _exceptions()
        self.exception_name = {cls: name for name, cls in self.exceptions.items()}
        self.exported: dict = {}           # handle id -> object (kept alive)
        self._ids: dict = {}               # id(object) -> handle id
        self.export_any = side == "T"      # the trusted side hands out handles to anything

    # handles
    def export(self, obj) -> list:
        hid = self._ids.get(id(obj))
        if hid is None or self.exported.get(hid) is not obj:
            hid = len(self.exported) + 1
            self.exported[hid] = obj
            self._ids[id(obj)] = hid
        return [hid, callable(obj)]

    def local(self, hid):
        try:
            return self.exported[int(hid)]
        except (KeyError, TypeError, ValueError):
            raise NotPlainData(f"no such object on this side: {hid!r}") from None

    # encoding
    def encode(self, x, depth: int = 0):
        if depth > MAX_DEPTH:
            raise NotPlainData("the value is nested too deeply")
        t = type(x)
        if x is None or t is bool or t is str:
            return x
        if t is int or t is float:
            return x
        if t is list:
            if all(type(v) in _SCALARS for v in x):
                return list(x)               # the common case, without a call per item
            return [self.encode(v, depth + 1) for v in x]
        if t is tuple:
            return {"t": [self.encode(v, depth + 1) for v in x]}
        if t is dict:
            return {"d": [[self.encode(k, depth + 1), self.encode(v, depth + 1)]
                          for k, v in x.items()]}
        proxy = getattr(self.link, "proxy_type", None)
        if proxy is not None and t is proxy and x._side == self.other:
            return {x._side: [x._hid, x._callable]}
        return self._encode_other(x, t, depth)

    def _encode_other(self, x, t, depth):
        import numpy as np
        if isinstance(x, bool):
            return bool(x)
        if not isinstance(x, np.generic):
            if isinstance(x, str):
                return str.__str__(x)
            if isinstance(x, int):
                return int.__int__(x)
            if isinstance(x, float):
                return float.__float__(x)
        if isinstance(x, np.ndarray):
            if x.dtype.kind not in ARRAY_KINDS:
                raise NotPlainData(f"a numpy array of dtype {x.dtype} is not plain data")
            return {"a": [x.dtype.str, list(x.shape), x.ravel().tolist()]}
        if isinstance(x, np.generic):
            if x.dtype.kind not in ARRAY_KINDS:
                raise NotPlainData(f"a numpy {x.dtype} is not plain data")
            return {"n": [x.dtype.str, x.item()]}
        if isinstance(x, np.random.Generator):
            bits = x.bit_generator
            name = type(bits).__name__
            if name not in BIT_GENERATORS or type(bits) is not getattr(np.random, name):
                raise NotPlainData(f"a Generator over {name} is not plain data")
            return {"g": [name, self.encode(bits.state, depth + 1)]}
        for cls in t.__mro__:
            name = self.record_of.get(cls)
            if name:
                return {"m": [name, [[f.name, self.encode(getattr(x, f.name), depth + 1)]
                                     for f in dataclasses.fields(cls)]]}
        if isinstance(x, BaseException):
            return self.encode_exception(x)
        if isinstance(x, (list, tuple)):
            tag = None if isinstance(x, list) else "t"
            items = [self.encode(v, depth + 1) for v in list.__iter__(x)] \
                if isinstance(x, list) else [self.encode(v, depth + 1) for v in tuple.__iter__(x)]
            return items if tag is None else {"t": items}
        if isinstance(x, dict):
            return {"d": [[self.encode(k, depth + 1), self.encode(v, depth + 1)]
                          for k, v in dict.items(x)]}
        if isinstance(x, (set, frozenset)):
            return {"s": [self.encode(v, depth + 1) for v in x]}
        if isinstance(x, (bytes, bytearray)):
            return {"b": base64.b64encode(bytes(x)).decode("ascii")}
        if callable(x):
            shared = self._shared_name(x)
            if shared:
                return {"f": shared}
        if self.export_any or callable(x):
            if isinstance(x, (types.ModuleType, type, types.FrameType, types.CodeType,
                              types.TracebackType, types.CellType)) and self.side == "T":
                raise NotPlainData(f"a {t.__name__} cannot be passed to an answer")
            return {self.side: self.export(x)}
        raise NotPlainData(f"a {t.__name__} object is not plain data (only numbers, strings, "
                           "lists, tuples, dicts, numpy arrays and the message types of "
                           "lreact.messages cross to the tests)")

    @staticmethod
    def _shared_name(fn):
        import sys
        for module, attr in SHARED_FUNCTIONS:
            mod = sys.modules.get(module)
            if mod is not None and getattr(mod, attr, None) is fn:
                return f"{module}.{attr}"
        return None

    def encode_exception(self, e: BaseException):
        name = "RuntimeError"
        for cls in type(e).__mro__:
            if self.exception_name.get(cls):
                name = self.exception_name[cls]
                break
        else:
            e = RuntimeError(f"{type(e).__name__}: {e}")
        args = []
        for a in getattr(e, "args", ()):
            try:
                args.append(self.encode(a))
            except NotPlainData:
                args.append(str(a))
        if not isinstance(e, Exception):
            args = [f"{type(e).__name__} was raised"]
        return {"e": [name, args]}

    # decoding (the input may come from a hostile process: only plain values are built)
    def decode(self, x, depth: int = 0):
        if depth > MAX_DEPTH:
            raise NotPlainData("the value is nested too deeply")
        t = type(x)
        if x is None or t in (bool, int, float, str):
            return x
        if t is list:
            if all(type(v) in _SCALARS for v in x):
                return x                     # JSON gave a fresh list of plain scalars
            return [self.decode(v, depth + 1) for v in x]
        if t is not dict or len(x) != 1:
            raise NotPlainData("a malformed value")
        (tag, body), = x.items()
        if tag == "t":
            return tuple(self.decode(v, depth + 1) for v in self._list(body))
        if tag == "d":
            out = {}
            for pair in self._list(body):
                k, v = self._list(pair, 2)
                out[self.decode(k, depth + 1)] = self.decode(v, depth + 1)
            return out
        if tag == "s":
            return {self.decode(v, depth + 1) for v in self._list(body)}
        if tag == "b":
            return base64.b64decode(str(body))
        if tag == "a":
            return self._array(body)
        if tag == "n":
            import numpy as np
            dtype, value = self._list(body, 2)
            dt = np.dtype(str(dtype))
            if dt.kind not in ARRAY_KINDS or type(value) not in (bool, int, float, str):
                raise NotPlainData("a malformed numpy scalar")
            return dt.type(value)
        if tag == "m":
            name, fields = self._list(body, 2)
            cls = self.records.get(name) if isinstance(name, str) else None
            if cls is None:
                raise NotPlainData(f"not a message type: {name!r}")
            allowed = {f.name for f in dataclasses.fields(cls) if f.init}
            kwargs = {}
            for pair in self._list(fields):
                k, v = self._list(pair, 2)
                if k in allowed:
                    kwargs[k] = self.decode(v, depth + 1)
            try:
                return cls(**kwargs)
            except Exception as e:  # noqa: BLE001 - a record the class refuses
                raise NotPlainData(f"a {name} that cannot be built: {e}") from None
        if tag == "e":
            return self.decode_exception(x)
        if tag == "g":
            return self._generator(body, depth)
        if tag == "f":
            return _shared_function(body)
        if tag == self.side:
            return self.local(self._list(body, 2)[0])
        if tag == self.other:
            hid, is_callable = self._list(body, 2)
            return self.link.proxy(self.other, int(hid), bool(is_callable))
        raise NotPlainData(f"a malformed value (tag {tag!r})")

    def decode_exception(self, x) -> BaseException:
        name, args = self._list(x["e"], 2)
        cls = self.exceptions.get(name) if isinstance(name, str) else None
        cls = cls or RuntimeError
        try:
            args = [self.decode(a) for a in self._list(args)]
        except NotPlainData:
            args = ["(unreadable)"]
        try:
            return cls(*args)
        except Exception:  # noqa: BLE001 - e.g. UnicodeDecodeError needs five arguments
            return cls(" ".join(str(a) for a in args)) if cls is not UnicodeError else \
                RuntimeError(str(args))

    @staticmethod
    def _list(x, n=None):
        if type(x) is not list or (n is not None and len(x) != n):
            raise NotPlainData("a malformed value")
        return x

    def _generator(self, body, depth):
        import numpy as np
        name, state = self._list(body, 2)
        if name not in BIT_GENERATORS:
            raise NotPlainData(f"not a bit generator: {name!r}")
        state = self.decode(state, depth + 1)
        if type(state) is not dict or state.get("bit_generator") != name:
            raise NotPlainData("a malformed Generator state")
        bits = getattr(np.random, name)()
        try:
            bits.state = state
        except (ValueError, TypeError, KeyError, OverflowError) as e:
            raise NotPlainData(f"a malformed Generator state ({e})") from None
        if self.side == "S":
            return _mirror_class()(bits, self)      # its calls are replayed on the test's rng
        return np.random.Generator(bits)            # a copy: the answer's own Generator

    def encode_arguments(self, args, kwargs) -> tuple[list, list]:
        """A call's arguments as ``([arg, ...], [[keyword, value], ...])``, encoded."""
        return ([self.encode(a) for a in args],
                [[k, self.encode(v)] for k, v in kwargs.items()])

    def decode_arguments(self, args, kwargs) -> tuple[list, dict]:
        """``encode_arguments`` undone: (args, kwargs)."""
        decoded = [self.decode(a) for a in self._list(args)]
        named = {}
        for pair in self._list(kwargs):
            k, v = self._list(pair, 2)
            if not isinstance(k, str):
                raise NotPlainData("a keyword must be a str")
            named[k] = self.decode(v)
        return decoded, named

    def replay(self, rng, log) -> None:
        """Make on ``rng`` (the test's own) the calls its mirror logged, in order.  A call that
        raises raised for the answer too (same arguments) and drew nothing."""
        total = 0
        for entry in self._list(log):
            name, args, kwargs, count = self._list(entry, 4)
            if name not in REPLAYED:
                raise NotPlainData(f"not a Generator method: {name!r}")
            if type(count) is not int or count < 1 or total + count > MAX_LOG:
                raise NotPlainData(f"a malformed call count: {count!r}")
            total += count
            args, kw = self.decode_arguments(args, kwargs)
            method = getattr(rng, name)
            try:
                for _ in range(count):
                    method(*args, **kw)
            except Exception:  # noqa: BLE001 - the answer's own call raised the same
                pass

    def _array(self, body):
        import numpy as np
        dtype, shape, flat = self._list(body, 3)
        dt = np.dtype(str(dtype))
        if dt.kind not in ARRAY_KINDS or dt.itemsize > 4096 \
                or any(type(s) is not int or s < 0 for s in self._list(shape)):
            raise NotPlainData("a malformed numpy array")
        if any(type(v) not in (bool, int, float, str) for v in self._list(flat)):
            raise NotPlainData("a malformed numpy array")
        try:
            return np.array(flat, dtype=dt).reshape(shape)
        except (ValueError, OverflowError, TypeError, MemoryError) as e:
            raise NotPlainData(f"a malformed numpy array ({e})") from None


# --- the link: requests that nest ----------------------------------------------------------------

def _mutable(x) -> bool:
    """A top-level argument whose in-place changes the caller sees after the call, as in one
    kernel: a list (``history``), a writeable numpy array, a random Generator (its state)."""
    if isinstance(x, list):
        return True
    np = _numpy_if_loaded()
    if np is None:
        return False
    if isinstance(x, np.random.Generator):
        return True
    return isinstance(x, np.ndarray) and x.flags.writeable and x.dtype.kind in ARRAY_KINDS


def _same_array(original, new) -> bool:
    import numpy as np
    return (isinstance(original, np.ndarray) and isinstance(new, np.ndarray)
            and new.shape == original.shape and original.flags.writeable)


class Proxy:
    """An object of the other side: operations on it are requests over the link."""

    __slots__ = ("_link", "_side", "_hid", "_callable", "_methods", "__name__", "__qualname__")

    def __init__(self, link, side, hid, is_callable, name=None):
        object.__setattr__(self, "_link", link)
        object.__setattr__(self, "_side", side)
        object.__setattr__(self, "_hid", hid)
        object.__setattr__(self, "_callable", is_callable)
        object.__setattr__(self, "_methods", {})
        object.__setattr__(self, "__name__", name or f"object {hid}")
        object.__setattr__(self, "__qualname__", name or f"object {hid}")

    def _op(self, op, **kw):
        return self._link.request({"op": op, "ref": self._hid, **kw})

    def __call__(self, *args, **kwargs):
        return self._link.call({"ref": self._hid}, args, kwargs)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        cached = self._methods.get(name)
        if cached is not None:
            return cached
        value = self._op("getattr", name=name)
        if type(value) is Proxy and value._callable:
            self._methods[name] = value
        return value

    def __setattr__(self, name, value):
        raise AttributeError("objects of the tests are read-only")

    def __getitem__(self, key):
        return self._op("getitem", key=self._link.codec.encode(key))

    def __len__(self):
        return self._op("len")

    def __iter__(self):
        return self._op("iter")

    def __next__(self):
        return self._op("next")

    def __contains__(self, item):
        return self._op("contains", item=self._link.codec.encode(item))

    def __bool__(self):
        return self._op("bool")

    def __repr__(self):
        try:
            return self._op("repr")
        except Exception:  # noqa: BLE001
            return f"<{self.__name__}>"

    __str__ = __repr__


class Link:
    """Requests and replies over a Pipe; a request waits for its reply and serves the other
    side's requests meanwhile (``handler(msg) -> reply``)."""

    proxy_type = Proxy

    def __init__(self, pipe: Pipe, side: str, handler):
        self.pipe = pipe
        self.codec = Codec(side, self)
        self.handler = handler
        self.deadline = None               # time.monotonic() by which a reply must come
        self.broken = None                 # why the link cannot be used any more
        self.on_timeout = None             # () -> seconds of grace after an interrupt, or None
        self._proxies: dict = {}

    def proxy(self, side, hid, is_callable):
        """The one proxy of the other side's object ``hid`` (so its method cache lasts)."""
        key = (side, hid)
        found = self._proxies.get(key)
        if found is None:
            found = self._proxies[key] = Proxy(self, side, hid, is_callable)
        return found

    def request(self, msg):
        """Send ``msg``; return the decoded value of the reply (or raise its exception)."""
        return self.reply_value(self.request_raw(msg))

    def request_raw(self, msg) -> dict:
        if self.broken:
            raise ChannelError(self.broken)
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

    def call(self, target: dict, args, kwargs, repeat: int | None = None):
        """Call a function of the other side (``repeat`` times: the list of the values); top-level
        list, array and Generator arguments are synced back."""
        enc_args, enc_kwargs = self.codec.encode_arguments(args, kwargs)
        lists = {str(i): a for i, a in enumerate(args) if _mutable(a)}
        lists.update({k: v for k, v in kwargs.items() if _mutable(v)})
        msg = {"op": "call", "target": target, "args": enc_args, "kwargs": enc_kwargs,
               "sync": sorted(lists)}
        if repeat is not None:
            msg["repeat"] = int(repeat)
        m = self.request_raw(msg)
        value = self.reply_value(m)
        synced = m.get("sync")
        if isinstance(synced, dict):
            for key, original in lists.items():
                if key in synced and _is_generator(original):
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
        return value

    def serve(self, m) -> dict:
        try:
            value, sync = self.handler(m)
            out = {"k": "r", "v": self.codec.encode(value)}
            if sync:
                out["sync"] = sync
            return out
        except ChannelError:
            raise
        except BaseException as e:  # noqa: BLE001 - every failure is a reply
            return {"k": "r", "x": self.codec.encode_exception(e)}

    def decode_call(self, m):
        return self.codec.decode_arguments(m.get("args", []), m.get("kwargs", []))
