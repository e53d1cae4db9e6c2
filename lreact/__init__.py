"""lreact: the helper package of the L-ReAct course unit (the ReAct loop and tool use).

The folders, and what each may import:

- ``lreact/``          the course's concepts, one module per idea of the lecture, and the checks
                       the test cells use; imports only these, and ``engines/`` or ``actions/``
                       where a concept runs on a model or a tool (never ``views/``)
- ``lreact/engines/``  the model protocol ``llm(messages, tools) -> AssistantMessage`` on real
                       engines (Ollama, OpenAI-compatible, llama.cpp in this process) and the
                       set-up check; imports the concepts (``check_setup(drift=True)`` alone
                       reaches ``views/drift.py``)
- ``lreact/actions/``  what an agent acts with beyond a function call: MCP servers, code as the
                       action, and the isolation primitive it shares with the grader; imports
                       the concepts
- ``lreact/views/``    what the lecture shows and measures (widgets, figures, the probability
                       lens, recordings, live measurements); imports anything in lreact

The concepts (``lreact/``):

- ``messages``     Part IV, the message types and their wire format
- ``replies``      Part II and III, a raw reply taken apart: the thinking span, the JSON and XML
                   call grammars of Qwen (``parse_reply``; reference code for the second lab)
- ``sampling``     Part I, softmax, temperature, top-k, top-p, sampling (reference code)
- ``grammar``      Part I, a toy vocabulary and grammar for constrained decoding
- ``chatml``       Part IV, the Qwen2.5 chat template as text (reference code)
- ``mistral``      Part IV, the Mistral tool template as text
- ``tools``        Part III, the example tools (offline weather, safe arithmetic) and schemas
- ``harness``      second lab, Part C: format errors, repetition, RunResult, compaction
- ``textreact``    Part II, ReAct in plain text: exemplar, stop sequence, text completion
- ``traces``       Part IV, the Berlin trace and a longer run, with token counts
- ``reference``    how the reference implementations are marked and kept from answers
- ``checks``, ``labchecks``, ``answercheck``, ``actionchecks``: what the test cells import
  (plain comparisons, the lab's loop checks, the exercises' practice keys, Part D's doubles)

Import the names below from the top (``from lreact import ScriptedLLM``); each sub-package's
``__init__`` lists its modules.
"""
from .actions.codeact import run_python
from .actions.mcp_client import MCPConnection
from .engines.backends import configured_backend, configured_llm, describe_backend
from .engines.models import (
    DEFAULT_MODEL,
    ModelError,
    OllamaError,
    OllamaLLM,
    ScriptedLLM,
    ScriptExhaustedError,
    default_model,
)
from .engines.openai_compat import EngineError, OpenAICompatLLM
from .engines.setup import check_setup
from .messages import (
    AssistantMessage,
    Message,
    RunResult,
    SystemMessage,
    ToolCall,
    ToolCallError,
    ToolResultMessage,
    UserMessage,
    message_from_wire,
    messages_to_wire,
)
from .replies import parse_reply
from .textreact import ScriptedCompletion

__all__ = [
    "AssistantMessage", "Message", "RunResult", "SystemMessage", "ToolCall", "ToolCallError",
    "ToolResultMessage", "UserMessage", "message_from_wire", "messages_to_wire",
    "DEFAULT_MODEL", "OllamaError", "OllamaLLM", "ScriptedLLM", "ScriptExhaustedError",
    "default_model", "check_setup",
    "ModelError", "EngineError", "OpenAICompatLLM", "configured_llm", "configured_backend",
    "describe_backend",
    "MCPConnection", "run_python", "ScriptedCompletion", "parse_reply",
]


def __getattr__(name):
    """``lreact.EmbeddedLLM`` on first use only: importing lreact (as the grader does) never
    imports the embedded engine."""
    if name == "EmbeddedLLM":
        from .engines.embedded import EmbeddedLLM

        return EmbeddedLLM
    raise AttributeError(f"module 'lreact' has no attribute {name!r}")
