"""Tests of faircode.audit.manifest: schema, defaults, records and every load-time error."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from faircode.audit.manifest import (
    DecisionRule,
    Manifest,
    ProtectedAttribute,
    ReadOptions,
    RowFilter,
    Target,
    discover_manifests,
    load_manifest,
    repository_root,
)
from faircode.core.errors import ManifestError


def valid_doc() -> dict[str, Any]:
    """Return a valid manifest document exercising every section."""
    return {
        "name": "toy",
        "title": "Toy audit",
        "dataset": {
            "path": "../../data/raw/toy/toy.csv",
            "sha256": "a" * 64,
            "source": {
                "url": "https://example.org/toy.zip",
                "member": "toy.csv",
                "citation": "c",
                "license": "l",
                "instructions": "ask",
            },
        },
        "random_state": 7,
        "test_size": 0.25,
        "row_filters": [
            {"column": "group", "isin": ["a", "b"]},
            {"column": "kind", "not_isin": ["?"]},
            {"column": "flag", "equals": "yes"},
            {"column": "other", "not_equals": 3},
            {"column": "outcome", "notna": True},
        ],
        "target": {"column": "outcome", "method": "isin", "values": ["hi", "mid"], "favourable": 0},
        "protected_attributes": [
            {
                "name": "grp",
                "type": "categorical",
                "column": "group",
                "disadvantaged_values": ["a"],
                "advantaged_values": ["b"],
            },
            {
                "name": "age",
                "type": "numeric_threshold",
                "column": "age",
                "threshold": 30,
                "disadvantaged": "below",
            },
            {
                "name": "band",
                "type": "age_interval_threshold",
                "column": "band",
                "threshold": 70,
                "disadvantaged": "above",
            },
        ],
        "core_features": ["x1", "x2"],
        "proxy_features": ["p1"],
    }


def write(root: Path, doc: object, *, text: str | None = None) -> Path:
    """Write ``doc`` (or raw ``text``) as ``root/audits/toy/audit.yaml`` in a repo-like tree."""
    (root / "pyproject.toml").write_text("")
    path = root / "audits" / "toy" / "audit.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text is not None else yaml.safe_dump(doc, sort_keys=False))
    return path


def load_doc(tmp_path: Path, doc: object) -> Manifest:
    """Write and load ``doc``."""
    return load_manifest(write(tmp_path, doc))


def test_valid_manifest_builds_typed_frozen_records(tmp_path: Path) -> None:
    """Every section of a valid manifest becomes the corresponding typed record."""
    m = load_doc(tmp_path, valid_doc())
    assert (m.name, m.title, m.random_state, m.test_size) == ("toy", "Toy audit", 7, 0.25)
    assert m.dataset.path == (tmp_path / "data/raw/toy/toy.csv").resolve()
    assert m.dataset.declared_path == "../../data/raw/toy/toy.csv"
    assert m.dataset.source is not None and m.dataset.source.member == "toy.csv"
    assert [f.operator for f in m.row_filters] == [
        "isin",
        "not_isin",
        "equals",
        "not_equals",
        "notna",
    ]
    assert m.row_filters[0].value == ("a", "b")
    assert m.target == Target(column="outcome", method="isin", values=("hi", "mid"), favourable=0)
    assert m.protected_attributes[1] == ProtectedAttribute(
        name="age", type="numeric_threshold", column="age", threshold=30.0, disadvantaged="below"
    )
    assert m.core_features == ("x1", "x2") and m.proxy_features == ("p1",)
    with pytest.raises(AttributeError):
        m.name = "other"  # type: ignore[misc]


def test_defaults_apply_when_optional_keys_are_absent(tmp_path: Path) -> None:
    """title defaults to name, random_state 42, test_size 0.2, proxy_features and filters empty."""
    doc = valid_doc()
    for key in ("title", "random_state", "test_size", "proxy_features", "row_filters"):
        del doc[key]
    doc["target"] = {"column": "outcome", "method": "binary"}
    del doc["dataset"]["sha256"], doc["dataset"]["source"]
    m = load_doc(tmp_path, doc)
    assert (m.title, m.random_state, m.test_size) == ("toy", 42, 0.2)
    assert m.proxy_features == () and m.row_filters == ()
    assert m.target.favourable == 1 and m.dataset.sha256 is None and m.dataset.source is None


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (None, None),
        ({"rule": "threshold", "threshold": 0.3}, DecisionRule("threshold", threshold=0.3)),
        ({"rule": "base_rate"}, DecisionRule("base_rate")),
        ({"rule": "top_fraction", "fraction": 0.112}, DecisionRule("top_fraction", fraction=0.112)),
    ],
)
def test_decision_block_becomes_a_rule(
    tmp_path: Path, block: dict[str, Any] | None, expected: DecisionRule | None
) -> None:
    """Each rule parses to its record; without a block the manifest declares none."""
    doc = valid_doc()
    if block is not None:
        doc["decision"] = block
    assert load_doc(tmp_path, doc).decision == expected


def test_named_and_protected_columns_are_unique_in_stable_order(tmp_path: Path) -> None:
    """protected_columns and named_columns list each column once in declaration order."""
    doc = valid_doc()
    doc["protected_attributes"].append(
        {"name": "grp2", "type": "categorical", "column": "group", "advantaged_values": ["b"]}
    )
    m = load_doc(tmp_path, doc)
    assert m.protected_columns == ("group", "age", "band")
    assert m.feature_columns == ("group", "age", "band", "x1", "x2", "p1")
    assert m.named_columns == (
        "group",
        "age",
        "band",
        "x1",
        "x2",
        "p1",
        "outcome",
        "kind",
        "flag",
        "other",
    )


def _set(path: str, value: object) -> Callable[[dict[str, Any]], None]:
    """Return a mutation setting the dotted/indexed ``path`` of a document to ``value``."""

    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        if last.isdigit():
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def _delete(path: str) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        del node[last]

    return mutate


# (id, mutation, key path the message must name, fragment of the expectation or received value)
ERROR_CASES: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    ("unknown top key", _set("protected_attribute", []), "protected_attribute:", "one of the keys"),
    ("unknown nested key", _set("target.valeu", 1), "target.valeu:", "'valeu' (str)"),
    ("missing name", _delete("name"), "name:", "required"),
    ("missing dataset path", _delete("dataset.path"), "dataset.path:", "required"),
    ("missing target", _delete("target"), "target:", "required"),
    ("name wrong type", _set("name", 3), "name:", "3 (int)"),
    ("dataset not a mapping", _set("dataset", "x.csv"), "dataset:", "'x.csv' (str)"),
    (
        "unknown operator",
        _set("row_filters.0", {"column": "g", "contains": "a"}),
        "row_filters[0].contains:",
        "one of the keys",
    ),
    (
        "filter without operator",
        _set("row_filters.0", {"column": "g"}),
        "row_filters[0]:",
        "exactly one operator",
    ),
    (
        "filter with two operators",
        _set("row_filters.0", {"column": "g", "isin": ["a"], "equals": "a"}),
        "row_filters[0]:",
        "('isin', 'equals') (tuple)",
    ),
    ("isin not a list", _set("row_filters.0.isin", "a"), "row_filters[0].isin:", "'a' (str)"),
    ("notna false", _set("row_filters.4.notna", False), "row_filters[4].notna:", "False (bool)"),
    ("filters not a list", _set("row_filters", {"column": "g"}), "row_filters:", "(dict)"),
    ("unknown target method", _set("target.method", "median"), "target.method:", "'median' (str)"),
    (
        "equals without value",
        _set("target", {"column": "o", "method": "equals"}),
        "target.value:",
        "required",
    ),
    (
        "isin without values",
        _set("target", {"column": "o", "method": "isin"}),
        "target.values:",
        "required",
    ),
    (
        "binary with a value",
        _set("target", {"column": "o", "method": "binary", "value": 1}),
        "target.value:",
        "one of the keys",
    ),
    ("favourable 2", _set("target.favourable", 2), "target.favourable:", "2 (int)"),
    ("favourable bool", _set("target.favourable", True), "target.favourable:", "True (bool)"),
    (
        "unknown attribute type",
        _set("protected_attributes.0.type", "categorial"),
        "protected_attributes[0].type:",
        "'categorial' (str)",
    ),
    (
        "disadvantaged sideways",
        _set("protected_attributes.1.disadvantaged", "left"),
        "protected_attributes[1].disadvantaged:",
        "below, above",
    ),
    (
        "threshold as text",
        _set("protected_attributes.1.threshold", "30"),
        "protected_attributes[1].threshold:",
        "'30' (str)",
    ),
    (
        "threshold missing",
        _delete("protected_attributes.2.threshold"),
        "protected_attributes[2].threshold:",
        "required",
    ),
    (
        "categorical with no side",
        _set("protected_attributes.0", {"name": "g", "type": "categorical", "column": "group"}),
        "protected_attributes[0].disadvantaged_values:",
        "advantaged_values",
    ),
    (
        "same value both sides",
        _set("protected_attributes.0.advantaged_values", ["b", "a"]),
        "protected_attributes[0].advantaged_values:",
        "'a' (str)",
    ),
    (
        "threshold on categorical",
        _set("protected_attributes.0.threshold", 3),
        "protected_attributes[0].threshold:",
        "one of the keys",
    ),
    (
        "no protected attributes",
        _set("protected_attributes", []),
        "protected_attributes:",
        "[] (list)",
    ),
    (
        "duplicate attribute names",
        _set("protected_attributes.1.name", "grp"),
        "protected_attributes[1].name:",
        "'grp' (str)",
    ),
    ("core and proxy", _set("proxy_features", ["x1"]), "proxy_features[0]:", "'x1' (str)"),
    ("protected in core", _set("core_features", ["x1", "group"]), "core_features[1]:", "'group'"),
    ("protected in proxy", _set("proxy_features", ["age"]), "proxy_features[0]:", "'age' (str)"),
    ("target in core", _set("core_features", ["outcome"]), "core_features[0]:", "'outcome'"),
    ("core repeated", _set("core_features", ["x1", "x1"]), "core_features[1]:", "'x1' (str)"),
    ("core empty", _set("core_features", []), "core_features:", "[] (list)"),
    ("test_size 1", _set("test_size", 1), "test_size:", "1 (int)"),
    ("test_size 0", _set("test_size", 0.0), "test_size:", "0.0 (float)"),
    ("test_size text", _set("test_size", "0.2"), "test_size:", "'0.2' (str)"),
    ("random_state float", _set("random_state", 42.0), "random_state:", "42.0 (float)"),
    ("random_state bool", _set("random_state", True), "random_state:", "True (bool)"),
    ("random_state negative", _set("random_state", -1), "random_state:", "-1 (int)"),
    ("absolute path", _set("dataset.path", "/etc/passwd"), "dataset.path:", "'/etc/passwd'"),
    (
        "escaping path",
        _set("dataset.path", "../../../outside.csv"),
        "dataset.path:",
        "'../../../outside.csv'",
    ),
    ("bad sha256", _set("dataset.sha256", "ABC"), "dataset.sha256:", "'ABC' (str)"),
    ("bad url", _set("dataset.source.url", "ftp://x"), "dataset.source.url:", "'ftp://x'"),
    ("member without url", _delete("dataset.source.url"), "dataset.source.member:", "'toy.csv'"),
    ("unknown source key", _set("dataset.source.licence", "x"), "dataset.source.licence:", "keys"),
    ("bad name", _set("name", "../evil"), "name:", "'../evil' (str)"),
    ("target in proxy", _set("proxy_features", ["outcome"]), "proxy_features[0]:", "'outcome'"),
    ("decision not a mapping", _set("decision", "base_rate"), "decision:", "'base_rate' (str)"),
    ("decision unknown rule", _set("decision", {"rule": "top"}), "decision.rule:", "'top' (str)"),
    ("decision without rule", _set("decision", {"fraction": 0.1}), "decision.rule:", "None"),
    (
        "fraction 1",
        _set("decision", {"rule": "top_fraction", "fraction": 1}),
        "decision.fraction:",
        "(0, 1), got 1 (int)",
    ),
    (
        "fraction 0",
        _set("decision", {"rule": "top_fraction", "fraction": 0.0}),
        "decision.fraction:",
        "0.0 (float)",
    ),
    (
        "fraction missing",
        _set("decision", {"rule": "top_fraction"}),
        "decision.fraction:",
        "required",
    ),
    (
        "decision threshold missing",
        _set("decision", {"rule": "threshold"}),
        "decision.threshold:",
        "required",
    ),
    (
        "threshold as text",
        _set("decision", {"rule": "threshold", "threshold": "0.3"}),
        "decision.threshold:",
        "'0.3' (str)",
    ),
    (
        "threshold above 1",
        _set("decision", {"rule": "threshold", "threshold": 1.5}),
        "decision.threshold:",
        "[0, 1], got 1.5 (float)",
    ),
    (
        "unknown decision key",
        _set("decision", {"rule": "base_rate", "cutoff": 0.1}),
        "decision.cutoff:",
        "one of the keys rule",
    ),
]


@pytest.mark.parametrize(
    ("mutation", "key_path", "fragment"),
    [case[1:] for case in ERROR_CASES],
    ids=[case[0] for case in ERROR_CASES],
)
def test_invalid_manifest_names_file_key_path_and_value(
    tmp_path: Path, mutation: Callable[[dict[str, Any]], None], key_path: str, fragment: str
) -> None:
    """Each schema violation raises one line naming the file, the key path and the value."""
    path, message = _one_line_error(tmp_path, mutation)
    assert message.startswith(f"{path}: ")
    assert f": {key_path}" in message or message.startswith(f"{path}: {key_path}")
    assert fragment in message


def _one_line_error(
    tmp_path: Path, mutation: Callable[[dict[str, Any]], None]
) -> tuple[Path, str]:
    """Load the valid manifest after ``mutation``; return its path and the one-line error."""
    doc = valid_doc()
    mutation(doc)
    path = write(tmp_path, doc)
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    message = str(info.value)
    assert "\n" not in message
    return path, message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "top level: expected a YAML mapping"),
        ("   \n# only a comment\n", "top level: expected a YAML mapping"),
        ("- a\n- b\n", "['a', 'b'] (list)"),
        ("just text", "'just text' (str)"),
        ("name: [unclosed\n", "expected valid YAML"),
        ("name: a\nname: b\n", "line 2: expected each key once in a mapping, got 'name' again"),
        ("!!python/object/apply:os.system ['echo hi']\n", "expected valid YAML"),
    ],
    ids=["empty", "comment only", "list", "scalar", "invalid yaml", "duplicate key", "unsafe tag"],
)
def test_unreadable_documents_are_one_line_errors(tmp_path: Path, text: str, fragment: str) -> None:
    """Empty, non-mapping, invalid or unsafe YAML is a one-line ManifestError naming the file."""
    path = write(tmp_path, None, text=text)
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    assert str(info.value).startswith(str(path)) and fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file_is_a_manifest_error(tmp_path: Path) -> None:
    """A manifest path that does not exist raises ManifestError naming it."""
    with pytest.raises(ManifestError, match=r"nope\.yaml"):
        load_manifest(tmp_path / "nope.yaml")


def test_explicit_root_bounds_the_dataset_path(tmp_path: Path) -> None:
    """With root= the dataset path must stay inside that root, not the detected one."""
    path = write(tmp_path, valid_doc())
    assert load_manifest(path, root=tmp_path).dataset.path.is_relative_to(tmp_path)
    with pytest.raises(ManifestError, match=r"dataset\.path: expected a file inside"):
        load_manifest(path, root=path.parent)


def test_repository_root_prefers_marker_then_grandparent(tmp_path: Path) -> None:
    """The root is the nearest ancestor with a marker, else the manifest dir's grandparent."""
    audit = tmp_path / "a" / "audits" / "toy"
    audit.mkdir(parents=True)
    assert repository_root(audit) == tmp_path / "a"  # fallback: grandparent
    (tmp_path / "a" / "audits" / "pyproject.toml").write_text("")
    assert repository_root(audit) == tmp_path / "a" / "audits"
    (tmp_path / "a" / "audits" / "pyproject.toml").unlink()
    (tmp_path / "a" / "pyproject.toml").write_text("")
    assert repository_root(audit) == tmp_path / "a"


