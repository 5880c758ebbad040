"""Tests for faircode.core.config: defaults, validation, and the params mapping."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from faircode.core.config import (
    PARAM_KEYS,
    BenchmarkConfig,
    StatsConfig,
    VerdictsConfig,
    config_from_params,
    config_record,
    load_params,
    param_value,
    params_from_mapping,
)
from faircode.core.errors import ConfigError


def test_defaults_are_the_benchmark_defaults() -> None:
    """The defaults are the ones the benchmark documents."""
    config = BenchmarkConfig().with_params({"run.jobs": 1})
    assert (config.mitigation.constraint, config.mitigation.eps,
            config.mitigation.max_iter) == ("demographic_parity", 0.01, 50)
    assert (config.models.decision_threshold, config.stats.n_resamples,
            config.stats.n_permutations) == (0.5, 2000, 2000)
    assert (config.stats.confidence, config.stats.alpha, config.stats.power) == (0.95, 0.05, 0.8)
    assert (config.degenerate.min_selection_rate, config.degenerate.max_selection_rate,
            config.degenerate.balanced_accuracy_margin) == (0.01, 0.99, 0.02)


def test_config_is_frozen() -> None:
    """A config cannot be changed after it is built."""
    config = BenchmarkConfig().with_params({"run.jobs": 1})
    with pytest.raises(AttributeError):
        config.mitigation.eps = 0.1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"mitigation.constraint": "parity"},
         "mitigation.constraint: expected one of demographic_parity"),
        ({"mitigation.eps": 0.0}, "mitigation.eps: expected a number in (0, inf), got 0.0 (float)"),
        ({"mitigation.max_iter": 2.5}, "mitigation.max_iter: expected an integer, got 2.5 (float)"),
        ({"stats.n_resamples": True}, "stats.n_resamples: expected an integer, got True (bool)"),
        ({"stats.n_permutations": 0},
         "stats.n_permutations: expected an integer >= 1, got 0 (int)"),
        ({"stats.confidence": 1.0},
         "stats.confidence: expected a number in (0, 1), got 1.0 (float)"),
        ({"stats.alpha": "0.05"}, "stats.alpha: expected a number, got '0.05' (str)"),
        ({"models.decision_threshold": 1.5},
         "models.decision_threshold: expected a number in [0, 1]"),
        ({"run.jobs": 0}, "run.jobs: expected an integer >= 1, got 0 (int)"),
        ({"stats.power": 1.0}, "stats.power: expected a number in (0, 1), got 1.0 (float)"),
        ({"stats.power": "0.8"}, "stats.power: expected a number, got '0.8' (str)"),
        ({"degenerate.min_selection_rate": -0.1},
         "degenerate.min_selection_rate: expected a number in [0, 1], got -0.1 (float)"),
        ({"degenerate.max_selection_rate": 0.005},
         "degenerate.max_selection_rate: expected a number above "
         "min_selection_rate (0.01), got 0.005 (float)"),
        ({"degenerate.balanced_accuracy_margin": 0.5},
         "degenerate.balanced_accuracy_margin: expected a number in [0, 0.5), got 0.5"),
        ({"degenerate.max_selection_rate": "1"}, "got '1' (str)"),
        ({"models.encoding": "ordinal"},
         "models.encoding: expected one of label, onehot, got 'ordinal' (str)"),
        ({"stats.effect_margin": 0.0},
         "stats.effect_margin: expected a number in (0, inf), got 0.0"),
        ({"stats.cost_margin": "0.02"}, "stats.cost_margin: expected a number, got '0.02' (str)"),
        ({"run.seeds": 0}, "run.seeds: expected an integer >= 1, got 0 (int)"),
        ({"stats.n_resample": 10}, "stats.n_resample: expected a known param"),
    ],
)
def test_invalid_values_are_rejected_with_key_and_value(changes: dict, fragment: str) -> None:
    """Every invalid value is refused with its params.yaml path, the expectation and the
    value's type."""
    with pytest.raises(ConfigError) as info:
        BenchmarkConfig().with_params({"run.jobs": 1}).with_params(changes)
    assert fragment in str(info.value)


