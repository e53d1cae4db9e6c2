# WRONG: divides the probabilities (not the logits) by T; renormalising undoes it, so nothing changes
applied_first = "temperature"
order_probs = [0.421, 0.316, 0.263, 0.0, 0.0]
order_nucleus_size = 3
