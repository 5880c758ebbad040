"""faircode as an MLflow model evaluator: ``mlflow.models.evaluate(..., evaluators=["faircode"])``.

Registered under MLflow's ``mlflow.model_evaluator`` entry point (``pyproject.toml``), so once
faircode is installed::

    mlflow.models.evaluate(model, data, targets="y", model_type="classifier",
                           evaluators="faircode",
                           evaluator_config={"sensitive_features": ["sex", "age<25"]})

(with a list of evaluators MLflow wants each one's config under its name:
``evaluators=["faircode"], evaluator_config={"faircode": {...}}``)

audits the model's decisions on ``data`` with the benchmark's statistics
(:func:`faircode.audit_decisions` on a DataFrame: its tables, intervals, q-values and verdicts)
and logs them into the user's own run: per attribute every gap's value, interval, p- and q-value,
minimum detectable gap, group sizes and verdict as metrics under the short keys of ``faircode
track`` (:func:`faircode.record.names.metric_key`) prefixed by the attribute (``sex.dp``,
``sex.dp.lo``, ``sex.dp.hi``, ``sex.dp.q_audit``, ``sex.dp.verdict``), the whole-set
performance (``acc``, ``bacc``, ...), each verdict also as the tag
``faircode.<attribute>.<key>.verdict``, and the tables (``faircode/fairness.csv``,
``performance.csv``, ``groups.csv``, ``intersectional.csv``) and a figure of the gaps
(``faircode/gaps.png``) as artifacts.

``evaluator_config`` keys: ``sensitive_features`` (required: a list of the column specs of
``faircode audit FILE --group``, :mod:`faircode.audit.log_columns` -- ``"sex=F"``, ``"age<25"``,
or a bare 0/1 column ``"sex"`` -- or a mapping ``{column: disadvantaged value(s)}``),
``pos_label`` (the label value that is label 1, default 1), ``favourable`` (the favourable label,
0 or 1, default 1), ``score`` and ``scale`` (a column of the data holding scores), ``unit``,
``strata``, ``seed`` (42), ``n_resamples`` and ``n_permutations`` (the params' 2000 each).

Design decisions
----------------
* **The sensitive features are columns of the data** the model is evaluated on (MLflow's
  ``features_data``; a static dataset with ``predictions=`` needs no model at all).  A column the
  data lacks is one line naming it.
* **Verdicts as numbers**: ``<key>.verdict`` is 2 for a gap shown, 1 inconclusive, 0 parity shown
  (an uninformative gap has the tag only), so runs sort and compare by it; the tag holds the word.
* **Nothing is logged unless all of it can be**: the audit runs first, then one batch of metrics
  and tags, then the artifacts.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from mlflow.models.evaluation import EvaluationResult, ModelEvaluator
from mlflow.models.evaluation.artifacts import CsvEvaluationArtifact, ImageEvaluationArtifact

from faircode.core.errors import ConfigError, describe

__all__ = ["VERDICT_CODES", "FaircodeEvaluator", "evaluation_metrics"]

VERDICT_CODES = {"gap": 2.0, "inconclusive": 1.0, "parity": 0.0}
"""``<key>.verdict``: each verdict as a number (an uninformative gap logs its tag only)."""
_CONFIG = ("sensitive_features", "pos_label", "favourable", "score", "scale", "unit", "strata",
           "seed", "n_resamples", "n_permutations")
_LABEL, _DECISION = "faircode_label", "faircode_decision"
_FAIRNESS_COLUMNS = ("value", "ci_low", "ci_high", "p_value", "q_value", "significant",
                     "equivalence_q_value", "gap_bound", "mde", "powered", "n_disadvantaged",
                     "n_advantaged", "design_effect")
_TABLES = ("fairness", "performance", "groups", "intersectional")


class FaircodeEvaluator(ModelEvaluator):
    """The ``faircode`` model evaluator (module docstring)."""

    @classmethod
    def can_evaluate(cls, *, model_type: str, evaluator_config: Mapping[str, Any],
                     **kwargs: Any) -> bool:
        """A binary classifier with ``sensitive_features`` named in the config."""
        return model_type == "classifier" and bool((evaluator_config or {}).get(
            "sensitive_features"))

    def evaluate(self, *, model_type: str, dataset: Any, run_id: str,
                 evaluator_config: Mapping[str, Any], model: Any = None, **kwargs: Any
                 ) -> EvaluationResult:
        """Audit the model's decisions on ``dataset`` and log the results into ``run_id``."""
        import faircode
        from faircode.core.config import BenchmarkConfig

        config = dict(evaluator_config or {})
        unknown = sorted(set(config) - set(_CONFIG))
        if unknown:
            raise ConfigError(f"evaluator_config: {unknown[0]}: expected one of the keys "
                              f"{', '.join(_CONFIG)}, got {describe(unknown[0])}")
        frame = _frame(dataset, model, pos_label=config.get("pos_label", 1))
        settings = {f"stats.{k}": config[k] for k in ("n_resamples", "n_permutations")
                    if k in config}
        results = faircode.audit_decisions(
            frame, group=_groups(config["sensitive_features"], frame), label=_LABEL,
            decision=_DECISION, score=config.get("score"), scale=config.get("scale"),
            favourable=int(config.get("favourable", 1)), unit=config.get("unit"),
            strata=config.get("strata", ()), seed=int(config.get("seed", 42)),
            name="model", config=BenchmarkConfig().with_params(settings))
        metrics, tags = evaluation_metrics(results.fairness, results.performance)
        artifacts = _log(run_id, results, metrics, tags)
        return EvaluationResult(metrics=metrics, artifacts=artifacts, run_id=run_id)


