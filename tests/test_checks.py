"""lreact.checks: comparison helpers of the graded tests.  They compare plain numbers (never an
answer object's ``__eq__``), give hints without revealing the answer, and never print or warn."""
import warnings

import numpy as np
import pytest

from lreact.checks import (as_float, as_float_list, as_int, as_str_set, assert_close,
                           assert_int_equal, assert_probability_vector, assert_raises,
                           assert_same_set, quiet)


class Liar(float):
    """A cheat that claims to equal everything."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = float.__hash__


class LiarList(list):
    def __eq__(self, other):
        return True


def fails(fn, *args, **kwargs):
    with pytest.raises(AssertionError) as e:
        fn(*args, **kwargs)
    return str(e.value)


def test_conversions_to_plain_values():
    assert as_float_list(np.array([[1, 2], [3, 4]])) == [1.0, 2.0, 3.0, 4.0]
    assert all(type(x) is float for x in as_float_list(np.float32(2.5)))
    assert as_float(np.array([3])) == 3.0 and type(as_float(np.int64(3))) is float
    assert as_int(4.0) == 4 and type(as_int(np.int64(4))) is int
    assert as_str_set(["b", "a", "b", np.str_("c")]) == ["a", "b", "c"]
    assert as_str_set({"x"}) == ["x"]


@pytest.mark.parametrize("fn, value, msg", [
    (as_float_list, None, "not set yet"),
    (as_float_list, ..., "not set yet"),
    (as_float_list, "abc", "must be a number"),
    (as_float_list, {"a": 1}, "must be a number"),
    (as_float, [1, 2], "single number"),
    (as_int, 2.5, "whole number"),
    (as_int, True, "whole number"),
    (as_int, float("inf"), "whole number"),
    (as_int, "three", "whole number"),
    (as_int, None, "whole number"),
    (as_str_set, "abc", "list or set of strings"),
    (as_str_set, None, "list or set of strings"),
    (as_str_set, 3, "list or set of strings"),
])
def test_conversion_failures_are_assertion_errors(fn, value, msg):
    assert msg in fails(fn, value, name="answer")


def test_assert_close():
    assert_close([0.1 + 0.2], [0.3])
    assert_close(np.array([1.0, 2.0]), (1.0, 2.0 + 1e-8))
    assert_close([float("inf"), float("-inf")], [float("inf"), float("-inf")])
    assert "at index 1" in fails(assert_close, [1.0, 2.5], [1.0, 2.0])
    assert "has 1 values, expected 2" in fails(assert_close, [1.0], [1.0, 2.0])
    assert "is wrong" in fails(assert_close, float("nan"), 0.0)
    assert_close([1.0], [1.05], tol=0.1)


def test_cheating_equality_gets_nothing():
    assert "is wrong" in fails(assert_close, Liar(0.0), 1.0)
    assert "is wrong" in fails(assert_close, LiarList([0.0, 0.0]), [1.0, 2.0])
    assert "is wrong" in fails(assert_int_equal, Liar(3.0), 4)
    assert "is wrong" in fails(assert_same_set, LiarList(["a"]), ["b"])


def test_hints_and_reveal():
    text = fails(assert_close, 0.5, 0.25, name="p", hint="reread 'Temperature Scaling'")
    assert text == "p is wrong: got 0.5\nHint: reread 'Temperature Scaling'"
    assert "0.25" not in text  # visible tests do not give the answer away
    assert "expected 0.25" in fails(assert_close, 0.5, 0.25, reveal=True)
    assert fails(assert_int_equal, 3, 4, name="n") == "n is wrong: got 3"
    assert "expected 4" in fails(assert_int_equal, 3, 4, reveal=True)
    assert "expected ['b']" in fails(assert_same_set, ["a"], ["b"], reveal=True)
    assert "['b']" not in fails(assert_same_set, ["a"], ["b"])


def test_assert_same_set_ignores_order_and_duplicates():
    assert_same_set(("b", "a", "a"), {"a", "b"})
    fails(assert_same_set, ["a"], ["a", "b"])


def test_assert_probability_vector():
    assert assert_probability_vector([0.25, 0.75], 2) == [0.25, 0.75]
    assert_probability_vector(np.full(10, 0.1))
    assert "entries, expected 3" in fails(assert_probability_vector, [0.5, 0.5], 3)
    assert "negative" in fails(assert_probability_vector, [1.5, -0.5])
    assert "negative, NaN" in fails(assert_probability_vector, [np.nan, 1.0])
    assert "sum to" in fails(assert_probability_vector, [0.5, 0.6])


def test_assert_raises():
    e = assert_raises(ValueError, int, "x")
    assert isinstance(e, ValueError)
    assert assert_raises(KeyError, {}.__getitem__, "k").args == ("k",)
    text = fails(assert_raises, ValueError, lambda: {}["k"], name="f(-1)", hint="check T < 0")
    assert text.startswith("f(-1) raised KeyError") and "expected ValueError" in text
    assert text.endswith("Hint: check T < 0")
    assert fails(assert_raises, ValueError, lambda: None, name="f()") == "f() did not raise ValueError"
    assert_raises(ValueError, lambda x, *, y: (_ for _ in ()).throw(ValueError(x + y)), 1, y=2)


def test_nothing_prints_or_warns(capsys):
    def noisy():
        warnings.warn("deprecated!", DeprecationWarning)
        return np.log(np.array([0.0]))  # a numpy RuntimeWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = quiet(noisy)
        assert out[0] == -np.inf
        assert_raises(ValueError, lambda: (warnings.warn("w"), int("x")))
        assert as_float_list(np.array([1 + 0j])) == [1.0]  # ComplexWarning silenced
    assert capsys.readouterr() == ("", "")
    # and quiet does not swallow errors or change the warning filters afterwards (checked
    # under "error": pytest.warns would reset the filters and hold whatever quiet did)
    with pytest.raises(ZeroDivisionError):
        quiet(lambda: 1 / 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        before = list(warnings.filters)
        quiet(noisy)
        assert warnings.filters == before
        with pytest.raises(UserWarning):
            warnings.warn("still an error outside quiet")


def test_quiet_passes_arguments():
    assert quiet(lambda a, b=0: a + b, 1, b=2) == 3


def test_a_failed_check_shows_its_message_not_the_check_code():
    """Under a test cell (and so in nbgrader's Validate list) a failed course check is its
    message and hint alone; the cell still ends with an AssertionError, and an assert of the
    student's own code keeps its full traceback."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
                    "from lreact.checks import assert_close\n"
                    "assert_close([0.3], [0.4], name='softmax(z)', hint='reread Part I')"),
                nbformat.v4.new_code_cell("def mine():\n    assert 1 == 2, 'own'\nmine()")]
    NotebookClient(nb, kernel_name="python3", allow_errors=True, timeout=60).execute()
    check, own = ([o for o in c.outputs if o.output_type == "error"][0] for c in nb.cells)
    assert check.ename == own.ename == "AssertionError"
    assert check.traceback == ["\x1b[31mTest not passed\x1b[39m: softmax(z) is wrong: got 0.3\n"
                               "Hint: reread Part I"]
    assert len(own.traceback) > 1 and "mine()" in "".join(own.traceback)
    with pytest.raises(AssertionError, match="softmax"):
        assert_close([0.3], [0.4], name="softmax")
