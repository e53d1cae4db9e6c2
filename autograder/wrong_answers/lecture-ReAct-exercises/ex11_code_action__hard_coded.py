# WRONG: makes the calls but hard-codes today's answer instead of computing it from the results
code_action = """
for city in ["Berlin", "Paris", "Madrid"]:
    get_weather(city)
answer = "Madrid"
"""
llm_calls_specific = 4
llm_calls_code = 2
