"""Tests of faircode.stats.curves: hand-computed counts, every point equal to the main table's."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from faircode.audit.decision import Cutoff
from faircode.core.cells import CUTOFF_STRATEGIES, ModelFamily
from faircode.stats.curves import (
    CURVE_COLUMNS,
    DEFAULT_THRESHOLDS,
    DEFF_NOTE,
    OVERALL_METRICS,
    curve_counts,
    operating_curves,
)
from faircode.stats.metrics import FAIRNESS_METRICS, fairness_metrics, orient, performance_metrics
from faircode.stats.operating import operating_point_metrics
from faircode.stats.resampling import confusion_counts

# eight rows: score, raw label, disadvantaged; three rows tie at 0.4
SCORES = np.array([0.2, 0.4, 0.4, 0.6, 0.8, 0.4, 0.9, 0.1])
LABELS = np.array([1, 0, 1, 1, 0, 0, 1, 0])
DIS = np.array([True, True, False, True, False, False, False, True])
THRESHOLDS = (0.4, 0.15, 0.95)


def bits(x: object) -> np.ndarray:
    """A float array's bit patterns (NaN compares equal to NaN)."""
    return np.asarray(x, dtype=np.float64).view(np.int64)


def test_counts_by_hand_at_three_thresholds() -> None:
    """Raw-label counts: ties at 0.4 decide 0, 0.15 flags all but one row, 0.95 flags none."""
    counts = curve_counts(SCORES, LABELS, {"grp": DIS}, thresholds=THRESHOLDS, favourable=1)
    # t = 0.4: rows 3, 4, 6 decided 1 (scores 0.6, 0.8, 0.9; the three 0.4s are not above)
    # D = rows 0 (y1 ŷ0), 1 (y0 ŷ0), 3 (y1 ŷ1), 7 (y0 ŷ0);  A = 2 (y1 ŷ0), 4 (y0 ŷ1), 5, 6
    expected = {0.4: ([2, 0, 1, 1], [1, 1, 1, 1]),
                0.15: ([1, 1, 0, 2], [0, 2, 0, 2]),   # only row 7 (0.1) decided 0
                0.95: ([2, 0, 2, 0], [2, 0, 2, 0])}   # nobody decided 1
    for i, t in enumerate(THRESHOLDS):
        assert counts.groups[i, 0, 0].tolist() == expected[t][0], t
        assert counts.groups[i, 0, 1].tolist() == expected[t][1], t
        assert counts.overall[i].tolist() == np.add(*expected[t]).tolist(), t


def test_favourable_zero_reverses_the_cells() -> None:
    """With favourable 0 a raw cell 2y + ŷ is counted as 3 − (2y + ŷ) (TN <-> TP, FP <-> FN)."""
    counts = curve_counts(SCORES, LABELS, {"grp": DIS}, thresholds=THRESHOLDS, favourable=0)
    assert counts.groups[0, 0, 0].tolist() == [1, 1, 0, 2]  # raw D (2, 0, 1, 1) at t = 0.4
    assert counts.groups[2, 0, 1].tolist() == [0, 2, 0, 2]  # raw A (2, 0, 2, 0) at t = 0.95
    assert counts.overall[0].tolist() == [3, 1, 2, 2]  # overall counts stay raw


def test_inclusive_rule_flags_the_ties() -> None:
    """inclusive=True decides score >= t: the three rows at 0.4 become 1."""
    counts = curve_counts(SCORES, LABELS, {"grp": DIS}, thresholds=(0.4,), favourable=1,
                          inclusive=True)
    assert counts.groups[0, 0, 0].tolist() == [1, 1, 1, 1]
    assert counts.groups[0, 0, 1].tolist() == [0, 2, 0, 2]


def test_hand_values_and_an_empty_subset_at_an_extreme_threshold() -> None:
    """DP at 0.4 is 1/4 − 2/4; at 0.95 no row is decided 1, so predictive parity is n/a."""
    frame = operating_curves(SCORES, LABELS, {"grp": DIS}, thresholds=THRESHOLDS, favourable=1,
                             n_resamples=50, performance_seed=1, decision_seed=2)
    assert tuple(frame.columns) == CURVE_COLUMNS
    row = frame.set_index(["threshold", "metric"])
    assert row.at[(0.4, "demographic_parity_diff"), "value"] == -0.25
    assert row.at[(0.4, "accuracy"), "value"] == 5 / 8  # rows 1, 3, 5, 6, 7 right
    assert row.at[(0.15, "selection_rate"), "value"] == 7 / 8
    empty = frame[(frame["threshold"] == 0.95) & (frame["metric"] == "predictive_parity_diff")]
    assert np.isnan(empty["value"]).all() and np.isnan(empty["ci_low"]).all()
    assert empty["note"].tolist() == ["insufficient_data"]
    assert empty["n_disadvantaged"].tolist() == [0]
    assert row.at[(0.95, "selection_rate"), "value"] == 0.0


