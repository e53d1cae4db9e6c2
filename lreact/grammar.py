"""A toy grammar and toy model for constrained decoding (Part I, "Constrained decoding").

The grammar accepts exactly one JSON tool call of the lab's two tools, one token at a time:

    { "name" : "get_weather" , "arguments" : { "city" : "Berlin" } } <eos>

A parser state ``s_t`` is a small tuple; ``allowed(s_t)`` is the set ``A(s_t)`` of token ids that
keep the output valid; ``advance(s_t, token)`` is the next state.  ``toy_logits`` is a stand-in
language model: it prefers the grammatical next token but gives real mass to chatty distractors
("Sure", "!", "Here", ...), so unconstrained samples often fail to parse.
"""
from __future__ import annotations

import functools
import json
import zlib

import numpy as np

from .reference import reference_implementation
from .sampling import softmax

EOS = "<eos>"
CITIES = ['"Berlin"', '"Paris"', '"Tokyo"']
EXPRESSIONS = ['"2+2"', '"17*3"']
DISTRACTORS = ["Sure", "!", "Here", " is", " the", " call", ":", "```", "[", "]", '"', "'", "\n"]
STRUCTURE = ["{", "}", ",", ":", '"name"', '"arguments"', '"get_weather"', '"calculate"',
             '"city"', '"expression"']

VOCAB = list(dict.fromkeys(STRUCTURE + CITIES + EXPRESSIONS + DISTRACTORS + [EOS]))
TOKEN_ID = {t: i for i, t in enumerate(VOCAB)}

ARG_KEY = {'"get_weather"': '"city"', '"calculate"': '"expression"'}
ARG_VALUES = {'"get_weather"': CITIES, '"calculate"': EXPRESSIONS}

# The fixed skeleton of a call; "TOOL", "KEY" and "VALUE" depend on the chosen tool.
SKELETON = ["{", '"name"', ":", "TOOL", ",", '"arguments"', ":", "{", "KEY", ":", "VALUE", "}",
            "}", EOS]


def start():
    """The start state s_0: position 0 in the skeleton, no tool chosen yet."""
    return (0, None)


def is_done(state) -> bool:
    return state[0] >= len(SKELETON)


def allowed_tokens(state) -> list:
    """A(s_t): the sorted token ids that may come next in ``state`` (empty once done)."""
    pos, tool = state
    if pos >= len(SKELETON):
        return []
    slot = SKELETON[pos]
    if slot == "TOOL":
        names = list(ARG_KEY)
    elif slot == "KEY":
        names = [ARG_KEY[tool]]
    elif slot == "VALUE":
        names = ARG_VALUES[tool]
    else:
        names = [slot]
    return sorted(TOKEN_ID[n] for n in names)


def advance(state, token_id: int):
    """The state after emitting ``token_id``; raises ValueError if the token is not allowed."""
    if token_id not in allowed_tokens(state):
        raise ValueError(f"token {VOCAB[token_id]!r} is not allowed in state {state}")
    pos, tool = state
    if SKELETON[pos] == "TOOL":
        tool = VOCAB[token_id]
    return (pos + 1, tool)


def detokenize(token_ids) -> str:
    """The text of a token sequence (``<eos>`` is dropped)."""
    return "".join(VOCAB[i] for i in token_ids if VOCAB[i] != EOS)


def parses(text: str) -> bool:
    """True when ``text`` is one valid call: JSON, a known tool, its one argument as a string."""
    try:
        obj = json.loads(text)
    except ValueError:
        return False
    if not isinstance(obj, dict) or set(obj) != {"name", "arguments"}:
        return False
    key = ARG_KEY.get(json.dumps(obj["name"]))
    args = obj["arguments"]
    return (key is not None and isinstance(args, dict) and set(args) == {json.loads(key)}
            and isinstance(args[json.loads(key)], str))


def toy_logits(prefix_ids, bonus: float = 7.0) -> np.ndarray:
    """Next-token logits of the toy model after ``prefix_ids`` (deterministic in the prefix).

    Every token gets a fixed pseudo-random score; the grammatical continuations of the prefix (if
    the prefix is still valid) get ``bonus`` on top, and the distractors get a bit more.  A
    sampling loop asks for the same prefixes again and again, so the scores are remembered per
    prefix; each call returns a new array (changing it changes nothing here).
    """
    prefix_ids = tuple(int(i) for i in prefix_ids)
    if type(bonus) in (int, float):
        return _toy_logits(prefix_ids, bonus).copy()
    return _toy_logits.__wrapped__(prefix_ids, bonus)


@functools.lru_cache(maxsize=4096)
def _toy_logits(prefix_ids: tuple, bonus) -> np.ndarray:
    seed = zlib.crc32(bytes(str(list(prefix_ids)), "ascii"))
    z = np.random.default_rng(seed).normal(0.0, 1.0, len(VOCAB))
    for t in DISTRACTORS:
        z[TOKEN_ID[t]] += 0.8
    state = start()
    try:
        for i in prefix_ids:
            state = advance(state, i)
    except ValueError:
        z[TOKEN_ID[EOS]] += 1.0   # off the grammar: the model rambles, then may stop
        return z
    for i in allowed_tokens(state):
        z[i] += bonus
    return z


@reference_implementation  # the lecture's P', which the lab's constrained_probs computes
def constrained_step(prefix_ids):
    """One step of constrained decoding after ``prefix_ids`` (lecture: "Constrained decoding"):
    a dict with the state s_t, the allowed set A(s_t), the model's P, the masked and renormalised
    P' = 1[i in A(s_t)] P_i / sum_{j in A(s_t)} P_j, the mass of P the mask removed, and ``done``
    (the grammar is finished: A(s_t) is empty, P' is all zeros and nothing is removed)."""

    state = start()
    for i in prefix_ids:
        state = advance(state, i)
    P = softmax(toy_logits(prefix_ids))
    allowed = allowed_tokens(state)
    if not allowed:
        return {"state": state, "allowed": [], "P": P, "P_prime": np.zeros(len(P)),
                "removed_mass": 0.0, "done": True}
    mask = np.zeros(len(P), bool)
    mask[allowed] = True
    P_prime = np.where(mask, P, 0.0)
    return {"state": state, "allowed": allowed, "P": P, "P_prime": P_prime / P_prime.sum(),
            "removed_mass": float(P[~mask].sum()), "done": False}


@reference_implementation  # the lecture's side-by-side; the lab's generate_constrained is its own
def sample_text(constrained: bool, rng, max_tokens: int = 30) -> str:
    """One reply of the toy model (lecture: "Constrained decoding"), drawn from P (free) or from
    P', P masked to the grammar's allowed set A(s_t) and renormalised (``constrained``), until
    ``<eos>`` or ``max_tokens``; the text it spells."""
    prefix, state = [], start()
    for _ in range(max_tokens):
        P = softmax(toy_logits(prefix))
        if constrained:
            mask = np.zeros(len(P), bool)
            mask[allowed_tokens(state)] = True
            P = np.where(mask, P, 0.0) / P[mask].sum()
        token = int(rng.choice(len(P), p=P))
        if VOCAB[token] == EOS:
            break
        prefix.append(token)
        if constrained:
            state = advance(state, token)
    return detokenize(prefix)
