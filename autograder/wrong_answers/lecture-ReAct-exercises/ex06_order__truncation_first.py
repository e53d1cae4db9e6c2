# WRONG: truncates first (nucleus of the T = 1 distribution) and applies the temperature afterwards
applied_first = "truncation"
order_probs = [0.376, 0.326, 0.298, 0.0, 0.0]
order_nucleus_size = 3
