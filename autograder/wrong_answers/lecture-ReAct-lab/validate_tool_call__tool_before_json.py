# WRONG: checks the tool name before the JSON
def validate_tool_call(call, tools):
    """The three checks in order: valid JSON, tool exists, arguments match the schema.
    Returns the parsed arguments; raises ToolCallError naming the failed check
    (lecture: "Validating Tool Calls: Parsing vs. Policy")."""
    schemas = {tool["function"]["name"]: tool["function"].get("parameters", {}) for tool in tools}
    if call.name not in schemas:
        raise ToolCallError(f"unknown tool: {call.name!r} is not one of {sorted(schemas)}")
    try:
        arguments = json.loads(call.arguments)
    except (TypeError, ValueError) as e:
        raise ToolCallError(f"invalid JSON: the arguments {call.arguments!r} do not parse ({e})") from None
    try:
        jsonschema.validate(arguments, schemas[call.name])
    except jsonschema.ValidationError as e:
        raise ToolCallError(f"schema violation: arguments of {call.name!r}: {e.message}") from None
    return arguments
