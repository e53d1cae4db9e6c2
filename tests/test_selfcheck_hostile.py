"""Selfcheck: a class of honest students and every hostile entry, graded together.

Each ``autograder/proofs/hostile/<name>.py`` is one answer cell (first line ``# HOSTILE: <assignment>
<grade_id>: <what it does>``) put into an otherwise unchanged student version.  The class also
holds, for every assignment, three honest students (full marks, the stub, every other answer
right), first graded alone.  Promises checked: every hostile submission scores 0; every honest
grade equals its graded-alone grade; no hidden test line and no "LEAK" reaches a feedback
notebook; no protected file is changed; nothing connects to the grader's listener.
"""
import json
import time
from pathlib import Path

import nbformat
import pytest

from autograder import cells, paths
from autograder.sandbox import launch as sandbox
from autograder.proofs import selfcheck
from autograder.instructor.grade import grade_all
from autograder.instructor.release import generate
import proof_support

pytestmark = [pytest.mark.selfcheck, pytest.mark.slow]
ENTRIES = [e for e in selfcheck.hostile_entries() if e[1] in selfcheck.assignments()]


def _write(path: Path, nb) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.from_dict(nb), path)


def _honest(aid):
    src = cells.load(paths.source_path(aid))
    stub = nbformat.reads(generate(paths.source_path(aid)), as_version=4)
    half = cells.load(src)
    for c in [c for c in half.cells if cells.is_answer(c)][1::2]:
        c.source = cells.stub(c).source
    return {"honest_full": src, "honest_stub": stub, "honest_half": half}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if not sandbox.bwrap_works():
        pytest.fail("the hostile class needs bubblewrap (hostile code must never run "
                    "unconfined): " + sandbox.describe())
    tmp = tmp_path_factory.mktemp("hostile")
    state = proof_support.state_folder(tmp / "state")
    klass, alone = tmp / "class", tmp / "alone"
    aids = sorted({e[1] for e in ENTRIES})
    honest = {}
    for aid in aids:
        for student, nb in _honest(aid).items():
            honest[(student, aid)] = nb
            _write(alone / student / aid / f"{aid}.ipynb", nb)
            _write(klass / student / aid / f"{aid}.ipynb", nb)
    stubs = {aid: honest[("honest_stub", aid)] for aid in aids}
    for name, aid, gid, text in ENTRIES:
        _write(klass / f"hostile_{name}" / aid / f"{aid}.ipynb",
               cells.replace_cell(stubs[aid], gid, text))
    options = dict(jobs=proof_support.jobs(), timeout=proof_support.HOSTILE_TIMEOUT, sandbox="require",
                   progress=False, cache=False)
    t0 = time.monotonic()
    alone_records, _ = grade_all(alone, state=paths.State(state.root / "alone"), **options)
    alone_took = time.monotonic() - t0
    protected = [klass, paths.ROOT / "solutions", paths.ROOT / "autograder",
                 paths.STATE_DIR / "cache"]
    before = proof_support.digest_tree(*protected)
    gradebook = paths.ROOT / "gradebook.db"
    gradebook_before = gradebook.stat().st_mtime if gradebook.exists() else None
    listener = proof_support.Listener()
    t0 = time.monotonic()
    records, _ = grade_all(klass, out=tmp / "grades.csv", state=paths.State(state.root / "class"),
                           **options)
    took = time.monotonic() - t0
    listener.close()
    after = proof_support.digest_tree(*protected)
    summary = {"alone_seconds": round(alone_took), "class_seconds": round(took),
               "records": [{k: r[k] for k in ("student", "assignment", "total", "possible",
                                              "failure")} for r in records]}
    state.root.mkdir(parents=True, exist_ok=True)
    (state.root / "hostile-class.json").write_text(json.dumps(summary, indent=1))
    print(f"\nhostile class: {len(records)} submissions in {took:.0f} s "
          f"(honest alone: {alone_took:.0f} s); summary in {state.root / 'hostile-class.json'}")
    for r in records:
        print(f"  {r['student']:34} {r['assignment']:26} {r['total']:5g}/{r['possible']:g}  "
              f"{str(r['failure'] or '')[:70]}")
    return {"alone": {(r["student"], r["assignment"]): r for r in alone_records},
            "class": {(r["student"], r["assignment"]): r for r in records},
            "changed": sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k)),
            "gradebook": (gradebook_before, gradebook.stat().st_mtime if gradebook.exists()
                          else None),
            "listener": listener, "aids": aids}


@pytest.mark.parametrize("name", [e[0] for e in ENTRIES])
def test_hostile_submission_scores_zero_and_leaks_nothing(graded, name):
    aid = next(e[1] for e in ENTRIES if e[0] == name)
    r = graded["class"][(f"hostile_{name}", aid)]
    assert r["total"] == 0, f"{name} got {r['total']:g}/{r['possible']:g}: {r['scores']}"
    text = proof_support.outputs_text(r.get("executed"))
    # a report the entry printed (every one starts a line with LEAK); an interrupted entry's
    # traceback may quote its own print("LEAK ...") source line, which is not a leak
    leaks = [ln for ln in text.splitlines() if ln.startswith("LEAK")]
    assert not leaks, leaks[:3]
    whole = json.dumps(r.get("executed"))
    student = nbformat.reads(generate(paths.source_path(aid)), as_version=4)
    shown = "\n".join([c.source for c in student.cells] + [e[3] for e in ENTRIES])
    leaked = [ln for ln in proof_support.hidden_lines(cells.load(paths.source_path(aid)), shown)
              if json.dumps(ln)[1:-1] in whole]
    assert not leaked, f"hidden tests in the feedback notebook: {leaked[:2]}"


def test_honest_students_graded_alone_get_what_they_earned(graded):
    for (student, aid), r in graded["alone"].items():
        if student == "honest_full":
            assert r["total"] == r["possible"], (aid, r["failure"], r["errors"])
        if student == "honest_stub":
            assert r["total"] == 0, (aid, r["scores"])


def test_honest_grades_in_the_class_equal_their_grades_alone(graded):
    for key, alone in graded["alone"].items():
        assert graded["class"][key]["scores"] == alone["scores"], key


def test_no_protected_file_changed_and_no_connection_reached_the_grader(graded):
    assert not graded["changed"], graded["changed"][:5]
    before, after = graded["gradebook"]
    assert before == after, "the repository's gradebook was created or touched"
    assert graded["listener"].ok and graded["listener"].hits == 0
