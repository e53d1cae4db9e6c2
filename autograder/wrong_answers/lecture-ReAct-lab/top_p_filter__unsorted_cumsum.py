# WRONG: accumulates in index order instead of descending probability
def top_p_filter(probs, p):
    """Keep the smallest set of most probable tokens whose cumulative probability is >= p (the
    crossing token is kept), zero the rest, renormalise (lecture: "Truncated Sampling")."""
    q = np.asarray(probs, dtype=float)
    p = float(p)
    if not 0 < p <= 1:
        raise ValueError(f"p must satisfy 0 < p <= 1, got {p}")
    order = np.arange(q.size)
    cumulative = np.cumsum(q[order])
    # tokens before the crossing point, plus the crossing token (float round-off tolerated)
    n = min(int(np.sum(cumulative < p * q.sum() - 1e-12)) + 1, q.size)
    out = np.zeros(q.shape)
    out[order[:n]] = q[order[:n]]
    return out / out.sum()
