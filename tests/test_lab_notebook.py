"""The lab's source notebook and its catalogue of wrong answers (fast checks; one slow run).

- the source notebook follows the graded lab contract: one answer cell per contract function,
  grade_id = function name, tests ``test_<name>`` / ``test_<name>__*`` locked with points,
  explicit readable cell ids, no outputs; the closing note states the points per part;
- the solution functions agree with the package's reference implementations (lreact.sampling,
  lreact.chatml), so hidden tests comparing with the reference stay right when it changes;
- every catalogued wrong answer is well-formed (``# WRONG:`` first line, a known grade_id, valid
  Python defining that function) and differs from the solution;
- slow: the source notebook runs top to bottom with no Ollama server, without errors or stderr.
The full proof (source full marks, stub zero, every wrong answer loses marks) is
``python -m autograder selfcheck``.
"""
from __future__ import annotations

import ast
import contextlib
import io
import json
import math
import os
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lreact import (AssistantMessage, ScriptedLLM, SystemMessage, ToolCall, ToolResultMessage,
                    UserMessage)
from lreact import chatml, sampling
from lreact.tools import REGISTRY, TOOLS

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "lecture-ReAct-lab"
SOURCE = ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
WRONG = ROOT / "autograder" / "proofs" / "wrong_answers" / ASSIGNMENT
NO_OLLAMA = "http://127.0.0.1:9"  # the discard port: connections are refused at once

ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


def _nb():
    return nbformat.read(SOURCE, as_version=4)


def _meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def _answers(nb):
    return {_meta(c)["grade_id"]: c for c in nb.cells if _meta(c).get("solution")}


def _tests(nb):
    return {_meta(c)["grade_id"]: c for c in nb.cells if _meta(c).get("grade")}


# calculate (B.1), B.5 and B.6 are optional in this lab: their answer cells stay (the registry and
# B.7 use them when written), with no tests; lab 2 grades them (D.3, C.0), with their catalogue
OPTIONAL = {"calculate": "calculate-intro", "check_pairing": "pairing-intro",
            "render_chatml": "chatml-intro"}


def _graded(nb):
    return {gid: c for gid, c in _answers(nb).items() if gid not in OPTIONAL}


def test_notebook_is_valid_without_outputs_and_with_readable_ids():
    nb = _nb()
    nbformat.validate(nb)
    ids = [c.get("id") for c in nb.cells]
    assert all(i and ID_RE.match(i) for i in ids), [i for i in ids if not i or not ID_RE.match(i)]
    assert len(ids) == len(set(ids))
    for c in nb.cells:
        if c.cell_type == "code":
            assert c.outputs == [] and c.execution_count is None, c.id
        if _meta(c).get("grade_id"):
            assert c.id == _meta(c)["grade_id"], c.id


def test_answer_cells_follow_the_contract():
    """The graded functions are read from the notebook's metadata (python -m autograder
    check-course holds the rules every course follows); here, what this lab adds: each answer
    cell defines the function its grade_id names."""
    from autograder.proofs.course_rules import check
    assert not check(ROOT, [ASSIGNMENT]), [str(p) for p in check(ROOT, [ASSIGNMENT])]
    nb = _nb()
    answers = _answers(nb)
    for gid, cell in answers.items():
        m = _meta(cell)
        assert m == {"solution": True, "grade": False, "locked": False, "grade_id": gid,
                     "schema_version": 3}, gid
        assert "### BEGIN SOLUTION" in cell.source and "### END SOLUTION" in cell.source, gid
        assert re.search(rf"^def {gid}\(", cell.source, re.M), f"{gid} must define {gid}()"


