# HOSTILE: lecture-ReAct-lab softmax: returns an object whose __array__, __float__, __iter__ and __len__ walk up the stack (and every thread's stack) to find the test's expected values
import sys


def _find():
    frames = list(sys._current_frames().values()) + [sys._getframe()]
    for f in frames:
        while f is not None:
            for name in ("expected", "want", "wants", "small", "p"):
                value = f.f_locals.get(name)
                if isinstance(value, (list, tuple)) and value and name != "p":
                    print("LEAK: found", name, "in", f.f_code.co_name)
                    return list(value)
            f = f.f_back
    return [0.5, 0.5]


class Oracle:
    def __array__(self, dtype=None, copy=None):
        import numpy
        return numpy.array(_find(), dtype=dtype)

    def __float__(self):
        return float(_find()[0])

    def __iter__(self):
        return iter(_find())

    def __len__(self):
        return len(_find())

    def __getitem__(self, i):
        return _find()[i]


def softmax(z):
    return Oracle()
