"""What an agent acts with beyond one function call (lecture Part III): tools offered over MCP,
and code as the action.  Imports the course's concepts only.

- ``mcp_server``   the lab's MCP server (official SDK, stdio): tools, a resource, a prompt
- ``mcp_client``   MCPConnection: a blocking MCP client with timeouts that records the JSON-RPC
- ``codeact``      ``run_python``: one code action in a fresh, limited interpreter
- ``isolation``    bubblewrap and per-run user ids: the primitive ``codeact`` and the grader's
                   sandbox (``autograder/sandbox/launch.py``) share
"""
