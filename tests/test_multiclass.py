"""Tests of the multiclass task kind: the bank_wages audit's published counts, the grid, its
folder, its report section and MLflow children, and its manifest's one-line errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from faircode.audit.data import load_audit
from faircode.audit.kinds import manifest_task_kind
from faircode.audit.multiclass_manifest import load_multiclass_manifest
from faircode.audit.prepared import PreparedAudit, prepare
from faircode.core.cells import STRATEGY_TABLE, applies
from faircode.core.config import BenchmarkConfig, ReplicateConfig, StatsConfig, VerdictsConfig
from faircode.core.errors import ManifestError
from faircode.core.kinds import MULTICLASS
from faircode.core.layout import MULTICLASS_TABLES, dvc_views, folder_kind, table_path
from faircode.evaluate.headline_keys import UNAVAILABLE_HEADLINE, headline_record
from faircode.evaluate.job import Job
from faircode.evaluate.multiclass import class_tables
from faircode.evaluate.multiclass_kind import EVALUATOR
from faircode.grid.multiclass import class_cells
from faircode.pipeline.cli import main
from faircode.record.multiclass_runs import multiclass_children
from faircode.report.kinds import section

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "audits" / "bank_wages" / "audit.yaml"
STATS = StatsConfig(n_resamples=50, n_permutations=50)
CONFIG = BenchmarkConfig().with_params({"stats.n_resamples": 50, "stats.n_permutations": 50,
                                        "run.jobs": 1})
PUBLISHED = {("gender", "female"): (0, 206, 10), ("gender", "male"): (27, 157, 74),
             ("minority", "yes"): (13, 87, 4), ("minority", "no"): (14, 276, 80)}
"""SOURCES.md's job x gender and job x minority counts (custodial, admin, manage)."""


@pytest.fixture(scope="module")
def prepared(mirror_extra: Path) -> PreparedAudit:
    """bank_wages from the mirror."""
    return prepare(load_audit(load_multiclass_manifest(MANIFEST),
                              path=mirror_extra / "aer_more" / "BankWages.rda"))


