"""The student edition runs on this machine (``make test``): the lecture notebooks run top to
bottom without a model, ``lreact`` imports (its compiled part needs Python 3.11), the set-up
check answers in plain words, and each released notebook runs up to its first unanswered task,
whose message says what to write."""
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

HERE = Path(__file__).resolve().parent.parent
LECTURES = sorted((HERE / "lectures").glob("*.ipynb"))
RELEASED = sorted((HERE / "exercises").glob("*.ipynb")) + sorted((HERE / "lab").glob("*.ipynb"))


def test_python_is_the_courses():
    assert sys.version_info[:2] == (3, 11), "the course needs Python 3.11"


def test_lreact_imports_and_the_setup_check_answers():
    import lreact
    from lreact import sampling
    report = lreact.check_setup(timeout=1)
    assert str(report)
    assert abs(sum(sampling.softmax([1.0, 2.0, 3.0])) - 1) < 1e-9


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.name)
def test_each_lecture_notebook_runs_without_a_model(path, monkeypatch):
    monkeypatch.setenv("LREACT_BACKEND", "ollama")
    monkeypatch.setenv("LREACT_BASE_URL", "http://127.0.0.1:9")     # nothing listens there
    nb = nbformat.read(str(path), as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()


@pytest.mark.parametrize("path", RELEASED, ids=lambda p: p.name)
def test_each_notebook_runs_to_its_first_task(path, monkeypatch):
    monkeypatch.setenv("LREACT_BACKEND", "ollama")
    monkeypatch.setenv("LREACT_BASE_URL", "http://127.0.0.1:9")
    nb = nbformat.read(str(path), as_version=4)
    with pytest.raises(CellExecutionError, match="NotImplementedError"):
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
