# WRONG: stops before the token whose cumulative probability crosses p (nucleus one too small)
flat_nucleus_size = 5
flat_topp_probs = [0.253, 0.230, 0.207, 0.172, 0.138, 0.0, 0.0]
flat_topk_mass = 0.42
