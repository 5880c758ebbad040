"""Results on disk -> the MLflow runs they describe (no mlflow here; see
:mod:`faircode.record.tracking`).

Reads ``<results>/<audit>/`` exactly as the grid writes it, and the report's outputs beside them
(``summary.csv``, the paper tables, ``report.html``, ``figures/``: :func:`report_files`).
Tables are read as text; every column whose non-empty cells are all numbers (or
``True``/``False``) becomes a metric whose short key :func:`faircode.record.names.metric_key`
gives (``dp``, ``dp.lo``, ``dp.q_audit``); other non-empty text cells become tags.  No metric or
column list decides *what* is logged: an unknown row or column keeps its own name.  An empty or
non-finite cell is not logged (MLflow's table shows it empty; the CSV keeps it); two values for
one metric key of one run is an error, not an overwrite.  A table that is not whole -- its last
line not ending in a newline (a copy or a write cut short), or a row not as wide as its header --
is an error naming the file and line, never a new state to log; before any of that, an audit
folder must hold exactly the files its ``run.json`` records, byte for byte
(:func:`faircode.core.digests.checked_run`, called by :func:`faircode.record.kinds.
collect_children`, which hands each grid audit to :func:`grid_children`).

A child (:class:`faircode.record.child.ChildRun`) has its identity also as params (``audit``,
``strategy``, ``strategy_code``, ``model``, ``table``, ``attribute`` or ``axis``/``channel``) so
MLflow's compare view shows what differs; they are tags too.  Its audit's ``state``
(``run.json``) is tagged ``state.*``.  The benchmark-wide q (``q_benchmark``: one BH family
over every audit's p-values) is not a child's number but the report's (``summary.csv``, the
parent's ``report/`` artifacts): a sweep value that changes four audits' p-values moves it for
every audit, and on the children it would make every fairness child of every audit differ from
the last state's (:mod:`faircode.record._shared`: 556 children to log for a threshold value
instead of 306).

The ranking view (``ranking.csv``, where a run has one) goes to the fairness child of its row
set x attribute: ``expo`` (the exposure ratio), ``expo.lo``/``.hi``, ``expo.q_audit`` and
FA*IR's ``expo.fair_k`` ... in the kind's own units; its verdict is the tag
``ranking.exposure_ratio.verdict``.

The paired effects (``effects.csv``: at K > 1 the K-replicate estimates, as every view shows
them) go to the child of the effect's strategy x model x attribute as
``effect_vs_<ref>.<metric>`` (the value) and ``effect_vs_<ref>.<metric>.<column>`` (its
interval, p, q, ...), ``<metric>`` and ``<column>`` in the short codes of
:func:`faircode.record.names.metric_key` and ``<ref>`` the reference's code (S0, S2), among them
Δ balanced accuracy (``effect_vs_S0.bacc``), the test of ``Δ = 0`` (``.p``, ``.q_audit``) and
the swap test (``.swap_p``, ``.swap_q``); its verdict is the tag
``effect_vs_<ref>.<metric>.verdict``.  An undefined effect (its ``value`` empty) logs nothing:
its reason is in the CSV.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from faircode.core.cells import strategy_code
from faircode.core.errors import FaircodeError, describe
from faircode.core.layout import (
    FIGURES,
    RANKING_TABLES,
    RUN_RECORD,
    UNAVAILABLE_NOTE,
    run_record,
    table_path,
)
from faircode.core.layout import audit_folders as _audit_folders
from faircode.provenance.state import StateIdentity, group_states, state_of
from faircode.record.child import ChildRun, child_digest
from faircode.record.compare import without_keys
from faircode.record.names import DESIGN_COLUMNS, child_name, metric_key, readable

__all__ = ["TABLES", "ChildRun", "ResultsError", "audit_base", "audit_folders", "canonical",
           "child_digest",
           "datasets", "grid_children", "read_json", "recorded_config", "recorded_state",
           "report_files", "results_digest", "sanitise"]

TABLES = ("fairness", "performance", "intersectional", "counterfactual")
# The columns that identify the child run a row belongs to, per table.
_CHILD_KEYS = {
    "fairness": ("protected_attribute",),
    "intersectional": ("attribute_a", "attribute_b"),
    "counterfactual": ("axis", "kind"),
}
_CELL = ("audit", "strategy", "model")
_PARAM_KEYS = ("constraint", "eps", "max_iter", "decision_threshold", "n_resamples",
               "n_permutations", "confidence", "alpha")
_DEGENERATE = "degenerate_decisions"


class ResultsError(FaircodeError):
    """The results folder does not hold what the grid writes (missing file, bad table)."""


def audit_folders(results: Path) -> list[Path]:
    """The ``<audit>/`` folders holding a ``run.json`` or an ``unavailable.json``
    (:func:`faircode.core.layout.audit_folders`); none is a :class:`ResultsError`."""
    if not results.is_dir():
        raise ResultsError(f"{results}: expected a results folder of <audit>/ folders, "
                           "got no such directory")
    folders = _audit_folders(results)
    if not folders:
        raise ResultsError(f"{results}: expected <audit>/{RUN_RECORD} or "
                           f"<audit>/{UNAVAILABLE_NOTE}, got none")
    return folders


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsError(f"{path}: expected JSON, got {type(exc).__name__}: {exc}") from None


# timings, worker count and the machine's numerical environment (same numbers) change no number
_NOT_RESULTS = frozenset({"seconds", "jobs", "numerics"})


def canonical(value: Any) -> bytes:
    """Key-sorted compact JSON bytes of ``value`` (for digests)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode()


