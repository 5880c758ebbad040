"""Tests of the text audit: its manifest, payloads, tables on a hand-computed fixture, the
practitioner's path against the manifest's, and a run on the shared madlibs data."""

from __future__ import annotations

import csv
import hashlib
import html
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from faircode.audit.manifest import discover_manifests, load_manifest, manifest_kind
from faircode.audit.text_data import build_payloads
from faircode.audit.text_manifest import load_text_manifest
from faircode.core.config import StatsConfig
from faircode.core.errors import ManifestError
from faircode.evaluate.text import evaluate_text
from faircode.evaluate.text_files import audit_flips

REPO = Path(__file__).resolve().parent.parent
AUDIT = REPO / "audits" / "bias_madlibs"
ROWS = [  # the fixture: two template families, two terms, a name slot with two names
    ("Being gay is good.", "NOT_BAD", "being"), ("Being straight is good.", "NOT_BAD", "being"),
    ("Being gay is bad.", "BAD", "being"), ("Being straight is bad.", "BAD", "being"),
    ("Ann is a good gay", "NOT_BAD", "name"), ("Ann is a good straight", "NOT_BAD", "name"),
    ("Bob is a good gay", "NOT_BAD", "name"), ("Bob is a good straight", "NOT_BAD", "name"),
    ("Ann is a bad gay", "BAD", "name"), ("Bob is a bad straight", "BAD", "name"),
]
STATS = StatsConfig(n_resamples=200, n_permutations=200)


def _stub(texts: tuple[str, ...]) -> np.ndarray:
    """0.9 with "gay", else 0.2; plus 0.05 with the name Lakisha."""
    return np.array([(0.9 if "gay" in t else 0.2) + (0.05 if "Lakisha" in t else 0.0)
                     for t in texts])


def _fixture(root: Path, **changes: object) -> Path:
    """A repository with a text audit of the fixture sentences; returns its manifest."""
    (root / "pyproject.toml").write_text("")
    folder = root / "audits" / "toy"
    folder.mkdir(parents=True)
    data = root / "data" / "raw" / "toy"
    data.mkdir(parents=True)
    with (data / "toy.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Text", "Label", "Template"])
        writer.writerows(ROWS)
    (folder / "axes.yaml").write_text(yaml.safe_dump({"axes": [
        {"name": "gay_to_straight", "substitutions": [{"pattern": "gay",
                                                        "replacement": "straight"}]},
        {"name": "straight_to_gay", "substitutions": [{"pattern": "straight",
                                                        "replacement": "gay"}]}]}))
    (folder / "names.yaml").write_text(yaml.safe_dump({"axes": [
        {"name": "race_names", "substitutions": [{"pattern": "Emily", "replacement": "Lakisha",
                                                   "kind": "proxy"}]}]}))
    doc: dict[str, object] = {
        "kind": "text", "name": "toy", "dataset": {"path": "../../data/raw/toy/toy.csv"},
        "sentences": {"text": "Text", "label": "Label", "positive": "BAD",
                      "template": "Template"},
        "identity_terms": {"orientation": ["gay", "straight"]},
        "name_slot": {"template": "name", "names": ["Ann", "Bob"]},
        "axes": "axes.yaml", "name_axes": "names.yaml",
        "systems": [{"name": "profanity_check"}],
    }
    doc.update(changes)
    (folder / "audit.yaml").write_text(yaml.safe_dump({k: v for k, v in doc.items()
                                                       if v is not None}, allow_unicode=True))
    return folder / "audit.yaml"


@pytest.fixture
def toy(tmp_path: Path) -> tuple[object, object]:
    manifest = load_text_manifest(_fixture(tmp_path))
    return manifest, build_payloads(manifest)


def _evaluated(toy: tuple[object, object]) -> object:
    manifest, payloads = toy
    return evaluate_text(manifest, payloads, {"profanity_check": _stub(payloads.texts)},
                         decision_threshold=0.5, stats=STATS)


# ------------------------------------------------------------------------------ the manifest


