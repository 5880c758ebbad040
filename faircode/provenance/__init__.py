"""provenance: what identifies the state a result was produced from -- the commit, the hash of
the code that computed it, whether an input was dirty, the params digest -- and the package
versions and numerical kernels (:mod:`.state`).  Imports only :mod:`faircode.core`.

A wing of its own, above ``core``: the data stages (fetch, prepare, the fits) import ``core``
but never this, so their ``deps:`` name ``faircode/core`` as one folder and a change here
re-runs only the stages that record a state (evaluate, report, track).
"""
