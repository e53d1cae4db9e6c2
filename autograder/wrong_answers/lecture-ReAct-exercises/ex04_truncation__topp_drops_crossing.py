# WRONG: top-p keeps tokens only while the cumulative sum stays below p, so it drops the token that crosses p
topk_tokens = ["rainy", "cloudy"]
topk_probs = [0.571, 0.429, 0.0, 0.0, 0.0]
topp_tokens = ["rainy", "cloudy"]
topp_probs = [0.571, 0.429, 0.0, 0.0, 0.0]
nucleus_size = 2
