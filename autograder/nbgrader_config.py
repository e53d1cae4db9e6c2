# nbgrader configuration of this unit (used by `python -m autograder release`, which copies it
# into a throwaway course folder, and usable for plain nbgrader commands run from the repository
# root with `--config autograder/nbgrader_config.py`).
c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

c.CourseDirectory.course_id = "lecture-ReAct"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "release"
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.Execute.timeout = 60