def report_files(results: Path) -> list[Path]:
    """The report's outputs beside the audit folders: every top-level file of ``results`` and
    every file under ``results/figures/`` (hidden ones aside), sorted."""
    if not results.is_dir():
        return []
    top = [p for p in results.iterdir() if p.is_file() and not p.name.startswith(".")]
    figures = results / FIGURES
    shown = [p for p in figures.rglob("*") if p.is_file()] if figures.is_dir() else []
    return sorted(top + shown)


def results_digest(results: Path, *, config: Mapping[str, Any] | None = None) -> str:
    """sha256 of the config, every file of every audit folder and the report's outputs.

    ``run.json`` enters without its ``seconds`` (timings) and ``jobs`` (worker count) keys: they
    differ between two runs of the same state and change no number.  The report's outputs
    (:func:`report_files`) count because the parent carries them.
    """
    h = hashlib.sha256(b"faircode-tracking-v2\0")
    h.update(canonical(dict(config or {})) + b"\0")
    files = [p for folder in audit_folders(results)
             for p in sorted(q for q in folder.rglob("*") if q.is_file())]
    for path in [*files, *report_files(results)]:
        h.update(path.relative_to(results).as_posix().encode() + b"\0")
        data = (canonical(without_keys(read_json(path), _NOT_RESULTS))
                if path.name == RUN_RECORD else path.read_bytes())
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


@functools.lru_cache(maxsize=65536)
def sanitise(key: str) -> str:
    """A metric/param/tag key MLflow accepts: ``[A-Za-z0-9_.- ]``, at most 250 characters
    (memoised: a state's ~190,000 metrics have a few thousand distinct keys)."""
    clean = re.sub(r"[^\w.\- ]", "_", key, flags=re.ASCII).strip(" ") or "_"
    return ("_" + clean if clean.startswith(".") else clean)[:250]


def _read_table(path: Path) -> pd.DataFrame:
    try:
        text = path.read_text(encoding="utf-8")
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path}: expected a CSV table, got {type(exc).__name__}: "
                           f"{exc}") from None
    _check_whole(path, text, width=len(frame.columns))
    return frame


def _check_whole(path: Path, text: str, *, width: int) -> None:
    """Refuse a table cut short: the grid writes every CSV whole, ending in a newline."""
    if not text.endswith("\n"):
        raise ResultsError(f"{path}: line {text.count(chr(10)) + 1}: expected a complete row "
                           f"ending in a newline, got {describe(text.rsplit(chr(10), 1)[-1])} "
                           "at the end of the file (cut short)")
    rows = csv.reader(io.StringIO(text))
    for row in rows:
        if row and len(row) != width:
            raise ResultsError(f"{path}: line {rows.line_num}: expected {width} fields like the "
                               f"header, got {len(row)}")


def _numeric_columns(frame: pd.DataFrame, skip: tuple[str, ...]) -> dict[str, list[float]]:
    """Columns whose every non-empty cell is a number or a boolean, as floats (empty = NaN)."""
    out: dict[str, list[float]] = {}
    for column in frame.columns:
        if column in skip or column == "note":
            continue
        cells = frame[column].tolist()
        filled = [c for c in cells if c != ""]
        if not filled:
            continue
        if all(c in ("True", "False") for c in filled):
            out[column] = [float("nan") if c == "" else float(c == "True") for c in cells]
            continue
        try:
            out[column] = [float("nan") if c == "" else float(c) for c in cells]
        except ValueError:
            continue
    return out