def test_every_function_has_a_visible_and_a_hidden_test():
    nb = _nb()
    tests = _tests(nb)
    assert not [t for t in tests if any(t == f"test_{o}" or t.startswith(f"test_{o}__") for o in OPTIONAL)]
    for gid in _graded(nb):
        mine = {t: c for t, c in tests.items() if t == f"test_{gid}" or t.startswith(f"test_{gid}__")}
        assert f"test_{gid}" in mine, gid
        assert any("### BEGIN HIDDEN TESTS" in c.source for c in mine.values()), gid
        assert "### BEGIN HIDDEN TESTS" not in mine[f"test_{gid}"].source, \
            f"test_{gid} is the visible test; hidden parts go in test_{gid}__*"
    for tid, cell in tests.items():
        m = _meta(cell)
        assert m["locked"] and not m["solution"] and m["points"] > 0, tid
        assert cell.source.count("### BEGIN HIDDEN TESTS") == cell.source.count("### END HIDDEN TESTS")
        # helpers are imported inside each test cell
        if "assert_" in cell.source or "plain(" in cell.source:
            assert "from lreact." in cell.source, tid
        assert "get_ipython" not in cell.source


def test_introduction_is_short_and_grading_details_come_last():
    """Issue 19 §4 and the week's issue §3: at most about 250 words before the first task; the
    introduction names every way to a real model (the embedded engine, the default without a
    server, first), says what to avoid (stderr, warnings) before the tasks, and gives the number
    of model cells computed from the code; how answers are run when graded is the last section."""
    from lreact.views.workload import model_cells, words_before_first_task
    nb = _nb()
    cells = nb.cells
    title = cells[0].source
    assert cells[0].id == "title" and words_before_first_task(SOURCE) <= 250
    assert "extension lab" in title and "last section" in title
    flat = " ".join(title.split())
    for needed in ("embedded engine", "the default when no server answers", "Ollama",
                   "OpenAI-compatible", "stderr", "warnings"):
        assert needed in flat, needed
    n = len(model_cells(SOURCE))
    words = {6: "Six", 7: "Seven", 5: "Five", 8: "Eight"}
    assert f"**A model is optional.** {words[n]} cells" in flat, n
    last = cells[-1]
    assert last.id == "when-graded" and last.source.startswith("## When the lab is graded")
    for needed in ("GRADING.md", "isinstance", "repeat(", "plain"):
        assert needed in last.source, needed


def test_optional_b5_b6_are_graded_in_lab_2():
    """What moved out of the core path stays graded where it went, with its catalogue."""
    from autograder.proofs import catalogue
    lab2 = nbformat.read(ROOT / "solutions" / "lecture-ReAct-lab2" / "lecture-ReAct-lab2.ipynb",
                         as_version=4)
    graded2 = {_meta(c)["grade_id"] for c in lab2.cells if _meta(c).get("grade")}
    answers2 = {_meta(c)["grade_id"]: c for c in lab2.cells if _meta(c).get("solution")}
    for gid in OPTIONAL:
        assert {f"test_{gid}", f"test_{gid}__hidden"} <= graded2, gid
        assert answers2[gid].source == _answers(_nb())[gid].source, gid
        assert len([e for e in catalogue.entries("lecture-ReAct-lab2") if e.grade_id == gid]) >= 3
        intro = {c.id: c.source for c in _nb().cells}[OPTIONAL[gid]]
        assert "ptional here" in intro and "graded in lab 2" in intro, gid
        assert ("lab 2, D.3" if gid == "calculate" else "lab 2, C.0") in intro, gid



def test_check_pairing_is_described_the_same_way_everywhere():
    """Part IV, lab 1 (title, B.5) and lab 2 (C.0) agree: optional in lab 1, B.5; graded in lab 2, C.0."""
    part4 = nbformat.read(ROOT / "lectures" / "lecture-ReAct-4-messages.ipynb", as_version=4)
    said = " ".join(" ".join(c.source.split()) for c in part4.cells if "check_pairing" in c.source
                    and c.cell_type == "markdown")
    assert "optional in lab 1, B.5" in said and "graded in lab 2, C.0" in said
    assert "which you write in lab 2" not in said
    cells = {c.id: " ".join(c.source.split()) for c in _nb().cells}
    assert "B.5 and B.6 are optional here; lab 2 grades them" in cells["title"]
    assert "optional here: graded in lab 2" in cells["pairing-intro"] and "lab 2, C.0" in cells["pairing-intro"]
    lab2 = nbformat.read(ROOT / "solutions" / "lecture-ReAct-lab2" / "lecture-ReAct-lab2.ipynb",
                         as_version=4)
    assert "the first lab's B.5, graded here" in next(c.source for c in lab2.cells
                                                       if c.id == "c-pairing-task")


