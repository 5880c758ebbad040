"""core: the bottom wing -- errors, config, the YAML schema, seeds, the grid vocabulary, input
checks and the numerical configuration.  Imports nothing of faircode outside itself; every other
wing may import it.
"""
