"""The lecture in a real browser: JupyterLab + headless Chromium (Debian's) driven by Playwright.

Starts JupyterLab from this environment on a free local port (no token, temporary settings,
workspace and runtime folders), opens Part I of the lecture, runs all cells, moves the temperature
slider with the keyboard and checks that the plot image changes.  It saves screenshots to
``artifacts/browser/``.

Redraw time, a behaviour budget: for every interactive view (Part I's temperature and truncation
explorers and the constrained decoding stepper, Part IV's context budget explorer; the real-model
views in tests/test_browser_real_model.py) the time from the key press or click to the moment
the new picture has loaded in the page is measured inside the browser, and its median must stay
under ``REDRAW_BUDGET_MS`` = 100 ms: a slider that lags behind the hand stops being a thing to
play with.  The medians are printed and written to ``artifacts/browser/redraw-latency.txt``.

Without ``/usr/bin/chromium`` (or the playwright package) the test skips, unless
``LREACT_REQUIRE_BROWSER=1`` (CI), where it fails.  Run:  pytest -m browser -s
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("LREACT_CHROMIUM", "/usr/bin/chromium")
NOTEBOOK = "lecture-ReAct-1-sampling.ipynb"  # served from a temporary copy of lectures/
ARTIFACTS = ROOT / "artifacts" / "browser"
MOVES = 8
REDRAW_BUDGET_MS = 100   # median, input -> new picture loaded (a behaviour budget, see above)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-dev-shm-usage"]

# JupyterLab user settings for the test: no autosave, every cell rendered, no news prompt.
SETTINGS = {
    "@jupyterlab/docmanager-extension:plugin": {"autosave": False},
    # render every cell (the default windowing leaves cells far off-screen out of the page)
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false",
                                                     "checkForUpdates": False},
}

# In the page: record every key press and click and every change / load of the plot image, with
# performance.now() timestamps, so the latency is measured inside the browser.
INSTRUMENT = """
(img) => {
  const log = {keys: [], srcs: [], loads: []};
  window.__lreact = log;
  for (const kind of ['keydown', 'mousedown'])
    document.addEventListener(kind, () => log.keys.push(performance.now()), true);
  new MutationObserver(() => log.srcs.push(performance.now()))
      .observe(img, {attributes: true, attributeFilter: ['src']});
  img.addEventListener('load', () => log.loads.push(performance.now()));
}
"""
IMAGE_BYTES = """
async (img) => {
  const buf = await (await fetch(img.src)).arrayBuffer();
  let s = '';
  const bytes = new Uint8Array(buf);
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
  return btoa(s);
}
"""


def _require_or_skip(reason: str):
    if os.environ.get("LREACT_REQUIRE_BROWSER") == "1":
        pytest.fail(f"LREACT_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pids_using(marker: str):
    """Processes whose command line mentions ``marker`` (our private temp folder)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            pids.append(int(entry.name))
    return pids


@contextmanager
def jupyter_server(cmd, url, *, cwd, env, log_path, name="the server"):
    """Start the Jupyter server ``cmd`` (its output to ``log_path``), wait up to 90 s until
    ``url``/api/status answers, yield it; always stop it (SIGTERM, which also shuts its kernels
    down, then SIGKILL of its process group)."""
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            deadline = time.monotonic() + 90
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited: "
                                       + Path(log_path).read_text(errors="replace")[-2000:])
                try:
                    with urllib.request.urlopen(url + "/api/status", timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name} did not start within 90 s")
                time.sleep(0.3)
            yield proc
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=5)