def test_discover_manifests_is_sorted_and_ignores_other_files(tmp_path: Path) -> None:
    """discover_manifests returns <root>/*/audit.yaml sorted by folder."""
    for name in ("b", "a", "c"):
        (tmp_path / name).mkdir()
    (tmp_path / "b" / "audit.yaml").write_text("")
    (tmp_path / "a" / "audit.yaml").write_text("")
    (tmp_path / "c" / "other.yaml").write_text("")
    assert discover_manifests(tmp_path) == [tmp_path / "a/audit.yaml", tmp_path / "b/audit.yaml"]


# ---------------------------------------------------------------------------- properties

_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.lists(st.one_of(st.text(max_size=3), st.integers(0, 3), st.none()), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(0, 2), max_size=2),
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Return the path of every node of a document."""
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*prefix, i))
    return out


@given(data=st.data())
def test_random_mutations_load_or_raise_manifest_error(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Replacing, deleting or adding any node either loads or raises ManifestError, nothing else."""
    doc = copy.deepcopy(valid_doc())
    for _ in range(data.draw(st.integers(1, 3))):
        paths = _paths(doc)
        target = data.draw(st.sampled_from(paths))
        action = data.draw(st.sampled_from(["replace", "delete", "add"]))
        value = data.draw(_values)
        if not target:
            doc = value  # replace the whole document
            break
        parent: Any = doc
        for part in target[:-1]:
            parent = parent[part]
        if action == "delete":
            del parent[target[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[data.draw(st.sampled_from(["extra", "column", "value", "isin", "type"]))] = value
        else:
            parent[target[-1]] = value
    root = tmp_path_factory.mktemp("prop")
    try:
        load_manifest(write(root, doc))
    except ManifestError as exc:
        assert "\n" not in str(exc)


# ------------------------------------------------------------------- counterfactual_axes


def _with_axes(axes: object) -> dict[str, Any]:
    doc = valid_doc()
    doc["counterfactual_axes"] = axes
    return doc


def test_counterfactual_axes_become_axis_specs_with_columns(tmp_path: Path) -> None:
    """Each axis entry becomes an AxisSpec (explicit and proxy kinds kept) bound to its columns."""
    from faircode.counterfactual.perturb import PerturbationKind

    m = load_doc(tmp_path, _with_axes([
        {"name": "grp_swap", "columns": ["group"],
         "substitutions": [{"pattern": "a", "replacement": "b"},
                           {"pattern": "north", "replacement": "south", "kind": "proxy"}]},
    ]))
    (entry,) = m.counterfactual_axes
    assert entry.columns == ("group",)
    assert entry.axis.name == "grp_swap"
    kinds = [s.kind for s in entry.axis.substitutions]
    assert kinds == [PerturbationKind.EXPLICIT, PerturbationKind.PROXY]


def test_manifest_without_axes_has_none(tmp_path: Path) -> None:
    """The section is optional: a spec-only manifest has no counterfactual axes."""
    assert load_doc(tmp_path, valid_doc()).counterfactual_axes == ()


@pytest.mark.parametrize(
    ("axes", "fragment"),
    [
        ({"name": "x"}, "counterfactual_axes: expected a list of axes, got {'name': 'x'} (dict)"),
        ([{"name": "x", "substitutions": [{"pattern": "a", "replacement": "b"}]}],
         "counterfactual_axes[0].columns: expected a value (required key), got nothing"),
        ([{"name": "x", "columns": ["nope"],
           "substitutions": [{"pattern": "a", "replacement": "b"}]}],
         "counterfactual_axes[0].columns[0]: expected a protected, core or proxy column of this "
         "manifest, got 'nope' (str)"),
        ([{"name": "x", "columns": ["group"],
           "substitutions": [{"pattern": "a", "replacement": "b", "kind": "implicit"}]}],
         "counterfactual_axes[0].substitutions[0].kind: expected one of explicit, proxy, got "
         "'implicit' (str)"),
        ([{"name": "x", "columns": ["group"], "substitutions": []}],
         "counterfactual_axes[0]"),
        ([{"name": "x", "columns": ["group"], "substitutions": [{"pattern": "a",
                                                                  "replacement": "b"}]},
          {"name": "x", "columns": ["x1"], "substitutions": [{"pattern": "c",
                                                               "replacement": "d"}]}],
         "counterfactual_axes[1].name: expected a name not used by another axis, got 'x' (str)"),
    ],
)
def test_invalid_counterfactual_axes_name_file_and_key_path(
    tmp_path: Path, axes: object, fragment: str
) -> None:
    """A bad axis entry is a one-line ManifestError naming the file and the key path."""
    with pytest.raises(ManifestError) as info:
        load_doc(tmp_path, _with_axes(axes))
    message = str(info.value)
    assert message.startswith(str(tmp_path / "audits" / "toy" / "audit.yaml"))
    assert fragment in message
    assert "\n" not in message


# ------------------------------------------------------------------------- units


def test_unit_and_first_by_filter_are_parsed_and_named(tmp_path: Path) -> None:
    """dataset.unit and a first_by filter load, and both columns are named, the order last."""
    doc = valid_doc()
    doc["dataset"]["unit"] = "person"
    doc["row_filters"].insert(0, {"column": "person", "first_by": "visit"})
    m = load_doc(tmp_path, doc)
    assert m.unit == "person"
    assert m.row_filters[0] == RowFilter("person", "first_by", "visit")
    assert m.row_filters[0].describe() == "first row per person by visit"
    assert m.named_columns[-1] == "visit" and m.named_columns.count("person") == 1
    assert "person" not in m.feature_columns


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["dataset"].update(unit="x1"),
         "dataset.unit: expected a column that is not a feature, protected or target column, "
         "got 'x1' (str)"),
        (lambda d: d["dataset"].update(unit=3),
         "dataset.unit: expected a non-empty string, got 3 (int)"),
        (lambda d: d["row_filters"].append({"column": "person", "first_by": "visit"}),
         "row_filters[5].first_by: expected a dataset.unit declared to deduplicate by, got None "
         "(NoneType)"),
        (lambda d: (d["dataset"].update(unit="person"),
                    d["row_filters"].append({"column": "group", "first_by": "visit"})),
         "row_filters[5].column: expected the unit column 'person', got 'group' (str)"),
        (lambda d: (d["dataset"].update(unit="person"),
                    d["row_filters"].append({"column": "person", "first_by": ["visit"]})),
         "row_filters[5].first_by: expected a non-empty string, got ['visit'] (list)"),
    ],
)
def test_bad_unit_declarations_are_one_line_errors(
    tmp_path: Path, change: Any, message: str
) -> None:
    """A unit that is a feature, a first_by without unit or on another column is refused."""
    doc = valid_doc()
    change(doc)
    path = write(tmp_path, doc)
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    assert str(info.value) == f"{path}: {message}"


