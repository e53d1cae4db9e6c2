"""The student edition (``python -m autograder student-edition OUT``): built into a temporary
folder, it holds no hidden-test line or string, no solution block and no reference
implementation or model answer (up to renamed variables); it has none of the instructor's files;
and in that folder alone the lecture runs headless, and every visible test fails on the released
stubs and passes on the model answers pasted in (issue: two editions)."""
import ast
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from autograder import cells, paths
from autograder.instructor.edition import build
from autograder.proofs.edition_leaks import leaks, secrets

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow
ASSIGNMENTS = [("exercises", "lecture-ReAct-exercises"), ("lab", "lecture-ReAct-lab"),
               ("lab", "lecture-ReAct-lab2")]


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("edition") / "student"
    build(out)
    return out


def test_it_holds_nothing_that_gives_an_answer_away(edition):
    assert leaks(edition) == []
    secret = secrets()
    assert len(secret.lines) > 500 and len(secret.references) > 40    # the search has teeth
    names = {p.relative_to(edition).parts[0] for p in edition.iterdir()}
    assert not names & {"solutions", "autograder", "gradebook.db", "autograded", ".ci"}
    assert not list(edition.rglob("wrong_answers")) and not list(edition.rglob("hostile"))
    for py in edition.rglob("*.py"):
        assert "@reference_implementation\ndef" not in py.read_text(encoding="utf-8"), py
    assert (edition / "lreact" / "sampling.pyc").exists()
    assert not (edition / "lreact" / "sampling.py").exists()


def test_near_copies_of_answers_ship_compiled(edition):
    """The tester's finding: lreact functions close to lab 1's answers (not reference
    implementations) were shipped as source; they are marked ``@near_copy_of`` and their modules
    ship compiled, as the reference implementations' do."""
    for module in ("views/tool_call_rates", "actions/mcp_server", "engines/engine_text", "traces"):
        assert (edition / "lreact" / f"{module}.pyc").exists(), module
        assert not (edition / "lreact" / f"{module}.py").exists(), module


def test_every_path_it_mentions_is_in_it(edition):
    """The tester's finding: both labs pointed to ``autograder/README.md``, ``binder/start`` to
    ``jupyter-config/README.md``, ``environment.yml`` to ``tests/test_environment.py`` and
    ``autograder/feedback/pages.py``, none of them shipped.  Every path, top-level file and
    module a shipped file mentions is in the edition (the build refuses otherwise); the labs'
    page on grading is one the students have, in both editions."""
    from autograder.instructor.edition import ANNOTATION, dangling
    assert dangling(edition) == []
    for lab in ("lecture-ReAct-lab", "lecture-ReAct-lab2"):
        text = (edition / "lab" / f"{lab}.ipynb").read_text()
        assert "GRADING.md" in text and "autograder/README.md" not in text, lab
    assert (edition / "GRADING.md").exists() and (ROOT / "GRADING.md").exists()
    notes = (edition / "lreact" / "actions" / "codeact.py").read_text()
    assert f"autograder/sandbox/launch.py``{ANNOTATION}" in notes       # said, not dangling


def test_a_dangling_mention_is_found_and_named(edition, tmp_path):
    """The search itself: a path, a top-level file and a module that the edition lacks, in a
    README, a notebook and a script; a compiled module's source path and a glob are no miss."""
    import shutil

    from autograder.instructor.edition import dangling
    copy = tmp_path / "copy"
    shutil.copytree(edition, copy, ignore=shutil.ignore_patterns(".venv"))
    (copy / "README.md").write_text("See `autograder/README.md`, `lreact/sampling.py`, "
                                    "`lreact/*.pyc` and `lectures/figures/`.\n")
    nb = nbformat.read(str(copy / "lab" / "lecture-ReAct-lab.ipynb"), as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("Keys: `requirements-test.txt` and "
                                                  "`nbgrader_config.py`."))
    nbformat.write(nb, str(copy / "lab" / "lecture-ReAct-lab.ipynb"))
    (copy / "binder" / "start").write_text("# python -m autograder grade, scripts/timed.sh\n")
    (copy / "requirements-test.txt").unlink()
    assert dangling(copy) == [("Makefile", "requirements-test.txt"),
                              ("README.md", "autograder/README.md"),
                              ("binder/start", "python -m autograder"),
                              ("binder/start", "scripts/timed.sh"),
                              ("lab/lecture-ReAct-lab.ipynb", "nbgrader_config.py"),
                              ("lab/lecture-ReAct-lab.ipynb", "requirements-test.txt")]


