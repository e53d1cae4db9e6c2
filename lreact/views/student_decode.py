"""Your sampler and your constrained decoder drive a real model (lab 1, Part A, after A.7).

Lecture Part I, "Next-token sampling: greedy or random" and "Constrained decoding".  The lab's
functions work on a vector of logits; here a real model supplies that vector at every step:

- ``ModelStream``: the next-token logits of a model run by llama.cpp in this process (the
  embedded backend, ``lreact.engines.embedded``), one token at a time, over the whole vocabulary;
- ``generate_with(llm, prompt, pick_token, max_tokens)``: at every step the model gives the
  logits and *your* ``pick_token(logits) -> token id`` chooses (e.g. your ``sample_token``);
- ``GrammarLogits``: the real model's scores for the pieces of the lab's toy grammar
  (``lreact.grammar.VOCAB``), so that your ``generate_constrained`` masks a real model;
- ``parse_rates``: the same prompts decoded with and without your mask, and by the engine's own
  constrained decoding (llama.cpp's grammar made from ``CALL_SCHEMA``); how many parse.

Only the embedded backend gives every logit at every step (Ollama and OpenAI-compatible servers
send at most the top 20 log-probabilities of a token): ``full_logits_model()`` says so and
returns None elsewhere, and these functions then run on the toy model (``llm=None``).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import numpy as np

from .. import grammar
from ..engines.backends import backend_choice, embedded_unavailable
from ..engines.embedded_models import EmbeddedError, log_softmax
from ..engines.gguf import grading
from ..engines.models import ModelError
from ..messages import SystemMessage, UserMessage

DEFAULT_TIMEOUT = 120.0
TOOL_SYSTEM = ('You call tools. Reply with one JSON object and nothing else, either '
               '{"name": "get_weather", "arguments": {"city": "<city>"}} or '
               '{"name": "calculate", "arguments": {"expression": "<arithmetic>"}}.')
# The lab's two calls as a JSON schema: what the engine's own constrained decoding is held to.
CALL_SCHEMA = {"anyOf": [
    {"type": "object", "additionalProperties": False, "required": ["name", "arguments"],
     "properties": {"name": {"const": json.loads(tool)},
                    "arguments": {"type": "object", "additionalProperties": False,
                                  "required": [json.loads(key)],
                                  "properties": {json.loads(key): {"type": "string"}}}}}
    for tool, key in grammar.ARG_KEY.items()]}
TOOL_PROMPTS = ("What's the weather in Berlin?", "Is it raining in Tokyo?",
                "What is 17*3?", "How warm is it in Paris right now?")


def full_logits_model(echo: bool = True, download: bool = True):
    """The embedded model (``EmbeddedLLM``) when the configured backend is the embedded one and
    it loads; else None, after saying why (plain words) when ``echo``.  ``download=False``: a
    model file that is not on this machine yet counts as missing (a lecture cell never starts a
    download)."""

    def no(reason):
        if echo:
            print(f"{reason} These cells run on the lab's toy model instead "
                  "(lreact.grammar.toy_logits).")
        return None


    if grading():
        return no("No model is used while an assignment is graded.")
    try:
        choice = backend_choice()
    except ValueError as e:
        return no(f"No model backend ({e}).")
    backend = choice.backend
    if backend != "embedded":
        return no(f"These cells need every logit at every step; the {backend} backend (chosen "
                  f"because {choice.reason}) sends at most the top 20 log-probabilities of a "
                  "token, only the embedded backend (llama.cpp in this kernel, "
                  "LREACT_BACKEND=embedded) gives them all.")
    missing = embedded_unavailable()
    if missing:
        return no(f"The embedded backend cannot run: {missing}.")
    from ..engines.embedded import EmbeddedLLM

    llm = EmbeddedLLM()
    try:
        llm.loaded(download=download)
    except ModelError as e:
        return no(f"The embedded model did not load: {e}")
    return llm


class ModelStream:
    """Next-token logits of ``llm`` (an ``EmbeddedLLM``) after ``prompt`` (raw text, or a list of
    messages rendered with the model's chat template and ``tools``), one token at a time.
    Use it in a ``with`` block: it holds the model for the whole generation."""

    def __init__(self, llm, prompt, tools=None, *, timeout=DEFAULT_TIMEOUT):
        if not hasattr(llm, "loaded"):
            raise TypeError(f"llm must be an EmbeddedLLM (full logits), got {type(llm).__name__};"
                            " use lreact.views.student_decode.full_logits_model()")
        self.m = llm.loaded()
        self.text = prompt if isinstance(prompt, str) else self.m.template.render(prompt, tools)
        self.prompt_tokens = self.m.tokens(self.text)
        self.deadline = time.monotonic() + float(timeout)
        self.timeout = float(timeout)
        self.n_vocab = self.m.n_vocab

    def __enter__(self):
        self.m.lock.acquire()
        self.m.llama.reset()
        self.feed(self.prompt_tokens)
        self.base = self.position
        return self

    def __exit__(self, *exc):
        self.m.lock.release()

    @property
    def position(self) -> int:
        return self.m.llama.n_tokens

    def feed(self, tokens):
        """Evaluate ``tokens`` after what is there (the context window is checked first)."""

        if time.monotonic() > self.deadline:
            raise EmbeddedError(f"The model did not finish within {self.timeout:g} s: pass a "
                                "larger timeout= or a smaller max_tokens=.")
        if self.position + len(tokens) >= self.m.n_ctx:
            raise EmbeddedError(f"The text no longer fits the context window of {self.m.n_ctx} "
                                "tokens: ask for fewer tokens (max_tokens=).")
        if tokens:
            self.m.llama.eval(list(tokens))

    def rewind(self, position: int):
        """Forget every token after ``position`` (the next ``feed`` overwrites them)."""
        self.m.llama.n_tokens = position

    def logits(self) -> np.ndarray:
        """The logits of the next token over the whole vocabulary (a fresh copy)."""
        return self.m.last_logits()

    def piece(self, text: str) -> list:
        """``text`` as the model's tokens (no BOS, special tokens such as <|im_end|> parsed)."""
        return self.m.llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def decode(self, token_ids) -> str:
        return self.m.llama.detokenize(list(token_ids), special=True).decode("utf-8", "replace")

    def is_end(self, token: int) -> bool:
        return self.m.is_end(int(token))


class ToyStream:
    """The same interface on the lab's toy model (``grammar.toy_logits`` over ``grammar.VOCAB``):
    what the cells run on without a full-logits backend.  The prompt is not read."""

    n_vocab = len(grammar.VOCAB)

    def __init__(self, prompt=None, tools=None, **_):
        self.ids = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def feed(self, tokens):
        self.ids += [int(t) for t in tokens]

    def logits(self):
        return grammar.toy_logits(self.ids)

    def decode(self, token_ids):
        return grammar.detokenize(token_ids)

    def is_end(self, token):
        return grammar.VOCAB[int(token)] == grammar.EOS


def _stream(llm, prompt, tools=None, timeout=DEFAULT_TIMEOUT):
    return ToyStream() if llm is None else ModelStream(llm, prompt, tools, timeout=timeout)


def _checked_token(token, n_vocab: int) -> int:
    if isinstance(token, (bool, np.bool_)) or not isinstance(token, (int, np.integer)) \
            or not 0 <= int(token) < n_vocab:
        raise ValueError(f"pick_token returned {token!r}; it must return one token id, an int "
                         f"from 0 to {n_vocab - 1} (the index of the chosen logit), as "
                         "sample_token does")
    return int(token)


@dataclass
class Generation:
    """What ``generate_with`` produced: the text, the token ids, and why it stopped."""
    text: str
    token_ids: list = field(default_factory=list)
    stopped: str = "max_tokens"


def generate_with(llm, prompt, pick_token, max_tokens: int = 40, *, tools=None, echo=True,
                  timeout=DEFAULT_TIMEOUT) -> Generation:
    """Generate up to ``max_tokens`` tokens after ``prompt``: at every step ``llm`` supplies the
    logits of the next token over its whole vocabulary, ``pick_token(logits)`` returns the id of
    the token to append (your sampler), and the text grows (printed as it grows when ``echo``).
    Stops at the model's end-of-turn token.  ``llm=None``: the lab's toy model."""
    if not callable(pick_token):
        raise TypeError("pick_token must be a function logits -> token id, e.g. "
                        "lambda z: sample_token(z, temperature=0.7, rng=rng)")
    if int(max_tokens) < 1:
        raise ValueError(f"max_tokens must be 1 or more, got {max_tokens!r}")
    ids, shown, stopped = [], "", "max_tokens"
    with _stream(llm, prompt, tools, timeout) as stream:
        for _ in range(int(max_tokens)):
            token = _checked_token(pick_token(stream.logits()), stream.n_vocab)
            if stream.is_end(token):
                stopped = "end of turn"
                break
            ids.append(token)
            stream.feed([token])
            text = stream.decode(ids)
            if echo and text.startswith(shown) and "\ufffd" not in text[len(shown):]:
                print(text[len(shown):], end="", flush=True)
                shown = text
    text = stream.decode(ids)
    if echo:
        print(text[len(shown):] if text.startswith(shown) else "", flush=True)
    return Generation(text, ids, stopped)


class GrammarLogits:
    """``logits_fn(ids)`` for the lab's ``generate_constrained``: the real model's scores for
    the pieces of ``grammar.VOCAB`` after the pieces ``ids``.  A piece the grammar allows next
    gets the log-probability of its whole text (its real tokens one by one, chained); any other
    piece gets that of its first real token (an upper bound: the mask removes it anyway, so P'
    is the real model's).  ``<eos>`` is the model's end-of-turn token."""

    def __init__(self, stream: ModelStream, end_text: str = "<|im_end|>"):
        self.stream = stream
        self.pieces = [stream.piece(end_text if t == grammar.EOS else t) for t in grammar.VOCAB]
        self.ids, self.evals = [], 0

    def _go_to(self, ids):
        s = self.stream
        if ids[:len(self.ids)] != self.ids:
            s.rewind(s.base)
            self.ids = []
        for i in ids[len(self.ids):]:
            s.feed(self.pieces[i])
            self.evals += 1
            self.ids.append(i)

    def __call__(self, ids) -> np.ndarray:
        ids = [int(i) for i in ids]
        self._go_to(ids)
        s = self.stream
        here = s.position
        first = log_softmax(s.logits())
        out = np.array([first[p[0]] for p in self.pieces])
        state = grammar.start()
        try:
            for i in ids:
                state = grammar.advance(state, i)
        except ValueError:
            return out                      # off the grammar: nothing is allowed anyway
        for i in grammar.allowed_tokens(state):
            piece, total = self.pieces[i], float(first[self.pieces[i][0]])
            for k in range(1, len(piece)):
                s.feed([piece[k - 1]])
                self.evals += 1
                total += float(log_softmax(s.logits())[piece[k]])
            s.rewind(here)
            out[i] = total
        return out


@dataclass
class ParseRates:
    """Per sample: (prompt, seed, how, text, parses); ``summary()`` the rates.  ``cut``: the
    (prompt, seed) of engine replies that reached ``max_tokens`` before the call was closed."""
    rows: list
    cut: list = field(default_factory=list)

    def rate(self, how: str):
        hits = [r[4] for r in self.rows if r[2] == how]
        return sum(hits), len(hits)

    def summary(self) -> str:
        lines = []
        for how in ("unconstrained", "constrained", "engine"):
            ok, n = self.rate(how)
            if n:
                lines.append(f"{how:>13}: {ok} of {n} parse ({ok / max(n, 1):.0%})")
        if self.cut:
            lines[-1] += (f"; {len(self.cut)} stopped at max_tokens inside the call (the schema "
                          "allows any string, so a value can run on)")
        return "\n".join(lines)


def parse_rates(llm, *, sample_token, generate_constrained, prompts=TOOL_PROMPTS,
                seeds=range(3), temperature=1.0, max_tokens=48, system=TOOL_SYSTEM,
                timeout=DEFAULT_TIMEOUT, progress=None) -> ParseRates:
    """For every prompt and seed: the model's reply drawn freely with ``sample_token`` (whole
    vocabulary, ``temperature``), drawn by ``generate_constrained(logits_fn, rng)`` over the
    grammar's pieces (``GrammarLogits``), and, on a real model, drawn by the engine itself under
    its grammar for ``CALL_SCHEMA`` (row ``"engine"``: same temperature and seed, whole
    vocabulary); whether each parses as one call of the lab's tools (``grammar.parses``).
    ``llm=None``: the toy model (the prompt is then not read, and there is no engine row).
    ``progress``: called with one line per prompt and seed as soon as its replies are drawn."""

    rows, cut = [], []
    steps = [(prompt, seed) for prompt in prompts for seed in seeds]
    for prompt in prompts:
        messages = [SystemMessage(system), UserMessage(prompt)]
        for seed in seeds:
            done = len(rows)
            rng = np.random.default_rng(seed)
            free = generate_with(llm, messages, lambda z: sample_token(
                z, temperature=temperature, rng=rng), max_tokens, echo=False, timeout=timeout)
            text = free.text.strip()
            rows.append((prompt, seed, "unconstrained", text, grammar.parses(text)))
            rng = np.random.default_rng(seed)
            if llm is None:
                ids = generate_constrained(grammar.toy_logits, rng)
            else:
                with ModelStream(llm, messages, timeout=timeout) as stream:
                    bridge = GrammarLogits(stream)
                    ids = generate_constrained(
                        lambda prefix: bridge(prefix) / max(temperature, 1e-6), rng)
            text = grammar.detokenize(ids)
            rows.append((prompt, seed, "constrained", text, grammar.parses(text)))
            if llm is not None:
                text, finish = engine_constrained(llm, messages, seed=seed, temperature=temperature,
                                                  max_tokens=max_tokens, timeout=timeout)
                rows.append((prompt, seed, "engine", text, grammar.parses(text)))
                if finish == "length" and not rows[-1][4]:
                    cut.append((prompt, seed))
            if progress is not None:
                verdicts = ", ".join(f"{how} {'parses' if ok else 'fails'}"
                                     for _, _, how, _, ok in rows[done:])
                progress(f"[{steps.index((prompt, seed)) + 1}/{len(steps)}] {prompt!r} seed "
                         f"{seed}: {verdicts}")
    return ParseRates(rows, cut)


def engine_constrained(llm, messages, *, seed, temperature, max_tokens, timeout=DEFAULT_TIMEOUT):
    """The engine's own constrained decoding of one reply: llama.cpp samples under the grammar it
    makes from ``CALL_SCHEMA`` (structured outputs; lecture Part I, "Constrained decoding").
    Returns the text and why generation stopped (``"stop"``, or ``"length"`` at ``max_tokens``)."""
    engine = type(llm)(llm.model_path, n_ctx=llm.n_ctx, timeout=timeout, temperature=temperature,
                       top_p=1.0, top_k=0, seed=seed, max_tokens=max_tokens)
    text = engine.chat_text(messages, json_schema=CALL_SCHEMA)
    return text, engine.last.get("finish")
