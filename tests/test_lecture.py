"""The lecture notebooks and their helpers (lreact.views.widgets, lreact.views.figures, lreact.traces).

- every notebook in lectures/ runs top to bottom headless (nbclient), with no Ollama reachable,
  without errors and without anything on stderr;
- notebooks are committed without outputs, every cell has an explicit readable id, and every
  figure a markdown cell links exists;
- the widgets react to their controls and compute what the lecture says they show;
- every label of a figure sits inside its frame, and every generated figure is used.
"""
from __future__ import annotations

import html
import re
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
LECTURES = ROOT / "lectures"
NOTEBOOKS = sorted(LECTURES.glob("*.ipynb"))
NO_OLLAMA = "http://127.0.0.1:9"  # the discard port: nothing listens, connections are refused


def test_lecture_notebooks_exist():
    names = {p.name for p in NOTEBOOKS}
    assert "lecture-ReAct.ipynb" in names
    assert len(names) == 5, names


# ------------------------------------------------------------------------------------------------
# notebook hygiene
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_committed_clean(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    ids = [c.get("id") for c in nb.cells]
    assert all(i and re.fullmatch(r"[a-z0-9-]+", i) for i in ids), ids
    assert len(set(ids)) == len(ids), "duplicate cell ids"
    for c in nb.cells:
        if c.cell_type == "code":
            assert not c.outputs and c.execution_count is None, f"cell {c.id} has outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_linked_figures_and_notebooks_exist(path):
    nb = nbformat.read(path, as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for target in re.findall(r"\]\(([^)#\s]+\.(?:png|ipynb))", text):
        assert (LECTURES / target).is_file(), f"{path.name} links missing {target}"


def test_every_widget_has_a_fallback_image_right_before_it():
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for i, c in enumerate(nb.cells):
            if c.cell_type == "code" and re.search(r"widgets\.\w+_(explorer|stepper)\(", c.source):
                if "qwen_logprobs" in c.source:
                    continue  # optional real-model cell: nothing to show without a model
                before = nb.cells[i - 1]
                assert before.cell_type == "markdown" and "](figures/" in before.source, (
                    f"{path.name}: widget cell {c.id} has no fallback image right before it")


# ------------------------------------------------------------------------------------------------
# executing the notebooks
# ------------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_headless_without_ollama(path, monkeypatch):
    from nbclient import NotebookClient

    monkeypatch.setenv("OLLAMA_HOST", NO_OLLAMA)
    monkeypatch.setenv("MPLBACKEND", "agg")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(LECTURES)}})
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    print(f"\n{path.name}: executed in {seconds:.1f} s")
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        for out in c.outputs:
            assert out.output_type != "error", f"{c.id}: {out.get('ename')}: {out.get('evalue')}"
            if out.output_type == "stream":
                assert out.name == "stdout", f"{c.id} wrote to stderr: {out.text[:300]}"
    if path.name == "lecture-ReAct-1-sampling.ipynb":
        qwen = next(c for c in nb.cells if c.id == "qwen-widget")
        said = "".join(o.get("text", "") for o in qwen.outputs)
        assert "ollama serve" in said and "skipped" in said


# ------------------------------------------------------------------------------------------------
# widgets
# ------------------------------------------------------------------------------------------------
def _find(widget, cls):
    """All descendants of ``widget`` (a box) that are instances of ``cls``."""
    found = [widget] if isinstance(widget, cls) else []
    for child in getattr(widget, "children", ()):
        found += _find(child, cls)
    return found


def test_temperature_explorer_redraws_on_slider_change():
    import ipywidgets as w
    from lreact.views import widgets

    box = widgets.temperature_explorer()
    slider = _find(box, w.FloatSlider)[0]
    image = _find(box, w.Image)[0]
    assert slider.min == 0 and slider.max == 5
    assert image.value[:8] == b"\x89PNG\r\n\x1a\n"
    seen = {bytes(image.value)}
    for T in (0.0, 0.5, 3.0):
        slider.value = T
        seen.add(bytes(image.value))
    assert len(seen) == 4, "each temperature must give a different picture"
    _find(box, w.Dropdown)[0].value = "seed example (5 tokens)"
    assert bytes(image.value) not in seen


