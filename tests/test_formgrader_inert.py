"""Student text is inert in the pages nbgrader's formgrader shows the instructor (issue 16,
point 5; autograder/README.md, "Hand grading"; autograder/instructor/formgrade_inert.py).

A hostile submission puts one attack in each of its own markdown answers (raw HTML, handlers,
``javascript:`` links written as HTML, as markdown, as an autolink, behind a character
reference or a reference definition, SVG, MathML and ``<style>`` tricks, a ``mermaid`` block,
an image beacon) and hostile outputs under a code answer (HTML, SVG, JavaScript, markdown,
widget). Every attack, if it ran, appends ``!PWN-<name>`` to the page's title.

- The page is rendered as formgrader renders it: nbgrader's ``FormgradeExtension`` initialised
  in the course folder builds the ``HTMLExporter`` (its ``formgrade`` template, the course's
  ``nbgrader_config.py``), which converts the ``autograded/`` notebook ``grade`` wrote; the
  notebook part of the page must hold no script, handler, frame, object, style or
  ``javascript:`` URL, and every attack must still be readable as text.
- Each layer alone holds: the copy ``grade`` writes (rendered without the course's config), and
  the render-time preprocessor (a verbatim copy, as stock ``nbgrader autograde`` writes one).
- Once, in headless Chromium: the real formgrader (a Jupyter server with the instructor's
  configuration, jupyter-config/instructor) serves the page; nothing runs, even when every
  link is clicked, and nothing is fetched from elsewhere. Skips without Chromium or playwright
  unless ``LREACT_REQUIRE_BROWSER=1``.
"""
from __future__ import annotations

import copy
import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from test_browser import _free_port, jupyter_server

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "tests" / "fixtures" / "autograder" / "solutions" / "tiny" / "tiny.ipynb"
CHROMIUM = os.environ.get("LREACT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-dev-shm-usage"]
AID = "hostile"


def pwn(name: str) -> str:
    # void: a javascript: URL whose value is a string would replace the page by that string
    return f"void(top.document.title+='!PWN-{name}')"


# one attack per markdown answer cell (grade_id answer_<name>)
MARKDOWN = {
    "script": f"Answer. <script>{pwn('script')}</script>",
    "img": f"Answer <img src=x onerror=\"{pwn('img')}\">",
    "svg": f"<svg onload=\"{pwn('svg')}\"><circle r=1 /></svg>",
    "iframe": f"<iframe src=\"javascript:{pwn('iframe')}\"></iframe>",
    "a_html": f"<a href=\"javascript:{pwn('a_html')}\">click me</a>",
    "md_link": f"See [the lecture](javascript:{pwn('md_link')}).",
    "md_entity": f"See [this](&#106;avascript:{pwn('md_entity')}).",
    "md_reference": f"See [this][r].\n\n[r]: javascript:{pwn('md_reference')}",
    "autolink": f"<javascript:{pwn('autolink')}>",
    "math": f"<math><mtext><table><mglyph><style><img src=x onerror=\"{pwn('math')}\">"
            "</style></mglyph></table></mtext></math>",
    "style": f"<style><img src=x onerror=\"{pwn('style')}\"></style>"
             "<style>body { background: url(http://beacon.invalid/css.png) }</style>",
    "noscript": f"<noscript><p title=\"</noscript><img src=x onerror={pwn('noscript')}>\">",
    "comment": f"<!-- a --!><img src=x onerror=\"{pwn('comment')}\"> -->",
    "details": f"<details open ontoggle=\"{pwn('details')}\"><summary>s</summary></details>",
    "object": f"<object data=\"javascript:{pwn('object')}\"></object>",
    "meta": f"<meta http-equiv=\"refresh\" content=\"0;url=javascript:{pwn('meta')}\">",
    "mermaid": f"```mermaid\n<img src=x onerror=\"{pwn('mermaid')}\">\n```",
    "beacon": "![chart](http://beacon.invalid/img.png)",
}
HONEST = ("Doubling is *linear*: `2(x + y) < 3` is a typo, see "
          "[the lecture](https://example.org/linear) and $x < y$.")
