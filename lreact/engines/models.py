"""The model protocol of the lab: ``llm(messages, tools) -> AssistantMessage``.

Two implementations (Part IV, "System prompt, chat template and statelessness": the model is
stateless, so each call receives the whole history):

- ``ScriptedLLM``: replays a fixed list of responses and records what it was sent.  Tests and the
  offline lab use it; it makes an agent run deterministic, faults included.
- ``OllamaLLM``: a real Qwen model served by a local Ollama, over its REST API (``httpx``).

A third, ``lreact.engines.openai_compat.OpenAICompatLLM``, talks to any OpenAI-compatible engine
(llama-server, vLLM, LM Studio); ``lreact.engines.backends.configured_llm()`` picks one from the
environment.
"""
from __future__ import annotations

import copy
import itertools
import os

import httpx

from ..messages import (
    MESSAGE_TYPES,
    AssistantMessage,
    message_from_wire,
    messages_to_wire,
    new_call_id,
)
from ..replies import THINK_CLOSE, original, split_reasoning

# The one place the default model is pinned.  Override with the LREACT_MODEL environment variable
# or OllamaLLM(model=...).  qwen2.5:7b is the lecture's lab model; on a small machine use
# qwen2.5:1.5b (about 1 GB) and on Binder qwen2.5:0.5b.
DEFAULT_MODEL = "qwen2.5:7b"
MODEL_ENV_VAR = "LREACT_MODEL"
DEFAULT_TIMEOUT = 120.0  # seconds; a first call may have to load the weights
# Every backend stops a reply at this many tokens unless told otherwise (max_tokens=, Ollama's
# num_predict=): without a cap a looping reply runs to the end of the context window (on a real
# llama-server with SmolLM2 one ran 84 s to the end of a 4,096-token window).  A reply that
# hit the cap says so in the model object's ``last`` (``"cut": True``).
DEFAULT_MAX_TOKENS = 512
THINK_ENV_VAR = "LREACT_THINK"
THINK_VALUES = {"on": True, "true": True, "off": False, "false": False, "auto": None, "": None}


def thinking_setting(value=None):
    """Whether to ask a thinking model to think: ``True``, ``False``, or ``None`` (say nothing:
    the engine's and the model's default).  ``value`` (a bool, ``"on"``, ``"off"``, ``"auto"``
    or None) wins; None reads ``$LREACT_THINK`` (unset means auto)."""
    if isinstance(value, bool):
        return value
    raw = os.environ.get(THINK_ENV_VAR, "") if value is None else value
    if not isinstance(raw, str) or raw.strip().lower() not in THINK_VALUES:
        where = f"{THINK_ENV_VAR}={raw!r}" if value is None else f"think={value!r}"
        raise ValueError(f"{where} is not a thinking setting: use on, off or auto (auto, the "
                         "default, leaves it to the engine and the model)")
    return THINK_VALUES[raw.strip().lower()]


def reply_run(prompt_tokens, completion_tokens, finish, cap) -> dict:
    """What a backend keeps about its last reply (its ``last``): token counts, why it ended,
    the cap it ran under, and ``cut``: whether the cap ended it."""
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "finish": finish, "max_tokens": cap, "cut": finish == "length"}


def default_model() -> str:
    """The model name in force: ``$LREACT_MODEL`` if set, else ``DEFAULT_MODEL``."""
    return os.environ.get(MODEL_ENV_VAR, "").strip() or DEFAULT_MODEL


def _check_history(messages, tools):
    if not isinstance(messages, (list, tuple)):
        raise TypeError(f"messages must be a list of messages, got {type(messages).__name__}")
    for i, m in enumerate(messages):
        if not isinstance(m, MESSAGE_TYPES):
            raise TypeError(f"messages[{i}] is {m!r}, not a lecture message type")
    if tools is not None and not isinstance(tools, (list, tuple)):
        raise TypeError(f"tools must be a list of tool schemas, got {type(tools).__name__}")