def test_temperature_plot_limits():
    from matplotlib.figure import Figure
    from lreact.views import examples, figures

    ax = Figure().add_subplot()
    plot = figures.TemperaturePlot(ax, examples.WEATHER_20, 1.0)
    one_hot = plot.update(0.0)
    assert one_hot.tolist().count(1.0) == 1 and float(one_hot.sum()) == 1.0
    assert int(np.argmax(one_hot)) == int(np.argmax(examples.WEATHER_20["logits"]))
    assert "one-hot" in ax.get_title()
    hot = plot.update(5.0)
    assert float(hot.max() - hot.min()) < 0.1  # close to uniform
    seed = np.exp(examples.SEED_EXAMPLE["logits"])
    assert np.allclose(seed, [0.4, 0.3, 0.25, 0.03, 0.02])


def test_truncation_figure_titles_report_kept_counts():
    from lreact.views import figures

    def headlines(fig):   # each panel's changing line under its title, panel by panel
        return [t.get_text() for t in fig.texts]

    fig = figures.truncation_figure(k=5, p=0.9, T=1.0)
    titles = headlines(fig)
    assert any("top-k, k = 5: keeps 5 tokens" in t for t in titles)
    nuclei = [int(m) for t in titles for m in re.findall(r"nucleus = (\d+) tokens?\b", t)]
    assert len(nuclei) == 2 and nuclei[0] < nuclei[1], "peaked nucleus must be smaller than flat"
    # one kept token is "1 token", never "1 tokens"
    titles = headlines(figures.truncation_figure(k=1, p=0.5, T=1.0))
    assert sum("keeps 1 token (" in t for t in titles) == 2
    assert "nucleus = 1 token (" in titles[1] and not any("1 tokens" in t for t in titles)


def test_truncation_explorer_reacts_to_each_slider():
    import ipywidgets as w
    from lreact.views import widgets

    box = widgets.truncation_explorer()
    image = _find(box, w.Image)[0]
    for slider, value in zip(_find(box, w.IntSlider) + _find(box, w.FloatSlider), (2, 0.5, 0.6)):
        before = bytes(image.value)
        slider.value = value
        assert bytes(image.value) != before


def test_constrained_step_is_the_masked_renormalised_distribution():
    from lreact import grammar

    prefix = []
    while True:
        step = grammar.constrained_step(prefix)
        assert step["done"] == (not step["allowed"])
        if step["done"]:
            assert step["removed_mass"] == 0.0 and float(step["P_prime"].sum()) == 0.0
            break
        P, Q = step["P"], step["P_prime"]
        outside = np.setdiff1d(np.arange(len(P)), step["allowed"])
        assert float(Q[outside].sum()) == 0.0
        assert abs(float(Q.sum()) - 1.0) < 1e-9
        inside = step["allowed"]
        assert np.allclose(Q[inside], P[inside] / P[inside].sum())
        assert abs(step["removed_mass"] - float(P[outside].sum())) < 1e-12
        prefix.append(inside[int(np.argmin(Q[inside]))])  # even the least likely allowed token
    assert grammar.parses(grammar.detokenize(prefix))


def so_far(page):
    """The "text so far" of the stepper's HTML, unescaped."""
    return html.unescape(re.search(r"<code>text so far: (.*?)</code>", page, re.S).group(1))


