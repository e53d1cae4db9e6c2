"""Every hint in a graded test cell sends the student to a lecture section by its exact heading.

The hints of the first lab, the second lab and the exercises read ``reread Part II, "The
execution loop": ...`` (lab 2 and lab 1) or ``reread Part II, 'The execution loop': ...`` (the
exercises).  The quoted words must be a heading of lectures/*.ipynb, character for character, and
a ``Part N`` in front of them must name the lecture notebook that has that heading.  The lab 2
markdown and docstrings that cite the lecture (``(lecture: "...")``, ``Part III, "..."``) are held
to the same rule."""
import ast
import pathlib
import re

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
GRADED_NOTEBOOKS = [
    ROOT / "solutions" / "lecture-ReAct-lab" / "lecture-ReAct-lab.ipynb",
    ROOT / "solutions" / "lecture-ReAct-lab2" / "lecture-ReAct-lab2.ipynb",
    ROOT / "solutions" / "lecture-ReAct-exercises" / "lecture-ReAct-exercises.ipynb",
]
LAB2 = GRADED_NOTEBOOKS[1]
PARTS = {"I": 1, "II": 2, "III": 3, "IV": 4}
QUOTED = r"""(?:Part (?P<part>[IV]+), )?(?P<q>["'])(?P<heading>.+?)(?P=q)"""
# "reread Part I, 'A' and 'B': ..." cites A and B; the quotes after the colon are not headings
HINT = re.compile(r"reread " + QUOTED + r"(?P<more>(?:(?:,| and) " + QUOTED.replace("?P<", "?P<x").replace("(?P=q)", "(?P=xq)") + r")*)")
MORE = re.compile(r"(?:,| and) " + QUOTED)
# prose and docstrings of lab 2: '(lecture: "X", "Y")', 'Part III, "X"; Part I, "Y"', 'reread "X"'
CITATION = re.compile(r"(?:lecture: |reread |(?=Part [IV]+, ))" + QUOTED)
NEXT = re.compile(r"\s*(?:,|;| and)\s*" + QUOTED)


def lecture_headings():
    """{heading text: the lecture Part it is in (1..4, or 0 for the overview)}: check-course's."""
    from autograder.proofs.course_rules import Course
    return Course(ROOT, ["lecture-ReAct-lab"]).headings()


def strings(source):
    """The string constants of a cell, implicit concatenations joined (f-strings: their text)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            out.append("".join(v.value for v in node.values if isinstance(v, ast.Constant)))
    return out


def cited_in_hints(source):
    """[(part or None, heading)] for every heading the hints of one test cell quote."""
    cited = []
    for text in strings(source):
        for m in HINT.finditer(text):
            cited.append((m.group("part"), m.group("heading")))
            cited += [(x.group("part"), x.group("heading")) for x in MORE.finditer(m.group("more"))]
    return cited


def problems(cited, headings):
    bad = []
    for part, heading in cited:
        if heading not in headings:
            bad.append(f'"{heading}" is not a heading of lectures/*.ipynb')
        elif part is not None and PARTS[part] != headings[heading]:
            bad.append(f'"{heading}" is in Part {headings[heading]}, not Part {part}')
    return bad


def test_every_hint_quotes_a_lecture_heading_verbatim():
    """The rule is check-course's (autograder/proofs/course_rules.py), for every assignment."""
    from autograder.proofs.course_rules import Course, hints_cite_the_lecture
    course = Course(ROOT)
    assert len(course.headings()) > 30
    problems = hints_cite_the_lecture(course)
    assert not problems, "\n".join(map(str, problems))


def test_lab2_prose_and_docstrings_cite_headings_verbatim():
    headings = lecture_headings()
    failures = []
    for c in nbformat.read(LAB2, as_version=4).cells:
        text = " ".join(c.source.split())           # a citation may wrap over two lines
        for m in CITATION.finditer(text):
            cited, end = [(m.group("part"), m.group("heading"))], m.end()
            while (x := NEXT.match(text, end)):
                cited.append((x.group("part"), x.group("heading")))
                end = x.end()
            cited = [(p, h) for p, h in cited if h[:1].isupper() and len(h.split()) >= 2]
            failures += [f"{c.id}: {p}" for p in problems(cited, headings)]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("hint, ok", [
    ('reread Part II, "The execution loop": every turn', True),
    ("reread Part I, 'Temperature scaling' and 'Truncated sampling: top-k and top-p': x 'CoT'", True),
    ('reread Part II, "The Execution Loop": every turn', False),          # case differs
    ('reread Part III, "The execution loop": every turn', False),         # wrong Part
    ("reread Part I, 'Temperature scaling' and 'Truncated Sampling': x", False),
    ('hint = "look it up"', None),                                        # no citation at all
])
def test_the_check_itself(hint, ok):
    cited = cited_in_hints(f"hint = {hint!r}")
    if ok is None:
        assert cited == []
    else:
        assert cited and (not problems(cited, lecture_headings())) == ok
