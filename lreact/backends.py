"""Which model backend the notebooks use, chosen without touching code.

Environment variables (read at each call, so a notebook restart is enough after a change):

- ``LREACT_BACKEND``: ``ollama`` (default) or ``openai`` (any OpenAI-compatible engine:
  llama.cpp's ``llama-server``, vLLM, LM Studio; ``llama-server``, ``llamacpp``, ``vllm`` and
  ``lmstudio`` are accepted as names for it);
- ``LREACT_BASE_URL``: the server address; for Ollama its host (default ``$OLLAMA_HOST`` or
  ``http://127.0.0.1:11434``), for ``openai`` the ``/v1`` base URL (default
  ``http://127.0.0.1:8080/v1``, llama-server's);
- ``LREACT_MODEL``: the model name (Ollama default ``lreact.DEFAULT_MODEL``; for ``openai`` the
  first model the engine lists);
- ``LREACT_API_KEY``: only if the engine was started with a key.

``configured_llm(**options)`` returns the model object; ``lreact.check_setup()`` checks the same
backend.  Lecture: Part III, "Function calling: defining and advertising tools" (the inference
engine is not part of the runtime: the loop only sends it requests).
"""
from __future__ import annotations

import os

BACKEND_ENV_VAR = "LREACT_BACKEND"
BASE_URL_ENV_VAR = "LREACT_BASE_URL"
BACKENDS = ("ollama", "openai")
ALIASES = {"ollama": "ollama", "openai": "openai", "openai-compatible": "openai",
           "llama-server": "openai", "llamacpp": "openai", "llama.cpp": "openai",
           "vllm": "openai", "lmstudio": "openai", "lm-studio": "openai"}

# options every backend understands, and their name in each backend
COMMON_OPTIONS = ("temperature", "top_p", "top_k", "seed", "max_tokens", "stop", "timeout")


def configured_backend() -> str:
    """``"ollama"`` or ``"openai"``, from ``$LREACT_BACKEND`` (default ``"ollama"``)."""
    raw = os.environ.get(BACKEND_ENV_VAR, "").strip().lower()
    if not raw:
        return "ollama"
    if raw not in ALIASES:
        raise ValueError(f"LREACT_BACKEND={raw!r} is not a backend this course knows: use "
                         "'ollama' or 'openai' (llama-server, vLLM, LM Studio), or unset it")
    return ALIASES[raw]


def configured_base_url():
    """``$LREACT_BASE_URL`` without a trailing slash, or None when unset."""
    return os.environ.get(BASE_URL_ENV_VAR, "").strip().rstrip("/") or None


def configured_llm(model=None, **options):
    """The model object of the configured backend: an ``OllamaLLM`` or an ``OpenAICompatLLM``.

    ``options`` may be ``temperature``, ``top_p``, ``top_k``, ``seed``, ``max_tokens`` (Ollama's
    ``num_predict``), ``stop``, ``timeout``; an Ollama backend also takes its own (``num_ctx``,
    ``min_p``, ...).  Creating the object sends nothing; the first call does.
    """
    backend = configured_backend()
    options = {k: v for k, v in options.items() if v is not None}
    if backend == "ollama":
        from .models import OllamaLLM

        if "max_tokens" in options:
            options["num_predict"] = options.pop("max_tokens")
        return OllamaLLM(model, host=configured_base_url(), **options)
    from .openai_compat import OpenAICompatLLM

    if "num_predict" in options:
        options["max_tokens"] = options.pop("num_predict")
    unsupported = sorted(set(options) - set(COMMON_OPTIONS))
    if unsupported:
        raise TypeError(f"option(s) {unsupported} exist only for Ollama; an OpenAI-compatible "
                        f"engine takes {', '.join(COMMON_OPTIONS)}")
    return OpenAICompatLLM(model, base_url=configured_base_url(), **options)


def describe_backend() -> str:
    """One line: which backend, where, which model (for a notebook's first cell)."""
    backend = configured_backend()
    if backend == "ollama":
        from .models import default_model, ollama_host

        return f"backend ollama at {ollama_host(configured_base_url())}, model {default_model()}"
    from .openai_compat import DEFAULT_BASE_URL

    model = os.environ.get("LREACT_MODEL", "").strip() or "the engine's first model"
    return f"backend openai at {configured_base_url() or DEFAULT_BASE_URL}, model {model}"
