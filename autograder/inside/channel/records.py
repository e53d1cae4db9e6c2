"""The message records of ``lreact.messages`` and exceptions as plain data (``codec.py``).

    {"m": [record name, [[field, value], ...]]}  a dataclass record of ``lreact.messages``
    {"e": [exception name, [args]]}              an allowed exception type and its arguments
    {"e": [name, [args], class]}                 an exception of the notebook's own class
                                                 (``classes.py`` builds its class here)

A record is rebuilt by its class from its init fields only; an exception by its name among the
builtin exceptions and the course's own (any other becomes a RuntimeError with its text), from
plain arguments.  Lecture connection: none (``autograder/README.md``).
"""
from __future__ import annotations

import builtins
import dataclasses

from .mirror import NotPlainData


def records() -> dict:
    from lreact import messages
    return {name: obj for name, obj in vars(messages).items()
            if isinstance(obj, type) and dataclasses.is_dataclass(obj)
            and obj.__module__ == messages.__name__}


def exceptions() -> dict:
    found = {n: c for n, c in vars(builtins).items()
             if isinstance(c, type) and issubclass(c, Exception)}
    import lreact.engines.models
    import lreact.reference
    from lreact.messages import ToolCallError
    found.update(ToolCallError=ToolCallError,
                 ReferenceUnavailable=lreact.reference.ReferenceUnavailable,
                 ScriptExhaustedError=lreact.engines.models.ScriptExhaustedError)
    return found


def encode_record(codec, x, t, depth):
    """``{"m": ...}`` if ``x`` is one of the records (or a subclass of one), else None."""
    for cls in t.__mro__:
        name = codec.record_of.get(cls)
        if name:
            return {"m": [name, [[f.name, codec.encode(getattr(x, f.name), depth + 1)]
                                 for f in dataclasses.fields(cls)]]}
    return None


def decode_record(codec, body, depth):
    name, fields = codec.checked_list(body, 2)
    cls = codec.records.get(name) if isinstance(name, str) else None
    if cls is None:
        raise NotPlainData(f"not a message type: {name!r}")
    allowed = {f.name for f in dataclasses.fields(cls) if f.init}
    kwargs = {}
    for pair in codec.checked_list(fields):
        k, v = codec.checked_list(pair, 2)
        if k in allowed:
            kwargs[k] = codec.decode(v, depth + 1)
    try:
        return cls(**kwargs)
    except Exception as e:  # noqa: BLE001 - a record the class refuses
        raise NotPlainData(f"a {name} that cannot be built: {e}") from None


def encode_exception(codec, e: BaseException):
    from . import classes
    if codec.side == "S" and classes.is_notebook_class(type(e)) and isinstance(e, Exception):
        with codec.sending():
            own = classes.describe(codec, type(e), 0)
            args = [_plain_arg(codec, a) for a in e.args]
        return {"e": [type(e).__name__, args, own]}
    name = "RuntimeError"
    for cls in type(e).__mro__:
        if codec.exception_name.get(cls):
            name = codec.exception_name[cls]
            break
    else:
        e = RuntimeError(f"{type(e).__name__}: {e}")
    args = [_plain_arg(codec, a) for a in getattr(e, "args", ())]
    if not isinstance(e, Exception):
        args = [f"{type(e).__name__} was raised"]
    return {"e": [name, args]}


def _plain_arg(codec, a):
    try:
        with codec.sending():
            return codec.encode(a)
    except NotPlainData:
        return str(a)[:2000]


def decode_exception(codec, x) -> BaseException:
    body = codec.checked_list(x["e"])
    if len(body) == 3 and codec.side == "T":        # an exception class of the notebook
        name, args, own = body
        try:
            cls = codec.classes.get(own)
        except NotPlainData:
            cls = None
        if not (isinstance(cls, type) and issubclass(cls, Exception)):
            cls = RuntimeError
    else:
        name, args = codec.checked_list(body[:2], 2)
        cls = codec.exceptions.get(name) if isinstance(name, str) else None
    cls = cls or RuntimeError
    try:
        args = [codec.decode(a) for a in codec.checked_list(args)]
    except NotPlainData:
        args = ["(unreadable)"]
    try:
        return cls(*args)
    except Exception:  # noqa: BLE001 - e.g. UnicodeDecodeError needs five arguments
        return cls(" ".join(str(a) for a in args)) if cls is not UnicodeError else \
            RuntimeError(str(args))
