"""Counterfactual flip-rate audit: how often does a model's decision change under a perturbation?

For each (axis, kind) of the caller's axes, every payload is perturbed (see :mod:`faircode.perturb`)
and the model's decisions on the originals and on the perturbed payloads are compared.  The flip
rate is the share of *changed* payloads (at least one pattern fired) whose decision differs, with
an exact Clopper–Pearson confidence interval.

Deliberate design decisions
---------------------------
* **Unchanged payloads are never counted as "no flip".**  A payload on which no pattern fired
  carries no evidence about the axis; it is reported in ``n_unchanged`` and excluded from the
  rate.  With no changed payload the rates are NaN and ``note == "no_changed_rows"``.
* **Exact binomial interval.**  The flip count is ``Binomial(n_changed, rate)``, so the interval
  is Clopper–Pearson's (``scipy.stats.binomtest(n_flipped, n_changed).proportion_ci("exact")``),
  which covers at least the nominal level for every rate and never collapses: with no flip it is
  ``[0, 1 − (α/2)^(1/n)]``.  A percentile bootstrap of the same count gave ``[0, 0]`` at zero
  flips and upper bounds 1.25–1.85× too low at 1–3 flips.  Nothing here is random.
* **Batch prediction.**  :func:`flip_rate` calls ``predict`` once on the originals and once per
  (axis, kind) on all perturbed payloads (unchanged ones included, so every batch has one row per
  payload).
* **JSONL front end.**  :func:`load_axes` and :func:`perturb_jsonl` back the
  ``faircode perturb`` command; every line is validated and perturbed before anything is returned,
  so a malformed line never leaves a half-written output.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd
from scipy import stats as sps

from faircode import clusters, stats
from faircode._jsonl import parse_line
from faircode._schema import read_yaml
from faircode.data import AuditData, disadvantaged_mask
from faircode.errors import ConfigError, PerturbationError, config_error
from faircode.perturb import AxisSpec, Perturbation, PerturbationKind, axis_from_config, perturb

__all__ = [
    "FlipRateResult",
    "PerturbedRows",
    "flip_rate",
    "flip_rates",
    "load_axes",
    "perturb_jsonl",
    "perturb_test_rows",
]

NO_CHANGED_ROWS = "no_changed_rows"


@dataclass(frozen=True, slots=True)
class FlipRateResult:
    """Flip rate of one (axis, kind), its exact Clopper–Pearson CI, and the flips' direction.

    ``to_favourable`` / ``to_unfavourable`` are shares of the *changed* rows whose decision moved
    from not-favourable to favourable / from favourable to not-favourable.
    """

    axis: str
    kind: PerturbationKind
    flip_rate: float
    ci_low: float
    ci_high: float
    to_favourable: float
    to_unfavourable: float
    n_changed: int
    n_unchanged: int
    n_flipped: int
    note: str
    design_effect: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.kind, PerturbationKind):
            raise TypeError(f"kind: expected a PerturbationKind, got {self.kind!r}")
        if min(self.n_changed, self.n_unchanged, self.n_flipped) < 0:
            raise ValueError("counts must be non-negative")
        if self.n_flipped > self.n_changed:
            raise ValueError(f"n_flipped={self.n_flipped} exceeds n_changed={self.n_changed}")
        if self.n_changed == 0 and self.note != NO_CHANGED_ROWS:
            raise ValueError(f"a result with no changed rows must carry note {NO_CHANGED_ROWS!r}")


def flip_rates(
    original: np.ndarray,
    perturbed: np.ndarray,
    changed: np.ndarray,
    *,
    axis: str,
    kind: PerturbationKind,
    favourable: int = 1,
    confidence: float = 0.95,
    units: np.ndarray | None = None,
) -> FlipRateResult:
    """Return the flip rate among changed rows with an exact Clopper–Pearson interval.

    Parameters
    ----------
    original, perturbed
        Decisions per row before and after the perturbation (1-D, same length).
    changed
        Boolean per row: did the perturbation edit the payload?  Only these rows count.
    favourable
        The decision counted as favourable (``to_favourable``/``to_unfavourable``).
    confidence
        Coverage of the interval.
    units
        Optional unit id per row (a person).  When a unit has several changed rows, the
        interval is Clopper–Pearson at Kish's effective size: ``n_changed`` and ``n_flipped``
        divided by ``max(1, design_effect)``, where ``design_effect`` is the linearised
        (ratio-estimator) cluster variance of the rate over its binomial variance
        ``r(1 − r)/n``; the cluster variance is ``K/(K − 1) · Σ_u (f_u − r·m_u)² / n²`` over the
        ``K`` units with changed rows (``f_u`` flips of ``m_u`` rows).  Deterministic, like the
        rate.  ``design_effect`` is 1.0 without units or when no unit repeats.
    """
    before = np.asarray(original)
    after = np.asarray(perturbed)
    mask = np.asarray(changed)
    if before.ndim != 1 or before.shape != after.shape or before.shape != mask.shape:
        raise ValueError(
            f"original, perturbed and changed must be 1-D of one length, got shapes "
            f"{before.shape}, {after.shape}, {mask.shape}"
        )
    if mask.dtype != np.bool_:
        raise TypeError(f"changed: expected a boolean array, got dtype {mask.dtype}")
    stats.check_confidence(confidence)
    n_changed = int(mask.sum())
    n_unchanged = int(mask.size - n_changed)
    if n_changed == 0:
        nan = math.nan
        return FlipRateResult(axis, kind, nan, nan, nan, nan, nan, 0, n_unchanged, 0,
                              NO_CHANGED_ROWS)
    b, a = before[mask], after[mask]
    n_flipped = int(np.count_nonzero(b != a))
    rate = n_flipped / n_changed
    up = np.count_nonzero((b != favourable) & (a == favourable)) / n_changed
    down = np.count_nonzero((b == favourable) & (a != favourable)) / n_changed
    deff = 1.0
    inverse = clusters.repeated_units(units, mask.size)
    if inverse is not None:
        _, unit = np.unique(inverse[mask], return_inverse=True)
        unit = unit.reshape(-1)
        if int(unit.max()) + 1 < n_changed:  # some unit has several changed rows
            deff = _flip_design_effect(unit, (b != a).astype(np.float64), rate)
    factor = clusters.deflation(deff)
    if factor == 1.0:
        interval = sps.binomtest(n_flipped, n_changed).proportion_ci(
            confidence_level=confidence, method="exact"
        )
        low, high = float(interval.low), float(interval.high)
    else:
        low, high = _clopper_pearson(n_flipped / factor, n_changed / factor, confidence)
    return FlipRateResult(axis, kind, rate, low, high, float(up), float(down),
                          n_changed, n_unchanged, n_flipped, "", deff)


def _flip_design_effect(unit: np.ndarray, flipped: np.ndarray, rate: float) -> float:
    """Linearised cluster variance of the flip rate over its binomial variance (NaN if 0)."""
    n = flipped.size
    k = int(unit.max()) + 1
    row_var = rate * (1.0 - rate) / n
    if k < 2 or row_var == 0.0:
        return math.nan
    residual = np.bincount(unit, weights=flipped - rate, minlength=k)
    cluster_var = k / (k - 1) * float(np.sum(residual**2)) / n**2
    return cluster_var / row_var


def _clopper_pearson(x: float, n: float, confidence: float) -> tuple[float, float]:
    """Clopper–Pearson's beta-quantile interval, defined for fractional (effective) counts."""
    alpha = 1.0 - confidence
    low = 0.0 if x <= 0 else float(sps.beta.ppf(alpha / 2, x, n - x + 1))
    high = 1.0 if x >= n else float(sps.beta.ppf(1 - alpha / 2, x + 1, n - x))
    return low, high


