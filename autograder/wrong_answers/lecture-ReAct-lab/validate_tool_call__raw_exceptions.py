# WRONG: lets json and jsonschema raise their own errors instead of ToolCallError
def validate_tool_call(call, tools):
    """The three checks in order: valid JSON, tool exists, arguments match the schema.
    Returns the parsed arguments; raises ToolCallError naming the failed check
    (lecture: "Validating Tool Calls: Parsing vs. Policy")."""
    arguments = json.loads(call.arguments)
    schemas = {tool["function"]["name"]: tool["function"].get("parameters", {}) for tool in tools}
    if call.name not in schemas:
        raise ToolCallError(f"unknown tool: {call.name!r} is not one of {sorted(schemas)}")
    jsonschema.validate(arguments, schemas[call.name])
    return arguments