OUTPUTS = [
    {"output_type": "display_data", "metadata": {"text/html": {"isolated": True}},
     "data": {"text/html": f"<img src=x onerror=\"{pwn('out_html_isolated')}\">"}},
    {"output_type": "display_data", "metadata": {},
     "data": {"text/html": f"<img src=x onerror=\"{pwn('out_html')}\">",
              "text/plain": "<IPython.core.display.HTML object>"}},
    {"output_type": "display_data", "metadata": {},
     "data": {"image/svg+xml": f"<svg xmlns='http://www.w3.org/2000/svg' "
                               f"onload=\"{pwn('out_svg')}\"/>"}},
    {"output_type": "display_data", "metadata": {},
     "data": {"application/javascript": pwn("out_js")}},
    {"output_type": "execute_result", "execution_count": 1, "metadata": {},
     "data": {"text/markdown": f"[x](javascript:{pwn('out_md')})"}},
    {"output_type": "display_data", "metadata": {},
     "data": {"application/vnd.jupyter.widget-view+json": {"model_id": "x", "version_major": 2,
                                                           "version_minor": 0},
              "text/html": f"<img src=x onerror=\"{pwn('out_widget')}\">"}},
    {"output_type": "stream", "name": "stdout", "text": f"<script>{pwn('out_stream')}</script>"},
    {"output_type": "error", "ename": "<b>E</b>", "evalue": f"<script>{pwn('out_err')}</script>",
     "traceback": [f"<img src=x onerror=\"{pwn('out_tb')}\">"]},
]


# --- a course folder with an assignment that has one markdown answer per attack ----------

def source_notebook():
    nb = nbformat.read(TINY, as_version=4)
    explain = next(c for c in nb.cells if (c.metadata.get("nbgrader") or {}).get("grade_id")
                   == "explain")
    for name in MARKDOWN:
        cell = copy.deepcopy(explain)
        cell.id = f"answer-{name}".replace("_", "-")
        cell.metadata.nbgrader["grade_id"] = f"answer_{name}"
        nb.cells.append(cell)
    return nb


def hostile_submission(source):
    """What engine.grade_notebook hands to the gradebook for the attacker: every answer theirs
    (an answer's outputs included)."""
    nb = copy.deepcopy(source)
    for cell in nb.cells:
        gid = (cell.metadata.get("nbgrader") or {}).get("grade_id", "")
        if gid == "explain":
            cell.source = HONEST
        elif gid.startswith("answer_"):
            cell.source = MARKDOWN[gid[len("answer_"):]]
        elif gid == "double":
            cell.source = "def double(x):\n    return 2 * x  # </script><script>alert(1)"
            cell.outputs = [nbformat.from_dict(o) for o in OUTPUTS]
    return nb


def make_course(tmp_path: Path) -> Path:
    """A throwaway course folder whose nbgrader_config.py is the repository's own."""
    root = tmp_path / "course"
    (root / "solutions" / AID).mkdir(parents=True)
    nbformat.write(source_notebook(), root / "solutions" / AID / f"{AID}.ipynb")
    (root / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa: F821\n"
        f"load_subconfig({str(ROOT / 'nbgrader_config.py')!r})  # noqa: F821\n"
        f"c.CourseDirectory.root = {str(root)!r}\n", encoding="utf-8")
    return root


def record_hostile(root: Path) -> Path:
    """``grade``'s gradebook step for the attacker; the autograded/ notebook it wrote."""
    from autograder.instructor.gradebook import CourseGradebook
    book = CourseGradebook(root)
    source = root / "solutions" / AID / f"{AID}.ipynb"
    nb = nbformat.read(source, as_version=4)
    manual = {c.metadata.nbgrader["grade_id"]: 1.0 for c in nb.cells
              if c.cell_type == "markdown" and (c.metadata.get("nbgrader") or {}).get("grade")}
    record = {"assignment": AID, "student": "mallory", "manual": manual, "scores": {},
              "submitted": None}
    book.record(record, source, hostile_submission(nb))
    return book.autograded_path("mallory", AID, AID)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """The course folder, with the attacker's submission recorded by ``grade``'s gradebook
    step (once for the module: creating a gradebook takes seconds)."""
    root = make_course(tmp_path_factory.mktemp("hostile"))
    record_hostile(root)
    return root