# ------------------------------------------------------------- reading options and numeric cuts


def test_read_options_default_to_pandas_defaults(tmp_path: Path) -> None:
    """Without dataset.read the file is read as a comma-separated UTF-8 CSV with header row 0."""
    m = load_doc(tmp_path, valid_doc())
    assert m.dataset.read == ReadOptions()
    assert m.dataset.read.pandas_kwargs() == {"sep": ",", "header": 0, "encoding": "utf-8"}


def test_read_options_become_a_typed_record(tmp_path: Path) -> None:
    """Every dataset.read key is parsed into ReadOptions and maps onto pandas.read_csv arguments."""
    doc = valid_doc()
    doc["dataset"]["read"] = {"separator": ";", "header": 1, "encoding": "utf-8-sig",
                              "missing": ["?", "n/a"]}
    m = load_doc(tmp_path, doc)
    assert m.dataset.read == ReadOptions(separator=";", header=1, encoding="utf-8-sig",
                                         missing=("?", "n/a"))
    assert m.dataset.read.pandas_kwargs() == {"sep": ";", "header": 1, "encoding": "utf-8-sig",
                                              "na_values": ["?", "n/a"]}


def test_read_names_mean_no_header_row(tmp_path: Path) -> None:
    """Listing names makes header None: the file's first line is data."""
    doc = valid_doc()
    doc["dataset"]["read"] = {"names": ["a", "b", "c"]}
    read = load_doc(tmp_path, doc).dataset.read
    assert (read.header, read.names) == (None, ("a", "b", "c"))
    assert read.pandas_kwargs()["names"] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ({"column": "outcome", "method": "threshold", "threshold": 10, "direction": "at_least"},
         Target("outcome", "threshold", threshold=10.0, direction="at_least")),
        ({"column": "outcome", "method": "quantile", "quantile": 0.7, "direction": "above"},
         Target("outcome", "quantile", quantile=0.7, direction="above")),
    ],
    ids=["threshold", "quantile"],
)
def test_numeric_cut_targets_parse(
    tmp_path: Path, target: dict[str, Any], expected: Target
) -> None:
    """threshold and quantile targets keep their cut and direction as numbers and literals."""
    doc = valid_doc()
    doc["target"] = target
    assert load_doc(tmp_path, doc).target == expected


