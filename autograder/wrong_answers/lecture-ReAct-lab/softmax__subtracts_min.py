# WRONG: subtracts the minimum instead of the maximum: overflows
def softmax(z):
    """Numerically stable softmax of a 1-D vector of logits (lecture: "From Logits to a Token").

    Returns a numpy array of probabilities; a logit of -inf gets probability 0.
    """
    z = np.asarray(z, dtype=float)
    if z.ndim != 1 or z.size == 0:
        raise ValueError(f"softmax expects a non-empty 1-D vector, got shape {z.shape}")
    top = z.max()
    if top == -np.inf:
        raise ValueError("all logits are -inf: no token can be chosen")
    e = np.exp(z - z[np.isfinite(z)].min())
    return e / e.sum()
