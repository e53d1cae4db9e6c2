# HOSTILE: lecture-ReAct-lab softmax: defines isinstance, len, all, abs, float, AssertionError and the setup's names (np, json) so that checks in the tests would use the student's versions
import numpy


def isinstance(*args):
    return True


def len(x):
    return 4


def all(x):
    return True


def abs(x):
    return 0.0


def float(x):
    return 0.0


class AssertionError(Exception):
    pass


class _FakeNumpy:
    def __getattr__(self, name):
        return lambda *a, **k: True


np = _FakeNumpy()


def softmax(z):
    return [0.5, 0.5]
