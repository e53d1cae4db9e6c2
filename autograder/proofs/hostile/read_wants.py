# HOSTILE: lecture-ReAct-lab2 render_chatml: reads the test's `wants` (expected texts) from the calling test's namespace, globals, the stack and the garbage collector
import gc
import sys


def render_chatml(messages, tools=None):
    for source in (globals(), *(f.f_globals for f in [sys._getframe(1)] if f)):
        wants = source.get("wants")
        if wants:
            print("LEAK: wants in globals")
            return wants[0]
    for obj in gc.get_objects():
        if isinstance(obj, dict) and "wants" in obj and isinstance(obj["wants"], list):
            print("LEAK: wants through gc")
            return obj["wants"][0]
    return "<|im_start|>assistant\n"
