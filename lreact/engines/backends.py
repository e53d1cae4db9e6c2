"""Which model backend the notebooks use, chosen without touching code.

Environment variables (read at each call, so a notebook restart is enough after a change):

- ``LREACT_BACKEND``: ``auto`` (default), ``ollama``, ``openai`` (any OpenAI-compatible engine:
  llama.cpp's ``llama-server``, vLLM, LM Studio; ``llama-server``, ``llamacpp``, ``vllm`` and
  ``lmstudio`` are accepted as names for it) or ``embedded`` (llama.cpp inside the notebook's own
  process through llama-cpp-python: ``lreact.engines.embedded``, no server);
  ``auto`` is Ollama when its server answers (within ``AUTO_PROBE_TIMEOUT`` s), else the
  embedded engine when it can run (llama-cpp-python installed, a model file on the machine or
  allowed to be fetched), else Ollama (whose messages say what to start);
- ``LREACT_BASE_URL``: the server address; for Ollama its host (default ``$OLLAMA_HOST`` or
  ``http://127.0.0.1:11434``), for ``openai`` the ``/v1`` base URL (default
  ``http://127.0.0.1:8080/v1``, llama-server's); with ``auto`` it means "use this Ollama";
- ``LREACT_MODEL``: the server's model name (Ollama default ``lreact.DEFAULT_MODEL``; for
  ``openai`` the first model the engine lists);
- ``LREACT_GGUF``: the model file of the embedded engine (default: ``lreact.engines.gguf``'s model);
- ``LREACT_API_KEY``: only if the engine was started with a key.

``configured_llm(**options)`` returns the model object; ``lreact.check_setup()`` checks the same
backend; ``describe_backend()`` says in one line which backend is used and why.  Lecture:
Part III, "Function calling: defining and advertising tools" (the inference engine is not part
of the runtime: the loop only sends it requests).
"""
from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass

from . import gguf
from .models import default_model, ollama_host
from .openai_compat import OpenAICompatLLM

BACKEND_ENV_VAR = "LREACT_BACKEND"
BASE_URL_ENV_VAR = "LREACT_BASE_URL"
ALIASES = {"auto": "auto", "ollama": "ollama", "openai": "openai", "openai-compatible": "openai",
           "llama-server": "openai", "llamacpp": "openai", "llama.cpp": "openai",
           "vllm": "openai", "lmstudio": "openai", "lm-studio": "openai",
           "embedded": "embedded", "llama-cpp-python": "embedded", "in-process": "embedded"}
AUTO_PROBE_TIMEOUT = 0.5   # seconds: an Ollama on this machine answers /api/version at once

# options every backend understands, and their name in each backend
COMMON_OPTIONS = ("temperature", "top_p", "top_k", "seed", "max_tokens", "stop", "timeout")


@dataclass(frozen=True)
class BackendChoice:
    """The backend in force, why (plain words), and how to get the other one."""
    backend: str
    reason: str
    other: str = ""


def requested_backend() -> str:
    """``$LREACT_BACKEND`` normalised (``"auto"`` when unset); a ValueError for unknown names."""
    raw = os.environ.get(BACKEND_ENV_VAR, "").strip().lower()
    if not raw:
        return "auto"
    if raw not in ALIASES:
        raise ValueError(f"LREACT_BACKEND={raw!r} is not a backend this course knows: use "
                         "'auto', 'ollama', 'openai' (llama-server, vLLM, LM Studio) or "
                         "'embedded' (llama.cpp in this process), or unset it")
    return ALIASES[raw]


def configured_base_url():
    """``$LREACT_BASE_URL`` without a trailing slash, or None when unset."""
    return os.environ.get(BASE_URL_ENV_VAR, "").strip().rstrip("/") or None


def ollama_answers(host: str, timeout: float = AUTO_PROBE_TIMEOUT) -> bool:
    """Whether an Ollama server answers ``GET /api/version`` at ``host`` within ``timeout``."""
    import httpx

    try:
        response = httpx.get(host + "/api/version", timeout=timeout)
        return response.status_code == 200 and "version" in response.json()
    except Exception:   # refused, slow, not JSON, not Ollama: all mean "no Ollama here"
        return False


def embedded_unavailable():
    """Why the embedded engine cannot run here (plain words), or None when it can."""

    if gguf.grading():
        return "no model is loaded while an assignment is graded"
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (`make setup` builds it)"
    if os.environ.get(gguf.GGUF_ENV_VAR, "").strip() or gguf.cached_default():
        return None
    if gguf.fetch_allowed():
        return None
    return (f"its model file is not on this machine (set {gguf.GGUF_ENV_VAR}, or run "
            "`make model` where the network allows)")