def _stub(name):
    def stub(*args, **kwargs):
        raise NotImplementedError(f"{name}: write this function (see the task above)")
    return stub


@pytest.mark.parametrize("stubs, said, unsaid", [
    ((), ["pairing: ok"] * 3, ["write", "not checked", "not written"]),
    (("check_pairing",), ["pairing: not checked (check_pairing, the optional B.5, is not written)"] * 3,
     ["run_agent", "cannot run"]),
    (("render_chatml",), ["pairing: ok", "render_chatml (the optional B.6) is not written"],
     ["cannot run"]),
    (("run_agent", "check_pairing"), ["The loop cannot run yet: write run_agent first."],
     ["check_pairing", "pairing:"]),
    (("execute_tool_call",), ["The loop cannot run yet: write execute_tool_call first."],
     ["check_pairing", "run_agent first"]),
])
def test_b7_says_only_what_is_missing(stubs, said, unsaid):
    """B.7 once said "Write run_agent (and the functions it uses) and check_pairing first" when
    only the optional check_pairing was missing: each message now names the stub that raised."""
    from types import SimpleNamespace
    nb = _nb()
    cells = {c.id: c.source for c in nb.cells}
    keep = {"setup", "registry", "system-prompt"}
    ns: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for cell in nb.cells:
            if cell.cell_type == "code" and (cell.id in keep or _meta(cell).get("solution")):
                exec(compile(cell.source, cell.id, "exec"), ns)
        ns["check_setup"] = lambda timeout=2: SimpleNamespace(ok=False)   # scripted models
        ns.update({name: _stub(name) for name in stubs})                   # as released
        out.seek(0)
        out.truncate(0)
        for cid in ("live-setup", "full-loop", "final-context"):
            exec(compile(cells[cid], cid, "exec"), ns)
    text = out.getvalue()
    for words in said:
        assert text.count(words) >= said.count(words), (words, text)
    for words in unsaid:
        assert words not in text, (words, text)


def test_closing_note_states_the_points_per_part():
    nb = _nb()
    cells = nb.cells
    boundary = next(i for i, c in enumerate(cells) if c.id == "part-b")
    part_a = sum(_meta(c)["points"] for c in cells[:boundary] if _meta(c).get("grade"))
    part_b = sum(_meta(c)["points"] for c in cells[boundary:] if _meta(c).get("grade"))
    note = next(c for c in cells if c.id == "closing-note").source
    assert f"Part A: {part_a} points" in note and f"Part B: {part_b} points" in note
    assert f"total {part_a + part_b}" in note
    # the hidden run_agent scenarios of the brief are all listed
    for words in ["one call, then an answer", "immediate text answer", "parallel calls",
                  "malformed JSON", "unknown tool", "break the schema", "raise",
                  "never stops calling", "continuing an existing history"]:
        assert words in note, words


# --- the solutions agree with the package's references -------------------------------------

@pytest.fixture(scope="module")
def solution():
    """The namespace after the setup cell, the given helpers and every answer cell."""
    nb = _nb()
    keep = {"setup", "generate-unconstrained", "registry", "system-prompt"}
    ns: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in nb.cells:
            if cell.cell_type == "code" and (cell.id in keep or _meta(cell).get("solution")):
                exec(compile(cell.source, cell.id, "exec"), ns)
    return ns


