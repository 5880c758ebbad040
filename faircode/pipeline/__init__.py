"""pipeline: the top wing -- the ``faircode`` command, the progress display, the in-memory
``run_audit`` and the thin DVC stage entry points.  Nothing in faircode imports it.
"""