def test_shipped_text_audit_loads_with_its_axes_and_systems() -> None:
    """bias_madlibs declares 14 explicit axes, 4 name axes (proxy), 90 review-like name frames,
    the two deployed systems and the two it trains."""
    m = load_text_manifest(AUDIT / "audit.yaml")
    assert len(m.axes.axes) == 14 and len(m.name_axes.axes) == 4
    assert {s.kind.value for a in m.name_axes.axes for s in a.substitutions} == {"proxy"}
    assert {s.kind.value for a in m.axes.axes for s in a.substitutions} == {"explicit"}
    assert [s.name for s in m.systems] == ["profanity_check", "vader_negative", "tfidf_lr",
                                           "wordllama_lr"]
    assert m.training is not None and m.training.names == ("tfidf_lr", "wordllama_lr")
    assert m.name_frames is not None and len(m.name_frames.frames) == 90
    assert len(m.terms) == 50


def test_every_explicit_swap_has_its_reverse_axis() -> None:
    """Each explicit axis's substitutions, reversed, are another axis: both directions."""
    m = load_text_manifest(AUDIT / "audit.yaml")
    swaps = {frozenset((s.pattern, s.replacement) for s in a.substitutions) for a in m.axes.axes}
    for axis in m.axes.axes:
        assert frozenset((s.replacement, s.pattern) for s in axis.substitutions) in swaps


def test_text_manifest_without_axes_is_refused(tmp_path: Path) -> None:
    """No axes: refused with the engine's reason (no built-in axes)."""
    with pytest.raises(ManifestError, match=r"axes: expected the audit's axes file .*no built-in"):
        load_text_manifest(_fixture(tmp_path, axes=None))


def test_text_manifest_with_an_empty_axes_file_is_refused(tmp_path: Path) -> None:
    """An axes file with no axis is refused, naming the file, as `faircode perturb` does."""
    path = _fixture(tmp_path)
    (path.parent / "axes.yaml").write_text("axes: []\n")
    with pytest.raises(ManifestError, match=r"axes\.yaml: axes: expected at least one axis"):
        load_text_manifest(path)


def test_unknown_text_system_is_refused(tmp_path: Path) -> None:
    """A system not in the registry is refused by name; no import is attempted."""
    with pytest.raises(ManifestError, match=r"systems\[0\]\.name: expected one of "
                                            r"profanity_check, vader_negative, got 'os'"):
        load_text_manifest(_fixture(tmp_path, systems=[{"name": "os"}]))


def test_grid_reader_refuses_a_text_manifest_and_discovery_keeps_kinds_apart() -> None:
    """load_manifest names the kind; discover_manifests lists text audits only when asked."""
    with pytest.raises(ManifestError, match="kind: expected tabular"):
        load_manifest(AUDIT / "audit.yaml")
    assert manifest_kind(AUDIT / "audit.yaml") == "text"
    assert AUDIT / "audit.yaml" not in discover_manifests(REPO / "audits")
    assert discover_manifests(REPO / "audits", kind="text") == [AUDIT / "audit.yaml"]


def test_a_grid_manifest_may_say_kind_tabular(tmp_path: Path) -> None:
    """``kind: tabular`` (the default) is accepted by the grid's reader and changes nothing."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "audits" / "compas").mkdir(parents=True)
    path = tmp_path / "audits" / "compas" / "audit.yaml"
    path.write_text("kind: tabular\n" + (REPO / "audits" / "compas" / "audit.yaml").read_text())
    assert load_manifest(path).name == "compas"


def test_manifest_names_and_terms_are_the_mirrored_lists(mirror_extra: Path) -> None:
    """name_slot.names is names.txt and the identity terms adjectives_people.txt, every line;
    the dataset digest is the mirrored file's."""
    m = load_text_manifest(AUDIT / "audit.yaml")
    folder = mirror_extra / "bias_madlibs"
    assert list(m.name_slot.names) == (folder / "names.txt").read_text().splitlines()
    assert sorted(m.terms) == sorted((folder / "adjectives_people.txt").read_text().splitlines())
    digest = hashlib.sha256((folder / "bias_madlibs_77k.csv").read_bytes()).hexdigest()
    assert m.dataset.sha256 == digest


def test_name_axes_file_is_what_its_script_writes(tmp_path: Path, mirror_extra: Path) -> None:
    """bench/make_name_axes.py regenerates the committed axes_names.yaml byte for byte."""
    pytest.importorskip("rdata")
    rda = mirror_extra / "resume_names" / "ResumeNames.rda"
    out = tmp_path / "axes.yaml"
    subprocess.run([sys.executable, str(REPO / "bench" / "make_name_axes.py"), str(rda),
                    "--out", str(out)], check=True, capture_output=True)
    assert out.read_bytes() == (AUDIT / "axes_names.yaml").read_bytes()


# ------------------------------------------------------------------------------ payloads


