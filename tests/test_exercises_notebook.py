"""The pen-and-paper exercises (solutions/lecture-ReAct-exercises/): structure and grading proofs.

Fast checks read the source notebook and the catalogue of wrong answers, and run the cells in this
process: each answer with parts earns its points per part (``LOSES``: exactly the test cells each
wrong answer costs, the carry-forward of Exercise 6(b) included).  The visible checks
(``lreact.answercheck``) give no answer away: a small-space item (fewer than 10**6 candidates: one
number, a short or mostly-zero distribution, a label, a set of labels, a small integer, a short
ordered list: ``SMALL_WRONG``) has no key and its check says the same for every value of the
right form, in the released student version too; a large one (the distributions of Exercises 1
and 5(a): ``LARGE_WRONG``) says right or "not yet" from a fresh key that ``python -m
lreact.answercheck`` made from the hidden tests, and agrees with its hidden test on the solution,
on right answers in other forms and on every catalogued wrong answer.  The ``slow`` ones grade with ``autograder.run.engine``: the source
earns every autograded point, the released stubs earn none, every catalogued wrong answer loses
exactly its ``LOSES`` cells, and answer cells that shadow builtins or patch jsonschema gain
nothing.
"""
import contextlib
import io
import json
import warnings
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent

ASSIGNMENT = "lecture-ReAct-exercises"
SOURCE = ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
WRONG = ROOT / "autograder" / "proofs" / "wrong_answers" / ASSIGNMENT


def meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


@pytest.fixture(scope="module")
def nb():
    return nbformat.read(SOURCE, as_version=4)


def answer_cells(nb):
    return [c for c in nb.cells if meta(c).get("solution") and not meta(c).get("grade")]


def manual_cells(nb):
    return [c for c in nb.cells if meta(c).get("solution") and meta(c).get("grade")]


def grading_cells(nb, gid):
    return [c for c in nb.cells if meta(c).get("grade") and not meta(c).get("solution")
            and (meta(c)["grade_id"] == f"test_{gid}"
                 or meta(c)["grade_id"].startswith(f"test_{gid}__"))]


class _Wrong:
    """A catalogue entry (autograder/proofs/catalogue.py) seen like a file: its name and full cell."""

    def __init__(self, entry):
        self.stem, self.name, self._source = entry.path.stem, entry.path.name, entry.source

    def read_text(self):
        return self._source

    def __str__(self):
        return self.name


def catalogue():
    from autograder.proofs import catalogue as wrong_answers
    return [_Wrong(e) for e in wrong_answers.entries(ASSIGNMENT)]


# --- structure ----------------------------------------------------------------------------

def test_notebook_is_valid_committed_without_outputs_and_has_stable_ids(nb):
    nbformat.validate(nb)
    ids = [c.id for c in nb.cells]
    assert len(ids) == len(set(ids)), "cell ids must be unique"
    assert all(re.fullmatch(r"[a-z0-9_-]+", i) for i in ids), ids
    for c in nb.cells:
        if c.cell_type == "code":
            assert c.outputs == [] and c.execution_count is None, c.id
        if meta(c):
            assert c.id == meta(c)["grade_id"], "a graded cell's id is its grade_id"
            assert meta(c)["schema_version"] == 3


def test_exercise_6_asks_for_the_order_of_this_courses_convention(nb):
    """Part I teaches two orders (this course and Hugging Face: temperature first; llama.cpp's
    default chain and Ollama 0.30+: temperature last), so 6(a) names the convention it asks
    about; its hidden test accepts the label in any case and spacing."""
    question = next(c.source for c in nb.cells if c.id == "ex06_question")
    assert "this course's convention" in question and "lab A.5" in question
    assert "case and spaces do not matter" in question
    part1 = nbformat.read(ROOT / "lectures" / "lecture-ReAct-1-sampling.ipynb", as_version=4)
    taught = "\n".join(c.source for c in part1.cells if c.cell_type == "markdown")
    assert "temperature last" in taught and "lab A.5" in taught
    from autograder.proofs import catalogue as answers
    assert any(e.grade_id == "ex06_order" for e in answers.right_entries(ASSIGNMENT))



def test_exercise_12a_and_14_say_exactly_what_is_counted(nb):
    """A literal reading has one right answer: 12(a) counts every call in full (no truncation,
    which (b) and Part IV are about), and Exercise 14 counts only the three checks before a tool
    runs, so a call the tool itself fails on (c6, Atlantis) scores 0."""
    q12 = " ".join(next(c.source for c in nb.cells if c.id == "ex12_question").split())
    assert "as if the window were unlimited and nothing were truncated" in q12
    assert "the calls of turns 1 to 10" in q12
    q14 = " ".join(next(c.source for c in nb.cells if c.id == "ex14_question").split())
    assert "first of these three checks" in q14 and "whatever the tool then returns" in q14
    assert "compares the arguments with the schema only" in q14
    ns = {}
    exec(next(c.source for c in nb.cells if c.id == "ex12_context_budget"), ns)  # noqa: S102
    exec(next(c.source for c in nb.cells if c.id == "ex14_validation"), ns)  # noqa: S102
    assert ns["total_tokens_sent"] == sum(1200 + 400 * n for n in range(1, 11))
    assert ns["first_failed_check"]["c6"] == 0


