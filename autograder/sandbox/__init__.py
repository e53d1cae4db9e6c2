"""Isolation for one grading run: bubblewrap, a cgroup, a wall clock, and the read-only kit.

- ``launch``  how a run is confined (``launch()``), and what is not protected where it cannot be
- ``cgroup``  a cgroup per run: one CPU quota, one memory limit, one process count
- ``kit``     what every run sees read-only: ``autograder/inside/`` and the answers' ``lreact``
"""
