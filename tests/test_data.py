"""Tests of faircode.audit.data: filters, targets, masks, encoding, loading, column-level checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from faircode.audit.data import (
    UNSEEN_CODE,
    Encoder,
    derive_target,
    disadvantaged_mask,
    filter_mask,
    first_per_unit,
    grouped_split,
    load_audit,
    target_cut,
)
from faircode.audit.fetch import sha256_file
from faircode.audit.manifest import (
    Manifest,
    ProtectedAttribute,
    RowFilter,
    Scalar,
    Target,
    load_manifest,
)
from faircode.core.errors import ChecksumError, DataError, DataUnavailableError
from faircode.grid.calibration import calibration_split


def cat(dis: tuple[Scalar, ...] | None, adv: tuple[Scalar, ...] | None) -> ProtectedAttribute:
    """Return a categorical attribute on column ``c``."""
    return ProtectedAttribute(
        name="a", type="categorical", column="c", disadvantaged_values=dis, advantaged_values=adv
    )


STR = pd.Series(["x", "y", None, "z", "x"], dtype="str")


@pytest.mark.parametrize(
    ("operator", "value", "expected"),
    [
        ("isin", ("x", "z"), [1, 0, 0, 1, 1]),
        ("not_isin", ("x",), [0, 1, 1, 1, 0]),
        ("equals", "y", [0, 1, 0, 0, 0]),
        ("not_equals", "y", [1, 0, 1, 1, 1]),
        ("notna", None, [1, 1, 0, 1, 1]),
    ],
)
def test_filter_semantics_treat_missing_as_equal_to_nothing(
    operator: str, value: object, expected: list[int]
) -> None:
    """isin/equals drop missing rows, not_isin/not_equals keep them, notna drops them."""
    f = RowFilter(column="c", operator=operator, value=value)  # type: ignore[arg-type]
    assert filter_mask(f, STR).tolist() == [bool(e) for e in expected]


def test_filter_on_numeric_column_compares_numbers() -> None:
    """On a numeric column 1 matches 1.0 and the text '2' matches 2."""
    values = pd.Series([1.0, 2.0, np.nan, 3.0])
    assert filter_mask(RowFilter("c", "isin", (1, "2")), values).tolist() == [
        True,
        True,
        False,
        False,
    ]


def test_target_isin_drops_missing_rows() -> None:
    """Rows with a missing target are not derivable; the rest are 1 where the value is listed."""
    label, ok = derive_target(Target("c", "isin", values=("x", "z")), STR)
    assert ok.tolist() == [True, True, False, True, True]
    assert label[ok].tolist() == [1, 0, 1, 1] and label.dtype == np.int8


def test_target_equals_numeric_value() -> None:
    """equals on a numeric column compares numerically."""
    label, ok = derive_target(Target("c", "equals", value=2), pd.Series([2, 3, 2]))
    assert label.tolist() == [1, 0, 1] and ok.all()


def test_above_median_is_strictly_greater_than_median_of_derivable_rows() -> None:
    """The median (3 here, NaN excluded) itself is labelled 0."""
    values = pd.Series([1.0, 3.0, 5.0, np.nan, 3.0, 4.0])
    label, ok = derive_target(Target("c", "above_median"), values)
    assert ok.tolist() == [True, True, True, False, True, True]
    assert label[ok].tolist() == [0, 0, 1, 0, 1]


def test_above_median_needs_numbers() -> None:
    """above_median on a text column is a DataError naming the column."""
    with pytest.raises(DataError, match=r"target\.column 'c'"):
        derive_target(Target("c", "above_median"), STR)


@pytest.mark.parametrize(
    ("values", "label", "derivable"),
    [
        (pd.Series([True, False, True]), [1, 0, 1], [1, 1, 1]),
        (pd.Series([1, 0, np.nan]), [1, 0, 0], [1, 1, 0]),
        (pd.Series(["true", "FALSE", None, "Yes"], dtype="str"), [1, 0, 0, 1], [1, 1, 0, 1]),
    ],
    ids=["bool", "numeric", "text"],
)
def test_binary_target_accepts_bool_numbers_and_truthy_text(
    values: pd.Series, label: list[int], derivable: list[int]
) -> None:
    """binary turns booleans, 0/1 and true/false text into 0/1; missing is not derivable."""
    got, ok = derive_target(Target("c", "binary"), values)
    assert got.tolist() == label and ok.tolist() == [bool(d) for d in derivable]


@pytest.mark.parametrize("values", [pd.Series([0, 2]), pd.Series(["maybe", "true"], dtype="str")])
def test_binary_target_rejects_other_values(values: pd.Series) -> None:
    """binary refuses values that are not 0/1 or truthy text rather than guessing."""
    with pytest.raises(DataError, match="method binary"):
        derive_target(Target("c", "binary"), values)


def test_categorical_mask_with_both_sides_leaves_others_unclassified() -> None:
    """With both lists, values on neither side (and missing) are unclassified."""
    dis, ok = disadvantaged_mask(cat(("x",), ("y",)), STR)
    assert ok.tolist() == [True, True, False, False, True]
    assert dis[ok].tolist() == [True, False, True]


def test_categorical_mask_with_one_side_makes_everything_else_the_other() -> None:
    """With one list the other side is every other non-missing value."""
    dis, ok = disadvantaged_mask(cat(None, ("x",)), STR)
    assert ok.tolist() == [True, True, False, True, True]
    assert dis.tolist() == [False, True, False, True, False]
    dis2, ok2 = disadvantaged_mask(cat(("z",), None), STR)
    assert dis2.tolist() == [False, False, False, True, False] and ok2.tolist() == ok.tolist()


def test_numeric_threshold_splits_at_threshold() -> None:
    """below means x < t; above means x >= t; missing is unclassified."""
    values = pd.Series([29.0, 30.0, 31.0, np.nan])
    below = ProtectedAttribute("a", "numeric_threshold", "c", threshold=30, disadvantaged="below")
    above = ProtectedAttribute("a", "numeric_threshold", "c", threshold=30, disadvantaged="above")
    dis, ok = disadvantaged_mask(below, values)
    assert dis.tolist() == [True, False, False, False] and ok.tolist() == [True, True, True, False]
    assert disadvantaged_mask(above, values)[0].tolist() == [False, True, True, False]


def test_age_interval_threshold_reads_band_lower_bounds_and_plain_numbers() -> None:
    """Bands such as "[70-80)" use their lower bound; plain numbers parse directly."""
    attr = ProtectedAttribute(
        "a", "age_interval_threshold", "c", threshold=70, disadvantaged="above"
    )
    bands = pd.Series(["[60-70)", "[70-80)", "[90-100)", "(5-10]", "unknown", None], dtype="str")
    dis, ok = disadvantaged_mask(attr, bands)
    assert ok.tolist() == [True, True, True, True, False, False]
    assert dis.tolist() == [False, True, True, False, False, False]
    numbers = pd.Series([69, 70, 85])
    assert disadvantaged_mask(attr, numbers)[0].tolist() == [False, True, True]
    assert disadvantaged_mask(attr, pd.Series(["69", "71.5"], dtype="str"))[0].tolist() == [
        False,
        True,
    ]


def test_encoder_codes_sorted_categories_missing_and_unseen() -> None:
    """Categories get sorted codes, missing its own code k, unseen values UNSEEN_CODE."""
    raw = pd.DataFrame(
        {"s": pd.Series(["b", "a", None, "c"], dtype="str"), "n": [1.0, np.nan, 3.0, 10.0]}
    )
    enc = Encoder.fit(raw)
    out = enc.transform(raw)
    assert out["s"].tolist() == [1.0, 0.0, 3.0, 2.0]
    assert out["n"].tolist() == [1.0, 3.0, 3.0, 10.0]  # median of 1, 3, 10 fills the gap
    assert (out.dtypes == np.float64).all() and list(out.columns) == ["s", "n"]
    edited = pd.DataFrame({"s": ["zzz", "a"], "n": [2, 5]}, index=[7, 9])
    again = enc.transform(edited)
    assert again["s"].tolist() == [UNSEEN_CODE, 0.0] and list(again.index) == [7, 9]


def test_encoder_refuses_text_in_numeric_column() -> None:
    """A non-numeric value in a numeric column is an error, not a silent median."""
    enc = Encoder.fit(pd.DataFrame({"n": [1.0, 2.0]}))
    with pytest.raises(DataError, match="column 'n'"):
        enc.transform(pd.DataFrame({"n": ["old"]}))


# ------------------------------------------------------------------------- load_audit


CSV = """id,name,group,age,score,x,outcome
1,Ann,a,25,1.5,u,hi
2,Bob,b,40,2.5,v,lo
3,Cy,a,33,,u,hi
4,Di,b,22,0.5,w,
5,Ed,c,51,1.0,v,lo
6,Flo,a,61,3.0,u,lo
7,Gus,b,19,2.0,w,hi
8,Hal,a,45,2.2,v,lo
9,Ivy,b,38,1.1,u,hi
10,Jo,a,29,0.9,w,lo
11,Kim,b,52,1.7,v,hi
12,Lu,a,27,2.9,u,lo
"""


def toy_manifest(tmp_path: Path, **changes: object) -> Manifest:
    """Write the toy CSV and a manifest over it (``changes`` override top-level keys)."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "audits").mkdir(exist_ok=True)
    (tmp_path / "audits" / "toy.csv").write_text(CSV)
    doc: dict[str, object] = {
        "name": "toy",
        "dataset": {"path": "toy.csv"},
        "test_size": 0.25,
        "row_filters": [{"column": "group", "isin": ["a", "b"]}],
        "target": {"column": "outcome", "method": "equals", "value": "hi"},
        "protected_attributes": [
            {
                "name": "grp",
                "type": "categorical",
                "column": "group",
                "disadvantaged_values": ["a"],
                "advantaged_values": ["b"],
            },
            {
                "name": "young",
                "type": "numeric_threshold",
                "column": "age",
                "threshold": 30,
                "disadvantaged": "below",
            },
        ],
        "core_features": ["score"],
        "proxy_features": ["x"],
        **changes,
    }
    path = tmp_path / "audits" / "audit.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return load_manifest(path)


