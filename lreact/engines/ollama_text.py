"""The text Ollama's server builds for Qwen2.5, beside the course's ``render_chatml`` (lecture
Part IV, "System prompt, chat template and statelessness").

``lreact.chatml.render_chatml`` (the renderer the first lab grades, B.6) follows the *template*
of Ollama's ``qwen2.5`` model (Ollama library blob eb4402837c78) applied to the messages and tool
dicts exactly as the runtime holds them.  Ollama's server does two more things before that
template runs, and ``ollama_qwen_text`` adds both:

- **The tools go through Go structs.**  Each tool is decoded into Ollama's ``api.Tool`` and
  encoded again with Go's ``encoding/json``: the parameters in the struct's field order ``type,
  $defs, items, required, properties``; each property as ``anyOf, type, items, description,
  enum, ...``; properties sorted by name (a Go map, as the template sees it); fields the structs
  do not know, such as ``additionalProperties``, dropped; ``<``, ``>`` and ``&`` escaped as
  ``\\u003c`` ... (``lreact.mistral.tool_json`` does the same for Mistral's template).
- **A default system prompt.**  When the first message is not a system message, the server puts
  the model's default system prompt (the ``SYSTEM`` line of its Modelfile, ``ollama show
  --modelfile``) first.  ``default_system`` is that text; pass the one your model shows.

Both functions keep the template's quirk: an assistant turn with text *and* calls shows only the
text, so its calls never reach the model (Qwen's own Hugging Face template writes both).
"""
from __future__ import annotations

import json

from ..chatml import render_chatml
from ..messages import SystemMessage
from ..mistral import _go_json, tool_json

# Qwen2.5's own default (its Hugging Face chat template); check your model's with
# `ollama show --modelfile qwen2.5:7b` (the SYSTEM line) and pass that instead if it differs.
QWEN25_DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."


def ollama_qwen_text(messages, tools=None, *, default_system=QWEN25_DEFAULT_SYSTEM) -> str:
    """The ChatML text Ollama's server renders for Qwen2.5 from ``messages`` and ``tools``."""
    messages = list(messages)
    if messages and not isinstance(messages[0], SystemMessage) and default_system:
        messages.insert(0, SystemMessage(default_system))
    served = [tool_json(t) for t in tools or []]
    text = render_chatml(messages, served or None)
    for tool in served:
        plain = json.dumps(tool["function"], ensure_ascii=False, separators=(",", ":"))
        text = text.replace(plain, _go_json(tool["function"]), 1)
    return text
