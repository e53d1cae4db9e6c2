"""lreact.grammar: the toy JSON-tool-call grammar and toy model for constrained decoding (Part I).

Masking with A(s_t) and renormalising gives output that always parses; sampling the same toy
model unconstrained often gives output that does not.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lreact.grammar import (EOS, SKELETON, TOKEN_ID, VOCAB, advance, allowed_tokens, detokenize,
                            is_done, parses, start, toy_logits)
from lreact.sampling import sample_token, softmax

MAX_LEN = 30


def all_complete_paths():
    paths, frontier = [], [((), start())]
    while frontier:
        path, state = frontier.pop()
        if is_done(state):
            paths.append(path)
            continue
        frontier += [(path + (t,), advance(state, t)) for t in allowed_tokens(state)]
    return paths


def constrained(seed, temperature=1.0):
    rng = np.random.default_rng(seed)
    state, out = start(), []
    while not is_done(state):
        z = toy_logits(out)
        mask = np.full(len(VOCAB), -np.inf)
        mask[allowed_tokens(state)] = 0.0
        token = sample_token(z + mask, temperature=temperature, rng=rng)
        out.append(token)
        state = advance(state, token)
    return out


def unconstrained(seed):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < MAX_LEN:
        token = sample_token(toy_logits(out), rng=rng)
        out.append(token)
        if VOCAB[token] == EOS:
            break
    return out


def test_vocabulary():
    assert len(VOCAB) == len(set(VOCAB)) == len(TOKEN_ID)
    assert all(VOCAB[i] == t for t, i in TOKEN_ID.items())
    assert VOCAB[-1] == EOS


def test_start_allows_only_the_opening_brace():
    assert start() == (0, None) and not is_done(start())
    assert allowed_tokens(start()) == [TOKEN_ID["{"]]


def test_exactly_five_complete_calls_and_all_parse():
    texts = sorted(detokenize(p) for p in all_complete_paths())
    assert texts == sorted([
        '{"name":"get_weather","arguments":{"city":"Berlin"}}',
        '{"name":"get_weather","arguments":{"city":"Paris"}}',
        '{"name":"get_weather","arguments":{"city":"Tokyo"}}',
        '{"name":"calculate","arguments":{"expression":"2+2"}}',
        '{"name":"calculate","arguments":{"expression":"17*3"}}',
    ])
    assert all(parses(t) for t in texts)
    assert all(len(p) == len(SKELETON) and VOCAB[p[-1]] == EOS for p in all_complete_paths())


def test_the_tool_choice_decides_the_argument():
    state = start()
    for t in ["{", '"name"', ":", '"calculate"', ",", '"arguments"', ":", "{"]:
        state = advance(state, TOKEN_ID[t])
    assert allowed_tokens(state) == [TOKEN_ID['"expression"']]
    state = advance(state, TOKEN_ID['"expression"'])
    state = advance(state, TOKEN_ID[":"])
    assert [VOCAB[i] for i in allowed_tokens(state)] == ['"2+2"', '"17*3"']


def test_disallowed_token_raises_and_done_allows_nothing():
    with pytest.raises(ValueError, match="not allowed"):
        advance(start(), TOKEN_ID["Sure"])
    path = all_complete_paths()[0]
    state = start()
    for t in path:
        state = advance(state, t)
    assert is_done(state) and allowed_tokens(state) == []
    with pytest.raises(ValueError):
        advance(state, TOKEN_ID[EOS])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 10), min_size=len(SKELETON), max_size=len(SKELETON)))
def test_any_walk_through_the_grammar_parses(choices):
    state, out = start(), []
    for c in choices:
        allowed = allowed_tokens(state)
        assert allowed == sorted(allowed) and allowed
        token = allowed[c % len(allowed)]
        out.append(token)
        state = advance(state, token)
    assert is_done(state) and parses(detokenize(out))


@pytest.mark.parametrize("text, ok", [
    ('{"name": "get_weather", "arguments": {"city": "Oslo"}}', True),
    ('{"name":"calculate","arguments":{"expression":"1"}}', True),
    ('Sure! {"name":"get_weather","arguments":{"city":"Berlin"}}', False),
    ('{"name":"get_weather","arguments":{"city":"Berlin"}', False),
    ('{"name":"get_weather","arguments":{"expression":"2+2"}}', False),
    ('{"name":"get_weather","arguments":{"city":3}}', False),
    ('{"name":"get_weather","arguments":{"city":"Berlin","unit":"celsius"}}', False),
    ('{"name":"search","arguments":{"q":"x"}}', False),
    ('{"name":"get_weather","arguments":{"city":"Berlin"},"id":1}', False),
    ('["get_weather"]', False),
    ("", False),
])
def test_parses(text, ok):
    assert parses(text) is ok


def test_detokenize_drops_eos():
    assert detokenize([TOKEN_ID["{"], TOKEN_ID["}"], TOKEN_ID[EOS]]) == "{}"


def test_toy_logits_are_deterministic_and_favour_the_grammar():
    a, b = toy_logits([0, 4]), toy_logits([0, 4])
    assert a.shape == (len(VOCAB),) and np.array_equal(a, b)
    assert not np.array_equal(toy_logits([]), toy_logits([0]))
    # at the start the one grammatical token carries most of the probability
    assert softmax(toy_logits([]))[TOKEN_ID["{"]] > 0.5
    # off the grammar no token gets the bonus
    off = toy_logits([TOKEN_ID["Sure"]])
    assert off.max() < 5


def test_toy_logits_remembered_per_prefix_give_the_same_scores_and_a_new_array_each_time():
    """The scores are kept per prefix (a sampling loop asks again and again); a caller that
    changes its array changes nothing for the next, and every kind of prefix and bonus gives
    what the computation itself gives."""
    from lreact.grammar import _toy_logits

    first = toy_logits([0, 4])
    first[:] = 0.0
    again = toy_logits(np.array([0, 4], dtype=np.int64))
    assert again.any() and again is not toy_logits([0, 4])
    assert np.array_equal(again, _toy_logits.__wrapped__((0, 4), 7.0))
    assert np.array_equal(toy_logits((0, 4), bonus=2), _toy_logits.__wrapped__((0, 4), 2))
    assert np.array_equal(toy_logits([0], bonus=np.float64(2.0)),
                          _toy_logits.__wrapped__((0,), 2.0))


def test_constrained_generation_always_parses():
    outputs = [detokenize(constrained(seed)) for seed in range(200)]
    assert all(parses(t) for t in outputs)
    assert len(set(outputs)) >= 3  # still sampling, not a fixed string


def test_constrained_generation_is_reproducible():
    assert constrained(7) == constrained(7)


def test_unconstrained_generation_often_fails_to_parse():
    failures = sum(not parses(detokenize(unconstrained(seed))) for seed in range(300))
    rate = failures / 300
    assert 0.4 < rate < 0.95, rate  # about 70 % in the lecture's setting
