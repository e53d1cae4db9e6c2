"""lreact.sampling: the lecture's softmax / temperature / top-k / top-p / sampling (Part I).

Property-based where it fits: any logits (huge, tiny, -inf) give a probability vector; top-p keeps
the smallest nucleus (checked against a brute-force search over subsets); top-k ties keep the lower
index; seeded draws are reproducible; 20,000 draws match the target within a chi-square bound.
"""
import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lreact.sampling import (entropy, sample_token, softmax, temperature_softmax, top_k_filter,
                             top_p_filter)

# per test, not a global profile: other test files keep their own hypothesis settings
SETTINGS = settings(max_examples=150, deadline=None)

NEG_INF = float("-inf")
huge_or_normal = st.one_of(
    st.floats(min_value=-50, max_value=50, allow_nan=False),
    st.floats(allow_nan=False, allow_infinity=False),  # up to +-1.8e308
    st.sampled_from([NEG_INF, 1e308, -1e308, 5e-324, 0.0]))
logit_lists = st.lists(huge_or_normal, min_size=1, max_size=12).filter(
    lambda z: any(x != NEG_INF for x in z))
temperatures = st.one_of(st.floats(min_value=1e-320, max_value=1e6), st.sampled_from([1e-300, 0.01, 1.0, 7.0]))


def assert_probability_vector(p, n):
    p = np.asarray(p)
    assert p.shape == (n,)
    assert np.all(np.isfinite(p)) and np.all(p >= 0)
    assert math.isclose(math.fsum(p.tolist()), 1.0, abs_tol=1e-9)