def _read(key: str, value: object) -> Callable[[dict[str, Any]], None]:
    """Return a mutation setting ``dataset.read.<key>``."""

    def mutate(doc: dict[str, Any]) -> None:
        doc["dataset"].setdefault("read", {})[key] = value

    return mutate


def _cut(**target: object) -> Callable[[dict[str, Any]], None]:
    return _set("target", {"column": "outcome", **target})


READ_AND_CUT_ERRORS: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    ("read not a mapping", _set("dataset.read", ";"), "dataset.read:", "';' (str)"),
    ("unknown read key", _read("sep", ";"), "dataset.read.sep:", "one of the keys"),
    ("two-char separator", _read("separator", ";;"), "dataset.read.separator:", "';;' (str)"),
    ("quote separator", _read("separator", '"'), "dataset.read.separator:", "'\"' (str)"),
    ("separator number", _read("separator", 1), "dataset.read.separator:", "1 (int)"),
    ("negative header", _read("header", -1), "dataset.read.header:", "-1 (int)"),
    ("header bool", _read("header", True), "dataset.read.header:", "True (bool)"),
    ("header text", _read("header", "1"), "dataset.read.header:", "'1' (str)"),
    ("unknown encoding", _read("encoding", "utf-9"), "dataset.read.encoding:", "'utf-9' (str)"),
    ("names not a list", _read("names", "a,b"), "dataset.read.names:", "'a,b' (str)"),
    ("names repeated", _read("names", ["a", "a"]), "dataset.read.names[1]:", "'a' (str)"),
    ("names empty", _read("names", []), "dataset.read.names:", "[] (list)"),
    (
        "names and header",
        lambda d: d["dataset"].update(read={"names": ["a"], "header": 0}),
        "dataset.read.header:",
        "0 (int)",
    ),
    ("missing scalar", _read("missing", "?"), "dataset.read.missing:", "'?' (str)"),
    ("missing number", _read("missing", [0]), "dataset.read.missing[0]:", "0 (int)"),
    (
        "threshold without direction",
        _cut(method="threshold", threshold=10),
        "target.direction:",
        "required",
    ),
    (
        "threshold as text",
        _cut(method="threshold", threshold="10", direction="above"),
        "target.threshold:",
        "'10' (str)",
    ),
    (
        "unknown direction",
        _cut(method="threshold", threshold=10, direction="below"),
        "target.direction:",
        "'below' (str)",
    ),
    (
        "quantile 1",
        _cut(method="quantile", quantile=1, direction="above"),
        "target.quantile:",
        "1 (int)",
    ),
    (
        "quantile 0",
        _cut(method="quantile", quantile=0.0, direction="above"),
        "target.quantile:",
        "0.0 (float)",
    ),
    (
        "quantile with threshold",
        _cut(method="quantile", quantile=0.7, threshold=3, direction="above"),
        "target.threshold:",
        "one of the keys",
    ),
    (
        "quantile missing",
        _cut(method="quantile", direction="above"),
        "target.quantile:",
        "required",
    ),
]


