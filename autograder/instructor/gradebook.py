"""nbgrader's gradebook as the home of every grade: autograded scores in, hand grades out.

``grade`` records, through ``nbgrader.api.Gradebook`` (``gradebook.db`` of the course folder,
where its ``nbgrader_config.py`` is, the repository root by default):
- each assignment's graded cells (nbgrader's own ``ClearSolutions``, ``ComputeChecksums`` and
  ``SaveCells`` preprocessors, as ``generate_assignment`` does);
- each student and submission, with the autograded score of every test cell;
- the graded notebook at nbgrader's ``autograded/<student>/<assignment>/<notebook>.ipynb``, the
  copy formgrader shows, with the mark scheme (the model answer from ``solutions/``) in an
  instructor-only cell under every hand-graded answer; what the student wrote in it is inert
  (``formgrade_inert``: markdown that is not plain is shown as text, outputs are plain).

The instructor then scores and comments the hand-graded cells in formgrader (and may correct
an autograded score there: a manual score overrides the automatic one, as in nbgrader).
``read`` gives every cell's score back, so the CSV and the feedback carry every point.

Re-grading a changed submission keeps every manual score; where the answer it was given for
changed (compared with the previous autograded copy), the cell is flagged again as needing a
manual grade (``needs_manual_grade``), so formgrader and the CSV list it until it is checked.
An answer cell left exactly as released counts 0 without hand grading, as nbgrader does.

A submission nobody graded (a duplicate upload, a bad zip, ...: ``reasons.graded``) is not
recorded: no student, submission or score is added for it. If an earlier run graded it, its
autograded scores are withdrawn (``withdraw``), so that nothing stands as its grade now.
"""
from __future__ import annotations

import datetime
import os
import sys
from pathlib import Path

import nbformat

from ..cells import (  # noqa: F401
    MARK_SCHEME_BEGIN,
    MARK_SCHEME_END,
    grade_id,
    is_answer,
    is_autograded_test,
    is_manual,
    load,
    mark_scheme_text,
    points,
    stub_source,
)
from .formgrade_inert import inert_notebook


def ensure_tools_on_path() -> None:
    """nbgrader's gradebook runs the ``alembic`` command of this environment: put its
    ``bin/`` first on PATH (nbgrader fails with FileNotFoundError: 'alembic' otherwise)."""
    here = str(Path(sys.executable).parent)
    parts = os.environ.get("PATH", "").split(os.pathsep)
    if here not in parts:
        os.environ["PATH"] = os.pathsep.join([here, *[p for p in parts if p]])


def course_config(root: Path):
    """The traitlets Config of the course folder (its ``nbgrader_config.py``, if any)."""
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader
    root = Path(root).resolve()
    if not (root / "nbgrader_config.py").exists():
        cfg = Config()
        cfg.CourseDirectory.root = str(root)
        return cfg
    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    if "root" not in cfg.CourseDirectory:
        cfg.CourseDirectory.root = str(root)
    return cfg


def released_notebook(source_nb) -> nbformat.NotebookNode:
    """The source notebook with every answer as released (hidden tests still in it)."""
    nb = load(source_nb)
    for cell in nb.cells:
        if is_answer(cell):
            cell.source = stub_source(cell)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def answers_of(nb) -> dict:
    """{grade_id: source} of every answer cell of a notebook."""
    return {grade_id(c): c.source for c in nb.cells if is_answer(c)}