def _frame(dataset: Any, model: Any, *, pos_label: Any) -> pd.DataFrame:
    """The evaluation data as one DataFrame: its features, label 1/0 and decision 1/0."""
    features = dataset.features_data
    if not isinstance(features, pd.DataFrame):
        features = pd.DataFrame(np.asarray(features), columns=dataset.feature_names)
    if dataset.labels_data is None:
        raise ConfigError("mlflow.models.evaluate: targets: expected the label column, got "
                          "nothing (the faircode evaluator needs the observed outcome)")
    predicted = dataset.predictions_data if model is None else model.predict(features)
    if isinstance(predicted, pd.DataFrame):
        predicted = predicted.iloc[:, 0]
    frame = features.reset_index(drop=True).copy()
    for column, values, what in ((_LABEL, dataset.labels_data, "targets"),
                                 (_DECISION, predicted, "the model's predictions")):
        array = np.asarray(values).reshape(-1)
        seen = pd.unique(array)
        if len(seen) > 2:
            raise ConfigError(f"faircode evaluator: {what}: expected two classes (label 1 = "
                              f"pos_label {pos_label!r}), got {len(seen)}: "
                              f"{', '.join(map(repr, seen[:5]))}")
        frame[column] = (array == pos_label).astype(np.int8)
    return frame


def _groups(raw: object, frame: pd.DataFrame) -> list[str]:
    """``sensitive_features`` as column specs, each column checked against the data."""
    from faircode.audit.log_columns import parse_spec

    if isinstance(raw, Mapping):
        specs = [f"{column}={','.join(map(str, v if isinstance(v, list | tuple) else [v]))}"
                 for column, v in raw.items()]
    elif isinstance(raw, str):
        specs = [raw]
    elif isinstance(raw, Sequence):
        specs = [str(s) for s in raw]
    else:
        raise ConfigError("evaluator_config: sensitive_features: expected a list of column "
                          f"specs or a mapping of columns, got {describe(raw)}")
    for spec in specs:
        column = parse_spec(spec, "evaluator_config: sensitive_features").column
        if column not in frame.columns:
            raise ConfigError(f"evaluator_config: sensitive_features: expected a column of the "
                              f"evaluation data ({', '.join(map(str, frame.columns[:-2]))}), "
                              f"got {describe(column)}")
    return specs


def evaluation_metrics(fairness: pd.DataFrame, performance: pd.DataFrame
                       ) -> tuple[dict[str, float], dict[str, str]]:
    """The metrics and verdict tags of a given model's tables (module docstring)."""
    from faircode.record.names import metric_key
    from faircode.record.runs import sanitise

    metrics: dict[str, float] = {}
    tags: dict[str, str] = {}
    for row in fairness.to_dict("records"):
        head = f"{row['protected_attribute']}.{metric_key('fairness', row['metric'], 'value')}"
        for column in _FAIRNESS_COLUMNS:
            value = _number(row.get(column))
            if value is not None:
                metrics[sanitise(f"{row['protected_attribute']}."
                                 f"{metric_key('fairness', row['metric'], column)}")] = value
        verdict = str(row.get("verdict") or "")
        if verdict:
            tags[sanitise(f"faircode.{head}.verdict")] = verdict
            if verdict in VERDICT_CODES:
                metrics[sanitise(f"{head}.verdict")] = VERDICT_CODES[verdict]
    for row in performance.to_dict("records"):
        attribute = str(row.get("protected_attribute") or "")
        attribute = "" if attribute == "nan" else attribute
        for column in ("value", "ci_low", "ci_high"):
            value = _number(row.get(column))
            if value is not None:
                key = metric_key("performance", row["metric"], column)
                metrics[sanitise(f"{attribute}.{key}" if attribute else key)] = value
    return metrics, tags


def _number(value: object) -> float | None:
    """A finite number (booleans as 0/1), or None."""
    if isinstance(value, bool | np.bool_):
        return float(value)
    if isinstance(value, str):
        return {"True": 1.0, "False": 0.0}.get(value)
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _log(run_id: str, results: Any, metrics: Mapping[str, float], tags: Mapping[str, str]
         ) -> dict[str, Any]:
    """One batch of metrics and tags per 1,000, then the tables and the figure."""
    import time

    from mlflow.entities import Metric, RunTag
    from mlflow.tracking import MlflowClient

    from faircode.core.layout import table_path
    from faircode.report.given_figure import gap_figure

    client = MlflowClient()
    now = int(time.time() * 1000)
    items = [Metric(k, v, now, 0) for k, v in metrics.items()]
    for start in range(0, len(items), 1000):
        client.log_batch(run_id, metrics=items[start:start + 1000])
    client.log_batch(run_id, tags=[RunTag(k, v) for k, v in tags.items()])
    base = client.get_run(run_id).info.artifact_uri.rstrip("/") + "/faircode"
    artifacts: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        for table in _TABLES:
            frame = getattr(results, table, None)
            if frame is None or frame.empty:
                continue
            path = table_path(Path(folder), table)
            frame.to_csv(path, index=False)
            artifacts[f"faircode_{table}"] = CsvEvaluationArtifact(
                uri=f"{base}/{path.name}", content=frame)
        figure = gap_figure(results.fairness, Path(folder) / "gaps.png")
        artifacts["faircode_gaps"] = ImageEvaluationArtifact(uri=f"{base}/{figure.name}")
        client.log_artifacts(run_id, folder, artifact_path="faircode")
    return artifacts
