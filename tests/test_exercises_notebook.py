"""The pen-and-paper exercises (solutions/lecture-ReAct-exercises/): structure and grading proofs.

Fast checks read the source notebook and the catalogue of wrong answers; the ``slow`` ones grade
with ``autograder.engine``: the source earns every autograded point, the released stubs earn
none, every catalogued wrong answer loses marks on its own tests, and answer cells that shadow
builtins or patch jsonschema gain nothing.
"""
import json
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent

ASSIGNMENT = "lecture-ReAct-exercises"
SOURCE = ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
WRONG = ROOT / "autograder" / "wrong_answers" / ASSIGNMENT


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
    """A catalogue entry (autograder/catalogue.py) seen like a file: its name and full cell."""

    def __init__(self, entry):
        self.stem, self.name, self._source = entry.path.stem, entry.path.name, entry.source

    def read_text(self):
        return self._source

    def __str__(self):
        return self.name


def catalogue():
    from autograder import catalogue as wrong_answers
    return [_Wrong(e) for e in wrong_answers.entries(ASSIGNMENT)]


# --- structure ----------------------------------------------------------------------------

def test_notebook_is_valid_committed_without_outputs_and_has_stable_ids(nb):
    nbformat.validate(nb)
    ids = [c.id for c in nb.cells]
    assert len(ids) == len(set(ids)), "cell ids must be unique"
    assert all(re.fullmatch(r"[a-z0-9_]+", i) for i in ids), ids
    for c in nb.cells:
        if c.cell_type == "code":
            assert c.outputs == [] and c.execution_count is None, c.id
        if meta(c):
            assert c.id == meta(c)["grade_id"], "a graded cell's id is its grade_id"
            assert meta(c)["schema_version"] == 3


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


# --- grading proofs (execute the notebook) --------------------------------------------------

def _grade(nb):
    from autograder.engine import grade_notebook
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
    from autograder.engine import load, replace_cell
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
    from autograder.engine import load, replace_cell
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
    from autograder.engine import load, replace_cell
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
    from autograder.engine import load, replace_cell
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
"ex03_temperature": '''import math
p_cold = (0.8668, 0.1173, 0.0159)
p_hot = [0.5065, 0.3072, 0.1863]
ratio_cold = math.e ** 2
ratio_hot = "1.649"''',
"ex04_truncation": '''topk_tokens = {"cloudy", "rainy"}
topk_probs = (4/7, 3/7, 0, 0, 0)
topp_tokens = ("sunny", "rainy", "cloudy")
topp_probs = [0.4/0.95, 0.3/0.95, 0.25/0.95, 0, 0]
nucleus_size = 3.0''',
"ex05_nucleus_flat": '''import numpy as np
P = np.array([0.22, 0.20, 0.18, 0.15, 0.12, 0.08, 0.05]); P[-1] = 0
flat_topp_probs = P / P.sum()
flat_nucleus_size = np.int64(6)
flat_topk_mass = np.float32(0.42)''',
"ex06_order": '''applied_first = " Temperature "
order_probs = [0.3412, 0.2955, 0.2698, 0.0935, 0]
order_nucleus_size = 4''',
"ex07_constrained": '''allowed_tokens = ["get_weather", "calculate"]
p_constrained = [3/4, 1/4] + [0.0] * 6
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
    from autograder.engine import load, replace_cell
    nb = load(SOURCE)
    for gid, src in OTHER_FORMS.items():
        nb = replace_cell(nb, gid, src)
    result = _grade(nb)
    assert result.failure is None and result.errors == {}
    assert result.total == result.possible > 0
