"""counterfactual: the perturbation engine (:mod:`.perturb`), axes files (:mod:`.axes`) and the
JSONL tool (:mod:`.jsonl`).  General: it edits any payload and knows nothing of audits, models or
the grid.  Imports only :mod:`faircode.core`.
"""
