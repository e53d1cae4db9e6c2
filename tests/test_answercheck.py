"""lreact.answercheck: a visible check of the exercises says right or "not yet" only for an answer
space too large to search (MIN_VALUES candidates for the whole answer: a distribution of several
non-zero entries within a tolerance), never gives the value, is at least as tolerant as the
hidden test it stands for, and its keys come from the hidden tests; a small space (one number, a
short or mostly-zero distribution, a label, a set, a small integer, an ordered list) gets its
form checked and no key at all.  The tests of the check's mechanics lower the threshold
(``any_space``): they are about matching, not about which spaces get a key.
"""
import math
import random

import nbformat
import pytest

from lreact import answercheck
from lreact.answercheck import (
    MIN_VALUES,
    key_probability,
    SmallAnswerSpace,
    check,
    check_either,
    choice_form,
    int_form,
    key_close,
    key_int,
    key_set,
    key_space,
    probability_form,
    real_form,
    sequence_form,
    sequences,
    subset_form,
)


@pytest.fixture
def any_space(monkeypatch):
    """Keys for any space, however small (the mechanics of matching, not the threshold)."""
    monkeypatch.setattr(answercheck, "MIN_VALUES", 1)


def _accepts(name, value, key):
    try:
        check(name, value, {name: key})
        return True
    except AssertionError:
        return False


@pytest.mark.parametrize("tol", [0.002, 0.005, 0.037, 0.5])
def test_close_accepts_everything_the_hidden_test_accepts_and_nothing_three_times_as_far(tol, any_space):
    """Exactly at the tolerance, on grid boundaries and at random: |x - e| <= tol is always
    accepted (as assert_close accepts it, and 0.752 against 0.75 with 0.002 too); |x - e| >= 3 tol
    (plus a float's slack) never is."""
    rng = random.Random(7)
    hi = 1000.0 if tol > 0.01 else 1.0
    centres = [0.0, 0.609, 0.5, 0.75, 1.0, 12 * tol, 12 * tol - 1e-15, 0.1 + 0.2]
    centres += [rng.uniform(0, hi) for _ in range(12)]
    for e in centres:
        key = key_close("v", [e], tol, 0, hi)
        inside = [e + tol, e - tol, e, math.nextafter(e + tol, -math.inf)]
        inside += [e + rng.uniform(-tol, tol) for _ in range(6)]
        for x in inside:
            if abs(x - e) <= tol:   # the hidden test's own rule (lreact.checks.assert_close)
                assert _accepts("v", x, key), (e, x, tol)
        beyond = 3 * tol + 1e-9 * max(1.0, abs(e))
        for x in [e + beyond, e - beyond, e + 4 * tol, e - 10]:
            assert not _accepts("v", x, key), (e, x, tol)
    assert _accepts("v", 0.752, key_close("v", [0.75], 0.002, 0, 1))
    assert not _accepts("v", math.nan, key_close("v", [0.5], tol, 0, hi))
    assert not _accepts("v", math.inf, key_close("v", [0.5], tol, 0, hi))


def test_a_vector_is_accepted_entry_by_entry_within_the_tolerance():
    rng = random.Random(3)
    e = [0.341, 0.296, 0.270, 0.093, 0.0]
    key = key_close("p", e, 0.002, 0, 1)
    for _ in range(40):
        assert _accepts("p", [x + rng.uniform(-0.002, 0.002) for x in e], key)
    assert not _accepts("p", [e[0] + 0.007] + e[1:], key)


def test_a_key_is_no_finer_than_twice_the_tolerance(any_space):
    """Expected values in one cell (twice the tolerance wide) give the same key: a program that
    searches the key finds at most an interval of that width, never more digits."""
    assert key_close("v", [0.6001, 0.2], 0.002, 0, 1) == key_close("v", [0.6039, 0.2], 0.002, 0, 1)
    assert key_close("v", [0.6001], 0.002, 0, 1) != key_close("v", [0.6041], 0.002, 0, 1)


def test_each_digest_is_a_slow_salted_kdf():
    """Every guess against a key costs answercheck.ITERATIONS rounds of PBKDF2-HMAC-SHA256."""
    import hashlib
    salt = f"{answercheck.SALT}|n|0".encode()
    slow = hashlib.pbkdf2_hmac("sha256", b"8", salt, answercheck.ITERATIONS).hex()
    assert key_int("n", 8, 0, 10**6) == f"int 0 1000000 {slow[:answercheck.DIGEST_CHARS]}"
    assert answercheck.ITERATIONS >= 10_000


