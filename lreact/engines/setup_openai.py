"""``check_setup()`` for an OpenAI-compatible engine (``LREACT_BACKEND=openai``).

Three questions, answered in plain words (``lreact.engines.setup`` holds the report and the other
backends):

1. Is it running? ``GET /v1/models``: connection refused means nothing listens; a connection
   taken but not answered within ``timeout`` means it is there but busy or stuck.  HTTP 401/403
   means it answers but refused the key: ``LREACT_API_KEY`` holds a wrong one ("ask your
   instructor for yours": a class server gives each student one) or none is set.
2. Does it serve the model? The listed names, and for a name it does not list, the answer to the
   probe below: llama-server and llama-cpp-python's server serve their one model under any name,
   vLLM answers 404.
3. Do tools work? One real request, as the agent sends them: a question that needs the weather
   tool, the tool's schema, ``tool_choice: "auto"``.  The report says whether a tool call came
   back or the model answered with text, and how long it took.  The probe is a generation, and
   a cold engine on a busy machine takes seconds for it: it may take up to ``PROBE_PATIENCE``
   seconds; slower than ``timeout`` is reported as slow, and the engine is still used.

Lecture: Part III, "Function calling: defining and advertising tools".
"""
from __future__ import annotations

import os
import time

import httpx

from .engine_errors import NO_KEY, error_text_of, explain_dropped, explain_key, explain_status
from .openai_compat import DEFAULT_BASE_URL, START_HINT, TOOL_FEATURES
from .setup_report import FALLBACK_LINE, SetupReport

# seconds the tool probe (a real generation) may take before the engine counts as stuck
PROBE_PATIENCE = 60.0
PROBE_QUESTION = "What's the weather in Berlin?"
PROBE_MAX_TOKENS = 48
PROBE_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}


def check_openai(model, host, timeout):
    """The SetupReport of the OpenAI-compatible engine at ``host`` (a ``/v1`` base URL)."""

    base = (host or DEFAULT_BASE_URL).rstrip("/")
    model = model or os.environ.get("LREACT_MODEL", "").strip() or None
    report = SetupReport(model=model or "", host=base, backend="openai")
    say = report.lines.append
    key = (os.environ.get("LREACT_API_KEY", "").strip()
           or os.environ.get("OPENAI_API_KEY", "").strip() or NO_KEY)
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}) as http:
        try:
            listed = http.get(base + "/models", timeout=float(timeout))
        except httpx.ConnectError:
            say(f"✗ No OpenAI-compatible engine answers at {base} (connection refused: nothing "
                "listens there).")
            say(f"  To use one, {START_HINT}.")
            say(FALLBACK_LINE)
            return report
        except httpx.TimeoutException:
            say(f"✗ The engine at {base} accepted the connection but did not answer within "
                f"{float(timeout):g} s: it is there, but busy (still loading the model, or "
                "answering another request) or stuck. Wait and run this cell again, or restart it.")
            say(FALLBACK_LINE)
            return report
        except httpx.HTTPError as e:
            say(f"✗ The connection to {base} failed ({type(e).__name__}).")
            say(FALLBACK_LINE)
            return report
        data = _json(listed)
        entries = data.get("data") if isinstance(data, dict) else None
        if listed.status_code in (401, 403):     # it answered: the key is what it refused
            report.server = True
            say(f"✓ The server at {base} answers.")
            say("✗ " + explain_key(base, listed.status_code, error_text_of(_json(listed)),
                                   key_set=key != NO_KEY))
            return report
        if listed.status_code != 200 or not isinstance(entries, list):
            say(f"✗ The server at {base} did not answer like an OpenAI-compatible engine (HTTP "
                f"{listed.status_code} to /models, no model list). LREACT_BASE_URL must end in "
                "/v1, e.g. http://127.0.0.1:8080/v1.")
            say(FALLBACK_LINE)
            return report
        report.server = True
        say(f"✓ OpenAI-compatible engine at {base} is running.")
        if key != NO_KEY:
            say("✓ It accepts the API key in LREACT_API_KEY.")
        ids = [str(e["id"]) for e in entries if isinstance(e, dict) and e.get("id")]
        if model is None:
            if not ids:
                say("✗ The engine lists no model: load one when you start it.")
                return report
            model = report.model = ids[0]
        if model in ids:
            report.model_pulled = True
            say(f"✓ It serves the model {model!r}.")
        answer, seconds = _probe(http, base, model, timeout, report)
    if answer is None:
        return report
    _read_probe(report, answer, ids, timeout, seconds)
    return report


