"""The lab's MCP server (Part III, "Standardising tools: MCP (Model Context Protocol)").

Built with the official ``mcp`` SDK and served over stdio, so a client starts it as a subprocess
(no network):  ``python -m lreact.actions.mcp_server``.  It offers the three primitives of the lecture:

- **tools**: ``get_weather(city, unit)`` on the offline weather table of ``lreact.tools`` and
  ``arithmetic(operation, a, b)``: the schemas the client discovers come from these signatures;
- **a resource**: ``weather://cities``, the list of cities the table knows (data the
  application reads, not something the model calls);
- **a prompt**: ``weather_report(city)``, a reusable prompt template a user picks.

A tool that fails raises ``ToolError``; the SDK turns that into a result with ``is_error`` set
and the message as its text, which is what the lab's ``call_mcp_tool`` must pass on.

The server implements its tools itself, on the weather table of ``lreact.tools``, rather than
calling ``lreact.tools.get_weather``: that is the course's reference version of a lab answer,
which a grading run withholds from the student's process and from everything it starts.  Its
``get_weather`` is close to that answer (``@near_copy_of``): the student edition ships this module
compiled.  The
server runs in a process of its own, started by ``lreact.actions.mcp_client.MCPConnection``.
"""
import math
import sys
from typing import Annotated, Literal

# no `from __future__ import annotations`: the SDK reads these annotations at run time
from pydantic import Field

from ..reference import near_copy_of
from ..tools import WEATHER

SERVER_NAME = "lreact-weather"
CITIES_URI = "weather://cities"


def build_server():
    """The MCPServer with its two tools, one resource and one prompt."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError


    server = MCPServer(SERVER_NAME, instructions=(
        "Offline weather for a few cities and exact arithmetic on two numbers."),
        log_level="WARNING")
    by_lower = {name.lower(): name for name in WEATHER}

    @server.tool()
    @near_copy_of("get_weather")
    def get_weather(city: Annotated[str, Field(description="City name, e.g. 'Berlin'")],
                    unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
        """Get the current weather for a city: temperature and conditions."""
        key = by_lower.get(city.strip().lower())
        if key is None:
            raise ToolError(f"unknown city {city!r}; known cities: {', '.join(sorted(WEATHER))}")
        row = WEATHER[key]
        if unit == "fahrenheit":
            return f"{round(row['temp_c'] * 9 / 5 + 32)}°F, {row['condition']}"
        return f"{row['temp_c']}°C, {row['condition']}"

    @server.tool()
    def arithmetic(operation: Literal["add", "subtract", "multiply", "divide"],
                   a: Annotated[float, Field(description="The first number")],
                   b: Annotated[float, Field(description="The second number")]) -> str:
        """Apply one arithmetic operation to two numbers: a + b, a - b, a * b or a / b."""
        if operation == "divide" and b == 0:
            raise ToolError("division by zero: b must not be 0")
        value = {"add": a + b, "subtract": a - b, "multiply": a * b,
                 "divide": a / b if b else math.nan}[operation]
        if not math.isfinite(value):
            raise ToolError("the result is not a finite number")
        return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(value)

    @server.resource(CITIES_URI, name="cities", mime_type="text/plain",
                     description="The cities the weather table knows, one per line.")
    def cities() -> str:
        return "\n".join(sorted(WEATHER))

    @server.prompt()
    def weather_report(city: str) -> str:
        """A short weather report for one city, written with the get_weather tool."""
        return (f"Look up the current weather in {city} with the get_weather tool and write a "
                "two-sentence report for a traveller: what to wear, and whether to take an "
                "umbrella.")

    return server


def main(argv=None) -> int:
    """Serve over stdio until the client closes the pipe."""
    build_server().run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
