# WRONG: uses the course's reference chat template instead of writing one
from lreact.chatml import render_chatml as _render

def render_chatml(messages, tools=None):
    """The Qwen2.5 ChatML text of ``messages`` (and ``tools``) as the model reads it, ending with
    the open assistant turn (lecture: "System prompt, chat template and statelessness")."""
    return _render(messages, tools)