def test_at_least_twelve_exercises_over_both_parts(nb):
    questions = [c for c in nb.cells if c.id.endswith("_question")]
    assert len(questions) >= 12
    text = "\n".join(c.source for c in questions).lower()
    for topic in ["softmax", "temperature scaling", "truncated sampling", "constrained decoding",
                  "cot", "augmented action space", "code action", "context budget",
                  "schema", "agent-computer interface"]:
        assert topic in text, topic
    # every answer (autograded or by hand) belongs to a question cell with its exercise number
    for c in answer_cells(nb) + manual_cells(nb):
        number = c.id[:4]
        assert any(q.id == f"{number}_question" for q in questions), c.id


def test_every_autograded_answer_has_a_solution_region_and_tests_with_hidden_values(nb):
    answers = answer_cells(nb)
    assert len(answers) >= 10
    for a in answers:
        assert a.cell_type == "code"
        assert a.metadata["nbgrader"] == {"grade": False, "solution": True, "locked": False,
                                          "grade_id": a.id, "schema_version": 3}
        assert "### BEGIN SOLUTION" in a.source and "### END SOLUTION" in a.source
        # the variable names stay visible to the student above the solution region
        assert a.source.startswith("#") and not a.source.startswith("### BEGIN")
        tests = grading_cells(nb, a.id)
        assert tests, f"no test cell for {a.id}"
        for t in tests:
            m = t.metadata["nbgrader"]
            assert m["locked"] and m["points"] > 0
            visible, _, hidden = t.source.partition("### BEGIN HIDDEN TESTS")
            assert hidden and "### END HIDDEN TESTS" in hidden, t.id
            assert "hint" in visible and "reread Part" in visible, t.id
            if "lreact.checks" in t.source:  # helpers are imported inside the cell
                assert "from lreact.checks import" in t.source


def test_manual_answers_are_markdown_with_a_model_answer_and_mark_scheme(nb):
    manual = manual_cells(nb)
    assert len(manual) >= 3
    for c in manual:
        assert c.cell_type == "markdown"
        assert meta(c)["points"] > 0 and not meta(c)["locked"]
        assert "**Model answer.**" in c.source and "**Mark scheme" in c.source
    # nbgrader 0.9.6 only allows mark-scheme delimiters in task cells; this notebook has none
    assert not any("BEGIN MARK SCHEME" in c.source for c in nb.cells)


def test_catalogue_names_and_covers_every_autograded_answer(nb):
    answers = {a.id for a in answer_cells(nb)}
    covered = set()
    for f in catalogue():
        gid, sep, slug = f.stem.partition("__")
        assert sep and slug, f.name
        assert gid in answers, f"{f.name}: no answer cell {gid}"
        first = f.read_text().splitlines()[0]
        assert first.startswith("# WRONG: ") and len(first) > 20, f.name
        compile(f.read_text(), str(f), "exec")
        covered.add(gid)
    assert covered == answers, f"no wrong answer for {sorted(answers - covered)}"


def test_the_solutions_pass_the_reference_implementations():
    """The hand-written solution values agree with lreact's reference sampling code."""
    import numpy as np
    from lreact.sampling import softmax, temperature_softmax, top_k_filter, top_p_filter
    ns = {}
    nbk = nbformat.read(SOURCE, as_version=4)
    for c in answer_cells(nbk):
        exec(c.source, ns)  # noqa: S102 - our own solution cells
    assert np.allclose(ns["softmax_answer"], softmax([2.0, 1.0, 0.5, -1.0]), atol=0.002)
    assert np.allclose(ns["p_cold"], temperature_softmax([2.0, 1.0, 0.0], 0.5), atol=0.002)
    assert np.allclose(ns["p_hot"], temperature_softmax([2.0, 1.0, 0.0], 2.0), atol=0.002)
    p = [0.40, 0.30, 0.25, 0.03, 0.02]
    assert np.allclose(ns["topk_probs"], top_k_filter(p, 2), atol=0.002)
    assert np.allclose(ns["topp_probs"], top_p_filter(p, 0.9), atol=0.002)
    flat = [0.22, 0.20, 0.18, 0.15, 0.12, 0.08, 0.05]
    assert np.allclose(ns["flat_topp_probs"], top_p_filter(flat, 0.9), atol=0.002)
    hot = temperature_softmax(np.log(p), 2.0)
    assert np.allclose(ns["order_probs"], top_p_filter(hot, 0.9), atol=0.002)
    assert ns["order_nucleus_size"] == int((top_p_filter(hot, 0.9) > 0).sum())


def test_validation_answers_agree_with_jsonschema_and_the_course_tools():
    """Exercise 14's key follows from the course's tool schemas and the three checks."""
    from jsonschema import Draft202012Validator
    from lreact.tools import CALCULATOR_TOOL, WEATHER_TOOL
    tools = {t["function"]["name"]: t["function"]["parameters"]
             for t in (WEATHER_TOOL, CALCULATOR_TOOL)}
    calls = {"c1": ("get_weather", '{"city": "Berlin"}'),
             "c2": ("get_wether", '{"city": "Berlin"}'),
             "c3": ("get_weather", '{"city": Berlin}'),
             "c4": ("get_weather", '{"town": "Berlin"}'),
             "c5": ("calculate", '{"expression": 17}'),
             "c6": ("get_weather", '{"city": "Atlantis"}'),
             "c7": ("search_web", '{"query": "weather Berlin"'),
             "c8": ("get_weather", '{"city": "Paris", "unit": "kelvin"}')}

    def first_failed(name, arguments):
        try:
            args = json.loads(arguments)
        except ValueError:
            return 1
        if name not in tools:
            return 2
        return 0 if Draft202012Validator(tools[name]).is_valid(args) else 3

    ns = {}
    nbk = nbformat.read(SOURCE, as_version=4)
    exec(next(c.source for c in nbk.cells if c.id == "ex14_validation"), ns)  # noqa: S102
    assert ns["first_failed_check"] == {k: first_failed(*v) for k, v in calls.items()}


