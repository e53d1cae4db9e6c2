"""The notebook's own classes, on both sides of the channel (``codec.py``).

An answer cell may define classes: an exception a test catches (``except NegativeSide``), a
``namedtuple``, an ``Enum``, a ``dataclass``, or a plain class whose objects a test checks with
``isinstance`` and reads attributes of.  No code of the answers ever runs in the trusted process,
so a class crosses as its *shape*, and the tests' side builds a class of that shape itself:

    {"c": descriptor}                 a class
    {"N": [descriptor, [values]]}     an instance of a namedtuple class
    {"E": [descriptor, member name]}  a member of an Enum class
    {"A": [descriptor, [[field, value], ...]]}   an instance of a dataclass
    {"o": [handle, descriptor]}       an object of a plain class: a handle (its attributes are
                                      read from the answers' process, as plain data)
    {"e": [name, [args], descriptor]} an exception of the notebook's own class

A descriptor is ``{"k": key, "n": name, "t": kind, ...}`` with, by kind, the fields
(namedtuple, dataclass), the members (Enum), the nearest builtin base (exception), the bases
among the notebook's classes, and a handle to the class (so that a test may call it: a plain
class builds its object in the answers' process).  Within one message a class is described in
full once, then named by its key.  The tests' side keeps one class per key for the whole run, so
``isinstance`` and ``is`` (Enum members) work as in one kernel; where a set-up cell defined a
class of that name and shape, the tests' own class is used.  Built from plain data only:
``collections.namedtuple``, ``enum.Enum``, ``dataclasses.make_dataclass`` and ``type``, with
names that must be identifiers and bounded sizes; a class's own code (methods, ``__eq__``) stays
in the answers' process.  ``==`` on an object of a plain class whose class defines ``__eq__``
is refused with a message that says how to write the test (the student's own ``__eq__`` would
decide it).  Lecture connection: none (``autograder/README.md``, "Writing test cells for this
grader").
"""
from __future__ import annotations

import builtins
import collections
import dataclasses
import enum

from .mirror import NotPlainData

MAX_FIELDS = 256          # fields, members or bases of one class
MAX_CLASSES = 500         # classes one run may describe
KINDS = ("namedtuple", "enum", "exception", "dataclass", "plain")
ENUM_BASES = {"int": enum.IntEnum, "str": getattr(enum, "StrEnum", enum.Enum),
              "flag": enum.Flag, "intflag": enum.IntFlag, "": enum.Enum}


def is_notebook_class(cls) -> bool:
    return isinstance(cls, type) and getattr(cls, "__module__", None) == "__main__"


# --- the answers' side: a class and its instances described ----------------------------------

def kind_of(cls) -> str:
    if issubclass(cls, BaseException):
        return "exception"
    if issubclass(cls, enum.Enum):
        return "enum"
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return "namedtuple"
    if dataclasses.is_dataclass(cls):
        return "dataclass"
    return "plain"


def describe(codec, cls, depth: int) -> dict:
    """``cls`` as a descriptor (in full once per message, then by its key)."""
    key = id(cls)
    codec.described[key] = cls                  # kept: an id is never reused for another class
    seen = codec._sending.classes
    if key in seen:
        return {"k": key}
    seen.add(key)
    kind = kind_of(cls)
    out = {"k": key, "n": cls.__name__, "t": kind,
           "b": [describe(codec, b, depth + 1) for b in cls.__bases__ if is_notebook_class(b)]}
    if kind == "namedtuple":
        out["f"] = list(cls._fields)
    elif kind == "dataclass":
        out["f"] = [f.name for f in dataclasses.fields(cls) if f.init]
    elif kind == "enum":
        base = ("intflag" if issubclass(cls, enum.IntFlag) else "flag" if issubclass(cls, enum.Flag)
                else "int" if issubclass(cls, int) else "str" if issubclass(cls, str) else "")
        out["m"] = [[name, codec._encode(member.value, depth + 1)]
                    for name, member in cls.__members__.items()][:MAX_FIELDS]
        out["e"] = base
    elif kind == "exception":
        out["x"] = next((codec.exception_name[c] for c in cls.__mro__
                         if c in codec.exception_name), "Exception")
    if kind == "plain":
        out["h"] = codec.export(cls)[0]
        out["eq"] = any("__eq__" in vars(c) for c in cls.__mro__ if is_notebook_class(c))
    codec._sending.spend(1 + len(out.get("f", [])) + len(out.get("m", [])))
    return out


