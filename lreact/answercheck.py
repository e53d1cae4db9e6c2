"""Feedback before grading for the pen-and-paper exercises: a visible check that says whether an
answer is right, for practice (``exercises/lecture-ReAct-exercises.ipynb``, "How to answer").

Each visible test cell carries an answer key ``_key = {name: key}`` made by
``python -m lreact.answercheck`` from what the cell's hidden assertions expect (the ``expected``
of ``lreact.checks.assert_close / assert_int_equal / assert_same_set``, recorded while the source
notebook's tests run on the solutions), never typed by hand.  ``check(name, value, _key,
hint=...)`` normalises the answer exactly as that assertion does and compares digests:

- ``close TOL d1 d2 ...``: one digest per entry, of the grid cell ``floor(x / TOL)``: cells as
  wide as the hidden test's tolerance, never finer, so a key gives away at most "a value within
  the tolerance", no more digits.  The check accepts the answer's cell and its two neighbours:
  every entry the hidden test accepts (``|x - e| <= TOL``) and some up to ``2 TOL`` away, which
  the hidden test may still reject (an answer rounded to 3 decimals as asked is far inside).
- ``int d`` and ``set d``: one digest of the whole-number value, or of the sorted distinct strings.
- ``probability_form`` checks the form of a distribution as tolerantly as the hidden test reads
  its entries: entries not below ``-TOL``, a sum within ``n * TOL`` of 1.

Each digest is PBKDF2-HMAC-SHA256 (``hashlib.pbkdf2_hmac``) of the cell or value, salted with the
answer's name and entry number, ``ITERATIONS`` rounds: about 4 ms a digest on one idle core of
the course's 2-core test machine (0.4 us a round, measured), so checking every answer of the
notebook (86 digests when all are right, at most 190) takes well under a second.

What it cannot hide: the salt and the method are public and the answer spaces are small, so a
program can search them.  Per guess it pays ``ITERATIONS`` rounds; a number in ``[lo, hi]`` with
tolerance ``TOL`` needs up to ``(hi - lo) / TOL`` guesses per entry: a probability (``[0, 1]``,
tolerance 0.002) up to 500 guesses, 5e6 rounds, about 2 s; a whole number up to N, N guesses
(34,000 tokens: about 2 minutes); a choice among labels a few to a few hundred guesses.  So the check is for practice only: the points come from the hidden
tests, which the student version does not contain.
"""
from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import json
import math
import re
import sys
import warnings

from . import checks
from .checks import as_float_list, as_int, as_str_set, fail

SALT = "lreact-exercises/answer-key/v2"
ITERATIONS = 10_000  # PBKDF2 rounds per digest (brute force pays them per guess)
DIGEST_CHARS = 12    # 48 bits: a wrong answer matches by chance with probability ~1e-14 per try
KEY_BLOCK = re.compile(r"^_key = \{.*?^\}\n", re.S | re.M)
KEY_HEADER = ("_key = {  # answer key for practice, made from the hidden tests by "
              "`python -m lreact.answercheck`")
VARIANT = re.compile(r"^# answer key also for: (\w+) = (.+)$", re.M)


def digest(name: str, index: int, token: str) -> str:
    salt = f"{SALT}|{name}|{index}".encode("utf-8")
    return hashlib.pbkdf2_hmac("sha256", token.encode("utf-8"), salt,
                               ITERATIONS).hex()[:DIGEST_CHARS]


def _cell(x: float, tol: float) -> int:
    # rounding first: 0.752 / 0.002 is 375.99999999999994 in floats, and lands in cell 376
    return math.floor(round(x / tol, 6))


def key_close(name: str, expected, tol: float) -> str:
    values = [float(v) for v in as_float_list(expected, name)]
    return " ".join(["close", repr(float(tol))]
                    + [digest(name, i, str(_cell(v, tol))) for i, v in enumerate(values)])


def key_int(name: str, expected) -> str:
    return f"int {digest(name, 0, str(int(expected)))}"


def key_set(name: str, expected) -> str:
    canonical = json.dumps(sorted(set(str(x) for x in expected)))
    return f"set {digest(name, 0, canonical)}"


def probability_form(value, n: int, *, name: str, hint: str = "", tol: float) -> list:
    """``value`` as ``n`` finite floats that form a distribution as far as an answer within
    ``tol`` per entry can: no entry below ``-tol``, the sum within ``n * tol`` of 1."""
    values = as_float_list(value, name, hint)
    if len(values) != n:
        fail(f"{name} has {len(values)} entries, expected {n}", hint)
    if any(not math.isfinite(v) for v in values):
        fail(f"{name} has a NaN or infinite entry", hint)
    low = [i + 1 for i, v in enumerate(values) if v < -tol]
    if low:
        fail(f"{name}: entry {low[0]} (counting from 1) is negative; probabilities are at "
              "least 0", hint)
    total = math.fsum(values)
    if abs(total - 1.0) > n * tol:
        fail(f"{name} sums to {total:.4f}: a distribution sums to 1 (here within "
              f"{n * tol:g}, {n} entries each within {tol:g})", hint)
    return values


def _matches(name: str, index: int, x: float, tol: float, wanted: str) -> bool:
    cell = _cell(x, tol)
    return any(digest(name, index, str(cell + k)) == wanted for k in (0, -1, 1))


