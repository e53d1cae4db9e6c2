# HOSTILE: lecture-ReAct-lab sample_token: uses the handle to the test's rng to reach the trusted process (private attributes, frames of a generator, the module of a method, setting attributes) and patch its checks
import numpy as np


def sample_token(logits, *, temperature=1.0, top_k=None, top_p=None, rng):
    for path in ("__class__", "_bit_generator", "__init__", "bit_generator"):
        try:
            obj = getattr(rng, path)
            for deeper in ("__globals__", "__module__", "gi_frame", "f_globals", "__self__", "lock"):
                try:
                    inner = getattr(obj, deeper)
                    print("LEAK?", path, deeper, inner)
                except Exception:
                    pass
        except Exception:
            pass
    try:
        rng.choice = lambda *a, **k: 0
    except Exception:
        pass
    try:
        it = iter(rng.bit_generator.state)
        print("iterated", list(it)[:3])
    except Exception:
        pass
    return -1
