"""The standard library's containers and exact numbers, crossing with their type (``codec.py``).

    {"C": [[k, v], ...]}          collections.Counter
    {"O": [[k, v], ...]}          collections.OrderedDict
    {"D": [factory, [[k, v]...]]} collections.defaultdict whose default_factory is a builtin
                                  type (or None), named in ``FACTORIES``
    {"Q": [maxlen, [items]]}      collections.deque
    {"q": [numerator, denom]}     fractions.Fraction (exact)
    {"z": "text"}                 decimal.Decimal (exact, NaN and infinities included)
    {"F": [items]}                frozenset
    {"B": base64}                 bytearray
    {"K": [keys]} / {"V": [values]} / {"I": [[k, v]...]}   a dict's keys, values, items views
    {"R": [start, stop, step]}    range

Each arrives as the same type with the same contents, so a test that calls ``.most_common()``,
``move_to_end``, reads a missing key of a defaultdict, relies on a deque's ``maxlen``, compares a
Fraction exactly or uses a frozenset as a key behaves as in one kernel (an adopter's Counter used
to arrive as a plain dict).  Decoding builds only these types from plain values.  Lecture
connection: none; this is the grader's machinery (``autograder/README.md``, "Writing test cells
for this grader").
"""
from __future__ import annotations

import base64
import collections
import decimal
import fractions

from .mirror import NotPlainData

# a defaultdict's factory, by name: builtin types only (a lambda or a class of the notebook has
# no plain form; such a defaultdict is refused, saying so)
FACTORIES = {name: t for t in (list, dict, set, frozenset, int, float, complex, str, bytes,
                               tuple, bool, collections.Counter, collections.OrderedDict,
                               collections.deque) for name in [t.__name__]}
FACTORY_NAMES = {t: n for n, t in FACTORIES.items()}
VIEWS = {type({}.keys()): "K", type({}.values()): "V", type({}.items()): "I"}
MAX_DECIMAL_DIGITS = 10_000


def encode(codec, x, depth: int):
    """The tagged form of ``x`` if it is one of the types above, else None."""
    t = type(x)
    enc, spend = codec._encode, codec._sending.spend
    if t is collections.Counter or t is collections.OrderedDict:
        spend(len(x))
        return {"C" if t is collections.Counter else "O":
                [[enc(k, depth + 1), enc(v, depth + 1)] for k, v in x.items()]}
    if t is collections.defaultdict:
        factory = x.default_factory
        if factory is not None and factory not in FACTORY_NAMES:
            raise NotPlainData("a defaultdict whose default_factory is not a builtin type "
                               f"({getattr(factory, '__name__', type(factory).__name__)}): "
                               "return a dict, or use list, int, set, ... as the factory")
        spend(len(x))
        return {"D": [FACTORY_NAMES.get(factory), [[enc(k, depth + 1), enc(v, depth + 1)]
                                                   for k, v in x.items()]]}
    if t is collections.deque:
        spend(len(x))
        return {"Q": [x.maxlen, [enc(v, depth + 1) for v in x]]}
    if t is fractions.Fraction:
        return {"q": [x.numerator, x.denominator]}
    if t is decimal.Decimal:
        text = str(x)
        spend(1, len(text))
        return {"z": text}
    if t is frozenset:
        spend(len(x))
        return {"F": [enc(v, depth + 1) for v in x]}
    if t is bytearray:
        spend(1, len(x) * 4 // 3)
        return {"B": base64.b64encode(bytes(x)).decode("ascii")}
    if t in VIEWS:
        tag = VIEWS[t]
        spend(len(x))
        if tag == "I":
            return {"I": [[enc(k, depth + 1), enc(v, depth + 1)] for k, v in x]}
        return {tag: [enc(v, depth + 1) for v in x]}
    if t is range:
        return {"R": [x.start, x.stop, x.step]}
    return None


TAGS = frozenset("COQDqzFBKVIR")


def decode(codec, tag: str, body, depth: int):
    dec, items = codec._decode, codec.checked_list
    if tag in "CO":
        made = collections.Counter() if tag == "C" else collections.OrderedDict()
        for k, v in codec._keyed((items(p, 2) for p in items(body)), depth, "dict"):
            made[k] = dec(v, depth + 1)
        return made
    if tag == "D":
        factory, pairs = items(body, 2)
        if factory is not None and factory not in FACTORIES:
            raise NotPlainData(f"a defaultdict with an unknown factory {factory!r}")
        made = collections.defaultdict(FACTORIES.get(factory))
        for k, v in codec._keyed((items(p, 2) for p in items(pairs)), depth, "dict"):
            made[k] = dec(v, depth + 1)
        return made
    if tag == "Q":
        maxlen, values = items(body, 2)
        if maxlen is not None and (type(maxlen) is not int or maxlen < 0):
            raise NotPlainData("a deque with a malformed maxlen")
        return collections.deque((dec(v, depth + 1) for v in items(values)), maxlen)
    if tag == "q":
        n, d = items(body, 2)
        if type(n) is not int or type(d) is not int or d <= 0:
            raise NotPlainData("a malformed Fraction")
        return fractions.Fraction(n, d)
    if tag == "z":
        if type(body) is not str or len(body) > MAX_DECIMAL_DIGITS:
            raise NotPlainData("a malformed Decimal")
        try:
            return decimal.Decimal(body)
        except decimal.InvalidOperation:
            raise NotPlainData("a malformed Decimal") from None
    if tag == "F":
        return frozenset(k for k, _ in codec._keyed(((v, None) for v in items(body)), depth,
                                                     "frozenset"))
    if tag == "B":
        codec._receiving.spend(len(str(body)) // 64)
        return bytearray(base64.b64decode(str(body)))
    if tag in "KV":
        values = [dec(v, depth + 1) for v in items(body)]
        if tag == "V":
            return dict(enumerate(values)).values()
        for v in values:
            try:
                hash(v)
            except TypeError:
                raise NotPlainData("a dict's keys that are not hashable") from None
        return dict.fromkeys(values).keys()
    if tag == "I":
        made = {}
        for k, v in codec._keyed((items(p, 2) for p in items(body)), depth, "dict"):
            made[k] = dec(v, depth + 1)
        return made.items()
    if tag == "R":
        start, stop, step = items(body, 3)
        if not all(type(v) is int for v in (start, stop, step)) or step == 0:
            raise NotPlainData("a malformed range")
        return range(start, stop, step)
    raise NotPlainData(f"a malformed value (tag {tag!r})")