def check(name: str, value, keys: dict, *, hint: str = "") -> str:
    """``"<name>: right"`` when ``value`` matches the answer key ``keys[name]``; otherwise an
    AssertionError saying "not yet" and what to re-check (never the expected value)."""
    if name not in keys:
        raise KeyError(f"no answer key for {name!r} in this cell (keys: {sorted(keys)}); "
                       "regenerate them with `python -m lreact.answercheck`")
    kind, *parts = str(keys[name]).split()
    if kind == "close":
        tol, wanted = float(parts[0]), parts[1:]
        got = as_float_list(value, name, hint)
        if len(got) != len(wanted):
            fail(f"{name} has {len(got)} values, expected {len(wanted)}", hint)
        off = [i for i, (x, d) in enumerate(zip(got, wanted))
               if not math.isfinite(x) or not _matches(name, i, x, tol, d)]
        if off:
            where = "" if len(got) == 1 else " at " + ", ".join(
                f"entry {i + 1}" for i in off) + " (counting from 1)"
            fail(f"{name}: not yet right{where}; answers within {tol:g} of the exact value "
                  f"count", hint)
    elif kind == "int":
        if digest(name, 0, str(as_int(value, name, hint))) != parts[0]:
            fail(f"{name}: not yet right", hint)
    elif kind == "set":
        canonical = json.dumps(as_str_set(value, name, hint))
        if digest(name, 0, canonical) != parts[0]:
            fail(f"{name}: not yet right", hint)
    else:
        raise ValueError(f"unknown answer key kind {kind!r} for {name!r}")
    return f"{name}: right"


# --- making the keys from the source notebook (instructor side) ------------------------------

def _recording(strict: bool):
    """Patch the hidden tests' assertions to record (kind, name, expected, tol); ``strict``: and
    then run them (else they pass, so that every assertion of the cell is recorded)."""
    seen, originals = [], {}

    def wrap(fname, kind):
        original = getattr(checks, fname)
        originals[fname] = original

        def recorder(actual, expected, *args, **kwargs):
            seen.append((kind, kwargs.get("name"), expected, kwargs.get("tol")))
            return original(actual, expected, *args, **kwargs) if strict else None
        setattr(checks, fname, recorder)

    for fname, kind in [("assert_close", "close"), ("assert_int_equal", "int"),
                        ("assert_same_set", "set")]:
        wrap(fname, kind)
    return seen, originals


@contextlib.contextmanager
def _recorded(strict: bool):
    import importlib
    module = importlib.import_module("lreact.answercheck")  # also when run as __main__
    seen, originals = _recording(strict)
    real_check = module.check
    module.check = lambda name, value, keys, hint="": f"{name}: (not checked)"
    try:
        yield seen
    finally:
        module.check = real_check
        for fname, original in originals.items():
            setattr(checks, fname, original)


def _key_of(kind, name, expected, tol):
    if kind == "close":
        return key_close(name, expected, 1e-6 if tol is None else tol)
    return key_int(name, expected) if kind == "int" else key_set(name, expected)


def _run(source, namespace, label, *, must_pass):
    with _recorded(must_pass) as seen, contextlib.redirect_stdout(io.StringIO()), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(compile(source, label, "exec"), namespace)  # noqa: S102 - the course's notebook
        except AssertionError:
            if must_pass:
                raise
    return seen


def answer_keys(nb) -> dict:
    """{test cell id: {name: key}} for every test cell with a ``_key = {...}`` block, from its
    hidden assertions run on the solutions (and on each ``# answer key also for: NAME = VALUE``
    line of the cell: the same cell again with that answer, for credit carried forward)."""
    namespace, keys = {"__name__": "__main__"}, {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not (meta.get("grade") and not meta.get("solution")) \
                or not KEY_BLOCK.search(cell.source):
            _run(cell.source, namespace, cell.id, must_pass=True)
            continue
        runs = [(namespace, True)] + [
            ({**namespace, var: ast.literal_eval(literal)}, False)
            for var, literal in VARIANT.findall(cell.source)]
        found = keys.setdefault(cell.id, {})
        for ns, must_pass in runs:
            for kind, name, expected, tol in _run(cell.source, ns, cell.id, must_pass=must_pass):
                if not name:
                    raise ValueError(f"{cell.id}: a hidden assertion without name= (the key "
                                     "needs the name the visible check uses)")
                key = _key_of(kind, name, expected, tol)
                if found.setdefault(name, key) != key:
                    raise ValueError(f"{cell.id}: two different expected values for {name!r}")
    return keys


def key_block(keys: dict) -> str:
    return "\n".join([KEY_HEADER] + [f"    {json.dumps(n)}: {json.dumps(k)},"
                                     for n, k in keys.items()] + ["}"]) + "\n"


def write_keys(path) -> list[str]:
    """Rewrite every ``_key`` block of the source notebook at ``path``; the changed cell ids."""
    import nbformat
    nb = nbformat.read(path, as_version=4)
    keys = answer_keys(nb)
    changed = []
    for cell in nb.cells:
        if cell.id in keys:
            new = KEY_BLOCK.sub(lambda _m: key_block(keys[cell.id]), cell.source, count=1)
            if new != cell.source:
                cell.source = new
                changed.append(cell.id)
    if changed:
        nbformat.write(nb, path)
    return changed


if __name__ == "__main__":  # python -m lreact.answercheck [SOURCE.ipynb]
    from pathlib import Path
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else (
        Path(__file__).resolve().parent.parent / "solutions" / "lecture-ReAct-exercises"
        / "lecture-ReAct-exercises.ipynb")
    done = write_keys(target)
    print(f"{target}: answer keys rewritten in {len(done)} cell(s): {', '.join(done) or '-'}")
