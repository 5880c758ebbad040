"""Tests for the thin DVC stage entry points (in-process, no DVC): unavailable data and params."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from faircode.pipeline.stages import PARTS, check_params, evaluate, fetch, fit, prepare

AUDIT = "ai_fair_recruitment"  # shipped without a mirror copy and without a URL


def test_unavailable_audit_flows_to_a_results_note(
    fresh_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An audit without data writes a note at fetch that every stage carries to results/."""
    monkeypatch.chdir(fresh_repo)
    monkeypatch.setenv("FAIRCODE_DATA_MIRROR", str(tmp_path / "empty-mirror"))
    (fresh_repo / "params.yaml").write_text("audits: [ai_fair_recruitment]\n")
    fetch.main([AUDIT])
    raw, prepared, predictions = (Path("data") / d / AUDIT for d in ("raw", "prepared",
                                                                     "predictions"))
    note = json.loads((raw / "unavailable.json").read_text())
    assert note["available"] is False and "dataset unavailable" in note["message"]
    prepare.main([AUDIT, str(raw), str(prepared)])
    for part in PARTS:
        fit.main([AUDIT, part, str(prepared), str(predictions / part)])
    evaluate.main(["data/prepared", "data/predictions", "data/text", "results"])
    assert sorted(p.name for p in (Path("results") / AUDIT).iterdir()) == ["unavailable.json"]
    final = json.loads((Path("results") / AUDIT / "unavailable.json").read_text())
    assert final["message"] == note["message"]
    assert json.loads((Path("results/metrics") / "full" / f"{AUDIT}.json").read_text()) == {
        AUDIT: {"available": False}}
    headline = json.loads((Path("results/metrics") / f"{AUDIT}.json").read_text())
    assert headline["attr"] is None and set(headline["gap"].values()) == {None}


def test_check_params_exits_2_with_the_key_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A misspelt key stops the check with exit code 2 and one line naming it."""
    monkeypatch.chdir(tmp_path)
    Path("params.yaml").write_text("stats:\n  n_resampels: 10\n")
    with pytest.raises(SystemExit) as info:
        check_params.main(["data/params.ok"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("params.yaml: stats.n_resampels: expected a known")
    assert not Path("data/params.ok").exists()


def test_check_params_output_is_constant_for_any_valid_params(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Valid params of any value give the same marker bytes, so nothing downstream re-runs."""
    monkeypatch.chdir(tmp_path)
    Path("audits/toy").mkdir(parents=True)
    Path("audits/toy/audit.yaml").write_text("name: toy\n")  # check-params needs the folder
    outputs = []
    for threshold in (0.3, 0.7):
        Path("params.yaml").write_text(f"audits: [toy]\nmodels:\n  decision_threshold: "
                                       f"{threshold}\n")
        check_params.main(["data/params.ok"])
        outputs.append(Path("data/params.ok").read_bytes())
    assert outputs[0] == outputs[1]


def test_default_mirror_resolves_from_the_project_outside_an_experiment_copy(
    tmp_path: Path,
) -> None:
    """Inside .dvc/tmp/exps/<run>/ the default mirrors are still <project>/../shared/datasets and
    datasets-extra, in that order."""
    project = tmp_path / "faircode"
    copy = project / ".dvc" / "tmp" / "exps" / "tmpabc"
    copy.mkdir(parents=True)
    shared = (tmp_path / "shared").resolve()
    expected = f"{shared / 'datasets'}{os.pathsep}{shared / 'datasets-extra'}"
    assert fetch.default_mirror(copy) == expected == fetch.default_mirror(project)


