"""Exactly what runs beside student code, inside the grading sandbox.

The kit (``autograder/sandbox/kit.py``) copies this folder whole; the grader starts it only
through ``inside/runner.py`` (the launcher), and nothing outside this folder imports it.  It imports
nothing of the rest of ``autograder`` (it is a program of its own), only ``lreact``.

- ``runner``            the entry point of a sandboxed grading process
- ``student``           the student process: ``StudentNamespace`` runs the answer cells and
                        answers the trusted process's requests
- ``guard``             the student process's audit hook: only code an answer shows runs
- ``trusted``           the trusted process: one job after another, each in a forked child
                        (``serve``, ``run_job``), code actions sent to the grader, and what a
                        job left behind (``Leftovers``)
- ``trusted_namespace`` ``TrustedNamespace``: the test cells' namespace, where every verdict is
                        decided, and the stand-ins for the student's names
- ``output``            what a cell printed, capped and inert (both processes)
- ``channel/``          the plain-data channel between the two processes
"""