@dataclass
class _Draft:
    audit: str
    name: str
    tags: dict[str, str]
    params: dict[str, str]
    metrics: dict[str, float] = field(default_factory=dict)
    notes: set[str] = field(default_factory=set)
    seen: set[str] = field(default_factory=set)

    def add(self, key: str, value: float, *, where: str, per: str) -> None:
        """Set one metric; a non-finite value is not logged, a second value is an error."""
        if key in self.seen:
            raise ResultsError(f"{where}: expected one value of {key!r} per {per}, got a "
                               "second one")
        self.seen.add(key)
        if math.isfinite(value):
            self.metrics[key] = value


def _cells(frame: pd.DataFrame) -> dict[str, list[str]]:
    """A text table's columns as lists (a cell read so is the CSV's text, as ``iat`` gives it,
    without pandas' per-cell indexing: reading the K = 5 state's 1,030 grid children took 2.76 s
    so, 0.94 s as lists)."""
    return {column: frame[column].tolist() for column in frame.columns}


def _uninformative(cells: Mapping[str, list[str]], i: int) -> bool:
    """Whether row ``i`` is an uninformative cell: its verdict says so (a table without
    verdicts: its note says degenerate_decisions)."""
    if "verdict" in cells:
        return cells["verdict"][i] == "uninformative"
    note = cells.get("note")
    return note is not None and _DEGENERATE in re.split(r"[;, ]", note[i])


def _add_rows(draft: _Draft, cells: Mapping[str, list[str]], numeric: dict[str, list[float]],
              rows: list[int], *, table: str, keys: tuple[str, ...], path: Path) -> None:
    """Log rows ``rows`` of ``table`` on ``draft``: each number as a metric (p and q
    readable), each other cell as a tag; an uninformative row logs its sizes only."""
    text = [c for c in cells if c not in keys and c not in numeric and c != "metric"]
    metrics = cells.get("metric")
    for i in rows:
        metric = str(metrics[i]) if metrics is not None else None
        prefix = f"{metric}." if metric is not None else ""
        tagged = _uninformative(cells, i)
        for column, values in numeric.items():
            if tagged and column not in DESIGN_COLUMNS:
                continue  # tagged, not valued: one number per cell, and this cell has none
            draft.add(sanitise(metric_key(table, metric, column)), readable(column, values[i]),
                      where=f"{path}: row {i + 2}", per="/".join(keys))
        for column in text:
            cell = str(cells[column][i])
            if cell:
                draft.tags[sanitise(f"{table}.{prefix}{column}")] = cell[:8000]
                if column == "note":
                    draft.notes.update(n.strip() for n in re.split(r"[;,]", cell) if n.strip())


def _identity(table: str, ident: Mapping[str, str]) -> dict[str, str]:
    """The params (and tags) that say which child a row belongs to, beyond the cell."""
    if table == "fairness":
        return {"attribute": ident["protected_attribute"]}
    if table == "intersectional":
        return {"attribute": f"{ident['attribute_a']} & {ident['attribute_b']}"}
    return {"axis": ident["axis"], "channel": ident["kind"]}


def audit_base(folder: Path) -> tuple[str, dict[str, str], dict[str, str]]:
    """(audit, the params every child of it shares, the tags every child shares)."""
    run = read_json(run_record(folder))
    if not isinstance(run, dict) or not isinstance(run.get("config"), dict):
        raise ResultsError(f"{run_record(folder)}: config: expected a mapping, got "
                           f"{type(run.get('config') if isinstance(run, dict) else run).__name__}")
    audit = str(run.get("audit", folder.name))
    config = run["config"]
    params = {k: str(config[k]) for k in _PARAM_KEYS if k in config}
    params.update({k: str(v) for k, v in config.items() if k not in params and k != "jobs"})
    params["seed"] = str((run.get("seeds") or {}).get("master", ""))
    dataset = run.get("dataset") or {}
    tags = {"audit": audit, "dataset_sha256": str(dataset.get("sha256", "")),
            "manifest_sha256": str(run.get("manifest_sha256", "")),
            **state_tags(state_of(run))}
    variance = run.get("training_variance")
    if isinstance(variance, dict) and "included" in variance:  # K = 1 says it is not included
        tags["training_variance"] = (
            f"included ({variance.get('replicates')} replicates)" if variance["included"]
            else "not included (run.seeds 1)")
    return audit, params, tags


