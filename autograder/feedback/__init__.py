"""One feedback page per student and assignment, built from the released notebook.

- ``pages``      the pages (``python -m autograder feedback``); ``templates/`` their template
- ``text``       markdown and errors as inert HTML
- ``released_run``  the submission run again with the hidden tests removed: where every output
                 and error a page shows comes from
"""
