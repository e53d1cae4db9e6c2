# WRONG: T = 0 not handled: divides by zero
def temperature_softmax(z, T):
    """softmax(z / T); T == 0 gives the one-hot argmax (lowest index on a tie); T < 0 raises
    ValueError (lecture: "Temperature Scaling")."""
    z = np.asarray(z, dtype=float)
    T = float(T)
    if np.isnan(T) or T < 0:
        raise ValueError(f"temperature must be >= 0, got {T}")
    return softmax(z / T)
