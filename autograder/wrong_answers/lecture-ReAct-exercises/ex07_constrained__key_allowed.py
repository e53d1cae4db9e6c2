# WRONG: lets the argument key "city" through as if it could follow "name":
allowed_tokens = ['"get_weather"', '"calculate"', '"city"']
p_constrained = [0.60, 0.20, 0, 0.20, 0, 0, 0, 0]
p_invalid = 0.50
