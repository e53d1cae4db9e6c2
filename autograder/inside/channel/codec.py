"""Plain data over the channel: values to tagged JSON and back (``inside/channel/link.py`` carries them).

Nothing is executed or looked up by name while decoding; only plain values are built:

    None, bool, int, float (nan/inf too), str, list        as JSON
    {"t": [...]} tuple   {"d": [[k, v], ...]} dict   {"s": [...]} set   {"b": base64} bytes
    {"j": [re, im]} complex
    the standard library's containers and exact numbers, with their type (``stdlib.py``):
        Counter, OrderedDict, defaultdict, deque, Fraction, Decimal, frozenset, bytearray, a
        dict's keys/values/items, range; another numbers.Rational is sent as its float
    the notebook's own classes, by their shape (``classes.py``): a class, instances of its
        namedtuple, Enum and dataclass classes, exceptions of its classes, and objects of its
        plain classes as handles whose class the tests' side builds
    {"a": [dtype, shape, flat]} numpy array   {"n": [dtype, x]} numpy scalar: bool, int, uint,
        float (float16 to longdouble), complex and str dtypes; a longdouble travels as its exact
        decimal text, a complex as its (real, imaginary) parts, so a value arrives with the
        dtype and the value it had, and compares as it would in the student's own kernel
    {"m": [record name, [[field, value], ...]]}  a dataclass record of ``lreact.messages``
    {"e": [exception name, [args]]}              an allowed exception type and its arguments
                                                 (both: ``records.py``)
    {"g": [bit generator name, state]}           a numpy random Generator (``mirror.py``)
    {"f": name}                                  one of the course's given functions
                                                 (``SHARED_FUNCTIONS``), each side's own copy
    {"T": [id, callable]} / {"S": [id, callable]} a handle to an object that stays on the
                                                 trusted (T) or student (S) side

Limits (a value past one is refused with a message saying which, never a dead process):
``MAX_ITEMS`` values per value sent and per reply received (list items, dict entries, array
elements), ``MAX_CHARS`` characters of text per value sent, nesting ``MAX_DEPTH``, and the work of
decoding one reply: at most ``MAX_DECODE_SECONDS``, and no more than ``MAX_SAME_HASH`` keys of a
dict or set sharing one hash (colliding keys make a dict quadratic to build).

Lecture connection: none; this is the grader's machinery (``autograder/README.md``).
"""
from __future__ import annotations

import base64
import contextlib
import time
import types

from . import classes, mirror, numeric, records, stdlib
from .mirror import NotPlainData

MAX_DEPTH = 60                     # nesting of a value
MAX_ITEMS = 4_000_000              # values in one value sent, and in one reply received
MAX_CHARS = 32 * 1024 * 1024       # characters of text in one value sent
MAX_DECODE_SECONDS = 10.0          # decoding one reply
MAX_SAME_HASH = 64                 # keys of one dict or set that share a hash value
ARRAY_KINDS = "biufcU"
# Given functions (never an answer, never a reference implementation) that both processes hold
# in their own lreact, (module, name): one a test hands to an answer is called as the answer's
# own copy.  toy_logits is pure; run_python runs the code an answer gives it, so it must run in
# the answer's sandbox, never in the trusted process (as a handle it would run there).
SHARED_FUNCTIONS = (("lreact.grammar", "toy_logits"), ("lreact.actions.codeact", "run_python"))
RUN_BY_ANSWERS_ONLY = frozenset({"lreact.actions.codeact.run_python"})   # never decoded by the tests' side
_SCALARS = frozenset((type(None), bool, int, float, str))
_HIDDEN_TYPES = (types.ModuleType, type, types.FrameType, types.CodeType, types.TracebackType,
                 types.CellType)


def _exact_number(x):
    """A ``fractions.Fraction`` (any ``numbers.Rational``) or a finite ``decimal.Decimal`` as the
    float it stands for, as numpy and the checks read it; None for anything else.  Runs on the
    answer's side: the float is plain data, whatever computed it."""
    import decimal
    import numbers
    if not isinstance(x, (numbers.Rational, decimal.Decimal)):
        return None
    if isinstance(x, decimal.Decimal) and not x.is_finite():
        return None
    try:
        value = float(x)
    except (OverflowError, ValueError, TypeError, ArithmeticError) as e:
        raise NotPlainData(f"a {type(x).__name__} that is not a float: {e}") from None
    if type(value) is not float:
        raise NotPlainData(f"a {type(x).__name__} whose float() is not a float")
    return value


