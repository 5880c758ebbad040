"""Tests of the seventeen shipped audit manifests and datasheets, with data from the mirrors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import MIRRORED, MIRRORED_EXTRA

from faircode.audit.data import load_audit
from faircode.audit.fetch import sha256_file
from faircode.audit.manifest import discover_manifests, load_manifest
from faircode.core.errors import DataUnavailableError

SHIPPED = (
    "ai_fair_recruitment",
    "bank_marketing",
    "benefits_denial",
    "communities_crime",
    "compas",
    "compas_two_years",
    "credit_default",
    "german_credit_lending",
    "healthcare_readmission",
    "insurance_denial",
    "lsac_law",
    "minneapolis_stops",
    "mortgage_denials",
    "resume_callbacks",
    "student_performance",
    "tenant_screening",
    "toronto_arrests",
)
AUDITS = Path(__file__).resolve().parent.parent / "audits"


def test_seventeen_manifests_are_shipped_and_load() -> None:
    """audits/ holds exactly the seventeen manifests; each loads and is named after its
    folder."""
    paths = discover_manifests(AUDITS)
    assert tuple(p.parent.name for p in paths) == SHIPPED
    for path in paths:
        m = load_manifest(path)
        assert m.name == path.parent.name
        assert (m.random_state, m.test_size) == (42, 0.2)
        assert m.dataset.declared_path == f"../../data/raw/{m.name}/{m.dataset.path.name}"
        assert m.dataset.source is not None and m.dataset.source.instructions
        assert m.dataset.source.citation and m.dataset.source.license


@pytest.mark.parametrize("name", MIRRORED)
def test_mirrored_manifests_declare_the_mirror_digest(name: str, mirror: Path) -> None:
    """Each mirrored audit's sha256 is the digest of the mirrored file, and it has a URL."""
    m = load_manifest(AUDITS / name / "audit.yaml")
    assert m.dataset.sha256 == sha256_file(mirror / name / m.dataset.path.name)
    assert m.dataset.source is not None and m.dataset.source.url is not None


def test_unobtainable_audits_have_no_digest() -> None:
    """ai_fair_recruitment and tenant_screening have no sha256; only tenant_screening has a URL."""
    recruit = load_manifest(AUDITS / "ai_fair_recruitment" / "audit.yaml")
    tenant = load_manifest(AUDITS / "tenant_screening" / "audit.yaml")
    assert recruit.dataset.sha256 is None and tenant.dataset.sha256 is None
    assert recruit.dataset.source is not None and recruit.dataset.source.url is None
    assert tenant.dataset.source is not None and tenant.dataset.source.url is not None
    assert "ynf5-u8nk" in tenant.dataset.source.url


def test_favourable_labels_follow_the_decisions() -> None:
    """COMPAS label 1 (High/Medium risk) is unfavourable; German label 1 (good) is favourable."""
    assert load_manifest(AUDITS / "compas" / "audit.yaml").target.favourable == 0
    assert load_manifest(AUDITS / "german_credit_lending" / "audit.yaml").target.favourable == 1


@pytest.mark.parametrize("name", SHIPPED)
def test_datasheet_covers_source_licence_target_and_caveats(name: str) -> None:
    """Every audit folder carries a README datasheet with the four required sections."""
    text = (AUDITS / name / "README.md").read_text().lower()
    for heading in ("## source", "## licence", "## target", "## caveats"):
        assert heading in text


@pytest.mark.parametrize("name", MIRRORED)
def test_mirrored_audit_passes_column_checks(name: str, audit_repo: Any) -> None:
    """Each mirrored audit loads: every named column exists, two classes, non-empty groups."""
    m = audit_repo.manifests[name]
    data = load_audit(m)
    assert tuple(data.raw.columns) == m.named_columns
    assert set(np.unique(data.y).tolist()) == {0, 1}
    counts = [n for _, n in data.steps]
    assert counts == sorted(counts, reverse=True) and counts[-1] == len(data.y)
    for attribute in m.protected_attributes:
        dis = data.disadvantaged[attribute.name]
        assert 0 < dis.sum() < len(dis)
    assert len(data.train_index) + len(data.test_index) == len(data.y)


@pytest.mark.parametrize("name", ["ai_fair_recruitment", "tenant_screening"])
def test_unobtainable_audit_is_reported_unavailable(name: str, audit_repo: Any) -> None:
    """Loading an unobtainable audit says 'dataset unavailable' with its instructions."""
    m = audit_repo.manifests[name]
    assert m.dataset.source is not None and m.dataset.source.instructions
    with pytest.raises(DataUnavailableError) as info:
        load_audit(m)
    message = str(info.value)
    assert message.startswith(f"{name}: dataset unavailable: ")
    assert " ".join(m.dataset.source.instructions.split()) in message


