"""Counterfactual perturbation engine: whole-word, case-preserving substitutions along named axes.

An :class:`AxisSpec` is a named set of :class:`Substitution` rules; :func:`perturb` applies each
axis to a payload (a string, or nested dicts / lists / tuples of strings) and returns one
:class:`Perturbation` per (axis, kind) that has substitutions.

Deliberate design decisions
---------------------------
* **No built-in axes.**  Which identities count and how they are named is an editorial choice the
  caller must make; :func:`perturb` with no axes is an error that says so.
* **Explicit and proxy are never merged.**  Substitutions tagged ``EXPLICIT`` (edit a stated
  attribute) and ``PROXY`` (edit a correlate of it) of one axis give separate perturbations,
  explicit first, because "reacts to the attribute" and "reacts to a proxy" are different findings.
* **One pass per (axis, kind), linear in the substitutions.**  All substitutions of an axis and
  kind are applied by a single regular-expression scan of one alternation, longest pattern first
  (ties in declaration order), so a swap axis (he→she, she→he) really swaps instead of undoing
  itself.  The alternation has no group per substitution; the matched text is mapped back to its
  substitution by a dict lookup on its casefold (:mod:`faircode.counterfactual._match`), so
  3,000 substitutions cost a scan, not 3,000 group resets per match attempt
  (``bench/perturb_scale.py``).
* **Patterns are literal text**, never regular expressions (every character is escaped).  Words of
  a multi-word pattern match any run of whitespace; the replacement is inserted as written.
* **Whole-word matching:** a match is never immediately preceded or followed by a word character
  (``\\w``: letter, digit, underscore).  For patterns with a punctuation edge this means ``Dr.``
  matches in "Dr. Smith", "Dr.," and at the end of the text but not in "Dr.Smith", and ``C++``
  matches in "C++ developer" and "(C++)" but not in "C++x".  Matching is case-insensitive with
  the simple Unicode case folding of Python's ``re.IGNORECASE`` (which also equates the dotless
  "ı", dotted "İ" and long "ſ" with i and s); duplicate patterns are detected with casefold.
* **Case transfer** (the matched text decides, checked in this order):
  no cased letter → replacement as written; all cased letters lowercase (including a single
  lowercase letter) → replacement lowercased; all uppercase with at least two cased letters →
  replacement uppercased; a multi-word match whose every word is Title-cased → the first cased
  letter of every replacement word capitalised; Title case (first cased letter upper, all others
  lower — this includes a single capital letter such as "I") → the replacement's first cased
  letter capitalised, the rest as written; any other mixed case ("hE", "McDonald") → the
  replacement exactly as written in the :class:`Substitution`.
* **A no-op is kept and flagged.**  A perturbation where nothing matched has ``changed=False``; it
  is never silently counted as "no flip" downstream.
* **Validation at construction.**  Invalid axes raise
  :class:`~faircode.core.errors.PerturbationError`
  (a ``ValueError``) naming the axis and pattern; a substitution on its own names its pattern,
  since it belongs to no axis until placed in one.  A payload leaf of an unsupported type raises
  ``TypeError`` naming its path (``payload['letters'][2]``).  The original is never mutated.
* **Any depth.**  A payload is rewritten with an explicit stack, not recursion, so a valid JSONL
  line nested 600 (or 10,000) levels deep is rewritten like a flat one.
"""

from __future__ import annotations

import copy
import enum
import numbers
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from faircode.core.errors import ConfigError, PerturbationError, config_error, describe
from faircode.core.text import visible_or_none
from faircode.counterfactual._match import matcher, normalise, transfer_case

__all__ = [
    "AXES_GUIDE",
    "AxisSpec",
    "Perturbation",
    "PerturbationKind",
    "Substitution",
    "axis_from_config",
    "perturb",
    "transfer_case",
]

AXES_GUIDE = "docs/perturbation-axes.md"
"""How an axis works, illustrative axes to copy and scrutinise, how to build your own: every
error about missing axes names it."""
_NO_AXES = (
    "perturb() needs at least one AxisSpec: faircode ships no built-in axis list because "
    "choosing which identities count and how they are named is an editorial decision the "
    f"caller must make explicitly (how an axis works, examples to copy: {AXES_GUIDE})"
)


