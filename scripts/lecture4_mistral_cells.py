"""The Mistral cells of lectures/lecture-ReAct-4-messages.ipynb (issue 10): the Berlin trace in
Mistral's tool template beside its ChatML.  Inserted after ``chatml-notes``; only cells whose id
starts with ``mistral-`` are rewritten.  Run under the notebook lock:

    flock /work/coord/lecture-ReAct-4-messages.ipynb.lock .venv/bin/python scripts/lecture4_mistral_cells.py
"""
import pathlib

import nbformat

NOTEBOOK = (pathlib.Path(__file__).resolve().parent.parent / "lectures"
            / "lecture-ReAct-4-messages.ipynb")
AFTER = "chatml-notes"

CELLS = [
    ("mistral-intro", "markdown", r"""
**The same call in Mistral's template.** Mistral 7B v0.3 reads the same second call very
differently, as Ollama's `mistral` template renders it (Ollama, 2026b) and
`lreact.mistral.render_mistral` reproduces it:
"""),
    ("mistral-render", "code", r"""
from lreact.mistral import render_mistral

print(render_mistral(second_call, tools))
"""),
    ("mistral-side-by-side", "markdown", r"""
Set beside the ChatML above, the same four messages differ in every delimiter but not in content:

| | ChatML (Qwen2.5) | Mistral 7B v0.3 |
| --- | --- | --- |
| tool schemas | in the system turn, one JSON object a line inside `<tools>` | one JSON list inside `[AVAILABLE_TOOLS]`, placed only before the last user turn |
| system prompt | its own turn, `<\|im_start\|>system` | no turn of its own: glued to the front of the last user turn |
| the call | a `<tool_call>` block in an assistant turn | `[TOOL_CALLS] [{"name": ..., "arguments": ...}]`, closed by `</s>` |
| the result | a `<tool_response>` block in a *user* turn | `[TOOL_RESULTS] {"content": ...}[/TOOL_RESULTS]` |
| where the model goes on | after the open `<\|im_start\|>assistant` | right after `[/TOOL_RESULTS]` |

Neither carries the call id: in both, order is all that pairs a result with its request. The lab's
second notebook shows what happens when a small model prints these markers as plain text
instead of making a real call (`lab/lecture-ReAct-lab2.ipynb`, Part C).
"""),
]


def main():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    if AFTER not in [c.id for c in nb.cells]:
        raise SystemExit(f"no cell {AFTER!r} in {NOTEBOOK}")
    out = []
    for c in nb.cells:
        if c.id.startswith("mistral-"):
            continue
        out.append(c)
        if c.id == AFTER:
            for cell_id, kind, source in CELLS:
                new = (nbformat.v4.new_markdown_cell(source.strip("\n")) if kind == "markdown"
                       else nbformat.v4.new_code_cell(source.strip("\n")))
                new.id = cell_id
                out.append(new)
    nb.cells = out
    nbformat.validate(nb)
    nbformat.write(nb, NOTEBOOK)
    print(f"wrote {len(CELLS)} mistral- cells into {NOTEBOOK}")


if __name__ == "__main__":
    main()