def test_make_test_installs_what_the_editions_tests_need(edition):
    """The tester's finding: ``make test`` failed on a fresh machine, because pytest was only in
    the instructor's ``requirements-test.txt``.  The README's quick start (``make lab``, ``make
    test``) runs the Makefile's set-up, which installs every module the edition's tests import
    (and the kernel their notebooks run in), at the instructor's pins."""
    import re
    from importlib.metadata import packages_distributions
    readme = (edition / "README.md").read_text()
    quick = re.search(r"## Quick start.*?```bash\n(.*?)```", readme, re.S).group(1)
    assert [ln.split()[:2] for ln in quick.splitlines()] == [["make", "lab"], ["make", "test"]]
    makefile = (edition / "Makefile").read_text()
    for target in ("lab", "test"):
        deps = re.search(rf"^{target}:(.*)$", makefile, re.M).group(1).split()
        assert "setup" in deps, target
    stamp = re.search(r"^\$\(STAMP\):(.*?)\n\n", makefile, re.M | re.S).group(1)
    installed = set()
    for command in re.findall(r"pip install ([^\n]*)", stamp):
        for req in re.findall(r"-r (\S+)", command):
            assert req in stamp.splitlines()[0], f"$(STAMP) does not depend on {req}"
            for line in (edition / req).read_text().splitlines():
                line = line.split("#")[0].strip()
                if line:
                    installed.add(re.split(r"[=<>\[ ;]", line, maxsplit=1)[0].lower())
        if re.search(r"-e \.(\s|$)", command):
            installed.add("lreact")
    dists = packages_distributions()
    needed = {"ipykernel"}                   # the kernel the tests' notebooks run in
    for test in (edition / "tests").glob("*.py"):
        for node in ast.walk(ast.parse(test.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            needed |= {n.split(".")[0] for n in names}
    needed -= set(sys.stdlib_module_names)
    missing = {m for m in needed if m != "lreact" and not {d.lower() for d in dists.get(m, [m])}
               & installed} | ({"lreact"} - installed if "lreact" in needed else set())
    assert missing == set(), f"make test would not find: {sorted(missing)}"
    test_pins = (ROOT / "requirements-test.txt").read_text().splitlines()
    assert next(ln for ln in (edition / "requirements-test.txt").read_text().splitlines()
                if ln.startswith("pytest")) in test_pins


def test_a_leak_is_found_and_named(edition, tmp_path):
    """The search itself: a model answer pasted into a lecture notebook, with its variables
    renamed, and a hidden test's line in a README."""
    import shutil
    copy = tmp_path / "copy"
    shutil.copytree(edition / "lectures", copy / "lectures")
    source = cells.load(paths.source_path("lecture-ReAct-lab"))
    answer = next(c for c in source.cells if cells.grade_id(c) == "top_p_filter").source
    renamed = answer.replace("probs", "weights").replace("order", "idx")
    nb = nbformat.read(str(copy / "lectures" / "lecture-ReAct.ipynb"), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(renamed))
    nbformat.write(nb, str(copy / "lectures" / "lecture-ReAct.ipynb"))
    hidden = next(iter(secrets().lines))
    (copy / "README.md").write_text(f"notes\n    {hidden}\n")
    found = leaks(copy)
    assert any("top_p_filter" in leak.what for leak in found)
    assert any(leak.path == "README.md" for leak in found)


def _run(path: Path, edition: Path) -> list:
    """The notebook run with nbclient in the edition alone; (cell id, is a test, error or None)."""
    env = {**os.environ, "PYTHONPATH": str(edition), "LREACT_BACKEND": "ollama",
           "LREACT_BASE_URL": "http://127.0.0.1:9", "LREACT_FETCH_MODEL": "0"}
    code = ("import ast, json, sys, nbformat\nfrom nbclient import NotebookClient\n"
            "def visible(source):\n"
            "    body = ast.parse(source).body\n"
            "    return any(not isinstance(n, (ast.Import, ast.ImportFrom, ast.Assign, ast.FunctionDef))\n"
            "               and not (\n"
            "        isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)\n"
            "        and getattr(n.value.func, 'id', '') == 'print') for n in body)\n"
            "nb = nbformat.read(sys.argv[1], as_version=4)\n"
            "NotebookClient(nb, timeout=300, kernel_name='python3', allow_errors=True,\n"
            "               resources={'metadata': {'path': sys.argv[2]}}).execute()\n"
            "out = []\nfor c in nb.cells:\n"
            "    if c.cell_type != 'code':\n        continue\n"
            "    g = c.metadata.get('nbgrader', {})\n"
            "    if g.get('grade') and not g.get('solution') and not visible(c.source):\n"
            "        continue   # every test of the cell is hidden: nothing runs here\n"
            "    err = next((o.get('ename', '') + ': ' + o.get('evalue', '')[:200] for o in c.outputs\n"
            "                if o.get('output_type') == 'error'), None)\n"
            "    out.append([c.get('id'), bool(g.get('grade') and not g.get('solution')), err])\n"
            "print(json.dumps(out))\n")
    done = subprocess.run([sys.executable, "-c", code, str(path), str(path.parent)],
                          cwd=edition, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _with_answers(released: Path, aid: str, dest: Path) -> Path:
    nb = nbformat.read(str(released), as_version=4)
    answers = {cells.grade_id(c): c.source for c in cells.load(paths.source_path(aid)).cells
               if cells.is_answer(c)}
    for c in nb.cells:
        if cells.is_answer(c) and cells.grade_id(c) in answers:
            c.source = answers[cells.grade_id(c)]
    nbformat.write(nb, str(dest))
    return dest


def test_the_lecture_and_the_course_run_in_the_edition_alone(edition):
    env = {**os.environ, "PYTHONPATH": str(edition)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests"], cwd=edition, env=env, capture_output=True, text=True,
                          timeout=2400)
    assert done.returncode == 0, done.stdout[-3000:]


def test_visible_tests_fail_on_the_stubs_and_pass_on_the_model_answers(edition):
    runs = []
    for folder, aid in ASSIGNMENTS:
        released = edition / folder / f"{aid}.ipynb"
        runs.append((aid, "stub", released))
        runs.append((aid, "answers", _with_answers(released, aid,
                                                   released.with_name(f"{aid}-answers.ipynb"))))
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda r: (r[0], r[1], _run(r[2], edition)), runs))
    for aid, kind, rows in results:
        tests = [(cid, err) for cid, is_test, err in rows if is_test]
        assert tests, aid
        if kind == "stub":
            passed = [cid for cid, err in tests if err is None]
            assert not passed, f"{aid}: visible tests pass on the stubs: {passed}"
        else:
            failed = [(cid, err) for cid, err in tests if err is not None]
            assert not failed, f"{aid}: visible tests fail on the model answers: {failed}"


def test_an_answer_that_copies_a_reference_is_flagged_never_zeroed(tmp_path):
    """Belt and braces: the model answer of top_p_filter with renamed variables, and the course's
    softmax pasted in, are flagged in the CSV's reason and the summary; the scores stay.  A
    function brought in as compiled code is refused while grading and flagged."""
    import csv
    import inspect

    from autograder.instructor.grade import grade_all
    from lreact import sampling
    source = cells.load(paths.source_path("lecture-ReAct-lab"))
    nb = cells.load(paths.student_path("lecture-ReAct-lab"))          # every other answer a stub
    model = next(c for c in nb.cells if cells.grade_id(c) == "top_p_filter")
    model.source = next(c for c in source.cells if cells.grade_id(c) == "top_p_filter").source \
        .replace("probs", "weights").replace("order", "ranked")
    softmax = next(c for c in nb.cells if cells.grade_id(c) == "softmax")
    ref = inspect.getsource(sampling.softmax.__wrapped__).replace("@reference_implementation\n", "")
    softmax.source = ref.replace("z", "logits_in")
    # a right temperature_softmax brought in as compiled code (outside red team, issue 28)
    import base64
    import marshal
    code = compile("def temperature_softmax(z, T, *, softmax_fn=None):\n    import numpy as np\n"
                   "    z = np.asarray(z, dtype=float) / T\n    e = np.exp(z - z.max())\n"
                   "    return e / e.sum()\n", "x", "exec")
    blob = base64.b64encode(marshal.dumps(code)).decode()
    hidden = next(c for c in nb.cells if cells.grade_id(c) == "temperature_softmax")
    hidden.source = f"import base64, marshal\nexec(marshal.loads(base64.b64decode({blob!r})))\n"
    dest = tmp_path / "subs" / "ann" / "lecture-ReAct-lab"
    dest.mkdir(parents=True)
    nbformat.write(nb, str(dest / "lecture-ReAct-lab.ipynb"))
    records, _ = grade_all(tmp_path / "subs", out=tmp_path / "grades.csv", jobs=1, timeout=60,
                           state=tmp_path / "state", progress=False, gradebook=False)
    r = records[0]
    assert set(r["copied"]) == {"top_p_filter", "softmax"}, r.get("copied")
    row = list(csv.DictReader((tmp_path / "grades.csv").open()))[0]
    assert "looks copied: softmax, top_p_filter" in row["reason"]
    assert r["total"] > 0                               # flagged, not zeroed
    assert list(r["hidden_code"]) == ["temperature_softmax"], r.get("hidden_code")
    assert "brings code it does not show: temperature_softmax" in row["reason"]
    lost = {k: v for k, v in r["scores"].items() if k.startswith("test_temperature_softmax")}
    assert lost and all(got == 0 for got, _ in lost.values()), lost    # refused while grading
