"""stats: the statistics -- the count-level resampling engine, clusters (units), the fairness,
intersectional and performance metrics, minimum detectable gaps, flip rates, operating points,
verdicts and the K-replicate estimate.
General numeric functions of arrays: imports :mod:`faircode.core` and
:mod:`faircode.counterfactual` only, never an audit, the grid or a result file.
"""
