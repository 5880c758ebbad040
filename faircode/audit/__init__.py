"""audit: what an audit is -- its manifest, raw file (fetch), loaded and prepared data, its
counterfactual test rows and its decision rule.  Imports :mod:`faircode.core` and
:mod:`faircode.counterfactual`.
"""