def test_constrained_stepper_buttons():
    import ipywidgets as w
    from lreact import grammar
    from lreact.views import widgets

    seed = 3
    box = widgets.constrained_decoding_stepper(seed=seed)
    back, forward, reset = _find(box, w.Button)
    text = _find(box, w.HTML)[0]
    assert back.disabled and "(empty)" in text.value
    # what the stepper must do: draw step t from P' with default_rng([seed, t])
    expected = []
    while not grammar.constrained_step(expected)["done"]:
        P_prime = grammar.constrained_step(expected)["P_prime"]
        rng = np.random.default_rng([seed, len(expected)])
        expected.append(int(rng.choice(len(P_prime), p=P_prime)))
    shown = [text.value]
    for _ in range(40):
        if forward.disabled:
            break
        forward.click()
        shown.append(text.value)
    assert forward.disabled and "parses: <b>True</b>" in text.value
    assert len(shown) == len(expected) + 1, "one click, one token"
    for t, page in enumerate(shown):  # after t clicks: the first t tokens and their A(s_t)
        assert so_far(page) == (grammar.detokenize(expected[:t]) or "(empty)")
        step = grammar.constrained_step(expected[:t])
        allowed = ", ".join(grammar.VOCAB[i] for i in step["allowed"]) or "(done)"
        assert f"A(s_t) = {{ <code>{html.escape(allowed)}</code> }}" in page
    back.click()
    assert not forward.disabled and text.value == shown[-2], "back undoes exactly one step"
    reset.click()
    assert back.disabled and text.value == shown[0]


def test_context_budget_explorer_steps_through_calls():
    import ipywidgets as w
    from lreact.views import widgets

    box = widgets.context_budget_explorer()
    run = _find(box, w.Dropdown)[0]
    step, retrieved = _find(box, w.IntSlider)
    listing = _find(box, w.HTML)[0]
    chatml = _find(box, w.Textarea)[0]
    image = _find(box, w.Image)[0]
    assert step.max == 2 and "get_weather" in listing.value
    first = bytes(image.value)
    step.value = 2
    assert bytes(image.value) != first and "(re-sent)" in listing.value
    assert "<tool_response>" in chatml.value and chatml.value.endswith("<|im_start|>assistant\n")
    run.value = "multi-tool run (5 tool calls)"
    assert step.max == 4 and step.value == 1
    step.value = 3
    assert "ERROR: unknown city" in listing.value
    before = bytes(image.value)
    retrieved.value = 2000
    assert bytes(image.value) != before


def test_qwen_cell_without_server_says_so(monkeypatch, capsys):
    from lreact.views import widgets

    monkeypatch.setenv("OLLAMA_HOST", NO_OLLAMA)
    assert widgets.qwen_logprobs_explorer() is None
    out = capsys.readouterr()
    assert "ollama serve" in out.out and out.err == ""


def test_sampling_explorer_on_given_logprobs():
    import ipywidgets as w
    from lreact.views import widgets

    tokens = [f"t{i}" for i in range(20)]
    box = widgets.sampling_explorer(tokens, -np.arange(20.0) / 3, prompt="x")
    image = _find(box, w.Image)[0]
    before = bytes(image.value)
    _find(box, w.FloatSlider)[0].value = 0.0
    assert bytes(image.value) != before


# ------------------------------------------------------------------------------------------------
# traces
# ------------------------------------------------------------------------------------------------
def _pairing_ok(history):
    from lreact import AssistantMessage, ToolResultMessage

    open_ids = []
    for m in history:
        if isinstance(m, AssistantMessage):
            assert not open_ids, f"unanswered calls {open_ids} before the next assistant turn"
            open_ids = [c.id for c in m.tool_calls]
        elif isinstance(m, ToolResultMessage):
            assert m.tool_call_id in open_ids, f"orphan result {m.tool_call_id}"
            open_ids.remove(m.tool_call_id)
    assert not open_ids


def test_traces_keep_the_pairing_and_use_real_tool_results():
    from lreact import AssistantMessage, SystemMessage
    from lreact.tools import get_weather
    from lreact.traces import berlin_trace, multi_tool_trace

    history, tools = berlin_trace()
    _pairing_ok(history)
    assert isinstance(history[0], SystemMessage)
    assert history[3].content == get_weather("Berlin")
    assert history[-1].tool_calls == [] and history[-1].text
    assert [t["function"]["name"] for t in tools] == ["get_weather"]

    history, tools = multi_tool_trace()
    _pairing_ok(history)
    turns = [m for m in history if isinstance(m, AssistantMessage)]
    assert [len(t.tool_calls) for t in turns] == [2, 2, 1, 0]
    ids = [c.id for t in turns for c in t.tool_calls]
    assert len(ids) == len(set(ids)) == 5
    contents = [m.content for m in history if getattr(m, "tool_call_id", None)]
    assert sum(c.startswith("ERROR:") for c in contents) == 1
    assert get_weather("Oslo", "fahrenheit") in contents
    assert get_weather("Oslo", "fahrenheit") in history[-1].text