# ------------------------------------------------------------------------ the extra audits

# Rows before any filter, as SOURCES.md of ../shared/datasets-extra counts them (pandas, header
# excluded), and the rows each audit keeps after its filters.
EXTRA_ROWS = {
    "bank_marketing": (45_211, 45_211),
    "communities_crime": (1_994, 1_994),
    "compas_two_years": (7_214, 6_150),
    "credit_default": (30_000, 30_000),
    "lsac_law": (21_791, 21_790),
    "minneapolis_stops": (51_920, 26_923),
    "mortgage_denials": (2_380, 2_380),
    "resume_callbacks": (4_870, 4_870),
    "student_performance": (649, 649),
    "toronto_arrests": (5_226, 5_226),
}


@pytest.mark.parametrize("name", MIRRORED_EXTRA)
def test_extra_manifests_declare_the_mirror_digest(name: str, mirror_extra: Path) -> None:
    """Each extra audit's sha256 is the digest of the file in ../shared/datasets-extra."""
    m = load_manifest(AUDITS / name / "audit.yaml")
    folder = m.dataset.mirror or name  # the R data files sit in their own folders
    assert m.dataset.sha256 == sha256_file(mirror_extra / folder / m.dataset.path.name)


@pytest.mark.parametrize("name", MIRRORED_EXTRA)
def test_extra_audit_round_trips_through_validate(
    name: str, audit_repo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """`faircode validate` loads the real file: SOURCES.md's row count, two classes, both groups."""
    from faircode.pipeline.cli import main

    assert main(["validate", name, "--audits", str(audit_repo.audits)]) == 0
    out = capsys.readouterr().out
    loaded, kept = EXTRA_ROWS[name]
    loaded_line = next(line for line in out.splitlines() if line.split()[:1] == ["loaded"])
    assert loaded_line.endswith(f" {loaded:,} rows")
    data = load_audit(audit_repo.manifests[name])
    assert data.steps[0] == ("loaded", loaded) and len(data.y) == kept
    assert f"): {data.y.mean():.4f}" in out
    for attribute in data.manifest.protected_attributes:
        dis = data.disadvantaged[attribute.name]
        assert 0 < dis.sum() < len(dis)
        assert f"{int(dis.sum()):,} rows  label rate {data.y[dis].mean():.4f}" in out


def test_leaking_columns_are_not_features() -> None:
    """bank's duration, student's G1/G2, LSAC's ZFYA, the COMPAS tool's own outputs, later
    outcomes, names and dates of birth, and the Minneapolis officers' other decisions of the
    same stop (citation, vehicle search) never reach a manifest's columns."""
    leaks = {"bank_marketing": {"duration"}, "student_performance": {"G1", "G2"},
             "lsac_law": {"ZFYA", "sander_index"},
             "compas_two_years": {"name", "first", "last", "dob", "decile_score",
                                  "decile_score.1", "score_text", "v_decile_score",
                                  "v_score_text", "is_recid", "event", "priors_count.1"},
             "minneapolis_stops": {"citationIssued", "vehicleSearch", "idNum", "date"},
             "toronto_arrests": {"year"}}
    for name, columns in leaks.items():
        m = load_manifest(AUDITS / name / "audit.yaml")
        assert columns.isdisjoint(m.named_columns)


def test_communities_reads_all_128_names_and_drops_the_police_columns(audit_repo: Any) -> None:
    """The 128 names come from communities.names; no LEMAS police column is a feature."""
    m = audit_repo.manifests["communities_crime"]
    names = m.dataset.read.names
    assert names is not None and len(names) == 128
    assert names[:5] == ("state", "county", "community", "communityname", "fold")
    assert names[-1] == "ViolentCrimesPerPop"
    data = load_audit(m)
    police = {c for c in names if c.startswith(("Lemas", "Polic", "PctPolic", "RacialMatch",
                                                 "OfficAssgn", "NumKindsDrugs"))}
    assert len(police) == 23 and police.isdisjoint(m.feature_columns)
    assert data.raw[list(m.feature_columns)].isna().sum().sum() == 1  # OtherPerCap, one row


def test_communities_top_30_percent_is_a_quantile_of_the_rows(audit_repo: Any) -> None:
    """The cut is numpy's 0.7 quantile of all ViolentCrimesPerPop values; label 1 is above it."""
    import pandas as pd

    m = audit_repo.manifests["communities_crime"]
    data = load_audit(m)
    raw = pd.read_csv(m.dataset.path, header=None, na_values=["?"])
    crime = raw.iloc[:, -1].to_numpy(dtype=float)
    assert data.target_cut == pytest.approx(np.quantile(crime, 0.7))
    assert int(data.y.sum()) == int((crime > data.target_cut).sum())
