"""grid: the strategies x model families that faircode fits -- models, strategies S0-S5, the fit
of every cell (and training replicate) on one task queue, and the predictions it stores.  Imports
:mod:`faircode.core`, :mod:`faircode.counterfactual` and :mod:`faircode.audit`; never
:mod:`faircode.stats` or :mod:`faircode.evaluate`, so a statistics change re-fits nothing.
"""