@pytest.mark.parametrize(
    ("mutation", "key_path", "fragment"),
    [case[1:] for case in READ_AND_CUT_ERRORS],
    ids=[case[0] for case in READ_AND_CUT_ERRORS],
)
def test_invalid_read_options_and_cuts_are_one_line_errors(
    tmp_path: Path, mutation: Callable[[dict[str, Any]], None], key_path: str, fragment: str
) -> None:
    """A bad reading option or numeric cut names the file, the key path and the value."""
    path, message = _one_line_error(tmp_path, mutation)
    assert message.startswith(f"{path}: {key_path}")
    assert fragment in message


@pytest.mark.parametrize(
    "make",
    [
        lambda: ReadOptions(separator="\t\t"),
        lambda: ReadOptions(header=None),
        lambda: ReadOptions(header=0, names=("a",)),
        lambda: ReadOptions(encoding="nope"),
        lambda: ReadOptions(header=None, names=("a", "a")),
        lambda: Target("c", "threshold", direction="above"),
        lambda: Target("c", "quantile", quantile=1.5, direction="above"),
        lambda: Target("c", "threshold", threshold=1.0),
    ],
    ids=["separator", "no header no names", "header and names", "encoding", "names twice",
         "threshold missing", "quantile out of range", "direction missing"],
)
def test_records_built_in_code_validate_themselves(make: Callable[[], object]) -> None:
    """ReadOptions and Target refuse inconsistent values even when built without a file."""
    with pytest.raises(ManifestError):
        make()
