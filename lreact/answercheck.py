"""The visible checks of the pen-and-paper exercises (``exercises/lecture-ReAct-exercises.ipynb``):
every answer's form and, where the answer's space holds 10**6 candidates or more (here: the
distributions of Exercises 1 and 5(a)), whether the answer is right.

What a visible check may say depends on the size of the answer's space:

- Every answer's **form** (type, length, allowed values, range): ``probability_form``,
  ``real_form``, ``int_form``, ``choice_form``, ``subset_form``, ``sequence_form``.  Each also
  declares the space of answers of that form, which ``python -m lreact.answercheck`` reads.
- **Right or "not yet"** only where the space is too large to find the answer by trying values:
  ``check`` compares the answer with an answer key ``_key = {name: key}`` that
  ``python -m lreact.answercheck`` writes into the test cell from what the cell's hidden
  assertions expect (``lreact.checks.assert_close / assert_int_equal / assert_same_set``, run on
  the solutions), never typed by hand.

The threshold (``MIN_VALUES`` = 10**6).  A key is written, and checked, only when the whole
answer's space holds at least ``MIN_VALUES`` candidates, whatever the answer's kind: each
candidate is a value that the check confirms, so a smaller space is searched by trying values
(digests of ``ITERATIONS`` rounds, 2 to 4 ms each: 10**6 of them cost about an hour of one
core, more than doing the exercise).  The candidates (``candidates``):

- a number within a tolerance (``close``): the cells of the key's width (twice the tolerance)
  over the form's range, to the power of the entries (one number reaches 10**6 only with 10**6
  cells in its range: a probability at tolerance 0.002 has 250, a ratio in [0, 1000] at 0.005
  has 100,000);
- a distribution (``prob``, from ``probability_form``): only the cell vectors that add up to 1
  count (the simplex), and a search tries few non-zero entries first, so the count stops at the
  answer's own number of non-zero entries: 3 probabilities at 0.002 give 31,626, 4 give
  2,667,126, 5 with 2 non-zero (a top-2 distribution) give 2,495.  Counted conservatively (the
  cells of entries worked out to the tolerance add up to 1 only within a few cells, which the
  count leaves out);
- an exact answer (``int``, ``set``: a label, a set of labels, a whole number, an ordered list):
  the values of its form; a partly right answer leaves only a few (its neighbours).  No exact
  answer of these exercises comes near (the largest, ``context_c3``: 986,410 ordered lists).

Below the threshold the visible check says the form only.  ``key_close``, ``key_probability``,
``key_int``, ``key_set`` and ``check`` raise ``SmallAnswerSpace`` naming the item below the
threshold, so a small space cannot get a key, in the source or the student version (a key read
back, by ``check``, is counted with all its entries non-zero: the most its text allows).

A vector is judged as a whole: one digest of all its entries, one verdict.  Entry by entry, a
vector with removed tokens would answer "is this entry 0?" (which tokens are kept: a set of
labels) in one try.

Keys: ``close TOL LO HI N DIGEST`` and, for a distribution, ``prob TOL N DIGEST`` (the cells
``floor(x / (2 TOL))`` of the N entries, a cell as wide as twice the hidden test's tolerance, so
a key gives away at most an interval of that width); the check tries, per entry, the answer's
cell and the neighbour nearer to the answer, so it accepts every answer the hidden test accepts
(``|x - e| <= TOL``) and none ``3 TOL`` or more away.  ``int LO HI DIGEST`` and ``set COUNT DIGEST``: one digest of the whole number or of the
sorted distinct strings.  Each digest is PBKDF2-HMAC-SHA256 (``hashlib.pbkdf2_hmac``) salted with
the answer's name, ``ITERATIONS`` rounds (2 to 4 ms on one core of the course's 2-core test
machine; a vector of n entries costs at most 2**n of them).  The salt and the method are public:
the key is for practice, and the points come from the hidden tests, which the student version
does not contain.
"""
from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import itertools
import json
import math
import re
import sys
import warnings

from . import checks
from .checks import as_float, as_float_list, as_int, as_str_set, fail

SALT = "lreact-exercises/answer-key/v3"
ITERATIONS = 10_000  # PBKDF2 rounds per digest (a search pays them per guess)
DIGEST_CHARS = 12    # 48 bits: a wrong answer matches by chance with probability ~1e-14 per try
MIN_VALUES = 10**6   # candidates of the whole answer (a number's cells, an exact answer's values)
KEY_BLOCK = re.compile(r"^_key = \{.*?^\}\n", re.S | re.M)
KEY_HEADER = ("_key = {  # answer key for practice, made from the hidden tests by "
              "`python -m lreact.answercheck`")