def autograded(root: Path, student: str = "mallory") -> Path:
    return root / "autograded" / student / AID / f"{AID}.ipynb"


@pytest.fixture
def formgrader(monkeypatch):
    """A function: course root -> (exporter, resources) exactly as nbgrader's formgrader
    server extension builds them (formgrader.py ``load_jupyter_server_extension``,
    ``init_tornado_settings``; handlers.py ``SubmissionHandler``)."""
    def build(root: Path, config_dir: Path | None = None):   # (no user config)
        from nbgrader.server_extensions.formgrader.formgrader import FormgradeExtension
        monkeypatch.chdir(root)                              # formgrader reads the cwd config
        monkeypatch.setattr(sys, "path", list(sys.path))     # initialize() prepends the cwd
        monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(config_dir or root / ".jupyter"))
        ext = FormgradeExtension()
        ext.root_dir = str(root)
        ext.initialize([])
        webapp = SimpleNamespace(settings={})
        ext.init_tornado_settings(webapp)
        assert not webapp.settings["nbgrader_bad_setup"]
        resources = {"assignment_id": AID, "notebook_id": AID, "submission_id": "s1",
                     "index": 0, "total": 1, "base_url": "", "student": "mallory",
                     "last_name": None, "first_name": None,
                     "notebook_path": f"autograded/mallory/{AID}/{AID}.ipynb"}
        return webapp.settings["nbgrader_exporter"], resources
    return build


# --- what "inert" means in the rendered page --------------------------------------------

DANGEROUS_TAGS = {"script", "iframe", "frame", "object", "embed", "svg", "math", "style",
                  "meta", "link", "base", "form", "button", "details", "noscript", "template",
                  "img"}
URL_ATTRS = {"href", "src", "action", "formaction", "data", "xlink:href", "srcdoc", "content"}


def notebook_part(page: str):
    from bs4 import BeautifulSoup
    soup = BeautifulSoup(page, "html.parser")
    part = soup.find(id="notebook-container")
    assert part is not None, "not a formgrader page"
    return part


def live(page: str) -> list[str]:
    """Everything in the cells of ``page`` (not formgrader's own score and comment boxes
    around them) that a browser could run or fetch."""
    found = []
    content = notebook_part(page).select(".text_cell_render, .input_area, .output_area")
    assert content, "no cell content in the page"
    for el in (e for part in content for e in [part, *part.find_all(True)]):
        if el.name in DANGEROUS_TAGS and not (el.name == "img" and el.get("src", "")
                                              .startswith("data:image/png;base64,")):
            found.append(f"<{el.name}>")
        for attr, value in el.attrs.items():
            value = " ".join(value) if isinstance(value, list) else str(value)
            norm = re.sub(r"[\x00-\x20]", "", value).lower()
            if attr.lower().startswith("on"):
                found.append(f"<{el.name} {attr}=>")
            elif attr.lower() in URL_ATTRS and re.match(r"(javascript|vbscript|data|about):",
                                                        norm) and el.name != "img":
                found.append(f"<{el.name} {attr}={value[:40]}>")
            elif attr.lower() in URL_ATTRS and "beacon.invalid" in norm:
                found.append(f"<{el.name} {attr}={value[:40]}> (a request elsewhere)")
    return found


def visible_text(page: str) -> str:
    return re.sub(r"\s+", " ", notebook_part(page).get_text(" "))


def assert_inert_and_readable(page: str):
    assert live(page) == []
    text = visible_text(page)
    for name, attack in MARKDOWN.items():   # the instructor still reads what was written
        words = re.findall(r"[a-z]{4,}", attack)
        assert words and all(w in text for w in words), (name, words)
    assert "!PWN-out_stream" in text and "!PWN-out_tb" in text   # plain outputs stay


# --- rendered as formgrader renders it -----------------------------------------------------

