# WRONG: amount typed as integer, so the well-formed call with 12.5 is rejected
currency_tool = {
    "type": "function",
    "function": {
        "name": "convert_currency",
        "description": "Convert an amount of money from one currency into another at today's rate.",
        "parameters": {
            "type": "object",
            "properties": {
                "amount": {"type": "integer", "minimum": 0},
                "from_currency": {"type": "string", "enum": ["EUR", "USD", "GBP", "JPY", "CHF"]},
                "to_currency": {"type": "string", "enum": ["EUR", "USD", "GBP", "JPY", "CHF"]},
            },
            "required": ["amount", "from_currency", "to_currency"],
            "additionalProperties": False,
        },
    },
}