def no_warnings(fn, *args, **kwargs):
    """Call fn and fail on any warning: a warning in a graded cell's output would zero it."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            return fn(*args, **kwargs)


# -- softmax ----------------------------------------------------------------------------------

def test_softmax_known_values():
    p = softmax([2.0, 1.0, 0.1])
    assert np.allclose(p, [0.6590011388859679, 0.2424329707047139, 0.09856589040931818])
    assert np.allclose(softmax([0.0, 0.0, 0.0, 0.0]), [0.25] * 4)


@SETTINGS
@given(logit_lists)
def test_softmax_is_a_probability_vector_for_any_logits(z):
    p = no_warnings(softmax, z)
    assert_probability_vector(p, len(z))
    for zi, pi in zip(z, p):
        if zi == NEG_INF:
            assert pi == 0.0


@SETTINGS
@given(logit_lists)
def test_softmax_preserves_order_and_argmax(z):
    p = no_warnings(softmax, z)
    assert p[int(np.argmax(z))] == p.max()
    for i, j in itertools.combinations(range(len(z)), 2):
        if z[i] > z[j]:
            assert p[i] >= p[j]
        elif z[i] == z[j]:
            assert p[i] == p[j]


@SETTINGS
@given(st.lists(st.floats(-30, 30), min_size=1, max_size=10), st.floats(-1e6, 1e6))
def test_softmax_is_shift_invariant(z, c):
    assert np.allclose(softmax(z), softmax(np.asarray(z) + c), atol=1e-9)


def test_softmax_huge_and_infinite_logits():
    assert np.array_equal(no_warnings(softmax, [1e308, -1e308]), [1.0, 0.0])
    assert np.array_equal(no_warnings(softmax, [1e308, 1e308]), [0.5, 0.5])
    assert np.array_equal(no_warnings(softmax, [NEG_INF, 3.0, NEG_INF]), [0.0, 1.0, 0.0])
    assert np.array_equal(softmax([np.inf, 1.0, np.inf, NEG_INF]), [0.5, 0.0, 0.5, 0.0])


@pytest.mark.parametrize("bad", [[], [[1.0, 2.0]], [NEG_INF, NEG_INF], [1.0, float("nan")]])
def test_softmax_refuses_what_has_no_distribution(bad):
    with pytest.raises(ValueError):
        softmax(bad)


# -- temperature ------------------------------------------------------------------------------

@SETTINGS
@given(logit_lists, temperatures)
def test_temperature_softmax_is_a_probability_vector(z, T):
    p = no_warnings(temperature_softmax, z, T)
    assert_probability_vector(p, len(z))
    for zi, pi in zip(z, p):
        if zi == NEG_INF:
            assert pi == 0.0
    assert p[int(np.argmax(z))] == p.max()


@SETTINGS
@given(st.lists(st.floats(-20, 20), min_size=1, max_size=10))
def test_temperature_one_is_softmax(z):
    assert np.allclose(temperature_softmax(z, 1.0), softmax(z), atol=1e-12)


@SETTINGS
@given(st.lists(st.floats(-20, 20), min_size=2, max_size=10),
       st.floats(0.05, 20), st.floats(0.05, 20))
def test_lower_temperature_sharpens(z, t1, t2):
    lo, hi = sorted((t1, t2))
    assert temperature_softmax(z, lo).max() >= temperature_softmax(z, hi).max() - 1e-12
    assert entropy(temperature_softmax(z, lo)) <= entropy(temperature_softmax(z, hi)) + 1e-9


def test_temperature_zero_is_one_hot_argmax_lowest_index_on_tie():
    assert np.array_equal(temperature_softmax([1.0, 3.0, 3.0, 2.0], 0), [0, 1, 0, 0])
    assert np.array_equal(temperature_softmax([NEG_INF, 0.0], 0.0), [0, 1])


@SETTINGS
@given(st.lists(st.floats(-20, 20), min_size=1, max_size=10))
def test_tiny_temperature_tends_to_argmax(z):
    p = no_warnings(temperature_softmax, z, 1e-300)
    winners = [i for i, x in enumerate(z) if x == max(z)]
    assert np.allclose(p[winners], 1.0 / len(winners))


def test_very_large_temperature_tends_to_uniform_over_allowed_tokens():
    p = temperature_softmax([5.0, -3.0, NEG_INF, 0.0], 1e12)
    assert np.allclose(p, [1 / 3, 1 / 3, 0, 1 / 3])


@pytest.mark.parametrize("T", [-1e-9, -1.0, float("nan")])
def test_negative_temperature_raises(T):
    with pytest.raises(ValueError, match="temperature"):
        temperature_softmax([1.0, 2.0], T)


# -- top-k ------------------------------------------------------------------------------------

def brute_top_k(probs, k):
    keep = sorted(range(len(probs)), key=lambda i: (-probs[i], i))[:k]
    return sorted(keep)


probability_lists = st.lists(st.integers(0, 12), min_size=1, max_size=8).filter(
    lambda w: sum(w) > 0).map(lambda w: [x / sum(w) for x in w])


@SETTINGS
@given(probability_lists, st.integers(1, 10))
def test_top_k_keeps_the_k_most_probable_lower_index_on_ties(probs, k):
    out = top_k_filter(probs, k)
    assert_probability_vector(out, len(probs))
    if k >= len(probs):
        assert np.allclose(out, probs)
        return
    kept = brute_top_k(probs, k)
    for i in range(len(probs)):
        if i in kept:
            assert math.isclose(out[i], probs[i] / sum(probs[j] for j in kept), rel_tol=1e-12)
        else:
            assert out[i] == 0.0


def test_top_k_ties_at_the_boundary_keep_the_lower_index():
    assert np.allclose(top_k_filter([0.2, 0.4, 0.2, 0.2], 2), [1 / 3, 2 / 3, 0, 0])
    assert np.allclose(top_k_filter([0.25] * 4, 3), [1 / 3, 1 / 3, 1 / 3, 0])


@pytest.mark.parametrize("k", [0, -1, 1.5, "2"])
def test_top_k_refuses_bad_k(k):
    with pytest.raises(ValueError):
        top_k_filter([0.5, 0.5], k)


# -- top-p ------------------------------------------------------------------------------------

def brute_smallest_nucleus_size(weights, p):
    """Smallest m such that SOME m tokens carry probability >= p, by trying every subset."""
    total = sum(weights)
    for m in range(1, len(weights) + 1):
        if any(Fraction(sum(c), total) >= p for c in itertools.combinations(weights, m)):
            return m
    raise AssertionError("unreachable for p <= 1")


@SETTINGS
@given(st.lists(st.integers(0, 9), min_size=1, max_size=7).filter(lambda w: sum(w) > 0),
       st.fractions(min_value=Fraction(1, 20), max_value=1, max_denominator=20)
       .filter(lambda f: f > 0))
@example([1, 1], Fraction(1, 2))  # cumulative exactly p: reaching p is enough
@example([2, 1, 1], Fraction(3, 4))
@example([1, 1, 1, 1], Fraction(1, 2))  # ties: the lower indices are kept
@example([0, 3, 0, 1], Fraction(1))
def test_top_p_keeps_the_smallest_nucleus(weights, p):
    probs = [w / sum(weights) for w in weights]
    out = top_p_filter(probs, float(p))
    assert_probability_vector(out, len(probs))
    kept = [i for i, x in enumerate(out) if x > 0]
    # smallest: no smaller set of tokens reaches p (brute force over all subsets)
    assert len(kept) == brute_smallest_nucleus_size(weights, p)
    # a nucleus: what is kept reaches p, and it is the most probable tokens (lower index on ties)
    assert Fraction(sum(weights[i] for i in kept), sum(weights)) >= p
    assert kept == brute_top_k(probs, len(kept))
    # renormalised in proportion
    mass = sum(probs[i] for i in kept)
    assert all(math.isclose(out[i], probs[i] / mass, rel_tol=1e-12) for i in kept)


def test_top_p_keeps_the_token_that_crosses_p():
    assert np.allclose(top_p_filter([0.5, 0.3, 0.2], 0.6), [0.625, 0.375, 0.0])
    assert np.allclose(top_p_filter([0.5, 0.3, 0.2], 0.5), [1.0, 0.0, 0.0])  # reaching p is enough
    assert np.allclose(top_p_filter([0.5, 0.3, 0.2], 0.8), [0.625, 0.375, 0.0])  # 0.5+0.3 float
    assert np.allclose(top_p_filter([0.1, 0.6, 0.3], 1.0), [0.1, 0.6, 0.3])


def test_top_p_one_drops_only_zero_probability_tokens():
    assert np.array_equal(top_p_filter([0.0, 0.5, 0.5, 0.0], 1.0) > 0, [False, True, True, False])


@pytest.mark.parametrize("p", [0.0, -0.1, 1.0001, float("nan")])
def test_top_p_refuses_bad_p(p):
    with pytest.raises(ValueError):
        top_p_filter([0.5, 0.5], p)


# -- sampling ---------------------------------------------------------------------------------

LOGITS = [2.0, 1.0, 0.5, 0.0, -1.0, NEG_INF]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_seeded_draws_are_reproducible(seed):
    def draws(rng):
        return [sample_token(LOGITS, temperature=0.9, top_k=4, top_p=0.95, rng=rng)
                for _ in range(50)]
    assert draws(np.random.default_rng(seed)) == draws(np.random.default_rng(seed))


def test_different_seeds_give_different_draws():
    seqs = {tuple(sample_token(LOGITS, rng=rng) for _ in range(40))
            for rng in (np.random.default_rng(s) for s in range(5))}
    assert len(seqs) > 1
    assert all(type(t) is int for seq in seqs for t in seq)  # plain ints, not numpy scalars


def test_temperature_zero_returns_argmax_without_touching_rng():
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    assert sample_token([0.1, 3.0, 3.0, -1.0], temperature=0, rng=rng) == 1
    assert rng.bit_generator.state == state


def test_sample_token_needs_a_generator():
    with pytest.raises(TypeError, match="default_rng"):
        sample_token(LOGITS, rng=np.random.RandomState(0))
    with pytest.raises(TypeError):
        sample_token(LOGITS, rng=0)


@SETTINGS
@given(st.lists(st.floats(-10, 10), min_size=2, max_size=10), st.integers(1, 10),
       st.floats(0.05, 1.0), st.integers(0, 1000))
def test_sample_token_never_draws_a_filtered_token(z, k, p, seed):
    allowed = np.flatnonzero(top_p_filter(top_k_filter(temperature_softmax(z, 0.7), k), p))
    rng = np.random.default_rng(seed)
    for _ in range(10):
        token = sample_token(z, temperature=0.7, top_k=k, top_p=p, rng=rng)
        assert isinstance(token, int) and token in allowed


def chi_square_critical(dof, z=3.090232):
    """Upper critical value of chi-square with `dof` degrees of freedom, by the Wilson-Hilferty
    approximation; z = 3.090 is the standard-normal quantile for alpha = 0.001."""
    h = 2.0 / (9.0 * dof)
    return dof * (1.0 - h + z * math.sqrt(h)) ** 3


@pytest.mark.parametrize("dof, table", [(1, 10.828), (3, 16.266), (5, 20.515), (10, 29.588)])
def test_wilson_hilferty_matches_the_table(dof, table):
    assert abs(chi_square_critical(dof) - table) / table < 0.035  # worst at 1 dof: 3 %


def chi_square(counts, target, n):
    keep = target > 0
    expected = n * target[keep]
    return float(((counts[keep] - expected) ** 2 / expected).sum()), int(keep.sum()) - 1


@pytest.mark.parametrize("options", [
    dict(temperature=1.0),
    dict(temperature=0.7, top_k=4),
    dict(temperature=1.3, top_p=0.9),
])
def test_20000_draws_follow_the_target_distribution(options):
    n = 20_000
    rng = np.random.default_rng(20_000)
    target = temperature_softmax(LOGITS, options["temperature"])
    if "top_k" in options:
        target = top_k_filter(target, options["top_k"])
    if "top_p" in options:
        target = top_p_filter(target, options["top_p"])
    draws = [sample_token(LOGITS, rng=rng, **options) for _ in range(n)]
    counts = np.bincount(draws, minlength=len(LOGITS)).astype(float)
    assert counts[target == 0].sum() == 0  # filtered tokens are never drawn
    stat, dof = chi_square(counts, target, n)
    assert stat < chi_square_critical(dof), (stat, dof, counts / n, target)


def test_the_chi_square_bound_catches_a_wrong_sampler():
    # the same check rejects draws at temperature 1 when the target is temperature 0.7
    n = 20_000
    rng = np.random.default_rng(1)
    draws = [sample_token(LOGITS, temperature=1.0, rng=rng) for _ in range(n)]
    counts = np.bincount(draws, minlength=len(LOGITS)).astype(float)
    stat, dof = chi_square(counts, temperature_softmax(LOGITS, 0.7), n)
    assert stat > chi_square_critical(dof)


# -- entropy ----------------------------------------------------------------------------------

def test_entropy_in_bits():
    assert entropy([1.0, 0.0, 0.0]) == 0.0
    assert math.isclose(entropy([0.25] * 4), 2.0)
    assert math.isclose(entropy([0.5, 0.5, 0.0]), 1.0)


@SETTINGS
@given(probability_lists)
def test_entropy_bounds(p):
    h = entropy(p)
    assert -1e-12 <= h <= math.log2(len(p)) + 1e-9
