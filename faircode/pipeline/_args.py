"""What every subcommand's parser shares: the exit codes and the examples epilog."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "MIRROR_ENV", "example"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
"""Success; a check that found something (drift, a failed audit) or an ``OSError``/``MemoryError``;
bad input (one line)."""
MIRROR_ENV = "FAIRCODE_DATA_MIRROR"
"""The environment variable naming the mirror folders (``os.pathsep``-separated); the same name
as :data:`faircode.audit.fetch.MIRROR_ENV`, here so the parsers need not import the audit wing."""


def example(*lines: str) -> dict[str, Any]:
    """``add_parser``/``ArgumentParser`` keywords that end a help text with real examples."""
    return {"epilog": "example:\n" + "\n".join(f"  {line}" for line in lines),
            "formatter_class": argparse.RawDescriptionHelpFormatter}