def test_mapping_rejects_unknown_keys_naming_the_source() -> None:
    """A typo in params.yaml is an error that names the file and the key, not a silent default."""
    with pytest.raises(ConfigError, match=r"^params.yaml: stats.n_resample: expected a known"):
        params_from_mapping({"stats": {"n_resample": 10}})


def test_mapping_errors_carry_the_source_key_path() -> None:
    """Value errors from a mapping name the source and the key path."""
    with pytest.raises(ConfigError, match=r"^p: stats.alpha: expected a number in"):
        params_from_mapping({"stats": {"alpha": 2}}, where="p")


def test_sections_nest_as_params_yaml_does() -> None:
    """Each section of params.yaml is one record of the config, its defaults written once: a
    section built alone equals the config's, and every param path reaches one field."""
    config = BenchmarkConfig()
    assert config.stats == StatsConfig() and config.verdicts == VerdictsConfig()
    changed = config.with_params({"stats.alpha": 0.1, "verdicts.margin": 0.02})
    assert changed.stats == StatsConfig(alpha=0.1)
    assert changed.verdicts == VerdictsConfig(margin=0.02)
    assert changed.mitigation is config.mitigation  # untouched sections are shared
    for path in PARAM_KEYS:
        assert param_value(config, path) is not None


def test_mapping_must_be_a_mapping() -> None:
    """A list where a mapping belongs is named as such."""
    with pytest.raises(ConfigError, match=r"^p: expected a mapping of sections, got \[1\]"):
        params_from_mapping([1], where="p")


def test_record_is_flat_and_stable() -> None:
    """run.json's record keeps its flat names and order (the committed records' digests), and
    drops seeds/seed_mode at K = 1."""
    record = config_record(BenchmarkConfig().with_params({"run.jobs": 1}))
    assert list(record) == [
        "constraint", "eps", "max_iter", "decision_threshold", "encoding", "n_resamples",
        "n_permutations", "confidence", "alpha", "power", "effect_margin", "cost_margin", "jobs",
        "degenerate_min_selection_rate", "degenerate_max_selection_rate",
        "degenerate_balanced_accuracy_margin", "curve_thresholds", "verdict_margin",
        "verdict_ratio_margin", "verdict_min_informative_share", "verdict_claims",
        "mitigation.tolerances", "arbitrariness.bags", "arbitrariness.all_families_below",
        "arbitrariness.consistency_level", "arbitrariness.accuracy_tolerance"]
    k5 = config_record(BenchmarkConfig().with_params({"run.jobs": 1, "run.seeds": 5}))
    assert (k5["seeds"], k5["seed_mode"]) == (5, "model")
    assert list(k5).index("seeds") == list(record).index("curve_thresholds")


PARAMS_YAML = {
    "audits": ["compas"],
    "mitigation": {"constraint": "equalized_odds", "eps": 0.02, "max_iter": 7},
    "models": {"decision_threshold": 0.3},
    "stats": {"n_resamples": 11, "n_permutations": 12, "confidence": 0.9, "alpha": 0.1},
    "run": {"jobs": 3},
}


def test_params_sections_build_the_same_config_as_flags() -> None:
    """Every params.yaml key lands in its BenchmarkConfig field (the object the CLI flags build)."""
    params = params_from_mapping(PARAMS_YAML)
    assert params.audits == ("compas",)
    assert params.config == BenchmarkConfig().with_params({
        "mitigation.constraint": "equalized_odds", "mitigation.eps": 0.02,
        "mitigation.max_iter": 7, "models.decision_threshold": 0.3, "stats.n_resamples": 11,
        "stats.n_permutations": 12, "stats.confidence": 0.9, "stats.alpha": 0.1,
        "run.jobs": 3})
    assert config_from_params(PARAMS_YAML) == params.config


