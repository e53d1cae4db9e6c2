"""A small synchronous MCP client for notebooks and tests (Part III, "Standardising tools: MCP
(Model Context Protocol)": discovery and transport).

The official ``mcp`` SDK's client is async only, and a Jupyter cell already runs inside an event
loop (``asyncio.run`` there raises).  ``MCPConnection`` therefore runs the SDK's
``stdio_client`` + ``ClientSession`` on an event loop of its own, in a background thread, and
offers plain blocking methods that return the SDK's own result objects (snake_case attributes:
``list_tools().tools[i].input_schema``, ``call_tool(...).content[i].text``, ``.is_error``)::

    with MCPConnection() as conn:              # starts `python -m lreact.actions.mcp_server`
        listing = conn.list_tools()
        result = conn.call_tool("get_weather", {"city": "Berlin"})
        for direction, message in conn.messages:   # the JSON-RPC traffic, both ways
            ...

Every request has a timeout (the SDK has none by default): a server that does not answer
raises ``MCPTimeout`` instead of hanging the notebook.  The JSON-RPC messages are recorded by
wrapping the transport's read and write streams (the SDK has no hook for raw messages).
The server's stderr goes to a temporary file (``server_log()``), never into the notebook.
"""
from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import threading
from concurrent.futures import TimeoutError as FutureTimeout

DEFAULT_TIMEOUT = 10.0   # seconds per request
START_TIMEOUT = 30.0     # seconds to start the server and finish `initialize`


class MCPClientError(RuntimeError):
    """The MCP server could not be started or answered with a protocol error."""


class MCPTimeout(MCPClientError):
    """The MCP server did not answer within the timeout."""


def _as_json(message):
    """A JSON-RPC message (an SDK model) as a plain dict."""
    try:
        return message.model_dump(by_alias=True, exclude_unset=True, mode="json")
    except AttributeError:
        return {"error": f"{type(message).__name__}: {message}"}


class _Recording:
    """What both recording wrappers share: the wrapped stream, the log, closing and context."""

    def __init__(self, stream, log):
        self._stream, self._log = stream, log

    async def aclose(self):
        await self._stream.aclose()

    async def __aenter__(self):
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc):
        return await self._stream.__aexit__(*exc)


class _RecordingReader(_Recording):
    """Wraps the transport's read stream: every message the server sends is recorded."""

    async def receive(self):
        item = await self._stream.receive()
        self._record(item)
        return item

    def _record(self, item):
        if isinstance(item, Exception):
            self._log.append(("<-", {"transport error": f"{type(item).__name__}: {item}"}))
        else:
            self._log.append(("<-", _as_json(item.message)))

    def __aiter__(self):
        return self

    async def __anext__(self):
        item = await self._stream.__anext__()
        self._record(item)
        return item


class _RecordingWriter(_Recording):
    """Wraps the transport's write stream: every message the client sends is recorded."""

    async def send(self, item):
        self._log.append(("->", _as_json(item.message)))
        await self._stream.send(item)


def default_server_command() -> list:
    """How the lab's server is started: this Python running ``-m lreact.actions.mcp_server``."""
    return [sys.executable, "-m", "lreact.actions.mcp_server"]


