"""Example next-token distributions of the lecture (Part I, "Token Sampling" to "Truncated
Sampling"): made-up but realistic logits over named tokens, used by the widgets and figures.

``SEED_EXAMPLE`` is the lecture's worked example: the probabilities (0.4, 0.3, 0.25, 0.03, 0.02),
given as logits ``log p`` so that ``softmax`` returns them.
"""
from __future__ import annotations

import numpy as np

SEED_EXAMPLE = {
    "prompt": "The weather in Berlin is",
    "tokens": [" rainy", " cloudy", " cold", " sunny", " purple"],
    "logits": np.log([0.4, 0.3, 0.25, 0.03, 0.02]),
}
WEATHER_20 = {
    "prompt": "Tomorrow the weather in Berlin will be",
    "tokens": [" rainy", " cloudy", " cold", " sunny", " windy", " grey", " mild", " warm",
               " wet", " foggy", " nice", " similar", " better", " snowy", " stormy", " hot",
               " terrible", " perfect", " purple", " banana"],
    "logits": np.array([3.1, 2.8, 2.4, 2.0, 1.7, 1.5, 1.2, 1.0, 0.9, 0.6, 0.4, 0.1, -0.2, -0.5,
                        -0.8, -1.2, -1.5, -1.9, -3.0, -4.0]),
}
PEAKED = {
    "prompt": "The capital of France is",
    "tokens": [" Paris", " a", " located", " the", " known", " one", " not", " also", " Lyon",
               " called", " in", " home", " famous", " beautiful", " France", " Marseille",
               " big", " an", " London", " Berlin"],
    "logits": np.array([9.0, 5.2, 4.6, 4.3, 3.9, 3.5, 3.0, 2.8, 2.2, 2.0, 1.8, 1.6, 1.5, 1.2,
                        1.0, 0.8, 0.5, 0.3, 0.0, -0.5]),
}
FLAT = {
    "prompt": "My favourite colour is",
    "tokens": [" blue", " green", " red", " purple", " black", " yellow", " orange", " pink",
               " white", " grey", " teal", " brown", " navy", " gold", " turquoise", " silver",
               " lavender", " maroon", " beige", " cyan"],
    "logits": np.linspace(2.2, 0.3, 20),
}
DISTRIBUTIONS = {
    "seed example (5 tokens)": SEED_EXAMPLE,
    "weather (20 tokens)": WEATHER_20,
    "peaked: capital of France (20 tokens)": PEAKED,
    "flat: favourite colour (20 tokens)": FLAT,
}
