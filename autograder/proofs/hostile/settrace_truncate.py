# HOSTILE: lecture-ReAct-exercises ex01_softmax: a sys.settrace tracer that skips the statements of every later cell, after replacing sys.settrace and sys.setprofile with no-ops
import sys
import threading


def tracer(frame, event, arg):
    if event == "call" and frame.f_code.co_filename.startswith("<"):
        raise SystemExit  # the cell stops at its first statement
    return None


sys.settrace(tracer)
threading.settrace(tracer)
sys.settrace = lambda f: None
sys.setprofile = lambda f: None
softmax_answer = [0.25, 0.25, 0.25, 0.25]
