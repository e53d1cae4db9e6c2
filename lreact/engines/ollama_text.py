"""The text Ollama's server builds for Qwen2.5, beside the course's ``render_chatml`` (lecture
Part IV, "System prompt, chat template and statelessness").  It depends on Ollama's version.

``lreact.chatml.render_chatml`` (the renderer lab 2 grades in C.0; optional in the first lab, B.6) follows the *template*
of Ollama's ``qwen2.5`` model (Ollama library blob eb4402837c78) applied to the messages and tool
dicts exactly as the runtime holds them.  Ollama's server does more before and while that
template runs, and ``ollama_qwen_text(..., version=)`` reproduces it (checked against the
server's source, tags v0.12.0 to v0.33.0-rc2: research/qwen-engines.md, section 1):

- **The tools go through Go structs.**  Each tool is decoded into Ollama's own types; fields the
  structs do not know, such as ``additionalProperties``, are dropped, properties come out sorted
  by name (a Go map).  How the template's line ``{"type": "function", "function": {{ .Function }}}``
  prints such a struct depends on the version:

  - **v0.12.0 to v0.13.5**: the function struct has a ``String()`` method that writes JSON, so
    the line is ``encoding/json`` output: the parameters in the struct's field order ``type,
    $defs, items, required, properties``, each property as ``type, items, description, enum``,
    ``<``, ``>`` and ``&`` escaped as ``\\u003c`` ... (``lreact.mistral.tool_json`` does the
    same for Mistral's template);
  - **v0.14.0 and later** (#13525 moved the template onto new structs without that method;
    ollama/ollama#14601, unfixed in v0.33.0-rc2): Go prints the struct with ``fmt``'s ``%v``:
    ``{get_weather Get the current ... {object <nil> <nil> [city] {"city":{...}}}}``: name,
    description, then the parameters' type, ``$defs`` and ``items`` (``<nil>`` when absent), the
    required names in brackets, and only the properties as JSON.  The model reads that, not JSON.

- **A default system prompt.**  When the first message is not a system message, the server puts
  the model's default system prompt (the ``SYSTEM`` line of its Modelfile, ``ollama show
  --modelfile``) first.  ``default_system`` is that text; pass the one your model shows.

Both keep the template's quirk: an assistant turn with text *and* calls shows only the text, so
its calls never reach the model (Qwen's own Hugging Face template writes both).  The calls in the
history (``{{ .Function.Arguments }}``) are JSON in every version.  For tool work on Qwen, an
engine that renders the model's own Jinja template (llama-server ``--jinja``, vLLM, the embedded
backend with the GGUF file's template) shows the tools as the model was trained to read them;
Ollama since v0.14 does not, for this template.
"""
from __future__ import annotations

import json
import re

from ..chatml import render_chatml
from ..messages import SystemMessage
from ..mistral import _go_json, tool_json

# Qwen2.5's own default (its Hugging Face chat template); check your model's with
# `ollama show --modelfile qwen2.5:7b` (the SYSTEM line) and pass that instead if it differs.
QWEN25_DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
NEWEST_CHECKED = "0.33.0"            # the newest Ollama whose source this module was checked against
STRUCTS_SINCE = (0, 14)              # the first version that prints the function as a Go struct


def parse_version(version) -> tuple:
    """``"0.13.5"``, ``"v0.14.0-rc0"`` or ``(0, 14)`` as ``(major, minor)``."""
    if isinstance(version, tuple) and len(version) >= 2 and all(isinstance(v, int) for v in version):
        return version[:2]
    found = re.match(r"v?(\d+)\.(\d+)", str(version).strip()) if isinstance(version, str) else None
    if found is None:
        raise ValueError(f"not an Ollama version: {version!r} (write it as `ollama --version` "
                         "prints it, e.g. '0.13.5')")
    return int(found.group(1)), int(found.group(2))


def go_struct_text(function: dict) -> str:
    """How Ollama v0.14+ prints a tool's function struct with ``%v`` (see the module's docstring)."""
    params = function.get("parameters") or {}
    for field in ("$defs", "items"):
        if params.get(field) is not None:
            raise ValueError(f"a tool whose parameters have {field!r} prints Go map syntax, which "
                             "this function does not reproduce")
    required = " ".join(str(r) for r in params.get("required") or [])
    properties = tool_json({"type": "function", "function": {"name": "", "parameters": params}})
    props = properties["function"]["parameters"].get("properties")
    props_text = _go_json(props) if props is not None else "null"   # its String() is JSON
    return (f"{{{function.get('name', '')} {function.get('description', '')} "
            f"{{{params.get('type', '')} <nil> <nil> [{required}] {props_text}}}}}")


def ollama_qwen_text(messages, tools=None, *, default_system=QWEN25_DEFAULT_SYSTEM,
                     version=NEWEST_CHECKED, render=None) -> str:
    """The ChatML text Ollama's server ``version`` (default: the newest checked) renders for
    Qwen2.5 from ``messages`` and ``tools``; ``render`` is the template renderer (default
    ``lreact.chatml.render_chatml``; a lab, where that one is switched off, passes a copy)."""
    structs = parse_version(version) >= STRUCTS_SINCE
    messages = list(messages)
    if messages and not isinstance(messages[0], SystemMessage) and default_system:
        messages.insert(0, SystemMessage(default_system))
    served = [tool_json(t) for t in tools or []]
    text = (render or render_chatml)(messages, served or None)
    for tool in served:
        plain = json.dumps(tool["function"], ensure_ascii=False, separators=(",", ":"))
        shown = go_struct_text(tool["function"]) if structs else _go_json(tool["function"])
        text = text.replace(plain, shown, 1)
    return text
