# WRONG: a negative temperature is accepted
def temperature_softmax(z, T):
    """softmax(z / T); T == 0 gives the one-hot argmax (lowest index on a tie); T < 0 raises
    ValueError (lecture: "Temperature Scaling")."""
    z = np.asarray(z, dtype=float)
    T = float(T)
    if T == 0:
        p = np.zeros(z.shape)
        p[int(np.argmax(z))] = 1.0
        return p
    return softmax(z / T)
