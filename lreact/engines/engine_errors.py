"""What an OpenAI-compatible engine's failure means, in one sentence that says what to do.

Used by ``lreact.engines.openai_compat.OpenAICompatLLM`` and by ``lreact.check_setup()``.  The rule of
the wording (learnt by running the unit on llama-cpp-python's server, see issue 17): name only
the cause the evidence shows.

- an HTTP error whose message names a part of the request the engine refused (``tools``,
  ``response_format``, ...) is a feature this engine does not support, not a crash: it is still
  running, it answered;
- "crashed" only when the engine says so (out of memory, failed to decode, ...) or when it
  stopped listening while it answered;
- a dropped connection names the context window only for an input long enough to fill one.

Lecture: Part III, "Function calling: defining and advertising tools" (the engine is outside the
runtime: the loop only sends it requests, and must read its refusals).
"""
from __future__ import annotations

import re
import socket
import time
from urllib.parse import urlsplit

# an input this short (in estimated tokens, 4 characters each) fits any context window an
# engine is started with (llama.cpp's smallest common default is 2048)
SHORT_INPUT_TOKENS = 1024

# what the engine's message says when its model runner really failed
CRASH_WORDS = ("out of memory", "kv cache", "failed to allocate", "llama_decode",
               "failed to decode", "decode failed", "segmentation", "abort", "crash", "cuda error")

# the engine's message after a request it could not parse (pydantic / FastAPI, llama-server)
VALIDATION_WORDS = ("invalid request", "validation error", "input should be", "field required",
                    "extra inputs", "unsupported param", "not supported", "invalid_request_error",
                    "type_error")


def error_text_of(body, fallback="") -> str:
    """The message in an engine's error body (``{"error": {"message"}}``, ``{"message"}``,
    ``{"error": "..."}``, FastAPI's ``{"detail": ...}``), at most 300 characters; a validation
    dump (llama-cpp-python's server sends pydantic's) becomes its one relevant line."""
    text = fallback
    if isinstance(body, dict):
        inner = body.get("error", body.get("detail", body))
        if isinstance(inner, dict):
            inner = inner.get("message", inner)
        if isinstance(inner, (str, list)):
            text = inner
    text = " ".join(str(text or "").split())
    return (_validation_summary(text) or text)[:300]


# one error of a pydantic dump: {'type': ..., 'loc': ('body', 'response_format', 'type'),
# 'msg': "Input should be 'text' or 'json_object'", 'input': 'json_schema', ...}
_PYDANTIC_ERROR = re.compile(r"'loc': \(([^)]*)\), 'msg': (\"[^\"]*\"|'[^']*')")


def _validation_summary(text: str):
    """``"invalid request: <field path>: <what pydantic wanted>"`` for the first error that is not
    one of a union's other alternatives (a message checked against the wrong role), else None."""
    errors = [(tuple(part.strip(" '") for part in loc.split(",") if part.strip(" '")),
               msg[1:-1]) for loc, msg in _PYDANTIC_ERROR.findall(text)]
    relevant = [(loc, msg) for loc, msg in errors
                if not (loc[-1:] in (("role",), ("tool_call_id",))
                        or ("Message" in "".join(loc) and msg.startswith("Field required")))]
    if not relevant:
        return None
    loc, msg = relevant[0]
    path = ".".join(part for part in loc
                    if part != "body" and not part.startswith("ChatCompletion"))
    return f"invalid request: {path}: {msg}"


