# WRONG: takes the lab's private copy of the reference softmax at the top of the answer cell
from lreact.labchecks import reference


def softmax(z):
    """Numerically stable softmax of a 1-D vector of logits (lecture: "From logits to a token: the softmax").

    Returns a numpy array of probabilities; a logit of -inf gets probability 0.
    """
    raise NotImplementedError


softmax = reference("sampling", "softmax")