def test_model_calls_resend_the_whole_history():
    from lreact.traces import model_calls, multi_tool_trace

    history, _ = multi_tool_trace()
    calls = model_calls(history)
    assert len(calls) == 4
    for a, b in zip(calls, calls[1:]):
        assert b[: len(a)] == a and len(b) > len(a)


def test_context_segments_cover_the_rendered_text():
    from lreact.chatml import render_chatml
    from lreact.traces import (approx_tokens, context_segments, context_tokens, model_calls,
                               multi_tool_trace)

    assert approx_tokens("") == 0 and approx_tokens("abcd") == 1 and approx_tokens("abcde") == 2
    history, tools = multi_tool_trace()
    sizes = []
    for sent in model_calls(history):
        segs = context_segments(sent, tools)
        assert "".join(s[2] for s in segs) == render_chatml(sent, tools)
        assert [s[1] for s in segs[:2]] == ["system", "tools"] and segs[-1][1] == "open"
        assert "<tools>" in segs[1][2] and "<tools>" not in segs[0][2]
        sizes.append(context_tokens(sent, tools))
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)
    segs = context_segments(history[1:3])  # no system prompt, no tools
    assert [s[1] for s in segs] == ["user", "assistant"]


def test_run_tool_turns_failures_into_error_results():
    from lreact import ToolCall
    from lreact.traces import run_tool

    assert run_tool(ToolCall("x", "calculate", '{"expression": "6*7"}')).content == "42"
    for bad in (ToolCall("a", "calculate", "{oops"), ToolCall("b", "nope", "{}"),
                ToolCall("c", "get_weather", '{"city": "Atlantis"}')):
        result = run_tool(bad)
        assert result.tool_call_id == bad.id and result.content.startswith("ERROR:")


# ------------------------------------------------------------------------------------------------
# the figure script
# ------------------------------------------------------------------------------------------------
def test_figure_script_writes_every_linked_figure(tmp_path):
    from scripts import make_lecture_figures
    make_lecture_figures.main(tmp_path)
    written = {p.name for p in tmp_path.glob("*.png")}
    linked = set()
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for c in nb.cells:
            if c.cell_type == "markdown":
                linked |= set(re.findall(r"\]\(figures/([^)]+\.png)\)", c.source))
    assert linked and linked <= written, linked - written
    assert written <= linked, f"generated but used by no notebook: {sorted(written - linked)}"
    assert written == {p.name for p in (LECTURES / "figures").glob("*.png")}


def test_qwen_cell_with_a_model_shows_the_sliders(monkeypatch, capsys):
    """With a server and the model (faked here), the cell shows the real top-20 with sliders."""
    import ipywidgets as w
    from lreact.engines import models, setup
    from lreact.views import widgets

    report = setup.SetupReport(model="qwen2.5:7b", host="http://fake", server=True,
                               model_pulled=True, tools_supported=True)
    monkeypatch.setattr(setup, "check_setup", lambda model=None, **kw: report)
    pairs = [(f"tok{i}", -0.3 * i) for i in range(20)]

    class FakeOllama:
        def __init__(self, model=None, **kw):
            self.model = model

        def first_token_logprobs(self, messages, top_logprobs=20, **options):
            assert top_logprobs == 20 and "capital" in messages[-1].content
            return pairs

    monkeypatch.setattr(models, "OllamaLLM", FakeOllama)
    monkeypatch.setenv("LREACT_BACKEND", "ollama")   # the backend the fake report names
    box = widgets.qwen_logprobs_explorer("The capital of France is")
    assert box is not None and "top-20" in capsys.readouterr().out
    assert _find(box, w.IntSlider)[0].max == 20
    assert _find(box, w.Image)[0].value[:4] == b"\x89PNG"


