# WRONG: asks the lab's test helper for its private copy of the reference chat template
from lreact.labchecks import reference

def render_chatml(messages, tools=None):
    """The Qwen2.5 ChatML text of ``messages`` (and ``tools``) as the model reads it, ending with
    the open assistant turn (lecture: "System prompt, chat template and statelessness")."""
    return reference("chatml", "render_chatml")(messages, tools)
