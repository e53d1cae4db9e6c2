# WRONG: compares the sets of call ids and result ids at the end, ignoring order and counts
def check_pairing(history):
    """Raise ValueError naming the first violation of the pairing invariant
    (lecture: "The role of tool_call_id"); return None when the history is valid."""
    calls, results = set(), set()
    for m in history:
        if isinstance(m, AssistantMessage):
            calls.update(c.id for c in m.tool_calls)
        elif isinstance(m, ToolResultMessage):
            results.add(m.tool_call_id)
    if calls - results:
        raise ValueError(f"unanswered tool calls: {sorted(calls - results)}")
    if results - calls:
        raise ValueError(f"orphan results: {sorted(results - calls)}")
