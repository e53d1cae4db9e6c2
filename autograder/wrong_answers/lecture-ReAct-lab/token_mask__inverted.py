# WRONG: marks the forbidden tokens instead of the allowed ones
def token_mask(state):
    """The mask 1[i in A(s_t)] over grammar.VOCAB as a boolean array (lecture: "Constrained
    Decoding")."""
    mask = np.zeros(len(grammar.VOCAB), dtype=bool)
    mask[:] = True
    mask[grammar.allowed_tokens(state)] = False
    return mask
