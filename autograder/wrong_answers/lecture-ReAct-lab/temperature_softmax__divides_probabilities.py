# WRONG: divides the probabilities by T (and renormalises) instead of the logits
def temperature_softmax(z, T):
    """softmax(z / T); T == 0 gives the one-hot argmax (lowest index on a tie); T < 0 raises
    ValueError (lecture: "Temperature Scaling")."""
    z = np.asarray(z, dtype=float)
    T = float(T)
    if np.isnan(T) or T < 0:
        raise ValueError(f"temperature must be >= 0, got {T}")
    if T == 0:
        p = np.zeros(z.shape)
        p[int(np.argmax(z))] = 1.0
        return p
    p = softmax(z) / T
    return p / p.sum()
