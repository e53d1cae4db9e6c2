# WRONG: exponentiates the raw logits: overflows on huge logits
def constrained_probs(logits, mask):
    """P': the softmax of ``logits`` restricted to the tokens where ``mask`` is True, renormalised
    (lecture: "Constrained Decoding")."""
    mask = np.asarray(mask, dtype=bool)
    if not mask.any():
        raise ValueError("the mask allows no token")
    e = np.exp(np.asarray(logits, dtype=float)) * mask
    return e / e.sum()