# --- points per part and the visible checks (run in this process) ----------------------------

# Autograded points per exercise (each heading states them) and what each catalogued wrong answer
# must cost: exactly these test cells, so a wrong part loses only its own part's points.
POINTS = {"ex01": 3, "ex03": 3, "ex04": 5, "ex05": 3, "ex06": 3, "ex07": 3, "ex09": 3, "ex10": 4,
          "ex11": 4, "ex12": 4, "ex13": 5, "ex14": 3}
LOSES = {
    "ex01_softmax__logits_over_sum": {"test_ex01_softmax", "test_ex01_softmax__shift"},
    "ex01_softmax__no_renormalise": {"test_ex01_softmax", "test_ex01_softmax__shift"},
    "ex01_softmax__shift_flattens": {"test_ex01_softmax__shift"},
    "ex03_temperature__hot_multiplied_by_T": {"test_ex03_temperature__hot"},
    "ex03_temperature__multiplied_by_T": {"test_ex03_temperature", "test_ex03_temperature__hot",
                                          "test_ex03_temperature__ratio",
                                          "test_ex03_temperature__ratio_hot"},
    "ex03_temperature__ratio_hot_without_T": {"test_ex03_temperature__ratio_hot"},
    "ex03_temperature__ratio_of_logits": {"test_ex03_temperature__ratio",
                                          "test_ex03_temperature__ratio_hot"},
    "ex04_truncation__not_renormalised": {"test_ex04_truncation__topk_probs",
                                          "test_ex04_truncation__topp_probs"},
    "ex04_truncation__nucleus_size_below_p": {"test_ex04_truncation__nucleus_size"},
    "ex04_truncation__topp_drops_crossing": {"test_ex04_truncation__topp",
                                             "test_ex04_truncation__topp_probs",
                                             "test_ex04_truncation__nucleus_size"},
    "ex05_nucleus_flat__drops_crossing": {"test_ex05_nucleus_flat", "test_ex05_nucleus_flat__probs"},
    "ex05_nucleus_flat__size_without_crossing_token": {"test_ex05_nucleus_flat"},
    "ex05_nucleus_flat__topk_mass_after_renormalising": {"test_ex05_nucleus_flat__topk_mass"},
    "ex06_order__size_of_the_other_order": {"test_ex06_order__size"},
    "ex06_order__temperature_on_probabilities": {"test_ex06_order__values",
                                                 "test_ex06_order__size"},
    # credit carried forward: (b) worked out consistently after a wrong (a) keeps its 2 points
    "ex06_order__truncation_first": {"test_ex06_order"},
    "ex06_order__truncation_first_values_in_other_order": {"test_ex06_order",
                                                           "test_ex06_order__values",
                                                           "test_ex06_order__size"},
    "ex07_constrained__invalid_is_the_kept_mass": {"test_ex07_constrained__invalid"},
    "ex07_constrained__key_allowed": {"test_ex07_constrained", "test_ex07_constrained__renormalised",
                                      "test_ex07_constrained__invalid"},
    "ex07_constrained__not_renormalised": {"test_ex07_constrained__renormalised"},
    "ex09_cot_or_react__clock_arithmetic_as_tool": {"test_ex09_cot_or_react__c"},
    "ex09_cot_or_react__recalled_rate": {"test_ex09_cot_or_react__e"},
    "ex09_cot_or_react__logic_as_lookup": {"test_ex09_cot_or_react__f"},
    "ex10_trajectory__c3_includes_thought": {"test_ex10_trajectory__context"},
    "ex10_trajectory__finish_as_thought": {"test_ex10_trajectory", "test_ex10_trajectory__thoughts"},
    "ex10_trajectory__no_prefix": {"test_ex10_trajectory__context"},
    "ex11_code_action__code_run_has_one_call": {"test_ex11_code_action__calls_code"},
    "ex11_code_action__compares_strings": {"test_ex11_code_action"},
    "ex11_code_action__hard_coded": {"test_ex11_code_action"},
    "ex11_code_action__no_answer_call": {"test_ex11_code_action__calls",
                                         "test_ex11_code_action__calls_code"},
    "ex12_context_budget__history_only": {"test_ex12_context_budget",
                                          "test_ex12_context_budget__prefix",
                                          "test_ex12_context_budget__overflow"},
    "ex12_context_budget__last_turn_that_fits": {"test_ex12_context_budget__overflow"},
    "ex12_context_budget__summed_once": {"test_ex12_context_budget",
                                         "test_ex12_context_budget__prefix"},
    "ex12_context_budget__total_is_last_turn_times_ten": {"test_ex12_context_budget"},
    "ex13_tool_schema__amount_integer": {"test_ex13_tool_schema", "test_ex13_tool_schema__bad_calls"},
    "ex13_tool_schema__extra_allowed": {"test_ex13_tool_schema__bad_calls"},
    "ex13_tool_schema__no_enum": {"test_ex13_tool_schema__bad_calls"},
    "ex13_tool_schema__no_minimum": {"test_ex13_tool_schema__bad_calls"},
    "ex13_tool_schema__nothing_required": {"test_ex13_tool_schema__bad_calls"},
    "ex14_validation__execution_is_validation": {"test_ex14_validation__c6"},
    "ex14_validation__name_before_json": {"test_ex14_validation__c7"},
    "ex14_validation__enum_not_checked": {"test_ex14_validation__c8"},
}
# checked by running the answer (code, a schema) on cases the cell shows, not by an answer key
BEHAVIOURAL = {"test_ex11_code_action", "test_ex13_tool_schema", "test_ex13_tool_schema__bad_calls"}
# small answer spaces: the visible part checks the form only (``SMALL_WRONG``)
FORM_ONLY = {
    "test_ex03_temperature", "test_ex03_temperature__hot", "test_ex03_temperature__ratio",
    "test_ex03_temperature__ratio_hot", "test_ex04_truncation__topk_probs",
    "test_ex04_truncation__topp_probs", "test_ex05_nucleus_flat__topk_mass",
    "test_ex06_order__values", "test_ex07_constrained__renormalised",
    "test_ex07_constrained__invalid",
    "test_ex04_truncation", "test_ex04_truncation__topp", "test_ex04_truncation__nucleus_size",
    "test_ex05_nucleus_flat", "test_ex06_order", "test_ex06_order__size", "test_ex07_constrained",
    "test_ex10_trajectory", "test_ex10_trajectory__thoughts", "test_ex10_trajectory__observations",
    "test_ex10_trajectory__context", "test_ex11_code_action__calls",
    "test_ex11_code_action__calls_code", "test_ex12_context_budget",
    "test_ex12_context_budget__prefix", "test_ex12_context_budget__overflow",
    *(f"test_ex09_cot_or_react{'' if k == 'a' else '__' + k}" for k in "abcdef"),
    *(f"test_ex14_validation{'' if i == 1 else f'__c{i}'}" for i in range(1, 9))}