VARIANT = re.compile(r"^# answer key also for: (\w+) = (.+)$", re.M)
READINGS = re.compile(r"^# each reading: (\w+) in (.+)$", re.M)   # every value, none first


class SmallAnswerSpace(ValueError):
    """A key asked for an answer whose space is small enough to search by trying values."""


def _refuse(name: str, what: str, count: int, minimum: int):
    raise SmallAnswerSpace(
        f"{name}: no answer key for a space of {count:,} {what} (fewer than {minimum:,}): a "
        "student could find the answer by trying values; its visible check may test the form "
        "only, and the hidden tests decide its points")


# --- the forms: what every visible check may say ----------------------------------------------

_DECLARED: dict | None = None   # {name: form} while ``answer_keys`` records a cell


def _declare(name: str, **form):
    if _DECLARED is not None:
        _DECLARED[name] = form


def sequences(n: int) -> int:
    """Ordered lists of distinct items taken from ``n``: ``sum(n! / (n - k)!)``, k = 0..n."""
    return sum(math.perm(n, k) for k in range(n + 1))


def form_count(form: dict) -> int:
    """The number of values of an exact form (``int``, ``choice``, ``subset``, ``sequence``)."""
    kind = form["kind"]
    if kind == "int":
        return form["hi"] - form["lo"] + 1
    if kind == "choice":
        return len(form["options"])
    if kind == "subset":
        return 2 ** len(form["vocabulary"])
    if kind == "sequence":
        return sequences(len(form["labels"]))
    raise ValueError(f"not an exact form: {kind!r}")


def cells(lo: float, hi: float, tol: float) -> int:
    """Cells of a ``close`` key (``2 * tol`` wide) in ``[lo, hi]``."""
    return math.floor(round((hi - lo) / (2 * tol), 6))


def candidates(n: int, per_entry: int, *, simplex: bool = False, nonzero: int | None = None) -> int:
    """The answers of ``n`` entries of ``per_entry`` cells each that a check tells apart, with at
    most ``nonzero`` entries off the first cell (default: all ``n``).  ``simplex``: a distribution,
    only the cell vectors that add up to the ``per_entry`` cells of [0, 1] (a conservative count:
    worked-out entries add up to 1 only within a few cells)."""
    m = n if nonzero is None else nonzero
    if simplex:   # j non-zero entries: which j, then j positive cells adding up to per_entry
        return sum(math.comb(n, j) * math.comb(per_entry - 1, j - 1) for j in range(1, m + 1))
    return sum(math.comb(n, j) * (per_entry - 1) ** j for j in range(m + 1))


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
    _declare(name, kind="real", lo=0.0, hi=1.0, n=n, simplex=True)
    return values


def real_form(value, *, name: str, hint: str = "", lo: float, hi: float) -> float:
    """``value`` as one finite float from ``lo`` to ``hi``."""
    x = as_float(value, name, hint)
    if not math.isfinite(x) or not lo <= x <= hi:
        fail(f"{name} must be a number from {lo:g} to {hi:g}, got {x!r}", hint)
    _declare(name, kind="real", lo=float(lo), hi=float(hi), n=1)
    return x


def int_form(value, *, name: str, hint: str = "", lo: int, hi: int) -> int:
    """``value`` as a whole number from ``lo`` to ``hi``."""
    v = as_int(value, name, hint)
    if not lo <= v <= hi:
        fail(f"{name} must be a whole number from {lo} to {hi}, got {v}", hint)
    _declare(name, kind="int", lo=int(lo), hi=int(hi))
    return v


def choice_form(value, options, *, name: str, hint: str = "") -> str:
    """``value`` as one of ``options`` (case and surrounding spaces ignored), lower case."""
    got = str(value).strip().lower()
    if got not in [o.lower() for o in options]:
        fail(f"{name} must be {' or '.join(repr(o) for o in options)}, got {value!r}", hint)
    _declare(name, kind="choice", options=list(options))
    return got


def subset_form(value, vocabulary, *, name: str, hint: str = "") -> list:
    """``value`` (strings) as a sorted list of distinct items of ``vocabulary``."""
    items = as_str_set(value, name, hint)
    if not set(items) <= set(vocabulary):
        fail(f"{name} must be taken from {list(vocabulary)}", hint)
    _declare(name, kind="subset", vocabulary=list(vocabulary))
    return items


