# WRONG: stops after the closing brace and never emits <eos>
def generate_constrained(logits_fn, rng):
    """Sample token ids from P' (the model's distribution masked to the grammar) until the grammar
    is done; the result always parses (lecture: "Constrained Decoding")."""
    state = grammar.start()
    ids = []
    while len(ids) < len(grammar.SKELETON) - 1:
        p = constrained_probs(logits_fn(ids), token_mask(state))
        token = int(rng.choice(len(p), p=p))
        ids.append(token)
        state = grammar.advance(state, token)
    return ids
