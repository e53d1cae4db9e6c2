# HOSTILE: lecture-ReAct-exercises ex01_softmax: a fork bomb (bounded: at most 400 children, each sleeping 60 s)
import os as _os
if not _os.path.isdir("/grading/kit"):  # safety catch for instructors: never run this outside the grader sandbox
    raise SystemExit("hostile catalogue entry refused to run outside the grader sandbox")
import ctypes as _ctypes
# os.fork is refused in the answers' process (autograder/inside/guard.py); libc's own fork is what
# a determined answer uses instead, so the sandbox (cgroup, pids limit) is what this entry meets
_libc_fork = _ctypes.PyDLL(None).fork


def _fork():
    pid = _libc_fork()
    if pid < 0:
        raise OSError("fork failed")
    return pid


import os
import time
children = 0
for _ in range(400):
    try:
        pid = _fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    children += 1
print("forked", children, "children")
