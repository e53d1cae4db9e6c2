# WRONG: zeroes the tail in the caller's array (no copy)
def top_k_filter(probs, k):
    """Keep the k most probable tokens (lower index first on ties), zero the rest, renormalise
    (lecture: "Truncated Sampling")."""
    p = np.asarray(probs, dtype=float)
    out = p
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    k = int(k)
    if k >= p.size:
        return p / p.sum()
    order = np.argsort(-p, kind="stable")  # descending; equal values keep index order
    out[order[k:]] = 0.0
    return out / out.sum()