# ------------------------------------------------------------------------------------------------
# what the pictures show (defects seen in a browser)
# ------------------------------------------------------------------------------------------------
def _texts_outside_their_axes(fig):
    """Data labels (ax.texts) whose drawn box leaves their axes' frame, as (text, axes title)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    bad = []
    for ax in fig.axes:
        frame = ax.get_window_extent(renderer)
        for t in ax.texts:
            if not t.get_visible():
                continue
            box = t.get_window_extent(renderer)
            if not (box.x0 >= frame.x0 - 0.5 and box.x1 <= frame.x1 + 0.5
                    and box.y0 >= frame.y0 - 0.5 and box.y1 <= frame.y1 + 0.5):
                bad.append((t.get_text(), ax.get_title()))
    return bad


def _figure_script():
    from scripts import make_lecture_figures
    return make_lecture_figures


def test_every_label_of_every_lecture_figure_is_inside_its_frame():
    """"argmax" at T = 0, the budget bars' labels, "47.7" of the AgentBank panel, ..."""
    for name, make in _figure_script().FIGURES.items():
        assert _texts_outside_their_axes(make()) == [], name


def test_temperature_label_stays_inside_the_frame_at_every_temperature():
    from lreact.views import canvas, examples, figures

    for dist in examples.DISTRIBUTIONS.values():
        fig = canvas.new_figure(7.5, 4.0)
        plot = figures.TemperaturePlot(fig.add_subplot(), dist, 1.0)
        fig.tight_layout()
        for T in (0.0, 0.05, 0.3, 1.0, 5.0):
            plot.update(T)
            assert _texts_outside_their_axes(fig) == [], (dist["prompt"], T)


def test_context_budget_bars_show_every_segment_beyond_the_window():
    """A call larger than the window keeps all its segments on the axis, its label after the
    bar (on white, in red), not on top of the bar."""
    from lreact.views import canvas, figures
    from lreact.traces import TRACES, model_calls

    history, tools = TRACES["multi-tool run (5 tool calls)"]()
    calls = model_calls(history)
    for window, retrieved in [(4096, 0), (1024, 0), (1024, 3000), (2048, 1500)]:
        fig = canvas.new_figure(9, 3.3)
        ax = fig.add_subplot()
        totals = figures.budget_bars(ax, calls, tools, len(calls), window, retrieved)
        fig.tight_layout()
        right = ax.get_xlim()[1]
        for bar in ax.patches:
            assert bar.get_x() + bar.get_width() <= right, (window, retrieved)
        for total, label in zip(totals, ax.texts):
            assert label.get_position()[0] >= total, "the label must follow its bar"
            over = total > window
            assert (label.get_color() == figures.ARGMAX) == over
        assert _texts_outside_their_axes(fig) == []


def test_stepper_last_step_says_it_is_finished():
    from lreact import grammar
    from lreact.views import canvas, figures

    prefix = []
    while not grammar.constrained_step(prefix)["done"]:
        prefix.append(int(np.argmax(grammar.constrained_step(prefix)["P_prime"])))
    plot = figures.ConstrainedPlot(canvas.new_figure(10, 5.2), prefix)
    top, bottom = plot.ax1, plot.ax2
    heights = lambda bars: [max(y for _, y in path.vertices) for path in bars.artist.get_paths()]
    assert "mass removed" not in top.get_title() and "nothing is left to sample" in top.get_title()
    assert max(heights(plot.P_prime)) == 0 and plot.finished.get_visible()
    assert "finished" in plot.finished.get_text()
    plot.update(prefix[:-1])  # one step before: P' has its bars, and no "finished"
    assert "mass removed by the mask" in top.get_title() and max(heights(plot.P_prime)) > 0
    assert not plot.finished.get_visible()