def _probe(http, base, model, timeout, report):
    """POST the tool probe; returns (response or None, seconds it took)."""

    body = {"model": model, "messages": [{"role": "user", "content": PROBE_QUESTION}],
            "tools": [PROBE_TOOL], "tool_choice": "auto", "max_tokens": PROBE_MAX_TOKENS,
            "temperature": 0}
    patience = max(PROBE_PATIENCE, float(timeout))
    start = time.monotonic()
    try:
        answer = http.post(base + "/chat/completions", json=body,
                           timeout=httpx.Timeout(patience, connect=float(timeout)))
    except httpx.TimeoutException:
        report.lines.append(
            f"✗ The engine is running but did not answer one short question with a tool "
            f"(at most {PROBE_MAX_TOKENS} tokens) within {patience:g} s: it is stuck, or much "
            "too slow for this machine. Restart it, or serve a smaller model.")
        return None, time.monotonic() - start
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
        report.lines.append("✗ " + explain_dropped(base, len(PROBE_QUESTION)))
        return None, time.monotonic() - start
    except httpx.HTTPError as e:
        report.lines.append(f"✗ The engine stopped answering during the check "
                            f"({type(e).__name__}): is it still running at {base}?")
        return None, time.monotonic() - start
    return answer, time.monotonic() - start


def _read_probe(report, answer, ids, timeout, seconds):
    """Turn the probe's answer into the report's last lines."""

    say, model, base = report.lines.append, report.model, report.host
    if answer.status_code != 200:
        text = error_text_of(_json(answer), answer.text[:200])
        if not report.model_pulled and answer.status_code in (400, 404):
            say(f"✗ The engine does not serve {model!r} (it serves: {', '.join(ids) or 'none'}). "
                f"Set LREACT_MODEL to one of those (engine said: {text or 'nothing'}).")
        else:
            say("✗ " + explain_status(answer.status_code, text, base_url=base, model=model,
                                      features=TOOL_FEATURES))
        return
    if not report.model_pulled:
        report.model_pulled = True
        say(f"✓ It answers requests for {model!r}, although it lists only "
            f"{', '.join(map(repr, ids)) or 'no model'}: this engine serves its model under any "
            "name.")
    data = _json(answer)
    try:
        message = data["choices"][0]["message"]
        calls = message.get("tool_calls") or []
        text = message.get("content") or ""
    except (TypeError, KeyError, IndexError, AttributeError):
        say("✗ The engine answered HTTP 200 without a message (no choices[0].message): a "
            "server fault. Restart it.")
        return
    report.tools_supported = True
    asked = f"asked {PROBE_QUESTION!r} with a get_weather tool"
    if calls:
        report.tool_call_seen = True
        fn = (calls[0] or {}).get("function") or {}
        say(f"✓ Tool calling works: {asked}, the model called "
            f"{fn.get('name')}({str(fn.get('arguments'))[:60]}).")
    else:
        say(f"✓ It accepts tools but did not call one: {asked}, the model answered with text "
            f"({text[:60]!r}). Small models often do; the agent cells show what this one does.")
    if seconds > float(timeout):
        report.slow = round(seconds, 1)
        say(f"⚠ The engine is slow: that question took {seconds:.1f} s (more than the "
            f"{float(timeout):g} s this check allows for a quick answer; a cold engine or a busy "
            "machine). It is running, and the live cells use it: expect each reply to take a "
            "while.")


def _json(response):
    try:
        return response.json()
    except ValueError:
        return None
