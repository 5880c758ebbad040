"""Error types faircode raises on bad input, and the one-line message format they share.

Every error a user can cause by what they wrote (a manifest, params.yaml, an axes file, a data file
that does not match its manifest) is a :class:`FaircodeError`.  Its message is one line that names
*where* (file, key path, row or column), *what was expected*, and *what arrived, with its type*::

    audits/compas/audit.yaml: protected_attributes[0].type: expected one of categorical,
    numeric_threshold, age_interval_threshold, got 'categorial' (str)

The CLI turns a :class:`FaircodeError` into that line on stderr and exit code 2; anything else is a
bug in faircode and keeps its traceback.

The received value is shown by :func:`describe`, which renders it from a bounded walk (at most
the first 80 characters of its ``repr`` are ever built): a message about a hostile value — a
YAML alias bomb of 10**9 shared leaves, a 5,000-digit integer — costs no more than one about
``'x'``.
"""

from __future__ import annotations

from collections.abc import Iterator

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


def describe(value: object, *, limit: int = 80) -> str:
    """Render a received value with its type, as every error message shows it: ``'x' (str)``.

    The text is ``repr(value)`` cut to ``limit`` characters (``...`` marks a cut), built from a
    bounded walk: containers and strings are rendered only up to the cut, so a value of 10**9
    shared leaves (a YAML alias bomb) or a 5,000-digit integer costs microseconds, not gigabytes.
    """
    text = _bounded_repr(value, limit)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{text} ({type(value).__name__})"


_BRACKETS: dict[type, tuple[str, str]] = {
    list: ("[", "]"), tuple: ("(", ")"), dict: ("{", "}"), set: ("{", "}"),
    frozenset: ("frozenset({", "})"),
}


def _scalar_repr(value: object, limit: int) -> str:
    """``repr`` of a leaf: strings and bytes cut before rendering, huge integers summarised."""
    if isinstance(value, str | bytes) and type(value) in (str, bytes):
        return repr(value[: limit + 1])
    if type(value) is int and value.bit_length() > 4 * limit:
        digits = int(value.bit_length() * 0.30103) + 1  # log10(2): no 5,000-digit str()
        return f"{'-' if value < 0 else ''}<an integer of about {digits:,} digits>"
    try:
        return repr(value)
    except Exception as exc:  # a broken __repr__ must not hide the error being reported
        return f"<{type(value).__name__} object: repr failed with {type(exc).__name__}>"


class _Frame:
    """One container being rendered: its remaining items, the separator and the closing text."""

    __slots__ = ("closing", "first", "items", "separator")

    def __init__(self, items: Iterator[object], separator: str, closing: str) -> None:
        self.items, self.separator, self.closing, self.first = items, separator, closing, True


class _Pair:
    """A dict item while it is rendered as ``key: value``."""

    __slots__ = ("both",)

    def __init__(self, key: object, value: object) -> None:
        self.both = (key, value)


def _bounded_repr(value: object, limit: int) -> str:
    """``repr(value)`` up to at least ``limit + 1`` characters, walking containers iteratively.

    Non-empty exact lists, tuples, dicts, sets and frozensets are walked with the separators
    ``repr`` uses (a subclass or any other type uses its own ``repr``); the walk stops as soon as
    the text is longer than ``limit``, so its cost does not depend on the value's size.
    """
    parts: list[str] = []
    size = 0
    stack = [_Frame(iter((value,)), "", "")]
    end = object()
    while stack and size <= limit:
        frame = stack[-1]
        item = next(frame.items, end)
        text = frame.closing if item is end else "" if frame.first else frame.separator
        frame.first = False
        if item is end:
            stack.pop()
        elif isinstance(item, _Pair):
            stack.append(_Frame(iter(item.both), ": ", ""))
        elif type(item) in _BRACKETS and item:
            opening, closing = _BRACKETS[type(item)]
            if type(item) is tuple and len(item) == 1:
                closing = ",)"
            items = (_Pair(k, v) for k, v in item.items()) if isinstance(item, dict) else iter(
                item)  # type: ignore[call-overload]
            text += opening
            stack.append(_Frame(items, ", ", closing))
        else:
            text += _scalar_repr(item, limit)
        parts.append(text)
        size += len(text)
    return "".join(parts)


def config_error(
    where: str, expected: str, got: object, *, cls: type[ConfigError] = ConfigError
) -> ConfigError:
    """Build the one-line ``<where>: expected <expected>, got <value> (<type>)`` error."""
    return cls(f"{where}: expected {expected}, got {describe(got)}")
