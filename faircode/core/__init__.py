"""core: the bottom wing -- errors, config, the YAML schema, seeds, the grid vocabulary, input
checks and provenance.  Imports nothing of faircode outside itself; every other wing may import it.
"""
