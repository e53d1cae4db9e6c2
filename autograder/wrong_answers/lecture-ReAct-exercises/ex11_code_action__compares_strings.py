# WRONG: takes the max of the report strings, which compares text ("9°C" > "31°C"), not temperatures
code_action = """
reports = {city: get_weather(city) for city in ["Berlin", "Paris", "Madrid"]}
answer = max(reports, key=reports.get)
"""
llm_calls_specific = 4
llm_calls_code = 2
