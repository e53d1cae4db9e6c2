"""lreact: the helper package of the L-ReAct course unit (the ReAct loop and tool use).

One module per idea of the lecture:

- ``messages``  Part IV, message types and their Ollama wire format
- ``models``    the ``llm(messages, tools) -> AssistantMessage`` protocol: ScriptedLLM, OllamaLLM
- ``openai_compat``  OpenAICompatLLM: the same protocol on llama-server, vLLM, LM Studio
- ``engine_errors``  what an OpenAI-compatible engine's failure means (refused feature, crash, stop)
- ``embedded``  EmbeddedLLM: the same protocol on llama.cpp inside this process (no server);
                ``embedded_models`` (one loaded model per file), ``engine_text`` (chat template,
                ``<tool_call>`` parsing), ``gguf`` (the model file, fetched once)
- ``backends``  ``configured_llm()``: the backend chosen by LREACT_BACKEND / LREACT_BASE_URL
                (``auto``: Ollama when it answers, else the embedded engine)
- ``setup``     ``check_setup()``: is the server running, is the model there, does it call tools
                (``setup_openai``: the checks of an OpenAI-compatible engine; ``setup_embedded``:
                of the embedded one)
- ``harness``   second lab, Part C: format errors, repetition, RunResult, compaction (reference)
- ``mistral``   Part IV, the Mistral tool template ([AVAILABLE_TOOLS], [TOOL_CALLS]) as text
- ``tools``     Part III, example tools (offline weather table, safe arithmetic) and their schemas
- ``sampling``  Part I, reference softmax / temperature / top-k / top-p / sampling
- ``chatml``    Part IV, the Qwen2.5 chat template as text (Ollama's qwen2.5 template)
- ``ollama_text``  Part IV, what Ollama's server changes before that template (tools through its
                Go structs, the model's default system prompt)
- ``workload``  the overview's time estimate per notebook, from its words and cells
- ``grammar``   Part I, a toy vocabulary and grammar for constrained decoding, and
                ``constrained_step``: the lecture's masked distribution P' on it
- ``checks``    comparison helpers the graded tests use (plain numbers, never ``__eq__``)
- ``labchecks`` the lab's test helpers (messages as plain tuples, what the model received,
                a chi-square test, ``reference()``: private copies of the reference code)
- ``traces``    the Berlin trace and a longer multi-tool run, with token counts (Part IV)
- ``examples``  the lecture's example next-token distributions (named tokens, logits)
- ``figures``   the lecture's pictures (the panels the widgets redraw, the static figures)
- ``canvas``    matplotlib's Agg canvas into PNG bytes, and a blitter for fast redraws
- ``widgets``   the lecture's interactive widgets (ipywidgets), one call each
- ``next_token``  Part I, a real next-token distribution for the widgets (any backend)
- ``lens``      Part I, the probability lens: a reply coloured token by token (embedded model);
                ``lens_engines`` the same from an Ollama or OpenAI-compatible server's top-k
- ``student_decode``  first lab, A.8: your sampler and constrained decoder on a real model
- ``tool_call_rates``  second lab, C.3: does sampling break tool calls? (``call_grammar``: the
                engine-side grammar for "grammar on")
- ``recordings``  recorded real-model runs (model, engine and template digests); ``drift``
                replays them on the configured model and says what changed
- ``mcp_server``  Part III, the lab's MCP server (official SDK, stdio): tools, a resource, a prompt
- ``mcp_client``  MCPConnection: a blocking MCP client with timeouts that records the JSON-RPC
- ``textreact``  Part II, ReAct in plain text: the exemplar, the stop sequence, text completion
- ``methods``   Part II, ReAct against Act and CoT on the lab's tools (second lab, D.2)
- ``context_budget``  Part IV, the engine's own token counts and its prompt (KV) cache measured
- ``codeact``   Part III, run_python: one code action in a fresh, sandboxed interpreter (Linux
                with bubblewrap; limits only on macOS; time and output limits on Windows)
- ``actionchecks``  the second lab's Part D test helpers (plain JSON, test doubles)
"""
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
from .backends import configured_backend, configured_llm, describe_backend
from .models import (
    DEFAULT_MODEL,
    ModelError,
    OllamaError,
    OllamaLLM,
    ScriptedLLM,
    ScriptExhaustedError,
    default_model,
)
from .openai_compat import EngineError, OpenAICompatLLM
from .setup import check_setup
from .mcp_client import MCPConnection
from .codeact import run_python
from .textreact import ScriptedCompletion

__all__ = [
    "AssistantMessage", "Message", "RunResult", "SystemMessage", "ToolCall", "ToolCallError",
    "ToolResultMessage", "UserMessage", "message_from_wire", "messages_to_wire",
    "DEFAULT_MODEL", "OllamaError", "OllamaLLM", "ScriptedLLM", "ScriptExhaustedError",
    "default_model", "check_setup",
    "ModelError", "EngineError", "OpenAICompatLLM", "configured_llm", "configured_backend",
    "describe_backend",
    "MCPConnection", "run_python", "ScriptedCompletion",
]


def __getattr__(name):
    """``lreact.EmbeddedLLM`` on first use only: importing lreact (as the grader does) never
    imports the embedded engine."""
    if name == "EmbeddedLLM":
        from .embedded import EmbeddedLLM

        return EmbeddedLLM
    raise AttributeError(f"module 'lreact' has no attribute {name!r}")
