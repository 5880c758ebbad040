"""Matching an axis kind's substitutions in one scan, and carrying the matched text's case over.

Private to :mod:`faircode.counterfactual.perturb` (whose docstring states the matching and case
rules); split off so that module stays about the values and the payload walk.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from faircode.counterfactual.perturb import Substitution

__all__ = ["matcher", "normalise", "transfer_case"]


def normalise(pattern: str) -> str:
    """Return the case- and whitespace-insensitive identity of a pattern."""
    return " ".join(pattern.split()).casefold()


def _cased(text: str) -> list[str]:
    return [c for c in text if c.isupper() or c.islower()]


def _is_title(word: str) -> bool:
    letters = _cased(word)
    return bool(letters) and letters[0].isupper() and all(c.islower() for c in letters[1:])


def _capitalise_first(text: str) -> str:
    for i, c in enumerate(text):
        if c.isupper() or c.islower():
            return text[:i] + c.upper() + text[i + 1 :]
    return text


def transfer_case(matched: str, replacement: str) -> str:
    """Return ``replacement`` in the case of ``matched`` (rule in the module docstring)."""
    letters = _cased(matched)
    if not letters:
        return replacement
    if all(c.islower() for c in letters):
        return replacement.lower()
    if len(letters) >= 2 and all(c.isupper() for c in letters):
        return replacement.upper()
    words = matched.split()
    if len(words) > 1 and all(_is_title(w) or not _cased(w) for w in words):
        return re.sub(r"\S+", lambda m: _capitalise_first(m.group()), replacement)
    if _is_title(matched):
        return _capitalise_first(replacement)
    return replacement


_FOLD_I = str.maketrans({"\u0130": "i", "\u0131": "i"})
"""Dotted capital and dotless small i to ``i`` before casefolding: ``re.IGNORECASE`` equates
I, i, İ and ı, ``str.casefold`` does not (every other class of equal characters under
``re.IGNORECASE`` has one casefold; tests/test_perturb_linear.py checks all of Unicode)."""


def _key(text: str) -> str:
    """What two texts one pattern matches have in common: whitespace runs as one space, the
    casefold (with :data:`_FOLD_I`).  Texts ``re.IGNORECASE`` equates have one key; a key may
    also be shared by texts it does not equate (``ß``, ``ss``), which :class:`_Matcher` tells
    apart."""
    return " ".join(text.split()).translate(_FOLD_I).casefold()


def _alternative(pattern: str) -> str:
    """A pattern as literal text whose words match any run of whitespace between them."""
    return r"\s+".join(re.escape(word) for word in pattern.split())


class _Matcher:
    """One compiled alternation of an axis kind's substitutions and the map back from a match.

    The alternation has no group per substitution (a named group each made every match attempt
    cost a pass over all of them: quadratic in their number); the matched text is mapped back
    to the substitution it matched by :func:`_key`, and where several share a key (``his`` and
    ``hıs``) to the first in the alternation's order that matches it whole -- the one the
    alternation itself took, since they are tried in that order at the same position.
    """

    __slots__ = ("_bucket", "_order", "_single", "_subs", "pattern")

    def __init__(self, subs: tuple[Substitution, ...]) -> None:
        self._order = sorted(range(len(subs)), key=lambda i: -len(normalise(subs[i].pattern)))
        alternatives = [_alternative(subs[i].pattern) for i in self._order]
        self.pattern = re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)",
                                  re.IGNORECASE)
        self._bucket: dict[str, list[int]] = {}
        for i in self._order:
            self._bucket.setdefault(_key(subs[i].pattern), []).append(i)
        self._single: dict[int, re.Pattern[str]] = {}
        self._subs = subs

    def which(self, text: str) -> int:
        """The index of the substitution the alternation matched as ``text``."""
        candidates = self._bucket.get(_key(text), self._order)
        if len(candidates) == 1:
            return candidates[0]
        for i in candidates:
            if i not in self._single:
                self._single[i] = re.compile(_alternative(self._subs[i].pattern), re.IGNORECASE)
            if self._single[i].fullmatch(text):
                return i
        raise AssertionError(f"no substitution matches {text!r}")  # pragma: no cover


@functools.lru_cache(maxsize=256)
def matcher(subs: tuple[Substitution, ...]) -> _Matcher:
    """The :class:`_Matcher` of ``subs`` (longest pattern first, ties in declaration order)."""
    return _Matcher(subs)
