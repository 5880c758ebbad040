"""The synced runs in the real MLflow UI (``mlflow server`` and headless Chromium on 127.0.0.1,
driven by ``bench/mlflow_ui.py``): readable child names and S0 vs S3 differing by strategy.

Slow (a server start and a browser, ~30 s); run with ``-m slow``.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.slow, pytest.mark.integration,
              pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="no chromium")]


def _bench():
    path = REPO / "bench" / "mlflow_ui.py"
    spec = importlib.util.spec_from_file_location("bench_mlflow_ui", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory):
    """What the UI shows of the committed german_credit_lending results."""
    results = tmp_path_factory.mktemp("ui") / "results"
    shutil.copytree(REPO / "results" / "german_credit_lending", results / "german_credit_lending")
    return _bench().check(results, results.parent / "shots", audit="german_credit_lending")


def test_runs_table_shows_short_sortable_child_names(findings) -> None:
    """The runs table lists the 15 fairness children as '<audit> S<k> <family> <attribute>'."""
    expected = [f"german_credit_lending S{k} {family} age" for k in range(5)
                for family in ("GB", "LR", "RF")]
    assert list(findings.child_names) == expected


def test_metric_headers_are_the_short_keys(findings) -> None:
    """The chosen metric columns' headers read as their short keys, each distinct."""
    assert {"dp", "dp.lo", "dp.hi", "dp.q_audit", "eopp", "acc"} <= set(findings.headers)


def test_compare_view_differs_by_strategy(findings) -> None:
    """MLflow's compare view of S0 and S3 of one cell shows strategy as a differing param."""
    assert findings.differing_params == ("strategy: baseline vs in_processing",
                                         "strategy_code: S0 vs S3")


def test_the_readme_address_opens_on_one_audits_cells(findings) -> None:
    """The address `faircode track` prints opens, nothing clicked, on the 15 S0-S4 x family
    children of the first audit's first attribute, counted right, names uncut, dp and its
    interval as columns."""
    assert list(findings.first_names) == [f"german_credit_lending S{k} {family} age"
                                           for k in range(5) for family in ("GB", "LR", "RF")]
    assert findings.first_count == "15 matching runs"
    assert findings.first_cut == ()
    assert {"dp", "dp.lo", "dp.hi", "dp.q_audit", "acc"} <= set(findings.first_headers)