def sequence_form(value, labels, *, name: str, hint: str = "") -> list:
    """``value`` as an ordered list of distinct ``labels`` (each one stripped)."""
    if isinstance(value, (str, bytes, dict, set)) or value is None or value is Ellipsis:
        fail(f"{name} must be an ordered list of labels", hint)
    try:
        items = [str(x).strip() for x in list(value)]
    except TypeError:
        fail(f"{name} must be an ordered list of labels, got {type(value).__name__}", hint)
    if not set(items) <= set(labels):
        fail(f"{name} must hold the labels {', '.join(repr(x) for x in labels)}", hint)
    if len(set(items)) != len(items):
        fail(f"{name} lists a label twice", hint)
    _declare(name, kind="sequence", labels=list(labels))
    return items


# --- keys and the check -----------------------------------------------------------------------

def digest(name: str, index: int, token: str) -> str:
    salt = f"{SALT}|{name}|{index}".encode("utf-8")
    return hashlib.pbkdf2_hmac("sha256", token.encode("utf-8"), salt,
                               ITERATIONS).hex()[:DIGEST_CHARS]


def _position(x: float, tol: float) -> float:
    # rounding first: 0.752 / 0.004 is 187.99999999999997 in floats, and lands in cell 188
    return round(x / (2 * tol), 6)


def _cell(x: float, tol: float) -> int:
    return math.floor(_position(x, tol))


def _token(cell_numbers) -> str:
    return " ".join(str(c) for c in cell_numbers)


def _nonzero(values, tol: float, lo: float) -> int:
    return sum(_cell(v, tol) != _cell(lo, tol) for v in values)


def key_close(name: str, expected, tol: float, lo: float, hi: float) -> str:
    tol, lo, hi = float(tol), float(lo), float(hi)
    values = [float(v) for v in as_float_list(expected, name)]
    count = candidates(len(values), cells(lo, hi, tol), nonzero=_nonzero(values, tol, lo))
    if count < MIN_VALUES:
        _refuse(name, f"values (cells of width {2 * tol:g}, {len(values)} entries)", count,
                MIN_VALUES)
    return (f"close {tol!r} {lo!r} {hi!r} {len(values)} "
            f"{digest(name, 0, _token(_cell(v, tol) for v in values))}")


def key_probability(name: str, expected, tol: float) -> str:
    """A distribution's key: as ``key_close`` over [0, 1], its space counted on the simplex."""
    tol = float(tol)
    values = [float(v) for v in as_float_list(expected, name)]
    count = candidates(len(values), cells(0.0, 1.0, tol), simplex=True,
                       nonzero=_nonzero(values, tol, 0.0))
    if count < MIN_VALUES:
        _refuse(name, f"distributions (cells of width {2 * tol:g}, {len(values)} entries)", count,
                MIN_VALUES)
    return f"prob {tol!r} {len(values)} {digest(name, 0, _token(_cell(v, tol) for v in values))}"


def key_int(name: str, expected, lo: int, hi: int) -> str:
    count = int(hi) - int(lo) + 1
    if count < MIN_VALUES:
        _refuse(name, "whole numbers", count, MIN_VALUES)
    return f"int {int(lo)} {int(hi)} {digest(name, 0, str(int(expected)))}"


def key_set(name: str, expected, count: int) -> str:
    if count < MIN_VALUES:
        _refuse(name, "possible answers", count, MIN_VALUES)
    canonical = json.dumps(sorted({str(x) for x in expected}))
    return f"set {int(count)} {digest(name, 0, canonical)}"


def _near(x: float, tol: float) -> tuple:
    """The cell of ``x`` and its neighbour on ``x``'s side: the two cells where an expected value
    within ``tol`` of ``x`` can lie."""
    position = _position(x, tol)
    cell = math.floor(position)
    return cell, (cell - 1 if position - cell < 0.5 else cell + 1)


def _matches_close(name: str, got: list, tol: float, wanted: str) -> bool:
    near = [_near(x, tol) for x in got]
    for k in range(len(near) + 1):          # fewest neighbours first: the usual match comes early
        for moved in itertools.combinations(range(len(near)), k):
            cell_numbers = [n[1] if i in moved else n[0] for i, n in enumerate(near)]
            if digest(name, 0, _token(cell_numbers)) == wanted:
                return True
    return False