def flip_rate(
    predict: Callable[[list], Sequence[int]],
    payloads: Sequence[object],
    axes: Sequence[AxisSpec],
    *,
    favourable: int = 1,
    confidence: float = 0.95,
) -> tuple[FlipRateResult, ...]:
    """Perturb every payload on every axis and return one flip-rate result per (axis, kind).

    ``predict`` is called once on the list of originals and once per (axis, kind) on the list of
    perturbed payloads; it must return one integer decision per payload.
    """
    rows = [perturb(p, axes) for p in payloads]  # raises on no axes before predict is called
    if not rows:
        raise ValueError("payloads: expected at least one payload, got none")
    keys = [(p.axis, p.kind) for p in rows[0]]
    n = len(rows)

    def decide(batch: list) -> np.ndarray:
        out = np.asarray(predict(batch))
        if out.shape != (n,):
            raise ValueError(f"predict returned shape {out.shape} for a batch of {n} payloads")
        return out

    before = decide(list(payloads))
    results = []
    for i, (axis, kind) in enumerate(keys):
        after = decide([row[i].perturbed for row in rows])
        changed = np.fromiter((row[i].changed for row in rows), dtype=bool, count=n)
        results.append(
            flip_rates(before, after, changed, axis=axis, kind=kind, favourable=favourable,
                       confidence=confidence)
        )
    return tuple(results)


