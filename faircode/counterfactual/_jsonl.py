"""Bounded JSON Lines: split, parse and write one JSON value per line, every failure one line.

Private helpers of ``faircode perturb`` (:mod:`faircode.pipeline.cli`, :func:`faircode.stats.flips.
perturb_jsonl`).  Every malformed line is a :class:`~faircode.core.errors.ConfigError`
``<file>:<line>: expected ..., got ...`` instead of a traceback.

Design decisions
----------------
* **Lines end at ``\\n`` only** (a trailing ``\\r`` is dropped): ``str.splitlines`` also splits on
  U+2028, U+0085, form feeds and other separators that are valid *inside* a JSON string, which
  would reject valid JSONL and shift every later line number.
* **Bounded nesting.**  A line nested deeper than :data:`MAX_JSON_DEPTH` is refused before it is
  parsed (a vectorised, string-aware bracket count; only lines with that many brackets at all are
  scanned).  Python's ``json`` parses and writes recursively, so lines up to the limit are parsed
  and written with that much recursion headroom added for the call (and restored after).
* **Bounded integers.**  An integer of more than Python's ``int`` string limit (4,300 digits) is
  refused naming its line (``int()`` would raise a bare ``ValueError``, and ``json.dumps`` could
  not write it back).
* **NaN and Infinity are refused on input** (and ``1e999``, which overflows to infinity): they are
  not JSON (RFC 8259), Python would write them back bare — output other JSON readers reject —
  and writing ``null`` instead would change a payload that perturbation must change only where a
  pattern fires.  The writer uses ``allow_nan=False`` as a guard.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from faircode.core.errors import ConfigError, describe

__all__ = ["MAX_JSONL_BYTES", "MAX_JSON_DEPTH", "dumps_line", "nesting_depth", "parse_line",
           "split_lines"]

MAX_JSON_DEPTH = 1000
"""Most levels of nested arrays and objects in one JSONL line."""
MAX_JSONL_BYTES = 256 * 2**20
"""Most bytes of a JSONL file ``faircode perturb`` reads (256 MiB; read through
:func:`faircode.core.files.read_bounded`: a regular file only, never more than this + 1 bytes)."""
_MAX_DIGITS = 4300  # Python's default int max str digits: int() and str() both stop there
_OPEN, _CLOSE, _QUOTE, _BACKSLASH = (np.frombuffer(c, np.uint8) for c in (b"[{", b"]}", b'"',
                                                                         b"\\"))


def split_lines(text: str) -> list[str]:
    """The lines of ``text``, split at ``\\n`` only, each without a trailing ``\\r``."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def nesting_depth(line: str) -> int:
    """The deepest nesting of ``[``/``{`` outside JSON strings in ``line`` (0 for a scalar)."""
    data = np.frombuffer(line.encode("utf-8", "surrogatepass"), np.uint8)
    quote = data == _QUOTE[0]
    if quote.any():  # a quote is escaped by an odd run of backslashes right before it
        slash = data == _BACKSLASH[0]
        index = np.arange(data.size)
        last_other = np.maximum.accumulate(np.where(slash, -1, index))
        run = np.concatenate(([0], index[:-1] - last_other[:-1]))
        quote &= run % 2 == 0
    outside = np.cumsum(quote) % 2 == 0  # a quote itself is never a bracket
    step = np.isin(data, _OPEN).astype(np.int64) - np.isin(data, _CLOSE)
    step[~outside] = 0
    return int(np.cumsum(step).max(initial=0))


@contextmanager
def _headroom(levels: int) -> Iterator[None]:
    """Raise the recursion limit by ``levels`` for the duration (json recurses per level)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(old + levels)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


class _Refused(Exception):
    """A number :func:`parse_line` refuses; its text completes the message after ``got``."""


def _int(text: str) -> int:
    digits, limit = len(text.lstrip("-")), min(_MAX_DIGITS, sys.get_int_max_str_digits() or
                                               _MAX_DIGITS)
    if digits > limit:
        raise _Refused(f"an integer of at most {limit} digits", f"one of {digits} digits")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused("a finite number", f"{describe(text)}, which overflows to infinity")
    return value


def _constant(name: str) -> float:
    raise _Refused("a JSON number", f"{name} (NaN and Infinity are not JSON, RFC 8259; write "
                                    "null or a number)")


def parse_line(line: str, *, where: str) -> object:
    """Parse one JSONL line within this module's bounds; ``where`` is ``<file>:<line>``."""
    if line.count("[") + line.count("{") > MAX_JSON_DEPTH:
        depth = nesting_depth(line)
        if depth > MAX_JSON_DEPTH:
            raise ConfigError(f"{where}: expected at most {MAX_JSON_DEPTH} levels of nesting, "
                              f"got {depth}")
    try:
        with _headroom(MAX_JSON_DEPTH + 50):
            value = json.loads(line, parse_int=_int, parse_float=_float,
                               parse_constant=_constant)
    except _Refused as exc:
        expected, got = exc.args
        raise ConfigError(f"{where}: expected {expected}, got {got}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: expected a JSON object, got invalid JSON ({exc.msg} at "
                          f"column {exc.colno})") from None
    if _SURROGATE_ESCAPE.search(line):
        _check_surrogates(value, where=where)
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A ``\\uD800``-``\\uDFFF`` escape: a lone one decodes to text no UTF-8 file can hold."""


def _check_surrogates(value: object, *, where: str) -> None:
    """Refuse a string holding a lone surrogate (an escape not in a pair): it could be read
    but never written, nor compared with any text of a UTF-8 file."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ConfigError(f"{where}: expected text (a \\uD800-\\uDFFF escape only in a "
                                  f"surrogate pair), got a lone "
                                  f"\\u{ord(item[exc.start]):04x} in {item[:40]!r}") from None


def dumps_line(value: object) -> str:
    """``value`` as one line of JSON (UTF-8 text kept, NaN refused), with the depth headroom."""
    with _headroom(MAX_JSON_DEPTH + 50):
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
