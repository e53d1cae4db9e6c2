# WRONG: distributions right, but takes the ratio of the scaled logits (2/T) / (1/T) = 2 instead of e^((zA - zB)/T)
p_cold = [0.867, 0.117, 0.016]
p_hot = [0.506, 0.307, 0.186]
ratio_cold = 2.0
ratio_hot = 2.0
