# WRONG: puts tool results in a 'tool' turn instead of a user turn with <tool_response>
def render_chatml(messages, tools=None):
    """The Qwen2.5 ChatML text of ``messages`` (and ``tools``) as the model reads it, ending with
    the open assistant turn (lecture: "System Prompt, Chat Template & Statelessness")."""
    def compact(obj, sort_keys=False):
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)

    messages = list(messages)
    systems = [m.content for m in messages if isinstance(m, SystemMessage)]
    rest = [m for m in messages if not isinstance(m, SystemMessage)]
    out = []
    if systems or tools:
        out.append("<|im_start|>system")
        if systems:
            out.append("\n" + "\n\n".join(systems))
        if tools:
            out.append("\n\n" + TOOLS_PREAMBLE)
            for tool in tools:
                out.append('\n{"type": "function", "function": ' + compact(tool["function"]) + "}")
            out.append("\n" + TOOLS_POSTAMBLE)
        out.append("<|im_end|>\n")
    for i, m in enumerate(rest):
        last = i == len(rest) - 1
        if isinstance(m, UserMessage):
            out.append(f"<|im_start|>user\n{m.content}<|im_end|>\n")
        elif isinstance(m, ToolResultMessage):
            out.append(f"<|im_start|>tool\n{m.content}<|im_end|>\n")
        elif isinstance(m, AssistantMessage):
            out.append("<|im_start|>assistant\n")
            if m.text:
                out.append(m.text)
            elif m.tool_calls:
                out.append("<tool_call>\n")
                for call in m.tool_calls:
                    try:
                        arguments = compact(json.loads(call.arguments), sort_keys=True)
                    except ValueError:
                        arguments = call.arguments
                    out.append(f'{{"name": "{call.name}", "arguments": {arguments}}}\n')
                out.append("</tool_call>")
            if not last:
                out.append("<|im_end|>\n")
        if last and not isinstance(m, AssistantMessage):
            out.append("<|im_start|>assistant\n")
    return "".join(out)
