# WRONG: gives up on the stub and imports the course's reference sampler over it
def sample_token(logits, *, temperature=1.0, top_k=None, top_p=None, rng,
                 temperature_fn=None, top_k_fn=None, top_p_fn=None):
    """Temperature, softmax, top-k, top-p, then one categorical draw with ``rng``; temperature 0
    returns the argmax (lecture: "Next-token sampling: greedy or random")."""
    raise NotImplementedError


from lreact.sampling import sample_token  # noqa: E402,F811