class ScriptExhaustedError(RuntimeError):
    """A ScriptedLLM was called more often than it has responses."""


class ScriptedLLM:
    """A model that replays ``responses`` (AssistantMessages) in order.

    Every call is recorded in ``.calls`` as a dict ``{"messages": [...], "tools": [...]}`` holding
    deep copies, so a test can check what the loop sent: the whole history each time, the tools
    advertised on every call, tool results carrying the right ids.
    """

    def __init__(self, responses):
        responses = list(responses)
        for i, r in enumerate(responses):
            if not isinstance(r, AssistantMessage):
                raise TypeError(f"responses[{i}] must be an AssistantMessage, got {r!r}")
        self.responses = responses
        self.calls = []

    def __call__(self, messages, tools=None) -> AssistantMessage:
        _check_history(messages, tools)
        self.calls.append({"messages": copy.deepcopy(list(messages)),
                           "tools": copy.deepcopy(tools)})
        n = len(self.calls)
        if n > len(self.responses):
            raise ScriptExhaustedError(
                f"ScriptedLLM has {len(self.responses)} scripted responses but was called "
                f"{n} times: the loop asked the model again after the script ended (does it stop "
                "on a text-only answer, and respect max_steps?)")
        return copy.deepcopy(self.responses[n - 1])

    @property
    def remaining(self) -> int:
        return len(self.responses) - len(self.calls)

    def __repr__(self):
        return f"ScriptedLLM({len(self.responses)} responses, {len(self.calls)} calls made)"


class ModelError(RuntimeError):
    """A model backend (Ollama or an OpenAI-compatible engine) could not answer; the message says
    what to do.  ``OllamaError`` is the Ollama case, ``lreact.engines.openai_compat.EngineError`` the other:
    a notebook that runs on either catches ``ModelError``."""


class OllamaError(ModelError):
    """Ollama could not answer; the message says what to do about it."""


def _pull_hint(model: str) -> str:
    return f"ollama pull {model}"


DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"


def ollama_host(host=None) -> str:
    """The Ollama base URL: ``host``, else ``$OLLAMA_HOST``, else ``http://127.0.0.1:11434``.
    A bare ``host:port`` (as ``OLLAMA_HOST`` is often written) gets ``http://``."""
    host = (host or os.environ.get("OLLAMA_HOST", "").strip() or DEFAULT_OLLAMA_HOST).strip()
    if "://" not in host:
        host = "http://" + host
    scheme, rest = host.split("://", 1)
    if rest.startswith(":"):
        rest = "127.0.0.1" + rest
    if ":" not in rest.split("/", 1)[0]:
        netloc, _, path = rest.partition("/")
        rest = netloc + ":11434" + (("/" + path) if path else "")
    return f"{scheme}://{rest}".rstrip("/")


def _require_timeout(timeout) -> float:
    if timeout is None or not isinstance(timeout, (int, float)) or float(timeout) <= 0:
        raise ValueError("timeout must be a positive number of seconds: without one, a stuck "
                         "server would hang the notebook")
    return float(timeout)


