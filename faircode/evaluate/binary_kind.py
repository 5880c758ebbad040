"""The ``binary`` kind's evaluator: the grid's predictions into ``results/<audit>/`` and its DVC
views.

Reads the prepared audit (``<prepared>/<audit>``) and the fit stages' parts
(``<predictions>/<audit>/<part>/``, merged in grid order; their seconds, for the timings
beside the results folder, from ``<part>.seconds.json`` when present) and, where the bag
stage wrote it, the bagged members' store (``<predictions>/<audit>/bagged/``,
:func:`faircode.grid.bagging.bagged_store`: then also the ensembles' and the set of models'
tables), evaluates every cell (:func:`faircode.evaluate.audit.evaluate_audit`) and writes the
audit's folder (:func:`faircode.evaluate.write.write_audit`)
and its four DVC views (:func:`faircode.core.layout.dvc_views`): the headline metrics
``metrics/<audit>.json``, the full set ``metrics/full/<audit>.json``, the strategy-plot data
``metrics/<audit>-strategies.json`` (:mod:`faircode.evaluate.summary`) and
``curves/<audit>.csv`` (the parity gap of S0-S2 against threshold).

In a sweep the stage re-runs every audit, so :meth:`BinaryEvaluator.settle` does for each only
what its inputs need:

* an audit without data carries its note forward and writes ``{audit: {"available": false}}``,
  an empty strategy plot and a header-only curve file, importing nothing numerical (numpy,
  pandas and the statistics are imported only to evaluate);
* an audit whose ``results/<audit>/run.json`` records the content address of this run's inputs
  (:mod:`faircode.evaluate.reuse`: e.g. a ``base_rate`` audit under a new
  ``models.decision_threshold``) keeps its tables and refreshes ``run.json``'s config only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from faircode.core.cells import CUTOFF_STRATEGIES, ModelFamily, strategy_code
from faircode.core.kinds import BINARY
from faircode.core.layout import dvc_views, unavailable_message, write_unavailable
from faircode.evaluate.headline_keys import UNAVAILABLE_HEADLINE
from faircode.evaluate.job import Job, Upstream

if TYPE_CHECKING:
    from faircode.core.config import BenchmarkConfig

__all__ = ["CURVE_HEADER", "EMPTY_PLOT", "EVALUATOR", "BinaryEvaluator"]

EMPTY_PLOT = "[]\n"
"""``strategy_plot(None)`` as JSON (tests/test_stages.py checks it), written without pandas."""
CURVE_HEADER = ",".join(["threshold", *(f"{strategy_code(s)} {m.value}"
                                         for s in CUTOFF_STRATEGIES for m in ModelFamily)]) + "\n"
"""``curve_plot(None)`` as CSV, likewise."""


class BinaryEvaluator:
    """The ``binary`` kind's :class:`~faircode.evaluate.job.Evaluator`."""

    def settle(self, audit: str, *, manifest: Path, upstream: Upstream, results: Path,
               config: BenchmarkConfig, say: Callable[[str], None]) -> Job | None:
        """Write an audit without data's note and views, keep an audit whose results are those
        of the same inputs (:mod:`faircode.evaluate.reuse`); the :class:`Job` of any other.
        The numerical imports happen past these checks."""
        views = dvc_views(results, audit)
        parts = tuple(upstream.predictions / audit / part for part in upstream.parts)
        for path in views:
            path.parent.mkdir(parents=True, exist_ok=True)
        message = unavailable_message(parts[0])
        if message is not None:
            write_unavailable(results / audit, audit=audit, message=message)
            say(f"skipped: {message}")
            for path, text in zip(views, (json.dumps(UNAVAILABLE_HEADLINE) + "\n", json.dumps(
                    {audit: {"available": False}}) + "\n", EMPTY_PLOT, CURVE_HEADER), strict=True):
                path.write_text(text)
            return None
        from faircode.audit.manifest import load_manifest
        from faircode.evaluate.reuse import (
            KEY,
            inputs_key,
            refresh_record,
            reusable,
            reuse_enabled,
        )
        from faircode.grid.bagging import bagged_store
        from faircode.provenance.state import provenance, with_fit_numerics

        prepared = upstream.prepared / audit
        bagged = bagged_store(upstream.predictions / audit)
        parts = (*parts, *([bagged] if bagged is not None else []))
        record = provenance()
        key = inputs_key(load_manifest(manifest), config=config, inputs=[prepared, *parts],
                         versions=record["versions"],
                         numerics=record["numerics"]["configuration"])
        run = reusable(results / audit, key=key, outputs=views) if reuse_enabled() else None
        if run is None:
            return Job(BINARY.name, audit, results, manifest, (prepared, *parts), views,
                       {**record, KEY: key})
        fit = (run.get("numerics") or {}).get("fit") or {}  # the same predictions' bytes
        refresh_record(results / audit, run, config=config,
                       provenance_record=with_fit_numerics(record, fit))
        say(f"{audit}: kept {results / audit}: it holds the results of these inputs "
            f"({KEY} {key[:12]}; this param change does not reach them)")
        return None

    def run(self, job: Job, *, config: BenchmarkConfig) -> Path:
        """Evaluate and write one audit and its views (in this process or a worker)."""
        from faircode.audit.manifest import load_manifest
        from faircode.audit.prepared import load_prepared
        from faircode.evaluate.audit import evaluate_audit
        from faircode.evaluate.curves import curve_plot
        from faircode.evaluate.summary import headline, strategy_plot, summary
        from faircode.evaluate.write import write_audit
        from faircode.grid.bagging import BAGGED_PART, load_bagged
        from faircode.grid.predictions import load_predictions, merge_predictions, timings_path
        from faircode.provenance.state import with_fit_numerics

        assert job.views is not None  # settle gives every binary job its views
        prepared_dir, *parts = job.inputs
        data = load_prepared(prepared_dir, manifest=load_manifest(job.manifest))
        predictions = merge_predictions([load_predictions(part, timings=timings_path(part))
                                         for part in parts if part.name != BAGGED_PART])
        bagged = next((load_bagged(part, test_index=data.test_index,
                                   timings=timings_path(part))
                       for part in parts if part.name == BAGGED_PART), None)
        outcome = evaluate_audit(
            data, predictions, decision_threshold=config.models.decision_threshold,
            stats=config.stats, degenerate=config.degenerate, replicates=config.replicates,
            jobs=config.jobs, curves=config.curves, verdicts=config.verdicts, bagged=bagged,
            arbitrariness=config.arbitrariness)
        folder = write_audit(data, outcome, config=config, out_dir=job.results,
                             provenance_record=with_fit_numerics(dict(job.provenance_record),
                                                                 predictions.numerics))
        views = job.views
        views.headline.write_text(json.dumps(headline(outcome), indent=1) + "\n")
        views.full.write_text(json.dumps(summary(outcome, audit=job.audit), indent=2) + "\n")
        views.strategies.write_text(json.dumps(strategy_plot(outcome, audit=job.audit),
                                               indent=1) + "\n")
        curve_plot(outcome.curves).to_csv(views.curve, index=False)
        return folder


EVALUATOR = BinaryEvaluator()
"""The ``binary`` kind's entry of :data:`faircode.evaluate.kinds.EVALUATORS`."""
