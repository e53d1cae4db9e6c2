# HOSTILE: lecture-ReAct-lab softmax: prints the whole input history, the namespace and every string the garbage collector holds, so that hidden tests would land in the feedback
import gc

print(In)  # noqa: F821 - IPython provides it
print(sorted(globals()))
for obj in gc.get_objects():
    if isinstance(obj, str) and ("HIDDEN TESTS" in obj or "assert_close(quiet(softmax" in obj):
        print("LE" + "AK:", obj[:200])  # spelt apart: this cell's own text is in In


def softmax(z):
    raise NotImplementedError("softmax")