class Budget:
    """The work one message may cost: values counted, text counted, and a deadline (decoding).
    ``handles``: may the message hold a handle at all (a ``repeat`` reply may not)."""

    def __init__(self, sending: bool, handles: bool = True):
        self.sending, self.handles = sending, handles
        self.items = self.chars = 0
        self.classes: set = set()          # notebook classes described in full in this message
        self.until = None if sending else time.monotonic() + MAX_DECODE_SECONDS

    def spend(self, items: int = 1, chars: int = 0) -> None:
        self.items += items
        self.chars += chars
        if self.items > MAX_ITEMS:
            raise NotPlainData(f"too large to pass: more than {MAX_ITEMS:,} values (every list "
                               "item, dict entry and array element counts)" if self.sending else
                               f"a reply of more than {MAX_ITEMS:,} values")
        if self.chars > MAX_CHARS:
            raise NotPlainData(f"too large to pass: more than {MAX_CHARS:,} characters of text")
        if self.until is not None and time.monotonic() > self.until:
            raise NotPlainData(f"decoding the reply took more than {MAX_DECODE_SECONDS:g} s")


class _Scope:
    """The budget of a message under way on a codec (a nested scope shares the outer one)."""

    __slots__ = ("codec", "attr", "sending", "handles", "owner")

    def __init__(self, codec, attr, sending, handles):
        self.codec, self.attr, self.sending, self.handles = codec, attr, sending, handles
        self.owner = False

    def __enter__(self) -> Budget:
        budget = getattr(self.codec, self.attr)
        if budget is None:
            budget = Budget(self.sending, self.handles)
            setattr(self.codec, self.attr, budget)
            self.owner = True
        return budget

    def __exit__(self, *exc):
        if self.owner:
            setattr(self.codec, self.attr, None)


def shared_function(name):
    """The named function of ``SHARED_FUNCTIONS`` from this process's own lreact."""
    import importlib
    for module, attr in SHARED_FUNCTIONS:
        if name == f"{module}.{attr}":
            return getattr(importlib.import_module(module), attr)
    raise NotPlainData(f"not a shared function: {name!r}")