def test_every_config_field_has_one_params_key() -> None:
    """PARAM_KEYS maps each field of each section (and run.jobs) from exactly one
    section.key."""
    config = BenchmarkConfig()
    fields = sorted((f.name, g.name) for f in dataclasses.fields(config)
                    if f.name != "jobs" for g in dataclasses.fields(getattr(config, f.name)))
    assert sorted(v for v in PARAM_KEYS.values() if v[1] is not None) == fields
    assert PARAM_KEYS["run.jobs"] == ("jobs", None)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"stats": {"n_resampels": 10}},
         r"^params.yaml: stats.n_resampels: expected a known key of stats \(alpha, confidence, "
         r"cost_margin, effect_margin, n_permutations, n_resamples, power\), got "
         r"'n_resampels' \(str\)$"),
        ({"models": {"encoding": "one-hot"}},
         r"^params.yaml: models.encoding: expected one of label, onehot, got 'one-hot' \(str\)$"),
        ({"stat": {"n_resamples": 10}},
         r"^params.yaml: stat: expected a known section \(audits, text_audits, regression_audits, "
         r"multiclass_audits, "
         r"mitigation, models, stats, degenerate, verdicts, curves, arbitrariness, run, report\), "
         r"got 'stat' "
         r"\(str\)$"),
        ({"stats": {"n_resamples": "many"}},
         r"^params.yaml: stats.n_resamples: expected an integer, got 'many' \(str\)$"),
        ({"models": {"decision_threshold": 2}},
         r"^params.yaml: models.decision_threshold: expected a number in \[0, 1\], got 2 \(int\)$"),
        ({"models": [0.5]}, r"^params.yaml: models: expected a mapping, got \[0.5\] \(list\)$"),
        ({"audits": "compas"},
         r"^params.yaml: audits: expected a list of audit names, got 'compas' \(str\)$"),
        ({"audits": ["a", "a"]}, r"^params.yaml: audits: expected distinct audit names"),
        ({"stats": {"n_resamples": None}},
         r"^params.yaml: stats.n_resamples: expected an integer, got None"),
    ],
)
def test_bad_params_name_the_key_path(params: dict, message: str) -> None:
    """Unknown sections/keys and wrong values are one line naming params.yaml's key path."""
    with pytest.raises(ConfigError, match=message):
        params_from_mapping(params)


def test_null_jobs_means_every_core() -> None:
    """run.jobs: null keeps the all-cores default (the only key that may be null)."""
    assert params_from_mapping({"run": {"jobs": None}}).config.jobs >= 1


@pytest.mark.parametrize("data", [{"audits": [], "text_audits": ["t"]},
                                  {"audits": None, "text_audits": ["t"]}, {"text_audits": ["t"]}])
def test_a_text_audit_alone_is_a_pipeline(data: dict, tmp_path: Path) -> None:
    """An empty, null or absent ``audits`` list beside a text audit is no grid audit, and the
    pipeline's check (check-params) accepts it: only no audit at all is refused."""
    assert params_from_mapping(data).audits == ()
    (tmp_path / "audits" / "t").mkdir(parents=True)
    (tmp_path / "audits" / "t" / "audit.yaml").write_text("name: t\n")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(data))
    assert load_params(tmp_path / "params.yaml", audits_dir=tmp_path / "audits").text_audits == (
        "t",)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({**data, "text_audits": []}))
    with pytest.raises(ConfigError, match=r"^.*params.yaml: audits: expected a non-empty list of "
                                          r"audit names, or audits in text_audits, "
                                          r"regression_audits, multiclass_audits"):
        load_params(tmp_path / "params.yaml", audits_dir=tmp_path / "audits")


def test_text_audits_are_a_list_apart_from_the_grid_audits() -> None:
    """text_audits, regression_audits and multiclass_audits are read as lists of their own; an
    audit in two lists is refused."""
    params = params_from_mapping({"audits": ["a"], "text_audits": ["t"],
                                  "regression_audits": ["r"], "multiclass_audits": ["m"]})
    assert (params.audits, params.text_audits, params.regression_audits,
            params.multiclass_audits) == (("a",), ("t",), ("r",), ("m",))
    assert params.every_audit == ("a", "t", "r", "m")
    with pytest.raises(ConfigError, match=r"text_audits\[0\]: expected a text audit not also "
                                          r"in audits, got 'a'"):
        params_from_mapping({"audits": ["a"], "text_audits": ["a"]})
    with pytest.raises(ConfigError, match=r"multiclass_audits\[0\]: expected a multiclass audit "
                                          r"not also in regression_audits, got 'r'"):
        params_from_mapping({"regression_audits": ["r"], "multiclass_audits": ["r"]})


