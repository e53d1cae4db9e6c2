# WRONG: zeroes the removed tokens but forgets to renormalise the kept ones
topk_tokens = ["rainy", "cloudy"]
topk_probs = [0.40, 0.30, 0.0, 0.0, 0.0]
topp_tokens = ["rainy", "cloudy", "sunny"]
topp_probs = [0.40, 0.30, 0.25, 0.0, 0.0]
nucleus_size = 3
