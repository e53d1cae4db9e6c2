# WRONG: returns the allowed token ids, not a mask over the vocabulary
def token_mask(state):
    """The mask 1[i in A(s_t)] over grammar.VOCAB as a boolean array (lecture: "Constrained
    Decoding")."""
    mask = np.zeros(len(grammar.VOCAB), dtype=bool)
    mask[grammar.allowed_tokens(state)] = True
    return np.array(grammar.allowed_tokens(state))
