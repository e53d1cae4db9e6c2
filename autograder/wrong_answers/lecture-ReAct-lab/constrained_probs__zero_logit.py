# WRONG: sets forbidden logits to 0 instead of -inf
def constrained_probs(logits, mask):
    """P': the softmax of ``logits`` restricted to the tokens where ``mask`` is True, renormalised
    (lecture: "Constrained Decoding")."""
    mask = np.asarray(mask, dtype=bool)
    if not mask.any():
        raise ValueError("the mask allows no token")
    return softmax(np.where(mask, np.asarray(logits, dtype=float), 0.0))
