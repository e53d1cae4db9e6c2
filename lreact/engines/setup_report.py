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

    @property
    def ok(self) -> bool:
        return self.server and self.model_pulled and self.tools_supported

    def __bool__(self):
        return self.ok

    def __str__(self):
        return "\n".join(([self.why] if self.why else []) + self.lines)

    def __repr__(self):
        return str(self)


FALLBACK_LINE = "  Until then the cells that need the real model say so and use a scripted model."
