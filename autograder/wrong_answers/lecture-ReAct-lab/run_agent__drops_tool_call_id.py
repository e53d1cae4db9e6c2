# WRONG: re-wraps the result without the call's id
def run_agent(user_input, llm, tools, registry, *, history=None, max_steps=8):
    """The Prompt-ToolLoop: call the model on the whole history, run its tool calls, feed the
    results back, until a text-only answer or the step budget (lecture: "The Execution Loop")."""
    if history is None:
        history = [SystemMessage(SYSTEM_PROMPT)]
    history.append(UserMessage(user_input))
    for _ in range(max_steps):
        response = llm(history, tools)
        history.append(response)
        if not response.tool_calls:
            return response.text
        for call in response.tool_calls:
            result = execute_tool_call(call, tools, registry)
            history.append(ToolResultMessage(tool_call_id="", content=result.content))
    return "stopped: step budget exhausted"
