"""Tests of faircode.report.headline's counts: directions, families, bounds, signs."""

from __future__ import annotations

import pandas as pd

from faircode.report.findings import _strategy, _with_claims
from faircode.report.headline import (
    AuditFinding,
    StrategyFinding,
    audit_line,
    direction_counts,
    lead,
    open_count,
    parity_count,
)
from faircode.report.tables import num, signed

DP = "demographic_parity_diff"
DI = "disparate_impact_ratio"
CLAIMS = {"difference": 0.05, "ratio": (0.8, 1.25), "claims": DP}


def _gaps(values: list[float], verdicts: list[str], bounds: list[float] | None = None, *,
          metric: str = DP, conservative: list[str] | None = None,
          notes: list[str] | None = None) -> pd.DataFrame:
    """One strategy's rows over three model families."""
    frame = pd.DataFrame({"metric": metric, "value": values, "verdict": verdicts,
                          "gap_bound": bounds or values, "note": notes or [""] * len(values)})
    if conservative is not None:
        frame["conservative_verdict"] = conservative
    return frame


def _finding(code: str, gaps: pd.DataFrame, metric: str = DP) -> StrategyFinding:
    return _strategy(code, gaps, pd.DataFrame(), metric=metric, balanced=False)


def _audit(name: str, baseline: StrategyFinding, *others: StrategyFinding) -> AuditFinding:
    return AuditFinding(audit=name, attribute="sex", gap=-0.1, baseline=baseline,
                        strategies=others)


def test_the_gap_not_excluded_is_the_largest_bound_across_families() -> None:
    """Families with bounds -0.08, -0.12, -0.30: "a gap of up to 0.30 cannot be excluded",
    never the first family's or the mean."""
    s4 = _finding("S4", _gaps([-0.01, -0.02, -0.03], ["inconclusive"] * 3,
                              [-0.08, -0.12, -0.30]))
    assert s4.bound == 0.30
    assert open_count([s4], "\u00b10.05") == "in the other 1 a gap of up to 0.30 cannot be excluded"
    base = _finding("S0", _gaps([-0.2, -0.2, -0.2], ["gap"] * 3))
    text = " ".join(lead([_audit("a", base, s4)], metric=DP, unavailable=0))
    assert "a gap of up to 0.30 cannot be excluded" in text


def test_k_of_n_counts_an_audit_whose_gap_shows_in_one_family() -> None:
    """An audit with a gap in exactly one of three families counts in "k of n"."""
    one = _finding("S0", _gaps([-0.2, -0.01, 0.0], ["gap", "inconclusive", "inconclusive"]))
    none = _finding("S0", _gaps([-0.01, -0.01, 0.0], ["inconclusive"] * 3))
    first = lead([_audit("a", one), _audit("b", none)], metric=DP, unavailable=0)[0]
    assert "on the first protected attribute in 1 of 2 (a gap shown in at least one model " \
           "family): against the disadvantaged group in 1, favouring it in 0." in first


def test_every_count_of_gaps_has_its_direction() -> None:
    """Below no gap is against the disadvantaged group, above it favouring it (a ratio above
    1 too); families that disagree count both ways; a magnitude has no direction."""
    against = _finding("S0", _gaps([-0.3, -0.2, 0.01], ["gap", "gap", "inconclusive"]))
    favouring = _finding("S0", _gaps([0.51, 0.4, 0.3], ["gap"] * 3))
    both = _finding("S0", _gaps([0.2, -0.2, 0.0], ["gap", "gap", "inconclusive"]))
    ratio = _finding("S0", _gaps([1.3, 1.2, 1.1], ["gap"] * 3, metric=DI), metric=DI)
    assert (against.direction, favouring.direction, both.direction, ratio.direction) == (
        "against", "favouring", "both", "favouring")
    assert direction_counts([against, favouring, both, ratio]) == (
        "against the disadvantaged group in 1, favouring it in 2, both ways across families "
        "in 1")
    magnitude = _finding("S0", _gaps([0.3, 0.2, 0.1], ["gap"] * 3, metric="equalized_odds_diff"),
                         metric="equalized_odds_diff")
    assert magnitude.direction == "" and direction_counts([magnitude]) == ""
    _, line = audit_line(_audit("a", favouring))
    assert "a gap shown favouring the disadvantaged group (3 of 3)" in line


def _claim(code: str, p: list[float], verdicts: list[str],
           conservative: list[str]) -> StrategyFinding:
    gaps = _gaps([0.0, 0.01, -0.01], verdicts, [0.03, 0.04, -0.04], conservative=conservative)
    gaps["equivalence_p_value"] = p
    return _finding(code, gaps)


