# WRONG: exponentiates the logits but never divides by their sum (not a distribution)
softmax_answer = [7.389, 2.718, 1.649, 0.368]
softmax_shifted = [7.389, 2.718, 1.649, 0.368]