def test_load_audit_applies_every_step_in_order(tmp_path: Path) -> None:
    """Filters, then target derivability, then classification; counts recorded per step."""
    data = load_audit(toy_manifest(tmp_path))
    assert data.steps == (
        ("loaded", 12),
        ("filter 1: group isin ['a', 'b']", 11),
        ("target derivable", 10),
        ("classified by every attribute", 10),
    )
    assert data.raw["age"].tolist() == [25, 40, 33, 61, 19, 45, 38, 29, 52, 27]
    assert data.y.tolist() == [1, 0, 1, 0, 1, 0, 1, 0, 1, 0] and data.y.dtype == np.int8
    assert data.disadvantaged["grp"].tolist() == [
        True,
        False,
        True,
        True,
        False,
        True,
        False,
        True,
        False,
        True,
    ]
    assert data.disadvantaged["young"].tolist() == [
        True,
        False,
        False,
        False,
        True,
        False,
        False,
        True,
        False,
        True,
    ]
    assert data.sha256 == sha256_file(tmp_path / "audits" / "toy.csv")
    assert isinstance(data.raw.index, pd.RangeIndex)


def test_load_audit_never_reads_unnamed_columns(tmp_path: Path) -> None:
    """Columns the manifest does not name (here: id, name) never reach raw or X."""
    data = load_audit(toy_manifest(tmp_path))
    assert list(data.raw.columns) == ["group", "age", "score", "x", "outcome"]
    assert list(data.X.columns) == ["group", "age", "score", "x"]
    assert "Ann" not in data.raw.to_string()