class OllamaLLM:
    """A real model behind a local Ollama server, over its documented REST API (``POST
    /api/chat`` with ``stream: false``) through ``httpx``, with a timeout on every request.

    ``OllamaLLM(model=None, *, host=None, timeout=120, think=None, temperature=..., top_k=...,
    top_p=..., seed=..., num_predict=..., num_ctx=...)``: sampling options go to Ollama's
    ``options``; ``num_predict`` caps a reply (``DEFAULT_MAX_TOKENS`` unless set; Ollama's ``-1``
    lifts the cap), and ``last["cut"]`` says whether the cap ended the last reply.
    Tool-call ids: the server's ``id`` is kept when it sends one (v0.12.10 or later); otherwise a
    fresh id is assigned, so every call of a run has a unique id.

    Thinking models (Qwen3, Qwen3.5): ``think`` (``"on"``, ``"off"``, ``"auto"``, a bool; default
    ``$LREACT_THINK``, unset: auto) is sent as Ollama's ``think`` unless auto, which leaves it
    to the model's default.  The reply's ``message.thinking`` becomes ``reasoning``, and an
    assistant message's ``reasoning`` goes back as ``thinking``: which turns still carry it is the
    runtime's choice (the template's rule, second lab C.6).

    Besides the protocol ``llm(messages, tools)`` it offers ``complete(prompt, stop=, max_tokens=)``
    (raw text continuation, ``/api/generate`` with ``raw: true``) and ``chat_text(messages,
    json_schema=)`` (one text reply, optionally constrained to a JSON schema by the server).
    """

    backend = "ollama"
    OPTION_NAMES = ("temperature", "top_k", "top_p", "min_p", "seed", "num_predict", "num_ctx",
                    "stop", "repeat_penalty")

    def __init__(self, model=None, *, host=None, timeout=DEFAULT_TIMEOUT, think=None,
                 **options):
        unknown = set(options) - set(self.OPTION_NAMES)
        if unknown:
            raise TypeError(f"unknown Ollama option(s) {sorted(unknown)}; "
                            f"known: {', '.join(self.OPTION_NAMES)}")
        self.model = model or default_model()
        self.think = thinking_setting(think)
        self.last = {}      # the last reply's run: tokens, finish, cap, cut (``reply_run``)
        self.timeout = _require_timeout(timeout)
        self.options = {k: v for k, v in options.items() if v is not None}
        self.host = ollama_host(host)
        self.http = httpx.Client(base_url=self.host, timeout=httpx.Timeout(self.timeout))
        self._seen_ids = set()
        self._counter = itertools.count(1)

    def __repr__(self):
        think = "" if self.think is None else f", think={self.think}"
        return (f"OllamaLLM(model={self.model!r}, host={self.host!r}, options={self.options}"
                f"{think})")

    # -- the protocol ------------------------------------------------------------------------
    def __call__(self, messages, tools=None) -> AssistantMessage:
        _check_history(messages, tools)
        data = self.chat_raw(messages_to_wire(messages), tools=tools, think=self.think)
        return self._to_assistant(data["message"])

    def _fresh_id(self) -> str:
        while True:
            candidate = f"call_{next(self._counter)}_{new_call_id()[5:]}"
            if candidate not in self._seen_ids:
                return candidate

    def _to_assistant(self, wire_message: dict) -> AssistantMessage:
        message = message_from_wire({**wire_message, "role": "assistant"}, new_id=self._fresh_id)
        if not message.reasoning and THINK_CLOSE in message.text:
            # a model whose thinking Ollama did not separate (no thinking parser for it): the
            # span is still kept out of the text, with the course's one splitter
            reasoning, text = original(split_reasoning)(message.text)
            message = AssistantMessage(text, message.tool_calls, reasoning)
        for call in message.tool_calls:
            if call.id in self._seen_ids:  # a repeated server id would break the pairing
                call.id = self._fresh_id()
            self._seen_ids.add(call.id)
        return message

    # -- text only: structured outputs, raw completion --------------------------------------
    def chat_text(self, messages, *, json_schema=None) -> str:
        """The text of one reply to ``messages`` (no tools).  With ``json_schema`` (a dict) the
        server constrains decoding to it (Ollama's ``format``: structured outputs).  ``format``
        constrains the reply *text*, not native tool calls, so it is used here without tools."""
        _check_history(messages, None)
        extra = {"format": json_schema} if json_schema is not None else {}
        return self.chat_raw(messages_to_wire(messages), **extra)["message"].get("content") or ""

    def complete(self, prompt: str, *, stop=None, max_tokens=None, **options) -> str:
        """Continue the raw text ``prompt`` (no chat template: ``/api/generate`` with ``raw:
        true``), stopping at any string of ``stop`` (the stop string is not returned)."""
        return self.generate_raw(prompt, stop=stop, max_tokens=max_tokens, **options)["response"]

    def generate_raw(self, prompt: str, *, stop=None, max_tokens=None, top_logprobs=None,
                     **options) -> dict:
        """POST ``/api/generate`` with ``raw: true`` and return the server's JSON (it always
        holds a ``response`` text).  ``top_logprobs`` (0 to 20) asks for each generated token's
        log-probability and its most probable alternatives (``logprobs``, since v0.12.11)."""
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        opts = {**self.options, **{k: v for k, v in options.items() if v is not None}}
        if stop is not None:
            opts["stop"] = [stop] if isinstance(stop, str) else list(stop)
        if max_tokens is not None:
            opts["num_predict"] = int(max_tokens)
        opts.setdefault("num_predict", DEFAULT_MAX_TOKENS)
        payload = {"model": self.model, "prompt": prompt, "raw": True, "stream": False}
        if opts:
            payload["options"] = opts
        if top_logprobs is not None:
            if not 0 <= int(top_logprobs) <= 20:
                raise ValueError("Ollama allows top_logprobs from 0 to 20")
            payload.update(logprobs=True, top_logprobs=int(top_logprobs))
        data = self._post("/api/generate", payload, size=len(prompt))
        self._keep_run(data, opts["num_predict"])
        if not isinstance(data.get("response"), str):
            raise OllamaError(f"Ollama at {self.host} answered /api/generate without a "
                              f"`response` text ({_short_json(data)}); update Ollama.")
        return data

    # -- raw access (sweeps, logprobs) ---------------------------------------------------------
    def chat_raw(self, wire_messages, *, tools=None, **extra) -> dict:
        """POST ``/api/chat`` with ``stream: false`` and return the server's JSON as a dict, which
        always holds a ``message`` (an answer without one is an error).

        ``extra`` may hold ``options`` (merged over the instance's), ``logprobs``,
        ``top_logprobs``, ``format``, ``think`` (None: not sent).  The reply is capped at
        ``DEFAULT_MAX_TOKENS`` unless ``num_predict`` says otherwise.  Errors become
        ``OllamaError`` with what to do.
        """
        options = {**self.options, **(extra.pop("options", None) or {})}
        options.setdefault("num_predict", DEFAULT_MAX_TOKENS)
        payload = {"model": self.model, "messages": list(wire_messages), "stream": False}
        if tools:
            payload["tools"] = list(tools)
        if options:
            payload["options"] = options
        payload.update({k: v for k, v in extra.items() if v is not None})
        size = sum(len(str(m.get("content") or "")) for m in payload["messages"])
        data = self._post("/api/chat", payload, size=size)
        self._keep_run(data, options["num_predict"])
        if not isinstance(data.get("message"), dict):
            raise OllamaError(
                f"Ollama at {self.host} answered HTTP 200 but without a `message` "
                f"({_short_json(data)}): that is not an empty answer but a server fault. Run the "
                "cell again; if it persists, restart `ollama serve` or update Ollama.")
        return data

    def _keep_run(self, data: dict, cap) -> None:
        """``last``: what the server said about this reply (``done_reason: "length"``: cut)."""
        self.last = reply_run(data.get("prompt_eval_count"), data.get("eval_count"),
                              data.get("done_reason"), cap)

    def _post(self, path: str, payload: dict, *, size: int) -> dict:
        try:
            response = self.http.post(path, json=payload)
        except httpx.ConnectTimeout:
            raise OllamaError(
                f"Nothing at {self.host} accepted a connection within {self.timeout:g} s. Is "
                "OLLAMA_HOST (or host=) the right address, and is `ollama serve` running "
                "there?") from None
        except httpx.ConnectError:
            raise OllamaError(
                f"Cannot reach an Ollama server at {self.host}. Start it with `ollama serve` in a "
                "terminal (or open the Ollama app), then run this cell again.") from None
        except httpx.TimeoutException:
            raise OllamaError(
                f"Ollama at {self.host} accepted the request but did not answer within the "
                f"timeout of {self.timeout:g} s. The model may still be loading, or be too large "
                f"for this machine: wait and retry, pass a larger timeout=, or use a smaller "
                f"model (e.g. LREACT_MODEL=qwen2.5:1.5b).") from None
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
            tokens = max(1, size // 4)
            raise OllamaError(
                f"Ollama at {self.host} dropped the connection before answering. The input was "
                f"about {tokens} tokens ({size} characters); if that is near or beyond the "
                f"model's context window (Ollama's num_ctx, 4096 tokens by default on small "
                f"machines), the model runner likely crashed on it: shorten the history, or pass "
                f"num_ctx= with a larger window if the machine has the memory. Otherwise check "
                f"that `ollama serve` is still running.") from None
        except httpx.HTTPError as e:
            raise OllamaError(
                f"The connection to Ollama at {self.host} failed ({type(e).__name__}). Check "
                "that `ollama serve` is still running, then run this cell again.") from None
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code >= 400:
            text = data.get("error") if isinstance(data, dict) else None
            raise OllamaError(self._explain(response.status_code,
                                            str(text or response.text[:200]).strip()))
        if not isinstance(data, dict):
            raise OllamaError(
                f"The server at {self.host} did not answer like Ollama (no JSON object). Is "
                "OLLAMA_HOST pointing at the right address?")
        return data

    def _explain(self, status: int, text: str) -> str:
        low = text.lower()
        if status == 404 or "not found" in low:
            return (f"The model {self.model!r} is not pulled on this Ollama server. Run "
                    f"`{_pull_hint(self.model)}` in a terminal, then run this cell again. "
                    f"(Server said: {text})")
        if "does not support tools" in low:
            return (f"The model {self.model!r} does not support tool calling. Use a Qwen model "
                    f"(2.5, 3 or 3.5), e.g. set LREACT_MODEL=qwen2.5:7b and run `ollama pull "
                    f"qwen2.5:7b`. (Server said: {text})")
        if "does not support thinking" in low:
            return (f"The model {self.model!r} does not think (Qwen2.5 has no thinking span), "
                    f"but thinking was asked for ({THINK_ENV_VAR}=on or think=). Unset "
                    f"{THINK_ENV_VAR} (auto), or use a thinking model such as qwen3 or qwen3.5. "
                    f"(Server said: {text})")
        if status >= 500:
            return (f"Ollama answered HTTP {status}: the model runner crashed or failed to load "
                    f"{self.model!r} (server said: {text or 'nothing'}). Restart it (stop and run "
                    f"`ollama serve` again), and if it happens again try a smaller model, e.g. "
                    f"LREACT_MODEL=qwen2.5:1.5b, or a shorter history.")
        return f"Ollama answered HTTP {status}: {text}"

    def first_token_logprobs(self, messages, top_logprobs: int = 20, **options):
        """The top ``top_logprobs`` (at most 20) candidates for the first generated token, as a
        list of ``(token, logprob)`` pairs, most probable first."""
        if not 0 <= int(top_logprobs) <= 20:
            raise ValueError("Ollama allows top_logprobs from 0 to 20")
        data = self.chat_raw(messages_to_wire(messages), logprobs=True,
                             top_logprobs=int(top_logprobs),
                             options={"num_predict": 1, **options})
        entries = data.get("logprobs") or []
        if not entries:
            raise OllamaError("Ollama returned no logprobs: the server is older than v0.12.11; "
                              "update Ollama to see token probabilities.")
        return [(t["token"], float(t["logprob"])) for t in entries[0].get("top_logprobs", [])]


def _short_json(data, n: int = 120) -> str:
    import json
    try:
        text = json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(data)
    return text if len(text) <= n else text[:n] + "..."