def grid_children(folder: Path) -> list[ChildRun]:
    """The grid's child runs of one checked grid audit folder (with its ensembles' the
    ``binary`` kind's entry of :data:`faircode.record.kinds.CHILDREN`,
    :func:`faircode.record.arbitrariness_runs.binary_children`): one per strategy x model x
    attribute (its fairness rows, its performance rows and its effects), intersectional pair,
    and axis x channel."""
    audit, params, base_tags = audit_base(folder)
    frames = {}
    for table in TABLES:
        path = table_path(folder, table)
        if not path.is_file():
            raise ResultsError(f"{path}: expected the {table} table, got no such file")
        frame = _read_table(path)
        missing = [c for c in (*_CELL, *_CHILD_KEYS.get(table, ())) if c not in frame.columns]
        if missing:
            raise ResultsError(f"{path}: expected columns {', '.join(missing)}, got "
                               f"{', '.join(frame.columns)}")
        frames[table] = frame
    drafts: dict[str, _Draft] = {}
    for table in ("fairness", "intersectional", "counterfactual"):
        frame, keys = frames[table], (*_CELL, *_CHILD_KEYS[table])
        numeric, cells = _numeric_columns(frame, keys), _cells(frame)
        groups: dict[Any, Any] = frame.groupby(list(keys), sort=False).indices
        for values, rows in groups.items():
            ident = {k: str(v) for k, v in zip(keys, values, strict=True)}
            key = "|".join((table, *ident.values()))
            who = {"audit": audit, "strategy": ident["strategy"],
                   "strategy_code": strategy_code(ident["strategy"]), "model": ident["model"],
                   "table": table, **_identity(table, ident)}
            tags = {**base_tags, **ident, **who}
            draft = drafts.setdefault(key, _Draft(
                audit, child_name(audit, ident["strategy"], ident["model"], table=table,
                                  ident=ident), tags, {**params, **who}))
            _add_rows(draft, cells, numeric, list(rows), table=table, keys=keys,
                      path=table_path(folder, table))
    _add_performance(drafts, frames["performance"], table_path(folder, "performance"))
    for table in EFFECT_TABLES:
        if table_path(folder, table).is_file():
            _add_effects(drafts, _read_table(table_path(folder, table)),
                         table_path(folder, table))
    ranking = table_path(folder, RANKING_TABLES[0])
    if ranking.is_file():
        _add_ranking(drafts, _read_table(ranking), ranking)
    return [_finish(key, draft) for key, draft in drafts.items()]


def _add_ranking(drafts: Mapping[str, _Draft], frame: pd.DataFrame, path: Path) -> None:
    """A fairness child also holds its row set's ranking view on its attribute (ranking.csv:
    ``expo``, ``expo.lo``, ``expo.q_audit``, FA*IR's ``expo.fair_*``; its verdict a tag)."""
    keys = (*_CELL, "protected_attribute")
    numeric, cells = _numeric_columns(frame, (*keys, "row_set")), _cells(frame)
    rows = frame.groupby(list(keys), sort=False).indices
    for draft in drafts.values():
        ident = tuple(draft.tags.get(k, "") for k in ("audit", "strategy", "model", "attribute"))
        if draft.tags["table"] == "fairness" and ident in rows:
            _add_rows(draft, cells, numeric, list(rows[ident]), table="ranking",
                      keys=(*keys, "row_set"), path=path)


def _add_performance(drafts: Mapping[str, _Draft], perf: pd.DataFrame, path: Path) -> None:
    """A fairness child also holds its cell's performance rows: the whole-test-set rows, and the
    per-group rows (e.g. selection_rate_disadvantaged) of its own attribute only."""
    perf_keys = (*_CELL, "protected_attribute") if "protected_attribute" in perf else _CELL
    group = perf["protected_attribute"].to_numpy(dtype=str) if len(perf_keys) > 3 else None
    perf_numeric, perf_cells = _numeric_columns(perf, perf_keys), _cells(perf)
    perf_rows = perf.groupby(list(_CELL), sort=False).indices
    for draft in drafts.values():
        cell = (draft.tags["audit"], draft.tags["strategy"], draft.tags["model"])
        if draft.tags["table"] == "fairness" and cell in perf_rows:
            rows = [i for i in perf_rows[cell]
                    if group is None or group[i] in ("", draft.tags["attribute"])]
            _add_rows(draft, perf_cells, perf_numeric, rows, table="performance", keys=perf_keys,
                      path=path)


def state_tags(state: StateIdentity | None) -> dict[str, str]:
    """A state as ``state.*`` tags (``state.code_sha256`` ...); an unknown one as
    ``state.unknown``."""
    if state is None:
        return {"state.unknown": "run.json records no state"}
    tags = {f"state.{k}": ("" if v is None else str(v).lower() if isinstance(v, bool) else
                           ", ".join(v) if isinstance(v, list) else str(v))
            for k, v in state.as_dict().items()}
    return {k: v[:8000] for k, v in tags.items() if v}