def test_the_form_of_a_distribution_is_as_tolerant_as_its_entries():
    """Entries each within tol of a distribution pass the form check (every entry 0.0019 high,
    or an exact 0 written as -0.001); clearly wrong forms do not."""
    flat = [0.232 + 0.0019, 0.211 + 0.0019, 0.189 + 0.0019, 0.158 + 0.0019, 0.126 + 0.0019,
            0.084 + 0.0019, 0.0019]
    assert probability_form(flat, 7, name="p", tol=0.002) == flat
    assert probability_form([0.75, 0.25, -0.001, 0, 0, 0, 0, 0.001], 8, name="p", tol=0.002)
    with pytest.raises(AssertionError, match="entry 3 .* is negative"):
        probability_form([0.75, 0.25, -0.003, 0.003], 4, name="p", tol=0.002)
    with pytest.raises(AssertionError, match="sums to 1.1000"):
        probability_form([0.6, 0.5], 2, name="p", tol=0.002)
    with pytest.raises(AssertionError, match="has 2 entries, expected 3"):
        probability_form([0.5, 0.5], 3, name="p", tol=0.002)


def test_the_forms_check_type_and_range_and_return_what_the_hidden_tests_read():
    assert real_form("0.42", name="m", lo=0, hi=1) == 0.42
    assert int_form(3.0, name="n", lo=1, hi=5) == 3 and int_form("2", name="n", lo=1, hi=5) == 2
    assert choice_form(" Temperature ", ("temperature", "truncation"), name="a") == "temperature"
    assert subset_form(("b", "a", "a"), ["a", "b", "c"], name="s") == ["a", "b"]
    assert sequence_form(("c0", " L1"), ["c0", "L1", "L2"], name="c") == ["c0", "L1"]
    for call, message in [
            (lambda: real_form(1.5, name="m", lo=0, hi=1), "m must be a number from 0 to 1"),
            (lambda: int_form(6, name="n", lo=1, hi=5), "n must be a whole number from 1 to 5"),
            (lambda: int_form(2.5, name="n", lo=1, hi=5), "whole number"),
            (lambda: choice_form("both", ("CoT", "ReAct"), name="a"), "'CoT' or 'ReAct'"),
            (lambda: subset_form(["d"], ["a", "b"], name="s"), r"taken from \['a', 'b'\]"),
            (lambda: subset_form("a", ["a", "b"], name="s"), "list or set of strings"),
            (lambda: sequence_form({"c0"}, ["c0"], name="c"), "ordered list"),
            (lambda: sequence_form(["c0", "c0"], ["c0"], name="c"), "twice")]:
        with pytest.raises(AssertionError, match=message):
            call()


def test_a_vector_gets_one_verdict_that_names_no_entry_and_no_value(any_space):
    """A vector is judged as a whole: with removed tokens (entries 0), an entry-by-entry verdict
    would tell in one try which tokens are kept.  Zeros in the right places with wrong values
    elsewhere, and right values with a zero moved, get the same "not yet"."""
    key = key_close("p", [0.571, 0.429, 0, 0, 0], 0.002, 0, 1)
    assert check("p", (0.5715, 0.4281, 0.001, 0, 0), {"p": key}) == "p: right"
    said = set()
    for wrong in ([0.5, 0.5, 0, 0, 0], [0.571, 0, 0.429, 0, 0], [0.2, 0.2, 0.2, 0.2, 0.2]):
        with pytest.raises(AssertionError) as err:
            check("p", wrong, {"p": key}, hint="reread Part I")
        said.add(str(err.value))
    assert said == {("p: not yet right; every entry within 0.002 of the exact value count"
                     "\nHint: reread Part I")}
    with pytest.raises(AssertionError, match="has 3 values, expected 5"):
        check("p", [0.6, 0.2, 0.2], {"p": key})