def encode(codec, x, t, depth: int):
    """The tagged form of ``x`` (a notebook class, or an instance of one), else None."""
    if isinstance(x, type):
        return {"c": describe(codec, x, depth)} if is_notebook_class(x) else None
    if not is_notebook_class(t) or isinstance(x, BaseException):
        return None
    kind = kind_of(t)
    if kind == "namedtuple":
        return {"N": [describe(codec, t, depth), [codec._encode(v, depth + 1) for v in x]]}
    if kind == "enum":
        return {"E": [describe(codec, t, depth), x.name]}
    if kind == "dataclass":
        return {"A": [describe(codec, t, depth),
                      [[f, codec._encode(getattr(x, f), depth + 1)]
                       for f in describe_fields(t)]]}
    if callable(x):
        return None                             # a callable object: a function handle
    return {"o": [codec.export(x)[0], describe(codec, t, depth)]}


def describe_fields(cls) -> list:
    return [f.name for f in dataclasses.fields(cls) if f.init]


def own_instance(codec, tag: str, body):
    """The answers' side decoding what the tests send back: an instance of one of its own
    classes, named by key (namedtuple, Enum member, dataclass)."""
    desc, rest = codec.checked_list(body, 2)
    cls = codec.described.get(desc.get("k")) if isinstance(desc, dict) else None
    if cls is None:
        raise NotPlainData("an instance of a class this side does not know")
    if tag == "E":
        return cls[rest]
    values = [codec.decode(v) for v in codec.checked_list(rest)] if tag == "N" else \
        {k: codec.decode(v) for k, v in (codec.checked_list(p, 2) for p in rest)}
    return cls(*values) if tag == "N" else cls(**values)


# --- the tests' side: classes built from descriptors -------------------------------------------

class StudentObject:
    """An object of a plain class of the notebook, in the trusted process: its class is a
    stand-in built from the descriptor (so ``isinstance`` works), its attributes and methods are
    read from the answers' process as plain data, and it cannot be changed from here."""

    __slots__ = ("_link", "_hid")
    _side, _callable = "S", False

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._link.request({"op": "getattr", "ref": self._hid, "name": name})

    def __setattr__(self, name, value):
        raise AttributeError(f"the student's {type(self).__name__} objects cannot be changed "
                             "by a test: build a new one by calling the class")

    def __eq__(self, other):
        if type(self).lreact_eq:
            raise TypeError(
                f"comparing {type(self).__name__} objects with == would run the student's own "
                "__eq__ (an answer could make it always true, in any grader): compare their "
                "attributes instead, e.g. (a.x, a.y) == (1, 2)")
        return self is other

    def __hash__(self):
        return id(self)

    def __repr__(self):
        return f"<the student's {type(self).__name__} object>"

    __str__ = __repr__


class StudentClassMeta(type):
    """Calling a stand-in of a plain class builds the object in the answers' process."""

    def __call__(cls, *args, **kwargs):
        if cls.lreact_hid is None:
            raise TypeError(f"{cls.__name__} cannot be called from the tests")
        return cls.lreact_link.call({"ref": cls.lreact_hid}, args, kwargs)


def _identifier(name, what="a class") -> str:
    if not isinstance(name, str) or not name.isidentifier() or len(name) > 200:
        raise NotPlainData(f"{what} name that is not an identifier: {name!r}"[:300])
    return name


