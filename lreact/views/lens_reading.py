"""What the probability lens reads: one reply, token by token, with each token's probability
(lecture Part I, "Next-token sampling: greedy or random"; Part III, "Native tool calling").

- ``read_reply`` generates the reply on the embedded model (llama.cpp in this process,
  ``lreact.views.student_decode.ModelStream``): every logit is seen, so each token's rank among
  the whole vocabulary is exact.
- ``read_reply_engine`` asks a model server (Ollama, an OpenAI-compatible engine) for the same.

``read_reply`` sees every logit of the embedded model.  A server sends less: for each
generated token its log-probability and the ``top`` (at most 20) most probable tokens at that
step.  ``read_reply_engine`` asks for exactly that and returns the lens's reply shape, so
``lens_html`` shows a server's reply the same way, with two honest differences:

- the rank of a chosen token is known only when it is among the ``top``; otherwise it is
  ``">top"`` (the server does not say how far down it was), and the vocabulary size is unknown;
- the server draws the tokens itself (its own sampler and seed), so a reply repeats only where
  the engine repeats (Ollama and llama-server do at temperature 0 with a seed).

The prompt is written by hand and sent raw (Ollama's ``/api/generate`` with ``raw: true``, an
OpenAI-compatible ``/v1/completions``), so that the reply can start after the ``<tool_call>``
prefill: Ollama gets Qwen2.5's text as its server builds it (``lreact.engines.ollama_text``), an
OpenAI-compatible engine the course's Qwen ChatML (``lreact.chatml``), right for Qwen models.
A backend that gives no log-probabilities raises ``LensUnavailable`` with what to do.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from ..chatml import render_chatml
from ..engines.backends import backend_choice, configured_llm
from ..engines.embedded_models import log_softmax
from ..engines.engine_text import IM_END
from ..engines.gguf import file_digest, grading
from ..engines.models import ModelError, OllamaLLM
from ..engines.ollama_text import ollama_qwen_text
from ..engines.openai_compat import OpenAICompatLLM
from ..messages import SystemMessage, UserMessage
from ..tools import TOOLS
from .student_decode import ModelStream

LENS_MESSAGES = [SystemMessage("You are a helpful assistant. Use the tools when they help."),
                 UserMessage("What's the weather in Berlin?")]
PREFILL = "<tool_call>\n"
SETTINGS = {"temperature": 0.7, "seed": 0, "max_tokens": 48, "top": 5}


def read_reply(llm, messages=LENS_MESSAGES, tools=None, *, prefill=PREFILL, temperature=0.7,
               seed=0, max_tokens=48, top=5, timeout=120.0) -> dict:
    """Generate one reply of ``llm`` (an ``EmbeddedLLM``) after ``messages`` (+ ``prefill``,
    given text that opens the reply), drawing with ``numpy.random.default_rng(seed)`` at
    ``temperature`` (0: greedy), within ``timeout`` seconds.  Returns a JSON-ready dict: the
    model, the settings, the text, and per token
    ``{"token", "logprob", "rank", "top": [[token, logprob], ...]}``."""
    import llama_cpp


    tools = TOOLS if tools is None else tools
    rng = np.random.default_rng(seed)
    m = llm.loaded()
    rows, ids = [], []
    prompt = m.template.render(messages, tools) + prefill
    with ModelStream(llm, prompt, timeout=timeout) as stream:
        for _ in range(int(max_tokens)):
            lp = log_softmax(stream.logits())
            if temperature == 0:
                token = int(np.argmax(lp))
            else:
                p = np.exp(log_softmax(lp / temperature))
                token = int(rng.choice(p.size, p=p / p.sum()))
            if stream.is_end(token):
                break
            best = np.argsort(-lp, kind="stable")[:top]
            rows.append({"token": m.token_text(token), "logprob": float(lp[token]),
                         "rank": int((lp > lp[token]).sum()) + 1,
                         "top": [[m.token_text(int(i)), float(lp[i])] for i in best]})
            ids.append(token)
            stream.feed([token])
        text = stream.decode(ids)
    return {"model": {"file": Path(m.path).name, "sha256": file_digest(m.path),
                      "engine": f"llama-cpp-python {llama_cpp.__version__}",
                      "n_vocab": int(m.n_vocab), "chat_template": m.template.source},
            "messages": [{"role": type(x).__name__, "content": x.content} for x in messages],
            "tools": [t["function"]["name"] for t in tools], "prefill": prefill,
            "settings": {"temperature": temperature, "seed": seed, "max_tokens": max_tokens,
                         "top": top},
            "text": text, "tokens": rows}


class LensUnavailable(ModelError):
    """This backend cannot give per-token log-probabilities (the lens then shows a recording)."""


def _rank(token: str, top: list) -> object:
    names = [t for t, _ in top]
    return names.index(token) + 1 if token in names else f">{len(top)}"


def _row(token: str, logprob: float, top: list) -> dict:
    top = sorted(((str(t), float(lp)) for t, lp in top), key=lambda pair: -pair[1])
    return {"token": token, "logprob": float(logprob), "rank": _rank(token, top),
            "top": [list(pair) for pair in top]}


def _ollama_rows(data: dict) -> list:
    entries = data.get("logprobs")
    if not entries and data.get("response"):
        raise LensUnavailable("Ollama returned no logprobs: the server is older than v0.12.11. "
                              "Update Ollama to see the lens live.")
    return [_row(e["token"], e["logprob"],
                 [(t["token"], t["logprob"]) for t in e.get("top_logprobs") or []])
            for e in entries or []]


def _field(item, name):
    """``item[name]`` or ``item.name``: the openai client keeps fields it does not model as
    plain dicts."""
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def _openai_rows(choice) -> list:
    lp = getattr(choice, "logprobs", None)
    tokens = getattr(lp, "tokens", None)
    content = _field(lp, "content") if lp is not None and tokens is None else None
    if isinstance(content, list):
        # llama-server sends the chat-completions shape on /v1/completions as well:
        # {"content": [{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}]}
        rows = []
        for entry in content:
            logprob = _field(entry, "logprob")
            if logprob is None or math.isinf(float(logprob)):
                continue
            top = [(_field(t, "token"), _field(t, "logprob"))
                   for t in _field(entry, "top_logprobs") or []]
            rows.append(_row(_field(entry, "token"), logprob, top))
        return rows
    if tokens is None:
        raise LensUnavailable("This engine sent no logprobs on /v1/completions; llama-server, "
                              "vLLM and llama-cpp-python's server do (llama-cpp-python needs "
                              "logits_all, its server's default).")
    rows = []
    for token, logprob, top in zip(tokens, lp.token_logprobs, lp.top_logprobs or []):
        if logprob is None or (isinstance(logprob, float) and math.isinf(logprob)):
            continue
        rows.append(_row(token, logprob, list((top or {}).items())))
    return rows


def _drop_end(rows: list) -> list:
    """The rows up to (not including) the end of the turn."""
    for k, row in enumerate(rows):
        if IM_END in row["token"]:
            return rows[:k]
    return rows


def read_reply_engine(llm, messages, tools, *, prefill="", temperature=0.7, seed=0,
                      max_tokens=48, top=5) -> dict:
    """One reply of a model server after ``messages`` (+ ``prefill``), per token its
    log-probability, its rank among the ``top`` sent and those ``top`` alternatives: the shape
    of ``lreact.views.lens.read_reply`` (``rank`` may be ``">top"``; no ``n_vocab``)."""
    settings = {"temperature": temperature, "seed": seed, "max_tokens": int(max_tokens),
                "top": int(top)}
    if isinstance(llm, OllamaLLM):
        prompt = ollama_qwen_text(messages, tools) + prefill
        data = llm.generate_raw(prompt, stop=[IM_END], max_tokens=max_tokens, top_logprobs=top,
                                temperature=temperature, seed=seed)
        rows, text = _ollama_rows(data), data["response"]
        model = {"file": llm.model, "engine": f"Ollama at {llm.host}",
                 "chat_template": "Qwen2.5's, as Ollama's server (v0.14 or later) builds it "
                                  "(lreact.engines.ollama_text)"}
    elif isinstance(llm, OpenAICompatLLM):
        prompt = render_chatml(messages, tools) + prefill
        result = llm.complete_raw(prompt, stop=[IM_END], max_tokens=max_tokens, logprobs=top,
                                  temperature=temperature, seed=seed)
        rows, text = _openai_rows(result.choices[0]), result.choices[0].text or ""
        name = llm.resolved_model()          # llama-cpp-python's server names the file's path
        model = {"file": os.path.basename(name) if name.endswith(".gguf") else name,
                 "engine": f"OpenAI-compatible at {llm.base_url}",
                 "chat_template": "the course's Qwen ChatML (lreact.chatml)"}
    else:
        raise LensUnavailable(f"The lens reads a server's log-probabilities from Ollama or an "
                              f"OpenAI-compatible engine, not from {type(llm).__name__}.")
    return {"model": model,
            "messages": [{"role": type(x).__name__, "content": x.content} for x in messages],
            "tools": [t["function"]["name"] for t in tools], "prefill": prefill,
            "settings": settings, "text": text.split(IM_END)[0], "tokens": _drop_end(rows)}


def configured_engine_reply(messages, tools=None, *, prefill="", timeout=60.0, **settings):
    """``(reply, None)`` from the configured backend when it is a server that sends
    log-probabilities, else ``(None, why)`` in plain words (what to start or set)."""

    if grading():
        return None, "no model is used while an assignment is graded"
    try:
        choice = backend_choice()
    except ValueError as e:
        return None, f"no model backend ({e})"
    if choice.backend not in ("ollama", "openai"):
        return None, ("the embedded backend is configured, but its model is not on this machine "
                      "or could not load (`make model` fetches the course's model; a lecture "
                      "cell never starts a download)")
    settings = {k: v for k, v in settings.items() if k in ("temperature", "seed", "max_tokens",
                                                           "top")}
    try:
        llm = configured_llm(timeout=timeout)
        return read_reply_engine(llm, messages, TOOLS if tools is None else tools,
                                 prefill=prefill, **settings), None
    except ModelError as e:
        return None, str(e)
