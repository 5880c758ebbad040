"""What every subcommand shares: the exit codes, the examples epilog and where raw data comes from.

Every command that reads an audit's raw file finds it the same way (``data fetch``, ``validate``,
``run``, ``audit``, the fetch stage, ``freeze`` and ``verify``): the ``--mirror`` folders where a
command has that flag, else ``$FAIRCODE_DATA_MIRROR`` (``os.pathsep``-separated), else the
benchmark's shared mirrors beside the project, ``../shared/datasets`` and
``../shared/datasets-extra`` (:func:`faircode.audit.fetch.default_mirror` of the working
directory).  A command that needs a raw file it does not have fetches it from there (verified by
sha256) before it reads it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from faircode.pipeline._boundary import EXIT_FAILED, EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from faircode.audit.fetch import Fetchable
    from faircode.core.config import BenchmarkConfig

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "HELP", "MIRROR_ENV", "MIRROR_HELP",
           "STATS_FLAGS", "example", "mirrors", "obtain", "searched", "with_flags"]

MIRROR_ENV = "FAIRCODE_DATA_MIRROR"
"""The environment variable naming the mirror folders (``os.pathsep``-separated); the same name
as :data:`faircode.audit.fetch.MIRROR_ENV`, here so the parsers need not import the audit wing."""

HELP: dict[str, str] = {
    "data fetch": "fetch and verify raw files (mirrors, sha256)",
    "validate": "rows after each filter, label rate, group sizes, split, units",
    "run": "the strategy × model grid into results/<audit>/",
    "report": "summary, paper tables, figures and report.html from a results folder",
    "track": "log a results folder to MLflow (once per state)",
    "freeze": "record the state behind cited numbers (freezes/<name>.json)",
    "verify": "re-derive a frozen state and compare every number",
    "audit": "audit decisions you made: a file with its own groups, a log, or predictions on "
             "an audit's rows",
    "perturb": "counterfactual copies of JSONL payloads, for any model",
    "flips": "flip rates and CTF gaps of your text model from two score files (originals, copies)",
    "pipeline": "write the DVC pipeline files for params.yaml's audits (after changing the list)",
}
"""Each subcommand's one-line help: the "does" column of the README's command table, word for
word (tests/test_readme.py compares them)."""

MIRROR_HELP = (f"--mirror DIR, else ${MIRROR_ENV} ({os.pathsep}-separated folders), else "
               "../shared/datasets and ../shared/datasets-extra beside the project")
"""Where the raw files come from, as every command's help says it."""


STATS_FLAGS: dict[str, str] = {"n_resamples": "stats.n_resamples",
                               "n_permutations": "stats.n_permutations"}
"""The statistics flags of ``audit`` and ``flips``: dest -> ``params.yaml`` path."""


def with_flags(config: BenchmarkConfig, args: argparse.Namespace, flags: Mapping[str, str], *,
               command: str) -> BenchmarkConfig:
    """``config`` with the flags that were given (``args.<dest>`` not None), each applied at its
    ``params.yaml`` path (``flags``: dest -> path; :meth:`BenchmarkConfig.with_params`); a value
    it refuses is one line naming the flag the user typed: ``<command>: --seeds: ...``."""
    from faircode.core.errors import ConfigError

    given = {dest: getattr(args, dest) for dest in flags if getattr(args, dest) is not None}
    try:
        return config.with_params({flags[dest]: value for dest, value in given.items()})
    except ConfigError as exc:
        text = str(exc)
        for dest in given:
            if text.startswith(f"{flags[dest]}:"):
                flag = f"--{dest.replace('_', '-')}"
                raise ConfigError(f"{command}: {flag}{text[len(flags[dest]):]}") from None
        raise


def example(line: str, *more: str) -> dict[str, Any]:
    """``add_parser``/``ArgumentParser`` keywords that end a help text with real examples."""
    return {"epilog": "example:\n" + "\n".join(f"  {x}" for x in (line, *more)),
            "formatter_class": argparse.RawDescriptionHelpFormatter}


def mirrors(flags: Sequence[str] | None = None) -> tuple[Path, ...]:
    """The mirror folders of a command: ``flags``, else the environment, else the default."""
    from faircode.audit.fetch import default_mirror, mirror_dirs

    return mirror_dirs(flags, os.environ.get(MIRROR_ENV) or default_mirror(Path.cwd()))


def searched(manifest: Fetchable, folders: tuple[Path, ...]) -> str:
    """What a failed fetch looked for: the mirror copies it did not find."""
    where = ", ".join(str(m) for m in folders) or "no mirror"
    return (f"no {manifest.name}/{manifest.dataset.path.name} in {where}; --mirror DIR or "
            f"{MIRROR_ENV} names other mirrors")


def obtain(manifest: Fetchable, folders: tuple[Path, ...]) -> None:
    """Fetch the raw file of ``manifest`` from ``folders`` (or its URL) unless it is there.

    Prints the fetch's status line on stderr; an audit whose file cannot be had raises
    :class:`DataUnavailableError` whose one line says how to obtain it and where it was looked for.
    """
    from faircode.audit.fetch import fetch
    from faircode.core.errors import DataUnavailableError

    if manifest.dataset.path.is_file() and all(
            c.path.is_file() for c in manifest.dataset.companions):
        return
    try:
        result = fetch(manifest, mirrors=folders, progress=sys.stderr.isatty())
    except DataUnavailableError as exc:
        raise DataUnavailableError(f"{exc} ({searched(manifest, folders)})") from None
    print(result.line(manifest.name), file=sys.stderr)