def test_target_source_column_is_not_in_x(tmp_path: Path) -> None:
    """X holds the feature columns only: the target's source column stays out of it."""
    data = load_audit(toy_manifest(tmp_path))
    assert "outcome" not in data.X.columns and "outcome" not in data.encoder.columns


def test_load_audit_encodes_with_median_fill(tmp_path: Path) -> None:
    """X holds float64 codes; the missing score gets the median of the kept rows."""
    data = load_audit(toy_manifest(tmp_path))
    kept_scores = data.raw["score"].dropna()
    assert data.X.loc[2, "score"] == pytest.approx(kept_scores.median())
    assert data.X["x"].tolist() == [0.0, 1.0, 0.0, 0.0, 2.0, 1.0, 0.0, 2.0, 1.0, 0.0]


def test_split_is_stratified_disjoint_and_reproducible(tmp_path: Path) -> None:
    """Train and test partition the rows, keep the label balance, and repeat exactly."""
    m = toy_manifest(tmp_path)
    a, b = load_audit(m), load_audit(m)
    assert np.array_equal(a.test_index, b.test_index)
    assert sorted([*a.train_index, *a.test_index]) == list(range(10))
    assert len(a.test_index) == 3 and set(a.y[a.test_index].tolist()) == {0, 1}


def test_missing_column_lists_closest_names(tmp_path: Path) -> None:
    """A named column absent from the file names its key path and the closest columns."""
    m = toy_manifest(tmp_path, core_features=["scor"])
    with pytest.raises(DataError, match=r"core_features\[0\]: .*'scor' \(str\); closest: score"):
        load_audit(m)


