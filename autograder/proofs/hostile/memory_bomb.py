# HOSTILE: lecture-ReAct-exercises ex01_softmax: a memory bomb (bounded at 4 GB so an unconfined run does not take the machine down)
import os as _os
if not _os.path.isdir("/grading/kit"):  # safety catch for instructors: never run this outside the grader sandbox
    raise SystemExit("hostile catalogue entry refused to run outside the grader sandbox")
chunks = []
for _ in range(40):
    chunks.append(bytearray(100 * 1024 * 1024))
softmax_answer = [0.25, 0.25, 0.25, 0.25]
