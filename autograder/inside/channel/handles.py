"""The stand-ins for the other side's objects (``inside/channel/link.py`` makes them, ``Link.proxy``).

- ``Proxy``: an object of the tests (a ScriptedLLM, a registry, a logits function) in the
  student process.  Calling it, reading a public attribute, indexing, ``len``, iterating send a
  request and wait for the reply; the trusted side answers for public names only.
- ``StudentFunction``: a function of the student's in the trusted process.  It can only be
  called (with plain data, returning plain data); its repr, truth, ``==`` and hash are local, and
  it cannot be iterated, indexed, measured or read, so no value a test reads, iterates, compares
  or prints is ever served by the student process.

Lecture connection: none; this is the grader's machinery (``autograder/README.md``).
"""
from __future__ import annotations


class Proxy:
    """An object of the tests, in the student process: operations on it are requests."""

    __slots__ = ("_link", "_side", "_hid", "_callable", "_methods", "_pure", "__name__",
                 "__qualname__")

    def __init__(self, link, side, hid, is_callable, name=None, pure=False):
        object.__setattr__(self, "_link", link)
        object.__setattr__(self, "_pure", bool(pure))
        object.__setattr__(self, "_side", side)
        object.__setattr__(self, "_hid", hid)
        object.__setattr__(self, "_callable", is_callable)
        object.__setattr__(self, "_methods", {})
        object.__setattr__(self, "__name__", name or f"object {hid}")
        object.__setattr__(self, "__qualname__", name or f"object {hid}")

    def _op(self, op, **kw):
        return self._link.request({"op": op, "ref": self._hid, **kw})

    def __call__(self, *args, **kwargs):
        if self._pure:
            return self._link.call_pure(self._hid, args, kwargs)
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


class StudentFunction:
    """A function of the student's process, in the trusted process: it can only be called.
    Everything else is this side's own (repr, truth, ``==``, hash) or refused here (iterating,
    indexing, ``len``, attributes): the student process serves nothing but the call."""

    __slots__ = ("_link", "_hid", "__name__", "__qualname__")
    _side, _callable = "S", True

    def __init__(self, link, hid, name=None):
        object.__setattr__(self, "_link", link)
        object.__setattr__(self, "_hid", hid)
        object.__setattr__(self, "__name__", name or f"function {hid}")
        object.__setattr__(self, "__qualname__", name or f"function {hid}")

    def __call__(self, *args, **kwargs):
        return self._link.call({"ref": self._hid}, args, kwargs)

    def __getattr__(self, name):
        raise AttributeError(f"{self.__name__} is the student's function: the tests may only "
                             f"call it (not read .{name})")

    def __setattr__(self, name, value):
        raise AttributeError("the student's functions are read-only here")

    def __repr__(self):
        return f"<the student's {self.__name__}>"

    __str__ = __repr__
