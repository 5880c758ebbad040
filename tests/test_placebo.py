"""Tests of the placebo arms: the generator on a toy axis, the axes file's groups, the difference's
hand-computed values, its interval's coverage on a simulated system with a known effect, and the
placebo table of a text audit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats as sps

from faircode.core.errors import ConfigError
from faircode.counterfactual.axes import load_axes_file
from faircode.counterfactual.perturb import AxisSpec, PerturbationKind, Substitution
from faircode.counterfactual.placebo import (
    PlaceboGroup,
    groups_from_config,
    placebo_arms,
    placebo_swaps,
)
from faircode.counterfactual.texts import perturb_texts
from faircode.stats.placebo import placebo_differences, placebo_verdicts

PROXY = PerturbationKind.PROXY
TOY = AxisSpec("race_white_to_black", (Substitution("Emily", "Lakisha", PROXY),
                                       Substitution("Greg", "Jamal", PROXY),
                                       Substitution("Anne", "Ebony", PROXY)))
GROUPS = (PlaceboGroup("white_female", ("Emily", "Anne")), PlaceboGroup("white_male", ("Greg",
                                                                                      "Brad")),
          PlaceboGroup("black_female", ("Lakisha", "Ebony", "Keisha")))


# ------------------------------------------------------------------------------ the generator


def test_placebo_swaps_make_every_ordered_pair_within_the_group_once() -> None:
    """A group of three gives two shift axes whose six swaps are every ordered pair of distinct
    members, each once."""
    swaps = placebo_swaps(GROUPS[2], PROXY)
    assert [a.name for a in swaps] == ["black_female+1", "black_female+2"]
    pairs = [(s.pattern, s.replacement) for a in swaps for s in a.substitutions]
    assert sorted(pairs) == sorted((a, b) for a in GROUPS[2].members
                                   for b in GROUPS[2].members if a != b)
    assert {s.kind for a in swaps for s in a.substitutions} == {PROXY}


def test_placebo_arm_of_the_toy_axis_uses_the_groups_of_both_sides() -> None:
    """The toy axis's arm holds the groups meeting its patterns (White) or its replacements
    (Black), in declaration order."""
    (arm,) = placebo_arms([TOY], GROUPS, where="toy.yaml")
    assert (arm.axis, arm.kind, arm.groups) == ("race_white_to_black", PROXY,
                                                ("white_female", "white_male", "black_female"))


def test_placebo_copies_never_cross_the_declared_sides() -> None:
    """Applied to sentences of every name, no placebo copy puts a replacement's name where a
    pattern's stood (or back): every swap stays within the source's group."""
    names = ["Emily", "Anne", "Greg", "Brad", "Lakisha", "Ebony", "Keisha"]
    group_of = {m: g.name for g in GROUPS for m in g.members}
    texts = [f"{n} loved this tea." for n in names]
    swaps = [s for g in GROUPS for s in placebo_swaps(g, PROXY)]
    sides = ({s.pattern for s in TOY.substitutions}, {s.replacement for s in TOY.substitutions})
    for copies in perturb_texts(texts, swaps):
        for i in np.flatnonzero(copies.changed):
            before, after = names[i], copies.texts[i].split()[0]
            assert group_of[before] == group_of[after] and before != after
            assert not any(before in side and after in other
                           for side, other in (sides, sides[::-1]))


def test_a_group_crossing_the_sides_of_an_axis_is_refused() -> None:
    """A group holding a pattern and a replacement of one axis is one line naming both."""
    crossing = (PlaceboGroup("mixed", ("Emily", "Lakisha")),)
    with pytest.raises(ConfigError, match=r"toy\.yaml: groups\.mixed: expected terms on one side "
                                          r"of axis 'race_white_to_black' .*'Emily' \(a pattern\) "
                                          r"and 'Lakisha' \(a replacement\)"):
        placebo_arms([TOY], crossing, where="toy.yaml")


def test_a_group_touching_no_axis_and_a_term_in_two_groups_are_refused() -> None:
    """Groups must serve an axis, and a term belongs to one group."""
    with pytest.raises(ConfigError, match=r"groups\.other: expected a group holding a term"):
        placebo_arms([TOY], (PlaceboGroup("other", ("Zoe", "Liam")),), where="toy.yaml")
    with pytest.raises(ConfigError, match=r"groups\.b\[0\]: expected a term of one group only, "
                                          r"got 'emily', also in a"):
        groups_from_config({"a": ["Emily", "Anne"], "b": ["emily", "Jill"]}, where="groups")
    with pytest.raises(ConfigError, match="at least two terms"):
        groups_from_config({"a": ["Emily"]}, where="groups")


def test_axes_file_reads_groups_and_checks_them(tmp_path: Path) -> None:
    """An axes file's groups are read with its axes; the shipped files declare theirs."""
    path = tmp_path / "axes.yaml"
    path.write_text(yaml.safe_dump({"axes": [{"name": "gay_to_straight", "substitutions": [
        {"pattern": "gay", "replacement": "straight"},
        {"pattern": "homosexual", "replacement": "heterosexual"}]}],
        "groups": {"gay": ["gay", "homosexual"], "straight": ["straight", "heterosexual"]}}))
    doc = load_axes_file(path)
    assert [g.name for g in doc.groups] == ["gay", "straight"]
    assert doc.arms[0].groups == ("gay", "straight")
    shipped = Path(__file__).resolve().parent.parent / "audits" / "bias_madlibs"
    names = load_axes_file(shipped / "axes_names.yaml")
    assert {len(g.members) for g in names.groups} == {9} and len(names.arms) == 4


