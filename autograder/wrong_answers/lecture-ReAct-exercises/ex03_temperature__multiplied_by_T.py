# WRONG: multiplies the logits by T instead of dividing, so T = 0.5 flattens and T = 2 sharpens
p_cold = [0.506, 0.307, 0.186]
p_hot = [0.867, 0.117, 0.016]
ratio_cold = 1.649
ratio_hot = 7.389
