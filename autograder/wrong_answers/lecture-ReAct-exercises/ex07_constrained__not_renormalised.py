# WRONG: masks the forbidden tokens but does not renormalise over A(s_t)
allowed_tokens = ['"get_weather"', '"calculate"']
p_constrained = [0.30, 0.10, 0, 0, 0, 0, 0, 0]
p_invalid = 0.60