def test_counts_equal_row_level_confusion_counts(rng: np.random.Generator) -> None:
    """At every grid threshold the counts equal orient + confusion_counts on Cutoff.apply."""
    n = 500
    scores = np.round(rng.uniform(size=n), 2)  # many ties, several exactly on the grid
    y = rng.integers(0, 2, n)
    masks = {"a": rng.uniform(size=n) < 0.3, "b": rng.uniform(size=n) < 0.6}
    for favourable, inclusive in ((1, False), (0, True)):
        counts = curve_counts(scores, y, masks, favourable=favourable, inclusive=inclusive)
        for i, t in enumerate(DEFAULT_THRESHOLDS):
            yhat = Cutoff(t, inclusive=inclusive).apply(scores)
            y_fav, yhat_fav = orient(y, yhat, favourable=favourable)
            assert counts.overall[i].tolist() == confusion_counts(y, yhat).tolist()
            for k, mask in enumerate(masks.values()):
                assert counts.groups[i, k, 0].tolist() == confusion_counts(
                    y_fav[mask], yhat_fav[mask]).tolist()
                assert counts.groups[i, k, 1].tolist() == confusion_counts(
                    y_fav[~mask], yhat_fav[~mask]).tolist()


def main_table(scores: np.ndarray, y: np.ndarray, mask: np.ndarray, t: float, *,
               favourable: int, units: np.ndarray | None = None) -> pd.DataFrame:
    """The main table's rows at threshold t (what evaluate computes), in curve columns."""
    yhat = Cutoff(t, inclusive=False).apply(scores)
    y_fav, yhat_fav = orient(y, yhat, favourable=favourable)
    rows = [dataclasses.asdict(r) for r in fairness_metrics(
        y_fav, yhat_fav, mask, n_permutations=20, seed=9, units=units, n_resamples=100)]
    fairness = pd.DataFrame(rows).assign(protected_attribute="grp")
    perf = [dataclasses.asdict(r) for r in performance_metrics(
        y, yhat, scores, n_resamples=100, seed=11, units=units) if r.metric == "accuracy"]
    points = [dataclasses.asdict(p) for p in operating_point_metrics(
        y, yhat, {}, n_resamples=100, confidence=0.95, seed=12)
        if p.metric in ("balanced_accuracy", "selection_rate")]
    return pd.concat([fairness, pd.DataFrame(perf + points)], ignore_index=True)


@pytest.mark.parametrize("favourable", [1, 0])
def test_every_point_equals_the_main_table(favourable: int, rng: np.random.Generator) -> None:
    """Values, intervals, sizes and notes equal fairness/performance/operating-point metrics."""
    n = 240
    scores = rng.uniform(size=n)
    y = (rng.uniform(size=n) < scores).astype(int)
    mask = rng.uniform(size=n) < 0.35
    thresholds = (0.05, 0.3, 0.5, 0.85, 0.95)
    frame = operating_curves(scores, y, {"grp": mask}, thresholds=thresholds,
                             favourable=favourable, n_resamples=100, performance_seed=11,
                             decision_seed=12)
    for t in thresholds:
        want = main_table(scores, y, mask, t, favourable=favourable).set_index("metric")
        got = frame[frame["threshold"] == t].set_index("metric")
        assert list(got.index[:len(FAIRNESS_METRICS)]) == list(FAIRNESS_METRICS)
        for metric in want.index:
            for column in ("value", "ci_low", "ci_high"):
                assert bits(got.at[metric, column]) == bits(want.at[metric, column]), \
                    (t, metric, column)
            assert str(got.at[metric, "note"]) == str(want.at[metric, "note"]), (t, metric)
        fair = list(FAIRNESS_METRICS)
        assert (got.loc[fair, "n_disadvantaged"].to_numpy(dtype=int)
                == want.loc[fair, "n_disadvantaged"].to_numpy(dtype=int)).all()
        assert (got.loc[fair, "ci_method"] == want.loc[fair, "ci_method"]).all()


