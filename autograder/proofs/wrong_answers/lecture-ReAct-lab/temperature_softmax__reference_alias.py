# WRONG: binds the name to the course's reference implementation after the stub
import lreact.sampling


def temperature_softmax(z, T, *, softmax_fn=None):
    """softmax(z / T); T == 0 gives the one-hot argmax (lowest index on a tie); T < 0 raises
    ValueError (lecture: "Temperature scaling").  ``softmax_fn``: the softmax to use (None: yours)."""
    raise NotImplementedError


temperature_softmax = lreact.sampling.temperature_softmax
