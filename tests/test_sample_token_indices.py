"""The frequency tests count only real token indices (issue 16, found by an outside red team:
a sampler returning ``token - 5`` or ``token + 0.75`` earned 4 of sample_token's 5 points,
because ``c[int(token)]`` counted a negative index or a float as a token)."""
import pytest

from autograder.proofs import catalogue
from autograder.run import engine
from autograder.cells import load, replace_cell
from autograder.paths import ROOT, source_path

LAB = "lecture-ReAct-lab"
SAMPLE_TOKEN_TESTS = ("test_sample_token", "test_sample_token__frequencies",
                      "test_sample_token__pipeline")


@pytest.mark.slow
@pytest.mark.parametrize("slug", ["negative_index", "float_index"])
def test_a_sampler_that_returns_no_token_index_earns_no_sample_token_point(slug):
    entry = next(e for e in catalogue.entries(LAB) if e.grade_id == "sample_token"
                 and e.slug == slug)
    nb = replace_cell(load(source_path(LAB, ROOT)), "sample_token", entry.source)
    result = engine.grade_notebook(LAB, nb, 60)
    for gid in SAMPLE_TOKEN_TESTS:
        got, possible = result.scores[gid]
        assert got == 0 and possible > 0, (gid, got, result.errors.get(gid))
    assert result.total == result.possible - 5      # and nothing else is lost


def test_token_index_takes_integers_in_range_only():
    import numpy as np

    from lreact.labchecks import token_index
    assert token_index(3, 5) == 3 and token_index(np.int64(0), 5) == 0
    for bad in (-1, 5, 2.0, 2.75, "3", True, np.float64(1), None):
        with pytest.raises(AssertionError, match="token index in 0..4"):
            token_index(bad, 5)