def test_the_formgrader_page_of_a_hostile_submission_is_inert(hostile, formgrader):
    exporter, resources = formgrader(hostile)
    page, _ = exporter.from_filename(str(autograded(hostile)), resources=resources)
    assert_inert_and_readable(page)
    # an honest answer is still rendered as markdown: emphasis, code, a link, maths
    part = notebook_part(page)
    assert part.find("em", string="linear") is not None
    assert any(c.get_text() == "2(x + y) < 3" for c in part.find_all("code"))
    assert part.find("a", href="https://example.org/linear") is not None
    assert "$x &lt; y$" in page
    # the mark scheme (the instructor's own markdown) still under the answer
    assert "Mark scheme for" in visible_text(page) and "SOLUTION-PROSE" in visible_text(page)


def test_the_copy_grade_writes_is_inert_without_the_course_config(hostile):
    """The autograded/ copy alone: rendered with formgrader's template and nothing else."""
    from nbconvert import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    path = autograded(hostile)
    exporter = HTMLExporter(template_name="formgrade",
                            extra_template_basedirs=[handlers.template_path])
    page, _ = exporter.from_filename(str(path), resources={
        "base_url": "", "submission_id": "s1", "notebook_id": AID, "assignment_id": AID,
        "index": 0, "total": 1})
    assert_inert_and_readable(page)
    copy_ = nbformat.read(path, as_version=4)
    shown = {c.metadata.nbgrader["grade_id"]: c.source for c in copy_.cells
             if (c.metadata.get("nbgrader") or {}).get("grade_id", "").startswith("answer_")}
    assert all(s.startswith("*Shown as text") for s in shown.values()), shown
    assert next(c for c in copy_.cells if c.get("metadata", {}).get("nbgrader", {})
                .get("grade_id") == "explain").source == HONEST   # plain markdown untouched


def test_formgrader_makes_a_verbatim_copy_inert_as_it_renders(hostile, formgrader):
    """A copy written verbatim (by the grader before this fix, or by stock nbgrader
    autograde): the course's nbgrader_config.py makes formgrader's page inert all the same,
    and the student's name in the page header (printed unescaped by nbgrader) is text."""
    path = autograded(hostile, "eve")
    path.parent.mkdir(parents=True, exist_ok=True)
    source = nbformat.read(hostile / "solutions" / AID / f"{AID}.ipynb", as_version=4)
    nbformat.write(hostile_submission(source), path)
    exporter, resources = formgrader(hostile)
    assert exporter.sanitize_html is True
    name = f"eve<img src=x onerror=\"{pwn('name')}\">"
    resources.update(student=name, notebook_path=f'autograded/{name}/{AID}/{AID}.ipynb')
    page, _ = exporter.from_filename(str(path), resources=resources)
    assert_inert_and_readable(page)
    from bs4 import BeautifulSoup
    nav = BeautifulSoup(page, "html.parser").find("nav")
    assert nav.find("img") is None and name in nav.get_text()


@pytest.mark.parametrize("markdown, why", [
    ("plain *text*, `a<b`, $x<y$, [ok](https://x.org), <mailto:a@b.org>, [top](#top)", None),
    ("<!-- a note -->\n\nplain", None),
    ("[x](&#106;avascript:alert(1))", "link"),
    ("[x][r]\n\n[r]: JavaScript:alert(1)", "link"),
    ("[x](data:text/html,<script>alert(1)</script>)", "link"),
    ("[x](relative/page.html)", "link"),
    ("<!-- a --!><script>alert(1)</script> -->", "raw HTML"),
    ("<!--><img src=x onerror=alert(1)>-->", "raw HTML"),
    ("text <b>bold</b>", "raw HTML"),
    ("![x](attachment:missing.png)", "image"),
    ("```Mermaid\n<b>x</b>\n```", "mermaid"),
])
def test_what_counts_as_plain_markdown(markdown, why):
    from autograder.instructor.formgrade_inert import inert_markdown, problems
    found = problems(markdown)
    if why is None:
        assert found == [] and inert_markdown(markdown) == markdown
    else:
        assert any(why in f for f in found), found
        shown = inert_markdown(markdown)
        assert shown.startswith("*Shown as text") and markdown.split("\n")[0] in shown
        assert problems(shown) == []


