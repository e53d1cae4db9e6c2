# WRONG: counts the failing lookup of Atlantis as a schema failure (it passes validation; the tool fails when it runs)
first_failed_check = {"c1": 0, "c2": 2, "c3": 1, "c4": 3, "c5": 3, "c6": 3, "c7": 1, "c8": 3}