def test_a_headline_claim_is_tested_among_its_sentences_claims() -> None:
    """S4's claim "parity in every family" is the largest of its families' equivalence p
    (intersection-union), Benjamini-Hochberg over the sentence's audits: three audits whose
    families sit at p 0.011, 0.018 and 0.03 all hold, though cell by cell (in each audit's
    larger family) they were inconclusive; the audit-wide count stays beside."""
    base = _finding("S0", _gaps([-0.2] * 3, ["gap"] * 3, conservative=["gap"] * 3))
    items = tuple(_audit(name, base, _claim("S4", [0.01, 0.011, p], ["inconclusive"] * 3,
                                            ["inconclusive"] * 3))
                  for name, p in (("a", 0.011), ("b", 0.018), ("c", 0.03)))
    tested = _with_claims(items, alpha=0.05)
    s4 = [f.strategies[0] for f in tested]
    assert [round(s.claim_q, 3) for s in s4] == [0.027, 0.027, 0.03]
    assert all(s.claimed and not s.parity for s in s4)
    assert parity_count(s4, "\u00b10.05", claims=True) == (
        "parity within \u00b10.05 is shown in 3 (family: these 3 claims; 0 with all "
        "equivalence tests)")
    text = " ".join(lead(tested, metric=DP, unavailable=0, margins=CLAIMS))
    assert "parity within \u00b10.05 is shown in 3 (family: these 3 claims; 0 with all" in text
    assert "as the headline's claim (q 0.027" in audit_line(tested[0])[1]


def test_a_gap_in_one_family_fails_the_claim_and_other_metrics_count_cells() -> None:
    """A family showing a gap makes the claim's p 1; a report of a metric that is not the
    pre-specified claims counts the cells' verdicts in the audit-wide family."""
    base = _finding("S0", _gaps([-0.2] * 3, ["gap"] * 3, conservative=["gap"] * 3))
    broken = _claim("S4", [0.001, 0.001, 0.9], ["parity", "parity", "gap"],
                    ["parity", "parity", "gap"])
    (tested,) = _with_claims((_audit("a", base, broken),), alpha=0.05)
    assert tested.strategies[0].claim_q == 1.0 and not tested.strategies[0].claimed
    other = " ".join(lead((tested,), metric=DP, unavailable=0,
                          margins={**CLAIMS, "claims": DI}))
    assert "(family: all equivalence tests)" in other


def test_parity_out_of_reach_is_said() -> None:
    """An inconclusive family noted parity_not_reachable is counted as out of reach."""
    s4 = _finding("S4", _gaps([0.0, 0.01, -0.01], ["inconclusive"] * 3, [0.2, 0.1, -0.1],
                              notes=["parity_not_reachable", "", ""]))
    assert s4.unreachable == 1
    assert open_count([s4], "\u00b10.05").endswith(
        "(parity within \u00b10.05 out of reach at their size in 1)")
    _, line = audit_line(_audit("a", s4))
    assert "parity within \u00b10.05 out of reach at this size (1 of 3)" in line


def test_a_small_negative_number_keeps_its_sign() -> None:
    """A median of -0.0048 prints -0.00 (typographic minus when signed), never +0.00."""
    assert num(-0.0048, 2) == "-0.00" and num(-0.0, 2) == "0.00"
    assert signed(-0.0048) == "\u22120.00" and signed(0.0048) == "+0.00"
    assert signed(0.0) == "0.00"
    base = _finding("S0", _gaps([-0.2] * 3, ["gap"] * 3))
    item = AuditFinding(audit="a", attribute="sex", gap=-0.0048, baseline=base, strategies=())
    assert "S0 gap \u22120.00" in audit_line(item)[1]


def test_the_paper_tables_mark_says_the_direction() -> None:
    """A gap shown against the disadvantaged group is marked *, one favouring it \u2020 (LaTeX
    \\dagger), equalized odds (no sign) *, parity =."""
    from faircode.report.effects import shown_gaps
    from faircode.report.tables import _Footnotes, _tex_cell, estimate_cell

    rows = pd.DataFrame({
        "metric": [DP, DP, "equalized_odds_diff", DP], "value": [-0.3, 0.5, 0.4, 0.0],
        "ci_low": [-0.4, 0.4, 0.3, -0.02], "ci_high": [-0.2, 0.6, 0.5, 0.02],
        "verdict": ["gap", "gap", "gap", "parity"], "note": ""})
    shown = shown_gaps(rows, metric=None, alpha=0.05)
    cells = [estimate_cell(r, value="value", fn=_Footnotes()) for _, r in shown.iterrows()]
    assert [c.mark for c in cells] == ["*", "\u2020", "*", "="]
    assert "^{\\dagger}" in _tex_cell(cells[1])
