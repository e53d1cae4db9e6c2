"""``check_setup()``: one line in a notebook tells whether the real model can be used.

It checks the configured backend (``lreact.engines.backends``: ``$LREACT_BACKEND``) and answers in plain
words; it never raises because a server is missing, and never prints a traceback or a library's
validation dump.

- Ollama: is the server reachable (``GET /api/tags``), is the model pulled, does it support tools
  (``POST /api/show``, its ``capabilities``).
- An OpenAI-compatible engine (``lreact.engines.setup_openai``): is it reachable (``GET /v1/models``),
  does it serve the model, do tools work (one question with a tool and ``tool_choice: "auto"``:
  did a call come back, or text; a slow answer is reported as slow, not as a missing engine).
- The embedded engine (``lreact.engines.setup_embedded``): llama-cpp-python installed, the model file
  (fetched if missing and allowed), loaded once, one token generated.

The report's first line says which backend is used and why (``lreact.engines.backends.backend_choice``:
``LREACT_BACKEND=auto`` picks Ollama when it answers, else the embedded engine), and how to get
the other.
"""
from __future__ import annotations

import httpx

from .backends import ALIASES, BackendChoice, backend_choice, configured_base_url
from .gguf import grading
from .models import default_model, ollama_host
from .setup_openai import check_openai
from .setup_report import FALLBACK_LINE, SetupReport, models_line  # noqa: F401 - re-exported


def check_setup(model=None, host=None, timeout: float = 5.0, verbose: bool = False,
                backend=None, drift: bool = False) -> SetupReport:
    """Check the configured backend (or ``backend=``: ``"auto"``, ``"ollama"``, ``"openai"``,
    ``"embedded"``; ``auto`` says which one it chose and why, first) at ``host``
    (default ``$LREACT_BASE_URL``, for Ollama also ``$OLLAMA_HOST``) and the ``model`` (default:
    ``$LREACT_MODEL``).  Returns a SetupReport, truthy when the model can be used for the lab;
    ``verbose=True`` also prints it.  ``drift=True`` also replays the recorded model runs on the
    configured model and says what changed (``lreact.views.drift``; its lines end the report)."""

    try:
        if backend and ALIASES[backend.strip().lower()] != "auto":
            choice = BackendChoice(ALIASES[backend.strip().lower()], f"backend={backend!r}")
        else:
            choice = backend_choice(host)
    except (KeyError, ValueError, AttributeError) as e:
        report = SetupReport(model=str(model or ""), host=str(host or ""), backend=str(backend))
        report.lines.append(f"✗ {e}." if isinstance(e, ValueError) else
                            f"✗ unknown backend {backend!r} (use 'auto', 'ollama', 'openai' or "
                            "'embedded').")
        return _done(report, verbose)
    host = host or configured_base_url()

    if grading() and choice.backend != "embedded":    # embedded says so itself, without a model
        report = SetupReport(model=str(model or default_model()), host=str(host or ""),
                             backend=choice.backend)
        report.lines += ["✗ No model is used while an assignment is graded (LREACT_GRADING=1): "
                         "no server is asked.", FALLBACK_LINE]
    elif choice.backend == "embedded":   # lreact.engines.setup_embedded: llama.cpp in this process
        from .setup_embedded import check_embedded

        gguf = model if isinstance(model, str) and model.endswith(".gguf") else None
        report = check_embedded(gguf, timeout)
    elif choice.backend == "openai":
        report = _check_openai(model, host, timeout)
    else:
        report = _check_ollama(model or default_model(), host, timeout)
    report.why = f"Backend {choice.backend}, because {choice.reason}." + (
        f" (Instead, {choice.other}.)" if choice.other else "")
    report.notes.insert(0, models_line(choice.backend))
    if drift:
        from ..views.drift import check_drift

        report.lines.extend(check_drift(timeout=max(float(timeout), 60.0),
                                       backend=choice.backend).lines)
    return _done(report, verbose)


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
    if isinstance(caps, list) and "thinking" in caps:
        report.notes.append(f"ℹ Model {model!r} thinks: its span arrives as "
                            "AssistantMessage.reasoning.")
    if not isinstance(caps, list):  # servers before capabilities were reported
        report.tools_supported = model.startswith("qwen2.5")
        say(f"{'✓' if report.tools_supported else '?'} The server does not report capabilities; "
            f"{'Qwen2.5 supports tools' if report.tools_supported else 'tool support unknown'}.")
    elif "tools" in caps:
        report.tools_supported = True
        say(f"✓ Model {model!r} supports tool calling.")
    else:
        say(f"✗ Model {model!r} does not support tool calling (capabilities: "
            f"{', '.join(map(str, caps))}). Use a Qwen model (2.5, 3 or 3.5), e.g. `ollama pull "
            "qwen2.5:7b`.")
    if report.tools_supported and model.startswith("qwen2.5"):
        report.notes.append("ℹ Under Ollama 0.14 or later the qwen2.5 template shows the model its tools as Go "
            "struct text, not JSON (ollama/ollama#14601; lecture Part IV): llama-server --jinja "
            "or the embedded engine render Qwen's own template.")
    return report


def _check_openai(model, host, timeout) -> SetupReport:
    """The OpenAI-compatible engine's checks live in ``lreact.engines.setup_openai``."""

    return check_openai(model, host, timeout)


def _done(report, verbose):
    if verbose:
        print(report)
    return report
