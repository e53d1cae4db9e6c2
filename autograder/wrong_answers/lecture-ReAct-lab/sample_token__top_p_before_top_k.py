# WRONG: applies top-p before top-k
def sample_token(logits, *, temperature=1.0, top_k=None, top_p=None, rng):
    """Temperature, softmax, top-k, top-p, then one categorical draw with ``rng``; temperature 0
    returns the argmax (lecture: "Next-Token Sampling")."""
    if temperature == 0:
        return int(np.argmax(np.asarray(logits, dtype=float)))
    probs = temperature_softmax(logits, temperature)
    if top_p is not None:
        probs = top_p_filter(probs, top_p)
    if top_k is not None:
        probs = top_k_filter(probs, top_k)
    return int(rng.choice(len(probs), p=probs))
