"""Tests of the flip-rate audit and the JSONL front end (faircode.stats.flips)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from faircode import AxisSpec, PerturbationKind, Substitution, flip_rate
from faircode.core.errors import ConfigError, PerturbationError
from faircode.counterfactual import jsonl as cf
from faircode.counterfactual.axes import load_axes
from faircode.counterfactual.jsonl import perturb_jsonl
from faircode.stats.flips import FlipRateResult, flip_rates

EXPLICIT, PROXY = PerturbationKind.EXPLICIT, PerturbationKind.PROXY

SWAP = AxisSpec(
    "gender_swap",
    tuple(
        Substitution(a, b)
        for a, b in [("he", "she"), ("she", "he"), ("his", "her"), ("her", "his"),
                     ("man", "woman"), ("woman", "man")]
    ),
)


# --- flip_rates -----------------------------------------------------------------------------


def test_flip_rates_hand_computed() -> None:
    """Counts, rate and directions match a hand count over the changed rows only."""
    before = np.array([1, 1, 0, 0, 1, 0])
    after = np.array([0, 1, 1, 1, 1, 0])
    changed = np.array([True, True, True, False, True, True])
    # changed rows: 1->0 (unfav), 1->1, 0->1 (fav), 1->1, 0->0; the unchanged 0->1 is excluded
    r = flip_rates(before, after, changed, axis="g", kind=EXPLICIT)
    assert (r.n_changed, r.n_unchanged, r.n_flipped) == (5, 1, 2)
    assert r.flip_rate == pytest.approx(2 / 5)
    assert (r.to_favourable, r.to_unfavourable) == (pytest.approx(1 / 5), pytest.approx(1 / 5))
    assert r.note == ""


def test_favourable_label_sets_direction() -> None:
    """With favourable=0 a 1->0 flip counts as a move to the favourable decision."""
    r = flip_rates(np.array([1, 1]), np.array([0, 1]), np.array([True, True]), axis="g",
                   kind=EXPLICIT, favourable=0)
    assert (r.to_favourable, r.to_unfavourable) == (0.5, 0.0)


def beta_limits(k: int, n: int, confidence: float) -> tuple[float, float]:
    """Clopper–Pearson limits written as beta quantiles (independent of binomtest)."""
    from scipy import stats as sps

    tail = (1 - confidence) / 2
    low = 0.0 if k == 0 else float(sps.beta.ppf(tail, k, n - k + 1))
    high = 1.0 if k == n else float(sps.beta.ppf(1 - tail, k + 1, n - k))
    return low, high


@pytest.mark.parametrize(("k", "n", "confidence"), [(1, 1444, 0.95), (3, 1804, 0.95),
                                                     (57, 200, 0.9), (200, 200, 0.95)])
def test_ci_is_clopper_pearson(k: int, n: int, confidence: float) -> None:
    """The interval equals the exact Clopper–Pearson limits (beta quantiles)."""
    before = np.zeros(n, int)
    after = np.r_[np.ones(k, int), np.zeros(n - k, int)]
    r = flip_rates(before, after, np.ones(n, bool), axis="g", kind=EXPLICIT,
                   confidence=confidence)
    assert (r.ci_low, r.ci_high) == pytest.approx(beta_limits(k, n, confidence), rel=1e-9)


def test_no_changed_rows_gives_nan_and_note() -> None:
    """With no changed row the rates are NaN and the note says why."""
    r = flip_rates(np.array([0, 1]), np.array([1, 0]), np.array([False, False]), axis="g",
                   kind=PROXY)
    assert r.note == "no_changed_rows"
    assert (r.n_changed, r.n_unchanged, r.n_flipped) == (0, 2, 0)
    assert all(math.isnan(x) for x in (r.flip_rate, r.ci_low, r.ci_high, r.to_favourable))


def test_zero_flips_give_the_exact_upper_bound() -> None:
    """No flip among n changed rows gives [0, 1 − 0.025^(1/n)], not a zero-width interval."""
    n = 1444
    r = flip_rates(np.ones(n, int), np.ones(n, int), np.ones(n, bool), axis="g", kind=EXPLICIT)
    assert (r.flip_rate, r.ci_low) == (0.0, 0.0)
    assert r.ci_high == pytest.approx(1 - 0.025 ** (1 / n))  # 0.00255: the "rule of three" / n


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"changed": np.array([1, 0])}, TypeError, "boolean"),
        ({"perturbed": np.array([1, 0, 1])}, ValueError, "1-D of one length"),
        ({"confidence": 1.0}, ValueError, "confidence"),
    ],
)
def test_flip_rates_validates_inputs(kwargs: dict, error: type, message: str) -> None:
    """Mismatched shapes, non-boolean masks and bad parameters are rejected."""
    args: dict[str, Any] = {"original": np.array([1, 0]), "perturbed": np.array([0, 0]),
            "changed": np.array([True, True]), "axis": "g", "kind": EXPLICIT}
    args.update(kwargs)
    with pytest.raises(error, match=message):
        flip_rates(**args)


# --- flip_rate ------------------------------------------------------------------------------


class CountingModel:
    """A fake model: 1 when the text has 'she' but not 'z'; records every batch it gets."""

    def __init__(self) -> None:
        self.batches: list[list] = []

    def __call__(self, batch: list) -> list[int]:
        self.batches.append(list(batch))
        return [int(bool(re.search(r"\bshe\b", str(x), re.IGNORECASE)) and "z" not in str(x))
                for x in batch]


def test_flip_rate_batches_and_results() -> None:
    """predict runs once on originals and once per (axis, kind); results are hand-checkable."""
    axes = [AxisSpec("g", (Substitution("he", "she"), Substitution("Greg", "Jamal", kind=PROXY))),
            AxisSpec("h", (Substitution("x", "y"),))]
    payloads = ["he runs", "Greg runs", "she runs", "he and Greg"]
    model = CountingModel()
    results = flip_rate(model, payloads, axes)
    assert model.batches[0] == payloads
    assert len(model.batches) == 1 + 3
    assert model.batches[1] == ["she runs", "Greg runs", "she runs", "she and Greg"]
    assert [(r.axis, r.kind) for r in results] == [("g", EXPLICIT), ("g", PROXY), ("h", EXPLICIT)]
    explicit, proxy, other = results
    assert (explicit.n_changed, explicit.n_flipped, explicit.flip_rate) == (2, 2, 1.0)
    assert (proxy.n_changed, proxy.n_flipped, proxy.flip_rate) == (2, 0, 0.0)
    assert other.note == "no_changed_rows"


def test_flip_rate_results_equal_flip_rates_per_axis() -> None:
    """Each result of flip_rate is flip_rates on that axis's before/after decisions."""
    axes = [AxisSpec("a", (Substitution("he", "she"),)),
            AxisSpec("b", (Substitution("it", "she"),))]
    payloads = ["he", "he z", "it", "it z", "we"] * 50
    results = flip_rate(CountingModel(), payloads, axes, confidence=0.9)
    assert [r.flip_rate for r in results] == [0.5, 0.5]
    model = CountingModel()
    before = np.asarray(model(payloads))
    for i, r in enumerate(results):
        sub = axes[i].substitutions[0]
        after = np.asarray(model([p.replace(sub.pattern, "she") for p in payloads]))
        changed = np.array([p.split()[0] == sub.pattern for p in payloads])
        expected = flip_rates(before, after, changed, axis=r.axis, kind=EXPLICIT, confidence=0.9)
        assert r == expected
        assert (r.ci_low, r.ci_high) == pytest.approx(beta_limits(50, 100, 0.9))