def test_repeated_units_use_the_cluster_bootstrap_and_declared_design_effects(
    rng: np.random.Generator,
) -> None:
    """With units, accuracy equals the cluster-bootstrap main table and the fairness intervals at
    the declared threshold equal the main table's, computed from its design effects."""
    units = np.repeat(np.arange(90), 3)
    n = units.size
    scores = np.repeat(rng.uniform(size=90), 3) + rng.normal(0, 0.05, n)
    y = np.repeat(rng.integers(0, 2, 90), 3)
    mask = np.repeat(rng.uniform(size=90) < 0.4, 3)
    declared = main_table(scores, y, mask, 0.5, favourable=1, units=units).set_index("metric")
    deff = declared["design_effect"]
    effects = {"grp": {m: float(deff[m]) for m in FAIRNESS_METRICS}}
    assert max(effects["grp"].values()) > 1.0  # the units do repeat
    frame = operating_curves(scores, y, {"grp": mask}, thresholds=(0.3, 0.5), favourable=1,
                             n_resamples=100, performance_seed=11, decision_seed=12,
                             units=units, design_effects=effects)
    got = frame[frame["threshold"] == 0.5].set_index("metric")
    for metric in (*FAIRNESS_METRICS, "accuracy"):
        for column in ("value", "ci_low", "ci_high"):
            assert bits(got.at[metric, column]) == bits(declared.at[metric, column]), metric
    assert got.at["accuracy", "ci_method"] == "cluster_percentile_bootstrap"
    assert all(DEFF_NOTE in note for note in got.loc[list(FAIRNESS_METRICS), "note"])
    at_other = main_table(scores, y, mask, 0.3, favourable=1, units=units).set_index("metric")
    other = frame[frame["threshold"] == 0.3].set_index("metric")
    assert bits(other.at["accuracy", "ci_low"]) == bits(at_other.at["accuracy", "ci_low"])


def test_default_grid_holds_the_decimal_thresholds() -> None:
    """The default grid is 0.05 … 0.95 in steps of 0.05, each the float its decimal parses to."""
    assert len(DEFAULT_THRESHOLDS) == 19
    assert [float(f"{0.05 * k:.2f}") for k in range(1, 20)] == list(DEFAULT_THRESHOLDS)
    assert 0.5 in DEFAULT_THRESHOLDS and 0.15 in DEFAULT_THRESHOLDS


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"scores": np.array([0.1, np.nan])}, "scores: expected a 1-D array of finite floats"),
    ({"y_true": np.array([0, 2])}, "y_true[1]: expected 0 or 1, got 2 (int)"),
    ({"thresholds": []}, "thresholds: expected a non-empty 1-D array of finite floats"),
    ({"favourable": True}, "favourable: expected 0 or 1, got True (bool)"),
    ({"groups": {"grp": np.array([1, 0])}}, "grp: expected a 1-D boolean mask"),
])
def test_bad_input_is_named(kwargs: dict, fragment: str) -> None:
    """Every invalid argument is refused with its name and what arrived."""
    call = {"scores": np.array([0.1, 0.7]), "y_true": np.array([0, 1]),
            "groups": {"grp": np.array([True, False])}, "favourable": 1} | kwargs
    with pytest.raises(ValueError) as info:
        curve_counts(call.pop("scores"), call.pop("y_true"), call.pop("groups"), **call)
    assert fragment in str(info.value)


def test_packed_unit_types_equal_the_clusters_module(rng: np.random.Generator) -> None:
    """The packed 1-D unique gives clusters.unit_types' types, order and multiplicities."""
    from faircode.stats import clusters
    from faircode.stats.curves import _unit_types

    units = rng.integers(0, 400, 3000)
    y, yhat = rng.integers(0, 2, 3000).astype(np.int8), rng.integers(0, 2, 3000).astype(np.int8)
    inverse = clusters.repeated_units(units, units.size)
    assert inverse is not None
    want = clusters.unit_types(clusters.unit_counts(y, yhat, np.zeros(3000, dtype=np.int64),
                                                    inverse, n_groups=1))
    got = _unit_types(y, yhat, inverse)
    for field in ("counts", "multiplicity", "pattern"):
        assert np.array_equal(getattr(got, field), getattr(want, field)), field


# --- the evaluate step's curves.csv and the report's figure, on a real audit -------------------

SMALL_AUDIT = "german_credit_lending"  # 1,000 rows, one attribute, the threshold rule
CELLS = (("baseline", "logistic_regression"), ("unawareness", "gradient_boosting"),
         ("unawareness_proxy_removal", "random_forest"), ("in_processing", "logistic_regression"),
         ("post_processing", "logistic_regression"))
DECLARED = 0.42  # off the default grid: the declared cutoff must join it


