"""The model protocol of the lab: ``llm(messages, tools) -> AssistantMessage``.

Two implementations (Part IV, "System Prompt, Chat Template & Statelessness": the model is
stateless, so each call receives the whole history):

- ``ScriptedLLM``: replays a fixed list of responses and records what it was sent.  Tests and the
  offline lab use it; it makes an agent run deterministic, faults included.
- ``OllamaLLM``: a real Qwen model served by a local Ollama, through the ``ollama`` client.
"""
from __future__ import annotations

import copy
import itertools
import os

import httpx

from .messages import (AssistantMessage, MESSAGE_TYPES, message_from_wire, messages_to_wire,
                       new_call_id)

# The one place the default model is pinned.  Override with the LREACT_MODEL environment variable
# or OllamaLLM(model=...).  qwen2.5:7b is the lecture's lab model; on a small machine use
# qwen2.5:1.5b (about 1 GB) and on Binder qwen2.5:0.5b.
DEFAULT_MODEL = "qwen2.5:7b"
MODEL_ENV_VAR = "LREACT_MODEL"
DEFAULT_TIMEOUT = 120.0  # seconds; a first call may have to load the weights


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


class OllamaError(RuntimeError):
    """Ollama could not answer; the message says what to do about it."""


def _pull_hint(model: str) -> str:
    return f"ollama pull {model}"


class OllamaLLM:
    """A real model behind a local Ollama server (``/api/chat``), through the ``ollama`` client.

    ``OllamaLLM(model=None, *, host=None, timeout=120, temperature=..., top_k=..., top_p=...,
    seed=..., num_predict=..., num_ctx=...)``: sampling options go to Ollama's ``options``.
    Tool-call ids: the server's ``id`` is kept when it sends one; otherwise (older servers, or a
    client that drops it) a fresh id is assigned, so every call of a run has a unique id.
    """

    OPTION_NAMES = ("temperature", "top_k", "top_p", "min_p", "seed", "num_predict", "num_ctx",
                    "stop", "repeat_penalty")

    def __init__(self, model=None, *, host=None, timeout=DEFAULT_TIMEOUT, **options):
        import ollama  # imported here so that the rest of the package works without it

        unknown = set(options) - set(self.OPTION_NAMES)
        if unknown:
            raise TypeError(f"unknown Ollama option(s) {sorted(unknown)}; "
                            f"known: {', '.join(self.OPTION_NAMES)}")
        if timeout is None or float(timeout) <= 0:
            raise ValueError("timeout must be a positive number of seconds: without one, a stuck "
                             "server would hang the notebook")
        self.model = model or default_model()
        self.timeout = float(timeout)
        self.options = {k: v for k, v in options.items() if v is not None}
        self.client = ollama.Client(host=host, timeout=self.timeout)
        self.host = str(self.client._client.base_url).rstrip("/")
        self._seen_ids = set()
        self._counter = itertools.count(1)

    def __repr__(self):
        return f"OllamaLLM(model={self.model!r}, host={self.host!r}, options={self.options})"

    # -- the protocol ------------------------------------------------------------------------
    def __call__(self, messages, tools=None) -> AssistantMessage:
        _check_history(messages, tools)
        data = self.chat_raw(messages_to_wire(messages), tools=tools)
        return self._to_assistant(data.get("message") or {})

    def _fresh_id(self) -> str:
        while True:
            candidate = f"call_{next(self._counter)}_{new_call_id()[5:]}"
            if candidate not in self._seen_ids:
                return candidate

    def _to_assistant(self, wire_message: dict) -> AssistantMessage:
        message = message_from_wire({**wire_message, "role": "assistant"}, new_id=self._fresh_id)
        for call in message.tool_calls:
            if call.id in self._seen_ids:  # a repeated server id would break the pairing
                call.id = self._fresh_id()
            self._seen_ids.add(call.id)
        return message

    # -- raw access (sweeps, logprobs) ---------------------------------------------------------
    def chat_raw(self, wire_messages, *, tools=None, **extra) -> dict:
        """POST ``/api/chat`` with ``stream: false`` and return the server's JSON as a dict.

        ``extra`` may hold ``options`` (merged over the instance's), ``logprobs``,
        ``top_logprobs``, ``format``.  Errors become ``OllamaError`` with what to do.
        """
        import ollama

        options = {**self.options, **(extra.pop("options", None) or {})}
        payload = {"model": self.model, "messages": list(wire_messages), "stream": False}
        if tools:
            payload["tools"] = list(tools)
        if options:
            payload["options"] = options
        payload.update({k: v for k, v in extra.items() if v is not None})
        try:
            response = self.client._request_raw("POST", "/api/chat", json=payload)
            return response.json()
        except ConnectionError:
            raise OllamaError(
                f"Cannot reach an Ollama server at {self.host}. Start it with `ollama serve` in a "
                "terminal (or open the Ollama app), then run this cell again.") from None
        except httpx.TimeoutException:
            raise OllamaError(
                f"Ollama at {self.host} did not answer within {self.timeout:g} s. The model may "
                f"still be loading or be too large for this machine: wait and retry, pass a larger "
                f"timeout=, or use a smaller model (e.g. LREACT_MODEL=qwen2.5:1.5b).") from None
        except ollama.ResponseError as e:
            raise OllamaError(self._explain(e)) from None
        except httpx.HTTPError as e:  # the connection broke off mid-answer, a protocol error...
            raise OllamaError(
                f"The connection to Ollama at {self.host} failed ({type(e).__name__}: {e}). Check "
                "that `ollama serve` is still running, then run this cell again.") from None
        except ValueError:  # the answer was not JSON: something else listens on that port
            raise OllamaError(
                f"The server at {self.host} did not answer like Ollama (no JSON). Is OLLAMA_HOST "
                "pointing at the right address?") from None

    def _explain(self, e) -> str:
        text = str(getattr(e, "error", e))
        low = text.lower()
        if e.status_code == 404 or "not found" in low:
            return (f"The model {self.model!r} is not pulled on this Ollama server. Run "
                    f"`{_pull_hint(self.model)}` in a terminal, then run this cell again. "
                    f"(Server said: {text})")
        if "does not support tools" in low:
            return (f"The model {self.model!r} does not support tool calling. Use a Qwen2.5 model, "
                    f"e.g. set LREACT_MODEL=qwen2.5:7b and run `ollama pull qwen2.5:7b`. "
                    f"(Server said: {text})")
        return f"Ollama answered HTTP {e.status_code}: {text}"

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
