# WRONG: leaves out the prefix c_0 (system prompt and tools), which the model receives at every step
action_lines = ["L3", "L5", "L8"]
thought_lines = ["L2", "L7"]
observation_lines = ["L1", "L4", "L6"]
context_c3 = ["L1", "L2", "L3", "L4", "L5", "L6"]