class Codec:
    """Plain values to tagged JSON and back, for one side (``"T"`` trusted or ``"S"``)."""

    def __init__(self, side: str, link=None):
        self.side, self.other = side, ("S" if side == "T" else "T")
        self.link = link                   # the Link whose proxies decoded handles become
        self.records = records.records()
        self.record_of = {cls: name for name, cls in self.records.items()}
        self.exceptions = records.exceptions()
        self.exception_name = {cls: name for name, cls in self.exceptions.items()}
        self.exported: dict = {}           # handle id -> object (kept alive)
        self._ids: dict = {}               # id(object) -> handle id
        self.export_any = side == "T"      # the trusted side hands out handles to anything
        self.described: dict = {}          # (answers' side) key -> a notebook class it described
        self.classes = classes.Classes(self) if side == "T" else None   # (tests' side)
        self._sending = self._receiving = None      # the Budget of the message under way

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

    # budgets: one per message; nested uses share the outer one
    @contextlib.contextmanager
    def apart(self):
        """Encode meanwhile on budgets of their own, not on the message under way."""
        outer, self._sending = self._sending, None
        try:
            yield
        finally:
            self._sending = outer

    def sending(self) -> "_Scope":
        """``with codec.sending() as budget:`` one budget for everything encoded meanwhile."""
        return _Scope(self, "_sending", True, True)

    def receiving(self, handles: bool = True) -> "_Scope":
        """``with codec.receiving() as budget:`` one budget (and deadline) for everything
        decoded meanwhile; ``handles=False``: a handle anywhere in it is refused."""
        return _Scope(self, "_receiving", False, handles)

    # encoding
    def encode(self, x, depth: int = 0):
        if self._sending is not None:
            return self._encode(x, depth)
        self._sending = Budget(sending=True)
        try:
            return self._encode(x, depth)
        finally:
            self._sending = None

    def _encode(self, x, depth: int):
        if depth > MAX_DEPTH:
            raise NotPlainData("the value is nested too deeply")
        t, spend = type(x), self._sending.spend
        if x is None or t is bool or t is int or t is float:
            return x
        if t is str:
            spend(1, len(x))
            return x
        if t is list:
            spend(len(x))
            if all(type(v) in _SCALARS for v in x):      # the common case, without a call per item
                spend(0, sum(len(v) for v in x if type(v) is str))
                return list(x)
            return [self._encode(v, depth + 1) for v in x]
        if t is tuple:
            spend(len(x))
            return {"t": [self._encode(v, depth + 1) for v in x]}
        if t is dict:
            spend(len(x))
            return {"d": [[self._encode(k, depth + 1), self._encode(v, depth + 1)]
                          for k, v in x.items()]}
        if t in getattr(self.link, "handle_types", ()) and x._side == self.other:
            return {x._side: [x._hid, x._callable]}     # a stand-in goes back as its handle
        return self._encode_other(x, t, depth)

    def _encode_other(self, x, t, depth):
        import numpy as np
        special = stdlib.encode(self, x, depth)
        if special is not None:
            return special
        own = classes.encode(self, x, t, depth) if self.side == "S" else \
            self.classes.encode_back(x, depth)
        if own is not None:
            return own
        if isinstance(x, bool):
            return bool(x)
        if not isinstance(x, np.generic):
            if isinstance(x, str):
                return self._encode(str.__str__(x), depth)
            if isinstance(x, int):
                return int.__int__(x)
            if isinstance(x, float):
                return float.__float__(x)
            if isinstance(x, complex):
                return {"j": [complex.__complex__(x).real, complex.__complex__(x).imag]}
            exact = _exact_number(x)
            if exact is not None:
                return exact
        if isinstance(x, np.ndarray):
            return numeric.encode_array(x, self._sending)
        if isinstance(x, np.generic):
            return numeric.encode_scalar(x)
        if isinstance(x, np.random.Generator):
            return mirror.encode_generator(self, x, depth)
        record = records.encode_record(self, x, t, depth)
        if record is not None:
            return record
        if isinstance(x, BaseException):
            return self.encode_exception(x)
        if isinstance(x, (list, tuple)):
            items = list.__iter__(x) if isinstance(x, list) else tuple.__iter__(x)
            out = [self._encode(v, depth + 1) for v in items]
            self._sending.spend(len(out))
            return out if isinstance(x, list) else {"t": out}
        if isinstance(x, dict):
            self._sending.spend(dict.__len__(x))
            return {"d": [[self._encode(k, depth + 1), self._encode(v, depth + 1)]
                          for k, v in dict.items(x)]}
        if isinstance(x, (set, frozenset)):
            out = [self._encode(v, depth + 1) for v in x]
            self._sending.spend(len(out))
            return {"s": out}
        if isinstance(x, (bytes, bytearray)):
            self._sending.spend(1, len(x) * 4 // 3)
            return {"b": base64.b64encode(bytes(x)).decode("ascii")}
        if callable(x):
            shared = self._shared_name(x)
            if shared:
                return {"f": shared}
        if self.export_any or callable(x):
            if isinstance(x, _HIDDEN_TYPES) and self.side == "T":
                raise NotPlainData(f"a {t.__name__} cannot be passed to an answer")
            handle = self.export(x)
            if self.side == "T" and callable(x) and getattr(x, "lreact_pure", False) is True:
                handle.append(1)         # a pure function: the answer's side may cache results
            return {self.side: handle}
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
        return records.encode_exception(self, e)

    def encode_arguments(self, args, kwargs) -> tuple[list, list]:
        """A call's arguments as ``([arg, ...], [[keyword, value], ...])``, encoded: a message
        of its own (a request, a mirror's log entry), with its own budget whatever reply is
        being built meanwhile."""
        outer, self._sending = self._sending, Budget(sending=True)
        try:
            return ([self._encode(a, 0) for a in args],
                    [[k, self._encode(v, 0)] for k, v in kwargs.items()])
        finally:
            self._sending = outer

    # decoding (the input may come from a hostile process: only plain values are built)
    def decode(self, x, depth: int = 0):
        if self._receiving is not None:
            return self._decode(x, depth)
        self._receiving = Budget(sending=False)
        try:
            return self._decode(x, depth)
        finally:
            self._receiving = None

    def _decode(self, x, depth: int):
        if depth > MAX_DEPTH:
            raise NotPlainData("the value is nested too deeply")
        t, spend = type(x), self._receiving.spend
        if x is None or t in (bool, int, float, str):
            return x
        if t is list:
            spend(len(x))
            if all(type(v) in _SCALARS for v in x):
                return x                     # JSON gave a fresh list of plain scalars
            return [self._decode(v, depth + 1) for v in x]
        if t is not dict or len(x) != 1:
            raise NotPlainData("a malformed value")
        (tag, body), = x.items()
        spend()
        if tag == "t":
            return tuple(self._decode(v, depth + 1) for v in self.checked_list(body))
        if tag == "d":
            out = {}
            for k, v in self._keyed((self.checked_list(p, 2) for p in self.checked_list(body)),
                                    depth, "dict"):
                out[k] = self._decode(v, depth + 1)
            return out
        if tag == "s":
            return {k for k, _ in self._keyed(((v, None) for v in self.checked_list(body)),
                                             depth, "set")}
        if tag == "b":
            spend(len(str(body)) // 64)
            return base64.b64decode(str(body))
        if tag == "j":
            re, im = self.checked_list(body, 2)
            if type(re) not in (int, float) or type(im) not in (int, float):
                raise NotPlainData("a malformed complex number")
            return complex(re, im)
        if tag in ("a", "n"):
            return numeric.decode_array(self, body) if tag == "a" else \
                numeric.decode_scalar(self, body)
        if tag == "m":
            return records.decode_record(self, body, depth)
        if tag == "e":
            return self.decode_exception(x)
        if tag == "g":
            return mirror.decode_generator(self, body, depth)
        if tag in stdlib.TAGS:
            return stdlib.decode(self, tag, body, depth)
        if tag in "cNEAo":
            if self.side == "T":
                return self.classes.decode(tag, body, depth)
            if tag in "NEA":
                return classes.own_instance(self, tag, body)
            if tag == "c" and isinstance(body, dict) and body.get("k") in self.described:
                return self.described[body["k"]]
            raise NotPlainData("a class of the tests' where plain values were expected")
        if tag == "f":
            if self.side == "T" and body in RUN_BY_ANSWERS_ONLY:
                raise NotPlainData(f"{body} is run by answers only, never beside the tests")
            return shared_function(body)
        if tag == self.side:
            return self.local(self.checked_list(body, 2)[0])
        if tag == self.other:
            body = self.checked_list(body)
            if len(body) not in (2, 3):
                raise NotPlainData("a malformed handle")
            if not self._receiving.handles or self.link is None:
                raise NotPlainData("a function or an object where plain values were expected")
            return self.link.proxy(self.other, body[0], bool(body[1]),
                                   pure=len(body) == 3 and self.side == "S")
        raise NotPlainData(f"a malformed value (tag {tag!r})")

    def _keyed(self, pairs, depth, kind):
        """(key, value) pairs with each key decoded; refused if many keys share a hash."""
        seen = {}
        for k, v in pairs:
            self._receiving.spend()
            k = self._decode(k, depth + 1)
            try:
                h = hash(k)
            except TypeError:
                raise NotPlainData(f"a {kind} key that is not hashable") from None
            seen[h] = n = seen.get(h, 0) + 1
            if n > MAX_SAME_HASH:
                raise NotPlainData(f"a {kind} with more than {MAX_SAME_HASH} keys of one hash "
                                   "value (building it would take quadratic time)")
            yield k, v

    def decode_exception(self, x) -> BaseException:
        return records.decode_exception(self, x)

    @staticmethod
    def checked_list(x, n=None):
        if type(x) is not list or (n is not None and len(x) != n):
            raise NotPlainData("a malformed value")
        return x

    def decode_arguments(self, args, kwargs) -> tuple[list, dict]:
        """``encode_arguments`` undone: (args, kwargs)."""
        with self.receiving():
            decoded = [self.decode(a) for a in self.checked_list(args)]
            named = {}
            for pair in self.checked_list(kwargs):
                k, v = self.checked_list(pair, 2)
                if not isinstance(k, str):
                    raise NotPlainData("a keyword must be a str")
                named[k] = self.decode(v)
        return decoded, named

    def replay(self, rng, log) -> None:
        """The test's ``rng`` makes the calls its mirror logged (``mirror.replay``)."""
        with self.receiving():
            mirror.replay(self, rng, log)

