"""Grading a class on a Dask cluster (``grade --cluster``), over mutual TLS.

- ``cluster``   the class on the workers; what a worker checks and grades
- ``certs``     the cluster's private CA and certificates (``cluster-certs``)
- ``record``    a worker's answer, checked before anything is kept
"""