def test_single_class_target_is_a_data_error(tmp_path: Path) -> None:
    """A target yielding one class after filtering is rejected."""
    m = toy_manifest(tmp_path, target={"column": "outcome", "method": "equals", "value": "zz"})
    with pytest.raises(DataError, match="two classes"):
        load_audit(m)


def test_empty_group_is_a_data_error(tmp_path: Path) -> None:
    """A protected attribute whose advantaged group is empty after filtering is rejected."""
    m = toy_manifest(tmp_path, row_filters=[{"column": "group", "equals": "a"}])
    with pytest.raises(DataError, match=r"protected_attributes\[0\] \(grp\).*advantaged group"):
        load_audit(m)


def test_missing_file_is_unavailable(tmp_path: Path) -> None:
    """A manifest whose file is absent raises DataUnavailableError with the audit name."""
    m = toy_manifest(tmp_path)
    (tmp_path / "audits" / "toy.csv").unlink()
    with pytest.raises(DataUnavailableError, match="toy: dataset unavailable"):
        load_audit(m)


def test_wrong_digest_is_refused_at_load(tmp_path: Path) -> None:
    """load_audit verifies a declared sha256 before reading."""
    m = toy_manifest(tmp_path, dataset={"path": "toy.csv", "sha256": "0" * 64})
    with pytest.raises(ChecksumError, match="expected 0000"):
        load_audit(m)


def test_compas_rows_match_an_independent_pandas_count(audit_repo: Any) -> None:
    """COMPAS keeps exactly the filtered rows with a ScoreText, counted independently by pandas."""
    m = audit_repo.manifests["compas"]
    data = load_audit(m)
    frame = pd.read_csv(m.dataset.path, usecols=["Ethnic_Code_Text", "DisplayText", "ScoreText"])
    filtered = frame[frame["Ethnic_Code_Text"].isin(["African-American", "Caucasian"])]
    filtered = filtered[filtered["DisplayText"] == "Risk of Recidivism"]
    assert data.steps[2] == ("filter 2: DisplayText equals 'Risk of Recidivism'", len(filtered))
    assert data.steps[3][1] == filtered["ScoreText"].notna().sum() == len(data.y)
    expected_rate = filtered["ScoreText"].isin(["High", "Medium"]).sum() / len(data.y)
    assert data.y.mean() == pytest.approx(expected_rate)
    assert {"FirstName", "LastName", "DateOfBirth"}.isdisjoint(data.raw.columns)


# ------------------------------------------------------------------------- units


def test_first_per_unit_keeps_each_units_smallest_order_among_kept_rows() -> None:
    """Per unit the kept row with the smallest order wins; NaN orders last; ties by row order."""
    units = pd.Series(["p", "p", "q", "q", "r", "r", "s"])
    order = pd.Series([3.0, 1.0, np.nan, 5.0, 2.0, 2.0, 9.0])
    keep = np.array([True, True, True, True, True, True, False])
    assert first_per_unit(units, order, keep).tolist() == [
        False, True, False, True, True, False, False
    ]
    keep[1] = False  # p's first row was filtered out before: its next row is the first
    assert first_per_unit(units, order, keep).tolist()[:2] == [True, False]


