"""A test's random ``Generator`` as the answer sees it: a mirror whose calls are replayed.

The test's rng stays in the trusted process, but its calls are batched instead of making a round
trip per draw: the answer gets a *mirror* (a ``Generator`` subclass built from the rng's state,
so it draws exactly what the test's rng would draw), which logs every method call it serves
(name and plain-data arguments).  The log comes back with the reply and the trusted process
replays it on the test's own rng (``replay``), so that rng moves only through its own methods
called there, as it would through a handle; nothing the answer sends sets its state.

Wire form (``codec.py``): ``{"g": [bit generator name, state]}``.  Lecture connection: none; this
is the grader's machinery (``autograder/README.md``, "How a submission is graded").
"""
from __future__ import annotations

import functools
import sys

from .quickkey import quick_key

BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
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


class NotPlainData(TypeError):
    """A value that cannot cross the channel (or a reply that is not plain data)."""


def numpy_if_loaded():
    return sys.modules.get("numpy")


def is_generator(x) -> bool:
    np = numpy_if_loaded()
    return np is not None and isinstance(x, np.random.Generator)


def is_mirror(x) -> bool:
    """Is ``x`` a mirror of a test's rng (made by this side's decoding)?"""
    return numpy_if_loaded() is not None and type(x) is _mirror_class()


def _logged(state: dict, name: str, method):
    """``method`` of a mirror, logging each call in ``state["lreact_log"]``."""
    codec = state["lreact_codec"]

    def call(args, kwargs):
        state["lreact_depth"] = 1
        try:
            return method(*args, **kwargs)
        finally:
            state["lreact_depth"] = 0

    def logged(*args, **kwargs):
        log = state["lreact_log"]
        quick = quick_key(name, args, kwargs)
        again = state["lreact_again"]           # (quick key, entry) of the last call logged
        if quick is not None and again is not None and again[0] == quick:
            entry = again[1]
            if entry[3] < MAX_LOG and log and log[-1] is entry:
                value = call(args, kwargs)      # the last call again: count it, no encoding
                entry[3] += 1
                return value
        try:
            entry = [name, *codec.encode_arguments(args, kwargs)]
        except NotPlainData as e:
            raise TypeError(f"rng.{name} was given something the grader cannot pass on to "
                            f"the test's rng: {e}") from None
        last = log[-1] if log else None
        same = last is not None and last[0] == name and last[1] == entry[1] \
            and last[2] == entry[2] and last[3] < MAX_LOG
        if not same and len(log) >= MAX_LOG:
            raise RuntimeError(f"more than {MAX_LOG} different rng calls in one call")
        value = call(args, kwargs)
        if same:
            last[3] += 1
        else:
            log.append(entry + [1])
        state["lreact_again"] = (quick, log[-1]) if quick is not None else None
        return value

    return logged


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
            self.lreact_again = None

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


def encode_generator(codec, x, depth: int):
    """``{"g": [name, state]}`` for a Generator over one of numpy's own bit generators."""
    import numpy as np
    bits = x.bit_generator
    name = type(bits).__name__
    if name not in BIT_GENERATORS or type(bits) is not getattr(np.random, name):
        raise NotPlainData(f"a Generator over {name} is not plain data")
    return {"g": [name, codec.encode(bits.state, depth + 1)]}


def decode_generator(codec, body, depth: int):
    """The student side gets a mirror (its calls are replayed on the test's rng); the trusted
    side a plain Generator (a copy: the answer's own)."""
    import numpy as np
    name, state = codec.checked_list(body, 2)
    if name not in BIT_GENERATORS:
        raise NotPlainData(f"not a bit generator: {name!r}")
    state = codec.decode(state, depth + 1)
    if type(state) is not dict or state.get("bit_generator") != name:
        raise NotPlainData("a malformed Generator state")
    bits = getattr(np.random, name)()
    try:
        bits.state = state
    except (ValueError, TypeError, KeyError, OverflowError) as e:
        raise NotPlainData(f"a malformed Generator state ({e})") from None
    if codec.side == "S":
        return _mirror_class()(bits, codec)
    return np.random.Generator(bits)


def replay(codec, rng, log) -> None:
    """Make on ``rng`` (the test's own) the calls its mirror logged, in order.  A call that
    raises raised for the answer too (same arguments) and drew nothing."""
    total = 0
    for entry in codec.checked_list(log):
        name, args, kwargs, count = codec.checked_list(entry, 4)
        if name not in REPLAYED:
            raise NotPlainData(f"not a Generator method: {name!r}")
        if type(count) is not int or count < 1 or total + count > MAX_LOG:
            raise NotPlainData(f"a malformed call count: {count!r}")
        total += count
        args, kw = codec.decode_arguments(args, kwargs)
        method = getattr(rng, name)
        try:
            if count > 1 and _draws_alike(name, args, kw):
                method(*args, **kw, size=count)      # one call, the same draws (see below)
            else:
                for _ in range(count):
                    method(*args, **kw)
        except Exception:  # noqa: BLE001 - the answer's own call raised the same
            pass


def _draws_alike(name, args, kw) -> bool:
    """Whether ``count`` calls ``rng.name(*args, **kw)`` move ``rng`` exactly as one call with
    ``size=count`` does: numpy draws one value at a time from the bit generator for
    ``random()`` and ``standard_normal()``, and ``choice(a, p=p)`` draws one ``random()`` per
    pick.  (``integers`` does not qualify: one call buffers 32-bit halves across its values.)
    Proved on every bit generator in tests/test_autograder_channel.py."""
    if name in ("random", "standard_normal"):
        return not args and not kw
    return name == "choice" and len(args) == 1 and set(kw) == {"p"} and kw["p"] is not None