# a keyed check graded in the reading another part chose: it says which reading the value is right
# for (none now: the readings of order_probs are form-only, one of them being a mostly-zero
# distribution)
EITHER = {}


def _visible(source):
    return re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", "", source, flags=re.S)


def _fails(source, namespace, label):
    """None when ``source`` runs to its end in a copy of ``namespace``, else its first line."""
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(source, label, "exec"), dict(namespace))  # noqa: S102 - our notebook
    except Exception as e:  # noqa: BLE001 - a failing test cell is what we look for
        return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}"
    return None


@pytest.fixture(scope="module")
def solved(nb):
    """The namespace after every answer cell of the source ran (the tests leave it unchanged)."""
    namespace = {"__name__": "__main__"}
    for c in nb.cells:
        if c.cell_type == "code" and not meta(c).get("grade"):
            assert _fails(c.source, namespace, c.id) is None, c.id
            exec(c.source, namespace)  # noqa: S102 - our own solution cells
    return namespace


def _verdicts(nb, namespace, test_cells):
    """{test id: (visible part's failure, whole cell's failure)} with the answers in namespace."""
    return {t.id: (_fails(_visible(t.source), namespace, t.id), _fails(t.source, namespace, t.id))
            for t in test_cells}


def test_each_exercise_keeps_its_points_and_the_heading_states_them(nb):
    got = {}
    for c in nb.cells:
        if meta(c).get("grade") and not meta(c).get("solution"):
            got[c.id[5:9]] = got.get(c.id[5:9], 0) + meta(c)["points"]
    assert got == POINTS
    for number, points in POINTS.items():
        heading = next(c.source for c in nb.cells if c.id == f"{number}_question")
        assert f"({points} points" in heading.splitlines()[0], heading.splitlines()[0]


def _tests(nb):
    return [c for c in nb.cells if meta(c).get("grade") and not meta(c).get("solution")]


def _base(name):
    return name.split(" (")[0]   # "order_probs (truncation first)": order_probs


@pytest.fixture(scope="module")
def surveyed(nb):
    """``lreact.answercheck.survey``: the keys and the declared answer spaces of every test cell
    (it raises SmallAnswerSpace if a cell asks for a key of a small space)."""
    from lreact.answercheck import survey
    return survey(nb)


def test_answer_keys_are_current_and_only_for_answer_spaces_too_large_to_search(nb, surveyed):
    """Every test cell but the behavioural ones declares the form, and so the space, of each
    answer it grades.  A cell whose answers are all in large spaces has the ``_key`` block that
    ``python -m lreact.answercheck`` writes from the hidden tests (never typed by hand) and calls
    the check; a cell with a small-space answer has no key, no digest and no check, only its form.
    The small items are exactly those of ``SMALL_WRONG``, the large ones those of
    ``LARGE_WRONG``."""
    from lreact.answercheck import key_block
    keys, spaces = surveyed
    tests = _tests(nb)
    assert set(spaces) == {t.id for t in tests} - BEHAVIOURAL
    for t in tests:
        visible = _visible(t.source)
        large = {b for _, b in spaces.get(t.id, {}).values()}
        if large == {True}:
            assert set(keys[t.id]) == set(spaces[t.id]), t.id
            assert key_block(keys[t.id]) in visible, (
                f"{t.id}: stale answer key; run python -m lreact.answercheck")
            assert re.search(r"\bcheck(_either)?\(", visible), t.id
        else:
            assert t.id not in keys, t.id
            assert "_key" not in visible and not re.search(r"\bcheck(_either)?\(", visible), t.id
            assert not re.search(r"\b[0-9a-f]{12}\b", visible), t.id
    small = {_base(n) for s in spaces.values() for n, (_, big) in s.items() if not big}
    large = {_base(n) for s in spaces.values() for n, (_, big) in s.items() if big} - small
    assert small == set(SMALL_WRONG) and large == set(LARGE_WRONG)


