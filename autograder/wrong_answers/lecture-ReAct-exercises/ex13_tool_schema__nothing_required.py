# WRONG: no argument is required, so a call without to_currency passes
currency_tool = {
    "type": "function",
    "function": {
        "name": "convert_currency",
        "description": "Convert an amount of money from one currency into another at today's rate.",
        "parameters": {
            "type": "object",
            "properties": {
                "amount": {"type": "number", "minimum": 0},
                "from_currency": {"type": "string", "enum": ["EUR", "USD", "GBP", "JPY", "CHF"]},
                "to_currency": {"type": "string", "enum": ["EUR", "USD", "GBP", "JPY", "CHF"]},
            },
            "required": [],
            "additionalProperties": False,
        },
    },
}
