"""The state identity (faircode.provenance.state) and that one state shows the same identity in
run.json, report.html and the MLflow parent run (fast; the pipeline's own run is
tests/test_pipeline.py::test_one_identity_in_run_json_report_and_mlflow_parent)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest
from conftest import pipeline_stages
from test_report import write_audit_folder

from faircode.core.config import BenchmarkConfig, config_record
from faircode.provenance.state import (
    REPORT_CODE,
    RESULTS_CODE,
    StateIdentity,
    code_digest,
    group_states,
    inputs_status,
    params_digest,
    provenance,
    state_identity,
)
from faircode.report.build import write_report

REPO = Path(__file__).resolve().parent.parent
STATE = {"git_commit": "c" * 40, "code_sha256": "a" * 64, "inputs_dirty": False,
         "params_sha256": "b" * 64}


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A committed repository with code, a manifest, params, results and a dvc.lock."""
    root = tmp_path / "project"
    for rel, text in (("faircode/stats/m.py", "X = 1\n"), ("faircode/report/r.py", "Y = 1\n"),
                      ("audits/a/audit.yaml", "name: a\n"), ("params.yaml", "stats: {}\n"),
                      ("results/a/fairness.csv", "x\n1\n"), ("dvc.lock", "schema: '2.0'\n")):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "t@example.org")
    _git(root, "config", "user.name", "t")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "state")
    return root


