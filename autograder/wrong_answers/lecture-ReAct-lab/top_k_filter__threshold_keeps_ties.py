# WRONG: keeps every token >= the k-th largest value: more than k on ties
def top_k_filter(probs, k):
    """Keep the k most probable tokens (lower index first on ties), zero the rest, renormalise
    (lecture: "Truncated Sampling")."""
    p = np.asarray(probs, dtype=float)
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    k = int(k)
    threshold = np.sort(p)[-k]
    out = np.where(p >= threshold, p, 0.0)
    return out / out.sum()
