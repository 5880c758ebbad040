"""Error types faircode raises on bad input, and the one-line message format they share.

Every error a user can cause by what they wrote (a manifest, params.yaml, an axes file, a data file
that does not match its manifest) is a :class:`FaircodeError`.  Its message is one line that names
*where* (file, key path, row or column), *what was expected*, and *what arrived, with its type*::

    audits/compas/audit.yaml: protected_attributes[0].type: expected one of categorical,
    numeric_threshold, age_interval_threshold, got 'categorial' (str)

The CLI turns a :class:`FaircodeError` into that line on stderr and exit code 2; anything else is a
bug in faircode and keeps its traceback.
"""

from __future__ import annotations

__all__ = [
    "ChecksumError",
    "ConfigError",
    "DataError",
    "DataUnavailableError",
    "FaircodeError",
    "ManifestError",
    "PerturbationError",
    "config_error",
    "describe",
]


class FaircodeError(Exception):
    """Base class of every error caused by the user's input rather than by a bug."""


class ConfigError(FaircodeError, ValueError):
    """A configuration file or value (params, axes file, benchmark config) is invalid."""


class ManifestError(ConfigError):
    """An ``audit.yaml`` manifest is invalid."""


class DataError(FaircodeError):
    """The data does not satisfy what its manifest declares (missing column, one class, ...)."""


class DataUnavailableError(DataError):
    """No verified copy of an audit's raw file can be had; the message says how to obtain it."""


class ChecksumError(DataError):
    """A raw file's sha256 differs from the digest its manifest declares."""


class PerturbationError(FaircodeError, ValueError):
    """An axis or substitution is invalid; the message names the axis and the pattern."""


def describe(value: object) -> str:
    """Render a received value with its type, as every error message shows it: ``'x' (str)``."""
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} ({type(value).__name__})"


def config_error(
    where: str, expected: str, got: object, *, cls: type[ConfigError] = ConfigError
) -> ConfigError:
    """Build the one-line ``<where>: expected <expected>, got <value> (<type>)`` error."""
    return cls(f"{where}: expected {expected}, got {describe(got)}")
