"""The four regression audits against their published figures (SOURCES.md, "Beyond binary
decisions"), and their gap within strata beside the raw gap."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import AUDITS, _skip_or_fail

from faircode.audit.kinds import manifest_task_kind
from faircode.audit.regression_data import RegressionData, load_regression_audit
from faircode.audit.regression_manifest import load_regression_manifest
from faircode.core.kinds import REGRESSION
from faircode.stats.continuous_strata import strata_mean_gap

NAMES = ("cps1985_wages", "cps1988_wages", "professor_salaries", "teaching_ratings")


def _audit(name: str, mirror_extra: Path) -> RegressionData:
    manifest = load_regression_manifest(AUDITS / name / "audit.yaml")
    assert manifest.dataset.mirror is not None
    path = mirror_extra / manifest.dataset.mirror / manifest.dataset.path.name
    if not path.is_file():
        _skip_or_fail(f"no {path}")
    return load_regression_audit(manifest, path=path)


def _means(data: RegressionData, attribute: str) -> tuple[tuple[int, float], tuple[int, float]]:
    d = data.disadvantaged[attribute]
    return ((int(d.sum()), float(data.raw_y[d].mean())),
            (int((~d).sum()), float(data.raw_y[~d].mean())))


@pytest.mark.parametrize("name", NAMES)
def test_every_shipped_regression_manifest_loads_as_its_kind(name: str) -> None:
    """Each manifest is a task: regression manifest with a declared margin and units."""
    path = AUDITS / name / "audit.yaml"
    assert manifest_task_kind(path) is REGRESSION
    manifest = load_regression_manifest(path)
    assert manifest.name == name and manifest.target.units
    assert (AUDITS / name / "README.md").is_file()


def test_cps1985_reproduces_the_published_wages(mirror_extra: Path) -> None:
    """534 workers: female 245 earning 7.879 an hour, male 289 earning 9.995; a mean log-wage
    gap of -0.2312; ethnicity cauc 440, hispanic 27, other 67."""
    data = _audit("cps1985_wages", mirror_extra)
    (n_f, mean_f), (n_m, mean_m) = _means(data, "sex")
    assert (n_f, n_m, round(mean_f, 3), round(mean_m, 3)) == (245, 289, 7.879, 9.995)
    sex = data.disadvantaged["sex"]
    assert round(data.y[sex].mean() - data.y[~sex].mean(), 4) == -0.2312
    ethnicity = data.raw["ethnicity"].astype(str).value_counts().to_dict()
    assert ethnicity == {"cauc": 440, "other": 67, "hispanic": 27}


def test_cps1988_reproduces_the_published_gap(mirror_extra: Path) -> None:
    """28,155 workers, 2,232 African-American and 25,923 white; a mean log-wage gap of
    -0.3118."""
    data = _audit("cps1988_wages", mirror_extra)
    race = data.disadvantaged["race"]
    assert (data.y.size, int(race.sum()), int((~race).sum())) == (28155, 2232, 25923)
    assert round(data.y[race].mean() - data.y[~race].mean(), 4) == -0.3118


def test_professor_salaries_reproduce_the_published_means(mirror_extra: Path) -> None:
    """397 professors: 39 women earning 101,002.4 on average, 358 men 115,090.4."""
    (n_f, mean_f), (n_m, mean_m) = _means(_audit("professor_salaries", mirror_extra), "sex")
    assert (n_f, n_m, round(mean_f, 1), round(mean_m, 1)) == (39, 358, 101002.4, 115090.4)


def test_teaching_ratings_reproduce_the_published_means(mirror_extra: Path) -> None:
    """463 courses of 94 instructors: female 195 rated 3.901, male 268 4.069; minority 64
    rated 3.892, the others 399 4.015."""
    data = _audit("teaching_ratings", mirror_extra)
    assert data.unit is not None and int(data.unit.max()) + 1 == 94
    sex, minority = _means(data, "sex"), _means(data, "minority")
    assert [(n, round(m, 3)) for n, m in sex] == [(195, 3.901), (268, 4.069)]
    assert [(n, round(m, 3)) for n, m in minority] == [(64, 3.892), (399, 4.015)]


def test_the_professors_gap_shrinks_within_rank(mirror_extra: Path) -> None:
    """The raw salary gap (-14,088) beside the gap within rank (about a third of it) and
    within discipline (about all of it)."""
    data = _audit("professor_salaries", mirror_extra)
    sex = data.disadvantaged["sex"]
    within = {name: strata_mean_gap(data.y, sex, codes, n_resamples=50, n_permutations=50,
                                    seed=0) for name, codes in data.strata.items()}
    assert within["rank"].raw_gap == pytest.approx(101002.41025641 - 115090.41899441)
    assert within["rank"].value == pytest.approx(-4942.95, abs=0.01)
    assert within["discipline"].value == pytest.approx(-14029.13, abs=0.01)
    assert np.isfinite(within["rank"].wald_p_value)