def test_the_key_does_not_hold_the_value_and_depends_on_name_and_position(any_space):
    key = key_close("softmax_answer", [0.609, 0.609], 0.002, 0, 1)
    assert "609" not in key.split(" ", 5)[5] and "0.6" not in key
    assert key != key_close("softmax_answer", [0.609, 0.610 + 0.004], 0.002, 0, 1)
    assert key != key_close("softmax_shifted", [0.609, 0.609], 0.002, 0, 1)
    assert key_close("v", [0.1, 0.5], 0.002, 0, 1) != key_close("v", [0.5, 0.1], 0.002, 0, 1)
    assert "34000" not in key_int("t", 34_000, 0, 10**6)


def test_int_and_set_keys_normalise_as_the_hidden_assertions_do():
    key = key_int("n", 8, 0, 10**6)
    assert _accepts("n", 8, key) and _accepts("n", 8.0, key) and _accepts("n", "8", key)
    assert not _accepts("n", 7, key)
    with pytest.raises(AssertionError, match="whole number"):   # as assert_int_equal says it
        check("n", True, {"n": key_int("n", 1, 0, 10**6)})
    key = key_set("s", ["rainy", "cloudy"], 2**20)
    assert _accepts("s", ("cloudy", "rainy", "rainy"), key)
    assert _accepts("s", {"rainy", "cloudy"}, key)
    assert not _accepts("s", ["rainy"], key)
    assert not _accepts("s", ["rainy", "cloudy", "sunny"], key)


def test_no_key_for_a_space_below_the_threshold():
    """The threshold: MIN_VALUES candidates for the whole answer, a number's as an exact answer's.
    Below, neither a key nor a check exists: both raise, naming the item."""
    assert MIN_VALUES == 10**6
    assert key_space("p", key_close("p", [0.5, 0.5, 0.5], 0.002, 0, 1)) == 250**3
    assert key_space("r", key_close("r", [7.5], 0.0005, 0, 1000)) == 10**6
    for make, item in [(lambda: key_close("coarse", [0.5], 0.006, 0, 1), "coarse"),
                       (lambda: key_close("r", [7.5], 0.005, 0, 1000), "r"),
                       (lambda: key_int("nucleus_size", 3, 1, 5), "nucleus_size"),
                       (lambda: key_int("total", 34_000, 0, 100_000), "total"),
                       (lambda: key_set("labels", ["L3"], 2**8), "labels"),
                       (lambda: key_set("context_c3", ["0:c0"], sequences(9)), "context_c3")]:
        with pytest.raises(SmallAnswerSpace, match=f"^{item}: no answer key"):
            make()
    hand_made = {"nucleus_size": "int 1 5 " + answercheck.digest("nucleus_size", 0, "3"),
                 "labels": "set 32 0123456789ab", "p": "close 0.05 0.0 1.0 1 0123456789ab"}
    for name in hand_made:
        with pytest.raises(SmallAnswerSpace, match=f"^{name}: "):
            check(name, 3, hand_made)
    assert sequences(9) == 986_410 < MIN_VALUES


def test_check_either_says_which_reading_the_answer_is_right_for(any_space):
    keys = {"v (x first)": key_close("v (x first)", [0.7, 0.3], 0.002, 0, 1),
            "v (y first)": key_close("v (y first)", [0.6, 0.4], 0.002, 0, 1)}
    assert check_either("v", [0.7, 0.3], keys) == "v (x first): right"
    assert check_either("v", [0.6, 0.4], keys) == "v (y first): right"
    with pytest.raises(AssertionError, match="v: not yet right; .*'x first' or 'y first'"):
        check_either("v", [0.5, 0.5], keys)


def test_a_missing_key_says_how_to_make_it():
    with pytest.raises(KeyError, match="python -m lreact.answercheck"):
        check("x", 1, {})