class Classes:
    """The tests' side: one class per key for the whole run (see the module docstring)."""

    def __init__(self, codec, known=None):
        self.codec = codec
        self.by_key: dict = {}
        self.key_of: dict = {}          # id(class built here) -> key
        self.known = known or (lambda name: None)   # a class of the tests' own cells, by name

    def get(self, desc, depth: int = 0):
        codec = self.codec
        if not isinstance(desc, dict) or type(desc.get("k")) is not int:
            raise NotPlainData("a malformed class")
        key = desc["k"]
        if key in self.by_key:
            cls, first = self.by_key[key]
            own = self._own(first["n"], first["t"], first) if cls is not self.known(
                first["n"]) else None
            if own is not None:                  # the tests' cells defined it meanwhile
                self.by_key[key] = (own, first)
                self.key_of[id(own)] = key
                return own
            return cls
        if len(self.by_key) >= MAX_CLASSES or depth > 20:
            raise NotPlainData("too many classes from the answers")
        if "n" not in desc:
            raise NotPlainData("a class named before it was described")
        name, kind = _identifier(desc["n"]), desc.get("t")
        if kind not in KINDS:
            raise NotPlainData(f"a class of unknown kind {kind!r}")
        bases = [self.get(b, depth + 1) for b in codec.checked_list(desc.get("b", []))]
        if len(bases) > MAX_FIELDS:
            raise NotPlainData("a class with too many bases")
        cls = self._own(name, kind, desc) or self._build(name, kind, desc, bases)
        self.by_key[key] = (cls, {k: desc.get(k) for k in ("n", "t", "f", "m")})
        self.key_of[id(cls)] = key
        return cls

    def _own(self, name, kind, desc):
        """The tests' own class of this name and shape (a set-up cell defined it), if any."""
        mine = self.known(name)
        if not isinstance(mine, type) or kind_of(mine) != kind or kind == "plain":
            return None
        if kind == "namedtuple" and list(mine._fields) != desc.get("f"):
            return None
        if kind == "dataclass" and describe_fields(mine) != desc.get("f"):
            return None
        if kind == "enum" and list(mine.__members__) != [m[0] for m in desc.get("m") or []]:
            return None
        return mine

    def _build(self, name, kind, desc, bases):
        codec = self.codec
        try:
            if kind in ("namedtuple", "dataclass"):
                fields = [_identifier(f, "a field") for f in codec.checked_list(desc.get("f"))]
                if len(fields) > MAX_FIELDS:
                    raise NotPlainData("a class with too many fields")
                if kind == "namedtuple":
                    return collections.namedtuple(name, fields, module="__main__")
                return dataclasses.make_dataclass(name, fields, bases=tuple(
                    b for b in bases if dataclasses.is_dataclass(b)), namespace={
                        "__module__": "__main__"})
            if kind == "enum":
                members = [(_identifier(m, "a member"), codec.decode(v, 1))
                           for m, v in (codec.checked_list(p, 2)
                                        for p in codec.checked_list(desc.get("m")))]
                base = ENUM_BASES.get(desc.get("e", ""), enum.Enum)
                return base(name, members, module="__main__")
            if kind == "exception":
                parent = next((b for b in bases if issubclass(b, BaseException)), None)
                if parent is None:
                    parent = codec.exceptions.get(desc.get("x")) or Exception
                return type(name, (parent,), {"__module__": "__main__"})
            parents = tuple(b for b in bases if issubclass(b, StudentObject)) or (StudentObject,)
            hid = desc.get("h")
            return StudentClassMeta(name, parents, {
                "__module__": "__main__", "__slots__": (), "lreact_eq": bool(desc.get("eq")),
                "lreact_hid": hid if type(hid) is int else None,
                "lreact_link": codec.link})
        except NotPlainData:
            raise
        except Exception as e:  # noqa: BLE001 - a shape these builders refuse
            raise NotPlainData(f"the class {name} cannot be built here: {e}"[:300]) from None

    def decode(self, tag: str, body, depth: int):
        codec = self.codec
        if tag == "c":
            return self.get(body)
        desc, rest = codec.checked_list(body, 2)
        if tag == "o":
            desc, rest = rest, desc
        cls = self.get(desc)
        if tag == "N":
            if kind_of(cls) != "namedtuple":
                raise NotPlainData("a namedtuple of another kind of class")
            values = [codec._decode(v, depth + 1) for v in codec.checked_list(rest)]
            if len(values) != len(cls._fields):
                raise NotPlainData("a namedtuple with the wrong number of values")
            return cls(*values)
        if tag == "E":
            try:
                return cls[rest]
            except (KeyError, TypeError):
                raise NotPlainData(f"no member {rest!r} of {cls.__name__}") from None
        if tag == "A":
            allowed = set(describe_fields(cls)) if dataclasses.is_dataclass(cls) else set()
            values = {}
            for pair in codec.checked_list(rest):
                k, v = codec.checked_list(pair, 2)
                if k not in allowed:
                    raise NotPlainData(f"{cls.__name__} has no field {k!r}")
                values[k] = codec._decode(v, depth + 1)
            obj = object.__new__(cls)
            for k, v in values.items():
                object.__setattr__(obj, k, v)     # no __init__/__post_init__ of either side
            return obj
        if tag == "o":
            if not issubclass(cls, StudentObject) or type(rest) is not int:
                raise NotPlainData("an object of a class that is not plain")
            obj = object.__new__(cls)
            object.__setattr__(obj, "_link", codec.link)
            object.__setattr__(obj, "_hid", rest)
            return obj
        raise NotPlainData(f"a malformed value (tag {tag!r})")

    def encode_back(self, x, depth: int):
        """An instance of a class built here, sent back to the answers' process as an instance
        of its own class (by key); None when ``x`` is not one."""
        key = self.key_of.get(id(type(x)))
        if key is None:
            return None
        cls = type(x)
        ref = {"k": key}
        enc = self.codec._encode
        if isinstance(x, StudentObject):
            return {"S": [x._hid, False]}
        if isinstance(x, enum.Enum):
            return {"E": [ref, x.name]}
        if kind_of(cls) == "namedtuple":
            return {"N": [ref, [enc(v, depth + 1) for v in x]]}
        if dataclasses.is_dataclass(cls):
            return {"A": [ref, [[f, enc(getattr(x, f), depth + 1)] for f in describe_fields(cls)]]}
        return None


BUILTIN_EXCEPTIONS = {n for n, c in vars(builtins).items()
                      if isinstance(c, type) and issubclass(c, BaseException)}