UNIT_CSV = "person,visit,group,age,score,x,outcome\n" + "".join(
    f"{p},{v},{'a' if p % 2 else 'b'},{20 + p},{(p * 7 + v) % 5}.5,u,"
    f"{'hi' if (p + v) % 3 else 'lo'}\n"
    for p in range(40) for v in range(1 + p % 3)
)


def unit_manifest(tmp_path: Path, **changes: object) -> Manifest:
    """The toy manifest over a file of 40 people with 1-3 visits each, unit = person."""
    manifest = toy_manifest(tmp_path, **changes)
    (tmp_path / "audits").mkdir(exist_ok=True)
    (tmp_path / "audits" / "toy.csv").write_text(UNIT_CSV)
    return manifest


def test_unit_split_puts_no_unit_on_both_sides(tmp_path: Path) -> None:
    """With dataset.unit every person's rows are all in train or all in test."""
    data = load_audit(unit_manifest(tmp_path, dataset={"path": "toy.csv", "unit": "person"}))
    assert data.unit is not None and len(np.unique(data.unit)) == 40
    assert np.intersect1d(data.unit[data.train_index], data.unit[data.test_index]).size == 0
    assert sorted([*data.train_index, *data.test_index]) == list(range(len(data.y)))
    assert 0 < len(data.test_index) < len(data.y)


def test_unit_column_is_read_but_never_encoded(tmp_path: Path) -> None:
    """The unit column is in raw (as the manifest names it) but not in X."""
    data = load_audit(unit_manifest(tmp_path, dataset={"path": "toy.csv", "unit": "person"}))
    assert "person" in data.raw.columns and "person" not in data.X.columns


def test_first_by_filter_leaves_one_row_per_unit_and_its_count(tmp_path: Path) -> None:
    """first_by keeps each person's first visit; the step reports the rows left."""
    data = load_audit(unit_manifest(
        tmp_path,
        dataset={"path": "toy.csv", "unit": "person"},
        row_filters=[{"column": "person", "first_by": "visit"}],
    ))
    assert data.steps[1] == ("filter 1: first row per person by visit", 40)
    assert data.raw["visit"].tolist() == [0] * 40
    assert np.bincount(data.unit).tolist() == [1] * 40


def test_without_unit_the_split_is_the_stratified_row_split(tmp_path: Path) -> None:
    """No unit: train/test are exactly sklearn's stratified split of the row positions."""
    from sklearn.model_selection import train_test_split

    data = load_audit(toy_manifest(tmp_path))
    train, test = train_test_split(np.arange(10), test_size=0.25, random_state=42, stratify=data.y)
    assert data.unit is None
    assert np.array_equal(data.test_index, np.sort(test))
    assert np.array_equal(data.train_index, np.sort(train))


def test_single_row_units_split_exactly_like_rows(tmp_path: Path) -> None:
    """A unit that is one row per unit gives the identical split and X as no unit at all."""
    plain = load_audit(toy_manifest(tmp_path))
    united = load_audit(toy_manifest(tmp_path, dataset={"path": "toy.csv", "unit": "id"}))
    assert np.array_equal(plain.test_index, united.test_index)
    assert plain.X.equals(united.X) and np.array_equal(plain.y, united.y)


def test_missing_unit_value_is_a_data_error(tmp_path: Path) -> None:
    """A prepared row without a unit is an error naming dataset.unit, not a dropped row."""
    m = toy_manifest(
        tmp_path, dataset={"path": "toy.csv", "unit": "score"}, core_features=["x"],
        proxy_features=[],
    )
    with pytest.raises(DataError, match=r"dataset.unit: expected a unit in every prepared row"):
        load_audit(m)