def test_no_small_space_key_can_be_written_or_checked(nb):
    """A ``_key`` block in a small-space cell makes ``python -m lreact.answercheck`` refuse, naming
    the item; every key of the released student version is for a space above the threshold."""
    import copy

    from lreact.answercheck import SmallAnswerSpace, answer_keys, key_space
    for cid, item in [("test_ex04_truncation__nucleus_size", "nucleus_size"),
                      ("test_ex10_trajectory__context", "context_c3"),
                      ("test_ex09_cot_or_react__e", "cot_or_react['e']")]:
        planted = copy.deepcopy(nb)
        cell = next(c for c in planted.cells if c.id == cid)
        cell.source = "_key = {\n}\n" + cell.source
        with pytest.raises(SmallAnswerSpace, match=re.escape(item)):
            answer_keys(planted)
    student = nbformat.read(STUDENT, as_version=4)
    found = 0
    for cell in student.cells:
        keyed = re.findall(r'^    "(.+)": "((?:close|prob|int|set) [^"]+)",$', cell.source,
                           re.MULTILINE)
        for name, key in keyed:
            key_space(name, key)      # raises SmallAnswerSpace for a small space
            found += 1
        if cell.cell_type == "markdown" or not meta(cell).get("grade"):
            assert not re.search(r"\b[0-9a-f]{12}\b", cell.source), cell.id
    assert found == len(LARGE_WRONG) == 3


def test_every_visible_check_agrees_with_its_hidden_test_on_the_solution(nb, solved):
    tests = [c for c in nb.cells if meta(c).get("grade") and not meta(c).get("solution")]
    verdicts = _verdicts(nb, solved, tests)
    assert {t: v for t, v in verdicts.items() if v != (None, None)} == {}


def test_wrong_parts_lose_only_their_own_points_and_visible_checks_agree(nb, solved):
    """For every catalogue entry: the cells that fail are exactly ``LOSES[entry]``; each of its
    keyed test cells' visible part says "not yet" exactly when the whole cell (hidden tests)
    fails (Exercise 6(b): when it would fail in either order of (a)), and each form-only one
    runs through, or stops on the form of an answer that its hidden test fails too (a
    distribution not renormalised does not sum to 1)."""
    entries = {f.stem: f for f in catalogue()}
    assert set(entries) == set(LOSES)
    for stem, f in entries.items():
        gid = stem.split("__")[0]
        namespace = dict(solved)
        exec(f.read_text(), namespace)  # noqa: S102 - the catalogue's own cells
        verdicts = _verdicts(nb, namespace, grading_cells(nb, gid))
        assert {t for t, (_, whole) in verdicts.items() if whole} == LOSES[stem], stem
        disagree = {}
        for t, (visible, whole) in verdicts.items():
            if t in FORM_ONLY:      # says nothing about a wrong answer of the right form; a
                #                     wrong form (a distribution that does not sum to 1) it names
                if visible and ("not yet" in visible or not whole):
                    disagree[t] = visible
            elif t in EITHER:       # "not yet" when the values are right in neither reading
                var, readings = EITHER[t]
                wholes = [_fails(next(c.source for c in nb.cells if c.id == t),
                                 {**namespace, var: r}, t) for r in readings]
                if bool(visible) != all(wholes):
                    disagree[t] = (visible, wholes)
            elif bool(visible) != bool(whole):
                disagree[t] = (visible, whole)
        assert disagree == {}, f"{stem}: visible check and hidden test disagree: {disagree}"


def test_right_answers_in_other_forms_pass_every_visible_check(nb, solved):
    """The visible checks never say "not yet" to an answer the hidden tests accept."""
    namespace = dict(solved)
    for src in OTHER_FORMS.values():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(src, namespace)  # noqa: S102 - our own fixtures
    tests = [c for c in nb.cells if meta(c).get("grade") and not meta(c).get("solution")]
    assert {t: v for t, v in _verdicts(nb, namespace, tests).items() if v != (None, None)} == {}


# --- feedback that gives no answer away (the student version's visible checks) -------------

