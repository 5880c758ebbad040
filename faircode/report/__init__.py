"""report: the reader's view -- reads ``results/`` from disk (:mod:`.inputs`), computes the
benchmark-wide analysis (:mod:`.analysis`) and writes tables, figures and ``report.html``
(:mod:`.build`).  Never imports :mod:`faircode.grid` or :mod:`faircode.evaluate`.
"""
