# HOSTILE: lecture-ReAct-exercises ex01_softmax: fills every private tmpfs (/dev/shm, /tmp, the scratch folder), then holds anonymous shared memory (memfd) in six processes of 1 GB each, so that no per-process limit sees it; bounded at about 6.5 GB, held for 60 s
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

MB = 1024 * 1024
block = b"\xa5" * MB


def fill(new_file, limit_mb):
    """Write up to ``limit_mb`` MB in files of 60 MB (under the file-size limit); how many MB
    were written and the error that stopped it."""
    done = 0
    try:
        while done < limit_mb:
            fd = new_file()
            for _ in range(60):
                os.write(fd, block)
                done += 1
    except OSError as e:
        return done, e.strerror
    return done, None


for folder in dict.fromkeys(("/dev/shm", "/tmp", os.environ.get("HOME", "/grading"), "/grading")):
    if not os.path.isdir(folder):
        continue
    names = (os.path.join(folder, f"fill{i}.bin") for i in range(10**6))
    done, err = fill(lambda: os.open(next(names), os.O_WRONLY | os.O_CREAT, 0o600), 1024)
    print("FILLED", folder, done, "MB", err or "", flush=True)

holders = []
for _ in range(6):
    pid = _fork()
    if pid == 0:                      # each holder keeps 1 GB that is in no one's address space
        try:
            done, err = fill(lambda: os.memfd_create("hold"), 1024)
            print("MEMFD", done, "MB", err or "", flush=True)
            time.sleep(60)
        finally:
            os._exit(0)
    holders.append(pid)
time.sleep(3)
softmax_answer = [0.25, 0.25, 0.25, 0.25]
