# WRONG: returns the bare error message without 'ERROR: '
def execute_tool_call(call, tools, registry):
    """Validate, run, and return a ToolResultMessage carrying the call's id; any exception
    becomes "ERROR: ..." content (lecture: "Error Recovery in the Loop")."""
    try:
        arguments = validate_tool_call(call, tools)
        content = str(registry[call.name](**arguments))
    except Exception as e:  # the model gets to see every failure
        content = str(e)
    return ToolResultMessage(tool_call_id=call.id, content=content)
