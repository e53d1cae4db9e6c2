"""Part I's real-model views in a real browser (issue 18 §1 and §2): JupyterLab + headless
Chromium, with the embedded backend on the small real model (SmolLM2-135M).

Runs all cells of Part I, switches the temperature and truncation explorers to "real model: your
prompt", moves their sliders and the sliders of the real model's first-token view (the
``qwen-widget`` cell), hovers a token of the probability lens, and saves screenshots to
artifacts/browser/: real-temperature.png, real-truncation.png, lens-tool-call.png.  The redraw
time from input to loaded image is measured as in tests/test_browser.py, written to
artifacts/browser/real-redraw-latency.txt, and its median must stay under the same behaviour
budget (``REDRAW_BUDGET_MS``).  Skips like tests/test_browser.py without Chromium, and
like tests/test_embedded.py without the model.  Run:  pytest -m browser -s tests/test_browser_real_model.py
"""
from __future__ import annotations

import os
import statistics
from contextlib import closing

import pytest

from test_browser import (ARTIFACTS, NOTEBOOK, REDRAW_BUDGET_MS, key_on, lab_and_browser,
                          latency_line, open_and_run_all, redraw_latencies, screenshot_on_failure)
from test_embedded import MODEL, real_model

pytestmark = [pytest.mark.browser, real_model]


@pytest.fixture(scope="module")
def real_lab():
    saved = {k: os.environ.get(k) for k in ("LREACT_BACKEND", "LREACT_GGUF")}
    os.environ.update(LREACT_BACKEND="embedded", LREACT_GGUF=MODEL)  # the kernel inherits them
    try:
        with lab_and_browser() as both:
            yield both
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _switch_to_real(page, box):
    """Choose the real source and wait until the status names the model and the picture is a
    new one."""
    img = box.locator("img").first
    before = img.get_attribute("src")
    box.locator("select").first.select_option(label="real model: your prompt")
    page.wait_for_function(
        "([sel, src]) => { const b = document.querySelector(sel);"
        " return b && b.innerText.includes('(embedded)')"
        " && b.querySelector('img').getAttribute('src') !== src; }",
        arg=[f".{box_class(box)}", before], timeout=120_000)
    page.wait_for_timeout(300)


def box_class(box):
    return box.evaluate("(e) => [...e.classList].find(c => c.startsWith('lreact-'))")


def test_real_distribution_and_lens_in_jupyterlab(real_lab):
    page, run_all_s = open_and_run_all(real_lab, NOTEBOOK)
    with closing(page), screenshot_on_failure(page, "real-model"):
        temperature = page.locator(".lreact-temperature").first
        temperature.scroll_into_view_if_needed()
        _switch_to_real(page, temperature)
        latencies = {"real temperature explorer (T slider)": redraw_latencies(
            page, temperature.locator("img").first,
            key_on(page, page.locator(".lreact-temperature-slider .noUi-handle").first,
                   ["ArrowLeft"]), moves=6)}
        assert "rest (49132 tokens)" not in temperature.inner_text()  # a picture, not text
        temperature.screenshot(path=str(ARTIFACTS / "real-temperature.png"))

        truncation = page.locator(".lreact-truncation").first
        truncation.scroll_into_view_if_needed()
        _switch_to_real(page, truncation)
        latencies["real truncation explorer (top-p slider)"] = redraw_latencies(
            page, truncation.locator("img").first,
            key_on(page, truncation.locator(".widget-slider .noUi-handle").nth(2),
                   ["ArrowLeft"]), moves=6)
        truncation.screenshot(path=str(ARTIFACTS / "real-truncation.png"))

        first_tokens = page.locator(".lreact-sampling").first     # the qwen-widget cell
        first_tokens.scroll_into_view_if_needed()
        latencies["real first-token sliders (qwen-widget, T)"] = redraw_latencies(
            page, first_tokens.locator("img").first,
            key_on(page, first_tokens.locator(".widget-slider .noUi-handle").first,
                   ["ArrowLeft", "ArrowRight"]), moves=6)

        lens = page.locator(".lreact-lens").first
        lens.scroll_into_view_if_needed()
        assert "live: SmolLM2-135M-Instruct.Q4_1.gguf" in lens.inner_text()
        token = lens.locator(".lens-tok").nth(4)
        token.hover()
        tip = token.locator(".lens-tip")
        tip.wait_for(state="visible", timeout=10_000)
        assert "rank" in tip.inner_text()
        box = lens.bounding_box()
        page.screenshot(path=str(ARTIFACTS / "lens-tool-call.png"),
                        clip={"x": box["x"], "y": box["y"], "width": box["width"],
                              "height": box["height"] + 180})
    report = [f"Part I with the embedded model, run all cells: {run_all_s:.1f} s; input -> new "
              f"picture loaded, budget median < {REDRAW_BUDGET_MS} ms:"]
    report += ["  " + latency_line(name, ms) for name, ms in latencies.items()]
    print("\n" + "\n".join(report))
    (ARTIFACTS / "real-redraw-latency.txt").write_text("\n".join(report) + "\n")
    slow = {name: statistics.median(ms) for name, ms in latencies.items()
            if statistics.median(ms) >= REDRAW_BUDGET_MS}
    assert slow == {}, f"redraws over the {REDRAW_BUDGET_MS} ms budget: {slow}"