def test_missing_unit_column_names_the_key_path(tmp_path: Path) -> None:
    """A unit column absent from the file is a one-line DataError naming dataset.unit."""
    m = toy_manifest(tmp_path, dataset={"path": "toy.csv", "unit": "person_id"})
    with pytest.raises(DataError) as info:
        load_audit(m)
    assert str(info.value) == (
        f"{m.file}: dataset.unit: expected a column of toy.csv, got 'person_id' (str)"
    )


def test_grouped_split_stratifies_units_by_label_pattern() -> None:
    """Units all-0, all-1 and mixed each go to test in proportion, and none is split."""
    units = np.repeat(np.arange(60), 2)
    y = np.concatenate([np.zeros(40), np.ones(40), np.tile([0, 1], 20)])
    train, test = grouped_split(units, [y], test_size=0.25, random_state=0)
    assert np.intersect1d(units[train], units[test]).size == 0
    test_units = np.unique(units[test])
    assert [int(((test_units >= lo) & (test_units < lo + 20)).sum()) for lo in (0, 20, 40)] == [
        5, 5, 5
    ]


def test_compas_split_and_calibration_never_share_a_person(audit_repo: Any) -> None:
    """On the real COMPAS data no Person_ID is in train and test, or in S4 fit and calibration."""
    data = load_audit(audit_repo.manifests["compas"])
    person = data.raw["Person_ID"].to_numpy()
    train, test = data.train_index, data.test_index
    assert np.intersect1d(person[train], person[test]).size == 0
    assert len(np.unique(person)) == 14832 and len(person) == 16240
    fit, cal = calibration_split(
        data.y[train], data.disadvantaged["race"][train], random_state=42, groups=data.unit[train]
    )
    assert np.intersect1d(person[train][fit], person[train][cal]).size == 0


# ------------------------------------------------------------- numeric cuts and reading options


def test_threshold_target_at_least_and_above() -> None:
    """at_least labels x >= t, above labels x > t; a missing value is not derivable."""
    values = pd.Series([9.0, 10.0, 11.0, np.nan])
    ge, ok = derive_target(Target("c", "threshold", threshold=10, direction="at_least"), values)
    gt, _ = derive_target(Target("c", "threshold", threshold=10, direction="above"), values)
    assert ok.tolist() == [True, True, True, False]
    assert ge[ok].tolist() == [0, 1, 1] and gt[ok].tolist() == [0, 0, 1]


def test_quantile_target_cuts_at_the_quantile_of_present_values() -> None:
    """The 0.7 quantile of 1..10 (NaN ignored) is 7.3 (linear interpolation): 8, 9, 10 are above."""
    values = pd.Series([*range(1, 11), np.nan], dtype=float)
    target = Target("c", "quantile", quantile=0.7, direction="above")
    assert target_cut(target, values) == pytest.approx(7.3)
    label, ok = derive_target(target, values)
    assert label[ok].tolist() == [0] * 7 + [1] * 3


def test_quantile_target_with_ties_labels_all_tied_values_alike() -> None:
    """With ties at the cut, above excludes and at_least includes every tied row."""
    values = pd.Series([1.0, 2.0, 2.0, 2.0, 3.0])
    assert target_cut(Target("c", "quantile", quantile=0.5, direction="above"), values) == 2.0
    above, _ = derive_target(Target("c", "quantile", quantile=0.5, direction="above"), values)
    at_least, _ = derive_target(Target("c", "quantile", quantile=0.5, direction="at_least"), values)
    assert above.tolist() == [0, 0, 0, 0, 1] and at_least.tolist() == [0, 1, 1, 1, 1]


def test_numeric_cut_needs_numbers() -> None:
    """A threshold target on a text column is a DataError naming the column and method."""
    with pytest.raises(DataError, match=r"target\.column 'c'.*method threshold"):
        derive_target(Target("c", "threshold", threshold=1, direction="above"), STR)