TINY = [
    ("solution", "X = [0.1, 0.2, 0.3, 0.25, 0.15]\nx = list(X)\nn = 3\nfirst = 'a'\n"
                 "label = 'yes'\n"),
    ("test_x", 'from lreact.answercheck import check, probability_form\nhint = "h"\n_key = {\n}\n'
               'probability_form(x, 5, name="x", tol=0.002)\n'
               '_said = check("x", x, _key, hint=hint)\nprint(_said, "hidden graded")\n'
               "### BEGIN HIDDEN TESTS\nfrom lreact.checks import assert_close\n"
               'assert_close(x, X, tol=0.002, name="x", hint=hint)\n'
               "### END HIDDEN TESTS"),
    ("test_n", 'from lreact.answercheck import check, int_form, real_form\n'
               '# answer key also for: first = "b"\n_key = {\n}\n'
               'int_form(n, name="n", lo=0, hi=10**6)\nreal_form(n, name="m", lo=0, hi=10**6)\n'
               'check(f"n ({first})", n, _key)\n'
               "### BEGIN HIDDEN TESTS\nfrom lreact.checks import assert_int_equal\n"
               'assert_int_equal(n, 3 if first == "a" else 4, name=f"n ({first})")\n'
               "from lreact.checks import assert_close\n"   # recorded although the line above fails
               'assert_close(n, 3 if first == "a" else 5, tol=0.25, name=f"m ({first})")\n'
               "### END HIDDEN TESTS"),
    ("test_label", 'from lreact.answercheck import choice_form\nhint = "h"\n'
                   'choice_form(label, ("yes", "no"), name="label")\n'
                   'print("form OK, hidden graded")\n'
                   "### BEGIN HIDDEN TESTS\nfrom lreact.checks import assert_same_set\n"
                   'assert_same_set([label], ["yes"], name="label")\n### END HIDDEN TESTS'),
]


def _tiny(cells=TINY):
    nb = nbformat.v4.new_notebook()
    for cid, source in cells:
        c = nbformat.v4.new_code_cell(source)
        c.id = cid
        grade = cid.startswith("test_")
        c.metadata["nbgrader"] = {"grade": grade, "solution": not grade, "grade_id": cid,
                                  "locked": grade, "schema_version": 3}
        nb.cells.append(c)
    return nb


def test_keys_are_recorded_from_the_hidden_assertions_and_written_into_the_cells(tmp_path):
    keys, spaces = answercheck.survey(_tiny())
    assert keys == {"test_x": {"x": key_probability("x", [0.1, 0.2, 0.3, 0.25, 0.15], 0.002)},
                    "test_n": {"n (a)": key_int("n (a)", 3, 0, 10**6),
                               "m (a)": key_close("m (a)", 3, 0.25, 0, 10**6),
                               "n (b)": key_int("n (b)", 4, 0, 10**6),
                               "m (b)": key_close("m (b)", 5, 0.25, 0, 10**6)}}
    assert spaces == {"test_x": {"x": (math.comb(254, 4), True)},
                      "test_n": {"n (a)": (10**6 + 1, True), "m (a)": (2 * 10**6, True),
                                 "n (b)": (10**6 + 1, True), "m (b)": (2 * 10**6, True)},
                      "test_label": {"label": (2, False)}}
    path = tmp_path / "tiny.ipynb"
    nbformat.write(_tiny(), path)
    assert answercheck.write_keys(path) == ["test_x", "test_n"]
    assert answercheck.write_keys(path) == []          # running it twice changes nothing
    written = nbformat.read(path, as_version=4)
    namespace = {}
    for cell in written.cells:                        # the written keys pass the solution
        exec(cell.source, namespace)  # noqa: S102 - our own fixture
    assert '"n (b)": "int ' in written.cells[2].source


def test_a_key_block_for_a_small_space_is_refused_naming_the_item():
    label = TINY[3][1].replace('hint = "h"\n', 'hint = "h"\n_key = {\n}\n')
    with pytest.raises(SmallAnswerSpace, match="^label: no answer key for a space of 2 "):
        answercheck.answer_keys(_tiny(TINY[:3] + [("test_label", label)]))
    narrow = TINY[2][1].replace("hi=10**6", "hi=10**6 - 2")
    with pytest.raises(SmallAnswerSpace, match=r"^n \(a\): .* 999,999 whole numbers"):
        answercheck.answer_keys(_tiny(TINY[:2] + [("test_n", narrow)]))


def test_a_key_needs_a_declared_form_and_a_named_assertion():
    cells = TINY[:1] + [("test_x", TINY[1][1].replace('tol=0.002, name="x"', "tol=0.002"))]
    with pytest.raises(ValueError, match="without name="):
        answercheck.answer_keys(_tiny(cells))
    formless = TINY[1][1].replace('probability_form(x, 5, name="x", tol=0.002)\n', "")
    cells = TINY[:1] + [("test_x", formless)]
    with pytest.raises(ValueError, match="no form declared for 'x'"):
        answercheck.answer_keys(_tiny(cells))


