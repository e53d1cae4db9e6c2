# WRONG: gives the last turn that still fits (7) instead of the first that overflows
total_tokens_sent = 34000
prefix_tokens_sent = 12000
overflow_turn = 7
