"""Recorded real-model runs and the drift check (lreact.views.recordings, lreact.views.drift; issue 18 §5).

- a recording says what it was recorded on (model digest, engine and version, chat template
  digest, the rendered prompt's digest), the request, the settings and the reply; it survives a
  round trip through its file, and a malformed one is refused with the field it lacks;
- the offline paths read the recordings: the lens, and the second lab's C.1 row;
- on the real small model the drift check replays every recording and finds no change; a copy
  with one token changed is reported at that token with both texts; a copy with another model
  digest is reported as a model change;
- without a model, or on a backend that cannot reproduce a draw, the check says so plainly.
"""
from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys

import pytest
from test_embedded import NO_OLLAMA, ROOT, embedded_env, real_model  # noqa: F401 (fixture)

from lreact.views import drift, lens, recordings


@pytest.fixture(params=["lens-smollm2-tool-call", "lab2-c1-smollm2-berlin"])
def shipped(request):
    return recordings.load(request.param)


def test_the_shipped_recordings_are_the_recipes():
    assert recordings.names() == sorted(recordings.RECIPES)


def test_a_recording_says_what_it_was_recorded_on(shipped):
    assert shipped["format"] == recordings.FORMAT
    assert re.fullmatch(r"[0-9a-f]{64}", shipped["model"]["sha256"])
    assert shipped["model"]["file"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert shipped["engine"]["name"] == "llama-cpp-python" and shipped["engine"]["version"]
    for key in ("sha256", "prompt_sha256"):
        assert re.fullmatch(r"[0-9a-f]{64}", shipped["template"][key])
    assert [m["role"] for m in shipped["request"]["messages"]] == ["system", "user"]
    assert {t["function"]["name"] for t in shipped["request"]["tools"]} == {"get_weather",
                                                                            "calculate"}
    assert shipped["reply"]["text"] == "".join(t["token"] for t in shipped["reply"]["tokens"])
    assert len(shipped["reply"]["tokens"]) <= shipped["settings"]["max_tokens"]


def test_round_trip_through_the_file(shipped, tmp_path):
    path = recordings.save(copy.deepcopy(shipped), tmp_path / "copy.json")
    assert recordings.load(path) == shipped
    assert recordings.request_messages(shipped)[1].content == recordings.LENS_QUESTION


def test_a_malformed_recording_is_refused_with_the_missing_field(shipped, tmp_path):
    broken = copy.deepcopy(shipped)
    del broken["template"]["sha256"]
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(recordings.RecordingError, match=r"lacks template\.sha256"):
        recordings.load(path)
    with pytest.raises(recordings.RecordingError, match="No recording at .*shipped ones are"):
        recordings.load("no-such-recording")
    path.write_text("{", encoding="utf-8")
    with pytest.raises(recordings.RecordingError, match="not valid JSON"):
        recordings.load(path)


def test_the_lens_reads_its_recording():
    rec = recordings.load("lens-smollm2-tool-call")
    view = lens.load_recorded()
    assert view["text"] == rec["reply"]["text"] and view["tokens"] == rec["reply"]["tokens"]
    assert view["model"]["engine"] == f"llama-cpp-python {rec['engine']['version']}"
    assert view["prefill"] == "<tool_call>\n"


def test_lab2_c1_shows_the_recorded_reply():
    import nbformat

    nb = nbformat.read(ROOT / "solutions" / "lecture-ReAct-lab2" / "lecture-ReAct-lab2.ipynb", 4)
    cell = next(c for c in nb.cells if c.id == "c-format-replies").source
    ns = {}
    exec(cell.split("for what, reply")[0], ns)
    texts = [text for _, text in ns["SMALL_MODEL_REPLIES"]]
    assert recordings.reply_text("lab2-c1-smollm2-berlin") in texts


def test_first_difference():
    assert drift.first_difference(["a", "b"], ["a", "b"]) is None
    assert drift.first_difference(["a", "b", "c"], ["a", "x", "c"]) == 1
    assert drift.first_difference(["a", "b"], ["a", "b", "c"]) == 2


# -- no model, or a backend that cannot replay ------------------------------------------------

def test_no_model_gives_the_plain_message(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LREACT_", "HF_"))}
    env.update(LREACT_BACKEND="embedded", LREACT_FETCH_MODEL="0", HF_HOME=str(tmp_path),
               HF_HUB_OFFLINE="1", OLLAMA_HOST=NO_OLLAMA)
    run = subprocess.run([sys.executable, "-m", "lreact.views.drift"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 2, run.stderr
    assert run.stdout.startswith("Drift check: nothing replayed. No model is configured: ")
    assert "LREACT_GGUF" in run.stdout and "Traceback" not in run.stdout + run.stderr


def test_ollama_cannot_reproduce_a_recording(monkeypatch):
    monkeypatch.setenv("LREACT_BACKEND", "ollama")
    monkeypatch.setenv("OLLAMA_HOST", NO_OLLAMA)
    report = drift.check_drift()
    assert not report.checked and not report.ok
    assert "ollama backend (chosen because LREACT_BACKEND=ollama) samples inside its server" \
        in str(report)
    assert "cannot reproduce" in str(report) and "LREACT_BACKEND=embedded" in str(report)


def test_grading_never_loads_a_model(monkeypatch):
    monkeypatch.setenv("LREACT_BACKEND", "embedded")
    monkeypatch.setenv("LREACT_GRADING", "1")
    report = drift.check_drift()
    assert "no model is loaded while an assignment is graded" in str(report)


# -- on the real model -------------------------------------------------------------------------

@real_model
def test_on_the_real_model_nothing_changed(embedded_env):
    from lreact import check_setup

    report = check_setup(drift=True)
    text = str(report)
    print("\n" + text)
    assert report.ok
    for name in recordings.names():
        assert re.search(rf"✓ {name}: no change \(.*all \d+ tokens", text), name
    assert "✗" not in text


def _copy(tmp_path, edit):
    rec = recordings.load("lens-smollm2-tool-call")
    edit(rec)
    return recordings.save(rec, tmp_path / "edited.json")


@real_model
def test_a_changed_token_is_reported_at_that_token(embedded_env, tmp_path):
    def edit(rec):
        rec["reply"]["tokens"][4]["token"] = "Par"
        rec["reply"]["text"] = "".join(t["token"] for t in rec["reply"]["tokens"])

    report = drift.check_drift([_copy(tmp_path, edit)])
    print("\n" + str(report))
    (result,) = report.results
    assert result.first_diff == 4 and not report.ok
    assert len(result.changes) == 1     # the model, engine and template are as recorded
    assert "first differs at token 5 of 32: recorded 'Par', now 'Ber'" in str(report)
    assert '"name": "Parlin"' in result.recorded_text and '"name": "Berlin"' in result.live_text
    assert repr(result.live_text) in str(report) and repr(result.recorded_text) in str(report)


@real_model
def test_another_model_digest_is_reported_as_a_model_change(embedded_env, tmp_path):
    def edit(rec):
        rec["model"]["sha256"] = "0" * 64

    report = drift.check_drift([_copy(tmp_path, edit)])
    (result,) = report.results
    assert not report.ok and result.first_diff is None
    real = recordings.load("lens-smollm2-tool-call")["model"]["sha256"][:12]
    assert result.changes == [("model file: recorded SmolLM2-135M-Instruct.Q4_1.gguf (sha256 "
                               "000000000000…), now SmolLM2-135M-Instruct.Q4_1.gguf (sha256 "
                               f"{real}…)")]
