# WRONG: gives up on the stub and imports the course's reference softmax over it
def softmax(z):
    """Numerically stable softmax of a 1-D vector of logits (lecture: "From logits to a token: the softmax").

    Returns a numpy array of probabilities; a logit of -inf gets probability 0.
    """
    raise NotImplementedError


from lreact.sampling import softmax  # noqa: E402,F811