@contextmanager
def jupyterlab(config_path=None, serve=("lectures",)):
    """A JupyterLab server on a free port; yields its base URL; always stops it and its kernels.
    ``config_path`` goes first on JUPYTER_CONFIG_PATH (the student's or instructor's view,
    jupyter-config/); the root is a copy of the first folder of ``serve``, the others are
    copied into it."""
    tmp = Path(tempfile.mkdtemp(prefix="lreact-lab-"))
    # serve a copy, so that nothing the browser does (autosave of outputs) reaches the repository
    shutil.copytree(ROOT / serve[0], tmp / "lectures")
    for extra in serve[1:]:
        shutil.copytree(ROOT / extra, tmp / "lectures" / extra)
    settings = tmp / "settings"
    for plugin, values in SETTINGS.items():
        target = settings / (plugin.replace(":", "/") + ".jupyterlab-settings")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    port = _free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
           "JUPYTER_CONFIG_DIR": str(tmp / "config"), "OLLAMA_HOST": "http://127.0.0.1:9",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("JUPYTER_CONFIG_PATH", None)
    if config_path:
        env["JUPYTER_CONFIG_PATH"] = str(config_path)
    cmd = [sys.executable, "-m", "jupyter", "lab", f"--ServerApp.port={port}",
           "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1",
           "--ServerApp.open_browser=False", "--ServerApp.token=", "--ServerApp.password=",
           "--ServerApp.disable_check_xsrf=True", "--allow-root",
           f"--ServerApp.root_dir={tmp / 'lectures'}", f"--LabApp.user_settings_dir={settings}",
           f"--LabApp.workspaces_dir={tmp / 'workspaces'}", "--LabApp.expose_app_in_browser=True",
           "--LabApp.news_url=", "--LabServerApp.extension_manager=readonly",
           f"--ServerApp.runtime_dir={tmp / 'runtime'}"]
    url = f"http://127.0.0.1:{port}"
    try:
        with jupyter_server(cmd, url, cwd=tmp, env=env, log_path=tmp / "server.log",
                            name="JupyterLab"):
            yield url
    finally:
        for pid in _pids_using(str(tmp)):  # kernels that outlived the server
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp / "server.log", ARTIFACTS / "jupyterlab.log")
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def lab_and_browser():
    """(base URL, playwright Browser): a JupyterLab started for the caller (its kernels inherit
    this process's environment) and one headless Chromium; skips, saying why, without them."""
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        _require_or_skip(f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _require_or_skip("the playwright package is not installed (requirements-test.txt)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with jupyterlab() as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield url, browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def lab():
    """(base URL, playwright Browser): one JupyterLab and one headless Chromium for the module."""
    with lab_and_browser() as both:
        yield both


@contextmanager
def screenshot_on_failure(page, name):
    """Keep a picture of the page when a step fails (CI keeps artifacts/browser/)."""
    try:
        yield
    except BaseException:
        try:
            page.screenshot(path=str(ARTIFACTS / f"failure-{name}.png"), full_page=True)
        except Exception:  # noqa: BLE001 - the original failure matters more
            pass
        raise


def open_and_run_all(lab, notebook):
    """Open ``notebook`` in JupyterLab, run all cells, wait until the last one has run and
    check that no cell shows an error or stderr.  Returns (page, seconds for run-all)."""
    url, browser = lab
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)
    with screenshot_on_failure(page, Path(notebook).stem):
        # a fresh workspace per page (?reset), or JupyterLab restores the previous page's tabs
        workspace = Path(notebook).stem.lower()
        page.goto(f"{url}/lab/workspaces/{workspace}/tree/{notebook}?reset",
                  wait_until="domcontentloaded")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
        page.wait_for_function(
            "(path) => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
            " return w && w.context && w.context.path === path && w.sessionContext"
            " && w.sessionContext.session && w.sessionContext.session.kernel; }",
            arg=notebook, timeout=90_000)
        return page, _run_all(page)


def _run_all(page):
    start = time.perf_counter()
    # the command's promise resolves once every cell has been executed
    ran = page.evaluate("async () => await window.jupyterapp.commands.execute("
                        "'notebook:run-all-cells')")
    assert ran is not False, "JupyterLab reports that run-all did not complete"
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.kernelDisplayStatus"
        " === 'idle'", timeout=60_000)
    seconds = time.perf_counter() - start
    errors = page.locator(".jp-OutputArea-output[data-mime-type="
                          "'application/vnd.jupyter.error']")
    assert errors.count() == 0, errors.first.inner_text()
    assert page.locator(".jp-OutputArea-output[data-mime-type="
                        "'application/vnd.jupyter.stderr']").count() == 0
    return seconds