finite = st.floats(-50, 50, allow_nan=False)
logits = st.lists(finite, min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(z=logits, T=st.one_of(st.just(0.0), st.floats(0.05, 10)))
def test_softmax_and_temperature_match_the_reference(solution, z, T):
    assert np.allclose(solution["softmax"](z), sampling.softmax(z), atol=1e-12)
    assert np.allclose(solution["temperature_softmax"](z, T), sampling.temperature_softmax(z, T),
                       atol=1e-12)


@settings(max_examples=150, deadline=None)
@given(z=logits, k=st.integers(1, 15), p=st.floats(0.01, 1.0))
def test_truncation_matches_the_reference(solution, z, k, p):
    probs = sampling.softmax(z)
    assert np.allclose(solution["top_k_filter"](probs, k), sampling.top_k_filter(probs, k))
    assert np.allclose(solution["top_p_filter"](probs, p), sampling.top_p_filter(probs, p))


@settings(max_examples=60, deadline=None)
@given(z=logits, seed=st.integers(0, 2**32 - 1),
       T=st.sampled_from([0, 0.5, 1.0, 2.0]), k=st.sampled_from([None, 1, 3]),
       p=st.sampled_from([None, 0.5, 0.9]))
def test_sample_token_draws_like_the_reference(solution, z, seed, T, k, p):
    ours = solution["sample_token"](z, temperature=T, top_k=k, top_p=p,
                                    rng=np.random.default_rng(seed))
    ref = sampling.sample_token(z, temperature=T, top_k=k, top_p=p,
                                rng=np.random.default_rng(seed))
    assert ours == ref


def _histories():
    text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
    ident = st.text("abcdef0123456789_", min_size=1, max_size=6)
    args = st.one_of(
        st.dictionaries(st.sampled_from(["city", "unit", "expression", "ä"]), text, max_size=3)
        .map(json.dumps),
        text)  # possibly malformed JSON
    call = st.builds(ToolCall, ident, st.sampled_from(["get_weather", "calculate"]), args)
    message = st.one_of(
        st.builds(SystemMessage, text), st.builds(UserMessage, text),
        st.builds(AssistantMessage, text, st.lists(call, max_size=3)),
        st.builds(ToolResultMessage, ident, text))
    return st.lists(message, max_size=8)


@settings(max_examples=200, deadline=None)
@given(history=_histories(), tools=st.sampled_from([None, [], TOOLS, TOOLS[:1]]))
def test_render_chatml_matches_the_reference(solution, history, tools):
    assert solution["render_chatml"](history, tools) == chatml.render_chatml(history, tools)


def test_run_agent_solution_on_the_berlin_trace(solution):
    llm = ScriptedLLM([
        AssistantMessage(tool_calls=[ToolCall("call_1", "get_weather", '{"city": "Berlin"}')]),
        AssistantMessage("It's 12°C and rainy in Berlin.")])
    history = [SystemMessage("s")]
    answer = solution["run_agent"]("What's the weather in Berlin?", llm, TOOLS, REGISTRY,
                                   history=history)
    assert answer == "It's 12°C and rainy in Berlin."
    assert [m.role for m in history] == ["system", "user", "assistant", "tool", "assistant"]
    assert history[3].tool_call_id == "call_1" and history[3].content == "12°C, rainy"
    assert [len(c["messages"]) for c in llm.calls] == [2, 4]
    solution["check_pairing"](history)


# --- the frequency checks: every correct sampler passes (issue 19, section 2) ---------------

def _exact_tail(n, p, ks):
    """P(X in ks) for X ~ Binomial(n, p), p a Fraction: exact, in integers."""
    from fractions import Fraction
    a, b = p.numerator, p.denominator
    return Fraction(sum(math.comb(n, j) * a ** j * (b - a) ** (n - j) for j in ks), b ** n)


@pytest.mark.parametrize("n, p", [(500, "1/50"), (3000, "2/5"), (2000, "4/7")])
def test_binomial_bounds_are_the_exact_tails(n, p):
    from fractions import Fraction

    from lreact.labchecks import binomial_bounds
    p, tail = Fraction(p), 1e-10
    lo, hi, mass = binomial_bounds(n, float(p), tail)
    below, above = _exact_tail(n, p, range(lo)), _exact_tail(n, p, range(hi + 1, n + 1))
    assert below <= tail < below + _exact_tail(n, p, [lo])          # the widest bounds
    assert above <= tail < above + _exact_tail(n, p, [hi])
    assert mass == pytest.approx(float(below + above), rel=1e-9)


def test_frequency_check_passes_other_correct_samplers_and_catches_wrong_ones():
    from lreact.labchecks import assert_frequencies
    p = np.array([0.4, 0.3, 0.25, 0.03, 0.02])
    for seed in range(40):      # the Gumbel-max trick and an inverse CDF: other draws, same law
        rng = np.random.default_rng(seed)
        gumbel = np.bincount([int(np.argmax(np.log(p) + rng.gumbel(size=5))) for _ in range(3000)], minlength=5)
        inverse = np.bincount(np.searchsorted(np.cumsum(p), rng.random(3000) * p.sum(), side="right"), minlength=5)
        assert_frequencies(gumbel, p)
        assert_frequencies(inverse, p)
    rng = np.random.default_rng(0)
    for wrong in (np.bincount(rng.integers(0, 5, 3000), minlength=5),      # uniform draws
                  [1300, 900, 750, 30, 20],                                 # token 3 too rare
                  [1200, 900, 750, 150, 0]):                                # token 4 never
        with pytest.raises(AssertionError, match="do not follow the distribution"):
            assert_frequencies(wrong, p)
    with pytest.raises(AssertionError, match="probability 0"):
        assert_frequencies([2999, 0, 0, 0, 1], [1, 0, 0, 0, 0])


def test_sample_token_task_states_the_false_failure_probability(solution, monkeypatch):
    """The task text of A.5 states the chance that a correct sampler fails, computed here from the
    test cells' own draw counts (every assert_frequencies call of sample_token's tests, run)."""
    import warnings

    from lreact import labchecks
    seen, check = [], labchecks.assert_frequencies

    def record(counts, probs, **kw):
        seen.append((int(sum(counts)), [float(x) for x in probs]))
        check(counts, probs, **kw)
    monkeypatch.setattr(labchecks, "assert_frequencies", record)
    nb = _nb()
    ns = dict(solution)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        for gid, cell in _tests(nb).items():
            if gid.startswith("test_sample_token"):
                exec(compile(cell.source, gid, "exec"), ns)
    assert len(seen) == 10
    total = sum(labchecks.failure_bound(n, probs) for n, probs in seen)
    stated = math.ceil(total * 1e10) / 10          # in units of 1e-9, rounded up
    intro = next(c for c in nb.cells if c.id == "sample-token-intro").source
    assert f"{stated:.1f} \\times 10^{{-9}}" in intro and "the ten checks" in intro, (total, stated)
    assert all(labchecks.failure_bound(n, probs) <= labchecks.ALPHA for n, probs in seen)


def test_top_p_visible_test_shows_the_float_sum_case(solution):
    """A.4 says sums of floats are not exact and its visible test shows p = 1 on ten tokens of 0.1:
    an answer without a tolerance fails the visible test, not only a hidden one."""
    cell = _tests(_nb())["test_top_p_filter__edge"].source.split("### BEGIN HIDDEN TESTS")[0]
    assert "[0.1] * 10, 1" in cell

    def no_tolerance(probs, p):
        q = np.asarray(probs, dtype=float)
        if not 0 < p <= 1:
            raise ValueError("p")
        order = np.argsort(-q, kind="stable")
        n = int(np.argmax(np.cumsum(q[order]) >= p)) + 1
        out = np.zeros(q.shape)
        out[order[:n]] = q[order[:n]]
        return out / out.sum()
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(cell, "visible", "exec"), dict(solution))
        with pytest.raises(AssertionError, match=r"\[0\.1\] \* 10"):
            exec(compile(cell, "visible", "exec"), dict(solution, top_p_filter=no_tolerance))


