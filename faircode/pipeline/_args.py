"""What every subcommand's parser shares: the exit codes and the examples epilog."""

from __future__ import annotations

import argparse
from typing import Any

from faircode.pipeline._boundary import EXIT_FAILED, EXIT_OK, EXIT_USAGE

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "MIRROR_ENV", "example"]

MIRROR_ENV = "FAIRCODE_DATA_MIRROR"
"""The environment variable naming the mirror folders (``os.pathsep``-separated); the same name
as :data:`faircode.audit.fetch.MIRROR_ENV`, here so the parsers need not import the audit wing."""


def example(*lines: str) -> dict[str, Any]:
    """``add_parser``/``ArgumentParser`` keywords that end a help text with real examples."""
    return {"epilog": "example:\n" + "\n".join(f"  {line}" for line in lines),
            "formatter_class": argparse.RawDescriptionHelpFormatter}