STUDENT = ROOT / "exercises" / f"{ASSIGNMENT}.ipynb"
# Every small-space item (one number, a short or mostly-zero distribution, a label, a set of
# labels, a small integer, a choice among a few, a short ordered list) with wrong values of the
# right form: all of them where the space is tiny.
SMALL_WRONG = {
    "p_cold": [[0.665, 0.245, 0.090], [0.5, 0.3, 0.2]],
    "p_hot": [[0.333, 0.333, 0.334], [0.867, 0.117, 0.016]],
    "ratio_cold": [2.0, 2.718, 7.0],
    "ratio_hot": [2.718, 1.5, 7.389],
    "topk_probs": [[0.5, 0.5, 0, 0, 0], [0.4, 0.3, 0, 0, 0.3]],
    "topp_probs": [[0.571, 0.429, 0, 0, 0], [0.4, 0.3, 0.25, 0.05, 0]],
    "flat_topk_mass": [0.58, 0.3, 0.42 + 0.1],
    "order_probs": [[0.2, 0.2, 0.2, 0.2, 0.2], [0.421, 0.316, 0.263, 0, 0], [0.6, 0.4, 0, 0, 0]],
    "p_constrained": [[0.6, 0.2, 0, 0.2, 0, 0, 0, 0], [0.5, 0.5, 0, 0, 0, 0, 0, 0]],
    "p_invalid": [0.4, 0.6 + 0.05, 0.25],
    "topk_tokens": [["rainy"], ["rainy", "sunny"], ["rainy", "cloudy", "sunny"],
                    ["cloudy", "purple"]],
    "topp_tokens": [["rainy", "cloudy"], ["rainy", "cloudy", "sunny", "snowy"], ["sunny"]],
    "nucleus_size": [1, 2, 4, 5],
    "flat_nucleus_size": [1, 3, 5, 7],
    "applied_first": ["truncation"],
    "order_nucleus_size": [1, 2, 3, 5],
    "allowed_tokens": [['"get_weather"'], ["get_weather", "calculate", '"city"'], ["Sure"]],
    **{f"cot_or_react['{k}']": [v] for k, v in
       {"a": "ReAct", "b": "CoT", "c": "ReAct", "d": "CoT", "e": "CoT", "f": "ReAct"}.items()},
    "action_lines": [["L3", "L5"], ["L2", "L3", "L5", "L8"], ["L1"]],
    "thought_lines": [["L2", "L7", "L8"], ["L2"], ["L4"]],
    "observation_lines": [["L4", "L6"], ["L1", "L4", "L6", "L8"], ["L2"]],
    "context_c3": [["c0", "L1", "L2", "L3", "L4", "L5", "L6", "L7"],
                   ["L1", "L2", "L3", "L4", "L5", "L6"], ["c0", "L1", "L3", "L4", "L5", "L6"]],
    "llm_calls_specific": [3, 5, 1],
    "llm_calls_code": [1, 3, 4],
    "total_tokens_sent": [22000, 23200, 52000],
    "prefix_tokens_sent": [1200, 10800, 13200],
    "overflow_turn": [7, 9, 1],
    **{f"first_failed_check['c{i}']": [v for v in range(4) if v != right]
       for i, right in enumerate([0, 2, 1, 3, 3, 0, 1, 3], 1)},
}


def _set(namespace, item, value):
    m = re.fullmatch(r"(\w+)\['(\w+)'\]", item)
    if m:
        namespace[m[1]] = {**namespace[m[1]], m[2]: value}
    else:
        namespace[item] = value


def _outputs(cells, namespace):
    """{cell id: (what it printed, the error it stopped with)}, each cell run on a copy."""
    out = {}
    for c in cells:
        printed, error = io.StringIO(), None
        try:
            with contextlib.redirect_stdout(printed), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(compile(c.source, c.id, "exec"), dict(namespace))  # noqa: S102 - our notebook
        except Exception as e:  # noqa: BLE001 - the output is what we compare
            error = f"{type(e).__name__}: {e}"
        out[c.id] = (printed.getvalue(), error)
    return out


@pytest.fixture(scope="module")
def student_tests():
    student = nbformat.read(STUDENT, as_version=4)
    tests = [c for c in student.cells if meta(c).get("grade") and not meta(c).get("solution")]
    assert tests and not any("BEGIN HIDDEN TESTS" in c.source for c in tests)
    return tests


def test_no_small_space_item_reveals_correctness_in_the_student_version(student_tests, solved):
    """Every visible test cell of the released student version prints and raises exactly the same
    with each wrong value of the right form of a small-space item as with the right value: all
    items wrong at once (every cell), then one item at a time (the cells that read it)."""
    base = _outputs(student_tests, solved)
    assert {t: e for t, (_, e) in base.items() if e} == {}
    differ = []
    for i in range(max(len(v) for v in SMALL_WRONG.values())):
        namespace = dict(solved)
        for item, wrongs in SMALL_WRONG.items():
            _set(namespace, item, wrongs[i % len(wrongs)])
        got = _outputs(student_tests, namespace)
        differ += [f"round {i}: {t}: {got[t]}" for t in got if got[t] != base[t]]
    for item, wrongs in SMALL_WRONG.items():
        var = item.split("[")[0]
        readers = [c for c in student_tests if re.search(rf"\b{var}\b", c.source)]
        assert readers, item
        for wrong in wrongs:
            namespace = dict(solved)
            _set(namespace, item, wrong)
            got = _outputs(readers, namespace)
            differ += [f"{item} = {wrong!r}: {t}: {got[t]}" for t in got if got[t] != base[t]]
    assert differ == [], f"{len(differ)} outputs differ:\n" + "\n".join(differ[:40])


# Every large-space item (a distribution of Exercises 1 and 5(a)) with a wrong value of the right
# form.
LARGE_WRONG = {
    "softmax_answer": [0.224, 0.609, 0.136, 0.030],
    "softmax_shifted": [0.25, 0.25, 0.25, 0.25],
    "flat_topp_probs": [0.253, 0.230, 0.207, 0.172, 0.138, 0.0, 0.0],
}