def test_a_key_needs_a_million_candidates_for_the_whole_answer():
    """The tester's finding: keys with MIN_CELLS = 100 cells per entry were searched in seconds
    (flat_topk_mass = 0.42, p_invalid = 0.60, ratio_cold, p_cold, topk_probs).  A number now gets
    a key only when the whole answer's space holds MIN_VALUES candidates, as an exact answer:
    cells per entry to the power of the entries; a distribution counted on the simplex (cells
    that add up to 1) and by its non-zero entries, the fewest first, as a search would try it."""
    from lreact.answercheck import candidates, key_probability
    assert MIN_VALUES == 10**6 and not hasattr(answercheck, "MIN_CELLS")
    assert candidates(1, 250) == 250 and candidates(2, 250) == 250**2
    assert candidates(3, 250, simplex=True) == math.comb(252, 2) == 31_626
    assert candidates(4, 250, simplex=True) == math.comb(253, 3) == 2_667_126
    assert candidates(5, 250, simplex=True, nonzero=2) == 5 + 10 * 249 == 2_495
    for make, item in [
            (lambda: key_close("flat_topk_mass", [0.42], 0.002, 0, 1), "flat_topk_mass"),
            (lambda: key_close("p_invalid", [0.60], 0.002, 0, 1), "p_invalid"),
            (lambda: key_close("ratio_cold", [7.389], 0.037, 0, 1000), "ratio_cold"),
            (lambda: key_close("ratio_hot", [1.649], 0.005, 0, 1000), "ratio_hot"),
            (lambda: key_probability("p_cold", [0.867, 0.117, 0.016], 0.002), "p_cold"),
            (lambda: key_probability("topk_probs", [0.571, 0.429, 0, 0, 0], 0.002), "topk_probs"),
            (lambda: key_probability("p_constrained", [0.75, 0.25] + [0] * 6, 0.002),
             "p_constrained")]:
        with pytest.raises(SmallAnswerSpace, match=f"^{item}: no answer key"):
            make()
    softmax = key_probability("softmax_answer", [0.609, 0.224, 0.136, 0.030], 0.002)
    assert softmax.startswith("prob 0.002 4 ") and key_space("softmax_answer", softmax) >= MIN_VALUES
    assert check("softmax_answer", [0.6095, 0.2241, 0.1357, 0.0305],
                 {"softmax_answer": softmax}) == "softmax_answer: right"
    assert key_probability("flat", [0.253, 0.230, 0.207, 0.172, 0.138, 0.0, 0.0], 0.002)
    for hand_made in ["prob 0.002 3 0123456789ab", "close 0.002 0.0 1.0 1 0123456789ab",
                      "close 0.002 0.0 1.0 2 0123456789ab"]:
        with pytest.raises(SmallAnswerSpace, match="^p: no answer key"):
            check("p", [0.5, 0.25, 0.25][:int(hand_made.split()[-2])], {"p": hand_made})


def test_every_reading_of_a_form_only_cell_counts_and_a_sparse_one_is_small():
    """A cell graded in the reading another part chose (``# each reading: NAME in (...)``, every
    value alike) has a space per reading, also without a key; a reading whose distribution is
    mostly zeros is small, and a key asked for it is refused, naming that reading."""
    cell = ('from lreact.answercheck import probability_form\n'
            '# each reading: first in ("a", "b")\n'
            'probability_form(x, 5, name="x", tol=0.002)\n'
            "### BEGIN HIDDEN TESTS\nfrom lreact.checks import assert_close\n"
            'assert_close(x, X if first == "a" else [0.6, 0.4, 0, 0, 0], tol=0.002, '
            'name=f"x ({first})")\n### END HIDDEN TESTS')
    keys, spaces = answercheck.survey(_tiny(TINY[:1] + [("test_r", cell)]))
    assert keys == {}
    assert spaces == {"test_r": {"x (a)": (math.comb(254, 4), True), "x (b)": (2_495, False)}}
    keyed = cell.replace("probability_form(x", "_key = {\n}\nprobability_form(x")
    with pytest.raises(SmallAnswerSpace, match=r"^x \(b\): no answer key .* 2,495 distributions"):
        answercheck.answer_keys(_tiny(TINY[:1] + [("test_r", keyed)]))