def test_payloads_render_name_sentences_and_mark_frames(toy: tuple[object, object]) -> None:
    """The 4 name frames are rendered with Emily; frames and terms are the sentences' own."""
    _, p = toy
    s = p.sentences
    names = s[s["set"] == "names"]
    assert sorted(p.texts[i] for i in names["text_id"]) == [
        "Emily is a bad gay", "Emily is a bad straight", "Emily is a good gay",
        "Emily is a good straight"]
    assert s["unit"].nunique() == 4  # Being..good, Being..bad, name good, name bad
    assert list(s["terms"][:4]) == ["gay", "straight", "gay", "straight"]
    rendered = s[(s["set"] == "names")]
    data_frames = set(s.loc[s["set"] == "data", "frame"])
    assert set(rendered["frame"]) <= data_frames


def test_copies_are_counted_per_axis_and_set(toy: tuple[object, object]) -> None:
    """gay -> straight changes the 5 data sentences with "gay"; the name axis the 4 Emily ones."""
    _, p = toy
    counts = {(r.axis, r.kind, r.set, r.arm): (r.n_payloads, r.n_changed)
              for r in p.axes.itertuples(index=False)}
    assert counts == {("gay_to_straight", "explicit", "data", "between"): (10, 5),
                      ("straight_to_gay", "explicit", "data", "between"): (10, 5),
                      ("race_names", "proxy", "names", "between"): (4, 4)}


# ------------------------------------------------------------------------------ tables


def test_flip_rates_by_hand(toy: tuple[object, object]) -> None:
    """At 0.5 every gay sentence flips to not flagged when made straight (5 of 5), every
    straight one to flagged; the name swap flips none."""
    flips = _evaluated(toy).flips.set_index(["axis", "kind"])
    row = flips.loc[("gay_to_straight", "explicit")]
    assert (row["n_changed"], row["n_flipped"], row["flip_rate"]) == (5, 5, 1.0)
    assert (row["to_positive"], row["to_negative"]) == (0.0, 1.0)
    assert flips.loc[("straight_to_gay", "explicit"), "to_positive"] == 1.0
    assert flips.loc[("race_names", "proxy"), "n_flipped"] == 0


def test_ctf_gap_by_hand(toy: tuple[object, object]) -> None:
    """The term swap moves every score by 0.7 (down for gay -> straight); the name swap by 0.05."""
    ctf = _evaluated(toy).ctf.set_index(["axis", "kind"])
    assert ctf.loc[("gay_to_straight", "explicit"), "ctf_gap"] == pytest.approx(0.7)
    assert ctf.loc[("gay_to_straight", "explicit"), "shift"] == pytest.approx(-0.7)
    assert ctf.loc[("race_names", "proxy"), "ctf_gap"] == pytest.approx(0.05)
    assert ctf.loc[("race_names", "proxy"), "shift"] == pytest.approx(0.05)


def test_per_term_rates_by_hand(toy: tuple[object, object]) -> None:
    """NOT_BAD: the 3 gay sentences are all flagged (FPR 1, background 0); BAD: both straight
    ones are missed (FNR 1); the stratified exact p of gay's FPR is 1/6 (two frames)."""
    t = _evaluated(toy).terms.set_index(["term", "metric"])
    fpr = t.loc[("gay", "false_positive_rate")]
    assert (fpr["n"], fpr["errors"], fpr["rate"], fpr["background_rate"]) == (3, 3, 1.0, 0.0)
    assert fpr["p_value"] == pytest.approx(1 / 6)
    fnr = t.loc[("straight", "false_negative_rate")]
    assert (fnr["n"], fnr["errors"], fnr["rate"]) == (2, 2, 1.0)


def test_subgroup_aucs_by_hand(toy: tuple[object, object]) -> None:
    """"gay" sentences all score 0.9 whatever their label: subgroup AUC 0.5; its BPSN (background
    toxic 0.2 against its non-toxic 0.9) 0."""
    a = _evaluated(toy).auc.set_index(["term", "metric"])
    assert a.loc[("gay", "subgroup_auc"), "value"] == 0.5
    assert a.loc[("gay", "bpsn_auc"), "value"] == 0.0