def test_load_params_rejects_a_repeated_key(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A key written twice in params.yaml is an error, not a silent last-one-wins."""
    path = tmp_path / "params.yaml"
    path.write_text("stats:\n  n_resamples: 10\n  n_resamples: 20\n")
    with pytest.raises(ConfigError, match=r"params.yaml: .*n_resamples"):
        load_params(path)


def test_shipped_params_yaml_is_valid_and_lists_every_audit() -> None:
    """The committed params.yaml loads, names every shipped audit (the text audits under
    text_audits, the regression audits under regression_audits, the multi-class ones under
    multiclass_audits) and is the paper state: the defaults but K = 5 training replicates in
    split mode."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    params = load_params(root / "params.yaml")
    assert sorted(params.every_audit) == sorted(
        p.parent.name for p in root.glob("audits/*/audit.yaml"))
    assert params.config == BenchmarkConfig().with_params(
        {"run.jobs": params.config.jobs, "run.seeds": 5, "run.seed_mode": "split"})


def test_curve_thresholds_default_to_the_curve_engines_grid() -> None:
    """``curves.thresholds`` defaults to stats.curves' grid, read from YAML lists as a tuple."""
    from faircode.stats.curves import DEFAULT_THRESHOLDS

    assert BenchmarkConfig().curves.thresholds == DEFAULT_THRESHOLDS
    config = config_from_params({"curves": {"thresholds": [0.2, 0.7]}})
    assert config.curves.thresholds == (0.2, 0.7)
    assert config_record(config)["curve_thresholds"] == [0.2, 0.7]


def test_tolerances_default_to_exact_and_three_relaxations() -> None:
    """``mitigation.tolerances`` defaults to 0, 0.01, 0.02, 0.05, is read from YAML as a tuple
    and recorded under its path."""
    assert BenchmarkConfig().mitigation.tolerances == (0.0, 0.01, 0.02, 0.05)
    config = config_from_params({"mitigation": {"tolerances": [0, 0.1]}})
    assert config.mitigation.tolerances == (0.0, 0.1)
    assert config_record(config)["mitigation.tolerances"] == [0.0, 0.1]


@pytest.mark.parametrize(
    ("tolerances", "message"),
    [
        ([], r"^params.yaml: mitigation.tolerances: expected a non-empty list of at most 20 "
             r"increasing numbers in \[0, 1\)"),
        ([0.02, 0.01], r"^params.yaml: mitigation.tolerances: expected a non-empty list"),
        ([0, 1], r"^params.yaml: mitigation.tolerances\[1\]: expected a number in \[0, 1\), "
                 r"got 1 \(int\)$"),
        ([0, "0.1"], r"^params.yaml: mitigation.tolerances\[1\]: expected a number in "),
    ],
)
def test_bad_tolerances_name_the_key_path(tolerances: object, message: str) -> None:
    """A bad tolerance grid is one line naming ``mitigation.tolerances`` (and the position)."""
    with pytest.raises(ConfigError, match=message):
        params_from_mapping({"mitigation": {"tolerances": tolerances}})


@pytest.mark.parametrize(
    ("thresholds", "message"),
    [
        ([], r"^params.yaml: curves.thresholds: expected a non-empty list of at most 1000 "
             r"distinct numbers in \[0, 1\], got \[\] \(list\)$"),
        ([0.3, 0.3], r"^params.yaml: curves.thresholds: expected a non-empty list"),
        ([0.1, 1.5], r"^params.yaml: curves.thresholds\[1\]: expected a number in \[0, 1\], "
                     r"got 1.5 \(float\)$"),
        ([0.1, True], r"^params.yaml: curves.thresholds\[1\]: expected a number in \[0, 1\], "
                      r"got True \(bool\)$"),
    ],
)
def test_bad_curve_thresholds_name_the_key_path(thresholds: object, message: str) -> None:
    """A bad threshold grid is one line naming ``curves.thresholds`` (and the position)."""
    with pytest.raises(ConfigError, match=message):
        params_from_mapping({"curves": {"thresholds": thresholds}})


@pytest.mark.parametrize(
    ("verdicts", "message"),
    [
        ({"margin": 0}, "verdicts.margin: expected a number in (0, 1), got 0 (int)"),
        ({"ratio_margin": [1.2, 1.25]}, "verdicts.ratio_margin: expected two numbers [low, "
                                        "high] with 0 < low < 1 < high, got [1.2, 1.25] (list)"),
        ({"min_informative_share": 1.5}, "verdicts.min_informative_share: expected a number in "
                                         "(0, 1], got 1.5 (float)"),
        ({"margins": 0.05}, "verdicts.margins: expected a known key of verdicts (claims, "
                            "margin, min_informative_share, ratio_margin), got 'margins' (str)"),
        ({"claims": "parity"}, "verdicts.claims: expected one of demographic_parity_diff, "
                               "disparate_impact_ratio, equal_opportunity_diff, "
                               "equalized_odds_diff, predictive_parity_diff, "
                               "accuracy_equality_diff, tpr_gap, fpr_gap or a unique prefix "
                               "before _ (demographic_parity), got 'parity' (str)"),
    ],
)
def test_bad_verdict_params_name_the_key_path(verdicts: dict, message: str) -> None:
    """A bad verdicts.* value or key is one line naming its params.yaml key path."""
    with pytest.raises(ConfigError) as info:
        params_from_mapping({"verdicts": verdicts})
    assert str(info.value) == f"params.yaml: {message}"


def test_verdict_params_reach_their_section() -> None:
    """verdicts.* become the typed VerdictsConfig (the ratio range a tuple of floats)."""
    config = params_from_mapping({"verdicts": {"margin": 0.03, "ratio_margin": [0.9, 1.1],
                                               "min_informative_share": 0.8}}).config
    assert (config.verdicts.margin, config.verdicts.ratio_margin,
            config.verdicts.min_informative_share) == (0.03, (0.9, 1.1), 0.8)
    assert config_record(config)["verdict_ratio_margin"] == [0.9, 1.1]


@pytest.mark.parametrize(
    ("arbitrariness", "message"),
    [
        ({"bags": 1}, "arbitrariness.bags: expected an integer >= 2, got 1 (int)"),
        ({"consistency_level": 0.5}, "arbitrariness.consistency_level: expected a number in "
                                     "(0.5, 1], got 0.5 (float)"),
        ({"accuracy_tolerance": 0}, "arbitrariness.accuracy_tolerance: expected a number in "
                                    "(0, 1), got 0 (int)"),
        ({"all_families_below": -1}, "arbitrariness.all_families_below: expected an integer "
                                     ">= 0, got -1 (int)"),
    ],
)
def test_bad_arbitrariness_params_name_the_key_path(arbitrariness: dict, message: str) -> None:
    """A bad arbitrariness.* value is one line naming its params.yaml key path (a tied vote must
    abstain, so the level lies above 0.5)."""
    with pytest.raises(ConfigError) as info:
        params_from_mapping({"arbitrariness": arbitrariness})
    assert str(info.value) == f"params.yaml: {message}"


def test_arbitrariness_params_reach_their_section() -> None:
    """arbitrariness.* become the typed ArbitrarinessConfig, recorded under their paths."""
    config = params_from_mapping({"arbitrariness": {"bags": 11, "consistency_level": 0.9,
                                                    "accuracy_tolerance": 0.02}}).config
    assert (config.arbitrariness.bags, config.arbitrariness.consistency_level,
            config.arbitrariness.accuracy_tolerance) == (11, 0.9, 0.02)
    assert config_record(config)["arbitrariness.bags"] == 11