class PerturbationKind(enum.Enum):
    """Whether a substitution edits a stated attribute (explicit) or a correlate of it (proxy)."""

    EXPLICIT = "explicit"
    PROXY = "proxy"


@dataclass(frozen=True, slots=True)
class Substitution:
    """One whole-word, case-insensitive, case-preserving replacement of literal text."""

    pattern: str
    replacement: str
    kind: PerturbationKind = PerturbationKind.EXPLICIT

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, str):
            raise PerturbationError(f"substitution pattern: expected a string, got "
                                    f"{describe(self.pattern)}")
        where = f"substitution {self.pattern!r}"
        if not self.pattern.strip():
            raise PerturbationError(f"{where}: pattern must not be empty or only whitespace")
        if self.pattern != self.pattern.strip():
            raise PerturbationError(
                f"{where}: pattern must not begin or end with whitespace (whole-word matching "
                "already handles word edges)"
            )
        if not isinstance(self.replacement, str):
            raise PerturbationError(
                f"{where}: replacement: expected a string, got {describe(self.replacement)}"
            )
        for key, text in (("pattern", self.pattern), ("replacement", self.replacement)):
            hidden = visible_or_none(text)
            if hidden is not None:  # a zero-width space never matches; an override misleads
                raise PerturbationError(f"{where}: {key}: expected visible text (no format or "
                                        f"control character), got {hidden}")
        if normalise(self.pattern) == normalise(self.replacement):
            raise PerturbationError(
                f"{where}: replacement {self.replacement!r} equals the pattern "
                "(case-insensitively); the substitution would change nothing"
            )
        if not isinstance(self.kind, PerturbationKind):
            raise PerturbationError(
                f"{where}: kind: expected a PerturbationKind (EXPLICIT or PROXY), got "
                f"{describe(self.kind)}"
            )


