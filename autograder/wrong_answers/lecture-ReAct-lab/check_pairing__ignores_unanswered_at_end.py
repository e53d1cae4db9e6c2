# WRONG: does not complain about calls still open when the history ends
def check_pairing(history):
    """Raise ValueError naming the first violation of the pairing invariant
    (lecture: "The Role of tool_call_id"); return None when the history is valid."""
    open_calls = []   # ids of the last assistant turn's calls not answered yet
    seen = set()      # every call id met so far
    for i, m in enumerate(history):
        if isinstance(m, ToolResultMessage):
            if m.tool_call_id in open_calls:
                open_calls.remove(m.tool_call_id)
            elif m.tool_call_id in seen:
                raise ValueError(f"message {i}: a second result for tool call {m.tool_call_id!r}")
            else:
                raise ValueError(f"message {i}: orphan result {m.tool_call_id!r} answers no open tool call")
            continue
        if open_calls:
            raise ValueError(f"message {i} ({m.role}) comes before the results of tool call(s) "
                             f"{open_calls}")
        if isinstance(m, AssistantMessage):
            for call in m.tool_calls:
                if call.id in seen:
                    raise ValueError(f"message {i}: tool call id {call.id!r} is used twice")
                seen.add(call.id)
                open_calls.append(call.id)
    return None
