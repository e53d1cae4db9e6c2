# HOSTILE: lecture-ReAct-exercises ex01_softmax: writes fake replies, fake results and fake idle/status messages on every open file descriptor, from a background thread too
import json
import os
import struct
import threading

fakes = [{"k": "r", "raw": {"ok": True, "outputs": [], "names": {}, "gone": []}},
         {"k": "r", "v": True},
         {"result": {"cells": {}, "failure": None}},
         {"header": {"msg_type": "status"}, "content": {"execution_state": "idle"}}]


def spam(rounds):
    for _ in range(rounds):
        for fd in range(3, 64):
            for fake in fakes:
                data = json.dumps(fake).encode()
                try:
                    os.write(fd, struct.pack(">I", len(data)) + data)
                    os.write(fd, data + b"\n")
                except OSError:
                    pass


threading.Thread(target=spam, args=(200,), daemon=True).start()
spam(1)
softmax_answer = [0.25, 0.25, 0.25, 0.25]
