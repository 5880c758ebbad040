"""Tests of faircode.record.first_screen: the MLflow view the README's address opens on."""

from __future__ import annotations

from faircode.record.first_screen import COLUMNS, first_screen
from faircode.record.runs import ChildRun


def _child(audit: str, code: str, family: str, attribute: str, table: str = "fairness") -> ChildRun:
    name = f"{audit} {code} {family} {attribute}"
    return ChildRun(key=name, audit=audit, name=name,
                    tags={"table": table, "audit": audit, "attribute": attribute}, params={},
                    metrics={})


def test_first_screen_is_the_first_audits_first_attribute_of_the_state() -> None:
    """The view filters to the alphabetically first audit and the first attribute its children
    list (the table's order), in this state's digest, sorted by name, dp and its interval shown."""
    children = [_child("zeta", "S0", "LR", "race"), _child("alpha", "S0", "LR", "sex"),
                _child("alpha", "S0", "LR", "age"), _child("alpha", "S0", "LR", "sex & age",
                                                           table="intersectional")]
    view = first_screen(children, digest="d1")
    assert view is not None
    assert view["searchFilter"] == ("tags.table = 'fairness' and tags.audit = 'alpha' and "
                                    "tags.attribute = 'sex' and "
                                    "tags.`faircode.parent_digest` = 'd1'")
    assert view["orderByKey"] == "tags.`mlflow.runName`" and view["orderByAsc"] is True
    assert view["selectedColumns"][:3] == ["metrics.`dp`", "metrics.`dp.lo`", "metrics.`dp.hi`"]
    assert view["columnOrder"] == ["attributes.`Run Name`", *COLUMNS]


def test_a_quote_in_a_name_is_escaped_and_the_name_column_fits_it() -> None:
    """An apostrophe is doubled in the filter (MLflow's search syntax), and the name column
    is 40 px plus 7.5 px per character of the longest name shown."""
    name = "o'hara_audit"
    view = first_screen([_child(name, "S0", "LR", "race")], digest="d")
    assert view is not None
    assert "tags.audit = 'o''hara_audit'" in view["searchFilter"]
    longest = len(f"{name} S0 LR race")
    assert view["columnWidths"]["attributes.`Run Name`"] == int(40 + 7.5 * longest)


def test_no_fairness_child_no_view() -> None:
    """A state without fairness children leaves the view alone (None)."""
    assert first_screen([_child("a", "S0", "LR", "x & y", table="intersectional")],
                        digest="d") is None


def test_the_first_audit_is_one_with_children_logged_under_the_parent() -> None:
    """Children the parent shares (tagged with an earlier state's digest) are passed over: the
    view names the first audit and attribute among the children logged under it."""
    children = [_child("alpha", "S0", "LR", "sex"), _child("alpha", "S0", "LR", "age"),
                _child("beta", "S0", "LR", "race"), _child("beta", "S0", "LR", "age")]
    shared = {children[0].key: "r0", children[1].key: "r1", children[2].key: "r2"}
    view = first_screen(children, digest="d1", shared=shared)
    assert view is not None
    assert view["searchFilter"] == ("tags.table = 'fairness' and tags.audit = 'beta' and "
                                    "tags.attribute = 'age' and "
                                    "tags.`faircode.parent_digest` = 'd1'")


def test_a_parent_sharing_every_child_opens_on_the_shared_runs() -> None:
    """With no fairness child logged under the parent the view lists the first audit's first
    attribute by the run ids of the shared runs."""
    children = [_child("alpha", "S0", "LR", "sex"), _child("alpha", "S1", "LR", "sex"),
                _child("alpha", "S0", "LR", "age")]
    view = first_screen(children, digest="d1", shared={c.key: f"r{i}"
                                                       for i, c in enumerate(children)})
    assert view is not None
    assert view["searchFilter"] == ("tags.table = 'fairness' and tags.audit = 'alpha' and "
                                    "tags.attribute = 'sex' and attributes.run_id IN "
                                    "('r0', 'r1')")
