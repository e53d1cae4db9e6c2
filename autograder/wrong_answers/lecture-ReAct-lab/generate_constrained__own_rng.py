# WRONG: makes its own seeded generator instead of using rng
def generate_constrained(logits_fn, rng):
    """Sample token ids from P' (the model's distribution masked to the grammar) until the grammar
    is done; the result always parses (lecture: "Constrained Decoding")."""
    rng = np.random.default_rng(0)
    state = grammar.start()
    ids = []
    while not grammar.is_done(state):
        p = constrained_probs(logits_fn(ids), token_mask(state))
        token = int(rng.choice(len(p), p=p))
        ids.append(token)
        state = grammar.advance(state, token)
    return ids
