"""Untrusted names shown in the instructor's terminal with every control made visible.

A zip member's name, a file name or a student id is chosen by a student. Printed raw, an
escape sequence in it (``\\x1b[2K\\r``) can erase a line of grade's summary and write a fake
one, and a bidi override (U+202E) can reverse what follows. ``shown`` writes every character
Python does not call printable (C0 and C1 controls, ESC, CR, DEL, the bidi embeddings,
overrides and isolates U+202A-202E / U+2066-2069, other format characters, line and paragraph
separators) as its escape, as ``repr`` does, and a backslash as ``\\\\``, so what the terminal
shows is exactly the characters of the name. See autograder/README.md, "From a folder of zips
to grades and feedback".
"""
from __future__ import annotations


def _escape(ch: str) -> str:
    return "\\\\" if ch == "\\" else repr(ch)[1:-1]   # repr escapes every non-printable


def shown(text) -> str:
    """``text`` (any object, as ``str``) safe to print: controls written as escapes."""
    text = str(text)
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(ch if ch.isprintable() and ch != "\\" else _escape(ch) for ch in text)