OLLAMA_HINT = ("for Ollama, start `ollama serve` and `ollama pull {model}`, then restart the "
               "kernel (or set LREACT_BACKEND=ollama)")
EMBEDDED_HINT = ("for the embedded engine (no server), set LREACT_BACKEND=embedded; it needs "
                 "llama-cpp-python and the model file (`make model`)")


def backend_choice(host=None) -> BackendChoice:
    """The backend in force and why.  ``host`` (check_setup's) counts as ``LREACT_BASE_URL``."""

    requested = requested_backend()
    ollama_hint = OLLAMA_HINT.format(model=default_model())
    if requested != "auto":
        other = EMBEDDED_HINT if requested != "embedded" else ollama_hint
        return BackendChoice(requested, f"LREACT_BACKEND={os.environ[BACKEND_ENV_VAR].strip()}",
                             other)
    if host or configured_base_url():
        return BackendChoice("ollama", f"LREACT_BASE_URL={host or configured_base_url()} names "
                             "an Ollama server (LREACT_BACKEND=auto)", EMBEDDED_HINT)

    if gguf.grading():        # the grader's sandbox has no network and loads no model: no probe
        return BackendChoice("ollama", "no model is used while an assignment is graded "
                             "(LREACT_GRADING=1, LREACT_BACKEND=auto)", None)
    where = ollama_host(None)
    if ollama_answers(where):
        return BackendChoice("ollama", f"an Ollama server answers at {where} "
                             "(LREACT_BACKEND=auto)", EMBEDDED_HINT)
    missing = embedded_unavailable()
    if missing is None:
        return BackendChoice("embedded", f"no Ollama server answered at {where} "
                             "(LREACT_BACKEND=auto)", ollama_hint)
    return BackendChoice("ollama", f"no Ollama server answered at {where}, and the embedded "
                         f"engine cannot run: {missing} (LREACT_BACKEND=auto)", EMBEDDED_HINT)


def configured_backend() -> str:
    """``"ollama"``, ``"openai"`` or ``"embedded"``: ``$LREACT_BACKEND``, with ``auto`` (the
    default) resolved as ``backend_choice`` says."""
    return backend_choice().backend


def configured_llm(model=None, **options):
    """The model object of the configured backend: an ``OllamaLLM``, ``OpenAICompatLLM`` or
    ``EmbeddedLLM`` (``model`` is then a GGUF path).

    ``options`` may be ``temperature``, ``top_p``, ``top_k``, ``seed``, ``max_tokens`` (Ollama's
    ``num_predict``), ``stop``, ``timeout``; an Ollama backend also takes its own (``num_ctx``,
    ``min_p``, ...).  Creating the object sends nothing and loads nothing; the first call does.
    """
    backend = configured_backend()
    options = {k: v for k, v in options.items() if v is not None}
    if backend == "ollama":
        from .models import OllamaLLM

        if "max_tokens" in options:
            options["num_predict"] = options.pop("max_tokens")
        return OllamaLLM(model, host=configured_base_url(), **options)
    if "num_predict" in options:
        options["max_tokens"] = options.pop("num_predict")
    unsupported = sorted(set(options) - set(COMMON_OPTIONS))
    if unsupported:
        raise TypeError(f"option(s) {unsupported} exist only for Ollama; the {backend} backend "
                        f"takes {', '.join(COMMON_OPTIONS)}")
    if backend == "embedded":
        from .embedded import EmbeddedLLM

        return EmbeddedLLM(model, **options)

    return OpenAICompatLLM(model, base_url=configured_base_url(), **options)


def describe_backend() -> str:
    """One line: which backend, where, which model, and why (for a notebook's first cell).  An
    unknown ``LREACT_BACKEND`` is said, not raised: the notebook goes on with scripted models."""
    try:
        choice = backend_choice()
    except ValueError as e:
        return f"no model backend: {e}; until then the live cells use scripted models"
    if choice.backend == "ollama":
        from .models import default_model, ollama_host

        where = f"backend ollama at {ollama_host(configured_base_url())}, model {default_model()}"
    elif choice.backend == "embedded":
        from . import gguf

        where = f"backend embedded (llama.cpp in this process), model {gguf.describe()}"
    else:
        from .openai_compat import DEFAULT_BASE_URL

        model = os.environ.get("LREACT_MODEL", "").strip() or "the engine's first model"
        where = f"backend openai at {configured_base_url() or DEFAULT_BASE_URL}, model {model}"
    return f"{where}; because {choice.reason}"