# ------------------------------------------------------------------------------------------------
# issue 19 §3-§4: the engines as they behave, the week's workload
# ------------------------------------------------------------------------------------------------
def test_ollama_text_reencodes_tools_like_the_go_structs_and_adds_the_default_system():
    from lreact import SystemMessage, UserMessage
    from lreact.chatml import render_chatml
    from lreact.engines.ollama_text import QWEN25_DEFAULT_SYSTEM, ollama_qwen_text
    tool = {"type": "function", "function": {
        "name": "lookup", "description": "a <b> & c",
        "parameters": {"type": "object", "additionalProperties": False,
                       "properties": {"zeta": {"enum": ["x"], "type": "string", "description": "z"},
                                      "alpha": {"type": "integer"}},
                       "required": ["zeta"]}}}
    user = UserMessage("hi")
    served = ollama_qwen_text([SystemMessage("Be brief."), user], [tool], version="0.13.5")
    line = next(l for l in served.splitlines() if l.startswith('{"type": "function"'))
    assert line == ('{"type": "function", "function": {"name":"lookup","description":"a \\u003cb\\u003e '
                    '\\u0026 c","parameters":{"type":"object","required":["zeta"],"properties":{"alpha":'
                    '{"type":"integer"},"zeta":{"type":"string","description":"z","enum":["x"]}}}}}')
    ours = render_chatml([SystemMessage("Be brief."), user], [tool])
    assert [l for l in served.splitlines() if l != line] == \
        [l for l in ours.splitlines() if not l.startswith('{"type": "function"')]
    assert QWEN25_DEFAULT_SYSTEM not in served              # the first message is a system one
    no_system = ollama_qwen_text([user])
    assert no_system.startswith(f"<|im_start|>system\n{QWEN25_DEFAULT_SYSTEM}<|im_end|>\n")
    assert render_chatml([user]).startswith("<|im_start|>user")
    assert ollama_qwen_text([user], default_system="") == render_chatml([user])


def test_ollama_text_since_0_14_prints_the_function_as_a_go_struct():
    """research/qwen-engines.md, section 1: the tools line of v0.14.0 to v0.33.0-rc2."""
    from lreact import SystemMessage, UserMessage
    from lreact.engines.ollama_text import go_struct_text, ollama_qwen_text, parse_version
    tool = {"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string",
                       "description": "City name"}}, "required": ["city"]}}}
    history = [SystemMessage("You are a helpful assistant."), UserMessage("hi")]
    struct = ('{"type": "function", "function": {get_weather Get the current weather for a city '
              '{object <nil> <nil> [city] {"city":{"type":"string","description":"City name"}}}}}')
    for version in ("0.14.0", "v0.32.15", "0.33.0-rc2", (0, 20)):
        assert struct in ollama_qwen_text(history, [tool], version=version).splitlines()
    assert struct in ollama_qwen_text(history, [tool]).splitlines()      # the newest checked
    old = ollama_qwen_text(history, [tool], version="0.12.11")
    assert ('{"type": "function", "function": {"name":"get_weather","description":"Get the current '
            'weather for a city","parameters":{"type":"object","required":["city"],"properties":'
            '{"city":{"type":"string","description":"City name"}}}}}') in old.splitlines()
    no_description = {"name": "f", "parameters": {"type": "object", "properties": {}}}
    assert go_struct_text(no_description) == "{f  {object <nil> <nil> [] {}}}"
    assert parse_version("0.13.5") == (0, 13)
    with pytest.raises(ValueError, match="not an Ollama version"):
        parse_version("latest")


