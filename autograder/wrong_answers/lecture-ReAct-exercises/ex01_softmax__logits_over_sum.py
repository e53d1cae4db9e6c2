# WRONG: normalises the logits themselves (z_i / sum z) instead of their exponentials
softmax_answer = [0.8, 0.4, 0.2, -0.4]
softmax_shifted = [0.253, 0.251, 0.250, 0.246]