def test_flip_rate_without_axes_raises_before_predicting() -> None:
    """flip_rate with no axes raises the no-built-in-axes error and never calls predict."""
    model = CountingModel()
    with pytest.raises(PerturbationError, match="no built-in axis list"):
        flip_rate(model, ["he"], [])
    assert model.batches == []


def test_flip_rate_checks_prediction_length() -> None:
    """A predict function returning the wrong number of decisions is rejected."""
    with pytest.raises(ValueError, match="shape"):
        flip_rate(lambda batch: [1], ["he", "she"], [SWAP])


# --- text classifier demonstration ----------------------------------------------------------

ADJECTIVES = ["diligent", "punctual", "careful", "quiet", "steady", "curious", "patient"]
TOPICS = ["logistics", "accounts", "the archive", "customer care", "inventory", "payroll"]
GOOD = ["excellent", "outstanding", "exemplary"]
BAD = ["poor", "weak", "inconsistent"]


def letters(rng: np.random.Generator, n: int, *, leak: bool) -> tuple[list[str], np.ndarray]:
    """Generate reference letters; with ``leak`` the label follows the pronoun, else the record."""
    male = rng.random(n) < 0.5
    good = rng.random(n) < 0.5
    noise = rng.random(n) < 0.1
    label = (male ^ noise) if leak else good
    texts = []
    for m, g in zip(male, good, strict=True):
        he, his, man = ("He", "His", "man") if m else ("She", "Her", "woman")
        quality = rng.choice(GOOD if g else BAD)
        texts.append(f"{he} is a {rng.choice(ADJECTIVES)} {man}. {his} record is {quality}. "
                     f"{he} worked in {rng.choice(TOPICS)}.")
    return texts, label.astype(int)


