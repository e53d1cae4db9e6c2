# WRONG: (a) is right, but believes adding 100 to every logit flattens the distribution (z'/sum z')
softmax_answer = [0.609, 0.224, 0.136, 0.030]
softmax_shifted = [0.253, 0.251, 0.250, 0.246]