def test_generate_constrained_leaves_eos_out_as_the_lecture_does(solution):
    """Lab A.7 and the lecture's ``generate`` (Part I) agree: <eos> ends the output, not part of it."""
    from lreact import grammar
    import inspect
    lecture = nbformat.read(ROOT / "lectures" / "lecture-ReAct-1-sampling.ipynb", as_version=4)
    assert any("grammar.sample_text(" in c.source for c in lecture.cells)   # the lecture's generator
    generate = inspect.getsource(grammar.sample_text)
    assert re.search(r"if VOCAB\[token\] == EOS:\n\s+break\n\s+prefix\.append", generate)
    eos = grammar.TOKEN_ID[grammar.EOS]
    for seed in range(20):
        ids = solution["generate_constrained"](grammar.toy_logits, np.random.default_rng(seed))
        free = solution["generate_unconstrained"](grammar.toy_logits, np.random.default_rng(seed))
        assert eos not in ids and grammar.parses(grammar.detokenize(ids))
        assert eos not in free


# --- the catalogue of wrong answers --------------------------------------------------------

def _wrong_entries():
    from autograder.proofs import catalogue
    return catalogue.entries(ASSIGNMENT)


def test_catalogue_covers_every_function():
    """Every entry is of a graded function of the lab (check-course proves each has three)."""
    entries = _wrong_entries()
    assert {e.grade_id for e in entries} == set(_graded(_nb()))


