"""evaluate: predictions in, result tables out -- cell scoring, assembly and q-values, training
replicates (stability) and their combination, the claims of every cell (verdicts, one number
per cell: claims), and the writers of ``results/<audit>/`` and its DVC views.  Imports
:mod:`faircode.core`, :mod:`faircode.counterfactual`, :mod:`faircode.audit`,
:mod:`faircode.stats` and :mod:`faircode.grid`.
"""
