"""Tests of faircode.pipeline.cli: `data fetch` and `validate` end to end, exit codes, messages."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import MIRRORED, MIRRORED_EXTRA

from faircode.audit.data import load_audit
from faircode.audit.fetch import mirror_dirs
from faircode.audit.manifest import load_manifest
from faircode.pipeline.cli import main

UNAVAILABLE = ("ai_fair_recruitment", "tenant_screening")


def test_fetch_from_mirrors_fetches_eleven_and_skips_two(
    fresh_repo: Path, mirror: Path, mirror_extra: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """fetch with two --mirror flags installs the eleven mirrored files, reports two unavailable."""
    code = main(
        [
            "data",
            "fetch",
            "--audits",
            str(fresh_repo / "audits"),
            "--mirror",
            str(mirror),
            "--mirror",
            str(mirror_extra),
            "--offline",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    for name in (*MIRRORED, *MIRRORED_EXTRA):
        line = next(x for x in out.splitlines() if x.startswith(f"{name}: "))
        assert line.startswith(f"{name}: mirror ") and "(verified " in line
        manifest = load_manifest(fresh_repo / "audits" / name / "audit.yaml")
        assert manifest.dataset.path.is_file()
        assert manifest.dataset.path.is_relative_to(fresh_repo)
    for name in UNAVAILABLE:
        manifest = load_manifest(fresh_repo / "audits" / name / "audit.yaml")
        assert manifest.dataset.source is not None and manifest.dataset.source.instructions
        first_words = " ".join(manifest.dataset.source.instructions.split()[:6])
        assert f"skipped: {name}: dataset unavailable: {first_words}" in out
        assert not manifest.dataset.path.exists()


def test_fetch_reads_mirror_from_environment(
    fresh_repo: Path,
    mirror: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without --mirror the FAIRCODE_DATA_MIRROR directory is used."""
    monkeypatch.setenv("FAIRCODE_DATA_MIRROR", str(mirror))
    code = main(["data", "fetch", "german_credit_lending", "--audits", str(fresh_repo / "audits")])
    assert code == 0 and "german_credit_lending: mirror" in capsys.readouterr().out


