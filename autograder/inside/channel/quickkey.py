"""Arguments keyed without encoding them: the quick path of the grader's two caches.

``link.Link.call_pure`` keeps the value of a pure function of the tests per distinct
arguments, and a test rng's mirror (``mirror.py``) counts identical consecutive calls as one log
entry.  Both used to encode the arguments (``codec.py``) on every call to compare them; a
sampling loop calls them tens of thousands of times per submission.  Here a call whose
arguments are only numbers, strings, None, numeric arrays and short lists or tuples of these
is keyed by their exact types and bytes instead; any other argument gives no key, and the
caller encodes as before.

Two keys are equal only when the encoded arguments would be: the type is part of the key (so
1, 1.0 and True differ, and a numpy scalar gives no key), a float counts by its bits (0.0 and
-0.0 differ), an array by its dtype, shape and bytes.  Lecture connection: none; this is the
grader's machinery (``autograder/README.md``, "How a submission is graded").
"""
from __future__ import annotations

import sys

_SCALARS = (bool, int, str, type(None))
_EXACT = frozenset(_SCALARS)      # types whose == is the encoded value's (unlike float's -0.0)


MAX_ITEMS = 4096      # items of a list or tuple, or of an array, keyed (a longer one: no key)


def _part(x, depth=0):
    t = type(x)
    if t in _SCALARS:
        return (t.__name__, x)
    if t is float:
        return ("float", x.hex())
    if (t is list or t is tuple) and depth < 2 and len(x) <= MAX_ITEMS:
        kinds = set(map(type, x))
        if len(kinds) == 1 and kinds <= _EXACT:      # e.g. a prefix of token ids: one tuple
            return (t.__name__, kinds.pop().__name__, tuple(x))
        parts = tuple(_part(v, depth + 1) for v in x)
        return None if None in parts else (t.__name__, parts)
    np = sys.modules.get("numpy")       # numpy only if the run has loaded it
    if np is not None and t is np.ndarray and x.dtype.kind in "biuf" and x.size <= MAX_ITEMS:
        return ("nd", x.dtype.str, x.shape, x.tobytes())
    return None


def quick_key(hid, args, kwargs):
    """``(hid, part, ..., (keyword, part), ...)`` for ``hid(*args, **kwargs)``, or None when an
    argument is of another kind (the caller then compares encoded arguments)."""
    parts = [hid]
    for x in args:
        part = _part(x)
        if part is None:
            return None
        parts.append(part)
    for k in sorted(kwargs):
        part = _part(kwargs[k])
        if part is None or type(k) is not str:
            return None
        parts.append((k, part))
    return tuple(parts)


def fresh_copy(value):
    """A copy of a pure call's value that no caller shares, or None for another kind of value."""
    t = type(value)
    if t in _SCALARS or t is float:
        return value
    np = sys.modules.get("numpy")       # numpy only if the run has loaded it
    if np is not None and t is np.ndarray and value.dtype.kind in "biuf":
        return value.copy()
    return None