@dataclass(frozen=True, slots=True)
class AxisSpec:
    """A named set of substitutions probing one attribute; a list is stored as a tuple."""

    name: str
    substitutions: tuple[Substitution, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise PerturbationError(f"axis name: expected a non-empty string, got "
                                    f"{describe(self.name)}")
        where = f"axis {self.name!r}"
        hidden = visible_or_none(self.name)
        if hidden is not None:
            raise PerturbationError(f"{where}: name: expected visible text (no format or "
                                    f"control character), got {hidden}")
        subs = self.substitutions
        if isinstance(subs, str | bytes | Substitution) or not isinstance(subs, Sequence):
            raise PerturbationError(
                f"{where}: substitutions: expected a sequence of Substitution, got {describe(subs)}"
            )
        object.__setattr__(self, "substitutions", tuple(subs))
        if not self.substitutions:
            raise PerturbationError(f"{where}: has no substitutions")
        seen: dict[tuple[PerturbationKind, str], str] = {}
        for i, sub in enumerate(self.substitutions):
            if not isinstance(sub, Substitution):
                raise PerturbationError(
                    f"{where}: substitutions[{i}]: expected a Substitution, got {describe(sub)}"
                )
            if not isinstance(sub.kind, PerturbationKind):  # only reachable by bypassing init
                raise PerturbationError(
                    f"{where}: pattern {sub.pattern!r}: kind: expected a PerturbationKind, got "
                    f"{describe(sub.kind)}"
                )
            key = (sub.kind, normalise(sub.pattern))
            if key in seen:
                raise PerturbationError(
                    f"{where}: pattern {sub.pattern!r} duplicates {seen[key]!r} among its "
                    f"{sub.kind.value} substitutions (patterns are case-insensitive)"
                )
            seen[key] = sub.pattern

    def of_kind(self, kind: PerturbationKind) -> tuple[Substitution, ...]:
        """Return this axis's substitutions of one kind, in declaration order."""
        return tuple(s for s in self.substitutions if s.kind is kind)


@dataclass(frozen=True, slots=True)
class Perturbation:
    """The result of applying one (axis, kind) to one payload."""

    axis: str
    kind: PerturbationKind
    original: object
    perturbed: object
    fired: tuple[tuple[str, int], ...]
    changed: bool

    def __post_init__(self) -> None:
        if not isinstance(self.kind, PerturbationKind):
            raise PerturbationError(f"kind: expected a PerturbationKind, got {describe(self.kind)}")
        if any(n < 1 for _, n in self.fired):
            raise PerturbationError(f"fired counts must be positive, got {self.fired!r}")
        if self.changed != bool(self.fired):
            raise PerturbationError(
                f"changed={self.changed} contradicts fired={self.fired!r} for axis {self.axis!r}"
            )


_CONTAINER, _UNSUPPORTED = object(), object()


def _leaf(value: object, edit: Callable[[str], str]) -> object:
    """A leaf rewritten (strings edited, None and numbers kept), else :data:`_CONTAINER` for a
    dict, list or tuple and :data:`_UNSUPPORTED` for any other type."""
    if isinstance(value, str):
        return edit(value)
    if value is None or isinstance(value, numbers.Number):
        return value
    return _CONTAINER if isinstance(value, dict | list | tuple) else _UNSUPPORTED


class _Rebuild:
    """One container being rewritten: its path, its remaining children and the new ones."""

    __slots__ = ("done", "items", "keys", "path", "value")

    def __init__(self, value: object, path: str) -> None:
        self.value, self.path = value, path
        self.keys: list[object] = list(value) if isinstance(value, dict) else []
        children = value.values() if isinstance(value, dict) else value
        self.items = enumerate(cast(Iterable[object], children))
        self.done: list[object] = []

    def child_path(self, index: int) -> str:
        key = self.keys[index] if isinstance(self.value, dict) else index
        return f"{self.path}[{key!r}]" if isinstance(self.value, dict) else f"{self.path}[{key}]"

    def build(self) -> object:
        """The container of the original's type holding the rewritten children."""
        value, new = self.value, self.done
        if isinstance(value, dict):
            items = dict(zip(self.keys, new, strict=True))
            if type(value) is dict:
                return items
            out = copy.copy(value)
            out.update(items)
            return out
        if isinstance(value, list):
            if type(value) is list:
                return new
            out_list = copy.copy(value)
            out_list[:] = new
            return out_list
        if type(value) is tuple:
            return tuple(new)
        if hasattr(value, "_make"):  # namedtuple
            return value._make(new)
        return type(value)(new)  # type: ignore[call-arg]


def _rewrite(value: object, path: str, edit: Callable[[str], str]) -> object:
    """Return a copy of ``value`` with every string leaf passed through ``edit``.

    Iterative (an explicit stack of containers), so a payload nested 10,000 levels deep is
    rewritten like a flat one, with no recursion limit; container types are preserved.
    """
    leaf = _leaf(value, edit)
    if leaf is _UNSUPPORTED:
        raise _unsupported(path, value)
    if leaf is not _CONTAINER:
        return leaf
    stack = [_Rebuild(value, path)]
    while True:
        frame = stack[-1]
        index, child = next(frame.items, (-1, None))
        if index < 0:
            stack.pop()
            built = frame.build()
            if not stack:
                return built
            stack[-1].done.append(built)
            continue
        out = _leaf(child, edit)
        if out is _CONTAINER:
            stack.append(_Rebuild(child, frame.child_path(index)))
        elif out is _UNSUPPORTED:
            raise _unsupported(frame.child_path(index), child)
        else:
            frame.done.append(out)


def _unsupported(path: str, value: object) -> TypeError:
    return TypeError(
        f"{path}: expected a string, number, bool, None, dict, list or tuple, got "
        f"{describe(value)}"
    )


def _apply(
    payload: object, subs: tuple[Substitution, ...]
) -> tuple[object, tuple[tuple[str, int], ...]]:
    found = matcher(subs)
    counts = [0] * len(subs)

    def replace(m: re.Match[str]) -> str:
        text = m.group()
        i = found.which(text)
        counts[i] += 1
        return transfer_case(text, subs[i].replacement)

    perturbed = _rewrite(payload, "payload", lambda text: found.pattern.sub(replace, text))
    return perturbed, tuple((s.pattern, n) for s, n in zip(subs, counts, strict=True) if n)


def perturb(payload: object, axes: Sequence[AxisSpec]) -> list[Perturbation]:
    """Apply every axis to ``payload``; one perturbation per (axis, kind), explicit first.

    Parameters
    ----------
    payload
        A string, or nested dicts / lists / tuples whose string leaves are edited.  Keys,
        numbers, None and booleans are left untouched and container types are preserved.
    axes
        A non-empty sequence of :class:`AxisSpec` with distinct names.  There is no default.

    Returns
    -------
    list of Perturbation
        Axes in the order given; within an axis EXPLICIT then PROXY; a kind without
        substitutions in an axis yields nothing.  Unchanged payloads are kept, flagged
        ``changed=False``.
    """
    if axes is None or isinstance(axes, AxisSpec | str) or not isinstance(axes, Sequence):
        if axes is None:
            raise PerturbationError(_NO_AXES)
        raise PerturbationError(f"axes: expected a sequence of AxisSpec, got {describe(axes)}")
    if len(axes) == 0:
        raise PerturbationError(_NO_AXES)
    names: set[str] = set()
    for i, axis in enumerate(axes):
        if not isinstance(axis, AxisSpec):
            raise PerturbationError(f"axes[{i}]: expected an AxisSpec, got {describe(axis)}")
        if axis.name in names:
            raise PerturbationError(f"axes[{i}]: duplicate axis name {axis.name!r}")
        names.add(axis.name)
    out: list[Perturbation] = []
    for axis in axes:
        for kind in PerturbationKind:
            subs = axis.of_kind(kind)
            if not subs:
                continue
            perturbed, fired = _apply(payload, subs)
            out.append(Perturbation(axis.name, kind, payload, perturbed, fired, bool(fired)))
    return out


# ---------------------------------------------------------------------------------------------
# Configuration


_AXIS_KEYS = ("name", "substitutions")
_SUB_KEYS = ("pattern", "replacement", "kind")


def _check_keys(item: Mapping[object, object], where: str, allowed: tuple[str, ...],
                required: tuple[str, ...]) -> None:
    for key in item:
        if key not in allowed:
            raise config_error(where, f"only keys {', '.join(allowed)}; unknown key", key)
    for key in required:
        if key not in item:
            raise ConfigError(f"{where}.{key}: expected a value, got nothing (required key "
                              "missing)")


def _string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise config_error(where, "a string", value)
    return value


def axis_from_config(item: object, *, where: str) -> AxisSpec:
    """Build one :class:`AxisSpec` from its parsed-YAML mapping; errors are one-line ConfigError.

    The mapping is ``{name: str, substitutions: [{pattern: str, replacement: str,
    kind: explicit|proxy (default explicit)}]}``; unknown keys are rejected and every message
    starts with ``where`` followed by the key path, e.g. ``<where>.substitutions[1].kind``.
    """
    if not isinstance(item, Mapping):
        raise config_error(where, "a mapping with keys name, substitutions", item)
    _check_keys(item, where, _AXIS_KEYS, _AXIS_KEYS)
    name = _string(item["name"], f"{where}.name")
    raw_subs = item["substitutions"]
    if not isinstance(raw_subs, list):
        raise config_error(f"{where}.substitutions", "a list of substitutions", raw_subs)
    subs: list[Substitution] = []
    for i, raw in enumerate(raw_subs):
        at = f"{where}.substitutions[{i}]"
        if not isinstance(raw, Mapping):
            raise config_error(at, "a mapping with keys pattern, replacement, kind", raw)
        _check_keys(raw, at, _SUB_KEYS, ("pattern", "replacement"))
        pattern = _string(raw["pattern"], f"{at}.pattern")
        replacement = _string(raw["replacement"], f"{at}.replacement")
        raw_kind = raw.get("kind", PerturbationKind.EXPLICIT.value)
        kinds = {k.value: k for k in PerturbationKind}
        if not isinstance(raw_kind, str) or raw_kind not in kinds:
            raise config_error(f"{at}.kind", f"one of {', '.join(kinds)}", raw_kind)
        try:
            subs.append(Substitution(pattern, replacement, kind=kinds[raw_kind]))
        except PerturbationError as exc:
            raise ConfigError(f"{at}: {exc}") from exc
    try:
        return AxisSpec(name, tuple(subs))
    except PerturbationError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
