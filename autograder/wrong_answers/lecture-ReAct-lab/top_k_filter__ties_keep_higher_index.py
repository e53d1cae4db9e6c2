# WRONG: ascending argsort reversed: ties keep the higher index
def top_k_filter(probs, k):
    """Keep the k most probable tokens (lower index first on ties), zero the rest, renormalise
    (lecture: "Truncated Sampling")."""
    p = np.asarray(probs, dtype=float)
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    k = int(k)
    if k >= p.size:
        return p / p.sum()
    order = np.argsort(p)[::-1]
    out = np.zeros(p.shape)
    out[order[:k]] = p[order[:k]]
    return out / out.sum()