def load_axes(path: Path) -> tuple[AxisSpec, ...]:
    """Read axes from a YAML file: a list of axes or a mapping ``{axes: [...]}``.

    Every error is a one-line :class:`~faircode.errors.ConfigError` naming the file and key path.
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
            "(faircode ships no built-in axes; the caller must choose them)"
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


def perturb_jsonl(axes: Sequence[AxisSpec], lines: Iterable[str], *, source: str) -> list[dict]:
    """Perturb each JSON-object line and return one record per (line, axis, kind).

    A line's id is its ``"id"`` field if present (a string or integer), else its 1-based line
    number; its payload is the ``"payload"`` field if present, else the whole object without
    ``"id"`` (other fields beside ``"payload"`` are neither perturbed nor echoed).  Blank lines are
    skipped.  Records are ``{"id", "axis", "kind", "fired": {pattern: n}, "changed",
    "perturbed"}``.  A malformed line raises :class:`~faircode.errors.ConfigError` naming
    ``source`` and the line number; nothing is returned unless every line is valid.  ``lines``
    are split at ``\n`` only (:func:`faircode._jsonl.split_lines`): U+2028 is valid inside a
    JSON string.  Each line is parsed by :func:`faircode._jsonl.parse_line` (bounded nesting and
    integer digits; NaN and Infinity refused, as they are not JSON).
    """
    parsed: list[tuple[object, object]] = []
    ids: dict[object, int] = {}
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}:{lineno}"
        obj = parse_line(line, where=where)  # bounded depth and digits; NaN refused
        if not isinstance(obj, dict):
            raise config_error(where, "a JSON object", obj)
        if "id" in obj:
            pid = obj["id"]
            if isinstance(pid, bool) or not isinstance(pid, str | int):
                raise config_error(f"{where}: id", "a string or integer", pid)
        else:
            pid = lineno
        if pid in ids:
            raise ConfigError(f"{where}: id: duplicate id {pid!r} (also line {ids[pid]})")
        ids[pid] = lineno
        payload = obj["payload"] if "payload" in obj else {k: v for k, v in obj.items()
                                                           if k != "id"}
        parsed.append((pid, payload))
    records: list[dict] = []
    for pid, payload in parsed:
        try:
            perts = perturb(payload, axes)
        except PerturbationError as exc:
            raise ConfigError(f"{source}: {exc}") from exc
        records.extend(
            {"id": pid, "axis": p.axis, "kind": p.kind.value, "fired": dict(p.fired),
             "changed": p.changed, "perturbed": p.perturbed}
            for p in perts
        )
    return records


@dataclass(frozen=True, slots=True)
class PerturbedRows:
    """A manifest axis applied to the raw test rows of an audit, re-encoded for prediction.

    ``X`` is the whole test table after the edit, encoded with the audit's own fitted encoder;
    ``sensitive`` is the first protected attribute's disadvantaged mask recomputed from the
    edited values (S4 needs the sensitive feature at predict time: when an axis edits the
    protected column itself, the post-processor sees the counterfactual group too; a row the
    edit makes unclassifiable keeps its original group); ``changed`` marks the rows the edit
    touched.
    """

    axis: str
    kind: PerturbationKind
    columns: tuple[str, ...]
    X: pd.DataFrame
    sensitive: np.ndarray
    changed: np.ndarray


def perturb_test_rows(data: AuditData) -> tuple[PerturbedRows, ...]:
    """Apply every ``counterfactual_axes`` entry of the audit's manifest to its test rows.

    Each row's values of the axis's ``columns`` form one record payload; explicit and proxy
    substitutions give separate :class:`PerturbedRows` (explicit first), as :func:`perturb` does.
    """
    manifest = data.manifest
    raw_test = data.raw.iloc[data.test_index].reset_index(drop=True)
    first = manifest.protected_attributes[0]
    original_sensitive = data.disadvantaged[first.name][data.test_index]
    out: list[PerturbedRows] = []
    for entry in manifest.counterfactual_axes:
        columns = list(entry.columns)
        records = [
            {k: (None if _is_missing(v) else v) for k, v in row.items()}
            for row in raw_test.loc[:, columns].to_dict("records")
        ]
        by_kind: dict[PerturbationKind, list[Perturbation]] = {}
        for record in records:
            for pert in perturb(record, [entry.axis]):
                by_kind.setdefault(pert.kind, []).append(pert)
        for kind, perts in by_kind.items():
            edited = raw_test.copy()
            for column in columns:
                values = [cast(dict, p.perturbed)[column] for p in perts]
                edited[column] = pd.Series(values, dtype=raw_test[column].dtype)
            disadvantaged, classified = disadvantaged_mask(first, edited[first.column])
            sensitive = np.where(classified, disadvantaged, original_sensitive)
            out.append(PerturbedRows(
                axis=entry.axis.name, kind=kind, columns=entry.columns,
                X=data.encoder.transform(edited), sensitive=sensitive,
                changed=np.fromiter((p.changed for p in perts), dtype=bool, count=len(perts)),
            ))
    return tuple(out)


def _is_missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))
