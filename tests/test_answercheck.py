"""lreact.answercheck: the exercises' visible checks say right or "not yet" without the value, are
at least as tolerant as the hidden test they stand for, and their keys come from the hidden tests.
"""
import math
import random

import nbformat
import pytest

from lreact import answercheck
from lreact.answercheck import check, key_close, key_int, key_set, probability_form


def _accepts(name, value, key):
    try:
        check(name, value, {name: key})
        return True
    except AssertionError:
        return False


@pytest.mark.parametrize("tol", [0.002, 0.005, 1e-6, 0.5])
def test_close_accepts_everything_the_hidden_test_accepts_and_nothing_twice_as_far(tol):
    """Exactly at the tolerance, on grid boundaries and at random: |x - e| <= tol is always
    accepted (as assert_close accepts it, and 0.752 against 0.75 with 0.002 too); |x - e| >= 2 tol
    (plus a float's slack) never is."""
    rng = random.Random(7)
    centres = [0.0, 0.609, 0.5, 0.75, 1.0, 7.389, -3.0, 12 * tol, 12 * tol - 1e-15, 0.1 + 0.2]
    centres += [rng.uniform(-10, 10) for _ in range(12)]
    for e in centres:
        key = key_close("v", [e], tol)
        inside = [e + tol, e - tol, e, math.nextafter(e + tol, -math.inf)]
        inside += [e + rng.uniform(-tol, tol) for _ in range(6)]
        for x in inside:
            if abs(x - e) <= tol:   # the hidden test's own rule (lreact.checks.assert_close)
                assert _accepts("v", x, key), (e, x, tol)
        beyond = 2 * tol + 1e-9 * max(1.0, abs(e))
        for x in [e + beyond, e - beyond, e + 3 * tol, e - 10]:
            assert not _accepts("v", x, key), (e, x, tol)
    assert _accepts("v", 0.752, key_close("v", [0.75], 0.002))
    assert not _accepts("v", math.nan, key_close("v", [0.5], tol))
    assert not _accepts("v", math.inf, key_close("v", [0.5], tol))


def test_a_key_is_no_finer_than_the_tolerance():
    """Expected values in one tolerance-wide cell give the same key: a program that searches the
    key finds at most "a value within the tolerance", never more digits."""
    assert key_close("v", [0.6001, 0.2], 0.002) == key_close("v", [0.6019, 0.2], 0.002)
    assert key_close("v", [0.6001], 0.002) != key_close("v", [0.6021], 0.002)


def test_each_digest_is_a_slow_salted_kdf():
    """Every guess against a key costs answercheck.ITERATIONS rounds of PBKDF2-HMAC-SHA256."""
    import hashlib
    salt = f"{answercheck.SALT}|n|0".encode()
    slow = hashlib.pbkdf2_hmac("sha256", b"8", salt, answercheck.ITERATIONS).hex()
    assert key_int("n", 8) == f"int {slow[:answercheck.DIGEST_CHARS]}"
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


def test_a_vector_is_checked_entry_by_entry_and_the_message_names_entries_not_values():
    key = key_close("p", [0.609, 0.224, 0.136, 0.030], 0.002)
    assert check("p", (0.6095, 0.2231, 0.1372, 0.0297), {"p": key}) == "p: right"
    with pytest.raises(AssertionError) as err:
        check("p", [0.609, 0.300, 0.136, 0.045], {"p": key}, hint="reread Part I")
    text = str(err.value)
    assert "not yet" in text and "entry 2, entry 4" in text and "Hint: reread Part I" in text
    assert "0.224" not in text and "0.03" not in text
    with pytest.raises(AssertionError, match="has 3 values, expected 4"):
        check("p", [0.6, 0.2, 0.2], {"p": key})


def test_the_key_does_not_hold_the_value_and_depends_on_name_and_position():
    key = key_close("softmax_answer", [0.609, 0.609], 0.002)
    assert "609" not in key and "0.6" not in key.split(" ", 2)[2]
    digests = key.split()[2:]
    assert digests[0] != digests[1], "equal entries must not show as equal digests"
    assert key != key_close("softmax_shifted", [0.609, 0.609], 0.002)
    assert "34000" not in key_int("t", 34_000) and "react" not in key_set("x", ["react"])


def test_int_and_set_keys_normalise_as_the_hidden_assertions_do():
    assert _accepts("n", 8, key_int("n", 8)) and _accepts("n", 8.0, key_int("n", 8))
    assert _accepts("n", "8", key_int("n", 8))
    assert not _accepts("n", 7, key_int("n", 8))
    with pytest.raises(AssertionError, match="whole number"):   # as assert_int_equal says it
        check("n", True, {"n": key_int("n", 1)})
    key = key_set("s", ["rainy", "cloudy"])
    assert _accepts("s", ("cloudy", "rainy", "rainy"), key) and _accepts("s", {"rainy", "cloudy"}, key)
    assert not _accepts("s", ["rainy"], key) and not _accepts("s", ["rainy", "cloudy", "sunny"], key)


def test_a_missing_key_says_how_to_make_it():
    with pytest.raises(KeyError, match="python -m lreact.answercheck"):
        check("x", 1, {})


TINY = [
    ("solution", "x = [0.25, 0.75]\nn = 3\nfirst = 'a'\n"),
    ("test_x", 'from lreact.answercheck import check\nhint = "h"\n_key = {\n}\n'
               '_said = check("x", x, _key, hint=hint)\nprint(_said, "hidden graded")\n'
               "### BEGIN HIDDEN TESTS\nfrom lreact.checks import assert_close\n"
               'assert_close(x, [0.25, 0.75], tol=0.01, name="x", hint=hint)\n### END HIDDEN TESTS'),
    ("test_n", 'from lreact.answercheck import check\n# answer key also for: first = "b"\n_key = {\n}\n'
               'check(f"n ({first})", n, _key)\n'
               "### BEGIN HIDDEN TESTS\nfrom lreact.checks import assert_int_equal\n"
               'assert_int_equal(n, 3 if first == "a" else 4, name=f"n ({first})")\n'
               "from lreact.checks import assert_close\n"   # recorded although the line above fails
               'assert_close(n, 3 if first == "a" else 5, tol=0.5, name=f"m ({first})")\n'
               "### END HIDDEN TESTS"),
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
    keys = answercheck.answer_keys(_tiny())
    assert keys == {"test_x": {"x": key_close("x", [0.25, 0.75], 0.01)},
                    "test_n": {"n (a)": key_int("n (a)", 3), "m (a)": key_close("m (a)", 3, 0.5),
                               "n (b)": key_int("n (b)", 4), "m (b)": key_close("m (b)", 5, 0.5)}}
    path = tmp_path / "tiny.ipynb"
    nbformat.write(_tiny(), path)
    assert answercheck.write_keys(path) == ["test_x", "test_n"]
    assert answercheck.write_keys(path) == []          # running it twice changes nothing
    written = nbformat.read(path, as_version=4)
    namespace = {}
    for cell in written.cells:                        # the written keys pass the solution
        exec(cell.source, namespace)  # noqa: S102 - our own fixture
    assert '"n (b)": "int ' in written.cells[2].source


def test_a_hidden_assertion_without_a_name_cannot_get_a_key():
    cells = TINY[:1] + [("test_x", TINY[1][1].replace(', name="x"', ""))]
    with pytest.raises(ValueError, match="without name="):
        answercheck.answer_keys(_tiny(cells))
