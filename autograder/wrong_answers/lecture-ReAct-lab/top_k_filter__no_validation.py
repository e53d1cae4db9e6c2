# WRONG: k < 1 is not rejected
def top_k_filter(probs, k):
    """Keep the k most probable tokens (lower index first on ties), zero the rest, renormalise
    (lecture: "Truncated Sampling")."""
    p = np.asarray(probs, dtype=float)
    k = max(int(k), 0)
    k = int(k)
    if k >= p.size:
        return p / p.sum()
    order = np.argsort(-p, kind="stable")  # descending; equal values keep index order
    out = np.zeros(p.shape)
    out[order[:k]] = p[order[:k]]
    return out / out.sum()
