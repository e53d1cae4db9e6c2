# WRONG: takes the argmax of P' instead of sampling
def generate_constrained(logits_fn, rng):
    """Sample token ids from P' (the model's distribution masked to the grammar) until the grammar
    is done; the result always parses (lecture: "Constrained Decoding")."""
    state = grammar.start()
    ids = []
    while not grammar.is_done(state):
        p = constrained_probs(logits_fn(ids), token_mask(state))
        token = int(np.argmax(p))
        ids.append(token)
        state = grammar.advance(state, token)
    return ids