class CourseGradebook:
    """The gradebook of one course folder (see the module docstring)."""

    def __init__(self, root: Path):
        ensure_tools_on_path()
        self.config = course_config(root)
        from nbgrader.coursedir import CourseDirectory
        self.coursedir = CourseDirectory(config=self.config)
        self.root = Path(self.coursedir.root)
        self.db_url = self.coursedir.db_url
        self.course_id = self.coursedir.course_id
        self._synced: dict = {}

    def open(self):
        from nbgrader.api import Gradebook
        return Gradebook(self.db_url, self.course_id)

    @property
    def db_path(self) -> Path | None:
        prefix = "sqlite:///"
        return Path(self.db_url[len(prefix):]) if self.db_url.startswith(prefix) else None

    def autograded_path(self, student: str, assignment: str, notebook: str) -> Path:
        folder = self.coursedir.format_path(self.coursedir.autograded_directory, student,
                                            assignment)
        return Path(folder) / f"{notebook}.ipynb"

    def submitted_path(self, student: str, assignment: str, notebook: str) -> Path:
        folder = self.coursedir.format_path(self.coursedir.submitted_directory, student,
                                            assignment)
        return Path(folder) / f"{notebook}.ipynb"

    # --- assignments -------------------------------------------------------------------

    def sync_assignment(self, assignment: str, source: Path) -> None:
        """Record the assignment's notebook and graded cells (nbgrader's SaveCells)."""
        if assignment in self._synced:
            return
        from nbgrader.preprocessors import ComputeChecksums, SaveCells
        nb = load(source)
        released = released_notebook(nb)
        resources = {"nbgrader": {"notebook": Path(source).stem, "assignment": assignment,
                                  "db_url": self.db_url}}
        with self.open() as gb:
            gb.update_or_create_assignment(assignment)
        checked, resources = ComputeChecksums(config=self.config).preprocess(
            load(released), resources)
        try:
            SaveCells(config=self.config).preprocess(checked, resources)
        except RuntimeError as e:
            raise RuntimeError(
                f"the gradebook {self.db_url} already holds submissions of {assignment} whose "
                f"graded cells differ from {source} ({e}); grade with the notebook they were "
                f"graded with, or move the gradebook away to start a new one") from e
        self._synced[assignment] = {
            "notebook": Path(source).stem,
            "stubs": answers_of(released),
            "released": released,
            "schemes": {grade_id(c): c.source for c in nb.cells if is_manual(c)
                        and is_answer(c)},
            "by_hand": frozenset(grade_id(c) for c in nb.cells if is_manual(c)),
            "trusted": frozenset(c.source for c in nb.cells if c.cell_type == "markdown"),
        }

    # --- submissions -------------------------------------------------------------------

    def record(self, record: dict, source: Path, graded_nb=None) -> list[str]:
        """Store one graded submission (a ``grade.grade_one`` record) and the notebook
        formgrader shows (``graded_nb``; the released notebook when nothing could be run);
        return the grade ids whose manual score was kept although the answer changed."""
        import warnings

        from nbgrader.api import MissingEntry
        aid, student = record["assignment"], record["student"]
        self.sync_assignment(aid, source)
        info = self._synced[aid]
        if graded_nb is None:
            graded_nb = info["released"]
        nbname = info["notebook"]
        dest = self.autograded_path(student, aid, nbname)
        answers = answers_of(graded_nb)
        safe = self._inert(graded_nb, info)   # what the autograded/ copy holds
        shown = answers_of(safe)
        previous = None
        if dest.exists():
            try:
                previous = answers_of(nbformat.read(dest, as_version=4))
            except Exception:  # noqa: BLE001 - an unreadable old copy: treat all as changed
                previous = {}
        changed = set() if previous is None else {
            g for g in answers if previous.get(g) not in (answers[g], shown[g])}
        flagged = []
        now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        with self.open() as gb:
            gb.update_or_create_student(student)
            try:
                submission = gb.find_submission(aid, student)
                if changed:
                    submission.timestamp = now
            except MissingEntry:
                with warnings.catch_warnings():
                    # SQLAlchemy's autoflush notes from inside nbgrader's add_submission
                    warnings.simplefilter("ignore")
                    gb.add_submission(aid, student, timestamp=now)
            snb = gb.find_submission_notebook(nbname, aid, student)
            for grade in snb.grades:
                gid = grade.name
                if gid in record["manual"]:
                    answer = answers.get(gid)
                    unanswered = answer is None or answer == info["stubs"].get(gid)
                    if grade.manual_score is not None:
                        if gid in changed:
                            grade.needs_manual_grade = True
                            flagged.append(gid)
                    else:
                        grade.auto_score = 0.0 if unanswered else None
                        grade.needs_manual_grade = not unanswered
                else:
                    got = record["scores"].get(gid, (0.0, grade.max_score))[0]
                    grade.auto_score = float(got)
                    if grade.manual_score is not None:
                        # an instructor's correction: kept, re-checked if any answer changed
                        if changed:
                            grade.needs_manual_grade = True
                            flagged.append(gid)
                    else:
                        grade.needs_manual_grade = False
            gb.db.commit()
        self._write_autograded(dest, safe, info["schemes"])
        self._write_submitted(record, nbname, now if changed or previous is None else None)
        return flagged

    def withdraw(self, assignment: str, student: str, source: Path) -> bool:
        """What an earlier run recorded for a submission that nobody graded now (a second
        upload appeared, its zip broke, ...): every autograded score is removed (None, not 0),
        so that neither grades.csv nor an export shows a grade for it. Hand grades stay, for
        when it is graded again; the autograded/ copy stays, so a changed answer is flagged
        then. Nothing is added for a submission the gradebook does not hold. True when
        something was withdrawn."""
        from nbgrader.api import MissingEntry
        self.sync_assignment(assignment, source)
        info = self._synced[assignment]
        withdrawn = False
        with self.open() as gb:
            try:
                snb = gb.find_submission_notebook(info["notebook"], assignment, student)
            except MissingEntry:
                return False
            for grade in snb.grades:
                if grade.name not in info["by_hand"] and grade.auto_score is not None:
                    grade.auto_score, withdrawn = None, True
            gb.db.commit()
        return withdrawn

    def _write_submitted(self, record: dict, nbname: str, when) -> None:
        """nbgrader's ``submitted/<student>/<assignment>/``: the notebook as handed in and its
        ``timestamp.txt`` (formgrader counts submissions there; ``nbgrader autograde`` reads
        it)."""
        theirs = record.get("submitted")
        if not theirs or not Path(theirs).is_file():
            return
        dest = self.submitted_path(record["student"], record["assignment"], nbname)
        dest.parent.mkdir(parents=True, exist_ok=True)
        body = Path(theirs).read_bytes()
        if not dest.exists() or dest.read_bytes() != body:
            dest.write_bytes(body)
        stamp = dest.parent / "timestamp.txt"
        if when is not None or not stamp.exists():
            when = when or datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
            stamp.write_text(when.strftime("%Y-%m-%d %H:%M:%S.%f UTC"), encoding="utf-8")

    @staticmethod
    def _inert(graded_nb, info: dict):
        """The graded notebook as formgrader may show it: the student's text inert."""
        return inert_notebook(load(graded_nb), info["trusted"])

    def _write_autograded(self, dest: Path, nb, schemes: dict) -> None:
        cells = []
        for cell in nb.cells:
            cells.append(cell)
            gid = grade_id(cell)
            if gid in schemes:
                cells.append(nbformat.v4.new_markdown_cell(
                    mark_scheme_text(gid, schemes[gid]), id=f"mark-scheme-{gid}"[:64],
                    metadata={"lreact": {"mark_scheme": gid}}))
        nb.cells = cells
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + ".tmp")
        nbformat.write(nb, tmp)
        tmp.replace(dest)

    def read(self, assignment: str, student: str) -> dict:
        """{grade_id: {score, max, auto, manual, needs_manual_grade, comment, by_hand}} of one
        submission (``by_hand``: a cell graded by hand, not by a test); {} when the gradebook
        has none."""
        from nbgrader.api import MissingEntry
        info = self._synced.get(assignment)
        if info is None:
            return {}
        with self.open() as gb:
            try:
                snb = gb.find_submission_notebook(info["notebook"], assignment, student)
            except MissingEntry:
                return {}
            comments = {c.name: c.manual_comment for c in snb.comments if c.manual_comment}
            out = {}
            for g in snb.grades:
                out[g.name] = {"score": float(g.score or 0.0), "max": float(g.max_score),
                               "auto": g.auto_score, "manual": g.manual_score,
                               "needs_manual_grade": bool(g.needs_manual_grade),
                               "comment": comments.get(g.name, ""),
                               "by_hand": g.name in info["by_hand"]}
            for name, text in comments.items():
                out.setdefault(name, {"comment": text})
            return out