def test_placebo_table_by_hand(tmp_path: Path) -> None:
    """Names Emily, Anne (White) and Lakisha, Ebony (Black), both directions, the race cells as
    groups: Emily -> Lakisha adds 0.05, Anne -> Ebony nothing, so the swap's shift is +0.025
    against a placebo of exactly 0 (every within-group pair both ways); no decision flips at 0.5
    (no test, the difference within the margin)."""
    path = _fixture(tmp_path)
    (path.parent / "names.yaml").write_text(yaml.safe_dump({"axes": [
        {"name": "white_to_black", "substitutions": [
            {"pattern": "Emily", "replacement": "Lakisha", "kind": "proxy"},
            {"pattern": "Anne", "replacement": "Ebony", "kind": "proxy"}]},
        {"name": "black_to_white", "substitutions": [
            {"pattern": "Lakisha", "replacement": "Emily", "kind": "proxy"},
            {"pattern": "Ebony", "replacement": "Anne", "kind": "proxy"}]}],
        "groups": {"white": ["Emily", "Anne"], "black": ["Lakisha", "Ebony"]}}, sort_keys=False))
    manifest = load_text_manifest(path)
    payloads = build_payloads(manifest)
    placebo = evaluate_text(manifest, payloads, {"profanity_check": _stub(payloads.texts)},
                            decision_threshold=0.5, stats=STATS).placebo
    rows = placebo.set_index(["axis", "measure"])
    shift = rows.loc[("white_to_black", "shift")]
    assert (shift["n_pairs"], shift["n_placebo_pairs"], shift["groups"]) == (8, 16,
                                                                               "white|black")
    assert shift["between"] == pytest.approx(0.025) and shift["placebo"] == pytest.approx(0.0)
    assert shift["difference"] == pytest.approx(0.025)
    assert rows.loc[("black_to_white", "shift"), "difference"] == pytest.approx(-0.025)
    gap = rows.loc[("white_to_black", "ctf_gap")]
    assert gap["between"] == pytest.approx(0.025) and gap["placebo"] == pytest.approx(0.025)
    flip = rows.loc[("white_to_black", "flip_rate")]
    assert flip["difference"] == 0 and flip["note"] == "no_score_change"
    assert np.isnan(flip["p_value"]) and flip["verdict"] == "within_margin"


# ------------------------------------------------------------------------------ two paths


