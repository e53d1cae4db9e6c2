# HOSTILE: lecture-ReAct-exercises ex01_softmax: a background thread that keeps re-patching lreact.checks, numpy.allclose and builtins every millisecond
import builtins
import threading
import time

import numpy

import lreact.checks


def _ok(*args, **kwargs):
    return None


def repatch():
    while True:
        for name in dir(lreact.checks):
            if name.startswith(("assert_", "as_")):
                setattr(lreact.checks, name, _ok)
        numpy.allclose = lambda *a, **k: True
        builtins.AssertionError = type("Nothing", (Exception,), {})
        time.sleep(0.001)


threading.Thread(target=repatch, daemon=True).start()
softmax_answer = [0.25, 0.25, 0.25, 0.25]
softmax_shifted = [0.25, 0.25, 0.25, 0.25]