def test_text_shown_as_text_cannot_close_its_own_fence():
    from autograder.instructor.formgrade_inert import _parser, inert_markdown
    attack = "<b>x</b>\n~~~\n~~~~~~~~\n<script>alert(1)</script>\n```\n"
    shown = inert_markdown(attack)
    blocks = [t for t in _parser().parse(shown)[0] if t["type"] == "block_code"]
    assert len(blocks) == 1 and blocks[0]["raw"] == attack


# --- once, in a browser, from the real formgrader ----------------------------------------

def _require_or_skip(reason: str):
    if os.environ.get("LREACT_REQUIRE_BROWSER") == "1":
        pytest.fail(f"LREACT_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


@contextmanager
def formgrader_server(root: Path, tmp: Path):
    """A Jupyter server with the instructor's configuration at the course root (as ``make
    formgrader``); yields its URL; always stops it."""
    port = _free_port()
    env = {**os.environ, "JUPYTER_CONFIG_PATH": str(ROOT / "jupyter-config" / "instructor"),
           "JUPYTER_CONFIG_DIR": str(tmp / "config"), "JUPYTER_RUNTIME_DIR": str(tmp / "run"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    cmd = [sys.executable, "-m", "jupyter", "server", f"--ServerApp.port={port}",
           "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1",
           "--ServerApp.open_browser=False", "--IdentityProvider.token=",
           "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True", "--allow-root",
           f"--ServerApp.root_dir={root}"]
    url = f"http://127.0.0.1:{port}"
    with jupyter_server(cmd, url, cwd=root, env=env, log_path=tmp / "server.log"):
        yield url


CLICK_EVERYTHING = """
() => {
  const part = document.getElementById('notebook-container');
  const hits = [];
  for (const el of part.querySelectorAll('[href], [src], [action], [formaction], [data]')) {
    const raw = el.getAttribute('href') || el.getAttribute('src') || el.getAttribute('action')
      || el.getAttribute('formaction') || el.getAttribute('data');
    let scheme = '';
    try { scheme = new URL(raw, document.baseURI).protocol; } catch (e) {}
    if (scheme === 'javascript:') { hits.push(el.outerHTML.slice(0, 120)); }
    if (el.tagName === 'A' && scheme === 'javascript:') el.click();
  }
  return hits;
}
"""


@pytest.mark.browser
def test_nothing_runs_in_chromium_on_the_real_formgrader_page(hostile, tmp_path):
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        _require_or_skip(f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _require_or_skip("the playwright package is not installed (requirements-test.txt)")
    root = hostile
    from autograder.instructor.gradebook import CourseGradebook
    with CourseGradebook(root).open() as gb:
        sid = gb.find_submission_notebook(AID, AID, "mallory").id
    elsewhere, dialogs = [], []
    with formgrader_server(root, tmp_path) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(30_000)

            def route(r):
                if r.request.url.startswith(url):
                    r.continue_()
                else:                      # MathJax's CDN, beacons: recorded, never fetched
                    elsewhere.append(r.request.url)
                    r.abort()
            page.route("**/*", route)
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            response = page.goto(f"{url}/formgrader/submissions/{sid}/", wait_until="load")
            assert response.status == 200
            page.wait_for_selector("#notebook-container")
            assert page.locator(".nbgrader_cell").count() >= len(MARKDOWN)  # formgrader's own
            page.wait_for_timeout(1500)    # let handlers, frames and refreshes fire
            loaded, html = page.title(), page.content()
            clicked = page.evaluate(CLICK_EVERYTHING)
            page.wait_for_timeout(500)
            title = page.title()
        finally:
            browser.close()
    assert loaded == title == AID and not dialogs, (loaded, title, dialogs)
    assert clicked == []
    assert not [u for u in elsewhere if "beacon.invalid" in u], elsewhere
    assert_inert_and_readable(html)


def test_formgrader_at_the_repository_root_renders_with_both_layers(formgrader, tmp_path):
    """``make formgrader``: the repository's own nbgrader_config.py reaches the exporter."""
    from autograder.instructor.formgrade_inert import InertStudentWork
    exporter, _ = formgrader(ROOT, tmp_path / "config")
    assert exporter.sanitize_html is True
    assert InertStudentWork in exporter.preprocessors
    assert exporter.template_name == "formgrade"
