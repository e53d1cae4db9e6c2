# nbgrader settings of this unit shared by every use: the repository's own nbgrader_config.py
# (the course folder for stock nbgrader commands and formgrader) loads this file, and
# `python -m autograder release` copies it into a throwaway course folder.
c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

c.CourseDirectory.course_id = "lecture-ReAct"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "release"
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.Execute.timeout = 60
# Every HTML page nbgrader renders (formgrader, generate_feedback) puts outputs through
# nbconvert's sanitiser (bleach; HTML and markdown outputs cleaned, scripts and widgets dropped).
# formgrader's template ignores it for markdown cells: see autograder/instructor/formgrade_inert.py.
c.HTMLExporter.sanitize_html = True