def test_fetch_reads_several_mirrors_from_environment(
    fresh_repo: Path,
    mirror: Path,
    mirror_extra: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """FAIRCODE_DATA_MIRROR holds os.pathsep-separated folders; each audit is found in its own."""
    monkeypatch.setenv("FAIRCODE_DATA_MIRROR", os.pathsep.join([str(mirror), str(mirror_extra)]))
    code = main(["data", "fetch", "insurance_denial", "student_performance",
                 "--audits", str(fresh_repo / "audits")])
    out = capsys.readouterr().out
    assert code == 0
    assert "insurance_denial: mirror" in out and "student_performance: mirror" in out


def test_mirror_flags_take_precedence_over_environment() -> None:
    """--mirror flags replace the environment's list; empty entries of the list are ignored."""
    env = os.pathsep.join(["/a", "", "/b"])
    assert mirror_dirs(None, env) == (Path("/a"), Path("/b"))
    assert mirror_dirs(["/c", "/d"], env) == (Path("/c"), Path("/d"))
    assert mirror_dirs(None, None) == ()


def test_fetch_accepts_a_manifest_path(
    fresh_repo: Path, mirror: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An AUDIT argument may be a manifest path instead of a name."""
    path = fresh_repo / "audits" / "insurance_denial" / "audit.yaml"
    assert main(["data", "fetch", str(path), "--mirror", str(mirror)]) == 0
    assert "insurance_denial: mirror" in capsys.readouterr().out


def test_validate_prints_each_step_group_and_split(
    audit_repo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate prints rows per step, label rate, group sizes/rates and the split for an audit."""
    code = main(["validate", "compas", "--audits", str(audit_repo.audits)])
    out = capsys.readouterr().out
    data = load_audit(audit_repo.manifests["compas"])
    assert code == 0
    for step, n in data.steps:
        assert step in out and f"{n:,} rows" in out
    dis = data.disadvantaged["race"]
    assert f"{int(dis.sum()):,} rows  label rate {data.y[dis].mean():.4f}" in out
    assert f"{int((~dis).sum()):,} rows  label rate {data.y[~dis].mean():.4f}" in out
    assert f"{data.y.mean():.4f}" in out
    assert f"train {len(data.train_index):,} / test {len(data.test_index):,} rows" in out
    assert "FirstName" not in out


def test_validate_all_reports_unavailable_as_skipped(
    audit_repo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate over every audit exits 0 and reports the two unobtainable datasets as skipped."""
    code = main(["validate", "--audits", str(audit_repo.audits)])
    out = capsys.readouterr().out
    assert code == 0
    for name in UNAVAILABLE:
        assert f"skipped: {name}: dataset unavailable:" in out
    for name in MIRRORED:
        assert f"{name}: " in out and f"skipped: {name}" not in out


def test_bad_manifest_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An invalid manifest gives exit code 2 and exactly its one-line error on stderr."""
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "audits" / "bad" / "audit.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("name: bad\nprotected_attribute: []\n")
    code = main(["validate", "--audits", str(tmp_path / "audits")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == (
        f"{path}: protected_attribute: expected one of the keys name, title, dataset, "
        "random_state, test_size, row_filters, target, protected_attributes, core_features, "
        "proxy_features, counterfactual_axes, decision, system, strata, task, got "
        "'protected_attribute' (str)"
    )
    assert "Traceback" not in err


def test_missing_column_exits_2_naming_closest_columns(
    audit_repo: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A manifest naming an absent column fails validate with the closest column names."""
    code, err, _ = _validate_edited(
        audit_repo, "german_credit_lending", capsys,
        lambda text: text.replace("proxy_features: [employment]", "proxy_features: [employmnt]"))
    assert code == 2
    assert "proxy_features[0]" in err and "'employmnt' (str); closest: employment" in err


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("decision: {rule: median}",
         "decision.rule: expected one of threshold, base_rate, top_fraction, got 'median' (str)"),
        ("decision: {rule: top_fraction, fraction: 1.5}",
         "decision.fraction: expected a number in (0, 1), got 1.5 (float)"),
        ("decision: {rule: threshold}",
         "decision.threshold: expected a value (required key), got nothing"),
        ("decision: {rule: base_rate, fraction: 0.1}",
         "decision.fraction: expected one of the keys rule, got 'fraction' (str)"),
    ],
)
def test_bad_decision_block_exits_2_with_one_line(
    audit_repo: Any, block: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate refuses a bad decision block with exit 2 and one line naming file and key."""
    code, err, broken = _validate_edited(
        audit_repo, "german_credit_lending", capsys, lambda text: text + "\n" + block + "\n")
    assert code == 2
    assert err.strip() == f"{broken}: {expected}"


def test_unknown_audit_name_exits_2(fresh_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An AUDIT argument that is neither a known name nor a path exits 2 listing known audits."""
    code = main(["validate", "nope", "--audits", str(fresh_repo / "audits")])
    err = capsys.readouterr().err
    assert code == 2 and "'nope' (str)" in err and "compas" in err


def test_subcommand_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    """Calling faircode without a subcommand is a one-line usage error (exit 2)."""
    assert main([]) == 2
    assert capsys.readouterr().err == "faircode: expected a subcommand (see --help), got nothing\n"


def test_perturb_writes_one_jsonl_line_per_perturbation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`faircode perturb` edits every payload on every axis and writes JSON lines to stdout."""
    import json

    axes = tmp_path / "axes.yaml"
    axes.write_text("axes:\n  - name: gender\n    substitutions:\n"
                    "      - {pattern: he, replacement: she}\n"
                    "      - {pattern: his, replacement: her}\n")
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a", "payload": {"letter": "He lost his keys."}}\n'
                      '{"id": "b", "payload": {"letter": "The manager agreed."}}\n')
    assert main(["perturb", "--axes", str(axes), str(source)]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in records] == ["a", "b"]
    assert records[0]["perturbed"] == {"letter": "She lost her keys."}
    assert records[0]["fired"] == {"he": 1, "his": 1} and records[0]["changed"] is True
    assert records[1]["changed"] is False and records[1]["fired"] == {}


def test_perturb_malformed_line_exits_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A malformed JSONL line is named by its number; no output is half-written."""
    axes = tmp_path / "axes.yaml"
    axes.write_text("- name: g\n  substitutions: [{pattern: he, replacement: she}]\n")
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": 1, "payload": "he"}\n{"id": 2, "payload": \n')
    assert main(["perturb", "--axes", str(axes), str(source)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{source}:2:" in captured.err


def test_missing_unit_column_exits_2_with_one_line(
    audit_repo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A manifest whose dataset.unit is not a column of the file: one line naming it, exit 2."""
    code, err, _ = _validate_edited(
        audit_repo, "compas", capsys,
        lambda text: text.replace("unit: Person_ID", "unit: PersonID"))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.strip().endswith(
        "dataset.unit: expected a column of compas-scores-raw.csv, got 'PersonID' (str); "
        "closest: Person_ID"
    )


def test_validate_reports_units_and_that_none_crosses_the_split(
    audit_repo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate compas prints its people, repeated people, and 0 shared between train and test."""
    code = main(["validate", str(audit_repo.audits / "compas" / "audit.yaml")])
    out = capsys.readouterr().out
    assert code == 0
    assert "units (Person_ID): 14,832; 2,697 rows in 1,289 repeated units" in out
    assert out.rstrip().endswith("units, 0 in both")


def test_run_with_a_misspelt_params_key_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`faircode run --params` validates params.yaml first: one line naming the key, exit 2."""
    params = tmp_path / "params.yaml"
    params.write_text("stats:\n  n_resampels: 10\n")
    code = main(["run", "--params", str(params), "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"{params}: stats.n_resampels: expected a known key of stats (alpha, "
                   "confidence, cost_margin, effect_margin, n_permutations, n_resamples, power), "
                   "got 'n_resampels' (str)"]


def _validate_edited(
    audit_repo: Any, audit: str, capsys: pytest.CaptureFixture[str], edit: Callable[[str], str]
) -> tuple[int, str, Path]:
    """Run ``validate`` on an edited copy of ``audit``'s manifest beside it (removed after);
    return the exit code, stderr and the copy's path."""
    original = audit_repo.audits / audit / "audit.yaml"
    broken = original.parent / "broken.yaml"
    broken.write_text(edit(original.read_text()))
    try:
        code = main(["validate", str(broken)])
    finally:
        broken.unlink()
    return code, capsys.readouterr().err, broken


def test_every_help_ends_with_a_faircode_example() -> None:
    """`faircode --help` and every subcommand's help end with an example command line."""
    import argparse

    from faircode.pipeline.cli import build_parser

    def parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
        found = [parser]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    found += parsers(child)
        return found

    every = parsers(build_parser())
    assert len(every) == 13  # faircode, data, data fetch, and the ten other subcommands
    for parser in every:
        tail = re.split(r"^example\b[^\n]*:\n", parser.format_help().rstrip(), flags=re.M)[-1]
        assert tail.startswith("  faircode "), parser.prog


def test_a_named_audit_without_data_exits_1_with_one_line(
    fresh_repo: Path, mirror: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`data fetch`, `validate` and `run` of a named audit that cannot be had exit 1 with one
    line on stderr: its instructions and the mirror folders searched."""
    audits = ["--audits", str(fresh_repo / "audits")]
    for argv in (["data", "fetch", "ai_fair_recruitment", "--mirror", str(mirror), *audits],
                 ["validate", "ai_fair_recruitment", *audits],
                 ["run", "ai_fair_recruitment", "--out", str(fresh_repo / "out"), *audits]):
        code = main(argv)
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert code == 1, argv
        assert len(err) == 1 and err[0].startswith("ai_fair_recruitment: dataset unavailable: ")
        assert "Kaggle" in err[0] and "FAIRCODE_DATA_MIRROR" in err[0], err[0]


def test_without_mirror_settings_the_shared_folder_beside_the_project_is_used(
    tmp_path: Path, mirror: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    """With neither --mirror nor FAIRCODE_DATA_MIRROR, `data fetch` and `run`'s fetch look in
    ../shared/datasets beside the project, as freeze and verify do."""
    import shutil

    from conftest import copy_manifests

    project = tmp_path / "clone"
    project.mkdir()
    copy_manifests(project)
    shared = tmp_path / "shared" / "datasets" / "german_credit_lending"
    shared.mkdir(parents=True)
    shutil.copy(mirror / "german_credit_lending" / "credit_customers.csv", shared)
    monkeypatch.delenv("FAIRCODE_DATA_MIRROR", raising=False)
    monkeypatch.chdir(project)
    assert main(["data", "fetch", "german_credit_lending"]) == 0
    assert f"german_credit_lending: mirror {project}" in capsys.readouterr().out
    (project / "data" / "raw" / "german_credit_lending" / "credit_customers.csv").unlink()
    assert main(["validate", "german_credit_lending"]) == 0  # fetched again, then validated
    assert "german_credit_lending: mirror" in capsys.readouterr().err


def test_a_fetched_file_has_the_users_umask(fresh_repo: Path, mirror: Path) -> None:
    """A fetched raw file is created as open() would create it (0644 under umask 022)."""
    old = os.umask(0o022)
    try:
        assert main(["data", "fetch", "german_credit_lending", "--mirror", str(mirror),
                     "--audits", str(fresh_repo / "audits")]) == 0
    finally:
        os.umask(old)
    path = fresh_repo / "data" / "raw" / "german_credit_lending" / "credit_customers.csv"
    assert path.stat().st_mode & 0o777 == 0o644


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return capsys.readouterr().out


def test_each_subcommand_help_has_one_example(capsys: pytest.CaptureFixture[str]) -> None:
    """Every subcommand's help ends with exactly one example, printed once, of itself; `faircode
    audit` shows one per way in (a file's own columns, its YAML declaration, an audit's rows)."""
    from faircode.pipeline.cli import build_parser

    commands = [["data", "fetch"], *([c] for c in build_parser()._subparsers._group_actions[0]
                                         .choices if c != "data")]  # type: ignore[union-attr]
    for argv in commands:
        text = _help(argv, capsys)
        examples = [line for line in text.splitlines() if line.startswith("  faircode ")]
        # audit: three ways in, and the YAML example has no command line
        ways = {("audit",): (3, 2)}.get(tuple(argv), (1, 1))
        assert (len(re.findall(r"^example\b", text, re.M)), len(examples)) == ways, argv
        assert all(f"{e} ".startswith(f"  faircode {' '.join(argv)} ") for e in examples), examples


def test_verify_example_names_a_frozen_state(capsys: pytest.CaptureFixture[str]) -> None:
    """`faircode verify --help`'s example is a freeze record of this repository."""
    text = _help(["verify"], capsys)
    name = next(line.split()[2] for line in text.splitlines()
                if line.startswith("  faircode verify "))
    assert (Path(__file__).resolve().parents[1] / "freezes" / f"{name}.json").is_file()


def test_audit_help_has_one_audit_positional_that_may_be_a_manifest_path(
    capsys: pytest.CaptureFixture[str]
) -> None:
    """`faircode audit --help` shows one positional (a decisions file, a log declaration or an
    AUDIT, not also `[audit ...]`) and says the AUDIT may be a manifest."""
    text = _help(["audit"], capsys)
    usage = " ".join(text.split("\n\n")[0].split())
    assert len(re.findall(r"\bAUDIT\b", usage)) == 1 and "[audit ...]" not in usage
    assert "or its manifest" in " ".join(text.split())


def test_data_fetch_help_says_where_mirrors_come_from(capsys: pytest.CaptureFixture[str]) -> None:
    """`data fetch --help` names the flag, the variable and the default shared folders."""
    text = " ".join(_help(["data", "fetch"], capsys).split())
    assert "--mirror DIR" in text and "$FAIRCODE_DATA_MIRROR" in text
    assert "../shared/datasets and ../shared/datasets-extra beside the project" in text