def test_unavailable_audit_writes_the_plot_headers_without_numerical_imports(
    tmp_path: Path,
) -> None:
    """An unavailable audit's evaluate stage writes unavailable_headline, unavailable_summary,
    strategy_plot(None) and curve_plot(None) and imports neither numpy nor pandas (a sweep
    re-runs it for nothing)."""
    import subprocess
    import sys

    from faircode.evaluate.curves import curve_plot
    from faircode.evaluate.summary import strategy_plot, unavailable_headline, unavailable_summary

    note = tmp_path / "pred" / "x" / "unmitigated"
    note.mkdir(parents=True)
    (note / "unavailable.json").write_text(json.dumps({"message": "x: dataset unavailable"}))
    Path(tmp_path / "params.yaml").write_text("audits: [x]\n")
    code = ("import sys; from faircode.pipeline.stages import evaluate; "
            "evaluate.main(['prep', 'pred', 'text', 'results']); "
            "print(sorted({'numpy', 'pandas'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, check=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert done.stdout.strip().splitlines()[-1] == "[]"
    results = tmp_path / "results"
    assert json.loads((results / "metrics" / "x.json").read_text()) == unavailable_headline()
    assert json.loads((results / "metrics" / "full" / "x.json").read_text()) == \
        unavailable_summary("x")
    assert json.loads((results / "metrics" / "x-strategies.json").read_text()) == strategy_plot(
        None, audit="x")
    assert (results / "curves" / "x.csv").read_text() == curve_plot(None).to_csv(index=False)


def test_a_text_audit_without_scores_gets_its_note_from_the_evaluate_stage(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The evaluate stage settles a text audit of ``text_audits`` beside the grid's: its scores'
    unavailable note becomes its results note, the grid audit's likewise."""
    monkeypatch.chdir(tmp_path)
    for folder in (Path("pred") / "x" / "unmitigated", Path("text") / "t" / "scores"):
        folder.mkdir(parents=True)
        (folder / "unavailable.json").write_text(json.dumps(
            {"message": f"{folder.parts[1]}: dataset unavailable"}))
    Path("params.yaml").write_text("audits: [x]\ntext_audits: [t]\n")
    evaluate.main(["prep", "pred", "text", "results"])
    for audit in ("x", "t"):
        note = json.loads((Path("results") / audit / "unavailable.json").read_text())
        assert note == {"audit": audit, "available": False,
                        "message": f"{audit}: dataset unavailable"}


def test_audits_are_evaluated_longest_first_by_their_last_seconds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last evaluate seconds (the timings beside each folder) order the jobs, longest
    first; an audit without a record (new, or a text audit) starts first; ties keep
    params.yaml's order."""
    from faircode.core.config import BenchmarkConfig
    from faircode.evaluate.job import Job

    seconds = {"a": 5.0, "b": 17.9, "c": None, "d": 8.9, "e": 5.0}
    jobs = []
    for audit, took in seconds.items():
        (tmp_path / audit).mkdir()
        if took is not None:
            (tmp_path / f"{audit}.seconds.json").write_text(json.dumps(
                {"seconds": {"evaluate": took, "statistics": 1.0}}))
        jobs.append(Job("text", audit, tmp_path, tmp_path / "audit.yaml"))
    (tmp_path / "e.seconds.json").write_text("{not json")  # unreadable: no record
    ran: list[str] = []
    monkeypatch.setattr(evaluate, "_run", lambda job, config: ran.append(job.audit))
    evaluate.run_jobs(jobs, config=BenchmarkConfig(jobs=1))
    assert ran == ["c", "e", "b", "d", "a"]


def _project(root: Path, *, audits: list[str], text_audits: list[str]) -> None:
    """``root`` with a folder per audit and pipeline files written for ``audits`` and
    ``text_audits`` (by the renderer, with the grid's fit parts)."""
    from faircode.core.config import Params
    from faircode.pipeline.dvc_files import render
    from faircode.pipeline.pipeline_command import fit_parts

    for name in {"a", "b", "t", *audits, *text_audits}:
        (root / "audits" / name).mkdir(parents=True, exist_ok=True)
        (root / "audits" / name / "audit.yaml").write_text(f"name: {name}\n")
    files = render(Params(audits=tuple(audits), text_audits=tuple(text_audits)),
                   parts=fit_parts())
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_check_params_refuses_pipeline_files_of_another_list(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Files written for audits a, b and text audit t, params.yaml listing a and a new audit c
    (t dropped): exit 2, one line naming both sides' differences and `faircode pipeline`,
    nothing written."""
    monkeypatch.chdir(tmp_path)
    _project(tmp_path, audits=["a", "b"], text_audits=["t"])
    Path("audits/c").mkdir()
    Path("audits/c/audit.yaml").write_text("name: c\n")
    Path("params.yaml").write_text("audits: [a, c]\n")
    with pytest.raises(SystemExit) as stop:
        check_params.main(["data/params.ok"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1
    assert err == ("dvc.yaml: expected the stages of params.yaml's audits, got stages written "
                   "for another list (params.yaml only: c; dvc.yaml only: b, t (text)); run "
                   "faircode pipeline to rewrite dvc.yaml and upstream/dvc.yaml from "
                   "params.yaml, then commit them\n")
    assert not Path("data").exists()


@pytest.mark.parametrize(("audits", "text_audits", "params"), [
    (["a", "b"], ["t"], "audits: [b, a]\ntext_audits: [t]\n"),  # the order is free
    ([], ["t"], "text_audits: [t]\n"),  # a text audit alone
    (["a"], [], "audits: [a]\ntext_audits: []\n"),  # grid audits alone
])
def test_check_params_accepts_the_files_of_its_lists(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, audits: list[str],
        text_audits: list[str], params: str) -> None:
    """Pipeline files written for params.yaml's lists pass, whichever list is empty; the lists
    file the report depends on holds each list sorted."""
    monkeypatch.chdir(tmp_path)
    _project(tmp_path, audits=audits, text_audits=text_audits)
    Path("params.yaml").write_text(params)
    check_params.main(["data/params.ok", "data/audits.txt"])
    assert Path("data/params.ok").read_text() == "params.yaml: valid\n"
    assert Path("data/audits.txt").read_text() == (
        f"audits: {', '.join(sorted(audits))}\ntext_audits: {', '.join(text_audits)}\n")


def test_check_params_refuses_a_hand_written_pipeline_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A data stage whose foreach reads params.yaml (`${audits}`, as before the files were
    written) is not the layout the check reads: one line naming `faircode pipeline`."""
    monkeypatch.chdir(tmp_path)
    _project(tmp_path, audits=["a"], text_audits=[])
    upstream = Path("upstream/dvc.yaml")
    upstream.write_text(upstream.read_text().replace(
        "    foreach: &audits  # params.yaml's audits\n      - a\n", "    foreach: ${audits}\n"
    ).replace("*audits", "${audits}"))
    Path("params.yaml").write_text("audits: [a]\n")
    with pytest.raises(SystemExit) as stop:
        check_params.main(["data/params.ok"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1
    assert err.startswith("dvc.yaml: expected the pipeline files faircode pipeline writes, got "
                          "files of another layout (upstream/dvc.yaml: fetch.foreach: not a "
                          "list of names); run faircode pipeline"), err
