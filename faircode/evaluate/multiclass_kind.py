"""The ``multiclass`` kind's evaluator: a multi-class audit's raw file into ``results/<audit>/``
and its DVC views.

A multi-class audit has one data stage, ``fetch``: its raw file is a few hundred rows
(BankWages: 474), so this step loads and splits it (:func:`faircode.audit.data.load_audit`),
fits the grid's applying cells (:func:`faircode.grid.multiclass.class_cells`: S0-S2 x three
multinomial families, ``run.seeds`` replicates in ``run.seed_mode``) and writes the tables of
:mod:`faircode.evaluate.multiclass` (:func:`write_multiclass_audit`).  Reads ``models.encoding``,
``run.seeds``, ``run.seed_mode``, ``stats.*`` and ``verdicts.*`` -- all among the evaluate
stage's params.  An audit whose raw folder holds the fetch stage's unavailable note gets that
note and views of nulls, importing nothing numerical.

Its DVC views (:func:`faircode.core.layout.dvc_views`): the headline ``metrics/<audit>.json``
(:func:`headline`: the keys of every audit, :mod:`faircode.evaluate.headline_keys` -- ``attr``,
the first attribute, and per strategy the mean over its informative model families of the
predicted classes' largest class share gap on the test rows, :data:`MULTICLASS.headline
<faircode.core.kinds.TaskKind.headline>`; null for S3-S5, which do not apply) and the full set
``metrics/full/<audit>.json`` (every row set and attribute, the recorded outcome's among them:
the largest gap, its interval, the total variation distance, the joint test's p and q and the
verdict); it has no strategy plot and no threshold curve.

Design decisions
----------------
* **The fits run here, not in a fit stage**: they take about a second (BankWages at K = 1), so
  a stage of their own would cost more in DVC's lock rewrites than it saves; a statistics
  edit re-fits them with the tables.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from faircode.core.kinds import MULTICLASS
from faircode.core.layout import (
    MULTICLASS_EXTRA_TABLES,
    MULTICLASS_RUN,
    MULTICLASS_TABLES,
    dvc_views,
    run_record,
    table_path,
    unavailable_message,
    write_unavailable,
)
from faircode.core.metrics import metric_info
from faircode.evaluate.headline_keys import UNAVAILABLE_HEADLINE, headline_record
from faircode.evaluate.job import Job, Upstream

if TYPE_CHECKING:
    import pandas as pd

    from faircode.audit.manifest import Manifest
    from faircode.core.config import BenchmarkConfig
    from faircode.evaluate.multiclass import ClassTables

__all__ = ["EVALUATOR", "MulticlassEvaluator", "headline", "summary", "write_multiclass_audit"]

HEADLINE_METRIC = metric_info(MULTICLASS.headline).code
"""The full view's key of the largest class share gap (its metric's short code)."""
_OBSERVED = "observed"
"""The recorded outcome's row set (:data:`faircode.evaluate.multiclass.OBSERVED`; that module
imports pandas)."""


class MulticlassEvaluator:
    """The ``multiclass`` kind's :class:`~faircode.evaluate.job.Evaluator`."""

    def settle(self, audit: str, *, manifest: Path, upstream: Upstream, results: Path,
               config: BenchmarkConfig, say: Callable[[str], None]) -> Job | None:
        """Carry the fetch stage's unavailable note into ``results/<audit>``; else the job."""
        from faircode.audit.multiclass_manifest import load_multiclass_manifest

        raw = load_multiclass_manifest(manifest).dataset.path.parent
        views = dvc_views(results, audit)
        message = unavailable_message(raw)
        if message is None:
            return Job(MULTICLASS.name, audit, results, manifest, (raw,), views)
        write_unavailable(results / audit, audit=audit, message=message)
        for path, body in ((views.headline, UNAVAILABLE_HEADLINE),
                           (views.full, {audit: {"available": False}})):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(body, indent=1) + "\n")
        say(f"skipped: {message}")
        return None

    def run(self, job: Job, *, config: BenchmarkConfig) -> Path:
        """Load, fit, evaluate and write one multi-class audit and its views."""
        from faircode.audit.data import load_audit
        from faircode.audit.multiclass_manifest import load_multiclass_manifest
        from faircode.audit.prepared import prepare
        from faircode.evaluate.multiclass import class_tables
        from faircode.evaluate.write import fit_timings
        from faircode.grid.multiclass import class_cells
        from faircode.provenance.state import provenance

        started = time.perf_counter()
        manifest = load_multiclass_manifest(job.manifest)
        data = prepare(load_audit(manifest))
        cells = class_cells(data, replicates=config.replicates, encoding=config.models.encoding)
        fitted = time.perf_counter()
        tables = class_tables(data, cells, stats=config.stats, verdicts=config.verdicts)
        seconds = {"fit": fitted - started, "evaluate": time.perf_counter() - started}
        folder = write_multiclass_audit(manifest, tables, sha256=data.sha256, steps=data.steps,
                                        rows=(len(data.train_index), len(data.test_index)),
                                        config=config, out_dir=job.results,
                                        provenance_record=provenance(), seconds=seconds,
                                        cells=fit_timings(cells))
        if job.views is not None:
            for path, body in ((job.views.headline, headline(tables)),
                               (job.views.full, summary(tables, audit=job.audit))):
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(body, indent=1) + "\n")
        return folder


EVALUATOR = MulticlassEvaluator()
"""The ``multiclass`` kind's entry of :data:`faircode.evaluate.kinds.EVALUATORS`."""


