"""One submission on the grader's side: merge, run in two sandboxed processes, score.

- ``engine``        ``grade_notebook``: one submission in, a GradeResult out
- ``pool``          the two processes of a run (``Pair``), warm ahead of time (``ProcessPool``)
- ``processes``     how a grading process is started, and the grader's handle on a trusted
                    process (``TrustedProcess``)
- ``code_runs``     code a test judges, run here in a sandbox run of its own
"""
