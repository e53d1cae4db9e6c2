"""``OpenAICompatLLM``: the lab's model protocol over any OpenAI-compatible ``/v1`` endpoint.

Part III, "Function calling: defining and advertising tools": Ollama, llama.cpp and vLLM are
inference engines; the runtime only sends requests to their API.  This backend speaks the
OpenAI chat-completions dialect through the official ``openai`` client, so the same
``llm(messages, tools) -> AssistantMessage`` loop runs on

- llama.cpp's ``llama-server --jinja`` (tools need the Jinja chat template),
- vLLM ``vllm serve <model> --enable-auto-tool-choice --tool-call-parser hermes`` (Qwen2.5),
- LM Studio, Ollama's own ``/v1``, or any other ``/v1/chat/completions`` server.

What it sends: tools with ``tool_choice: "auto"`` spelled out (the OpenAI API's default, which
some engines, llama-cpp-python's server among them, only apply when it is sent: without it the
model never sees the tools); a call-only assistant turn with ``content: ""`` (the API allows
``null``, but llama-cpp-python's server refuses it with HTTP 500).

Thinking models: the reply's thinking is read from ``reasoning_content`` (llama-server; vLLM
before it removed that name) or ``reasoning`` (vLLM today, Ollama's ``/v1``), or split off the
text when the engine left it there (llama-server ``--reasoning-format none``), and becomes the
message's ``reasoning``.  It goes back in the field the engine itself used
(``reasoning_content`` until the engine has answered with one).  ``LREACT_THINK=on|off`` (or
``think=``) sends ``chat_template_kwargs: {"enable_thinking": ...}``, which llama-server and
vLLM pass to the chat template; auto (the default) sends nothing.  Every reply is capped at
``DEFAULT_MAX_TOKENS`` unless ``max_tokens`` says otherwise, and ``last["cut"]`` says whether
the cap ended the last one.

What it guarantees: tool-call ids are kept as the engine sent them, or assigned when missing (or
repeated), unique within the model object's run; ``arguments`` stay the JSON *string* exactly as
received, malformed or not (the runtime's validator must see what the model produced); every
request has an explicit timeout and at most ``max_retries`` retries (0 by default, so a dead
server fails at once); errors are ``EngineError`` with a sentence that says what to do and names
only the cause the evidence shows (``lreact.engines.engine_errors``).
"""
from __future__ import annotations

import itertools
import json
import os

from ..messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    new_call_id,
)
from ..replies import THINK_CLOSE, original, split_reasoning
from .engine_errors import error_text_of, explain_dropped, explain_status  # noqa: F401 (API)
from .models import (
    DEFAULT_MAX_TOKENS,
    ModelError,
    _check_history,
    _require_timeout,
    reply_run,
    thinking_setting,
)

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"   # llama-server --port 8080
DEFAULT_TIMEOUT = 120.0
START_HINT = ("start one, e.g. `llama-server -m <model>.gguf --jinja --port 8080` or `vllm serve "
              "Qwen/Qwen2.5-1.5B-Instruct --enable-auto-tool-choice --tool-call-parser hermes "
              "--port 8000`, and set LREACT_BASE_URL to its address (ending in /v1)")


TOOL_FEATURES = {"tool_choice": 'tool_choice "auto"', "tools": "tool calling (tools)"}


class EngineError(ModelError):
    """An OpenAI-compatible engine could not answer; the message says what to do about it."""


REASONING_FIELDS = ("reasoning_content", "reasoning")   # llama-server / older vLLM; vLLM, Ollama /v1


def messages_to_openai(messages, *, reasoning_field: str = "reasoning_content") -> list:
    """A history as the chat-completions ``messages`` list: assistant tool calls with their id and
    ``arguments`` as the JSON string they hold, results as ``role: tool`` with ``tool_call_id``.
    A call-only assistant turn has ``content: ""``: every engine reads it as no text, and
    llama-cpp-python's server refuses ``null`` there (HTTP 500).  An assistant message's
    ``reasoning`` goes in ``reasoning_field`` (``reasoning_content`` or ``reasoning``)."""
    if reasoning_field not in REASONING_FIELDS:
        raise ValueError(f"reasoning_field must be one of {REASONING_FIELDS}, got "
                         f"{reasoning_field!r}")
    wire = []
    for i, m in enumerate(messages):
        if isinstance(m, (SystemMessage, UserMessage)):
            wire.append({"role": m.role, "content": m.content})
        elif isinstance(m, AssistantMessage):
            out = {"role": "assistant", "content": m.text or ""}
            if m.reasoning:
                out[reasoning_field] = m.reasoning
            if m.tool_calls:
                out["tool_calls"] = [{"id": c.id, "type": "function",
                                      "function": {"name": c.name, "arguments": c.arguments}}
                                     for c in m.tool_calls]
            wire.append(out)
        elif isinstance(m, ToolResultMessage):
            wire.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        else:
            raise TypeError(f"message {i} is a {type(m).__name__}, not a lecture message type")
    return wire


