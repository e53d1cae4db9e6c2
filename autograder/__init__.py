"""The instructor's tool for this unit's nbgrader workflow: ``python -m autograder <command>``.

Commands: release, grade, feedback, selfcheck (see ``autograder/README.md``).
The grading engine other code uses: ``from autograder.run.engine import grade_notebook, replace_cell``.
"""
