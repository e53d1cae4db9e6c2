# WRONG: calls grammar.toy_logits instead of the logits_fn given
def generate_constrained(logits_fn, rng):
    """Sample token ids from P' (the model's distribution masked to the grammar) until the grammar
    is done; the result always parses (lecture: "Constrained Decoding")."""
    state = grammar.start()
    ids = []
    while not grammar.is_done(state):
        p = constrained_probs(grammar.toy_logits(ids), token_mask(state))
        token = int(rng.choice(len(p), p=p))
        ids.append(token)
        state = grammar.advance(state, token)
    return ids
