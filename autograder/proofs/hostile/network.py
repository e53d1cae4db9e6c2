# HOSTILE: lecture-ReAct-exercises ex01_softmax: opens network connections (the selfcheck's listener on 127.0.0.1:47913, a local Ollama port); loopback only, by design: the sandbox has no network at all
import os as _os
if not _os.path.isdir("/grading/kit"):  # safety catch: never run this outside the grader sandbox
    raise SystemExit("hostile catalogue entry refused to run outside the grader sandbox")
import socket

for host, port in [("127.0.0.1", 47913), ("127.0.0.1", 11434), ("localhost", 47913)]:
    try:
        with socket.create_connection((host, port), timeout=3) as s:
            s.sendall(b"softmax_answer?")
            print("LEAK: connected to", host, port)
    except OSError:
        pass