def _raw_manifest(tmp_path: Path, body: bytes, read: dict[str, object], **changes: object
                  ) -> Manifest:
    """Write ``body`` as toy.csv and a manifest over its columns g, v, y with ``read`` options."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "audits").mkdir(exist_ok=True)
    (tmp_path / "audits" / "toy.csv").write_bytes(body)
    doc: dict[str, object] = {
        "name": "toy",
        "dataset": {"path": "toy.csv", "read": read},
        "test_size": 0.5,
        "target": {"column": "y", "method": "threshold", "threshold": 10,
                   "direction": "at_least"},
        "protected_attributes": [{"name": "g", "type": "categorical", "column": "g",
                                  "disadvantaged_values": ["a"]}],
        "core_features": ["v"],
        **changes,
    }
    path = tmp_path / "audits" / "audit.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return load_manifest(path)


ROWS = [("a", "1.5", "12"), ("b", "?", "8"), ("a", "2.5", "10"), ("b", "3.5", "4")]


def _csv(sep: str, rows: list[tuple[str, ...]] = ROWS) -> str:
    return "\n".join(sep.join(r) for r in rows) + "\n"


def test_reading_options_parse_separator_header_row_encoding_and_markers(tmp_path: Path) -> None:
    """A BOM-prefixed ';' file with a junk first row, header row 1 and '?' markers reads right."""
    body = ("\ufeffX1;X2;Y\n" + _csv(";", [("g", "v", "y"), *ROWS])).encode("utf-8")
    m = _raw_manifest(tmp_path, body, {"separator": ";", "header": 1, "encoding": "utf-8-sig",
                                       "missing": ["?"]})
    data = load_audit(m)
    assert list(data.raw.columns) == ["g", "v", "y"]
    assert data.raw["v"].isna().tolist() == [False, True, False, False]
    assert data.y.tolist() == [1, 0, 1, 0] and data.target_cut == 10.0
    assert data.X["v"].tolist() == [1.5, 2.5, 2.5, 3.5]  # '?' is missing: the median fills it


def test_without_missing_marker_a_question_mark_is_a_value(tmp_path: Path) -> None:
    """Without read.missing, '?' stays text and the column is categorical, as before."""
    body = _csv(",", [("g", "v", "y"), *ROWS]).encode()
    data = load_audit(_raw_manifest(tmp_path, body, {}))
    assert data.encoder.kinds["v"] == "categorical" and data.raw["v"].notna().all()


def test_names_read_a_file_without_header(tmp_path: Path) -> None:
    """With names, the first line is data and the columns take the listed names."""
    body = _csv(",").encode()
    data = load_audit(_raw_manifest(tmp_path, body, {"names": ["g", "v", "y"], "missing": ["?"]}))
    assert data.steps[0] == ("loaded", 4)
    assert data.raw["g"].tolist() == ["a", "b", "a", "b"]


@pytest.mark.parametrize("names", [["g", "v"], ["g", "v", "y", "extra"]], ids=["few", "many"])
def test_names_must_match_the_field_count(tmp_path: Path, names: list[str]) -> None:
    """A names list shorter or longer than the file's fields is a one-line DataError."""
    m = _raw_manifest(tmp_path, _csv(",").encode(), {"names": names},
                      core_features=["v"] if "v" in names else ["g"])
    with pytest.raises(DataError) as info:
        load_audit(m)
    assert str(info.value) == (
        f"{m.file}: dataset.read.names: expected 3 names for the 3 fields of toy.csv, "
        f"got {len(names)} names (list)"
    )


def test_wrong_encoding_is_a_data_error(tmp_path: Path) -> None:
    """Bytes that are not valid in the declared encoding give a one-line DataError, no traceback."""
    body = "g,v,y\nä,1,12\nb,2,3\n".encode("latin-1")
    with pytest.raises(DataError, match=r"dataset\.read: expected toy\.csv to parse") as info:
        load_audit(_raw_manifest(tmp_path, body, {}))
    assert "\n" not in str(info.value)


def test_wrong_separator_shows_as_a_missing_column(tmp_path: Path) -> None:
    """Reading a ';' file with the default ',' finds one column and names the missing ones."""
    body = _csv(";", [("g", "v", "y"), *ROWS]).encode()
    with pytest.raises(DataError, match=r"expected a column of toy\.csv, got 'y' \(str\)"):
        load_audit(_raw_manifest(tmp_path, body, {}))
