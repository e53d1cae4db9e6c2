# WRONG: treats today's exchange rate as something the model can recall, so (e) becomes CoT
cot_or_react = {"a": "CoT", "b": "ReAct", "c": "CoT", "d": "ReAct", "e": "CoT", "f": "CoT"}
