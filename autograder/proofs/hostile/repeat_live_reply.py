# HOSTILE: lecture-ReAct-lab sample_token: a greedy sampler whose process answers every repeat(sample_token, n, ...) request with a handle to a live object, then serves the test's iteration over it itself (one greedy token, then StopIteration)
import sys

import numpy as np


def sample_token(logits, *, temperature=1.0, top_k=None, top_p=None, rng, **steps):
    return int(np.argmax(np.asarray(logits, dtype=float)))       # greedy: never samples


class _Live:
    """Callable, so the student side's codec hands it out as a handle."""

    def __call__(self, *args):
        return 0


_student = sys.modules.get("autograder.inside.student")
if _student is not None:                 # the grader's student process
    _serve = _student.StudentLink.serve
    _left = {}

    def _live(self, m):
        op = m.get("op") if isinstance(m, dict) else None
        if op == "call" and m.get("repeat"):
            hid = self.codec.export(_Live())[0]
            return {"k": "r", "v": {"S": [hid, True]}}
        if op == "iter":                 # the test iterates: an iterator of ours, served here
            hid = self.codec.export(_Live())[0]
            _left[hid] = [0]             # one greedy token
            return {"k": "r", "v": {"S": [hid, True]}}
        if op == "next":
            left = _left.get(m.get("ref")) or []
            if left:
                return {"k": "r", "v": left.pop()}
            return {"k": "r", "x": {"e": ["StopIteration", []]}}
        if op in ("len", "bool"):
            return {"k": "r", "v": 1 if op == "len" else True}
        return _serve(self, m)

    _student.StudentLink.serve = _live