def test_outputs_never_make_a_state_dirty(project: Path) -> None:
    """Changed results/ and dvc.lock (what a run writes) leave the inputs clean."""
    (project / "results" / "a" / "fairness.csv").write_text("x\n2\n")
    (project / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n")
    (project / "results" / "new.csv").write_text("y\n")
    assert inputs_status(project) == (False, ())


def test_a_changed_or_new_input_is_dirty_and_named(project: Path) -> None:
    """A modified params.yaml and an untracked manifest are dirty, each named."""
    (project / "params.yaml").write_text("stats: {n_resamples: 5}\n")
    (project / "audits" / "b").mkdir()
    (project / "audits" / "b" / "audit.yaml").write_text("name: b\n")
    assert inputs_status(project) == (True, ("M params.yaml", "?? audits/b/audit.yaml"))


def test_outside_git_dirty_and_commit_are_unknown(tmp_path: Path) -> None:
    """Without a repository the commit and dirty flag are None, never a guess."""
    state = state_identity(root=tmp_path)
    assert (state.git_commit, state.inputs_dirty) == (None, None)


def test_code_digest_covers_the_results_code_only(project: Path) -> None:
    """A stats change moves the results code digest; a report change does not (but moves the
    report code's)."""
    before, report = code_digest(project), code_digest(project, REPORT_CODE)
    (project / "faircode" / "report" / "r.py").write_text("Y = 2\n")
    assert code_digest(project) == before
    assert code_digest(project, REPORT_CODE) != report
    (project / "faircode" / "stats" / "m.py").write_text("X = 2\n")
    assert code_digest(project) != before


def test_code_digest_is_of_paths_and_bytes(tmp_path: Path) -> None:
    """The digest is sha256 over the tag, then each sorted path and its bytes' sha256."""
    (tmp_path / "faircode" / "core").mkdir(parents=True)
    (tmp_path / "faircode" / "core" / "b.py").write_bytes(b"B")
    (tmp_path / "faircode" / "core" / "a.py").write_bytes(b"A")
    expected = hashlib.sha256(b"faircode-code-v1\0")
    for rel, data in (("faircode/core/a.py", b"A"), ("faircode/core/b.py", b"B")):
        expected.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    assert code_digest(tmp_path) == expected.hexdigest()


def test_the_code_digests_are_within_their_stage_deps() -> None:
    """Each digest covers only files its DVC stage depends on, so results that dvc status calls
    up to date carry the digest of the code at HEAD."""
    stages = pipeline_stages()
    for stage, code in (("evaluate", RESULTS_CODE), ("report", REPORT_CODE)):
        spec = stages[stage].get("do", stages[stage])
        deps = [str(d) for d in spec["deps"]]
        assert all(any(c == d or c.startswith(d + "/") for d in deps) for c in code), stage


def test_params_digest_ignores_the_worker_count() -> None:
    """The worker count changes no number, so not the params digest either; a value does."""
    config = config_record(BenchmarkConfig().with_params({"run.jobs": 1}))
    assert params_digest(config) == params_digest({**config, "jobs": 8})
    assert params_digest(config) != params_digest({**config, "eps": 0.02})
    compact = json.dumps({"a": 1}, sort_keys=True, separators=(",", ":"))
    assert params_digest({"a": 1, "jobs": 3}) == hashlib.sha256(compact.encode()).hexdigest()


def test_state_round_trips_and_groups_audits() -> None:
    """A state block reads back as the same identity; audits group by identity, missing ones
    under None."""
    assert StateIdentity.from_dict(STATE).as_dict() == STATE
    other = {**STATE, "git_commit": "d" * 40}
    groups = group_states({"a": {"state": STATE}, "b": {"state": other}, "c": {"state": STATE},
                           "d": {}})
    assert list(groups.values()) == [("a", "c"), ("b",), ("d",)]
    assert None in groups


def test_a_malformed_code_digest_is_refused() -> None:
    """A code digest that is not 64 hex digits is an error, not an identity."""
    with pytest.raises(ValueError, match="code_sha256: expected 64 hex digits"):
        StateIdentity(git_commit=None, code_sha256="abc", inputs_dirty=False)


def _report_state(html: str) -> list[dict[str, str]]:
    return [dict(re.findall(r'data-(\w+)="([^"]*)"', m))
            for m in re.findall(r'<dl class="state" ([^>]*)>', html)]


def test_one_state_is_the_same_in_run_json_report_and_mlflow_parent(tmp_path: Path) -> None:
    """The state of run.json is what report.html prints and what the MLflow parent is tagged."""
    from mlflow.tracking import MlflowClient

    from faircode.record.tracking import sync_results

    results = tmp_path / "results"
    for audit, attributes in (("audit_a", ("sex", "age")), ("audit_b", ("race",))):
        folder = write_audit_folder(results, audit, attributes)
        run = json.loads((folder / "run.json").read_text())
        (folder / "run.json").write_text(json.dumps({**run, "state": STATE}))
    write_report(results, provenance=provenance(code=REPORT_CODE))
    html = (results / "report.html").read_text()
    assert _report_state(html) == [{"commit": STATE["git_commit"], "code": STATE["code_sha256"],
                                    "params": STATE["params_sha256"], "dirty": "false"}]
    assert "dvc.lock: " not in html and "sha256 of dvc.lock" not in html
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = sync_results(results, tracking_uri=uri, experiment="identity",
                        artifact_location=(tmp_path / "artifacts").as_uri())
    tags = MlflowClient(tracking_uri=uri).get_run(done.parent_run_id).data.tags
    assert {k: tags[f"state.{k}"] for k in STATE} == {**STATE, "inputs_dirty": "false"}


def test_the_mlflow_parent_carries_the_numerical_environment(tmp_path: Path) -> None:
    """The parent is tagged with the kernels, mode and CPU the audits' run.json record: their
    common value, ``mixed`` where they differ."""
    from mlflow.tracking import MlflowClient

    from faircode.record.tracking import sync_results

    results = tmp_path / "results"
    kernels = {"blas_kernels": ["openblas Haswell"], "numpy_dispatch": ["X86_V3"]}
    for audit, model in (("audit_a", "CPU one"), ("audit_b", "CPU two")):
        folder = write_audit_folder(results, audit, ("sex",))
        run = json.loads((folder / "run.json").read_text())
        run["numerics"] = {"mode": "pinned", "pinned": True, "configuration": kernels,
                           "fit": kernels, "cpu": {"model": model, "flags_sha256": "f" * 64},
                           "blas": [{"file": "libscipy_openblas.so", "version": "0.3.30",
                                     "architecture": "Haswell", "threads": 1}]}
        (folder / "run.json").write_text(json.dumps(run))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = sync_results(results, tracking_uri=uri, experiment="numerics",
                        artifact_location=(tmp_path / "artifacts").as_uri())
    tags = MlflowClient(tracking_uri=uri).get_run(done.parent_run_id).data.tags
    assert {k: v for k, v in tags.items() if k.startswith("numerics.")} == {
        "numerics.kernels": "OpenBLAS Haswell; numpy dispatch X86_V3",
        "numerics.fit_kernels": "OpenBLAS Haswell; numpy dispatch X86_V3",
        "numerics.mode": "pinned", "numerics.pinned": "true",
        "numerics.blas": "libscipy_openblas.so 0.3.30 Haswell threads 1",
        "numerics.cpu": "mixed", "numerics.cpu_flags_sha256": "f" * 64}


def test_audits_from_two_states_are_shown_as_two(tmp_path: Path) -> None:
    """A report over audits of two states says so and prints each state with its audits."""
    results = tmp_path / "results"
    for audit, commit in (("audit_a", "c" * 40), ("audit_b", "d" * 40)):
        folder = write_audit_folder(results, audit, ("sex",))
        run = json.loads((folder / "run.json").read_text())
        run["state"] = {**STATE, "git_commit": commit}
        (folder / "run.json").write_text(json.dumps(run))
    write_report(results)
    html = (results / "report.html").read_text()
    assert "These results come from 2 states" in html
    assert [s["commit"] for s in _report_state(html)] == ["c" * 40, "d" * 40]