def test_workload_estimate_follows_the_stated_rule(tmp_path):
    """Reading at 120-140 words a minute, a lecture cell 1-2 min, a widget 3-5, a test cell 15-30 s,
    every task timed (TASK_MINUTES, a default per kind), model cells wait (MODEL_WAIT), sections
    marked optional counted apart."""
    from lreact.views import workload
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("word " * 280),
                nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("widgets.temperature_explorer()"),
                nbformat.v4.new_code_cell("def f(): ..."),
                nbformat.v4.new_code_cell("llm = configured_llm()"),
                nbformat.v4.new_code_cell("def g():\n    return configured_llm()"),
                nbformat.v4.new_markdown_cell("## Optional: more\n\n" + "word " * 40),
                nbformat.v4.new_code_cell("y = 2")]
    nb.cells[3].metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": "f"}
    path = tmp_path / "n.ipynb"
    nbformat.write(nb, path)
    assert workload.notebook_counts(path) == {"words": 323, "code_cells": 5, "answer_cells": 1}
    assert workload.model_cells(path) == [nb.cells[4].id]     # a def that calls a model is not a use
    e = workload.estimate(path, "lecture")
    assert e.reading == [2, 280 / 120] and e.cells == [1 + 3 + 1 + 1, 2 + 5 + 2 + 2]
    assert e.waiting == list(workload.DEFAULT_WAIT) and e.tasks == [0, 0]
    assert e.optional == [43 / 140 + 1, 43 / 120 + 2]
    lab = workload.estimate(path, "lab")
    assert lab.tasks == list(workload.DEFAULT_TASK_MINUTES["lab"])
    assert lab.cells == [4 * 0.25, 4 * 0.5]
    assert workload.hours((90, 150)) == "1.5-2.5 h" and workload.median_hours((540, 660)) == 10.0
    with pytest.raises(ValueError, match="kind"):
        workload.estimate_minutes(path, "seminar")


def test_every_task_of_the_unit_is_timed():
    """Each answer cell of the exercises and both labs has its own entry in TASK_MINUTES."""
    from lreact.views import workload
    for name, kind in workload.CORE_PATH + workload.EXTENSION:
        nb = nbformat.read(ROOT / name, as_version=4)
        timed = workload.TASK_MINUTES.get(Path(name).stem, {})
        for c in nb.cells:
            meta = c.metadata.get("nbgrader", {})
            if meta.get("solution"):
                assert meta["grade_id"] in timed, (name, meta["grade_id"])


def test_the_overview_states_the_figure_it_prints_and_the_core_path_fits_a_week():
    """The week's issue §1: the core path, set-up and model waiting included, at most 10 h for
    a median student; the overview's sentence gives the figure its cell prints (the median, to
    one decimal, from the same estimator), and the counts of model cells it states are computed from the code."""
    from lreact.views import workload
    core = workload.path_minutes(ROOT)
    assert workload.median_hours(core) <= 10.0, workload.hours(core)
    with_setup = workload.path_minutes(ROOT, setup=True)
    without = workload.path_minutes(ROOT, setup=False)
    assert with_setup[0] - without[0] == workload.SETUP_MINUTES[0] > 0
    assert sum(sum(workload.estimate(ROOT / n, k).waiting) for n, k in workload.CORE_PATH) > 0
    overview = nbformat.read(LECTURES / "lecture-ReAct.ipynb", as_version=4)
    text = " ".join(" ".join(c.source for c in overview.cells if c.cell_type == "markdown").split())
    stated = re.search(r"about (\d+\.\d) h for a median student, set-up and model waiting included", text)
    assert stated, "the overview states the core path's time, to one decimal as the cell prints it"
    assert float(stated.group(1)) == workload.median_hours(core), workload.median_hours(core)
    cell = next(c.source for c in overview.cells if c.id == "time-estimates")
    assert "path_minutes" in cell and "median_hours" in cell and "SETUP_MINUTES" in cell
    words = {n: w for n, w in enumerate(["no", "one", "two", "three", "four", "five", "six",
                                         "seven", "eight", "nine", "ten"])}
    lecture = sum(len(workload.model_cells(LECTURES / p.name)) for p in NOTEBOOKS)
    lab1 = len(workload.model_cells(ROOT / "lab" / "lecture-ReAct-lab.ipynb"))
    assert f"{words[lecture]} cells of the lecture and {words[lab1]} of lab 1 use it" in text
    for engine in ("embedded engine", "the default when no server answers", "Ollama",
                   "OpenAI-compatible"):
        assert engine in text, engine



