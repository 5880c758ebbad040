"""Axes files: the caller's counterfactual axes read from YAML (``faircode perturb --axes``).

faircode ships no built-in axes: a file with no axis is an error that says so.
"""

from __future__ import annotations

from pathlib import Path

from faircode.core.errors import ConfigError, config_error
from faircode.core.schema import read_yaml
from faircode.counterfactual.perturb import AXES_GUIDE, AxisSpec, axis_from_config

__all__ = ["load_axes"]


def load_axes(path: Path) -> tuple[AxisSpec, ...]:
    """Read axes from a YAML file: a list of axes or a mapping ``{axes: [...]}``.

    Every error is a one-line :class:`~faircode.core.errors.ConfigError` naming the file and key
    path.
    """
    where = str(path)
    try:  # bounded; a repeated key would otherwise silently drop a substitution
        doc = read_yaml(Path(path))
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read axes file ({exc.strerror})") from exc
    if isinstance(doc, dict):
        unknown = [k for k in doc if k != "axes"]
        if unknown:
            raise config_error(where, "only key axes; unknown key", unknown[0])
        if "axes" not in doc:
            raise ConfigError(f"{where}: axes: expected a list of axes, got nothing")
        items, prefix = doc["axes"], "axes"
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
    return axes
