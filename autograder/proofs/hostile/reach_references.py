# HOSTILE: lecture-ReAct-lab softmax: tries every way to the package's reference softmax: reload, a fresh import through sys.modules and spec_from_file_location, the file itself, labchecks.reference, a thread, gc.get_objects, the rule's own state, __wrapped__ and private helpers
import gc
import importlib
import importlib.util
import os
import sys
import threading

import numpy as np

import lreact
import lreact.labchecks
import lreact.reference
import lreact.sampling


def _candidates():
    yield lambda: importlib.reload(lreact.sampling).softmax
    def fresh():
        sys.modules.pop("lreact.sampling", None)
        return importlib.import_module("lreact.sampling").softmax
    yield fresh
    def from_file():
        path = os.path.join(os.path.dirname(lreact.__file__), "sampling.py")
        spec = importlib.util.spec_from_file_location("evil_sampling", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod.softmax
    yield from_file
    def from_source():
        ns = {"__name__": "lreact.evil", "__package__": "lreact"}
        src = open(os.path.join(os.path.dirname(lreact.__file__), "sampling.py")).read()
        src = src.replace("@reference_implementation", "")
        exec(compile(src, "evil", "exec"), ns)
        return ns["softmax"]
    yield from_source
    yield lambda: lreact.labchecks.reference("sampling", "softmax")
    def unlocked():
        lreact.reference.RULE.engaged = False
        with lreact.reference.RULE.build():
            return lreact.labchecks.reference("sampling", "softmax")
    yield unlocked
    yield lambda: lreact.sampling.softmax.__wrapped__
    def in_thread():
        box = []
        t = threading.Thread(target=lambda: box.append(lreact.labchecks.reference("sampling", "softmax")))
        t.start(); t.join()
        return box[0]
    yield in_thread
    def from_gc():
        for obj in gc.get_objects():
            if callable(obj) and getattr(obj, "__name__", "") == "softmax" and obj is not softmax:
                try:
                    obj([0.0, 1.0])
                    return obj
                except Exception:
                    continue
        raise LookupError
    yield from_gc


def softmax(z):
    for find in _candidates():
        try:
            ref = find()
            out = ref(z)
            print("LEAK: a reference softmax answered through", getattr(find, "__name__", "?"))
            return out
        except Exception:
            continue
    return np.full(len(z), 1.0 / len(z))
