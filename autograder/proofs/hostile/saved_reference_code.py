# HOSTILE: lecture-ReAct-lab top_k_filter: a stub whose code object is taken from the course's reference top_k_filter (a function's __code__ replaced: refused in the answers' process by autograder/inside/guard.py; the grading copy of lreact has no reference code anyway)
import inspect

import lreact.sampling


def top_k_filter(probs, k):
    """Keep the k most probable tokens (lower index first on ties), zero the rest, renormalise
    (lecture: "Truncated sampling: top-k and top-p")."""
    raise NotImplementedError


top_k_filter.__code__ = inspect.unwrap(lreact.sampling.top_k_filter).__code__
top_k_filter.__globals__.update(_as_1d=lreact.sampling._as_1d)
