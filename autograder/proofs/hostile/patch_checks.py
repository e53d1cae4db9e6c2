# HOSTILE: lecture-ReAct-exercises ex01_softmax: patches numpy.allclose & co, the lreact.checks helpers and sys.modules before the tests
import sys
import types

import numpy
import numpy.testing

import lreact.checks

numpy.allclose = lambda *a, **k: True
numpy.isclose = lambda *a, **k: True
numpy.array_equal = lambda *a, **k: True
numpy.testing.assert_allclose = lambda *a, **k: None


def _ok(*args, **kwargs):
    return None


for name in dir(lreact.checks):
    if name.startswith(("assert_", "as_")):
        setattr(lreact.checks, name, _ok)
fake = types.ModuleType("lreact.checks")
for name in dir(lreact.checks):
    setattr(fake, name, _ok)
sys.modules["lreact.checks"] = fake
softmax_answer = [0.25, 0.25, 0.25, 0.25]
softmax_shifted = [0.25, 0.25, 0.25, 0.25]
