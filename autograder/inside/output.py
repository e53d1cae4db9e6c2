"""What a cell printed, as both grading processes keep it: capped, inert text.

Used by the student process (``inside/student.py``: what an answer cell prints) and the trusted process
(``trusted_namespace.py``: what a test cell prints, and the student's outputs it passes on).
Lecture connection: none; this is the grader's machinery (``autograder/README.md``).
"""
from __future__ import annotations

import io

OUTPUT_CAP = 100_000          # characters of output kept per cell and stream
OUTPUT_KEYS = {"output_type", "name", "text", "ename", "evalue"}


class Capped(io.TextIOBase):
    """A text stream that keeps the first ``cap`` characters and counts the rest."""

    def __init__(self, cap=OUTPUT_CAP):
        self.parts, self.size, self.cap = [], 0, cap

    def writable(self):
        return True

    def write(self, s):
        s = str(s)
        if self.size < self.cap:
            self.parts.append(s[: self.cap - self.size])
        self.size += len(s)
        return len(s)

    def text(self):
        out = "".join(self.parts)
        if self.size > self.cap:
            out += f"\n[output truncated by the grader: {self.size} characters]\n"
        return out


def first_line(text: str) -> str:
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def clean_outputs(outputs) -> list:
    """What the student process says a cell printed, kept as inert text (capped)."""
    clean = []
    for out in outputs if isinstance(outputs, list) else []:
        if not isinstance(out, dict) or out.get("output_type") not in ("stream", "error"):
            continue
        item = {k: str(v)[:OUTPUT_CAP] for k, v in out.items() if k in OUTPUT_KEYS}
        if item.get("output_type") == "stream" and item.get("name") not in ("stdout", "stderr"):
            continue
        clean.append(item)
        if len(clean) >= 4:
            break
    return clean
