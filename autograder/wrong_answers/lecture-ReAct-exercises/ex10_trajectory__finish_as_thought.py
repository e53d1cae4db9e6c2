# WRONG: classifies finish[...] as a thought because it is plain text (it is an action that ends the run)
action_lines = ["L3", "L5"]
thought_lines = ["L2", "L7", "L8"]
observation_lines = ["L1", "L4", "L6"]
context_c3 = ["c0", "L1", "L2", "L3", "L4", "L5", "L6"]
