# WRONG: calls the course's reference weather tool instead of looking the city up
from lreact import tools as _tools

def get_weather(city, unit="celsius"):
    """The weather in ``city`` from the offline WEATHER table, e.g. '12°C, rainy'
    (lecture: "Function calling: defining and advertising tools")."""
    return _tools.get_weather(city, unit)