EFFECT_TABLES = ("effects",)
"""The effect tables logged (``effects_stability.csv``'s numbers are ``effects.csv``'s at K > 1)."""
_EFFECT_KEYS = ("audit", "strategy", "reference", "model", "protected_attribute", "metric")


def _add_effects(drafts: Mapping[str, _Draft], frame: pd.DataFrame, path: Path) -> None:
    """Log every finite effect cell on its strategy's fairness child (module docstring)."""
    missing = [c for c in _EFFECT_KEYS if c not in frame.columns]
    if missing:
        raise ResultsError(f"{path}: expected columns {', '.join(missing)}, got "
                           f"{', '.join(frame.columns)}")
    numeric, cells = _numeric_columns(frame, _EFFECT_KEYS), _cells(frame)
    estimate = numeric.get("value")
    verdicts = cells.get("verdict")
    for i in range(len(frame)):
        if estimate is None or not math.isfinite(estimate[i]):  # undefined: nothing to log
            continue
        if _uninformative(cells, i):  # no number: its verdict tag says why
            row = {k: str(cells[k][i]) for k in _EFFECT_KEYS}
            draft = drafts.get("|".join(("fairness", row["audit"], row["strategy"],
                                         row["model"], row["protected_attribute"])))
            if draft is not None:
                short = metric_key("fairness", row["metric"], "value")
                draft.tags[sanitise(f"effect_vs_{strategy_code(row['reference'])}.{short}"
                                    ".verdict")] = "uninformative"
            continue
        row = {k: str(cells[k][i]) for k in _EFFECT_KEYS}
        draft = drafts.get("|".join(("fairness", row["audit"], row["strategy"], row["model"],
                                     row["protected_attribute"])))
        if draft is None:  # no fairness child (a skipped cell): nothing to attach to
            continue
        reference = strategy_code(row["reference"])
        for column, values in numeric.items():
            value = values[i]
            if not math.isfinite(value):
                continue
            short = metric_key("fairness", row["metric"], column)
            key = sanitise(f"effect_vs_{reference}.{short}")
            if key in draft.metrics:
                raise ResultsError(f"{path}: row {i + 2}: expected one value of {key!r} per "
                                   "strategy/model/attribute, got a second one")
            draft.metrics[key] = readable(column, value)
        verdict = str(verdicts[i]) if verdicts is not None else ""
        if verdict:
            short = metric_key("fairness", row["metric"], "value")
            draft.tags[sanitise(f"effect_vs_{reference}.{short}.verdict")] = verdict


def _finish(key: str, draft: _Draft) -> ChildRun:
    informative = _DEGENERATE not in draft.notes
    what = {"fairness": "group-fairness metrics with CIs, p- and q-values, and performance",
            "intersectional": "intersectional gap", "counterfactual": "counterfactual flip rate"}
    text = f"{draft.name}: {what[draft.tags['table']]}."
    if not informative:
        text = f"uninformative ({_DEGENERATE}): {text}"
    tags = {**draft.tags, "informative": str(informative).lower(),
            "mlflow.note.content": text, "faircode.child_key": key}
    if draft.notes:
        tags["notes"] = ", ".join(sorted(draft.notes))
    return ChildRun(key, draft.audit, draft.name, tags, draft.params, draft.metrics)


def datasets(results: Path) -> dict[str, tuple[str, str]]:
    """audit -> (declared raw-file path, sha256) from each run.json."""
    out = {}
    for folder in audit_folders(results):
        if run_record(folder).is_file():
            dataset = read_json(run_record(folder)).get("dataset") or {}
            if dataset.get("sha256"):
                out[folder.name] = (str(dataset.get("path", "")), str(dataset["sha256"]))
    return out


def recorded_state(results: Path) -> dict[StateIdentity | None, tuple[str, ...]]:
    """The states of the audits' ``run.json`` (:func:`faircode.provenance.state.group_states`)."""
    return group_states({f.name: read_json(run_record(f)) for f in audit_folders(results)
                         if run_record(f).is_file()})


def recorded_config(results: Path) -> dict[str, Any]:
    """The config each run.json records: shared if every audit agrees, else per audit."""
    configs = {f.name: read_json(run_record(f)).get("config") or {}
               for f in audit_folders(results) if run_record(f).is_file()}
    distinct = {json.dumps(c, sort_keys=True) for c in configs.values()}
    if len(distinct) == 1:
        return dict(next(iter(configs.values())))
    return configs
