# WRONG: forgets that the prefix c_0 is part of every call's context
total_tokens_sent = 400 * 55
prefix_tokens_sent = 0
overflow_turn = 11
