# HOSTILE: lecture-ReAct-exercises ex01_softmax: a fork bomb (bounded: at most 400 children, each sleeping 60 s)
import os as _os
if not _os.path.isdir("/grading/kit"):  # safety catch for instructors: never run this outside the grader sandbox
    raise SystemExit("hostile catalogue entry refused to run outside the grader sandbox")
import os
import time
children = 0
for _ in range(400):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    children += 1
print("forked", children, "children")
