"""`python -m autograder grade`: layouts, zips (safely), CSV, cache, malformed notebooks."""
import csv
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.engine import load, replace_cell  # noqa: E402
from autograder.release import generate  # noqa: E402
from autograder.submissions import assignments, discover, extract_zip  # noqa: E402

FIX = ROOT / "tests" / "fixtures" / "autograder"
TINY = FIX / "solutions" / "tiny" / "tiny.ipynb"


def _class(folder: Path) -> None:
    (folder / "alice" / "tiny").mkdir(parents=True)
    nbformat.write(load(TINY), folder / "alice" / "tiny" / "tiny.ipynb")
    (folder / "bob" / "tiny").mkdir(parents=True)
    (folder / "bob" / "tiny" / "tiny.ipynb").write_text(generate(TINY))
    wrong = replace_cell(load(TINY), "halve", "def halve(x):\n    return x // 2\n")
    with zipfile.ZipFile(folder / "carol_1234_attempt.zip", "w") as zf:
        zf.writestr("submission/tiny.ipynb", nbformat.writes(wrong))
    (folder / "dave_tiny.ipynb").write_text("{ this is not json")
    with zipfile.ZipFile(folder / "mallory.zip", "w") as zf:
        zf.writestr("../../escape/tiny.ipynb", nbformat.writes(load(TINY)))


@pytest.mark.slow
def test_grade_command_writes_the_grade_sheet_and_caches(tmp_path):
    subs, state, out = tmp_path / "subs", tmp_path / "state", tmp_path / "grades.csv"
    _class(subs)
    cmd = [sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(out),
           "--jobs", "2", "--timeout", "20", "--root", str(FIX), "--state", str(state)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = list(csv.reader(out.open()))
    assert rows[0] == ["student", "assignment", "test_double", "test_double__array",
                       "test_halve", "total", "needs_manual_grade"]
    by = {r[0]: r for r in rows[1:]}
    assert by["alice"][2:] == ["2", "1", "1", "4", "true"]
    assert by["bob"][2:6] == ["0", "0", "0", "0"]
    assert by["carol"][2:6] == ["2", "1", "0", "3"]
    assert by["dave"][2:6] == ["0", "0", "0", "0"]
    assert by["mallory"][2:6] == ["0", "0", "0", "0"]
    assert "dave / tiny" in done.stdout and "invalid notebook" in done.stdout
    assert "mallory / tiny" in done.stdout and "unsafe path" in done.stdout
    assert not (tmp_path / "escape").exists()
    first = out.read_bytes()
    again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert "(5 from the cache)" in again.stdout
    assert out.read_bytes() == first


def test_discover_reads_nbgrader_folders_zips_and_loose_files(tmp_path):
    subs = tmp_path / "subs"
    _class(subs)
    found = discover(subs, assignments(FIX), tmp_path / "staging")
    assert [(s.student, s.assignment) for s in found] == [
        ("alice", "tiny"), ("bob", "tiny"), ("carol", "tiny"), ("dave", "tiny"),
        ("mallory", "tiny")]
    assert found[4].notebook is None and "unsafe path" in found[4].problem


def test_extract_zip_refuses_links_and_oversized_members(tmp_path):
    z = tmp_path / "x.zip"
    with zipfile.ZipFile(z, "w") as zf:
        info = zipfile.ZipInfo("link.ipynb")
        info.external_attr = (0o120777 << 16)
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(ValueError, match="link"):
        extract_zip(z, tmp_path / "out")
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("/abs/tiny.ipynb", "{}")
    with pytest.raises(ValueError, match="unsafe"):
        extract_zip(z, tmp_path / "out2")