def explain_status(status: int, text: str, *, base_url: str, model, features=None) -> str:
    """What an HTTP error status of an OpenAI-compatible engine means, and what to do.

    ``features`` maps a request field this request used beyond a plain chat (``"tools"``,
    ``"response_format"``, ``"top_k"``...) to its name in words; an error that names one of them
    is reported as "this engine does not support <it>"."""
    low = text.lower()
    said = f"(engine said: {text or 'nothing'})"
    if "--jinja" in low:
        return ("llama-server was started without its Jinja chat template, so it cannot take "
                f"tools: restart it with `--jinja` {said}.")
    if "auto-tool-choice" in low or "tool-call-parser" in low:
        return ("The engine does not parse tool calls: start vLLM with "
                f"`--enable-auto-tool-choice --tool-call-parser hermes` {said}.")
    if status in (401, 403):
        return (f"The engine at {base_url} refused the API key (HTTP {status}): set "
                f"LREACT_API_KEY to the key it was started with {said}.")
    if status == 404 or (status == 400 and "model" in low and
                         ("does not exist" in low or "not found" in low)):
        return (f"The engine at {base_url} does not serve the model {model!r}: "
                f"set LREACT_MODEL (or model=) to a name listed at {base_url}/models {said}.")
    if "context" in low and ("length" in low or "window" in low or "exceed" in low):
        return (f"The input does not fit the model's context window (HTTP {status}): "
                f"shorten the history (compact it) or start the engine with a larger "
                f"window {said}.")
    if status == 503:
        return (f"The engine at {base_url} is not ready (HTTP 503; it may still be "
                f"loading the model): wait a little and run the cell again {said}.")
    refused = [words for field, words in (features or {}).items() if field.lower() in low]
    if refused and status in (400, 405, 422, 500, 501):
        return (f"This engine does not support {refused[0]}: the engine at {base_url} refused "
                f"that part of the request (HTTP {status}; it is running, nothing crashed). Leave "
                f"that feature out, or use an engine that supports it {said}.")
    if any(word in low for word in CRASH_WORDS) and status >= 500:
        return (f"The engine at {base_url} failed with HTTP {status}: its model runner "
                f"crashed or ran out of memory. Restart the engine; if it happens again, "
                f"serve a smaller model or send a shorter history {said}.")
    if any(word in low for word in VALIDATION_WORDS) or status in (400, 422):
        return (f"The engine at {base_url} refused the form of the request (HTTP {status}; "
                "it is running, nothing crashed): this engine reads the OpenAI API differently "
                f"from lreact. Report it with the engine's name and version {said}.")
    if status >= 500:
        return (f"The engine at {base_url} answered HTTP {status}, an internal error on this "
                "request (it is still running: it answered). Run the cell again; if the same "
                f"request fails again, the engine's log says why {said}.")
    return f"The engine at {base_url} refused the request with HTTP {status} {said}."


# what the OpenAI-compatible backend sends when no key is set (local engines need none)
NO_KEY = "not-needed"


def explain_key(base_url: str, status: int, text: str = "", *, key_set: bool) -> str:
    """The engine refused the request's API key (HTTP 401/403).  ``key_set``: whether
    ``LREACT_API_KEY`` (or ``api_key=``) held one, or the placeholder ``NO_KEY`` went out.
    A class server (``python -m autograder class-server``) gives each student a key."""
    said = f"(server said: {text or 'nothing'})"
    if key_set:
        return (f"The server at {base_url} refused this key (HTTP {status}); ask your "
                "instructor for yours and set LREACT_API_KEY to it (or, for a server you "
                f"started, the key it was started with) {said}.")
    return (f"The server at {base_url} wants an API key (HTTP {status}) and none is set: set "
            "LREACT_API_KEY to the key your instructor gave you (or, for a server you started, "
            f"the key it was started with) {said}.")


def listening(base_url: str, timeout: float = 1.0) -> bool:
    """Whether anything accepts a TCP connection at ``base_url``'s host and port now."""
    parts = urlsplit(base_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


DROP_SETTLE = 0.5   # seconds between two looks at a port after a dropped connection


def explain_dropped(base_url: str, size: int) -> str:
    """The engine closed the connection before its answer: say which cause the evidence shows.
    ``size`` is the input's length in characters (about 4 per token)."""
    tokens = max(1, size // 4)
    # a killed server's connections can close a moment before its listening socket (the kernel
    # closes its files one by one, and still queues connections on an open one): look again
    running = listening(base_url) and (time.sleep(DROP_SETTLE) or listening(base_url))
    if tokens >= SHORT_INPUT_TOKENS:
        return (f"The engine at {base_url} dropped the connection before answering. The input "
                f"was about {tokens} tokens ({size} characters); if that is near or beyond the "
                "context window the engine was started with (llama-server --ctx-size, "
                "llama_cpp.server --n_ctx, vLLM --max-model-len), it likely crashed on it: "
                "shorten the history or restart the engine with a larger window"
                + ("." if running else "; nothing listens there now, so restart it first."))
    if not running:
        return (f"The engine at {base_url} stopped while answering: the connection closed before "
                "the answer and nothing listens there now (it was stopped, or it crashed). "
                "Start it again, then run this cell again.")
    return (f"The engine at {base_url} dropped the connection before answering, and is "
            f"listening again. The input was short (about {tokens} tokens), so it is not the "
            "context window: the engine restarted or failed on this request; its log says why. "
            "Run the cell again.")
