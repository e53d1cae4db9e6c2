"""What ``check_setup()`` returns: a report that prints as plain sentences and is true when the
model can be used for the lab (lecture: Part IV, "System prompt, chat template and
statelessness", where the notebooks first talk to a real model).  Shared by the checks of each
backend (``setup.py``, ``setup_openai.py``, ``setup_embedded.py``)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SetupReport:
    model: str
    host: str
    server: bool = False
    model_pulled: bool = False
    tools_supported: bool = False
    lines: list = field(default_factory=list)
    backend: str = "ollama"
    why: str = ""                  # which backend, why, and how to get the other (auto)
    tool_call_seen: bool = False   # the tool probe got a tool call back (OpenAI-compatible)
    slow: float = 0.0              # seconds the probe took, when more than the check's timeout
    notes: list = field(default_factory=list)   # ℹ lines: the models, what the engine shows them

    @property
    def ok(self) -> bool:
        return self.server and self.model_pulled and self.tools_supported

    def __bool__(self):
        return self.ok

    def __str__(self):
        return "\n".join(([self.why] if self.why else []) + self.notes + self.lines)

    def __repr__(self):
        return str(self)


FALLBACK_LINE = "  Until then the cells that need the real model say so and use a scripted model."


# The Qwen families the unit supports, per backend, and how each was verified (README.md, "The
# model": the same table).  ``check_setup()`` ends its report with ``models_line``.
QWEN_SUPPORT = {
    "ollama": "Qwen2.5 (default qwen2.5:7b), Qwen3 (qwen3:*), Qwen3.5 (qwen3.5:*), chosen by "
              "LREACT_MODEL",
    "openai": "Qwen2.5, Qwen3, Qwen3.5, whichever model the engine serves (LREACT_MODEL names it)",
    "embedded": "Qwen2.5 0.5B (default), or a Qwen3 / Qwen3.5 GGUF file named by LREACT_GGUF",
}
VERIFIED = ("verified: Qwen2.5 on recorded exchanges and its template; Qwen3 and Qwen3.5 only "
            "on constructed exchanges and traces in their documented formats, and through "
            "llama.cpp with a small stand-in model (no Qwen3 weights run where the course is "
            "built)")


def models_line(backend: str) -> str:
    """One line: the Qwen models this backend runs for the unit, thinking, and what was verified."""
    which = QWEN_SUPPORT.get(backend, QWEN_SUPPORT["ollama"])
    return (f"ℹ Models for this backend: {which}; thinking (Qwen3, Qwen3.5) by LREACT_THINK="
            f"on|off|auto (default auto: the model's own). {VERIFIED}.")