def trained_flip_rate(rng: np.random.Generator, *, leak: bool) -> FlipRateResult:
    """Train CountVectorizer + LogisticRegression on seeded letters and audit it on fresh ones."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    x_train, y_train = letters(rng, 600, leak=leak)
    x_test, _ = letters(rng, 300, leak=leak)
    model = make_pipeline(CountVectorizer(), LogisticRegression(max_iter=1000))
    model.fit(x_train, y_train)
    (result,) = flip_rate(model.predict, x_test, [SWAP])
    return result


def test_leaky_classifier_flips_under_gender_swap(rng: np.random.Generator) -> None:
    """A classifier whose label leaks through pronouns flips most decisions under the swap."""
    r = trained_flip_rate(rng, leak=True)
    assert r.n_changed == 300
    assert r.flip_rate > 0.8
    assert r.ci_low > 0.7


def test_non_leaky_classifier_does_not_flip(rng: np.random.Generator) -> None:
    """A classifier trained with pronouns independent of the label barely flips; CI is exact."""
    r = trained_flip_rate(rng, leak=False)
    assert r.n_changed == 300
    assert r.flip_rate < 0.02
    assert (r.ci_low, r.ci_high) == pytest.approx(beta_limits(r.n_flipped, 300, 0.95))


# --- load_axes ------------------------------------------------------------------------------

AXIS_YAML = """\
- name: gender
  substitutions:
    - {pattern: he, replacement: she}
    - {pattern: Greg, replacement: Jamal, kind: proxy}
"""


def test_load_axes_list_and_mapping_forms(tmp_path: Path) -> None:
    """A bare list and a mapping with key axes load to the same AxisSpec tuple."""
    (tmp_path / "a.yaml").write_text(AXIS_YAML)
    (tmp_path / "b.yaml").write_text("axes:\n" + "".join("  " + ln + "\n"
                                                         for ln in AXIS_YAML.splitlines()))
    expected = (AxisSpec("gender", (Substitution("he", "she"),
                                    Substitution("Greg", "Jamal", kind=PROXY))),)
    assert load_axes(tmp_path / "a.yaml") == expected
    assert load_axes(tmp_path / "b.yaml") == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (AXIS_YAML.replace("kind: proxy", "kind: implicit"),
         "{f}: [0].substitutions[1].kind: expected one of explicit, proxy, got 'implicit' (str)"),
        ("axes: []\n", "{f}: axes: expected at least one axis"),
        ("[]\n", "{f}: axes: expected at least one axis"),
        ("axis: []\n", "{f}: expected only keys axes and groups; unknown key, got 'axis' (str)"),
        ("axes: 3\n", "{f}: axes: expected a list of axes"),
        ("- [unclosed\n", "{f}: line 2: expected valid YAML, got a syntax error"),
        (AXIS_YAML + AXIS_YAML, "{f}: [1].name: duplicate axis name 'gender' (also [0])"),
    ],
)
def test_load_axes_errors_name_file_and_key_path(tmp_path: Path, text: str, message: str) -> None:
    """Every malformed axes file raises a one-line ConfigError naming the file and key path."""
    path = tmp_path / "axes.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_axes(path)
    assert str(info.value).startswith(message.format(f=path))


def test_load_axes_missing_file(tmp_path: Path) -> None:
    """A missing axes file is a ConfigError naming the file."""
    with pytest.raises(ConfigError, match="cannot read axes file"):
        load_axes(tmp_path / "nope.yaml")


def test_load_axes_refuses_a_repeated_key(tmp_path: Path) -> None:
    """A key written twice in one mapping is an error naming file and line, not a silent drop."""
    path = tmp_path / "axes.yaml"
    path.write_text("- name: g\n  substitutions:\n    - pattern: he\n      replacement: she\n"
                    "      replacement: they\n")
    with pytest.raises(ConfigError) as info:
        load_axes(path)
    assert str(info.value) == (f"{path}: line 5: expected each key once in a mapping, got "
                               "'replacement' again (first at line 4)")


# --- perturb_jsonl --------------------------------------------------------------------------

GENDER = AxisSpec("gender", (Substitution("he", "she"), Substitution("Greg", "Jamal", kind=PROXY)))


def test_perturb_jsonl_records() -> None:
    """Ids come from the id field or the line number; payload from 'payload' or the object."""
    lines = ['{"id": "a", "payload": {"letter": "he is Greg"}, "label": 1}\n', "\n",
             '{"letter": "nothing here", "n": 3}\n']
    records = perturb_jsonl([GENDER], lines, source="in.jsonl")
    assert records == [
        {"id": "a", "axis": "gender", "kind": "explicit", "fired": {"he": 1}, "changed": True,
         "perturbed": {"letter": "she is Greg"}},
        {"id": "a", "axis": "gender", "kind": "proxy", "fired": {"Greg": 1}, "changed": True,
         "perturbed": {"letter": "he is Jamal"}},
        {"id": 3, "axis": "gender", "kind": "explicit", "fired": {}, "changed": False,
         "perturbed": {"letter": "nothing here", "n": 3}},
        {"id": 3, "axis": "gender", "kind": "proxy", "fired": {}, "changed": False,
         "perturbed": {"letter": "nothing here", "n": 3}},
    ]
    assert all(json.loads(json.dumps(r)) == r for r in records)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ('{"letter": "he"', "in.jsonl:3: expected a JSON object, got invalid JSON"),
        ('["he"]', "in.jsonl:3: expected a JSON object, got ['he'] (list)"),
        ('{"id": [1], "x": "he"}', "in.jsonl:3: id: expected a string or integer, got [1] (list)"),
        ('{"id": "a", "x": "he"}', "in.jsonl:3: id: duplicate id 'a' (also line 1)"),
    ],
)
def test_perturb_jsonl_malformed_line_names_line(bad: str, message: str) -> None:
    """A malformed line raises a ConfigError naming the source and its line number."""
    lines = ['{"id": "a", "x": "he"}', '{"x": "his"}', bad, '{"x": "he"}']
    with pytest.raises(ConfigError) as info:
        perturb_jsonl([GENDER], lines, source="in.jsonl")
    assert str(info.value).startswith(message)


def test_perturb_jsonl_parses_everything_before_perturbing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bad last line raises before any payload is perturbed, so no output is half-produced."""
    calls: list[object] = []

    def spy(payload: object, axes: object) -> list:
        calls.append(payload)
        return []

    monkeypatch.setattr(cf, "perturb", spy)
    with pytest.raises(ConfigError, match=re.escape("in.jsonl:3")):
        perturb_jsonl([GENDER], ['{"x": "he"}', '{"x": "she"}', "not json"], source="in.jsonl")
    assert calls == []


