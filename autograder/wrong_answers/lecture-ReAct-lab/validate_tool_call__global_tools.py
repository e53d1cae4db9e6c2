# WRONG: checks against the global TOOLS, not the tools passed in
def validate_tool_call(call, tools):
    """The three checks in order: valid JSON, tool exists, arguments match the schema.
    Returns the parsed arguments; raises ToolCallError naming the failed check
    (lecture: "Validating Tool Calls: Parsing vs. Policy")."""
    try:
        arguments = json.loads(call.arguments)
    except (TypeError, ValueError) as e:
        raise ToolCallError(f"invalid JSON: the arguments {call.arguments!r} do not parse ({e})") from None
    schemas = {tool["function"]["name"]: tool["function"].get("parameters", {}) for tool in TOOLS}
    if call.name not in schemas:
        raise ToolCallError(f"unknown tool: {call.name!r} is not one of {sorted(schemas)}")
    try:
        jsonschema.validate(arguments, schemas[call.name])
    except jsonschema.ValidationError as e:
        raise ToolCallError(f"schema violation: arguments of {call.name!r}: {e.message}") from None
    return arguments