def test_large_space_items_still_say_right_or_not_yet(student_tests, solved):
    """In the student version, each number's check prints "right" for the solution and stops with
    "not yet" (and its hint) for a wrong value of the right form; nothing else changes."""
    base = _outputs(student_tests, solved)
    for item, wrong in LARGE_WRONG.items():
        readers = [c for c in student_tests if re.search(rf"\b{item}\b", c.source)]
        assert len(readers) == 1, item
        cid = readers[0].id
        printed, error = base[cid]
        said = re.match(rf"{item}( \(\w+ first\))?: right ", printed)
        assert error is None and said, (cid, printed)
        got = _outputs(student_tests, {**solved, item: wrong})
        assert {t for t in got if got[t] != base[t]} == {cid}, item
        printed, error = got[cid]
        assert printed == "" and error.startswith(f"AssertionError: {item}: not yet right"), error
        assert "\nHint: reread Part" in error


def test_the_introduction_is_short_and_says_which_checks_say_right(student_tests):
    """Before the first task, under 250 words that say which checks tell right / not yet
    (numbers) and which only the form (labels, sets, whole numbers), and that the points come at
    grading time; no word on hashing or on finding answers by trying, anywhere in the student
    version's text; how grading works is said at the end."""
    student = nbformat.read(STUDENT, as_version=4)
    first = [c.id for c in student.cells].index("ex01_question")
    intro = "\n".join(c.source for c in student.cells[:first]
                      if c.cell_type == "markdown" and c.id != "how-to-work")
    assert len(re.findall(r"\S+", intro)) < 250
    how = next(c.source for c in student.cells[:first] if c.id == "how-to-work")
    assert "Run All" in how and len(re.findall(r"\S+", how)) < 70   # one short practical note
    for said in ["**Exercises 1 and 5(a)**", "`right`", "`not yet`", "form only", "**number**",
                 "**label, a set of labels or a whole number**",
                 "Hidden tests give the points when your work is graded"]:
        assert said in intro, said
    text = "\n".join(c.source for c in student.cells if c.cell_type == "markdown").lower()
    for word in ["hash", "salt", "digest", "pbkdf", "answer key", "brute", "a program"]:
        assert word not in text, word
    assert "**how your work is graded.**" in student.cells[-1].source.lower()


# --- grading proofs (execute the notebook) --------------------------------------------------

def _grade(nb):
    from autograder.run.engine import grade_notebook
    return grade_notebook(ASSIGNMENT, nb, timeout=60)


def _own(result, gid):
    return {g: s for g, s in result.scores.items()
            if g == f"test_{gid}" or g.startswith(f"test_{gid}__")}


@pytest.mark.slow
def test_source_scores_full_marks_and_the_released_stubs_score_zero(nb):
    full = _grade(SOURCE)
    assert full.failure is None and full.errors == {}
    assert full.scores and full.total == full.possible
    assert set(full.manual) == {c.id for c in manual_cells(nb)}
    empty = _grade(nbformat.v4.new_notebook())   # every answer cell becomes nbgrader's stub
    assert empty.possible == full.possible
    assert {g: a for g, (a, _) in empty.scores.items() if a} == {}


def _rounds():
    """The catalogue in rounds with at most one wrong answer per answer cell (the exercises'
    cells are independent), so a handful of runs proves every entry."""
    by_gid = {}
    for f in catalogue():
        by_gid.setdefault(f.stem.split("__")[0], []).append(f)
    return [[files[i] for files in by_gid.values() if i < len(files)]
            for i in range(max(len(v) for v in by_gid.values()))]


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(len(_rounds())))
def test_every_catalogued_wrong_answer_loses_marks_on_its_own_tests(round_):
    from autograder.run.engine import load, replace_cell
    nb = load(SOURCE)
    entries = _rounds()[round_]
    for f in entries:
        nb = replace_cell(nb, f.stem.split("__")[0], f.read_text())
    result = _grade(nb)
    assert result.failure is None
    for f in entries:
        own = _own(result, f.stem.split("__")[0])
        assert own, f.name
        assert sum(a for a, _ in own.values()) < sum(p for _, p in own.values()), \
            f"{f.name} keeps all its marks"
        assert {t for t, (a, p) in own.items() if a < p} == LOSES[f.stem], f.name


SHADOWED = ["sum", "sorted", "set", "enumerate", "len", "max", "min", "all", "any", "isinstance",
            "str", "int", "float", "dict", "list", "abs", "round", "zip", "range", "bool"]
ALWAYS_EQUAL = '''
class _AlwaysEqual(str):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = str.__hash__
    def strip(self, *a): return self
    def lower(self): return self
'''


@pytest.fixture(scope="module")
def first_wrong_answers():
    from autograder.run.engine import load, replace_cell
    first = {}
    for f in catalogue():
        first.setdefault(f.stem.split("__")[0], f.read_text())
    plain = load(SOURCE)
    for gid, src in first.items():
        plain = replace_cell(plain, gid, src)
    return first, _grade(plain)


@pytest.mark.slow
@pytest.mark.parametrize("fake", ["lambda *a, **k: 0", "lambda *a, **k: _AlwaysEqual()"])
def test_shadowing_builtins_in_an_answer_cell_gains_nothing(fake, first_wrong_answers):
    """Wrong answers plus global names that shadow builtins (the engine does not restore the
    user namespace) score no more than the wrong answers alone."""
    from autograder.run.engine import load, replace_cell
    first, base = first_wrong_answers
    shadowed = load(SOURCE)
    for gid, src in first.items():
        shadow = ALWAYS_EQUAL + "\n".join(f"{n} = {fake}" for n in SHADOWED)
        shadowed = replace_cell(shadowed, gid, src + "\n" + shadow)
    cheat = _grade(shadowed)
    assert cheat.failure is None
    gained = {g: s for g, s in cheat.scores.items() if s[0] > base.scores[g][0]}
    assert gained == {}