def redraw_latencies(page, img, act, moves=MOVES):
    """Milliseconds from each input to the first load of a new picture in ``img`` (a locator),
    measured inside the page; ``act(i)`` makes the i-th input (a key press or a click)."""
    page.evaluate(INSTRUMENT, img.element_handle())
    latencies = []
    for i in range(moves):
        n_load = page.evaluate("() => window.__lreact.loads.length")
        act(i)
        page.wait_for_function(f"() => window.__lreact.loads.length > {n_load}", timeout=15_000)
        log = page.evaluate("() => window.__lreact")
        key = log["keys"][-1]
        latencies.append(min(t for t in log["loads"][n_load:] if t >= key) - key)
        page.wait_for_timeout(150)  # let the kernel go idle between inputs
    return latencies


def latency_line(name, latencies):
    return (f"{name}: median {statistics.median(latencies):.0f} ms over {len(latencies)} inputs "
            f"(min {min(latencies):.0f}, max {max(latencies):.0f} ms)")


def key_on(page, handle_locator, keys):
    """An ``act`` for ``redraw_latencies``: focus the slider handle, press ``keys[i % len]``."""
    def act(i):
        handle_locator.focus()
        page.keyboard.press(keys[i % len(keys)])
    return act


def test_temperature_slider_redraws_plot_in_jupyterlab(lab):
    page, run_all_s = open_and_run_all(lab, NOTEBOOK)
    with closing(page), screenshot_on_failure(page, "temperature"):
        plot = page.locator(".lreact-temperature img").first
        plot.scroll_into_view_if_needed()
        handle = page.locator(".lreact-temperature-slider .noUi-handle").first
        readout = page.locator(".lreact-temperature-slider .widget-readout").first
        element = plot.element_handle()
        first_bytes = base64.b64decode(page.evaluate(IMAGE_BYTES, element))
        assert first_bytes[:8] == b"\x89PNG\r\n\x1a\n"
        first_readout = readout.inner_text()
        page.screenshot(path=str(ARTIFACTS / "temperature-before.png"))

        latencies = {}
        digests = {hashlib.sha256(first_bytes).hexdigest()}

        def move(i):
            handle.focus()
            page.keyboard.press("ArrowRight" if i % 4 != 3 else "ArrowLeft")

        latencies["temperature explorer (T slider)"] = redraw_latencies(page, plot, move)
        for _ in range(2):
            move(0)
            page.wait_for_timeout(300)
            digests.add(hashlib.sha256(base64.b64decode(
                page.evaluate(IMAGE_BYTES, element))).hexdigest())
        assert readout.inner_text() != first_readout, "the slider did not move"
        assert len(digests) >= 3, "the plot image did not change with the slider"
        plot.screenshot(path=str(ARTIFACTS / "temperature-plot.png"))
        page.screenshot(path=str(ARTIFACTS / "temperature-after.png"))

        # the truncation explorer: its top-k slider
        truncation = page.locator(".lreact-truncation").first
        truncation.scroll_into_view_if_needed()
        latencies["truncation explorer (top-k slider)"] = redraw_latencies(
            page, truncation.locator("img").first,
            key_on(page, truncation.locator(".widget-slider .noUi-handle").nth(1),
                   ["ArrowRight", "ArrowRight", "ArrowLeft"]))
        truncation.screenshot(path=str(ARTIFACTS / "truncation-explorer.png"))

        # the constrained decoding stepper: one step forward changes the text so far
        stepper = page.locator(".lreact-constrained").first
        stepper.scroll_into_view_if_needed()
        text = stepper.locator(".widget-html").first
        before = text.inner_text()
        forward = stepper.get_by_role("button", name="step")
        back = stepper.get_by_role("button", name="back")
        latencies["constrained stepper (step / back)"] = redraw_latencies(
            page, stepper.locator("img").first,
            lambda i: (forward if i % 2 == 0 else back).click())
        forward.click()
        page.wait_for_function("(b) => document.querySelector('.lreact-constrained "
                               ".widget-html').innerText !== b", arg=before, timeout=15_000)
        stepper.screenshot(path=str(ARTIFACTS / "constrained-stepper.png"))

    report = [f"Part I run all cells: {run_all_s:.1f} s; input -> new picture loaded, budget "
              f"median < {REDRAW_BUDGET_MS} ms:"]
    report += ["  " + latency_line(name, ms) for name, ms in latencies.items()]
    print("\n" + "\n".join(report))
    (ARTIFACTS / "redraw-latency.txt").write_text("\n".join(report) + "\n")
    slow = {name: statistics.median(ms) for name, ms in latencies.items()
            if statistics.median(ms) >= REDRAW_BUDGET_MS}
    assert slow == {}, f"redraws over the {REDRAW_BUDGET_MS} ms budget: {slow}"


