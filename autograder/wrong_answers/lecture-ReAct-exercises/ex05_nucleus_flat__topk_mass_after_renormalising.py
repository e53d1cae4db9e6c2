# WRONG: reports the top-k mass after renormalising (always 1) instead of the mass the two tokens held
flat_nucleus_size = 6
flat_topp_probs = [0.232, 0.211, 0.189, 0.158, 0.126, 0.084, 0.0]
flat_topk_mass = 1.0
