"""``check_setup()``: one line in a notebook tells whether the real model can be used.

It asks the Ollama server three questions (is it reachable, is the model pulled, does the model
support tools) and answers in plain words.  It never raises because a server is missing.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import httpx

from .models import default_model


@dataclass
class SetupReport:
    model: str
    host: str
    server: bool = False
    model_pulled: bool = False
    tools_supported: bool = False
    lines: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.server and self.model_pulled and self.tools_supported

    def __bool__(self):
        return self.ok

    def __str__(self):
        return "\n".join(self.lines)

    def __repr__(self):
        return str(self)


def check_setup(model=None, host=None, timeout: float = 5.0, verbose: bool = False) -> SetupReport:
    """Check the Ollama server at ``host`` (default ``$OLLAMA_HOST`` or 127.0.0.1:11434) and
    the ``model`` (default: ``lreact.default_model()``).  Returns a SetupReport, truthy when the
    model can be used for the lab; ``verbose=True`` also prints it."""
    import ollama

    model = model or default_model()
    client = ollama.Client(host=host, timeout=timeout)
    report = SetupReport(model=model, host=str(client._client.base_url).rstrip("/"))
    say = report.lines.append
    try:
        listed = client.list()
    except Exception as e:  # noqa: BLE001 - a setup check must never raise
        kind = type(e).__name__
        if isinstance(e, ollama.ResponseError) or not isinstance(
                e, (ConnectionError, httpx.HTTPError)):
            say(f"✗ The server at {report.host} did not answer like Ollama ({kind}: {e}).")
        else:
            say(f"✗ No Ollama server answers at {report.host} ({kind}).")
        say("  Start one with `ollama serve` in a terminal (or open the Ollama app), "
            f"then `ollama pull {model}`.")
        say("  Until then the cells that need the real model say so and skip; everything else runs.")
        return _done(report, verbose)
    report.server = True
    say(f"✓ Ollama server at {report.host} is running.")
    names = {m.model for m in listed.models if m.model}
    wanted = model if ":" in model else model + ":latest"
    report.model_pulled = wanted in names or model in names
    if not report.model_pulled:
        have = ", ".join(sorted(names)) or "none"
        say(f"✗ Model {model!r} is not pulled (pulled: {have}). Run `ollama pull {model}`.")
        return _done(report, verbose)
    say(f"✓ Model {model!r} is pulled.")
    try:
        caps = client.show(model).capabilities
    except Exception as e:  # noqa: BLE001 - a setup check must never raise
        say(f"? Could not ask the server about {model!r}'s capabilities ({e}).")
        return _done(report, verbose)
    if caps is None:  # servers before capabilities were reported: assume Qwen2.5 can
        report.tools_supported = model.startswith("qwen2.5")
        say(f"{'✓' if report.tools_supported else '?'} The server does not report capabilities; "
            f"{'Qwen2.5 supports tools' if report.tools_supported else 'tool support unknown'}.")
    else:
        report.tools_supported = "tools" in caps
        if report.tools_supported:
            say(f"✓ Model {model!r} supports tool calling.")
        else:
            say(f"✗ Model {model!r} does not support tool calling (capabilities: "
                f"{', '.join(caps)}). Use a Qwen2.5 model, e.g. `ollama pull qwen2.5:7b`.")
    return _done(report, verbose)


def _done(report, verbose):
    if verbose:
        print(report)
    return report