@pytest.mark.parametrize("entry", _wrong_entries(), ids=lambda e: e.path.stem)
def test_wrong_answer_is_well_formed_and_runs(entry, solution):
    """Each wrong answer defines its function, differs from the solution and RUNS as a cell
    after the setup cell: an entry that fails by itself (a stale name, a syntax slip) would be
    'caught' for the wrong reason."""
    assert re.match(r"^[a-z0-9_]+$", entry.slug)
    assert len(entry.mistake) > 10
    tree = ast.parse(entry.source)
    assert any(isinstance(n, ast.FunctionDef) and n.name == entry.grade_id for n in tree.body)
    assert "### BEGIN SOLUTION" not in entry.source
    solution_source = _answers(_nb())[entry.grade_id].source
    assert entry.source.split("\n", 1)[1].strip() != solution_source.strip()
    ns = dict(solution)
    ns.pop(entry.grade_id)
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(entry.source, str(entry.path), "exec"), ns)
    assert callable(ns.get(entry.grade_id)), f"{entry.path.name} does not define {entry.grade_id}"
    assert ns[entry.grade_id] is not solution[entry.grade_id]


def test_tests_and_demo_cells_take_references_from_private_copies():
    """The public reference functions are disabled while grading (autograder/inside/runner.py): the
    lab's other cells must take them from lreact.labchecks.reference, and bind no name that a
    later answer could call."""
    public = re.compile(r"from lreact\.(sampling|chatml) import [^\n]*\b(softmax|temperature_softmax|"
                        r"top_k_filter|top_p_filter|sample_token|render_chatml)\b|"
                        r"from lreact\.tools import [^\n]*\b(REGISTRY|get_weather|calculate)\b|"
                        r"from lreact import [^\n]*\b(tools|sampling|chatml)\b|lreact\.(sampling|tools|chatml)\.")
    for cell in _nb().cells:
        if cell.cell_type == "code" and not _meta(cell).get("solution"):
            assert not public.search(cell.source), cell.id
    demo = {c.id: c.source for c in _nb().cells}
    # the answers' process has no reference code: the target cell says so there, and the
    # scripted answers of live-setup come from the WEATHER table, not from the reference
    assert "reference(" not in demo["live-setup"]


@pytest.mark.parametrize("assignment", ["lecture-ReAct-lab", "lecture-ReAct-lab2",
                                        "lecture-ReAct-exercises"])
