# WRONG: a mask that allows every token
def token_mask(state):
    """The mask 1[i in A(s_t)] over grammar.VOCAB as a boolean array (lecture: "Constrained
    Decoding")."""
    mask = np.ones(len(grammar.VOCAB), dtype=bool)
    mask[grammar.allowed_tokens(state)] = True
    return mask
