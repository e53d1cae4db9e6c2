# WRONG: wraps the course's reference top_p_filter instead of writing the nucleus filter
import lreact.sampling

def top_p_filter(probs, p):
    """Keep the smallest set of most probable tokens whose cumulative probability is >= p (the
    crossing token is kept), zero the rest, renormalise (lecture: "Truncated sampling: top-k and top-p")."""
    return lreact.sampling.top_p_filter(np.asarray(probs, dtype=float).copy(), p)
