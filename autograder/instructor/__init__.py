"""The instructor's side: from an LMS download to the grade sheet, the gradebook and the LMS.

- ``submissions``  folders, zips, several uploads of one student; ``lms``: whose upload it is
- ``grade``        the class: grade each submission (or take it from the cache), the CSV
- ``reasons``      the CSV's ``reason`` column, and which rows were not graded
- ``hidden_code``  answers that bring code they do not show (a flag beside ``looks copied``)
- ``gradebook``    nbgrader's gradebook and formgrader's notebooks; ``formgrade_inert``: no
                   student text runs in formgrader
- ``export``       the gradebook as Canvas, Moodle or plain CSV
- ``release``      the student versions generated from ``solutions/``
- ``lms_columns``  an LMS CSV's identity columns (``export --ids``, the class roster)
- ``class_server`` one model for a class: a key per student, llama-server started with them
- ``safecsv``, ``safetext``: cells no spreadsheet evaluates, names no terminal obeys
"""
