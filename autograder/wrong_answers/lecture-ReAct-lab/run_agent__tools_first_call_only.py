# WRONG: advertises the tools on the first call only
def run_agent(user_input, llm, tools, registry, *, history=None, max_steps=8):
    """The Prompt-ToolLoop: call the model on the whole history, run its tool calls, feed the
    results back, until a text-only answer or the step budget (lecture: "The Execution Loop")."""
    if history is None:
        history = [SystemMessage(SYSTEM_PROMPT)]
    history.append(UserMessage(user_input))
    for step in range(max_steps):
        response = llm(history, tools if step == 0 else None)
        history.append(response)
        if not response.tool_calls:
            return response.text
        for call in response.tool_calls:
            history.append(execute_tool_call(call, tools, registry))
    return "stopped: step budget exhausted"