def key_space(name: str, key: str) -> int:
    """The size of the answer space a key stands for (every entry counted as non-zero: the most
    the key's text allows); raises ``SmallAnswerSpace`` naming ``name`` when it is below the
    threshold."""
    kind, *parts = str(key).split()
    if kind == "close":
        tol, lo, hi, n = float(parts[0]), float(parts[1]), float(parts[2]), int(parts[3])
        count = candidates(n, cells(lo, hi, tol))
        what = f"values (cells of width {2 * tol:g}, {n} entries)"
    elif kind == "prob":
        tol, n = float(parts[0]), int(parts[1])
        count = candidates(n, cells(0.0, 1.0, tol), simplex=True)
        what = f"distributions (cells of width {2 * tol:g}, {n} entries)"
    elif kind == "int":
        count, what = int(parts[1]) - int(parts[0]) + 1, "whole numbers"
    elif kind == "set":
        count, what = int(parts[0]), "possible answers"
    else:
        raise ValueError(f"unknown answer key kind {kind!r} for {name!r}")
    if count < MIN_VALUES:
        _refuse(name, what, count, MIN_VALUES)
    return count


def _verdict(name: str, value, key: str, hint: str) -> bool:
    """True when ``value`` matches ``key``; raises ``SmallAnswerSpace`` for a key below the
    threshold and AssertionError for an answer of the wrong form."""
    key_space(name, key)
    kind, *parts = str(key).split()
    if kind in ("close", "prob"):
        tol, n, wanted = (float(parts[0]), *((int(parts[3]), parts[4]) if kind == "close"
                                             else (int(parts[1]), parts[2])))
        got = as_float_list(value, name, hint)
        if len(got) != n:
            fail(f"{name} has {len(got)} values, expected {n}", hint)
        return all(math.isfinite(x) for x in got) and _matches_close(name, got, tol, wanted)
    if kind == "int":
        return digest(name, 0, str(as_int(value, name, hint))) == parts[2]
    return digest(name, 0, json.dumps(as_str_set(value, name, hint))) == parts[1]


def _not_yet(name: str, key: str) -> str:
    kind, *parts = str(key).split()
    if kind not in ("close", "prob"):
        return f"{name}: not yet right"
    tol, n = float(parts[0]), int(parts[3] if kind == "close" else parts[1])
    what = "every entry within" if n > 1 else "answers within"
    return f"{name}: not yet right; {what} {tol:g} of the exact value count"


def _key(name: str, keys: dict) -> str:
    if name not in keys:
        raise KeyError(f"no answer key for {name!r} in this cell (keys: {sorted(keys)}); "
                       "regenerate them with `python -m lreact.answercheck`")
    return keys[name]


def check(name: str, value, keys: dict, *, hint: str = "") -> str:
    """``"<name>: right"`` when ``value`` matches the answer key ``keys[name]``; otherwise an
    AssertionError saying "not yet" and what to re-check (never the expected value)."""
    key = _key(name, keys)
    if not _verdict(name, value, key, hint):
        fail(_not_yet(name, key), hint)
    return f"{name}: right"


def check_either(name: str, value, keys: dict, *, hint: str = "") -> str:
    """``check`` against every key ``"<name> (<reading>)"`` of the cell (an answer graded in the
    reading the student chose in another part): which reading ``value`` is right for, without
    reading that other part."""
    readings = [k for k in keys if k.startswith(f"{name} (") and k.endswith(")")]
    if not readings:
        raise KeyError(f"no answer key for {name!r} (...) in this cell (keys: {sorted(keys)}); "
                       "regenerate them with `python -m lreact.answercheck`")
    for reading in readings:
        if _verdict(reading, value, keys[reading], hint):
            return f"{reading}: right"
    options = " or ".join(repr(r[len(name) + 2:-1]) for r in readings)
    fail(f"{_not_yet(name, keys[readings[0]])}, whether worked out {options}", hint)


# --- making the keys from the source notebook (instructor side) ------------------------------

class _Record:
    def __init__(self):
        self.seen, self.forms = [], {}


@contextlib.contextmanager
def _recorded(strict: bool):
    """Record the hidden assertions (kind, name, expected, tol) and the declared forms of the
    cells run inside; ``strict``: and run the assertions (else they pass, so that every assertion
    of the cell is recorded)."""
    import importlib
    module = importlib.import_module("lreact.answercheck")  # also when run as __main__
    record, originals = _Record(), {}

    def wrap(fname, kind):
        original = getattr(checks, fname)
        originals[fname] = original

        def recorder(actual, expected, *args, **kwargs):
            record.seen.append((kind, kwargs.get("name"), expected, kwargs.get("tol")))
            return original(actual, expected, *args, **kwargs) if strict else None
        setattr(checks, fname, recorder)

    for fname, kind in [("assert_close", "close"), ("assert_int_equal", "int"),
                        ("assert_same_set", "set")]:
        wrap(fname, kind)
    real = module.check, module.check_either, module._DECLARED
    module.check = lambda name, value, keys, hint="": f"{name}: (not checked)"
    module.check_either = lambda name, value, keys, hint="": f"{name}: (not checked)"
    module._DECLARED = record.forms
    try:
        yield record
    finally:
        module.check, module.check_either, module._DECLARED = real
        for fname, original in originals.items():
            setattr(checks, fname, original)


