"""A text audit's results on disk -> its MLflow child runs: one per system x axis x kind.

The ``text`` kind's entry of :data:`faircode.record.kinds.CHILDREN`: reads a checked
``<results>/<audit>/`` as the evaluate stage writes a text audit's (``run.json`` with ``kind:
text``, ``flips.csv``, ``ctf.csv`` and ``placebo.csv``).  A child is named like the grid's
counterfactual children, ``<audit> <system> flip <axis> (<kind>)`` (``bias_madlibs
profanity_check flip race_black_to_white (proxy)``; on a declared sentence set ``(<kind>,
<set>)``), with ``audit``, ``system``, ``table`` (``text``), ``axis``, ``channel`` and ``set`` as
params and tags, so MLflow's compare view shows what differs.  Metrics, short keys
in the manner of :mod:`faircode.record.names`: per operating point ``<point>.flip``,
``<point>.flip.lo``/``.hi``, ``<point>.flip.q_audit`` (the direction test's q in the system's
own family), ``<point>.to_pos``, ``<point>.to_neg``, ``<point>.n_changed``; and ``ctf``,
``ctf.lo``, ``ctf.hi``, ``shift``, ``shift.lo``, ``shift.hi``, ``shift.p``, ``shift.q_audit``;
where the axis has a placebo, the difference from it: ``<point>.placebo`` (with ``.lo``, ``.hi``,
``.q_audit``) and ``shift.placebo`` (likewise), and each one's verdict as the tag
``<point>.placebo.verdict`` / ``shift.placebo.verdict``.
Each point's threshold and rule are params and tags (``<point>.threshold``, ``<point>.rule``):
as tags they are part of the child's digest (:func:`faircode.record.child.child_digest`, which
leaves params out), so a moved threshold is a different child even when no flip changed.  An
empty or non-finite cell is not logged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from faircode.core.layout import TEXT_RUN, run_record, table_path
from faircode.provenance.state import state_of
from faircode.record._values import finite_number, read_table
from faircode.record.runs import ChildRun, sanitise, state_tags

__all__ = ["CTF_KEYS", "FLIP_KEYS", "text_children"]

FLIP_KEYS = {"flip_rate": "flip", "ci_low": "flip.lo", "ci_high": "flip.hi",
             "p_value": "flip.p", "q_value": "flip.q_audit", "to_positive": "to_pos",
             "to_negative": "to_neg", "n_changed": "n_changed", "n_flipped": "n_flipped",
             "design_effect": "flip.deff"}
"""flips.csv column -> metric key (after ``<point>.``)."""
CTF_KEYS = {"ctf_gap": "ctf", "ci_low": "ctf.lo", "ci_high": "ctf.hi", "shift": "shift",
            "shift_ci_low": "shift.lo", "shift_ci_high": "shift.hi", "p_value": "shift.p",
            "q_value": "shift.q_audit", "n_pairs": "n_pairs", "n_units": "n_units"}
"""ctf.csv column -> metric key."""
PLACEBO_KEYS = {"difference": "placebo", "ci_low": "placebo.lo", "ci_high": "placebo.hi",
                "q_value": "placebo.q_audit"}
"""placebo.csv column -> metric key (after ``<point>.`` or ``shift.``)."""
_OWN_SETS = ("data", "names")


def text_children(folder: Path) -> list[ChildRun]:
    """One :class:`ChildRun` per system x axis x kind of the text audit in ``folder``."""
    run = json.loads(run_record(folder).read_text(encoding="utf-8"))
    audit = str(run.get("audit", folder.name))
    config = run.get("config") or {}
    base_params = {k: str(v) for k, v in config.items() if k != "jobs"}
    base_params["seed"] = str((run.get("seeds") or {}).get("master", ""))
    base_tags = {"audit": audit, "kind": TEXT_RUN,
                 "dataset_sha256": str((run.get("dataset") or {}).get("sha256", "")),
                 "manifest_sha256": str(run.get("manifest_sha256", "")),
                 **state_tags(state_of(run))}
    flips = read_table(table_path(folder, "flips"), "a text audit's")
    ctf = read_table(table_path(folder, "ctf"), "a text audit's")
    path = table_path(folder, "placebo")  # absent from a folder written before placebos
    placebo = read_table(path, "a text audit's") if path.is_file() else pd.DataFrame(
        columns=["system", "axis", "kind", "set", "measure"])
    for frame in (flips, ctf):
        if "set" not in frame:  # a folder written before sentence sets were a column
            frame["set"] = ""
    children = []
    for (system, axis, kind, which), rows in ctf.groupby(["system", "axis", "kind", "set"],
                                                        sort=False):
        who = {"audit": audit, "system": str(system), "table": "text", "axis": str(axis),
               "channel": str(kind), "set": str(which)}
        metrics: dict[str, float] = {}
        params = {**base_params, **who}
        points: dict[str, str] = {}  # each point's threshold and rule: params and tags
        for column, key in CTF_KEYS.items():
            value = finite_number(rows[column].iat[0])
            if value is not None:
                metrics[key] = value
        verdicts = _placebo(placebo, metrics, system=system, axis=axis, kind=kind, which=which)
        mine = flips[(flips["system"] == system) & (flips["axis"] == axis)
                     & (flips["kind"] == kind) & (flips["set"] == which)]
        for row in mine.itertuples(index=False):
            point = sanitise(str(row.operating_point))
            points[f"{point}.threshold"] = str(row.threshold)
            points[f"{point}.rule"] = f"{row.rule} ({row.direction})"
            for column, key in FLIP_KEYS.items():
                value = finite_number(getattr(row, column))
                if value is not None:
                    metrics[sanitise(f"{point}.{key}")] = value
        params.update(points)
        channel = str(kind) if which in ("", *_OWN_SETS) else f"{kind}, {which}"
        name = f"{audit} {system} flip {axis} ({channel})"
        key = "|".join(("text", audit, str(system), str(axis), str(kind),
                        *(() if which in ("", *_OWN_SETS) else (str(which),))))
        first = rows["note"].iat[0] if "note" in rows else None
        note = str(first) if isinstance(first, str) else ""
        tags = {**base_tags, **who, **points, **verdicts, "informative": "true",
                "faircode.child_key": key,
                "mlflow.note.content": f"{name}: counterfactual flip rates and CTF gap."}
        if note:
            tags["notes"] = note
        children.append(ChildRun(key, audit, name, tags, params, metrics))
    return children


def _placebo(placebo: pd.DataFrame, metrics: dict[str, float], *, system: Any, axis: Any,
             kind: Any, which: Any) -> dict[str, str]:
    """Add the placebo differences of one child to ``metrics``; its verdicts, as tags."""
    rows = placebo[(placebo["system"] == system) & (placebo["axis"] == axis)
                   & (placebo["kind"] == kind) & (placebo["set"] == which)
                   & placebo["measure"].isin(["flip_rate", "shift"])]
    tags = {}
    for row in rows.itertuples(index=False):
        prefix = "shift" if row.measure == "shift" else sanitise(str(row.operating_point))
        for column, key in PLACEBO_KEYS.items():
            value = finite_number(getattr(row, column))
            if value is not None:
                metrics[f"{prefix}.{key}"] = value
        tags[f"{prefix}.placebo.verdict"] = str(row.verdict)
    return tags
