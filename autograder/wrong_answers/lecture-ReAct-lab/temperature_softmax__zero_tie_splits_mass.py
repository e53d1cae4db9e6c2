# WRONG: T = 0 spreads the mass over all tied maxima instead of the lowest index
def temperature_softmax(z, T):
    """softmax(z / T); T == 0 gives the one-hot argmax (lowest index on a tie); T < 0 raises
    ValueError (lecture: "Temperature Scaling")."""
    z = np.asarray(z, dtype=float)
    T = float(T)
    if np.isnan(T) or T < 0:
        raise ValueError(f"temperature must be >= 0, got {T}")
    if T == 0:
        p = (z == z.max()).astype(float)
        return p / p.sum()
    return softmax(z / T)
