"""Placebo arms: swaps within a declared group, the control a between-group swap is read against.

A flip rate says how often a decision changes when one word is replaced; part of that is what
replacing *any* word of the kind does (one first name by another), whatever group it belongs to.
A **placebo arm** measures that part: it swaps terms *within* a declared group -- a White
woman's first name for another White woman's, "gay" for "homosexual" -- so the group does not
change, only the word.  The between-group swap's effect beyond its placebo is what the group
accounts for.

* A :class:`PlaceboGroup` is declared data (the ``groups:`` of an axes file,
  :func:`faircode.counterfactual.axes.load_axes_file`): a name and at least two terms that belong
  together.  faircode ships no group, as it ships no axis: which terms stand for the same group
  is the caller's editorial choice.
* :func:`placebo_arms` pairs each (axis, kind) with the groups that hold any of its terms -- its
  patterns (one side) or its replacements (the other).  A group holding terms of **both sides**
  of one axis would swap across the comparison it controls, and is refused in one line naming
  the group, the axis and the two terms.  An axis no group touches has no arm.
* :func:`placebo_swaps` turns a group into axes of the engine: shift ``k`` (``1 ≤ k < g``) maps
  the ``i``-th member to the ``(i + k) mod g``-th, so the ``g − 1`` shifts together make every
  ordered pair of distinct members exactly once (``a → b`` and ``b → a``), each shift one
  :class:`~faircode.counterfactual.perturb.AxisSpec` (a swap axis: one pass, no member undone).
  Using every ordered pair makes the arm symmetric: over fully crossed sentences its mean score
  shift is 0 by construction, so the shift of a between-group swap is its own excess.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from faircode.core.errors import ConfigError, config_error, describe
from faircode.core.names import SAFE_NAME_TEXT, is_safe_name
from faircode.counterfactual._match import normalise
from faircode.counterfactual.perturb import AxisSpec, PerturbationKind, Substitution

__all__ = ["PlaceboArm", "PlaceboGroup", "groups_from_config", "placebo_arms", "placebo_swaps"]

SHIFT = "+"
"""Between a group's name and its shift in the name of a placebo swap axis (``white_female+3``)."""


@dataclass(frozen=True, slots=True)
class PlaceboGroup:
    """Terms that belong together: swapping one for another keeps the group."""

    name: str
    members: tuple[str, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not is_safe_name(self.name):
            raise ConfigError(f"placebo group name: expected {SAFE_NAME_TEXT}, got "
                              f"{describe(self.name)}")
        where = f"group {self.name!r}"
        members = self.members
        if isinstance(members, str) or not isinstance(members, Sequence):
            raise ConfigError(f"{where}: expected a list of terms, got {describe(members)}")
        object.__setattr__(self, "members", tuple(members))
        if len(self.members) < 2:
            raise ConfigError(f"{where}: expected at least two terms (a swap within the group), "
                              f"got {len(self.members)}")
        seen: set[str] = set()
        for i, term in enumerate(self.members):
            if not isinstance(term, str) or not term.strip() or term != term.strip():
                raise ConfigError(f"{where}[{i}]: expected a term without surrounding "
                                  f"whitespace, got {describe(term)}")
            if normalise(term) in seen:
                raise ConfigError(f"{where}[{i}]: expected distinct terms (case-insensitively), "
                                  f"got {term!r} twice")
            seen.add(normalise(term))


@dataclass(frozen=True, slots=True)
class PlaceboArm:
    """The placebo of one (axis, kind): the groups whose within-group swaps control it."""

    axis: str
    kind: PerturbationKind
    groups: tuple[str, ...]


def groups_from_config(raw: object, *, where: str) -> tuple[PlaceboGroup, ...]:
    """``groups:`` of an axes file: a mapping of group names to lists of terms (one-line
    :class:`~faircode.core.errors.ConfigError` naming ``where`` and the key path); a term may
    belong to one group only."""
    if not isinstance(raw, Mapping) or not raw:
        raise config_error(where, "a mapping of group names to lists of terms", raw)
    out: list[PlaceboGroup] = []
    owner: dict[str, str] = {}
    for name, terms in raw.items():
        at = f"{where}.{name}"
        if not isinstance(terms, list):
            raise config_error(at, "a list of at least two terms", terms)
        try:
            group = PlaceboGroup(name, tuple(terms))
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        for i, term in enumerate(group.members):
            key = normalise(term)
            if key in owner:
                raise ConfigError(f"{at}[{i}]: expected a term of one group only, got {term!r}, "
                                  f"also in {owner[key]}")
            owner[key] = group.name
        out.append(group)
    return tuple(out)


def placebo_arms(axes: Sequence[AxisSpec], groups: Sequence[PlaceboGroup], *,
                 where: str) -> tuple[PlaceboArm, ...]:
    """The placebo arm of every (axis, kind) that a group touches, in axis order (explicit
    before proxy); a group crossing an axis's sides, or touching no axis, is a one-line
    :class:`~faircode.core.errors.ConfigError` naming ``where``."""
    members = [(g, {normalise(t): t for t in g.members}) for g in groups]
    used: set[str] = set()
    arms: list[PlaceboArm] = []
    for axis in axes:
        for kind in PerturbationKind:
            subs = axis.of_kind(kind)
            if not subs:
                continue
            patterns = {normalise(s.pattern): s.pattern for s in subs}
            replacements = {normalise(s.replacement): s.replacement for s in subs}
            chosen = []
            for group, terms in members:
                source = sorted(set(terms) & set(patterns))
                target = sorted(set(terms) & set(replacements))
                if source and target:
                    raise ConfigError(
                        f"{where}: groups.{group.name}: expected terms on one side of axis "
                        f"{axis.name!r} (its patterns or its replacements), got "
                        f"{terms[source[0]]!r} (a pattern) and {terms[target[0]]!r} (a "
                        "replacement)")
                if source or target:
                    chosen.append(group.name)
            if chosen:
                used.update(chosen)
                arms.append(PlaceboArm(axis.name, kind, tuple(chosen)))
    for group in groups:
        if group.name not in used:
            raise ConfigError(f"{where}: groups.{group.name}: expected a group holding a term "
                              f"of some axis, got one holding none of {', '.join(group.members)}")
    return tuple(arms)


def placebo_swaps(group: PlaceboGroup, kind: PerturbationKind) -> tuple[AxisSpec, ...]:
    """Every within-group swap of ``group`` as axes of ``kind``: shift ``k`` maps member ``i`` to
    member ``(i + k) mod g`` (axis ``<group>+<k>``); together every ordered pair once."""
    g = len(group.members)
    return tuple(
        AxisSpec(f"{group.name}{SHIFT}{k}", tuple(
            Substitution(group.members[i], group.members[(i + k) % g], kind=kind)
            for i in range(g)))
        for k in range(1, g))
