# WRONG: applies the mask by multiplying the logits (forbidden tokens keep logit 0)
def generate_constrained(logits_fn, rng):
    """Sample token ids from P' (the model's distribution masked to the grammar) until the grammar
    is done; the result always parses (lecture: "Constrained Decoding")."""
    state = grammar.start()
    ids = []
    while not grammar.is_done(state):
        p = softmax(logits_fn(ids) * token_mask(state))
        token = int(rng.choice(len(p), p=p))
        ids.append(token)
        state = grammar.advance(state, token)
    return ids