def _number(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if number != number else round(number, 3)


def headline(tables: ClassTables) -> dict[str, Any]:
    """The DVC headline (module docstring): the first attribute and, per strategy, the mean over
    its informative model families of the largest class share gap on it (null where none)."""
    import pandas as pd

    from faircode.core.cells import STRATEGY_TABLE, strategy_code
    from faircode.stats.verdicts import Verdict

    tests = tables.class_tests
    if tests.empty:
        return headline_record(None, {})
    attribute = str(tests["protected_attribute"].iloc[0])
    grid = {s.strategy.value for s in STRATEGY_TABLE}
    rows = tests[(tests["protected_attribute"] == attribute)
                 & (tests["metric"] == MULTICLASS.headline) & tests["strategy"].isin(grid)
                 & (tests["verdict"].astype(str) != Verdict.UNINFORMATIVE)]
    codes = rows["strategy"].map(lambda s: strategy_code(str(s)))
    means = pd.to_numeric(rows["value"], errors="coerce").groupby(codes.to_numpy()).mean()
    return headline_record(attribute, {str(code): value for code, value in means.items()})


def summary(tables: ClassTables, *, audit: str) -> dict[str, Any]:
    """The full DVC view: ``<audit>.<row set>.<attribute>`` -> the joint row's numbers (null
    for an uninformative row set: its verdict says why)."""
    from faircode.core.cells import FAMILY_CODES, strategy_code
    from faircode.stats.verdicts import Verdict

    out: dict[str, Any] = {}
    for row in tables.class_tests.to_dict("records"):
        key = (f"{_OBSERVED}_{row['row_set']}" if row["strategy"] == _OBSERVED else
               f"{strategy_code(str(row['strategy']))}.{FAMILY_CODES[str(row['model'])]}")
        shown = row if row["verdict"] != Verdict.UNINFORMATIVE else {}
        entry = out.setdefault(key, {})
        entry[str(row["protected_attribute"])] = {
            HEADLINE_METRIC: _number(shown.get("value")), "lo": _number(shown.get("ci_low")),
            "hi": _number(shown.get("ci_high")), "tv": _number(shown.get("tv_distance")),
            "p": _number_sig(shown.get("p_value")), "q": _number_sig(shown.get("q_value")),
            "verdict": row["verdict"]}
    return {audit: out}


def _number_sig(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if number != number else float(f"{number:.3g}")


def _relative(file: Path) -> str:
    from faircode.audit.manifest import repository_root

    try:
        return file.resolve().relative_to(repository_root(file.parent)).as_posix()
    except ValueError:
        return file.name


def write_multiclass_audit(manifest: Manifest, tables: ClassTables, *, sha256: str,
                           steps: tuple[tuple[str, int], ...], rows: tuple[int, int],
                           config: BenchmarkConfig, out_dir: Path,
                           provenance_record: Mapping[str, Any],
                           seconds: Mapping[str, float],
                           cells: Sequence[Mapping[str, Any]] = (),
                           extra: Mapping[str, Any] | None = None) -> Path:
    """Write ``<out_dir>/<audit>/`` (:data:`~faircode.core.layout.MULTICLASS_TABLES`, at K > 1
    ``class_replicates.csv``, and ``run.json``) whole, swapped in in one step; a target that is
    not a multi-class run of the same audit is refused first
    (:func:`faircode.evaluate.write.check_replaceable`); ``extra`` adds keys to ``run.json``
    (``faircode audit``'s predictions file: such a folder replaces only its like)."""
    from faircode.core.config import config_record
    from faircode.core.digests import folder_digests
    from faircode.evaluate.swap import replacing
    from faircode.evaluate.write import check_replaceable, results_kind, save_timings
    from faircode.provenance.state import params_digest

    final = out_dir / manifest.name
    check_replaceable(final, audit=manifest.name,
                      kind=MULTICLASS_RUN if extra is None else results_kind(extra))
    frames: dict[str, pd.DataFrame | None] = {
        name: getattr(tables, name) for name in (*MULTICLASS_TABLES, *MULTICLASS_EXTRA_TABLES)}
    with replacing(final) as staging:
        for name, frame in frames.items():
            if frame is not None:
                frame.to_csv(table_path(staging, name), index=False)
        run = {
            "audit": manifest.name, "kind": MULTICLASS_RUN, "title": manifest.title,
            "target": {"column": manifest.target.column,
                       "classes": [str(c) for c in manifest.target.values or ()]},
            "manifest": _relative(manifest.file),
            "manifest_sha256": hashlib.sha256(manifest.file.read_bytes()).hexdigest(),
            "dataset": {"path": manifest.dataset.declared_path, "sha256": sha256,
                        "sha256_declared": manifest.dataset.sha256},
            "rows": {"steps": [list(step) for step in steps], "train": rows[0],
                     "test": rows[1]},
            "seeds": {"master": manifest.random_state,
                      "models": "replicate_seed(master, replicate)",
                      "joint_tests": "SeedSequence(master, spawn_key=(name_stream('multiclass'),"
                                     " *row set, attribute)) past the exact test's limit"},
            "config": config_record(config),
            **(extra or {}),
            **provenance_record,
            "state": {**provenance_record.get("state", {}),
                      "params_sha256": params_digest(config_record(config))},
            "files": folder_digests(staging),
        }
        run_record(staging).write_text(json.dumps(run, indent=2) + "\n")
    save_timings(final, seconds, cells=cells)
    return final
