"""``check_setup()``: one line in a notebook tells whether the real model can be used.

It checks the configured backend (``lreact.backends``: ``$LREACT_BACKEND``) and answers in plain
words; it never raises because a server is missing, and never prints a traceback or a library's
validation dump.

- Ollama: is the server reachable (``GET /api/tags``), is the model pulled, does it support tools
  (``POST /api/show``, its ``capabilities``).
- An OpenAI-compatible engine: is it reachable (``GET /v1/models``), does it serve the model,
  does it accept tools (one chat request with a tool and ``max_tokens: 1``: llama-server without
  ``--jinja`` and vLLM without ``--enable-auto-tool-choice`` refuse it).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import httpx

from .models import default_model, ollama_host


@dataclass
class SetupReport:
    model: str
    host: str
    server: bool = False
    model_pulled: bool = False
    tools_supported: bool = False
    lines: list = field(default_factory=list)
    backend: str = "ollama"

    @property
    def ok(self) -> bool:
        return self.server and self.model_pulled and self.tools_supported

    def __bool__(self):
        return self.ok

    def __str__(self):
        return "\n".join(self.lines)

    def __repr__(self):
        return str(self)


FALLBACK_LINE = "  Until then the cells that need the real model say so and use a scripted model."


def check_setup(model=None, host=None, timeout: float = 5.0, verbose: bool = False,
                backend=None) -> SetupReport:
    """Check the configured backend (or ``backend=``: ``"ollama"`` / ``"openai"``) at ``host``
    (default ``$LREACT_BASE_URL``, for Ollama also ``$OLLAMA_HOST``) and the ``model`` (default:
    ``$LREACT_MODEL``).  Returns a SetupReport, truthy when the model can be used for the lab;
    ``verbose=True`` also prints it."""
    from .backends import ALIASES, configured_backend, configured_base_url

    try:
        backend = ALIASES[backend.strip().lower()] if backend else configured_backend()
    except (KeyError, ValueError, AttributeError) as e:
        report = SetupReport(model=str(model or ""), host=str(host or ""), backend=str(backend))
        report.lines.append(f"✗ {e if isinstance(e, ValueError) else 'unknown backend ' + repr(backend)}"
                            " (use 'ollama' or 'openai').")
        return _done(report, verbose)
    host = host or configured_base_url()
    if backend == "openai":
        return _done(_check_openai(model, host, timeout), verbose)
    return _done(_check_ollama(model or default_model(), host, timeout), verbose)


def _json(response):
    try:
        return response.json()
    except ValueError:
        return None


def _check_ollama(model, host, timeout) -> SetupReport:
    report = SetupReport(model=model, host=ollama_host(host), backend="ollama")
    say = report.lines.append
    with httpx.Client(base_url=report.host, timeout=httpx.Timeout(float(timeout))) as http:
        try:
            tags = http.get("/api/tags")
        except httpx.ConnectError:
            say(f"✗ No Ollama server answers at {report.host} (connection refused).")
            say("  Start one with `ollama serve` in a terminal (or open the Ollama app), "
                f"then `ollama pull {model}`.")
            say(FALLBACK_LINE)
            return report
        except httpx.TimeoutException:
            say(f"✗ The server at {report.host} accepted the connection but did not answer "
                f"within {float(timeout):g} s: it may be busy loading a model or stuck. Wait "
                "and run this cell again, or restart it (stop it, then `ollama serve`).")
            say(FALLBACK_LINE)
            return report
        except httpx.HTTPError as e:
            say(f"✗ The connection to {report.host} failed ({type(e).__name__}). Check that "
                "`ollama serve` is running there.")
            say(FALLBACK_LINE)
            return report
        data = _json(tags)
        models = data.get("models") if isinstance(data, dict) else None
        if tags.status_code != 200 or not isinstance(models, list):
            say(f"✗ The server at {report.host} did not answer like Ollama (HTTP "
                f"{tags.status_code} to /api/tags, no model list). Is OLLAMA_HOST (or "
                "LREACT_BASE_URL) the address of `ollama serve`?")
            say(FALLBACK_LINE)
            return report
        report.server = True
        say(f"✓ Ollama server at {report.host} is running.")
        names = {str(m.get("model") or m.get("name")) for m in models
                 if isinstance(m, dict) and (m.get("model") or m.get("name"))}
        wanted = model if ":" in model else model + ":latest"
        report.model_pulled = wanted in names or model in names
        if not report.model_pulled:
            have = ", ".join(sorted(names)) or "none"
            say(f"✗ Model {model!r} is not pulled (pulled: {have}). Run `ollama pull {model}`.")
            return report
        say(f"✓ Model {model!r} is pulled.")
        try:
            show = http.post("/api/show", json={"model": model})
            info = _json(show)
            if show.status_code != 200 or not isinstance(info, dict):
                raise ValueError(f"HTTP {show.status_code}")
        except (httpx.HTTPError, ValueError) as e:
            reason = str(e) if isinstance(e, ValueError) else type(e).__name__
            say(f"? Could not ask the server about {model!r}'s capabilities ({reason}).")
            return report
    caps = info.get("capabilities")
    if not isinstance(caps, list):  # servers before capabilities were reported
        report.tools_supported = model.startswith("qwen2.5")
        say(f"{'✓' if report.tools_supported else '?'} The server does not report capabilities; "
            f"{'Qwen2.5 supports tools' if report.tools_supported else 'tool support unknown'}.")
    elif "tools" in caps:
        report.tools_supported = True
        say(f"✓ Model {model!r} supports tool calling.")
    else:
        say(f"✗ Model {model!r} does not support tool calling (capabilities: "
            f"{', '.join(map(str, caps))}). Use a Qwen2.5 model, e.g. `ollama pull qwen2.5:7b`.")
    return report


def _check_openai(model, host, timeout) -> SetupReport:
    from .openai_compat import DEFAULT_BASE_URL, START_HINT

    base = (host or DEFAULT_BASE_URL).rstrip("/")
    model = model or os.environ.get("LREACT_MODEL", "").strip() or None
    report = SetupReport(model=model or "", host=base, backend="openai")
    say = report.lines.append
    key = (os.environ.get("LREACT_API_KEY", "").strip()
           or os.environ.get("OPENAI_API_KEY", "").strip() or "not-needed")
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(timeout=httpx.Timeout(float(timeout)), headers=headers) as http:
        try:
            listed = http.get(base + "/models")
        except httpx.ConnectError:
            say(f"✗ No OpenAI-compatible engine answers at {base} (connection refused).")
            say(f"  To use one, {START_HINT}.")
            say(FALLBACK_LINE)
            return report
        except httpx.TimeoutException:
            say(f"✗ The engine at {base} accepted the connection but did not answer within "
                f"{float(timeout):g} s: it may still be loading the model. Wait and run this "
                "cell again, or restart it.")
            say(FALLBACK_LINE)
            return report
        except httpx.HTTPError as e:
            say(f"✗ The connection to {base} failed ({type(e).__name__}).")
            say(FALLBACK_LINE)
            return report
        data = _json(listed)
        entries = data.get("data") if isinstance(data, dict) else None
        if listed.status_code in (401, 403):
            say(f"✗ The engine at {base} wants an API key (HTTP {listed.status_code}): set "
                "LREACT_API_KEY to the key it was started with.")
            return report
        if listed.status_code != 200 or not isinstance(entries, list):
            say(f"✗ The server at {base} did not answer like an OpenAI-compatible engine (HTTP "
                f"{listed.status_code} to /models, no model list). LREACT_BASE_URL must end in "
                "/v1, e.g. http://127.0.0.1:8080/v1.")
            say(FALLBACK_LINE)
            return report
        report.server = True
        say(f"✓ OpenAI-compatible engine at {base} is running.")
        ids = [str(e["id"]) for e in entries if isinstance(e, dict) and e.get("id")]
        if model is None:
            if not ids:
                say("✗ The engine lists no model: load one when you start it.")
                return report
            model = report.model = ids[0]
        if model in ids:
            report.model_pulled = True
            say(f"✓ It serves the model {model!r}.")
        elif len(ids) == 1 and all(isinstance(e, dict) and e.get("owned_by") == "llamacpp"
                                   for e in entries):
            report.model_pulled = True   # llama-server answers with its one model, whatever the name
            say(f"✓ llama-server serves one model ({ids[0]!r}); it answers requests for "
                f"{model!r} with it.")
        else:
            say(f"✗ The engine does not serve {model!r} (it serves: {', '.join(ids) or 'none'}). "
                "Set LREACT_MODEL to one of those.")
            return report
        probe = {"model": model, "messages": [{"role": "user", "content": "Hi"}],
                 "max_tokens": 1, "tools": [_PROBE_TOOL]}
        try:
            answer = http.post(base + "/chat/completions", json=probe)
        except httpx.TimeoutException:
            say(f"? The engine did not answer a one-token request within {float(timeout):g} s "
                "(still loading?); tool support unknown. Run this cell again in a minute.")
            return report
        except httpx.HTTPError as e:
            say(f"? The one-token request with a tool failed ({type(e).__name__}).")
            return report
    if answer.status_code == 200:
        report.tools_supported = True
        say("✓ It accepts tools (a one-token request with a tool schema succeeded).")
        return report
    from .openai_compat import error_text_of, explain_status

    body = _json(answer)
    say("✗ " + explain_status(answer.status_code, error_text_of(body, answer.text[:200]),
                              base_url=base, model=model))
    return report


_PROBE_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}


def _done(report, verbose):
    if verbose:
        print(report)
    return report
