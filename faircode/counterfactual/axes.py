"""Axes files: the caller's counterfactual axes read from YAML (``faircode perturb --axes``).

faircode ships no built-in axes: a file with no axis is an error that says so.  A file is a list
of axes or a mapping ``{axes: [...], groups: {...}}``; ``groups`` (optional) declares the
placebo groups of its axes (:mod:`faircode.counterfactual.placebo`): which terms belong
together, so that a swap within a group is the control of a swap between groups.  A group that
crosses the two sides of an axis, or touches none, is refused with the file's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from faircode.core.errors import ConfigError, config_error
from faircode.core.schema import read_yaml
from faircode.counterfactual.perturb import AXES_GUIDE, AxisSpec, axis_from_config
from faircode.counterfactual.placebo import (
    PlaceboArm,
    PlaceboGroup,
    groups_from_config,
    placebo_arms,
)

__all__ = ["AxesDocument", "load_axes", "load_axes_file"]

_KEYS = ("axes", "groups")


@dataclass(frozen=True, slots=True)
class AxesDocument:
    """An axes file's axes, its placebo groups and the placebo arm of each (axis, kind) they
    touch."""

    axes: tuple[AxisSpec, ...]
    groups: tuple[PlaceboGroup, ...] = ()
    arms: tuple[PlaceboArm, ...] = ()


def load_axes(path: Path) -> tuple[AxisSpec, ...]:
    """Read the axes of a YAML axes file (:func:`load_axes_file`; its groups are checked too)."""
    return load_axes_file(path).axes


def load_axes_file(path: Path) -> AxesDocument:
    """Read axes and placebo groups from a YAML file: a list of axes or a mapping ``{axes:
    [...], groups: {name: [terms]}}``.

    Every error is a one-line :class:`~faircode.core.errors.ConfigError` naming the file and key
    path.
    """
    where = str(path)
    try:  # bounded; a repeated key would otherwise silently drop a substitution
        doc = read_yaml(Path(path))
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read axes file ({exc.strerror})") from exc
    raw_groups = None
    if isinstance(doc, dict):
        unknown = [k for k in doc if k not in _KEYS]
        if unknown:
            raise config_error(where, "only keys axes and groups; unknown key", unknown[0])
        if "axes" not in doc:
            raise ConfigError(f"{where}: axes: expected a list of axes, got nothing")
        items, prefix, raw_groups = doc["axes"], "axes", doc.get("groups")
    else:
        items, prefix = doc, ""
    if not isinstance(items, list):
        raise config_error(f"{where}: {prefix}" if prefix else where,
                           "a list of axes (or a mapping with key axes)", items)
    if not items:
        raise ConfigError(
            f"{where}: {prefix or 'axes'}: expected at least one axis, got an empty list "
            f"(faircode ships no built-in axes; the caller must choose them: {AXES_GUIDE})"
        )
    axes = tuple(axis_from_config(item, where=f"{where}: {prefix}[{i}]")
                 for i, item in enumerate(items))
    seen: dict[str, int] = {}
    for i, axis in enumerate(axes):
        if axis.name in seen:
            raise ConfigError(f"{where}: {prefix}[{i}].name: duplicate axis name {axis.name!r} "
                              f"(also {prefix}[{seen[axis.name]}])")
        seen[axis.name] = i
    if raw_groups is None:
        return AxesDocument(axes)
    groups = groups_from_config(raw_groups, where=f"{where}: groups")
    return AxesDocument(axes, groups, placebo_arms(axes, groups, where=where))