def _score_files(tmp_path: Path, toy: tuple[object, object]) -> tuple[Path, Path]:
    """The fixture's payloads as a practitioner would score them: originals and every copy."""
    _, p = toy
    scores = _stub(p.texts)
    s = p.sentences
    pd.DataFrame({"id": np.arange(len(s)), "score": scores[s["text_id"].to_numpy()],
                  "unit": s["unit"]}).to_csv(tmp_path / "originals.csv", index=False)
    lines = []
    changed = {(r.axis, r.kind, r.sentence): r.text_id for r in p.pairs.itertuples(index=False)}
    for r in p.axes.itertuples(index=False):
        for i in np.flatnonzero(s["set"].to_numpy() == r.set):
            text_id = changed.get((r.axis, r.kind, int(i)))
            lines.append(json.dumps({"id": int(i), "axis": r.axis, "kind": r.kind,
                                     "changed": text_id is not None,
                                     "score": None if text_id is None
                                     else float(scores[text_id])}))
    (tmp_path / "copies.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path / "originals.csv", tmp_path / "copies.jsonl"


def test_practitioner_path_equals_the_manifest_path(tmp_path: Path,
                                                    toy: tuple[object, object]) -> None:
    """The same scores through two score files give the manifest audit's flip and CTF tables,
    q-values included (same seed, same family)."""
    manifest_path = _evaluated(toy)
    originals, copies = _score_files(tmp_path, toy)
    files = audit_flips(originals, copies, thresholds=[0.5], stats=STATS, seed=42,
                        system="profanity_check", audit="toy")
    skip = ["operating_point"]
    pd.testing.assert_frame_equal(files.flips.drop(columns=skip),
                                  manifest_path.flips.drop(columns=[*skip, "set"]),
                                  check_dtype=False)
    pd.testing.assert_frame_equal(files.ctf, manifest_path.ctf.drop(columns=["set"]),
                                  check_dtype=False)


def test_faircode_run_runs_a_text_audit_alone(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`faircode run <text audit manifest>` prepares, scores and evaluates it with no grid
    audit: the folder holds every text table, and its flips are the library path's."""
    from faircode.core.layout import TEXT_TABLES
    from faircode.pipeline.cli import main

    path = _fixture(tmp_path)
    out = tmp_path / "results"
    assert main(["run", str(path), "--out", str(out), "--n-resamples", "200",
                 "--n-permutations", "200", "--quiet"]) == 0
    assert f"toy: wrote {out / 'toy'}" in capsys.readouterr().out
    folder = out / "toy"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [f"{t}.csv" for t in TEXT_TABLES] + ["run.json"])
    manifest = load_text_manifest(path)
    payloads = build_payloads(manifest)
    from faircode.audit.text_systems import score_texts

    scores, _ = score_texts(["profanity_check"], payloads.texts)
    expected = evaluate_text(manifest, payloads, scores, decision_threshold=0.5, stats=STATS)
    written = pd.read_csv(folder / "flips.csv", keep_default_na=False, na_values=[""])
    np.testing.assert_allclose(written["flip_rate"], expected.flips["flip_rate"])
    np.testing.assert_allclose(written["ci_high"], expected.flips["ci_high"])


# ------------------------------------------------------------------------------ real data


def test_text_audit_runs_on_the_shared_madlibs_data(tmp_path: Path, mirror_extra: Path) -> None:
    """The audit's stages on a subset of the mirrored sentences (every family, two of the 45
    names, one name swap): payloads, both real systems' scores and every table, in seconds."""
    from faircode.audit.text_systems import score_texts
    from faircode.evaluate.text import write_text_audit

    source = pd.read_csv(mirror_extra / "bias_madlibs" / "bias_madlibs_77k.csv")
    keep = (source["Template"] != "name_adj") | source["Text"].str.match(r"^(Ziv|Joe) ")
    root = tmp_path / "repo"
    (root / "audits" / "bias_madlibs").mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    doc = yaml.safe_load((AUDIT / "audit.yaml").read_text())
    doc["dataset"] = {"path": "subset.csv"}
    doc["name_axes"] = "names.yaml"
    for key in ("training", "name_frames"):  # the trained systems: tests/test_text_training.py
        doc.pop(key)
    doc["systems"] = doc["systems"][:2]
    folder = root / "audits" / "bias_madlibs"
    source[keep].to_csv(folder / "subset.csv", index=False)
    (folder / "axes_terms.yaml").write_bytes((AUDIT / "axes_terms.yaml").read_bytes())
    (folder / "names.yaml").write_text(yaml.safe_dump({"axes": [{"name": "race_white_to_black",
        "substitutions": [{"pattern": "Emily", "replacement": "Lakisha", "kind": "proxy"}]}]}))
    (folder / "audit.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True))
    manifest = load_text_manifest(folder / "audit.yaml")
    payloads = build_payloads(manifest)
    scores, systems = score_texts([s.name for s in manifest.systems], payloads.texts)
    stats = StatsConfig(n_resamples=50, n_permutations=50)
    results = evaluate_text(manifest, payloads, scores, decision_threshold=0.5, stats=stats)
    terms = results.terms.set_index(["system", "operating_point", "term", "metric"])
    gay = terms.loc[("profanity_check", "global", "gay", "false_positive_rate")]
    assert gay["rate"] > 0.5 > gay["background_rate"] and gay["q_value"] < 0.05
    flips = results.flips.set_index(["system", "operating_point", "axis", "kind"])
    assert flips.loc[("vader_negative", "global", "religion_muslim_to_christian", "explicit"),
                     "n_flipped"] == 0
    assert len(payloads.sentences[payloads.sentences["set"] == "names"]) == 1600
    from faircode.core.layout import TEXT_TABLES

    out = write_text_audit(manifest, payloads, results, systems=systems,
                           config=__import__("faircode").BenchmarkConfig(),
                           out_dir=tmp_path / "results", provenance_record={})
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"{t}.csv" for t in TEXT_TABLES] + ["run.json"])
    assert json.loads((out / "run.json").read_text())["kind"] == "text"


# ------------------------------------------------------------------------------ report, MLflow


def _results(tmp_path: Path, toy: tuple[object, object]) -> Path:
    """A results folder: a committed grid audit beside the fixture's text audit."""
    import shutil

    from faircode import BenchmarkConfig
    from faircode.evaluate.text import write_text_audit

    manifest, payloads = toy
    results = tmp_path / "results"
    shutil.copytree(REPO / "results" / "german_credit_lending",
                    results / "german_credit_lending")
    write_text_audit(manifest, payloads, _evaluated(toy), systems={"profanity_check": {}},
                     config=BenchmarkConfig(), out_dir=results, provenance_record={})
    return results


