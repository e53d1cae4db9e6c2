"""The Part D test doubles stay faithful to the real things they stand in for."""
import pytest

from lreact.actionchecks import SERVER_TOOLS, RecordingRunner, fake_server, plain_json
from lreact.labchecks import reference
from lreact.actions.mcp_client import MCPConnection


@pytest.fixture(scope="module")
def real():
    with MCPConnection(timeout=20) as c:
        yield c


def test_the_fake_lists_exactly_what_the_real_server_lists(real):
    listed = [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
              for t in real.list_tools().tools]
    assert listed == SERVER_TOOLS


@pytest.mark.parametrize("name, arguments", [
    ("get_weather", {"city": "Berlin"}), ("get_weather", {"city": " oslo", "unit": "fahrenheit"}),
    ("get_weather", {"city": "Atlantis"}), ("arithmetic", {"operation": "subtract", "a": 24, "b": -3}),
    ("arithmetic", {"operation": "divide", "a": 7, "b": 2}),
    ("arithmetic", {"operation": "divide", "a": 1, "b": 0}), ("send_email", {"to": "x"}),
])
def test_the_fake_answers_like_the_real_server(real, name, arguments):
    a = real.call_tool(name, arguments)
    b = fake_server(reference("tools", "get_weather")).call_tool(name, arguments)
    assert a.is_error == b.is_error
    assert [c.text for c in a.content] == [c.text for c in b.content]


def test_plain_json():
    assert plain_json({"a": (1, 2)}) == {"a": [1, 2]}
    with pytest.raises(AssertionError, match="plain JSON"):
        plain_json({"a": object()})


def test_recording_runner():
    run = RecordingRunner(stdout="hi\n")
    assert run("print('hi')", timeout=3)["stdout"] == "hi\n"
    assert run.calls == [("print('hi')", {"timeout": 3})]