def _run(source, namespace, label, *, must_pass) -> _Record:
    with _recorded(must_pass) as record, contextlib.redirect_stdout(io.StringIO()), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(compile(source, label, "exec"), namespace)  # noqa: S102 - the course's notebook
        except AssertionError:
            if must_pass:
                raise
    return record


def _form_of(name: str, forms: dict):
    """The form declared for ``name``, or for the name before its reading (``"n (b)"``: ``n``)."""
    return forms.get(name) or forms.get(name.split(" (")[0])


def space(form: dict, tol=None, expected=None) -> tuple:
    """``(count, large)``: the answers of ``form`` that a check tells apart (``candidates``; for a
    number, with as many non-zero entries as ``expected`` has) and whether a key is allowed."""
    if form["kind"] == "real":
        tol = 1e-6 if tol is None else tol
        nonzero = None
        if expected is not None:
            nonzero = _nonzero(as_float_list(expected, "expected"), tol, form["lo"])
        count = candidates(form["n"], cells(form["lo"], form["hi"], tol),
                           simplex=form.get("simplex", False), nonzero=nonzero)
    else:
        count = form_count(form)
    return count, count >= MIN_VALUES


def _key_of(kind, name, expected, tol, form, label):
    if form is None:
        raise ValueError(f"{label}: no form declared for {name!r} (a key needs the answer's "
                         "space: probability_form, real_form, int_form, ...)")
    if kind == "close":
        if form["kind"] != "real":
            raise ValueError(f"{label}: {name!r} is checked within a tolerance but its form is "
                             f"{form['kind']!r}")
        tol = 1e-6 if tol is None else tol
        if form.get("simplex"):
            return key_probability(name, expected, tol)
        return key_close(name, expected, tol, form["lo"], form["hi"])
    if form["kind"] == "real":
        raise ValueError(f"{label}: {name!r} has a number's form but an exact assertion")
    if kind == "int":
        if form["kind"] != "int":
            raise ValueError(f"{label}: {name!r} is a whole number but its form is "
                             f"{form['kind']!r}")
        return key_int(name, expected, form["lo"], form["hi"])
    return key_set(name, expected, form_count(form))


def survey(nb) -> tuple:
    """``(keys, spaces)`` of a source notebook: ``keys`` = {test cell id: {name: key}} for every
    test cell with a ``_key = {...}`` block, from its hidden assertions run on the solutions (and
    on each ``# answer key also for: NAME = VALUE`` line of the cell, and each value of a
    ``# each reading: NAME in (VALUE, ...)`` line: the same cell again with that answer, for credit
    carried forward; the second form names every reading alike, so it does not tell which one the
    solution takes); ``spaces`` =
    {test cell id: {name: (count, large)}} for every hidden assertion of every test cell whose
    answer declares a form, in every reading.  Raises ``SmallAnswerSpace`` for a key asked for a
    small space."""
    namespace, keys, spaces = {"__name__": "__main__"}, {}, {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        test = bool(meta.get("grade") and not meta.get("solution"))
        keyed = test and bool(KEY_BLOCK.search(cell.source))
        readings = [(var, ast.literal_eval(literal))
                    for var, literal in VARIANT.findall(cell.source)] + [
            (var, value) for var, literal in READINGS.findall(cell.source)
            for value in ast.literal_eval(literal)]
        runs = [(namespace, True)] + [({**namespace, var: value}, False)
                                      for var, value in (readings if test else [])]
        for ns, must_pass in runs:
            record = _run(cell.source, ns, cell.id, must_pass=must_pass)
            for kind, name, expected, tol in record.seen if test else []:
                form = _form_of(name, record.forms) if name else None
                if form is not None:
                    spaces.setdefault(cell.id, {})[name] = space(form, tol, expected)
                if not keyed:
                    continue
                if not name:
                    raise ValueError(f"{cell.id}: a hidden assertion without name= (the key "
                                     "needs the name the visible check uses)")
                key = _key_of(kind, name, expected, tol, form, cell.id)
                if keys.setdefault(cell.id, {}).setdefault(name, key) != key:
                    raise ValueError(f"{cell.id}: two different expected values for {name!r}")
    return keys, spaces


def answer_keys(nb) -> dict:
    """{test cell id: {name: key}} (``survey``)."""
    return survey(nb)[0]


def answer_spaces(nb) -> dict:
    """{test cell id: {name: (count, large)}} (``survey``)."""
    return survey(nb)[1]


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
