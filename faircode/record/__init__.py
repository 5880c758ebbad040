"""record: what is kept of a result state -- the MLflow sync (:mod:`.tracking`, the only module
that imports mlflow), and freeze/verify of the states behind cited numbers.  Imports only
:mod:`faircode.core` and :mod:`faircode.provenance`.
"""
