"""lreact.tools: the lab's example tools (Part III) on offline, deterministic data.

``calculate`` must never evaluate names, calls or attributes (it walks the ``ast``, no ``eval``),
must refuse runaway powers and long input quickly, and must say clearly what went wrong.
"""
import ast
import inspect
import json
import math

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lreact import tools
from lreact.tools import (CALCULATOR_TOOL, REGISTRY, TOOLS, WEATHER, WEATHER_TOOL, calculate,
                          get_weather)


# -- schemas and registry ---------------------------------------------------------------------

def test_tools_and_registry_agree():
    assert [t["function"]["name"] for t in TOOLS] == ["get_weather", "calculate"]
    assert set(REGISTRY) == {t["function"]["name"] for t in TOOLS}
    assert REGISTRY["get_weather"] is get_weather and REGISTRY["calculate"] is calculate
    assert TOOLS == [WEATHER_TOOL, CALCULATOR_TOOL]


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t["function"]["name"])
def test_schemas_are_valid_json_schema_in_the_function_envelope(tool):
    assert tool["type"] == "function"
    fn = tool["function"]
    assert set(fn) == {"name", "description", "parameters"} and fn["description"]
    jsonschema.Draft202012Validator.check_schema(fn["parameters"])
    assert fn["parameters"]["type"] == "object"
    json.dumps(tool)  # serialisable as is, for the wire
    # every parameter of the Python function is in the schema, the required ones are required
    sig = inspect.signature(REGISTRY[fn["name"]])
    assert set(fn["parameters"]["properties"]) == set(sig.parameters)
    required = {n for n, p in sig.parameters.items() if p.default is inspect.Parameter.empty}
    assert set(fn["parameters"]["required"]) == required


def test_schemas_accept_good_and_reject_bad_arguments():
    weather = WEATHER_TOOL["function"]["parameters"]
    jsonschema.validate({"city": "Berlin"}, weather)
    jsonschema.validate({"city": "Berlin", "unit": "fahrenheit"}, weather)
    for bad in [{}, {"city": 3}, {"city": "Berlin", "unit": "kelvin"}, {"town": "Berlin"}]:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, weather)
    calc = CALCULATOR_TOOL["function"]["parameters"]
    jsonschema.validate({"expression": "1+1"}, calc)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"expression": 2}, calc)


# -- get_weather ------------------------------------------------------------------------------

def test_get_weather_berlin_is_the_lecture_trace():
    assert get_weather("Berlin") == "12°C, rainy"


@pytest.mark.parametrize("city", sorted(WEATHER))
def test_get_weather_every_city_in_both_units(city):
    row = WEATHER[city]
    assert get_weather(city) == f"{row['temp_c']}°C, {row['condition']}"
    assert get_weather(city, unit="fahrenheit") == \
        f"{round(row['temp_c'] * 9 / 5 + 32)}°F, {row['condition']}"


def test_get_weather_ignores_case_and_spaces():
    assert get_weather("  new york ") == get_weather("New York")
    assert get_weather("OSLO", "fahrenheit") == "27°F, snowy"


def test_get_weather_unknown_city_message():
    with pytest.raises(KeyError) as e:
        get_weather("Atlantis")
    text = str(e.value)
    assert text.startswith("unknown city 'Atlantis'")  # no quotes around the whole message
    assert "Berlin" in text and "Tokyo" in text  # lists the known cities
    assert f"ERROR: {e.value}" == f"ERROR: {text}"


def test_get_weather_unknown_unit():
    with pytest.raises(ValueError, match="kelvin"):
        get_weather("Berlin", unit="kelvin")


def test_weather_table_is_fixed():
    assert len(WEATHER) == 10
    assert all(set(row) == {"temp_c", "condition"} for row in WEATHER.values())


# -- calculate --------------------------------------------------------------------------------

