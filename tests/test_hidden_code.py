"""What ``autograder/instructor/hidden_code.py`` flags: answers that bring code they do not show
(issue 28, outside red team: a blob read back from the student edition's compiled modules).
A flag is for the instructor; no honest answer of this course is flagged."""
import base64
import marshal
from pathlib import Path

import nbformat
import pytest

from autograder.cells import is_answer
from autograder.instructor.hidden_code import findings

ROOT = Path(__file__).resolve().parent.parent
BLOB = base64.b64encode(marshal.dumps(compile("def f(x):\n    return x * 2\n", "x", "exec"))).decode()


@pytest.mark.parametrize("source, words", [
    (f"import marshal, base64, types\nf = types.FunctionType(marshal.loads(base64.b64decode({BLOB!r})), {{}})\n",
     ["marshal", "CodeType" if False else "FunctionType", "encoded payload"]),
    ("def f(x):\n    return x\nf.__code__ = g.__code__\n", ["__code__"]),
    ("def f(x):\n    return x\nsetattr(f, '__code__', g)\n", ["__code__", "named in a string"]),
    ("import ctypes\nctypes.pythonapi.PyMarshal_ReadObjectFromString\n", ["ctypes", "pythonapi"]),
    ("import subprocess\ndef f(x):\n    return subprocess.check_output(['python'])\n", ["subprocess"]),
    ("import os\ndef f(x):\n    os.system('python -c 1')\n", ["os.system"]),
    ("DATA = bytes(" + repr(list(range(200))) + ")\n", ["200 whole numbers"]),
    ("DATA = " + repr(bytes(range(200))) + "\n", ["bytes literal of 200 bytes"]),
    ("PARTS = [" + ", ".join(repr((BLOB * 3)[i:i + 40]) for i in range(0, 480, 40)) + "]\n",
     ["encoded strings of 480 characters"]),
    ("%time x = 1\nimport marshal\n", ["marshal"]),     # a magic does not hide it
])
def test_what_brings_code_it_does_not_show_is_named(source, words):
    said = " | ".join(findings(source))
    for w in words:
        assert w in said, (w, said)


@pytest.mark.parametrize("source", [
    "def f(x):\n    return 2 * x\n",
    "import numpy as np\ndef softmax(z):\n    e = np.exp(np.asarray(z) - np.max(z))\n    return e / e.sum()\n",
    "EXPLAIN = 'a long explanation in words, ' * 20\n",
    "import os\npath = os.path.join('a', 'b')\n",
    "import json\ndef f(s):\n    return json.loads(s)\n",
    "!pip list\n",
])
def test_plain_answers_are_not_flagged(source):
    assert findings(source) == []


def _answer_cells():
    for nb_path in sorted((ROOT / "solutions").rglob("*.ipynb")) + \
            sorted((ROOT / "exercises").rglob("*.ipynb")):
        nb = nbformat.read(nb_path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code" and is_answer(cell):
                yield nb_path.name, cell.metadata["nbgrader"]["grade_id"], cell.source


def test_no_model_answer_or_right_answer_of_the_course_is_flagged():
    from autograder.proofs import catalogue
    seen = 0
    for name, gid, source in _answer_cells():
        assert findings(source) == [], (name, gid)
        seen += 1
    assert seen >= 40
    right = ROOT / "autograder" / "proofs" / "right_answers"
    for f in sorted(right.rglob("*.py")):
        assert findings(f.read_text(encoding="utf-8")) == [], f.name
