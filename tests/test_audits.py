"""Tests of the seven shipped audit manifests and datasheets, with data from the mirror."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import MIRRORED

from faircode.data import load_audit
from faircode.errors import DataUnavailableError
from faircode.fetch import sha256_file
from faircode.manifest import discover_manifests, load_manifest

SEVEN = (
    "ai_fair_recruitment",
    "benefits_denial",
    "compas",
    "german_credit_lending",
    "healthcare_readmission",
    "insurance_denial",
    "tenant_screening",
)
AUDITS = Path(__file__).resolve().parent.parent / "audits"


def test_seven_manifests_are_shipped_and_load() -> None:
    """audits/ holds exactly the seven manifests; each loads and is named after its folder."""
    paths = discover_manifests(AUDITS)
    assert tuple(p.parent.name for p in paths) == SEVEN
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


@pytest.mark.parametrize("name", SEVEN)
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