def test_context_budget_widget_steps_in_jupyterlab(lab):
    page, run_all_s = open_and_run_all(lab, "lecture-ReAct-4-messages.ipynb")
    with closing(page), screenshot_on_failure(page, "context-budget"):
        box = page.locator(".lreact-context").first
        box.scroll_into_view_if_needed()
        listing = box.locator(".widget-html").first
        assert "get_weather" in listing.inner_text()
        before = listing.inner_text()
        sliders = box.locator(".widget-slider .noUi-handle")
        sliders.first.focus()
        page.keyboard.press("ArrowRight")  # model call 1 -> 2
        page.wait_for_function("(b) => document.querySelector('.lreact-context .widget-html')"
                               ".innerText !== b", arg=before, timeout=15_000)
        assert "re-sent" in listing.inner_text()
        box.screenshot(path=str(ARTIFACTS / "context-budget.png"))
        img = box.locator("img").first
        latencies = {
            "context budget explorer (model call slider)": redraw_latencies(
                page, img, key_on(page, sliders.first, ["ArrowLeft", "ArrowRight"])),
            "context budget explorer (retrieved slider)": redraw_latencies(
                page, img, key_on(page, sliders.nth(1), ["ArrowRight"]))}
    report = [f"Part IV run all cells: {run_all_s:.1f} s; input -> new picture loaded, budget "
              f"median < {REDRAW_BUDGET_MS} ms:"]
    report += ["  " + latency_line(name, ms) for name, ms in latencies.items()]
    print("\n" + "\n".join(report))
    with open(ARTIFACTS / "redraw-latency.txt", "a") as f:
        f.write("\n".join(report) + "\n")
    slow = {name: statistics.median(ms) for name, ms in latencies.items()
            if statistics.median(ms) >= REDRAW_BUDGET_MS}
    assert slow == {}, f"redraws over the {REDRAW_BUDGET_MS} ms budget: {slow}"


# ------------------------------------------------------------------------------------------------
# nbgrader's instructor interface: hidden from students, there for instructors
# ------------------------------------------------------------------------------------------------
STUDENT_CONFIG = ROOT / "jupyter-config" / "student"
INSTRUCTOR_CONFIG = ROOT / "jupyter-config" / "instructor"
LAB_NOTEBOOK = "lab/lecture-ReAct-lab.ipynb"
NBGRADER_UI = """
() => {
  const app = window.jupyterapp;
  const menus = [...document.querySelectorAll('.lm-MenuBar-itemLabel')].map(e => e.innerText);
  const side = [...document.querySelectorAll('.jp-SideBar .lm-TabBar-tab')]
      .map(e => (e.getAttribute('title') || '') + ' ' + e.innerText);
  const validate = [...document.querySelectorAll('.validate-button')].length;
  return {menus, side, validate,
          formgrader: app.commands.hasCommand('nbgrader:open-formgrader'),
          create: app.commands.hasCommand('nbgrader:open-create-assignment'),
          courses: app.commands.hasCommand('nbgrader:open-course-list')};
}
"""


def _open_view(lab, config, name):
    """The lab notebook in a JupyterLab of its own, started with ``config`` first on the config
    path, seen with the module's Chromium; (what nbgrader shows, HTTP status of /formgrader)."""
    _, browser = lab
    with jupyterlab(config, serve=("lectures", "lab")) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(60_000)
        with closing(page), screenshot_on_failure(page, name):
            page.goto(f"{url}/lab/workspaces/{name}/tree/{LAB_NOTEBOOK}?reset",
                      wait_until="domcontentloaded")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            page.wait_for_selector(".lm-MenuBar-itemLabel", timeout=30_000)
            page.wait_for_timeout(1500)  # let every plugin activate
            ui = page.evaluate(NBGRADER_UI)
            status = page.evaluate("async (u) => (await fetch(u)).status", f"{url}/formgrader")
            page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
            if "Nbgrader" in ui["menus"]:
                page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
                page.wait_for_selector(".lm-Menu", timeout=10_000)
                ui["menu_items"] = page.locator(".lm-Menu .lm-Menu-itemLabel").all_inner_texts()
                page.screenshot(path=str(ARTIFACTS / f"{name}-menu.png"))
            return ui, status


