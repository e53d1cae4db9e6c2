"""``check_setup()`` for the embedded backend (``lreact.engines.embedded``: llama.cpp in this process).

In plain words and without raising: is llama-cpp-python installed, which GGUF file (fetched now
with a progress bar if it is the default model and not yet on the machine), does it load (the
time it took, or that it was already loaded: the first live cell then does not load it again),
how prompts are rendered (the model's own chat template or the course's ChatML), and does the
engine answer (one generated token).  No server is involved, so ``timeout`` does not apply to
loading; the one-token answer has it.
"""
from __future__ import annotations

import importlib.util

from .gguf import locate
from .models import ModelError
from .setup_report import SetupReport

FALLBACK = "  Until then the cells that need the real model say so and use a scripted model."


def check_embedded(model=None, timeout: float = 5.0):
    """A SetupReport for the embedded engine (``model``: a GGUF path, default ``$LREACT_GGUF``
    or the course's default model)."""
    from .embedded import MODELS, EmbeddedLLM

    llm = EmbeddedLLM(model, timeout=max(float(timeout), 30.0), temperature=0, max_tokens=1)
    report = SetupReport(model=llm.model, host="this process (llama.cpp)", backend="embedded")
    say = report.lines.append
    if importlib.util.find_spec("llama_cpp") is None:
        say("✗ llama-cpp-python is not installed, so the embedded engine cannot run. Run `make "
            "setup` (it builds it, a few minutes the first time) or `pip install "
            "llama-cpp-python`, then restart the kernel.")
        say(FALLBACK)
        return report
    report.server = True
    try:
        found = locate(download=True) if model is None else None
    except ModelError as e:
        say(f"✗ {e}")
        say(FALLBACK)
        return report
    if found is not None:
        llm.model_path = found.path
        how = {"LREACT_GGUF": "set by LREACT_GGUF", "cache": "from the Hugging Face cache",
               "downloaded": "just downloaded into the Hugging Face cache"}[found.source]
        say(f"✓ Model file {found.name} ({how}): {found.path}")
    else:
        say(f"✓ Model file {llm.model}: {llm.model_path}")
    already = MODELS.loaded(llm.model_path, llm.n_ctx) if llm.model_path else False
    try:
        loaded = llm.loaded()
    except ModelError as e:
        say(f"✗ {e}")
        say(FALLBACK)
        return report
    report.model_pulled = True
    say("✓ Loaded by llama.cpp in this process "
        + ("(already loaded: reused)" if already else f"in {loaded.load_seconds:.1f} s")
        + f"; context window {loaded.n_ctx} tokens.")
    try:
        llm.complete("Hello", max_tokens=1)
    except ModelError as e:
        say(f"✗ The engine loaded the model but could not generate: {e}")
        return report
    report.tools_supported = True
    say(f"✓ It generates. Prompts are rendered with {loaded.template.source}; tool calls are "
        "read from the <tool_call> blocks the model writes.")
    return report
