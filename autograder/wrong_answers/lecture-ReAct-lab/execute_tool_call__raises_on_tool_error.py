# WRONG: turns validation errors into results but lets tool exceptions escape
def execute_tool_call(call, tools, registry):
    """Validate, run, and return a ToolResultMessage carrying the call's id; any exception
    becomes "ERROR: ..." content (lecture: "Error Recovery in the Loop")."""
    try:
        arguments = validate_tool_call(call, tools)
    except ToolCallError as e:
        return ToolResultMessage(tool_call_id=call.id, content=f"ERROR: {e}")
    content = str(registry[call.name](**arguments))
    return ToolResultMessage(tool_call_id=call.id, content=content)
