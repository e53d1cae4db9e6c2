# WRONG: amount without minimum 0, so negative amounts pass
currency_tool = {
    "type": "function",
    "function": {
        "name": "convert_currency",
        "description": "Convert an amount of money from one currency into another at today's rate.",
        "parameters": {
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "from_currency": {"type": "string", "enum": ["EUR", "USD", "GBP", "JPY", "CHF"]},
                "to_currency": {"type": "string", "enum": ["EUR", "USD", "GBP", "JPY", "CHF"]},
            },
            "required": ["amount", "from_currency", "to_currency"],
            "additionalProperties": False,
        },
    },
}
