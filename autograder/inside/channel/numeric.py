"""numpy numbers over the channel (``codec.py``): every bool, int, uint, float and complex dtype,
and str, with the dtype and the exact value they had.

A float up to float64 (float16, float32 too) travels as a JSON number, which holds it exactly; a
``longdouble`` as its shortest exact decimal text (numpy's own ``str``), since a JSON number
would round it to float64; a complex number as its real and imaginary parts.  So an answer of
``np.longdouble(0.25)`` arrives as ``np.longdouble(0.25)`` and a test's ``abs(x - 0.25) < tol``
or ``np.asarray(x, dtype=float)`` sees what it would see in the student's own kernel (where
nbgrader runs its tests).  Converting prints nothing: a warning on stderr would zero a test.

    {"a": [dtype, shape, flat]}   flat: the elements in C order (a complex: re, im, re, im...)
    {"n": [dtype, x]}             x: the value (a complex: [re, im])
"""
from __future__ import annotations

import warnings

from .mirror import NotPlainData

KINDS = "biufcU"
MAX_ITEMSIZE = 4096                # bytes per element (a str dtype of 1024 characters)


def _is_longdouble(dt) -> bool:
    import numpy as np
    return dt.type in (np.longdouble, np.clongdouble)


def _flat(values, longdouble: bool) -> list:
    return values.astype(str).tolist() if longdouble else values.tolist()


def encode_array(x, budget) -> dict:
    import numpy as np
    dt = x.dtype
    if dt.kind not in KINDS or dt.itemsize > MAX_ITEMSIZE:
        raise NotPlainData(f"a numpy array of dtype {dt} is not plain data")
    budget.spend(x.size * (2 if dt.kind == "c" else 1),
                 x.size * dt.itemsize // 4 if dt.kind == "U" else 0)
    flat = x.ravel()
    if dt.kind == "c":
        flat = np.stack([flat.real, flat.imag], axis=-1).ravel()
    return {"a": [dt.str, list(x.shape), _flat(flat, _is_longdouble(dt))]}


def encode_scalar(x) -> dict:
    import numpy as np
    dt = x.dtype
    if dt.kind not in KINDS or dt.itemsize > MAX_ITEMSIZE:
        raise NotPlainData(f"a numpy {dt} is not plain data")
    if dt.kind == "c":
        parts = np.array([x.real, x.imag])
        return {"n": [dt.str, _flat(parts, _is_longdouble(dt))]}
    return {"n": [dt.str, str(x) if _is_longdouble(dt) else x.item()]}


def _dtype(name):
    import numpy as np
    try:
        dt = np.dtype(str(name))
    except (TypeError, ValueError):
        raise NotPlainData("a malformed numpy dtype") from None
    if dt.kind not in KINDS or dt.itemsize > MAX_ITEMSIZE or dt.fields or dt.subdtype:
        raise NotPlainData(f"not a plain numpy dtype: {name!r}")
    return dt


def _build(values, dt):
    """A 1-d array of dtype ``dt`` from JSON numbers or text (complex: from its parts)."""
    import numpy as np
    kinds = set(map(type, values))
    if not kinds <= {bool, int, float, str}:
        raise NotPlainData("a malformed numpy value")
    try:
        with np.errstate(all="ignore"):
            if str in kinds:            # text (a longdouble): numpy's parser may warn
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return _array(values, dt)
            return _array(values, dt)
    except (ValueError, OverflowError, TypeError, MemoryError) as e:
        raise NotPlainData(f"a malformed numpy value ({e})") from None


def _array(values, dt):
    import numpy as np
    if dt.kind != "c":
        return np.array(values, dtype=dt)
    parts = np.array(values, dtype=np.finfo(dt).dtype)   # the parts' float dtype
    if parts.size % 2:
        raise NotPlainData("a malformed complex value")
    out = np.empty(parts.size // 2, dtype=dt)
    out.real, out.imag = parts[0::2], parts[1::2]
    return out


def decode_array(codec, body):
    dtype, shape, flat = codec.checked_list(body, 3)
    dt = _dtype(dtype)
    if any(type(s) is not int or s < 0 for s in codec.checked_list(shape)):
        raise NotPlainData("a malformed numpy array")
    values = codec.checked_list(flat)
    codec._receiving.spend(len(values))
    out = _build(values, dt)
    try:
        return out.reshape(shape)
    except ValueError as e:
        raise NotPlainData(f"a malformed numpy array ({e})") from None


def decode_scalar(codec, body):
    dtype, value = codec.checked_list(body, 2)
    dt = _dtype(dtype)
    values = codec.checked_list(value, 2) if dt.kind == "c" else [value]
    return _build(values, dt)[0]
