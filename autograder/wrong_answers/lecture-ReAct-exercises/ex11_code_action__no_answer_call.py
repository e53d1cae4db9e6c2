# WRONG: forgets that the final text answer needs its own model call (3 and 1 instead of 4 and 2)
code_action = """
temps = {}
for city in ["Berlin", "Paris", "Madrid"]:
    temps[city] = float(get_weather(city).split("°")[0])
answer = max(temps, key=temps.get)
"""
llm_calls_specific = 3
llm_calls_code = 1
