"""Shared fixtures: the seeded ``rng``, the data ``mirrors``, a Hypothesis profile, a repo copy.

``audit_repo`` builds, once per session, a repository-like tmp directory (``pyproject.toml``,
``audits/<name>/audit.yaml`` copied from the shipped manifests, ``data/raw/...``) and fetches the
mirrored raw files into *that* directory — never into the real ``data/raw`` and never into the
repository.
"""

from __future__ import annotations

# First: importing faircode puts the declared numerical configuration (OpenBLAS kernel, numpy
# dispatch, threads) into the environment, which numpy reads when it loads (faircode.core.numerics).
import faircode  # noqa: F401

# isort: split
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, settings

from faircode.audit.fetch import fetch
from faircode.audit.manifest import Manifest, discover_manifests, load_manifest
from faircode.core.errors import DataUnavailableError

REPO = Path(__file__).resolve().parent.parent
PIPELINE_FILES = ("dvc.yaml", "upstream/dvc.yaml")
"""The pipeline's files: the stages that write results/, and upstream/ the ones that write data/
(their own file, so that a sweep value's stages never rewrite the data stages' lock)."""


def pipeline_stages(root: Path = REPO) -> dict[str, dict]:
    """Every stage of the pipeline files under ``root`` by name (no name is in both files)."""
    stages: dict[str, dict] = {}
    for name in PIPELINE_FILES:
        if (root / name).is_file():
            found = yaml.safe_load((root / name).read_text())["stages"]
            assert not set(found) & set(stages), f"{name}: a stage name of both files"
            stages.update(found)
    return stages


def copy_pipeline(root: Path, into: Path) -> None:
    """The pipeline files of ``root`` into the same places under ``into``."""
    for name in PIPELINE_FILES:
        if (root / name).is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(root / name, into / name)

# The audits whose raw file ../shared/datasets mirrors (see its SOURCES.md); the other two shipped
# audits must be reported as unavailable.
MIRRORED = (
    "benefits_denial",
    "compas",
    "german_credit_lending",
    "healthcare_readmission",
    "insurance_denial",
)
# The audits whose raw file ../shared/datasets-extra mirrors (see its SOURCES.md).
MIRRORED_EXTRA = (
    "bank_marketing",
    "communities_crime",
    "compas_two_years",
    "credit_default",
    "lsac_law",
    "minneapolis_stops",
    "mortgage_denials",
    "resume_callbacks",
    "student_performance",
    "toronto_arrests",
)
AUDITS = REPO / "audits"

# The default profile is derandomized: the suite's only randomness is seeded, so a CI run is
# reproducible.  HYPOTHESIS_PROFILE=explore searches new examples on every run.
settings.register_profile(
    "faircode",
    deadline=None,
    max_examples=60,
    derandomize=True,
    suppress_health_check=(HealthCheck.too_slow,),
)
settings.register_profile(
    "explore",
    deadline=None,
    max_examples=500,
    suppress_health_check=(HealthCheck.too_slow,),
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "faircode"))


@pytest.fixture
def rng() -> np.random.Generator:
    """Return the suite's only source of randomness, seeded."""
    return np.random.default_rng(20261129)


def mirror_dirs() -> tuple[Path, ...]:
    """Return the existing mirror folders: ``$FAIRCODE_DATA_MIRROR`` (``os.pathsep``-separated)
    or ``<repo>/../shared/datasets`` and ``<repo>/../shared/datasets-extra``, in that order."""
    env = os.environ.get("FAIRCODE_DATA_MIRROR")
    if env:
        paths = tuple(Path(p) for p in env.split(os.pathsep) if p)
    else:
        paths = (REPO.parent / "shared" / "datasets", REPO.parent / "shared" / "datasets-extra")
    return tuple(p for p in paths if p.is_dir())


def _holding(mirrors: tuple[Path, ...], audit: str) -> Path | None:
    """Return the first mirror folder holding ``<audit>/``."""
    return next((m for m in mirrors if (m / audit).is_dir()), None)


def _skip_or_fail(message: str) -> None:
    """Skip a data test locally; fail it in CI (``CI=true``), where a silently skipped data test
    would report green without testing the audits."""
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        pytest.fail(f"{message}; CI=true requires the mirror", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def mirrors() -> tuple[Path, ...]:
    """Return every data mirror folder (skip without one; fail in CI)."""
    paths = mirror_dirs()
    if not paths:
        _skip_or_fail("no data mirror (set FAIRCODE_DATA_MIRROR)")
    return paths


@pytest.fixture(scope="session")
def mirror(mirrors: tuple[Path, ...]) -> Path:
    """Return the mirror folder of the five shipped mirrored audits (skip/fail when absent)."""
    path = _holding(mirrors, MIRRORED[0])
    if path is None:
        _skip_or_fail("no mirror of the shipped audits (set FAIRCODE_DATA_MIRROR)")
    assert path is not None
    return path


@pytest.fixture(scope="session")
def mirror_extra(mirrors: tuple[Path, ...]) -> Path:
    """Return the mirror folder of the extra audits (skip/fail when absent)."""
    path = _holding(mirrors, MIRRORED_EXTRA[0])
    if path is None:
        _skip_or_fail("no mirror of the extra datasets (add ../shared/datasets-extra)")
    assert path is not None
    return path


@dataclass(frozen=True)
class AuditRepo:
    """A repo-like tmp directory with the shipped manifests and fetched mirrored data."""

    root: Path
    manifests: dict[str, Manifest]
    unavailable: dict[str, str]

    @property
    def audits(self) -> Path:
        return self.root / "audits"


def copy_manifests(root: Path) -> None:
    """Create a repo-like tree under ``root`` with copies of the shipped manifests (no data)."""
    (root / "pyproject.toml").write_text("# test repository root\n")
    for path in discover_manifests(AUDITS):
        dest = root / "audits" / path.parent.name
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, dest / "audit.yaml")


@pytest.fixture(scope="session")
def audit_repo(tmp_path_factory: pytest.TempPathFactory, mirrors: tuple[Path, ...]) -> AuditRepo:
    """Return a repo copy whose mirrored raw files are fetched into tmp (offline: mirrors only)."""
    root = tmp_path_factory.mktemp("repo")
    copy_manifests(root)
    manifests: dict[str, Manifest] = {}
    unavailable: dict[str, str] = {}
    for path in discover_manifests(root / "audits"):
        manifest = load_manifest(path)
        manifests[manifest.name] = manifest
        if _holding(mirrors, manifest.dataset.mirror or manifest.name) is not None:
            fetch(manifest, mirrors=mirrors)
        else:
            try:  # offline: without a mirror copy and without a url this must be "unavailable"
                if manifest.dataset.source is None or manifest.dataset.source.url is None:
                    fetch(manifest, mirrors=mirrors)
            except DataUnavailableError as exc:
                unavailable[manifest.name] = str(exc)
    return AuditRepo(root=root, manifests=manifests, unavailable=unavailable)


@pytest.fixture
def fresh_repo(tmp_path: Path) -> Path:
    """Return a repo-like tmp directory with copies of the shipped manifests and no data."""
    root = tmp_path / "repo"
    root.mkdir()
    copy_manifests(root)
    return root
