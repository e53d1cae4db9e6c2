# WRONG: multiplies P by the mask without renormalising
def constrained_probs(logits, mask):
    """P': the softmax of ``logits`` restricted to the tokens where ``mask`` is True, renormalised
    (lecture: "Constrained Decoding")."""
    mask = np.asarray(mask, dtype=bool)
    if not mask.any():
        raise ValueError("the mask allows no token")
    return softmax(logits) * mask
