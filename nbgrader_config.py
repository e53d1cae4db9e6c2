"""nbgrader's configuration of this course: the repository root is the course folder.

Stock nbgrader commands run from here with no extra flags (`nbgrader generate_assignment
lecture-ReAct-lab`, `nbgrader export`, ...), and formgrader opened in JupyterLab at the root
(`make formgrader`) finds the course: the sources in solutions/, the gradebook in
./gradebook.db (written by `python -m autograder grade`), the graded notebooks in autograded/.
The unit's shared settings are in autograder/nbgrader_config.py.
"""
import os
import sys

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor, Preprocessor
from nbgrader.preprocessors import ClearHiddenTests, ClearMarkScheme, GetGrades

c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file
HERE = os.path.dirname(os.path.abspath(__file__))

load_subconfig(os.path.join(HERE, "autograder", "nbgrader_config.py"))  # noqa: F821
c.CourseDirectory.root = HERE

# nbgrader's gradebook runs this environment's `alembic`: make it findable without activating
# the environment.
_bin = os.path.dirname(sys.executable)
if _bin not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = os.pathsep.join(p for p in (_bin, os.environ.get("PATH")) if p)


class DropInstructorOnly(Preprocessor):
    """Removes what `grade` adds for the instructor (the mark-scheme cells of autograded/
    notebooks) and clears the outputs of test cells: a traceback quotes the hidden lines."""

    def preprocess(self, nb, resources):
        nb.cells = [c for c in nb.cells
                    if not (c.get("metadata", {}).get("lreact", {}) or {}).get("mark_scheme")]
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        meta = cell.get("metadata", {}).get("nbgrader", {}) or {}
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            cell.outputs = []
        return cell, resources


# `nbgrader generate_feedback` (upstream puts the hidden tests into the students' HTML, nbgrader
# issue #1363): remove hidden tests, mark schemes (the ones `grade` adds to autograded/
# notebooks under each hand-graded answer) and test outputs. The unit's documented feedback is
# `python -m autograder feedback`, which also leaves out solutions and typesets maths offline.
c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, ClearMarkScheme,
                                    DropInstructorOnly, CSSHTMLHeaderPreprocessor]
c.ClearMarkScheme.enforce_metadata = False

# formgrader renders autograded/ notebooks with an HTMLExporter built from this config
# (nbgrader/server_extensions/formgrader/formgrader.py:86) and a template that never sanitises
# markdown: student text is made inert there again as each page is rendered, as `grade` makes
# it inert in the copy it writes (autograder/instructor/formgrade_inert.py; autograder/README.md, "Hand
# grading"). Without this unit's autograder package (a bare copy of this file) only the copy is.
if HERE not in sys.path:
    sys.path.append(HERE)
try:
    from autograder.instructor.formgrade_inert import InertStudentWork
except ImportError:
    pass
else:
    c.HTMLExporter.preprocessors = [InertStudentWork]

# `nbgrader export` writes the grade sheet through the unit's CSV writer, so that no student id
# or name becomes a spreadsheet formula (OWASP's CSV injection rule; autograder/instructor/safecsv.py).
try:
    from autograder.instructor.safecsv import SafeCsvExportPlugin  # noqa: F401
except ImportError:
    pass
else:
    c.ExportApp.plugin_class = "autograder.instructor.safecsv.SafeCsvExportPlugin"