@pytest.fixture(scope="module")
def written(audit_repo, tmp_path_factory):  # type: ignore[no-untyped-def]
    """German credit, five cells fitted, evaluated at small B/P with curves, written to disk."""
    from faircode.audit.data import load_audit
    from faircode.audit.prepared import prepare
    from faircode.core.cells import ModelFamily, Strategy
    from faircode.core.config import BenchmarkConfig
    from faircode.evaluate.audit import evaluate_audit
    from faircode.evaluate.write import write_audit
    from faircode.grid.fit import fit_cell
    from faircode.grid.predictions import AuditPredictions

    data = prepare(load_audit(audit_repo.manifests[SMALL_AUDIT]))
    config = BenchmarkConfig(jobs=1).with_params({
        "stats.n_resamples": 100, "stats.n_permutations": 100,
        "models.decision_threshold": DECLARED
    })
    cells = tuple(fit_cell(data, Strategy(s), ModelFamily(m), mitigation=config.mitigation,
                           seed=data.manifest.random_state, train=data.train_index,
                           test=data.test_index, perturbed=data.perturbed,
                           keep_train_scores=False)
                  for s, m in CELLS)
    predictions = AuditPredictions(audit=SMALL_AUDIT, cells=cells, config={})
    results = evaluate_audit(data, predictions, decision_threshold=DECLARED, stats=config.stats,
                             degenerate=config.degenerate, curves=config.curves)
    out = tmp_path_factory.mktemp("results")
    return write_audit(data, results, config=config, out_dir=out, provenance_record={})


def _read(folder, name: str) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    frame = pd.read_csv(folder / f"{name}.csv")
    return frame.fillna({"protected_attribute": ""}) if "protected_attribute" in frame else frame


def test_curves_csv_declared_rows_equal_the_main_tables(written) -> None:  # type: ignore[no-untyped-def]
    """Every non-grid row of curves.csv (S0-S2 at the declared cutoff, S3/S4's point) equals
    fairness.csv / performance.csv's row bit for bit, read back from disk."""
    curves = _read(written, "curves")
    main = pd.concat([_read(written, "fairness"), _read(written, "performance")])
    keys = ["strategy", "model", "protected_attribute", "metric"]
    at = curves[curves["point"] != "grid"]
    merged = at.merge(main, on=keys, suffixes=("", "_main"), validate="one_to_one")
    # one attribute: every fairness metric, then the overall ones
    assert len(merged) == len(at) == len(CELLS) * (len(FAIRNESS_METRICS) + len(OVERALL_METRICS))
    for column in ("value", "ci_low", "ci_high"):
        assert (bits(merged[column]) == bits(merged[f"{column}_main"])).all(), column
    fair = merged[merged["protected_attribute"] != ""]
    assert (fair["n_disadvantaged"] == fair["n_disadvantaged_main"]).all()


def test_declared_cutoff_joins_the_grid_and_s3_s4_are_points(written) -> None:  # type: ignore[no-untyped-def]
    """S0-S2 curves run over the default grid plus the declared 0.42 (marked ``declared``);
    S3/S4 are one ``point_only`` row per metric without a threshold."""
    curves = _read(written, "curves")
    s0 = curves[(curves["strategy"] == "baseline") & (curves["metric"] == "accuracy")]
    assert s0["threshold"].tolist() == sorted({*DEFAULT_THRESHOLDS, DECLARED})
    assert s0.loc[s0["point"] == "declared", "threshold"].tolist() == [DECLARED]
    points = curves[curves["strategy"].isin(["in_processing", "post_processing"])]
    assert set(points["point"]) == {"point_only"} and points["threshold"].isna().all()
    assert len(points) == 2 * (len(FAIRNESS_METRICS) + len(OVERALL_METRICS))


