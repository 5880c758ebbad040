"""Text identity: which texts are the same, which only look alike, which hide characters.

A group value, a pattern or a name is compared as text, and two texts can look the same and
differ (a Cyrillic ``М`` for a Latin ``M``, an invisible zero-width space, a right-to-left
override that shows one text and holds another).  Every comparison and check of declared text
against data reads this module.

Design decisions
----------------
* **The same text is the same NFC form** (:func:`same_text`): canonical equivalents -- ``é`` as
  one character or as ``e`` plus a combining accent -- are one value; nothing else is merged
  silently.
* **A look-alike is an error, not a match** (:func:`look_alike`): two texts whose NFC forms
  differ but whose *skeletons* agree -- NFKC (full-width ``Ｍ``, ligatures), invisible format
  characters removed, and the common Cyrillic and Greek homoglyphs of Latin letters mapped to
  them (a small explicit table, :data:`HOMOGLYPHS`, not Unicode's full confusables list: no
  new dependency) -- are reported so a user can say which is meant.
* **Hidden characters are refused where text is declared** (:func:`hidden_characters`): format
  characters (Unicode category Cf: zero-width spaces and joiners, the byte-order mark, the
  bidirectional embeddings, overrides, isolates and marks, the soft hyphen) and control
  characters other than tab, each named with its position, so a declaration cannot say
  something other than what it shows.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

__all__ = ["HOMOGLYPHS", "differing", "hidden_characters", "look_alike", "same_text",
           "show_character", "skeleton", "visible_or_none"]

HOMOGLYPHS: dict[str, str] = {
    **dict(zip("АВЕЅІЈКМНОРСТХУ", "ABESIJKMHOPCTXY", strict=True)),   # Cyrillic capitals
    **dict(zip("аеѕіјорсхуԁһӏ", "aesijopcxydhl", strict=True)),       # Cyrillic small
    **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "ABEZHIKMNOPTYX", strict=True)),     # Greek capitals
    **dict(zip("οαιν", "oaiv", strict=True)),                           # Greek small
}
"""Cyrillic and Greek letters drawn like a Latin letter, mapped to it (for :func:`skeleton`)."""
_ALLOWED_CONTROLS = frozenset("\t")


def same_text(value: str) -> str:
    """The form two texts are compared in: NFC."""
    return unicodedata.normalize("NFC", value)


def skeleton(value: str) -> str:
    """What ``value`` looks like: NFKC, hidden characters removed, homoglyphs mapped."""
    folded = unicodedata.normalize("NFKC", value)
    return "".join(HOMOGLYPHS.get(ch, ch) for ch in folded if not _hidden(ch))


def look_alike(value: str, declared: Iterable[str]) -> str | None:
    """The declared text ``value`` only looks like (same skeleton, another NFC form), or None
    when it is one of them or looks like none."""
    own = same_text(value)
    texts = list(declared)
    if any(same_text(d) == own for d in texts):
        return None
    shape = skeleton(value)
    return next((d for d in texts if skeleton(d) == shape), None)


def show_character(ch: str) -> str:
    """``U+041C CYRILLIC CAPITAL LETTER EM``."""
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed character')}"


def _hidden(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category == "Cf" or (category == "Cc" and ch not in _ALLOWED_CONTROLS)


def hidden_characters(value: str) -> list[tuple[int, str]]:
    """Each hidden character of ``value``: its 1-based position and :func:`show_character`."""
    return [(i, show_character(ch)) for i, ch in enumerate(value, start=1) if _hidden(ch)]


def visible_or_none(value: str) -> str | None:
    """None for text without hidden characters, else what an error says of the first one:
    ``U+200B ZERO WIDTH SPACE at character 4``."""
    found = hidden_characters(value)
    if not found:
        return None
    position, shown = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"{shown} at character {position}{more}"


def differing(value: str, declared: str) -> str:
    """Where ``value`` and the ``declared`` text it looks like differ, for an error message."""
    hidden = visible_or_none(value)
    if hidden is not None:
        return f"it holds {hidden}"
    for i, (x, y) in enumerate(zip(value, declared, strict=False), start=1):
        if x != y:
            return f"character {i} is {show_character(x)}, not {show_character(y)}"
    return "their compatibility forms agree (NFKC), their characters differ"
