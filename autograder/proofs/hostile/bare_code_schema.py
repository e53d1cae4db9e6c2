# HOSTILE: lecture-ReAct-lab2 code_tool_schema: a run_python schema with no description and no parameters, and a run_agent (defined here, after the pasted one) that runs every call without validating it, to earn the Exercise 11 point without a right schema
def code_tool_schema(timeout, max_output):
    return {"type": "function", "function": {"name": "run_python"}}


def run_agent(user_input, llm, tools, registry, *, history=None, max_steps=8, execute_fn=None):
    history = [SystemMessage(SYSTEM_PROMPT)] if history is None else history
    history.append(UserMessage(user_input))
    for _ in range(max_steps):
        response = llm(history, tools)
        history.append(response)
        if not response.tool_calls:
            return response.text
        for call in response.tool_calls:
            history.append(ToolResultMessage(call.id, str(registry[call.name](**json.loads(call.arguments)))))
    return "stopped: step budget exhausted"
