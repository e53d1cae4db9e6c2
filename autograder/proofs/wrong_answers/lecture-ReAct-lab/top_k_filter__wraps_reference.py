# WRONG: wraps the course's reference top_k_filter instead of writing the filter
import lreact.sampling

def top_k_filter(probs, k):
    """Keep the k most probable tokens (lower index first on ties), zero the rest, renormalise
    (lecture: "Truncated sampling: top-k and top-p")."""
    return lreact.sampling.top_k_filter(np.asarray(probs, dtype=float).copy(), k)