def test_curve_figure_is_written(written, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The report draws the audit's curve figure (PNG and PDF) from curves.csv on disk."""
    from faircode.report.drawing import draw
    from faircode.report.inputs import load_results
    from faircode.report.tables import Context
    from faircode.report.threshold_curves import curve_drawings

    inputs = load_results(written.parent)
    ctx = Context(inputs=inputs, fairness=inputs.fairness, metric="demographic_parity_diff",
                  models=("logistic_regression", "random_forest", "gradient_boosting"),
                  alpha=0.05, confidence=0.95)
    (figure,) = [f for f in draw(curve_drawings(ctx, out=tmp_path)) if f is not None]
    assert figure.png.name == f"{SMALL_AUDIT}_curves_demographic_parity_diff.png"
    assert figure.png.stat().st_size > 10_000 and figure.pdf.is_file()


def test_curve_plot_is_one_column_per_s0_s2_cell() -> None:
    """The DVC plot view pivots the first attribute's parity gap: threshold x S0-S2 cell."""
    from faircode.evaluate.curves import curve_plot

    rows = [("baseline", "random_forest", t, "a", "demographic_parity_diff", v, "grid")
            for t, v in ((0.2, -0.1), (0.6, 0.3))]
    rows += [("baseline", "random_forest", 0.2, "b", "demographic_parity_diff", 9.0, "grid"),
             ("baseline", "random_forest", 0.2, "", "accuracy", 0.7, "grid"),
             ("in_processing", "random_forest", np.nan, "a", "demographic_parity_diff", 5.0,
              "point_only")]
    frame = pd.DataFrame(rows, columns=["strategy", "model", "threshold", "protected_attribute",
                                        "metric", "value", "point"])
    plot = curve_plot(frame)
    assert list(plot.columns)[:3] == ["threshold", "S0 logistic_regression", "S0 random_forest"]
    assert len(plot.columns) == 1 + len(CUTOFF_STRATEGIES) * len(ModelFamily)
    assert plot["threshold"].tolist() == [0.2, 0.6]
    assert plot["S0 random_forest"].tolist() == [-0.1, 0.3]
    assert plot["S0 logistic_regression"].isna().all()


@pytest.fixture(scope="module")
def two_seeds(audit_repo):  # type: ignore[no-untyped-def]
    """German credit at K = 2 (split mode), every cell, small B/P, with curves."""
    from faircode.audit.data import load_audit
    from faircode.audit.prepared import prepare
    from faircode.core.config import BenchmarkConfig
    from faircode.pipeline.run import evaluate, fit

    data = prepare(load_audit(audit_repo.manifests[SMALL_AUDIT]))
    config = BenchmarkConfig(jobs=1).with_params({
        "run.seeds": 2, "run.seed_mode": "split", "mitigation.max_iter": 2,
        "stats.n_resamples": 40, "stats.n_permutations": 40})
    return evaluate(data, fit(data, config=config), config=config)


def test_k_replicate_curves_stand_on_the_tables_footing(two_seeds) -> None:  # type: ignore[no-untyped-def]
    """At K = 2 every fairness point of curves.csv is the K-replicate estimate (its method
    says so), replicate 0's own beside it; at the declared threshold, and S3/S4's points, it is
    fairness.csv's cell bit for bit, and replicate 0's is fairness.csv's rep0."""
    from faircode.evaluate.curves import REP0_CURVE_COLUMNS

    curves, fairness = two_seeds.curves, two_seeds.fairness
    assert curves is not None and set(REP0_CURVE_COLUMNS) <= set(curves.columns)
    fair = curves[curves["protected_attribute"].fillna("") != ""]
    keys = ["strategy", "model", "protected_attribute", "metric"]
    at = fair[fair["point"] != "grid"].merge(fairness, on=keys, suffixes=("", "_table"),
                                             validate="one_to_one")
    assert len(at) == len(fairness)  # every cell of the table has its point
    for column in ("value", "ci_low", "ci_high"):
        assert (bits(at[column]) == bits(at[f"{column}_table"])).all(), column
    assert (bits(at["rep0_value"]) == bits(at["rep0_value_table"])).all()
    grid = fair[fair["point"] == "grid"]
    dp = grid[grid["metric"] == "demographic_parity_diff"]
    assert set(dp["ci_method"].dropna()) == {"random_effects_t"}
    assert (dp["value"] != dp["rep0_value"]).any()
    overall = curves[curves["protected_attribute"].fillna("") == ""]
    assert (bits(overall["value"]) == bits(overall["rep0_value"])).all()  # performance.csv's


def test_k_replicate_plot_data_shows_replicate_zero_beside(two_seeds) -> None:  # type: ignore[no-untyped-def]
    """results/curves/<audit>.csv at K > 1: each S0-S2 cell's K-replicate column, its rep0
    column beside; the declared threshold's entry is fairness.csv's value."""
    from faircode.evaluate.curves import curve_plot

    plot = curve_plot(two_seeds.curves)
    assert list(plot.columns)[1:3] == ["S0 logistic_regression", "S0 logistic_regression rep0"]
    fairness = two_seeds.fairness
    cell = fairness[(fairness["strategy"] == "baseline")
                    & (fairness["model"] == "logistic_regression")
                    & (fairness["metric"] == "demographic_parity_diff")]
    declared = two_seeds.curves
    declared = declared[(declared["point"] == "declared") & (declared["strategy"] == "baseline")
                        & (declared["model"] == "logistic_regression")]
    at = float(declared["threshold"].iloc[0])
    assert plot.loc[plot["threshold"] == at, "S0 logistic_regression"].iloc[0] == \
        cell["value"].iloc[0]