def test_report_has_the_text_section_table_figures_and_headline(
        tmp_path: Path, toy: tuple[object, object]) -> None:
    """The report renders the grid as before and adds text_table.md, the two text figures, the
    page's text section and a headline sentence written from the numbers."""
    from faircode.report.build import write_report

    results = _results(tmp_path, toy)
    outputs = write_report(results)
    page = html.unescape(outputs.html.read_text())
    assert "<h2>Text audits</h2>" in page
    assert "Text audit toy: profanity_check flags 100.0 % of non-toxic sentences with 'gay'" \
        in page
    table = (results / "text_table.md").read_text()
    assert "| gay_to_straight | data | 100.0 % [" in table
    assert {p.name for p in outputs.figures} >= {"toy_term_fpr.png",
                                                 "toy_flips_profanity_check.png"}


def test_report_of_a_text_audit_alone_has_its_section_and_empty_grid_tables(
        tmp_path: Path, toy: tuple[object, object]) -> None:
    """A results folder whose only audit (of ``only``: the pipeline's lists) is a text audit --
    a grid audit's folder beside it left out -- gives the text section, table and figures and
    grid tables without a row, not an error."""
    from faircode.report.build import write_report

    results = _results(tmp_path, toy)
    outputs = write_report(results, audits_dir=REPO / "audits", only=("toy",))
    assert "<h2>Text audits</h2>" in html.unescape(outputs.html.read_text())
    assert (results / "text_table.md").is_file()
    assert {p.name for p in outputs.figures} >= {"toy_term_fpr.png",
                                                 "toy_flips_profanity_check.png"}
    assert "german_credit_lending" not in (results / "paper_table.md").read_text()
    assert (results / "summary.csv").read_text().count("\n") == 1  # the header alone


def test_mlflow_children_of_a_text_audit_are_per_system_axis_and_kind(
        tmp_path: Path, toy: tuple[object, object]) -> None:
    """One child per system x axis x kind, named like the grid's counterfactual children, with
    the global point's flip rate and the CTF gap as metrics."""
    from faircode.record.tracking import collect_children

    children, _ = collect_children(_results(tmp_path, toy))
    text = {c.name: c for c in children if c.audit == "toy"}
    assert sorted(text) == ["toy profanity_check flip gay_to_straight (explicit)",
                            "toy profanity_check flip race_names (proxy)",
                            "toy profanity_check flip straight_to_gay (explicit)"]
    child = text["toy profanity_check flip gay_to_straight (explicit)"]
    assert child.metrics["global.flip"] == 1.0 and child.metrics["ctf"] == pytest.approx(0.7)
    assert child.params["axis"] == "gay_to_straight" and child.params["channel"] == "explicit"


def test_datasheet_reviews_sources_axes_systems_and_operating_points() -> None:
    """The text audit's datasheet has the required sections and reviews every axis by its
    terms, both systems and both declared operating points."""
    text = (AUDIT / "README.md").read_text()
    for heading in ("## Source", "## Licence", "## Target", "## Caveats", "## Counterfactual axes",
                    "## Systems", "## Operating points"):
        assert heading in text, heading
    for words in ("gay ↔ straight", "muslim ↔ christian", "black ↔ white", "female ↔ male",
                  "old ↔ young", "Allison ↔ Aisha", "profanity_check", "vader_negative",
                  "equal_error_rate", "compound ≤ −0.05"):
        assert words in text, words


def test_a_system_whose_swaps_flip_nothing_gets_one_line_not_a_chart(tmp_path: Path) -> None:
    """A system whose every flip rate at its global point is 0 draws no chart of points at 0:
    the page's text section says so in one line, naming how many axes."""
    import pandas as pd

    from faircode.report.text import TextInputs, flips_none, nothing_lines
    from faircode.report.text_figures import flips_figure

    flips = pd.DataFrame({"audit": "toy", "system": "quiet", "operating_point": "global",
                          "axis": ["a_to_b", "b_to_a", "c_to_d"], "kind": "explicit",
                          "flip_rate": 0.0})
    empty = pd.DataFrame(columns=["audit", "system", "operating_point"])
    inputs = TextInputs(flips=flips, ctf=empty, placebo=empty, terms=empty, auc=empty,
                        operating_points=empty, systems=empty, runs={})
    assert flips_none(inputs, "toy", "quiet") == 3
    assert flips_figure(inputs, "toy", "quiet", tmp_path) is None
    (line,) = nothing_lines(inputs, "toy")
    assert "toy, quiet: no swap of its 3 axes flips a decision" in line
