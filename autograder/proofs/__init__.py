"""The grader's proofs: ``selfcheck`` runs them (``tests/test_selfcheck_*.py``).

- ``selfcheck``      which assignments and hostile entries exist; runs the proofs with pytest
- ``catalogue``      the wrong and right answers (``wrong_answers/``, ``right_answers/``)
- ``hostile/``       answer cells that attack the grader (each must score 0 and change nothing)
"""
