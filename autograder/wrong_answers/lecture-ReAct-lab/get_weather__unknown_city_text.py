# WRONG: returns a text for an unknown city instead of raising
def get_weather(city, unit="celsius"):
    """The weather in ``city`` from the offline WEATHER table, e.g. '12°C, rainy'
    (lecture: "Function Calling: Defining & Advertising Tools")."""
    names = {name.lower(): name for name in WEATHER}
    key = names.get(str(city).strip().lower())
    if key is None:
        return f"unknown city {city!r}"
    row = WEATHER[key]
    if unit == "celsius":
        return f"{row['temp_c']}°C, {row['condition']}"
    if unit == "fahrenheit":
        return f"{round(row['temp_c'] * 9 / 5 + 32)}°F, {row['condition']}"
    raise ValueError(f"unit must be 'celsius' or 'fahrenheit', got {unit!r}")