def test_student_view_has_validate_but_no_instructor_interface(lab):
    """make lab, Binder and the conda environment put jupyter-config/student first."""
    ui, formgrader_status = _open_view(lab, STUDENT_CONFIG, "student-view")
    assert ui["validate"] >= 1, "the notebook toolbar must keep nbgrader's Validate button"
    assert "Nbgrader" not in ui["menus"], ui["menus"]
    assert not any("Create Assignment" in t for t in ui["side"]), ui["side"]
    assert not ui["formgrader"] and not ui["create"] and not ui["courses"], ui
    assert formgrader_status == 404  # the formgrader server extension is off too


def test_instructor_view_has_formgrader(lab):
    """make formgrader puts jupyter-config/instructor first."""
    ui, formgrader_status = _open_view(lab, INSTRUCTOR_CONFIG, "instructor-view")
    assert "Nbgrader" in ui["menus"] and ui["formgrader"] and ui["create"], ui
    assert "Formgrader" in ui["menu_items"], ui["menu_items"]
    assert any("Create Assignment" in t for t in ui["side"]), ui["side"]
    assert formgrader_status == 200


def test_widget_pictures_at_their_limits_in_jupyterlab(lab):
    """The states where pictures went wrong in a browser: T = 0, the stepper's last step, a call
    far beyond a small context window.  Screenshots in artifacts/browser/limit-*.png."""
    page, _ = open_and_run_all(lab, NOTEBOOK)
    with closing(page), screenshot_on_failure(page, "limits-part-1"):
        plot = page.locator(".lreact-temperature img").first
        plot.scroll_into_view_if_needed()
        readout = page.locator(".lreact-temperature-slider .widget-readout").first
        page.locator(".lreact-temperature-slider .noUi-handle").first.focus()
        page.keyboard.press("Home")
        page.wait_for_function("() => document.querySelector('.lreact-temperature-slider "
                               ".widget-readout').innerText.trim() === '0.00'", timeout=15_000)
        page.wait_for_timeout(500)
        assert readout.inner_text().strip() == "0.00"
        plot.screenshot(path=str(ARTIFACTS / "limit-temperature-T0.png"))

        stepper = page.locator(".lreact-constrained").first
        stepper.scroll_into_view_if_needed()
        forward = stepper.get_by_role("button", name="step")
        for _ in range(40):
            if forward.is_disabled():
                break
            before = stepper.locator(".widget-html").first.inner_text()
            forward.click()
            page.wait_for_function("(b) => document.querySelector('.lreact-constrained "
                                   ".widget-html').innerText !== b", arg=before, timeout=15_000)
        assert forward.is_disabled() and "parses: True" in stepper.inner_text()
        page.wait_for_timeout(500)
        stepper.screenshot(path=str(ARTIFACTS / "limit-stepper-last-step.png"))

    page, _ = open_and_run_all(lab, "lecture-ReAct-4-messages.ipynb")
    with closing(page), screenshot_on_failure(page, "limits-part-4"):
        box = page.locator(".lreact-context").first
        box.scroll_into_view_if_needed()
        box.locator("select").nth(1).select_option("1024")
        sliders = box.locator(".widget-slider .noUi-handle")
        sliders.nth(1).focus()
        page.keyboard.press("End")  # retrieved documents: 3,000 tokens in every call
        sliders.nth(0).focus()
        page.keyboard.press("End")  # the last model call
        page.wait_for_function("() => [...document.querySelectorAll('.lreact-context "
                               ".widget-readout')].some(e => e.innerText.trim() === '3000')",
                               timeout=15_000)
        page.wait_for_timeout(800)
        box.screenshot(path=str(ARTIFACTS / "limit-context-budget-1024.png"))