@pytest.mark.parametrize("expression, result", [
    ("(17 + 25) * 3", "126"),
    ("2 ** 10", "1024"),
    ("7 / 2", "3.5"),
    ("8 / 2", "4"),
    ("7 // 2", "3"),
    ("-7 % 3", "2"),
    ("-(3 - 5)", "2"),
    ("+4", "4"),
    ("2 ** -1", "0.5"),
    ("1.5 * 4", "6"),
    (" 1 + 1\n", "2"),
    ("0.1 + 0.2", "0.30000000000000004"),
])
def test_calculate_arithmetic(expression, result):
    assert calculate(expression) == result


@pytest.mark.parametrize("attack", [
    "__import__('os')",
    "__import__('os').system('echo pwned')",
    "().__class__",
    "().__class__.__bases__[0].__subclasses__()",
    "open('/etc/passwd')",
    "x",
    "abs(-1)",
    "'a' * 3",
    "[1, 2]",
    "{1: 2}",
    "lambda: 1",
    "True + 1",
    "1 if 1 else 2",
    "(x := 3)",
    "1 < 2",
    "1j * 1j",
    "~1",
    "1 << 10",
    "f'{1}'",
])
def test_calculate_never_evaluates_anything_but_arithmetic(attack):
    with pytest.raises(ValueError, match="not allowed in an arithmetic expression"):
        calculate(attack)


def test_calculate_does_not_use_eval():
    source = inspect.getsource(tools)
    names = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    assert not names & {"eval", "exec", "compile", "__import__"}


@pytest.mark.parametrize("expression, match", [
    ("9 ** 9 ** 9", "exponent"),
    ("10 ** 1000", "exponent"),
    ("((((10 ** 100) ** 100) ** 100) ** 100)", "too large"),
    ("(99 ** 99) ** 99", "too large"),
    ("1e308 * 10", "finite"),
    ("1e999", "finite"),
    ("1e999 - 1e999", "finite"),
])
def test_calculate_refuses_runaway_numbers(expression, match):
    with pytest.raises(ValueError, match=match):
        calculate(expression)


def test_calculate_allows_big_but_bounded_numbers():
    assert calculate("2 ** 100") == str(2 ** 100)
    assert float(calculate("2.0 ** 100")) == 2.0 ** 100
    assert calculate("(10 ** 100) ** 10") == str(10 ** 1000)  # 3322 bits, under the limit


def test_calculate_refuses_long_input():
    with pytest.raises(ValueError, match="longer than 200"):
        calculate("1+" * 150 + "1")
    assert calculate("+".join(["1"] * 100)) == "100"  # 199 characters are fine


def test_calculate_syntax_errors_are_clear():
    with pytest.raises(ValueError, match=r"not a valid arithmetic expression: '2 \+\+\* 3'"):
        calculate("2 ++* 3")
    with pytest.raises(ValueError, match="not a valid arithmetic expression"):
        calculate("")


def test_calculate_division_by_zero():
    with pytest.raises(ZeroDivisionError, match="division by zero"):
        calculate("1 / 0")


def test_calculate_wants_a_string():
    with pytest.raises(TypeError, match="string"):
        calculate(42)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_calculate_on_any_text_answers_or_raises_a_clear_error(text):
    try:
        result = calculate(text)
    except (ValueError, ZeroDivisionError):
        return
    assert isinstance(result, str)
    float(result)  # a number as text


@settings(max_examples=200, deadline=None)
@given(st.integers(-10**6, 10**6), st.integers(-10**6, 10**6),
       st.sampled_from(["+", "-", "*", "//", "%"]))
def test_calculate_matches_python_integer_arithmetic(a, b, op):
    expression = f"({a}) {op} ({b})"
    if op in ("//", "%") and b == 0:
        with pytest.raises(ZeroDivisionError):
            calculate(expression)
        return
    expected = {"+": a + b, "-": a - b, "*": a * b,
                "//": a // b if b else None, "%": a % b if b else None}[op]
    assert calculate(expression) == str(expected)


def test_calculate_result_is_exact_for_whole_floats_only():
    assert calculate("10 / 4") == "2.5"
    assert calculate("1e14 * 1") == "100000000000000"
    assert calculate("1e15 * 1") == "1000000000000000.0"  # from 1e15 on, a float stays a float
    assert math.isclose(float(calculate("2 ** 0.5")), math.sqrt(2))