def test_perturb_jsonl_without_axes_is_config_error() -> None:
    """perturb_jsonl with no axes raises a ConfigError carrying the no-built-in-axes reason."""
    with pytest.raises(ConfigError, match=r"in\.jsonl: .*no built-in axis list"):
        perturb_jsonl([], ['{"x": "he"}'], source="in.jsonl")


def test_flip_rate_with_repeated_units_uses_the_effective_size() -> None:
    """Two people of two changed rows (one flips both, one neither): deff 4, CP at x=0.5, n=1."""
    original = np.array([0, 0, 1, 1])
    perturbed = np.array([1, 1, 1, 1])
    changed = np.ones(4, dtype=bool)
    result = flip_rates(original, perturbed, changed, axis="a", kind=PerturbationKind.EXPLICIT,
                        units=np.array([7, 7, 9, 9]))
    # rate 1/2; cluster var 2/1 * (1² + 1²) / 4² = 1/4; binomial var (1/4) / 4 = 1/16
    assert result.design_effect == pytest.approx(4.0)
    assert result.ci_low == pytest.approx(sps_beta_ppf(0.025, 0.5, 1.5))
    assert result.ci_high == pytest.approx(sps_beta_ppf(0.975, 1.5, 0.5))
    assert result.flip_rate == 0.5 and result.n_flipped == 2


def test_flip_rate_with_single_row_units_is_unchanged() -> None:
    """Units that do not repeat among the changed rows keep the exact binomial interval."""
    original, perturbed = np.array([0, 1, 0, 1]), np.array([1, 1, 0, 0])
    changed = np.array([True, True, True, False])
    plain = flip_rates(original, perturbed, changed, axis="a", kind=PerturbationKind.EXPLICIT)
    units = flip_rates(original, perturbed, changed, axis="a", kind=PerturbationKind.EXPLICIT,
                       units=np.array([1, 2, 3, 3]))  # unit 3 repeats, but once among changed
    assert units == plain and plain.design_effect == 1.0


def sps_beta_ppf(q: float, a: float, b: float) -> float:
    """scipy's beta quantile (Clopper–Pearson's limits), written out for the tests above."""
    from scipy import stats as sps

    return float(sps.beta.ppf(q, a, b))
