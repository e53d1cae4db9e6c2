# WRONG: looks the tool name up before parsing the arguments, so the cut-off JSON of c7 fails check 2
first_failed_check = {"c1": 0, "c2": 2, "c3": 1, "c4": 3, "c5": 3, "c6": 0, "c7": 2, "c8": 3}