class MCPConnection:
    """A blocking connection to an MCP server started over stdio as a subprocess.

    ``MCPConnection(command=None, *, timeout=10, env=None)``: ``command`` is the server's
    command line (default: the lab's server); ``timeout`` bounds every request in seconds.
    Use it as a context manager, or call ``close()``: the server process ends with the
    connection.  ``messages`` is the list of ``(direction, json)`` pairs exchanged, ``"->"``
    from client to server and ``"<-"`` back; ``initialize_result`` is the server's answer to
    ``initialize`` (its name, version and capabilities).
    """

    def __init__(self, command=None, *, timeout=DEFAULT_TIMEOUT, env=None,
                 start_timeout=START_TIMEOUT):
        if timeout is None or float(timeout) <= 0:
            raise ValueError("timeout must be a positive number of seconds: without one, a "
                             "server that never answers would hang the notebook")
        self.command = list(command or default_server_command())
        if not self.command:
            raise ValueError("command must name the server's executable")
        self.timeout = float(timeout)
        self.messages: list = []
        self.initialize_result = None
        self.start_timeout = float(start_timeout)
        self._env = dict(env or {})
        # the child gets only a minimal environment from the SDK: pass on where lreact lives
        for name in ("PYTHONPATH", "LREACT_GRADING"):
            if name in os.environ and name not in self._env:
                self._env[name] = os.environ[name]
        self._errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        self._loop = asyncio.new_event_loop()
        self._session = None
        self._ready = threading.Event()
        self._stop = None          # an asyncio.Event, created on the loop
        self._failure = None
        self._closed = False
        self._thread = threading.Thread(target=self._run_loop, name="mcp-client", daemon=True)
        self._thread.start()
        self._main = asyncio.run_coroutine_threadsafe(self._hold_session(), self._loop)
        if not self._ready.wait(self.start_timeout + 5.0):
            tail = self._log_tail()
            self.close()
            raise MCPTimeout(f"the MCP server {' '.join(self.command)!r} did not finish "
                             f"initialize within {start_timeout:g} s" + tail)
        if self._failure is not None:
            failure, tail = self._failure, self._log_tail()
            self.close()
            kind = MCPTimeout if failure.startswith("no answer to initialize") else MCPClientError
            raise kind(f"could not start the MCP server {' '.join(self.command)!r}: "
                                 f"{failure}" + tail)

    # -- the event loop thread -----------------------------------------------------------------
    def _run_loop(self):
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    async def _hold_session(self):
        from mcp import ClientSession, StdioServerParameters, stdio_client

        self._stop = asyncio.Event()
        params = StdioServerParameters(command=self.command[0], args=self.command[1:],
                                       env=self._env or None)
        try:
            async with stdio_client(params, errlog=self._errlog) as (read, write):
                reader = _RecordingReader(read, self.messages)
                writer = _RecordingWriter(write, self.messages)
                # timeouts are enforced per request below (initialize gets start_timeout)
                async with ClientSession(reader, writer) as session:
                    try:
                        self.initialize_result = await asyncio.wait_for(session.initialize(),
                                                                        self.start_timeout)
                    except asyncio.TimeoutError:
                        self._failure = (f"no answer to initialize within "
                                         f"{self.start_timeout:g} s")
                        raise
                    self._session = session
                    self._ready.set()
                    await self._stop.wait()
        except BaseException as e:  # noqa: BLE001 - reported to the caller, never lost
            if self._failure is None and not self._ready.is_set():
                self._failure = _describe(e)
        finally:
            self._session = None
            self._ready.set()

    # -- requests ------------------------------------------------------------------------------
    def _request(self, what, make_coro):
        if self._closed or self._session is None:
            raise MCPClientError(f"{what}: the connection is closed")
        future = asyncio.run_coroutine_threadsafe(
            asyncio.wait_for(make_coro(self._session), self.timeout), self._loop)
        try:
            return future.result(self.timeout + 5.0)
        except (FutureTimeout, asyncio.TimeoutError, TimeoutError):
            future.cancel()
            raise MCPTimeout(f"{what}: no answer from the MCP server within "
                             f"{self.timeout:g} s") from None
        except MCPClientError:
            raise
        except Exception as e:  # the SDK's MCPError, a closed connection, ...
            text = _describe(e)
            if "-32001" in text or "timed out" in text.lower():
                raise MCPTimeout(f"{what}: no answer from the MCP server within "
                                 f"{self.timeout:g} s ({text})") from None
            raise MCPClientError(f"{what} failed: {text}") from None

    def list_tools(self):
        """``tools/list``: the SDK's ListToolsResult (``.tools[i].name``, ``.description``,
        ``.input_schema``)."""
        return self._request("tools/list", lambda s: s.list_tools())

    def call_tool(self, name, arguments=None):
        """``tools/call``: the SDK's CallToolResult (``.content[i].text``, ``.is_error``)."""
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        if arguments is not None and not isinstance(arguments, dict):
            raise TypeError("arguments must be a dict of argument values (parsed JSON), got "
                            f"{type(arguments).__name__}")
        return self._request(f"tools/call {name}", lambda s: s.call_tool(name, arguments))

    def list_resources(self):
        """``resources/list``: the SDK's ListResourcesResult (``.resources[i].uri``)."""
        return self._request("resources/list", lambda s: s.list_resources())

    def read_resource(self, uri):
        """``resources/read``: the SDK's ReadResourceResult (``.contents[i].text``)."""
        return self._request(f"resources/read {uri}", lambda s: s.read_resource(uri))

    def list_prompts(self):
        """``prompts/list``: the SDK's ListPromptsResult (``.prompts[i].name``)."""
        return self._request("prompts/list", lambda s: s.list_prompts())

    def get_prompt(self, name, arguments=None):
        """``prompts/get``: the SDK's GetPromptResult (``.messages[i].content.text``)."""
        return self._request(f"prompts/get {name}",
                             lambda s: s.get_prompt(name, arguments or {}))

    # -- life cycle ----------------------------------------------------------------------------
    def server_log(self) -> str:
        """What the server wrote to its stderr so far."""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            return self._errlog.read()
        except (OSError, ValueError):
            return ""

    def _log_tail(self) -> str:
        tail = self.server_log().strip()[-800:]
        return f"\nThe server's stderr ended with:\n{tail}" if tail else ""

    def close(self, wait=15.0):
        """End the session and the server process (idempotent; waits at most ``wait`` s)."""
        if self._closed:
            return
        self._closed = True
        if self._thread.is_alive() and not self._loop.is_closed():
            try:
                if self._stop is not None:
                    self._loop.call_soon_threadsafe(self._stop.set)
                self._main.result(wait)
            except Exception:  # noqa: BLE001 - closing must not raise
                self._main.cancel()
            try:
                self._loop.call_soon_threadsafe(self._loop.stop)
            except RuntimeError:
                pass
            self._thread.join(5)
        if not self._thread.is_alive() and not self._loop.is_closed():
            self._loop.close()
        try:
            self._errlog.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close(wait=2.0)
        except Exception:  # noqa: BLE001
            pass

    def __repr__(self):
        state = "closed" if self._closed else "open"
        return f"MCPConnection({' '.join(self.command)!r}, {state}, {len(self.messages)} messages)"


