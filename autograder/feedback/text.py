"""The text of a feedback page (``feedback.py``): inert untrusted text, maths without a CDN,
hints, and what a failed test says.

Untrusted text (student names, error messages, comments) is written with ``inert``: every
character other than a letter, digit or space becomes a character reference inside ``<code>``,
so no Markdown or HTML parser turns it into a link, an image or a tag. A failed test's note
takes its error only from the run without hidden tests (``released_run.py``); where that run
passed the test, only the kind of error and the hint of the visible source are said
(``autograder/README.md``, "Feedback").
"""
from __future__ import annotations

import ast
import re

# --- inert text ----------------------------------------------------------------------------

def inert(text) -> str:
    """``text`` as HTML that no Markdown or HTML parser turns into markup: every character
    other than a letter, digit or space becomes a character reference, inside <code>."""
    out = []
    for ch in str(text):
        if ch == "\n":
            out.append("<br>")
        elif ch.isalnum() and ch.isascii() or ch == " ":
            out.append(ch)
        else:
            out.append(f"&#{ord(ch)};")
    return f'<code class="lreact-inert">{"".join(out)}</code>'


def fmt(x) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:g}"


# --- maths without a CDN ---------------------------------------------------------------------

_CODE = re.compile(r"(```.*?```|~~~.*?~~~|`[^`\n]*`)", re.S)
_MATH = re.compile(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|(?<![\\$])\$(?!\s)([^$\n]+?)(?<![\s\\])\$(?!\$)",
                   re.S)


def typeset(markdown: str) -> str:
    """The course's markdown with every ``$...$`` and ``$$...$$`` replaced by MathML
    (code spans and fences untouched; a formula that cannot be converted stays as TeX)."""
    from latex2mathml.converter import convert

    def one(m):
        tex, display = (m.group(1), "block") if m.group(1) is not None else (m.group(2),
                                                                              "inline")
        try:
            return convert(tex.strip(), display=display).replace("\n", "")
        except Exception:  # noqa: BLE001 - unknown macro: show the TeX source
            return m.group(0)

    parts = _CODE.split(markdown)
    return "".join(p if i % 2 else _MATH.sub(one, p) for i, p in enumerate(parts))


# --- hints ---------------------------------------------------------------------------------

def hint_of(test_source: str, error: str = "") -> str:
    """The hint of a failing test: the ``Hint:`` line of its error, else the test's visible
    ``hint = '...'`` line ('' when it has none)."""
    for line in str(error or "").splitlines():
        if line.strip().startswith("Hint:"):
            return line.strip()[len("Hint:"):].strip()
    try:
        tree = ast.parse(test_source)
    except SyntaxError:
        return ""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "hint"
                                                for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                continue
            if isinstance(value, str):
                return value
    return ""


def _first_error(error: str) -> str:
    for line in str(error or "").splitlines():
        if line.strip() and not line.strip().startswith("Hint:"):
            return line.strip()
    return str(error or "").strip()


# --- what a failed test says ----------------------------------------------------------------

SHOWN_FROM = ("<p>What this page shows: your answers' output and each test's first error come "
              "from a run of your notebook with the visible tests only (the hidden tests "
              "removed, as in your copy); the scores come from grading, which also ran the "
              "hidden tests. Nothing your answers printed or raised after a hidden test had "
              "run is shown, as it could hold that test's data: a test that lost points only "
              "in its hidden tests says so, with the kind of error and the test's hint, never "
              "the hidden test, its arguments or its expected values.</p>")


def kind_of(error: str) -> str:
    """The kind of a graded run's error in the grader's words, never its text: a failed check
    (AssertionError), a time limit, or 'an error'. Not the exception's name: an answer chooses
    which exception it raises, and ~60 builtin names would carry 6 bits of a hidden argument
    per test into the feedback."""
    error = str(error or "").strip()
    if error.startswith("timeout"):
        return "ran past the time limit"
    if error.startswith("did not run"):
        return "did not run (see the problem above)"
    if re.match(r"AssertionError\s*:?", error):
        return "a failed check"
    return "an error"


def failed_note(gid: str, record: dict, shown: dict | None, hidden: set,
                visible_source: str) -> str:
    """The HTML that says how test ``gid`` failed ('' when grading passed it): the first error
    of the run without hidden tests, or, where that run passed it (or did not happen), only
    the kind of the graded error and the hint of the visible source."""
    if not record["errors"].get(gid):
        return ""
    mine = ((shown or {}).get("errors") or {}).get(gid)
    kind = inert(kind_of(record["errors"][gid]))
    if mine:
        text = f"failed: {inert(_first_error(mine))}"
        hint = hint_of(visible_source, mine)
    else:
        if not (shown or {}).get("executed"):
            text = f"failed: {kind} (its message is not shown: see above)"
        elif gid in hidden:
            text = (f"failed in its hidden tests: {kind} (hidden tests, their arguments and "
                    f"expected values are not shown)")
        else:
            text = (f"failed when graded, after hidden tests had run: {kind} (it passes in "
                    f"the run without them, so its message is not shown)")
        hint = hint_of(visible_source)
    if hint:
        text += f"<br>Hint: {inert(hint)}"
    return text
