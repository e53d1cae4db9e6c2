"""lreact.views.waiting and lreact.views.predict: what a live cell says before it starts (its
wait, scaled from CI's measurement by a stated rule) and the prediction it prints beside its
result.  The measurement itself: tests/test_notebooks_real_model.py (the last test)."""
import re

import pytest

from lreact.engines import gguf
from lreact.views import predict, waiting


def test_the_rule_scales_by_the_model_file_and_the_cores():
    # 491 MB against 98 MB, and half the time on 4 cores against CI's 2
    assert waiting.factor() == pytest.approx(491 / 98.36 / 2, rel=0.01)
    assert waiting.factor(waiting.SMOLLM2_BYTES) == pytest.approx(0.5)
    assert waiting.seconds("kv-reuse", scale=3) == pytest.approx(
        3 * waiting.MEASURED["lecture-messages"]["kv-reuse"] * waiting.factor())
    # the committed table keeps each part within its budget (CI measures it again)
    for part, budget in waiting.BUDGET_S.items():
        assert waiting.budget_seconds(part) <= waiting.ABOUT * budget, part


def test_a_live_cell_says_its_wait_and_the_larger_run(monkeypatch, capsys, tmp_path):
    model = tmp_path / "small.gguf"
    model.write_bytes(b"\0" * 1000)
    monkeypatch.setenv("LREACT_BACKEND", "embedded")
    monkeypatch.setenv("LREACT_GGUF", str(model))
    waiting.announce("c-rates-grid", larger="LREACT_GRID_QUESTIONS=4", larger_scale=4)
    line = capsys.readouterr().out
    assert line.startswith("Wait: about ") and "with small.gguf on a 4-core laptop" in line
    assert "measured in CI on SmolLM2-135M" in line and "Larger: LREACT_GRID_QUESTIONS=4" in line
    monkeypatch.delenv("LREACT_GGUF")
    waiting.announce("kv-reuse")
    assert "qwen2.5-0.5b-instruct-q4_k_m.gguf" in capsys.readouterr().out
    monkeypatch.setenv("LREACT_BACKEND", "ollama")
    waiting.announce("kv-reuse")
    assert "on a server it depends" in capsys.readouterr().out


def test_the_prediction_stands_beside_the_result():
    text = predict.beside("T=1.5 p=1 free", "T=1.5 p=1 free: 0 of 1 runs", "keep calls cold.")
    assert re.findall(r"^(\w[\w ]*):", text, re.M) == ["Your prediction", "Measured", "Take from it"]
    assert "'T=1.5 p=1 free'" in text
    assert "none: write one in the cell above" in predict.beside(..., "x", "y")
    assert predict.written(3) and not predict.written(...) and not predict.written(" ")


def test_validate_runs_without_a_model(monkeypatch):
    """nbgrader's Validate sets NBGRADER_VALIDATING=1 for its kernel: the live cells then take
    their scripted paths, as when graded (only the tests count there)."""
    monkeypatch.delenv("LREACT_GRADING", raising=False)
    monkeypatch.delenv("NBGRADER_VALIDATING", raising=False)
    assert not gguf.grading()
    monkeypatch.setenv("NBGRADER_VALIDATING", "1")
    assert gguf.grading()
