# WRONG: zeroes the tail but forgets to renormalise
def top_k_filter(probs, k):
    """Keep the k most probable tokens (lower index first on ties), zero the rest, renormalise
    (lecture: "Truncated Sampling")."""
    p = np.asarray(probs, dtype=float)
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    k = int(k)
    if k >= p.size:
        return p / p.sum()
    order = np.argsort(-p, kind="stable")  # descending; equal values keep index order
    out = np.zeros(p.shape)
    out[order[:k]] = p[order[:k]]
    return out