def _describe(e: BaseException) -> str:
    """One line for an exception, unwrapping anyio's exception groups."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return f"{type(e).__name__}: {e}"


def format_message(direction, message, width=110) -> str:
    """One recorded JSON-RPC message as a short line, e.g. ``-> tools/call #2 {...}``."""
    import json

    if "method" in message:
        head = message["method"] + (f" #{message['id']}" if "id" in message else "")
        body = message.get("params", {})
    elif "result" in message:
        head, body = f"result #{message.get('id')}", message["result"]
    elif "error" in message:
        head, body = f"error #{message.get('id')}", message["error"]
    else:
        head, body = "?", message
    text = f"{direction} {head} {json.dumps(body, ensure_ascii=False)}"
    return text if len(text) <= width else text[:width - 3] + "..."


# --- an in-process stand-in for tests ------------------------------------------------------------
class _Record:
    """A plain record with attributes (like the SDK's result objects), for test doubles."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({inner})"


class ScriptedMCPConnection:
    """A test double with ``MCPConnection``'s blocking methods and result shapes, no process.

    ``ScriptedMCPConnection(tools, handlers, *, failures=None)``:

    - ``tools``: a list of dicts ``{"name", "description", "input_schema"}`` that
      ``list_tools()`` returns as records (``.tools[i].name``, ``.description``,
      ``.input_schema``), in this order;
    - ``handlers``: name -> function(**arguments) returning a str (one text block), a list of
      str and dicts (several blocks; a dict is a non-text block such as
      ``{"type": "image", "data": "...", "mime_type": "image/png"}``); a handler that raises
      gives ``is_error=True`` with ``"Error executing tool <name>: <message>"``, as the SDK does;
      a name without a handler gives ``is_error=True`` with ``"Unknown tool: <name>"``;
    - ``failures``: name -> an exception that ``call_tool`` raises itself (a timeout, a lost
      connection), as ``MCPConnection`` does when the transport fails.

    Every ``call_tool`` is recorded in ``.calls`` as ``(name, arguments)``.
    """

    def __init__(self, tools, handlers=None, *, failures=None):
        self.tool_list = [dict(t) for t in tools]
        self.handlers = dict(handlers or {})
        self.failures = dict(failures or {})
        self.calls = []

    def list_tools(self):
        import copy

        return _Record(tools=[_Record(name=t["name"], description=t.get("description"),
                                      input_schema=copy.deepcopy(t.get("input_schema")))
                              for t in self.tool_list])

    def call_tool(self, name, arguments=None):
        import copy

        self.calls.append((name, copy.deepcopy(arguments)))
        if name in self.failures:
            raise self.failures[name]
        if name not in self.handlers:
            return _Record(content=[_Record(type="text", text=f"Unknown tool: {name}")],
                           is_error=True, structured_content=None)
        try:
            value = self.handlers[name](**(arguments or {}))
        except Exception as e:  # noqa: BLE001 - becomes an error result, like the SDK's server
            return _Record(content=[_Record(type="text", text=f"Error executing tool {name}: {e}")],
                           is_error=True, structured_content=None)
        blocks = value if isinstance(value, list) else [value]
        content = [_Record(type="text", text=b) if isinstance(b, str) else _Record(**b)
                   for b in blocks]
        return _Record(content=content, is_error=False, structured_content=None)

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