def test_the_overview_says_truthfully_what_the_exercises_ask():
    """Exercises 11 (a code action) and 13 (a tool schema) ask for code: the overview does not
    call all 15 "on paper"."""
    overview = nbformat.read(LECTURES / "lecture-ReAct.ipynb", as_version=4)
    row = next(l for c in overview.cells for l in c.source.splitlines() if "(../exercises/" in l)
    exercises = nbformat.read(ROOT / "solutions" / "lecture-ReAct-exercises" /
                              "lecture-ReAct-exercises.ipynb", as_version=4)
    n = sum(bool(re.match(r"### Exercise \d+:", c.source)) for c in exercises.cells)
    assert f"{n} exercises" in row and "on paper" not in row
    assert f"{n - 2} worked by hand, 2 in code (Exercises 11 and 13)" in row
    for number, asked in (("ex11", "code_action"), ("ex13", "currency_tool")):
        answer = next(c.source for c in exercises.cells if c.id.startswith(number) and
                      c.metadata.get("nbgrader", {}).get("solution"))
        assert asked in answer


def test_the_lecture_is_at_most_about_ten_thousand_words():
    """The four parts and the overview together at most about 10,000 words of prose, the overview
    at most about 800 (links, objectives, plan, time); the references live in references.md."""
    from lreact.views import workload
    words = {p.name: workload.notebook_counts(p)["words"] for p in NOTEBOOKS}
    assert sum(words.values()) <= 10_000, words
    assert words["lecture-ReAct.ipynb"] <= 800, words
    overview = nbformat.read(LECTURES / "lecture-ReAct.ipynb", as_version=4)
    objectives = next(c.source for c in overview.cells if c.id == "objectives")
    assert "lab 2" in objectives and "extension" in objectives
    refs = (LECTURES / "references.md").read_text(encoding="utf-8")
    for cited in ("Yao, Shunyu", "Song, Yifan", "Turpin, Miles", "Leviathan, Yaniv", "Holtzman, Ari",
                  "Anthropic. \"Model Context Protocol.\"", "Recommended readings"):
        assert cited in refs, cited
    for p in NOTEBOOKS:
        text = "\n".join(c.source for c in nbformat.read(p, as_version=4).cells)
        assert "#References" not in text, p.name


def test_part_four_teaches_ollamas_truncation_and_mistrals_ids():
    """Part IV says what Ollama's server does when a chat exceeds num_ctx (server/prompt.go: the
    oldest messages go, system messages stay, pairs are not respected), which is what lab 2's
    compaction guards against; and that call ids reach a Mistral model under its own template,
    not under Ollama's."""
    nb = nbformat.read(LECTURES / "lecture-ReAct-4-messages.ipynb", as_version=4)
    cells = {c.id: " ".join(c.source.split()) for c in nb.cells}
    budget = cells["budget"]
    for said in ("drops the oldest messages", "num_ctx", "server/prompt.go", "keeps the system messages",
                 "blind to pairs", "compact_history", "C.5", "`truncate`"):
        assert said in budget, said
    mistral = cells["mistral-side-by-side"]
    assert "Under Ollama's templates" in mistral and "Mistral's own template" in mistral
    assert '"id": "a1b2c3d4e"' in mistral and '"call_id": "a1b2c3d4e"' in mistral
    assert "9 alphanumeric characters" in mistral and "--jinja" in mistral and "vLLM" in mistral
    assert "Neither carries the call id" not in mistral


def test_the_lecture_and_readme_name_nothing_a_student_does_not_have():
    texts = [nbformat.read(p, as_version=4) for p in NOTEBOOKS]
    sources = [c.source for nb in texts for c in nb.cells] + [(ROOT / "README.md").read_text()]
    assert not [s[:80] for s in sources if "L-ReAct lecture notes" in s]


def test_part_two_explains_its_mechanisms_with_code():
    nb = nbformat.read(LECTURES / "lecture-ReAct-2-cot-react.ipynb", as_version=4)
    ids = [c.get("id") for c in nb.cells if c.cell_type == "code"]
    assert {"open-closed-demo", "loop-step-by-step"} <= set(ids)