class OpenAICompatLLM:
    """A model behind an OpenAI-compatible engine.

    ``OpenAICompatLLM(model=None, *, base_url=None, api_key=None, timeout=120, max_retries=0,
    think=None, temperature=None, top_p=None, seed=None, max_tokens=None, stop=None,
    top_k=None)``.  ``max_tokens`` defaults to ``DEFAULT_MAX_TOKENS``; ``think`` as in the
    module's docstring.

    ``base_url`` defaults to ``$LREACT_BASE_URL``, else ``http://127.0.0.1:8080/v1``;
    ``model`` to ``$LREACT_MODEL``, else the first model the engine lists at ``/v1/models``
    (asked once, at the first call).  ``api_key`` defaults to ``$LREACT_API_KEY`` or
    ``$OPENAI_API_KEY``; local engines need none, so a placeholder is sent.
    ``top_k`` is not an OpenAI parameter; llama-server and vLLM read it from the body.
    ``http_client`` is passed to ``openai.OpenAI`` as it is (a proxy, a mock transport).
    """

    backend = "openai"
    OPTION_NAMES = ("temperature", "top_p", "seed", "max_tokens", "stop", "top_k")

    def __init__(self, model=None, *, base_url=None, api_key=None, timeout=DEFAULT_TIMEOUT,
                 max_retries=0, http_client=None, think=None, **options):
        import openai  # imported here so that the rest of the package works without it

        unknown = set(options) - set(self.OPTION_NAMES)
        if unknown:
            raise TypeError(f"unknown option(s) {sorted(unknown)}; known: "
                            f"{', '.join(self.OPTION_NAMES)}")
        if not isinstance(max_retries, int) or not 0 <= max_retries <= 3:
            raise ValueError("max_retries must be 0 to 3 (each retry waits and repeats the "
                             "whole request)")
        self.timeout = _require_timeout(timeout)
        self.base_url = (base_url or os.environ.get("LREACT_BASE_URL", "").strip()
                         or DEFAULT_BASE_URL).rstrip("/")
        self.model = model or os.environ.get("LREACT_MODEL", "").strip() or None
        self.options = {k: v for k, v in options.items() if v is not None}
        self.think = thinking_setting(think)
        self.reasoning_field = "reasoning_content"   # until the engine shows which it uses
        self.last = {}      # the last reply's run: tokens, finish, cap, cut (``reply_run``)
        key = (api_key or os.environ.get("LREACT_API_KEY", "").strip()
               or os.environ.get("OPENAI_API_KEY", "").strip() or "not-needed")
        # http_client: an HTTP client of the kind the openai client takes (its public parameter;
        # tests pass one with a mock transport to replay recorded exchanges)
        self.client = openai.OpenAI(base_url=self.base_url, api_key=key, timeout=self.timeout,
                                    max_retries=max_retries, http_client=http_client)
        self._seen_ids = set()
        self._counter = itertools.count(1)

    def __repr__(self):
        return (f"OpenAICompatLLM(model={self.model!r}, base_url={self.base_url!r}, "
                f"options={self.options})")

    # -- the protocol ------------------------------------------------------------------------
    def __call__(self, messages, tools=None) -> AssistantMessage:
        _check_history(messages, tools)
        extra = {"tools": list(tools), "tool_choice": "auto"} if tools else {}
        if self.think is not None:
            extra["extra_body"] = {"chat_template_kwargs": {"enable_thinking": self.think}}
        wire = messages_to_openai(messages, reasoning_field=self.reasoning_field)
        choice = self._chat(wire, features=TOOL_FEATURES if tools else {}, **extra)
        return self._to_assistant(choice.message)

    def chat_text(self, messages, *, json_schema=None) -> str:
        """The text of one reply (no tools).  With ``json_schema`` the engine is asked for
        structured output (``response_format`` of type ``json_schema``, strict)."""
        _check_history(messages, None)
        extra, features = {}, {}
        if json_schema is not None:
            extra["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "reply", "schema": json_schema, "strict": True}}
            features = {"response_format": "structured output (response_format of type "
                                           "json_schema)"}
        return self._chat(messages_to_openai(messages), features=features,
                          **extra).message.content or ""

    def first_token_logprobs(self, messages, top_logprobs: int = 20, **options):
        """The top ``top_logprobs`` (at most 20) candidates for the first generated token, as a
        list of ``(token, logprob)`` pairs, most probable first (``logprobs`` and
        ``top_logprobs`` of the chat-completions API, one generated token)."""
        if not 0 <= int(top_logprobs) <= 20:
            raise ValueError("the OpenAI API allows top_logprobs from 0 to 20")
        _check_history(messages, None)
        unknown = set(options) - set(self.OPTION_NAMES)
        if unknown:
            raise TypeError(f"unknown option(s) {sorted(unknown)}")
        kw = self._sampling({**self.options, **options, "max_tokens": 1})
        wire = messages_to_openai(messages)
        result = self._request(lambda: self.client.chat.completions.create(
            model=self.resolved_model(), messages=wire, logprobs=True,
            top_logprobs=int(top_logprobs), **kw), size=_size(wire),
            features={"logprobs": "token log-probabilities (logprobs)"})
        choices = getattr(result, "choices", None) or [None]
        content = getattr(getattr(choices[0], "logprobs", None), "content", None)
        if not content:
            raise EngineError(f"The engine at {self.base_url} returned no log-probabilities: it "
                              "does not support logprobs on chat completions.")
        top = getattr(content[0], "top_logprobs", None) or []
        pairs = [(t.token, float(t.logprob)) for t in top]
        return sorted(pairs, key=lambda pair: -pair[1])

    def complete(self, prompt: str, *, stop=None, max_tokens=None, **options) -> str:
        """Continue the raw text ``prompt`` (``/v1/completions``: no chat template), stopping
        at any string of ``stop`` (the stop string is not returned)."""
        return self.complete_raw(prompt, stop=stop, max_tokens=max_tokens,
                                 **options).choices[0].text or ""

    def complete_raw(self, prompt: str, *, stop=None, max_tokens=None, logprobs=None, **options):
        """The engine's whole ``/v1/completions`` answer (it always holds a choice);
        ``logprobs=k`` (0 to 20) asks for each token's log-probability and top ``k``."""
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        kw = self._sampling({**self.options, **{k: v for k, v in options.items()
                                                if v is not None}})
        if stop is not None:
            kw["stop"] = [stop] if isinstance(stop, str) else list(stop)
        if max_tokens is not None:
            kw["max_tokens"] = int(max_tokens)
        features = {"top_k": "top_k"} if "extra_body" in kw else {}
        if logprobs is not None:
            if not 0 <= int(logprobs) <= 20:
                raise ValueError("the OpenAI API allows logprobs from 0 to 20")
            kw["logprobs"] = int(logprobs)
            features["logprobs"] = "token log-probabilities (logprobs)"
        result = self._request(lambda: self.client.completions.create(
            model=self.resolved_model(), prompt=prompt, **kw), size=len(prompt),
            features=features or None)
        if not getattr(result, "choices", None):
            raise EngineError(f"The engine at {self.base_url} answered /completions without a "
                              "choice: that is a server fault, not an empty text.")
        return result

    # -- machinery ---------------------------------------------------------------------------
    def resolved_model(self) -> str:
        """The model name sent: the one given, or the first the engine lists (asked once)."""
        if self.model is None:
            listed = self._request(lambda: self.client.models.list(), size=0)
            ids = [m.id for m in getattr(listed, "data", None) or [] if getattr(m, "id", None)]
            if not ids:
                raise EngineError(f"The engine at {self.base_url} lists no model at /models: "
                                  "load one, or pass model= / set LREACT_MODEL.")
            self.model = ids[0]
        return self.model

    @staticmethod
    def _sampling(options) -> dict:
        kw = {k: options[k] for k in ("temperature", "top_p", "seed", "max_tokens", "stop")
              if k in options}
        kw.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
        if "top_k" in options:
            kw["extra_body"] = {"top_k": options["top_k"]}
        return kw

    def _chat(self, wire_messages, *, features=None, **extra):
        kw = self._sampling(self.options)
        if "top_k" in self.options:
            features = {**(features or {}), "top_k": "top_k"}
        if "extra_body" in kw and "extra_body" in extra:
            extra["extra_body"] = {**kw.pop("extra_body"), **extra["extra_body"]}
        result = self._request(lambda: self.client.chat.completions.create(
            model=self.resolved_model(), messages=wire_messages, **kw, **extra),
            size=_size(wire_messages), features=features)
        choices = getattr(result, "choices", None)
        usage = getattr(result, "usage", None)
        self.last = reply_run(getattr(usage, "prompt_tokens", None),
                              getattr(usage, "completion_tokens", None),
                              getattr(choices[0], "finish_reason", None) if choices else None,
                              kw["max_tokens"])
        if not choices or getattr(choices[0], "message", None) is None:
            raise EngineError(
                f"The engine at {self.base_url} answered HTTP 200 without a message (no "
                "choices[0].message): that is a server fault, not an empty answer. Run the cell "
                "again; if it persists, restart the engine.")
        return choices[0]

    def _fresh_id(self) -> str:
        while True:
            candidate = f"call_{next(self._counter)}_{new_call_id()[5:]}"
            if candidate not in self._seen_ids:
                return candidate

    def _to_assistant(self, message) -> AssistantMessage:
        calls = []
        for raw in getattr(message, "tool_calls", None) or []:
            fn = raw.function
            args = getattr(fn, "arguments", None)
            if args is None:
                args = ""
            elif not isinstance(args, str):   # a non-conforming engine sent an object
                args = json.dumps(args, ensure_ascii=False)
            call_id = raw.id if isinstance(raw.id, str) and raw.id else None
            if call_id is None or call_id in self._seen_ids:
                call_id = self._fresh_id()
            self._seen_ids.add(call_id)
            calls.append(ToolCall(call_id, str(getattr(fn, "name", "") or ""), args))
        text, reasoning = getattr(message, "content", None) or "", ""
        for name in REASONING_FIELDS:     # fields the openai client keeps as extra attributes
            value = getattr(message, name, None)
            if isinstance(value, str) and value:
                reasoning, self.reasoning_field = value, name
                break
        if not reasoning and THINK_CLOSE in text:
            # the engine left the span in the text (llama-server --reasoning-format none)
            reasoning, text = original(split_reasoning)(text)
        return AssistantMessage(text=text, tool_calls=calls, reasoning=reasoning)

    def _request(self, send, *, size: int, features=None):
        import openai

        try:
            return send()
        except openai.APITimeoutError:
            raise EngineError(
                f"The engine at {self.base_url} accepted the request but did not answer within "
                f"the timeout of {self.timeout:g} s. The model may still be loading or be too "
                "large for this machine: wait and retry, pass a larger timeout=, or serve a "
                "smaller model.") from None
        except openai.APIConnectionError as e:
            # the openai client runs on its own HTTP library (httpx2 in 3.x): compare by name
            cause = type(e.__cause__).__name__
            if cause in ("RemoteProtocolError", "ReadError", "WriteError"):
                raise EngineError(explain_dropped(self.base_url, size)) from None
            raise EngineError(
                f"Cannot reach an OpenAI-compatible engine at {self.base_url}: {START_HINT}. "
                "Then run this cell again.") from None
        except (openai.AuthenticationError, openai.PermissionDeniedError) as e:
            from .engine_errors import NO_KEY, explain_key  # 401/403: the key, in words

            raise EngineError(explain_key(self.base_url, e.status_code, _error_text(e),
                                          key_set=self.client.api_key != NO_KEY)) from None
        except openai.APIStatusError as e:
            raise EngineError(self._explain(e.status_code, _error_text(e), features)) from None
        except openai.OpenAIError as e:
            raise EngineError(f"The openai client failed ({type(e).__name__}): "
                              f"{str(e).splitlines()[0][:200]}") from None

    def _explain(self, status: int, text: str, features=None) -> str:
        return explain_status(status, text, base_url=self.base_url, model=self.model,
                              features=features)


def _size(wire_messages) -> int:
    """The characters of a request's messages (for the token estimate of an error message)."""
    return sum(len(str(m.get("content") or "")) + len(str(m.get("tool_calls") or ""))
               for m in wire_messages)


def _error_text(e) -> str:
    """The engine's own error message from an ``APIStatusError`` (llama-server and vLLM send
    ``{"error": {"message": ...}}``; the client keeps the inner object as ``.body``)."""
    return error_text_of(getattr(e, "body", None), getattr(e, "message", ""))