# ------------------------------------------------------------------------------ the statistic


def test_difference_by_hand() -> None:
    """Two frames: the swap flips 2 of 4 pairs, the placebo 1 of 4; Δ = 0.25; each unit its
    own sums."""
    units_b, flips_b = np.array([0, 0, 1, 1]), np.array([1.0, 1.0, 0.0, 0.0])
    units_p, flips_p = np.array([0, 0, 1, 1]), np.array([1.0, 0.0, 0.0, 0.0])
    r = placebo_differences(units_b, flips_b[:, None], units_p, flips_p[:, None],
                            n_resamples=200, seed=0)
    assert (r.between[0], r.placebo[0], r.difference[0]) == (0.5, 0.25, 0.25)
    assert (r.n_between, r.n_placebo, r.n_units) == (4, 4, 2)
    assert r.ci_low[0] <= 0.25 <= r.ci_high[0]


def test_no_placebo_pairs_and_nothing_moved() -> None:
    """Without placebo pairs everything is NaN with its note; a measure 0 on every pair of both
    arms has Δ = 0 and no test (p NaN), its equivalence shown."""
    empty = placebo_differences([0, 1], np.ones((2, 1)), [], np.zeros((0, 1)), n_resamples=50,
                                seed=0)
    assert empty.note == "no_placebo_pairs" and np.isnan(empty.difference[0])
    still = placebo_differences([0, 1, 2], np.zeros((3, 1)), [0, 1, 2], np.zeros((3, 1)),
                                n_resamples=50, seed=0)
    assert still.difference[0] == 0.0 and np.isnan(still.p_value[0])
    assert still.equivalence_p_value[0] < 0.05


def test_verdicts_read_the_difference() -> None:
    """Above where shown above 0, below where shown below, within the margin where equivalent,
    uninformative where undefined."""
    words = placebo_verdicts([0.01, -0.2, -0.01, np.nan, -0.1], [0.05, -0.1, 0.01, np.nan, 0.2],
                             significant=[True, True, False, False, False],
                             equivalent=[False, False, True, False, False],
                             informative=[True, True, True, False, True])
    assert list(words) == ["above_placebo", "below_placebo", "within_margin", "uninformative",
                           "inconclusive"]


def _true_difference(eta: np.ndarray, shift: np.ndarray, between: np.ndarray,
                     placebo: np.ndarray) -> float:
    """Δ of the simulated system over frames (Gauss–Hermite over the frame effect): a pair
    (a, b) flips when exactly one of its two probit decisions is 1."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    p = sps.norm.cdf(x[:, None] + eta[None, :] + shift[None, :])
    w = w / w.sum()

    def rate(pairs: np.ndarray) -> float:
        a, b = p[:, pairs[:, 0]], p[:, pairs[:, 1]]
        return float(w @ (a * (1 - b) + b * (1 - a)).mean(axis=1))

    return rate(between) - rate(placebo)


def test_difference_interval_covers_a_known_effect(rng: np.random.Generator) -> None:
    """A simulated system whose decisions on a Black name are shifted by 0.5 (probit; the names'
    own effects spread alike in both groups, fixed; frames random): over 300 audits of 40
    frames the 95 % interval of Δ covers the true Δ in 0.90-0.99 of them (the 2,000-replicate
    version: bench/placebo_coverage.py)."""
    g, n_frames = 4, 40
    eta = np.tile(np.linspace(-0.3, 0.3, g), 2)
    shift = np.r_[np.zeros(g), np.full(g, 0.5)]
    between = np.array([(i, g + i) for i in range(g)])
    placebo = np.array([(a, b) for side in (range(g), range(g, 2 * g)) for a in side
                        for b in side if a != b])
    truth = _true_difference(eta, shift, between, placebo)
    assert truth > 0.01
    covered = 0
    for k in range(300):
        decide = (rng.normal(size=(n_frames, 1)) + eta + shift
                  + rng.normal(size=(n_frames, 2 * g))) > 0
        arms = [(np.repeat(np.arange(n_frames), len(pairs)),
                 (decide[:, pairs[:, 0]] != decide[:, pairs[:, 1]]).ravel()[:, None])
                for pairs in (between, placebo)]
        r = placebo_differences(*arms[0], *arms[1], n_resamples=400, seed=k)
        covered += bool(r.ci_low[0] <= truth <= r.ci_high[0])
    assert 0.90 <= covered / 300 <= 0.99
