# WRONG: p outside (0, 1] is not rejected
def top_p_filter(probs, p):
    """Keep the smallest set of most probable tokens whose cumulative probability is >= p (the
    crossing token is kept), zero the rest, renormalise (lecture: "Truncated Sampling")."""
    q = np.asarray(probs, dtype=float)
    p = float(p)
    p = min(max(p, 1e-9), 1.0)
    order = np.argsort(-q, kind="stable")
    cumulative = np.cumsum(q[order])
    # tokens before the crossing point, plus the crossing token (float round-off tolerated)
    n = min(int(np.sum(cumulative < p * q.sum() - 1e-12)) + 1, q.size)
    out = np.zeros(q.shape)
    out[order[:n]] = q[order[:n]]
    return out / out.sum()