@pytest.mark.slow
def test_patching_jsonschema_does_not_earn_the_schema_points():
    """A wrong schema plus a patched validator that accepts everything earns nothing."""
    from autograder.run.engine import load, replace_cell
    wrong = next(f.read_text() for f in catalogue() if f.stem == "ex13_tool_schema__amount_integer")
    patch = ("\nimport jsonschema.validators as _v\n"
             "for _cls in (_v.Draft202012Validator, _v.Draft7Validator, _v.Draft4Validator):\n"
             "    _cls.is_valid = lambda self, instance, _schema=None: True\n")
    result = _grade(replace_cell(load(SOURCE), "ex13_tool_schema", wrong + patch))
    assert {g: a for g, (a, _) in _own(result, "ex13_tool_schema").items() if a} == {}


# Right answers written differently: numpy arrays, tuples, sets, other case, numbers as strings,
# unrounded values, a draft-07 schema with $ref, a different code action, and a warning printed
# by the answer cell itself. All of them must earn every autograded point.
OTHER_FORMS = {
"ex01_softmax": '''import numpy as np, warnings
warnings.warn("a stray warning from the student's own cell")
z = np.array([2.0, 1.0, 0.5, -1.0])
softmax_answer = np.exp(z) / np.exp(z).sum()
softmax_shifted = tuple(softmax_answer)''',
"ex03_temperature": '''p_cold = (0.8668, 0.1173, 0.0159)
p_hot = [0.5065, 0.3072, 0.1863]
ratio_cold = round(0.867 / 0.117, 3)      # from (a)'s 3-decimal values: 7.410 (exact e^2 = 7.389)
ratio_hot = "1.649"''',
"ex04_truncation": '''topk_tokens = {"cloudy", "rainy"}
topk_probs = (4/7, 3/7, 0, 0, 0)
topp_tokens = ("sunny", "rainy", "cloudy")
topp_probs = [0.4/0.95, 0.3/0.95, 0.25/0.95, 0, 0]
nucleus_size = 3.0''',
"ex05_nucleus_flat": '''import numpy as np
P = np.array([0.22, 0.20, 0.18, 0.15, 0.12, 0.08, 0.05]); P[-1] = 0
flat_topp_probs = P / P.sum() + 0.0019   # every entry just inside the tolerance, sum 1.0133
flat_nucleus_size = np.int64(6)
flat_topk_mass = np.float32(0.42)''',
"ex06_order": '''applied_first = " Temperature "
order_probs = [0.3412, 0.2955, 0.2698, 0.0935, 0]
order_nucleus_size = 4''',
"ex07_constrained": '''allowed_tokens = ["get_weather", "calculate"]
p_constrained = [0.75, 0.25, -0.001, 0, 0, 0, 0, 0.001]   # an exact 0 within the tolerance
p_invalid = 1 - 0.4''',
"ex09_cot_or_react": '''cot_or_react = {"a": "cot", "b": "REACT", "c": "CoT ", "d": "ReAct", "e": "ReAct", "f": "CoT"}''',
"ex10_trajectory": '''action_lines = ("L8", "L5", "L3")
thought_lines = {"L7", "L2"}
observation_lines = ["L6", "L4", "L1"]
context_c3 = ("c0", "L1", "L2", "L3", "L4", "L5", "L6")''',
"ex11_code_action": '''code_action = r"""
import re
def temperature(city):
    return int(re.match(r"\\s*(-?\\d+)", get_weather(city=city)).group(1))
cities = ["Madrid", "Paris", "Berlin"]
print({c: temperature(c) for c in cities})
answer = sorted(cities, key=temperature)[-1]
"""
llm_calls_specific = 4.0
llm_calls_code = 2''',
"ex12_context_budget": '''total_tokens_sent = sum(1200 + 400 * n for n in range(1, 11))
prefix_tokens_sent = 12000.0
overflow_turn = 8''',
"ex13_tool_schema": '''CODES = ["EUR", "USD", "GBP", "JPY", "CHF"]
currency_tool = {"type": "function", "function": {
    "name": "convert_currency", "description": "Convert money between currencies.",
    "parameters": {"$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "definitions": {"code": {"type": "string", "enum": CODES}},
        "properties": {"amount": {"type": "number", "minimum": 0},
                       "from_currency": {"$ref": "#/definitions/code"},
                       "to_currency": {"$ref": "#/definitions/code"}},
        "required": ["to_currency", "from_currency", "amount"],
        "additionalProperties": False}}}''',
"ex14_validation": '''first_failed_check = {"c1": 0, "c2": 2.0, "c3": "1", "c4": 3, "c5": 3, "c6": 0, "c7": 1, "c8": 3}''',
}


@pytest.mark.slow
def test_right_answers_in_other_forms_earn_full_marks():
    from autograder.run.engine import load, replace_cell
    nb = load(SOURCE)
    for gid, src in OTHER_FORMS.items():
        nb = replace_cell(nb, gid, src)
    result = _grade(nb)
    assert result.failure is None and result.errors == {}
    assert result.total == result.possible > 0
