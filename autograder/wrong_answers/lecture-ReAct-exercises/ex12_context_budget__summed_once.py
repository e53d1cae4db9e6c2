# WRONG: counts every token once (the final context) instead of once per turn that re-sends it
total_tokens_sent = 1200 + 10 * 400
prefix_tokens_sent = 1200
overflow_turn = 8