def test_every_test_cell_grades_its_own_function_alone(assignment):
    """The static half of the no-cascade proof (the graded half: tests/test_selfcheck_grading.py):
    no test cell reads another answer's name, and every call of a function that builds on
    another graded one passes the course's collaborator (its ``..._fn`` keyword parameters)."""
    from autograder import cells
    from autograder.proofs import selfcheck

    nb = cells.load(ROOT / "solutions" / assignment / f"{assignment}.ipynb")
    assert selfcheck.collaborator_gaps(nb) == []
    for cell in nb.cells:  # the given first lines: None means the student's own function
        if cells.is_answer(cell) and "_fn=None" in cell.source.split('"""')[0]:
            given = cell.source.split("### BEGIN SOLUTION")[0]
            for name in re.findall(r"\b(\w+_fn)=None", cell.source.split('"""')[0]):
                assert re.search(rf"^    {name} = \w+ if {name} is None else {name}", given, re.M), \
                    (cells.grade_id(cell), name)


def test_a_private_copy_leaves_the_public_references_locked():
    """The run_agent tests take the course's executor from ``reference("traces", ...)``, whose
    module imports lreact.chatml: a public module first imported while the private copy is built
    must still be guarded, or a later answer could borrow render_chatml unnoticed (fresh process:
    the import order matters)."""
    import subprocess
    import sys

    code = ("import lreact, lreact.reference, sys\n"
            "lreact.reference.engage(anywhere=True)\n"
            "from lreact.labchecks import reference\n"
            "assert 'lreact.chatml' not in sys.modules\n"
            "reference('traces', 'run_tool')\n"
            "import lreact.chatml\n"
            "try:\n"
            "    lreact.chatml.render_chatml([])\n"
            "except lreact.reference.ReferenceUnavailable:\n"
            "    print('locked')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.stdout.strip() == "locked", done.stdout + done.stderr[-2000:]


def test_catalogue_borrows_every_reference():
    """Each public reference function has a catalogued wrong answer that borrows it."""
    from autograder.proofs import catalogue
    borrowing = {e.grade_id for e in _wrong_entries()
                 if re.search(r"lreact\.(sampling|chatml|tools)|from lreact import tools|"
                              r"labchecks import reference", e.source)}
    assert {"softmax", "temperature_softmax", "top_k_filter", "top_p_filter", "sample_token",
            "get_weather"} <= borrowing
    lab2 = {e.grade_id for e in catalogue.entries("lecture-ReAct-lab2")
            if re.search(r"lreact\.(chatml|tools)|from lreact import tools|labchecks import reference",
                         e.source)}
    assert {"render_chatml", "calculate"} <= lab2      # graded in lab 2 since the week's issue


# --- slow: the notebook runs offline --------------------------------------------------------

@pytest.mark.slow
def test_source_notebook_runs_offline_without_errors(tmp_path):
    from nbclient import NotebookClient

    nb = _nb()
    env_before = os.environ.get("OLLAMA_HOST")
    os.environ["OLLAMA_HOST"] = NO_OLLAMA
    try:
        NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        if env_before is None:
            os.environ.pop("OLLAMA_HOST", None)
        else:
            os.environ["OLLAMA_HOST"] = env_before
    problems = [(c.id, o.get("ename") or o.get("text", "")[:200]) for c in nb.cells
                if c.cell_type == "code" for o in c.outputs
                if o.output_type == "error" or (o.output_type == "stream" and o.name == "stderr")]
    assert problems == []
    # a test cell shows no value (nbgrader reads an execute_result as partial credit and warns)
    valued = [c.id for c in nb.cells if c.cell_type == "code"
              and c.metadata.get("nbgrader", {}).get("grade")
              and any(o.output_type == "execute_result" for o in c.outputs)]
    assert valued == []
    out = {c.id: "".join(o.get("text", "") for o in c.outputs if o.output_type == "stream")
           for c in nb.cells if c.cell_type == "code"}
    assert "ollama serve" in out["sweep"] and "ollama pull" in out["sweep"]
    assert "constrained:   0% of 200 samples fail to parse" in out["measure"]
    unconstrained = int(re.search(r"unconstrained: (\d+)%", out["measure"]).group(1))
    assert unconstrained >= 30
    assert "scripted model" in out["full-loop"] and out["full-loop"].count("pairing: ok") == 3
