"""Reference token sampling (Part I, "Token Sampling").

These are the lecture's formulas in numpy.  The widgets use them; the lab asks the student to
write the same functions with the same contract (``lab/lecture-ReAct-lab.ipynb``, Part A).

Order: temperature first, then softmax, top-k, top-p and the draw (Part I, "Order when
combined"), as Hugging Face Transformers and vLLM do and as Ollama's own Go sampler did up to
v0.29.  llama.cpp's default sampler chain applies temperature *last* (after top-k, top-p and
min-p), and Ollama since v0.30 runs its models on llama-server with that default; there the
nucleus is chosen on the T = 1 distribution.
"""
from __future__ import annotations

import numpy as np

from .reference import reference_implementation


def _as_1d(z, what="logits") -> np.ndarray:
    a = np.asarray(z, dtype=float)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{what} must be a non-empty 1-D array, got shape {a.shape}")
    if np.isnan(a).any():
        raise ValueError(f"{what} contain NaN")
    return a


@reference_implementation
def softmax(z) -> np.ndarray:
    """softmax(z)_i = exp(z_i) / sum_j exp(z_j) (lecture: "From logits to a token: the softmax").

    Numerically stable (the maximum is subtracted first, which leaves the result unchanged);
    a logit of ``-inf`` gets probability 0.  At least one logit must be finite.
    """
    z = _as_1d(z)
    if z.max() == -np.inf:
        raise ValueError("all logits are -inf: no token can be chosen")
    if np.isposinf(z).any():
        # +inf logits share all the mass equally (the limit of very large logits)
        p = np.isposinf(z).astype(float)
        return p / p.sum()
    with np.errstate(over="ignore", under="ignore"):
        # z - max <= 0; a gap too large for a float becomes -inf, i.e. probability 0
        e = np.exp(z - z.max())
    return e / e.sum()


@reference_implementation
def temperature_softmax(z, T: float) -> np.ndarray:
    """softmax(z / T) (lecture: "Temperature scaling").

    ``T == 0`` returns the one-hot argmax (lowest index on a tie), as inference libraries do for
    ``temperature=0.0``; ``T < 0`` raises ValueError.
    """
    z = _as_1d(z)
    T = float(T)
    if np.isnan(T) or T < 0:
        raise ValueError(f"temperature must be >= 0, got {T}")
    if T == 0:
        p = np.zeros_like(z)
        p[int(np.argmax(z))] = 1.0
        return p
    if np.isposinf(z).any():
        return softmax(z)  # +inf logits keep all the mass at any T > 0
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        # shift before dividing: z / T alone overflows to inf for a tiny T or a huge logit
        shifted = np.where(np.isneginf(z), -np.inf, (z - z.max()) / T)
    return softmax(shifted)


@reference_implementation
def top_k_filter(probs, k: int) -> np.ndarray:
    """Keep the k most probable tokens, zero the rest, renormalise (lecture: "Truncated sampling: top-k and top-p").

    Ties at the boundary keep the lower token index; ``k >= len(probs)`` changes nothing;
    ``k < 1`` raises ValueError.
    """
    p = _as_1d(probs, "probs")
    if int(k) != k or k < 1:
        raise ValueError(f"k must be a whole number >= 1, got {k}")
    k = int(k)
    if k >= p.size:
        return p / p.sum()
    order = np.argsort(-p, kind="stable")  # descending, lower index first on ties
    out = np.zeros_like(p)
    keep = order[:k]
    out[keep] = p[keep]
    return out / out.sum()


@reference_implementation
def top_p_filter(probs, p: float) -> np.ndarray:
    """Keep the nucleus: the smallest set, in descending probability, whose cumulative
    probability is >= p (the token that crosses p is kept), then renormalise
    (lecture: "Truncated sampling: top-k and top-p", Holtzman et al., 2020).  ``0 < p <= 1`` else ValueError.
    """
    q = _as_1d(probs, "probs")
    p = float(p)
    if not 0 < p <= 1:
        raise ValueError(f"p must satisfy 0 < p <= 1, got {p}")
    order = np.argsort(-q, kind="stable")
    cumulative = np.cumsum(q[order])
    # the first position whose cumulative sum reaches p (tolerate float round-off at the boundary)
    n = int(np.searchsorted(cumulative, p * q.sum() - 1e-12, side="left")) + 1
    n = min(n, q.size)
    out = np.zeros_like(q)
    keep = order[:n]
    out[keep] = q[keep]
    return out / out.sum()


@reference_implementation
def sample_token(logits, *, temperature: float = 1.0, top_k=None, top_p=None,
                 rng: np.random.Generator) -> int:
    """One sampling step: temperature, softmax, top-k, top-p, then one categorical draw
    with ``rng`` (lecture: "Next-token sampling: greedy or random").  Temperature 0 returns the argmax."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator, e.g. np.random.default_rng(0)")
    if temperature == 0:
        return int(np.argmax(_as_1d(logits)))
    probs = temperature_softmax(logits, temperature)
    if top_k is not None:
        probs = top_k_filter(probs, top_k)
    if top_p is not None:
        probs = top_p_filter(probs, top_p)
    return int(rng.choice(probs.size, p=probs))


def entropy(probs) -> float:
    """Shannon entropy in bits (0 for a one-hot distribution)."""
    q = _as_1d(probs, "probs")
    nz = q[q > 0]
    return float(-(nz * np.log2(nz)).sum())
