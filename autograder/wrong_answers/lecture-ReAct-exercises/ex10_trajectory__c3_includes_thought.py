# WRONG: puts the thought t_3 (L7) into c_3, although t_3 is drawn from pi(t_3 | c_3)
action_lines = ["L3", "L5", "L8"]
thought_lines = ["L2", "L7"]
observation_lines = ["L1", "L4", "L6"]
context_c3 = ["c0", "L1", "L2", "L3", "L4", "L5", "L6", "L7"]