@pytest.fixture(scope="module")
def audits(mirror_extra: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An audits folder holding bank_wages' manifest with the mirrored file beside it."""
    root = tmp_path_factory.mktemp("audits")
    _manifest(root / "bank_wages")
    shutil.copy(mirror_extra / "aer_more" / "BankWages.rda", root / "bank_wages")
    return root


@pytest.fixture(scope="module")
def folder(audits: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bank_wages evaluated and written by its kind's evaluator (K = 1)."""
    out = tmp_path_factory.mktemp("multiclass")
    return EVALUATOR.run(Job(MULTICLASS.name, "bank_wages", out,
                             audits / "bank_wages" / "audit.yaml",
                             views=dvc_views(out, "bank_wages")), config=CONFIG)


def test_the_manifest_is_of_the_multiclass_kind() -> None:
    """bank_wages' manifest names the multiclass kind; its target is the three job classes."""
    assert manifest_task_kind(MANIFEST) is MULTICLASS
    manifest = load_multiclass_manifest(MANIFEST)
    assert manifest.target.values == ("custodial", "admin", "manage")
    text = (MANIFEST.parent / "README.md").read_text().lower()
    assert all(h in text for h in ("## source", "## licence", "## target", "## caveats"))


def test_bank_wages_reproduces_the_published_counts(prepared: PreparedAudit) -> None:
    """Every row, job by gender and by minority: SOURCES.md's counts, exactly."""
    gaps = class_tables(prepared, (), stats=STATS, verdicts=VerdictsConfig()).class_gaps
    recorded = gaps[(gaps["strategy"] == "observed") & (gaps["row_set"] == "all")]
    values = {"gender": ("female", "male"), "minority": ("yes", "no")}
    for attribute, (dis, adv) in values.items():
        rows = recorded[recorded["protected_attribute"] == attribute]
        assert tuple(rows["count_disadvantaged"]) == PUBLISHED[attribute, dis]
        assert tuple(rows["count_advantaged"]) == PUBLISHED[attribute, adv]
    women = recorded[recorded["protected_attribute"] == "gender"]
    assert women["value"].tolist() == pytest.approx(
        [0 - 27 / 258, 206 / 216 - 157 / 258, 10 / 216 - 74 / 258])


def test_the_joint_test_is_exact_and_names_the_gap(prepared: PreparedAudit) -> None:
    """The recorded jobs differ by gender and by minority (exact test, gap); admin holds half
    the gender gap, manage half the minority gap."""
    tests = class_tables(prepared, (), stats=STATS, verdicts=VerdictsConfig()).class_tests
    recorded = tests[(tests["strategy"] == "observed") & (tests["row_set"] == "all")]
    assert set(recorded["method"]) == {"exact"} and set(recorded["verdict"]) == {"gap"}
    assert recorded["leading_class"].tolist() == ["admin", "manage"]
    assert recorded["tv_distance"].iloc[0] == pytest.approx(
        (27 / 258 + abs(206 / 216 - 157 / 258) + abs(10 / 216 - 74 / 258)) / 2)


def test_the_grid_is_s0_s2_and_the_others_say_why(prepared: PreparedAudit) -> None:
    """Nine fitted cells (S0-S2 x three families) with accuracies; every other strategy (S3,
    S4, S5) n/a with the strategy table's reason and no number."""
    cells = class_cells(prepared, replicates=ReplicateConfig(), encoding="label")
    assert len(cells) == 9 and {c.strategy.value for c in cells} == {
        "baseline", "unawareness", "unawareness_proxy_removal"}
    strategies = class_tables(prepared, cells, stats=STATS,
                              verdicts=VerdictsConfig()).strategies
    fitted = strategies[strategies["status"] == "fitted"]
    assert len(fitted) == 9 and fitted["accuracy"].between(0, 1).all()
    missing = strategies[strategies["status"] == "not_applicable"]
    assert set(missing["code"]) == {s.code for s in STRATEGY_TABLE
                                    if not applies(s.strategy, MULTICLASS.name)}
    assert missing["reason"].str.len().min() > 20
    assert missing[["accuracy", "balanced_accuracy"]].isna().all().all()


def test_replicates_are_a_table_of_their_own(prepared: PreparedAudit) -> None:
    """At K = 2 the main tables are replicate 0's and the second replicate's joint tests are
    class_replicates.csv's."""
    cells = class_cells(prepared, replicates=ReplicateConfig(seeds=2, seed_mode="split"),
                        encoding="label")
    tables = class_tables(prepared, cells, stats=STATS, verdicts=VerdictsConfig())
    assert tables.class_replicates is not None
    assert set(tables.class_replicates["replicate"]) == {1}
    assert len(tables.class_replicates) == 9 * 2 and len(tables.class_tests) == (2 + 9) * 2


def test_the_folder_holds_the_kind_and_its_views(folder: Path) -> None:
    """The evaluator writes the kind's tables and run.json (kind multiclass, every file's
    digest) and the DVC headline every kind has: per strategy, the mean over its informative
    families of the largest class share gap on the first attribute, null where it does not
    apply."""
    assert folder_kind(folder) == "multiclass"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [*(table_path(folder, t).name for t in MULTICLASS_TABLES), "run.json"])
    run = json.loads((folder / "run.json").read_text())
    assert set(run["files"]) == {table_path(folder, t).name for t in MULTICLASS_TABLES}
    headline = json.loads(dvc_views(folder.parent, "bank_wages").headline.read_text())
    tests = pd.read_csv(table_path(folder, "class_tests"))
    cells = tests[(tests["protected_attribute"] == "gender") & (tests["row_set"] == "test")
                  & (tests["metric"] == MULTICLASS.headline)
                  & (tests["verdict"] != "uninformative")]
    means = {s.code: cells.loc[cells["strategy"] == s.strategy.value, "value"].mean()
             for s in STRATEGY_TABLE if applies(s.strategy, MULTICLASS.name)}
    assert headline == headline_record("gender", means) and headline["attr"] == "gender"
    assert {s.code for s in STRATEGY_TABLE if headline["gap"][s.code] is None} == {
        s.code for s in STRATEGY_TABLE if not applies(s.strategy, MULTICLASS.name)}


def test_the_report_section_names_the_classes_by_their_share(folder: Path,
                                                             tmp_path: Path) -> None:
    """The section's headline names each attribute's classes by their share of the gap, with
    both groups' shares; its table and figure are written."""
    shown = section(MULTICLASS)
    inputs = shown.load([folder])
    sentence = shown.headline(inputs)
    assert "admin 50.0 % (95.4 % vs 60.9 %)" in sentence and "by minority" in sentence
    (table,) = shown.tables(inputs, tmp_path)
    assert "custodial" in table.read_text()
    drawn = [d() for d in shown.drawings(inputs, tmp_path)]
    assert drawn[0] is not None and drawn[0].png.is_file()


def test_mlflow_children_carry_the_kind_s_units(folder: Path) -> None:
    """One child per row set x attribute (recorded on every row and on the test rows, nine
    cells), with the largest class gap, the joint test and each class's gap."""
    children = multiclass_children(folder)
    assert len(children) == 11 * 2
    first = children[0]
    assert first.name == "bank_wages recorded (all) gender"
    assert {"cls_max", "tv", "chi2", "chi2.p", "cls_gap.admin", "share_of_gap.manage"} <= set(
        first.metrics)
    assert first.tags["verdict"] == "gap" and first.tags["kind"] == "multiclass"


def test_faircode_run_runs_a_multiclass_audit(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              audits: Path) -> None:
    """`faircode run bank_wages` fits and writes it in one step and prints its headline."""
    code = main(["run", "bank_wages", "--audits", str(audits), "--seeds", "1",
                 "--n-resamples", "30", "--n-permutations", "30", "--jobs", "1",
                 "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "Multi-class audit bank_wages" in out
    assert folder_kind(tmp_path / "bank_wages") == "multiclass"


def _manifest(folder: Path, **changes: object) -> Path:
    """bank_wages' manifest in ``folder`` reading ``BankWages.rda`` beside it, with
    ``changes`` (a key to None: removed)."""
    doc = yaml.safe_load(MANIFEST.read_text())
    doc["dataset"]["path"] = "BankWages.rda"
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "audit.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize(("changes", "message"), [
    ({"task": "multiclas"}, r"task: expected one of binary, multiclass, got 'multiclas'"),
    ({"task": None}, r"target.method: expected classes for task multiclass \(and only for it\), "
                     r"got 'classes'"),
    ({"target": {"column": "job", "method": "isin", "values": ["admin"]}},
     r"target.method: expected classes for task multiclass"),
    ({"target": {"column": "job", "method": "classes", "values": ["admin", "admin"]}},
     r"target.values: expected at least two distinct classes"),
    ({"decision": {"rule": "base_rate"}}, r"decision: expected no decision for task multiclass"),
    ({"target": {"column": "job", "method": "classes", "values": ["a", "b"], "favourable": 1}},
     r"target.favourable"),
])
def test_bad_multiclass_manifests_are_one_line(tmp_path: Path, changes: dict,
                                               message: str) -> None:
    """A misspelt task, a target or block of the wrong kind: one line naming the key."""
    with pytest.raises(ManifestError, match=message) as info:
        load_multiclass_manifest(_manifest(tmp_path, **changes))
    assert "\n" not in str(info.value)


def test_a_class_outside_the_list_leaves_at_the_target_step(mirror_extra: Path,
                                                            tmp_path: Path) -> None:
    """Two declared classes: the other class's rows are not derivable and leave there."""
    manifest = load_multiclass_manifest(_manifest(
        tmp_path, target={"column": "job", "method": "classes", "values": ["admin", "manage"]}))
    data = load_audit(manifest, path=mirror_extra / "aer_more" / "BankWages.rda")
    assert dict(data.steps)["target derivable"] == 474 - 27
    assert np.bincount(data.y).tolist() == [363, 84]
    assert pd.Series(data.y).isin([0, 1]).all()


def test_faircode_audit_takes_a_predicted_class(audits: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`faircode audit` of a multi-class audit reads a predicted class per row (joined on the
    row position) and writes a multi-class run beside the recorded classes; predicting the
    recorded job gives the recorded counts; an unknown class is one line naming it."""
    manifest = load_multiclass_manifest(audits / "bank_wages" / "audit.yaml")
    data = load_audit(manifest)
    classes = np.array(manifest.target.values, dtype=object)
    predictions = tmp_path / "mine.csv"
    pd.DataFrame({"position": np.arange(len(data.y)),
                  "job": classes[data.y]}).to_csv(predictions, index=False)
    code = main(["audit", str(audits / "bank_wages" / "audit.yaml"), "--predictions",
                 str(predictions), "--key", "position", "--decision", "job", "--rows", "all",
                 "--name", "mine",
                 "--n-resamples", "30", "--n-permutations", "30", "--out", str(tmp_path / "out")])
    assert code == 0 and "Multi-class audit bank_wages" in capsys.readouterr().out
    folder = tmp_path / "out" / "bank_wages"
    assert folder_kind(folder) == "multiclass"
    run = json.loads((folder / "run.json").read_text())
    assert run["predictions"]["classes"] == ["custodial", "admin", "manage"]
    gaps = pd.read_csv(table_path(folder, "class_gaps"))
    mine = gaps[(gaps["model"] == "mine") & (gaps["protected_attribute"] == "gender")]
    assert mine["count_disadvantaged"].tolist() == list(PUBLISHED["gender", "female"])
    pd.DataFrame({"position": [0], "job": ["janitor"]}).to_csv(predictions, index=False)
    code = main(["audit", str(audits / "bank_wages" / "audit.yaml"), "--predictions",
                 str(predictions), "--key", "position", "--decision", "job",
                 "--allow-partial", "--out",
                 str(tmp_path / "bad")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "expected one of the classes custodial, admin, manage, got 'janitor'" in err


def test_the_evaluate_stage_settles_a_multiclass_audit(tmp_path: Path, mirror_extra: Path) -> None:
    """Without data (the fetch stage's note in its raw folder) the audit gets the note and views
    of nulls; with its raw file, a job of its kind."""
    from faircode.core.layout import UNAVAILABLE_NOTE, write_unavailable
    from faircode.evaluate.job import Upstream

    (tmp_path / "pyproject.toml").write_text("")
    doc = yaml.safe_load(MANIFEST.read_text())
    manifest = tmp_path / "audits" / "bank_wages" / "audit.yaml"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(yaml.safe_dump(doc))
    raw = tmp_path / "data" / "raw" / "bank_wages"
    write_unavailable(raw, audit="bank_wages", message="bank_wages: dataset unavailable: ...")
    upstream = Upstream(tmp_path / "p", tmp_path / "q", tmp_path / "t", parts=())
    said: list[str] = []
    results = tmp_path / "results"
    job = EVALUATOR.settle("bank_wages", manifest=manifest, upstream=upstream, results=results,
                           config=CONFIG, say=said.append)
    assert job is None and (results / "bank_wages" / UNAVAILABLE_NOTE).is_file()
    assert json.loads(dvc_views(results, "bank_wages").headline.read_text()) == UNAVAILABLE_HEADLINE
    (raw / UNAVAILABLE_NOTE).unlink()
    shutil.copy(mirror_extra / "aer_more" / "BankWages.rda", raw)
    job = EVALUATOR.settle("bank_wages", manifest=manifest, upstream=upstream, results=results,
                           config=CONFIG, say=said.append)
    assert job is not None and job.kind == MULTICLASS.name and job.inputs == (raw,)
