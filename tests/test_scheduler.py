"""Tests of the task queue (faircode.grid.scheduler): order, cost model, data, failures, Dask."""

from __future__ import annotations

import json
import math
import os
import pickle
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from faircode.audit.data import load_audit
from faircode.audit.prepared import PreparedAudit, prepare
from faircode.core.cells import grid_cells
from faircode.core.config import (
    BenchmarkConfig,
    ExecutionConfig,
    MitigationConfig,
    ReplicateConfig,
    params_from_mapping,
)
from faircode.core.errors import ConfigError
from faircode.grid import scheduler
from faircode.grid.fit import fit_audits, grid_tasks
from faircode.grid.scheduler import (
    CostModel,
    Finished,
    ProgressEstimate,
    Task,
    dispatch_order,
    fit_coefficients,
    previous_cell_seconds,
    run_tasks,
)
from faircode.pipeline.cli import main

FAST = {"stats.n_resamples": 60, "stats.n_permutations": 60, "mitigation.max_iter": 5}
TABLES = ("fairness", "performance", "intersectional", "counterfactual")


# ------------------------------------------------------------------ task functions (picklable)


class Counted:
    """Data whose unpickling is counted per process (how often it reached a worker)."""

    loads = 0

    def __init__(self, value: int) -> None:
        self.value = value

    def __reduce__(self) -> tuple[Any, ...]:
        return (_load_counted, (self.value,))


def _load_counted(value: int) -> Counted:
    Counted.loads += 1
    return Counted(value)


def _draw(data: Counted, index: int) -> tuple[float, int, int]:
    """A seeded draw keyed by the task's position, with the worker's pid and unpickle count."""
    value = float(np.random.default_rng([data.value, index]).random())
    return value, os.getpid(), Counted.loads


def _fail_on(data: Counted, index: int) -> int:
    if index == 1:
        raise ArithmeticError(f"task {index} failed")
    return data.value + index


def _tasks(audit: str, n: int, fn: Any = _draw) -> list[Task]:
    return [Task(audit=audit, key=(i,), fn=fn, args=(i,), cost=float(i % 3)) for i in range(n)]


# ------------------------------------------------------------------ order and cost model


def test_dispatch_order_is_longest_first_and_stable_on_ties() -> None:
    """Tasks go out by decreasing cost; equal costs keep the given order."""
    tasks = [Task(audit="a", key=(k,), fn=_draw, args=(), cost=c)
             for k, c in enumerate([1.0, 5.0, 1.0, 7.0, 5.0])]
    assert [t.key[0] for t in dispatch_order(tasks)] == [3, 1, 4, 0, 2]


def test_cost_model_is_a_power_law_of_rows() -> None:
    """expected() is exp(a) * rows ** b with the cell's coefficients."""
    model = CostModel({("in_processing", "random_forest"): (math.log(2.0), 0.5)})
    assert model.expected("in_processing", "random_forest", rows=10_000) == pytest.approx(200.0)
    assert model.expected("baseline", "random_forest", rows=10_000) == 1.0  # unknown cell


def test_previous_seconds_replace_the_model() -> None:
    """A cell timed in a previous run costs what it took then; other cells keep the model."""
    model = CostModel({("baseline", "random_forest"): (0.0, 1.0)},
                      observed={("baseline", "gradient_boosting"): 42.0})
    assert model.expected("baseline", "gradient_boosting", rows=10) == 42.0
    assert model.expected("baseline", "random_forest", rows=10) == pytest.approx(10.0)


def test_fit_coefficients_recovers_an_exact_power_law() -> None:
    """Least squares in log-log space recovers a and b of noise-free timings."""
    samples = [("s", "m", n, 0.01 * n ** 0.7) for n in (100, 1_000, 50_000)]
    a, b = fit_coefficients(samples)[("s", "m")]
    assert a == pytest.approx(math.log(0.01), abs=1e-3)
    assert b == pytest.approx(0.7, abs=1e-3)


def test_default_model_puts_the_exponentiated_gradient_trees_first() -> None:
    """On a healthcare-sized audit the S3 tree cells are the two most expensive."""
    model = CostModel(scheduler.DEFAULT_COEFFICIENTS)
    cells = sorted(scheduler.DEFAULT_COEFFICIENTS,
                   key=lambda c: -model.expected(*c, rows=55_655))
    assert set(cells[:2]) == {("in_processing", "random_forest"),
                              ("in_processing", "gradient_boosting")}


def test_previous_cell_seconds_sums_fit_predict_and_counterfactual(tmp_path: Path) -> None:
    """A run.json's cells give fit + predict + counterfactual seconds; skipped cells none."""
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"cells": [
        {"strategy": "baseline", "model": "random_forest",
         "seconds": {"fit": 1.5, "predict": 0.25, "statistics": 9.0, "counterfactual": 0.25}},
        {"strategy": "post_processing", "model": "random_forest", "seconds": {},
         "skipped": "cannot enforce"},
    ]}))
    assert previous_cell_seconds(run) == {("baseline", "random_forest"): 2.0}
    assert previous_cell_seconds(tmp_path / "missing.json") == {}


def test_progress_eta_scales_remaining_cost_by_observed_speed() -> None:
    """ETA = remaining expected cost x (observed / expected so far) / workers."""
    tasks = [Task(audit="a", key=(i,), fn=_draw, args=(), cost=c)
             for i, c in enumerate([10.0, 10.0, 20.0])]
    estimate = ProgressEstimate(tasks, workers=2)
    assert estimate.eta_seconds() == 20.0  # 40 expected seconds on 2 workers
    estimate.record(Finished(tasks[0], None, seconds=5.0))  # twice as fast as expected
    assert (estimate.done, estimate.total) == (1, 3)
    assert estimate.eta_seconds() == pytest.approx(30.0 * 0.5 / 2)


# ------------------------------------------------------------------ execution


def test_pool_results_equal_inline_results_and_data_reaches_each_worker_once() -> None:
    """Two worker processes return the inline results; each unpickled each audit's data once."""
    tasks = _tasks("a", 6) + _tasks("b", 6)
    data = {"a": Counted(1), "b": Counted(2)}
    inline = run_tasks(tasks, data=data, jobs=1)
    pooled = run_tasks(tasks, data=data, jobs=2)
    assert {k: v[0] for k, v in pooled.items()} == {k: v[0] for k, v in inline.items()}
    worker_pids = {v[1] for v in pooled.values()}
    assert os.getpid() not in worker_pids
    assert {v[2] for v in pooled.values()} == {2}  # both audits, once, in every worker


def test_on_done_sees_every_task_once_in_this_process() -> None:
    """on_done is called once per task with its Finished record."""
    seen: list[Finished] = []
    tasks = _tasks("a", 5)
    run_tasks(tasks, data={"a": Counted(3)}, jobs=1, on_done=seen.append)
    assert sorted(f.task.key for f in seen) == [(i,) for i in range(5)]
    assert all(f.seconds >= 0 for f in seen)


def test_a_failing_task_raises_without_on_error() -> None:
    """Without on_error the task's own exception reaches the caller."""
    with pytest.raises(ArithmeticError, match="task 1 failed"):
        run_tasks(_tasks("a", 3, _fail_on), data={"a": Counted(0)}, jobs=1)


def test_a_failing_task_drops_only_its_audit_with_on_error() -> None:
    """With on_error the failed audit is reported once and the other audit completes."""
    failures: list[tuple[str, str]] = []
    results = run_tasks(
        _tasks("bad", 3, _fail_on) + _tasks("good", 3, _plus),
        data={"bad": Counted(0), "good": Counted(10)}, jobs=2,
        on_error=lambda t, e: failures.append((t.audit, str(e))))
    assert failures == [("bad", "task 1 failed")]
    assert results == {("good", (i,)): 10 + i for i in range(3)}


def _plus(data: Counted, index: int) -> int:
    return data.value + index


def test_duplicate_task_keys_are_rejected() -> None:
    """Two tasks with the same (audit, key) are an error, not a silent overwrite."""
    with pytest.raises(ValueError, match="unique"):
        run_tasks(_tasks("a", 2) + _tasks("a", 1), data={"a": Counted(0)}, jobs=1)


# ------------------------------------------------------------------ the grid through the queue


@pytest.fixture(scope="module")
def insurance(audit_repo) -> PreparedAudit:  # type: ignore[no-untyped-def]
    """The prepared insurance audit."""
    return prepare(load_audit(audit_repo.manifests["insurance_denial"]))


def test_grid_tasks_carry_no_data(insurance: PreparedAudit) -> None:
    """A grid task's function and arguments pickle small: the data travels once per worker."""
    tasks = grid_tasks(insurance, mitigation=MitigationConfig(), replicates=ReplicateConfig())
    assert len(tasks) == len(grid_cells())
    assert max(len(pickle.dumps((t.fn, t.args))) for t in tasks) < 2_000
    assert len(pickle.dumps(insurance)) > 50_000


def _cheap_cells(data: PreparedAudit, config: BenchmarkConfig) -> list[Task]:
    """The grid's tasks without the ExponentiatedGradient tree cells (seconds, not minutes)."""
    return [t for t in grid_tasks(data, mitigation=config.mitigation,
                                  replicates=config.replicates)
            if not (t.key[0] == "in_processing" and t.key[1] != "logistic_regression")]


def test_grid_cells_are_bit_identical_for_workers_and_dispatch_order(
    insurance: PreparedAudit, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """jobs=1, jobs=2 and a shuffled dispatch order give the same predictions, bit for bit."""
    config = BenchmarkConfig(jobs=1).with_params(FAST)
    tasks = _cheap_cells(insurance, config)
    data = {"insurance_denial": insurance}
    one = run_tasks(tasks, data=data, jobs=1)
    two = run_tasks(tasks, data=data, jobs=2)
    order = np.random.default_rng(7).permutation(len(tasks))
    monkeypatch.setattr(scheduler, "dispatch_order", lambda ts: [list(ts)[i] for i in order])
    shuffled = run_tasks(tasks, data=data, jobs=1)  # in this process: no second pool to start
    assert one.keys() == two.keys() == shuffled.keys()
    for key, cell in one.items():
        for other in (two[key], shuffled[key]):
            for name in ("test_score", "test_decision", "train_score"):
                a, b = getattr(cell, name), getattr(other, name)
                assert (a is None and b is None) or np.array_equal(a, b), (key, name)


def test_fit_audits_reports_a_failing_audit_and_keeps_the_other(
    insurance: PreparedAudit, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An audit whose cell fails is reported through on_audit_failed, not returned."""
    import dataclasses

    broken = dataclasses.replace(insurance, manifest=dataclasses.replace(
        insurance.manifest, name="broken"), train_index=insurance.train_index[:0])
    from faircode.core.cells import ModelFamily, Strategy

    monkeypatch.setattr("faircode.core.cells.grid_cells", lambda: [
        (Strategy.BASELINE, ModelFamily.LOGISTIC_REGRESSION)])
    failed: list[str] = []
    out = fit_audits([insurance, broken], mitigation=BenchmarkConfig().with_params({
        **FAST
    }).mitigation, jobs=1,
                     on_audit_failed=lambda name, exc: failed.append(name))
    assert failed == ["broken"]
    assert [p.audit for p in out] == ["insurance_denial"]


# ------------------------------------------------------------------ configuration and CLI


def test_params_run_backend_and_scheduler_build_the_execution_config() -> None:
    """run.backend and run.scheduler land in Params.execution, not in the result config."""
    params = params_from_mapping({"run": {"jobs": 2, "backend": "dask",
                                          "scheduler": "tcp://10.0.0.1:8786"}})
    assert params.execution == ExecutionConfig(backend="dask", scheduler="tcp://10.0.0.1:8786")
    assert params.config == BenchmarkConfig(jobs=2)


@pytest.mark.parametrize(("run", "message"), [
    ({"backend": "spark"},
     r"^params.yaml: run.backend: expected one of local, dask, got 'spark' \(str\)$"),
    ({"backend": "dask"},
     r"^params.yaml: run.scheduler: expected a dask scheduler address such as tcp://host:8786 "
     r"\(run.backend is dask\), got None \(NoneType\)$"),
])
def test_bad_execution_params_name_the_key_path(run: dict, message: str) -> None:
    """A bad backend, or dask without a scheduler, is one line naming params.yaml's key."""
    with pytest.raises(ConfigError, match=message):
        params_from_mapping({"run": run})


@pytest.mark.parametrize("flags", [["--backend", "spark"], ["--backend", "dask"]])
def test_run_with_a_bad_backend_exits_2_with_one_line(
    flags: list[str], fresh_repo: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """`faircode run --backend spark` or dask without a scheduler: exit 2, one stderr line."""
    code = main(["run", "german_credit_lending", "--audits", str(fresh_repo / "audits"), *flags])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("run.")


def test_unreachable_scheduler_exits_2_with_one_line(
    audit_repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A dask scheduler that does not answer: exit 2 and one line naming run.scheduler."""
    monkeypatch.setattr(scheduler, "CONNECT_TIMEOUT", "1s")
    code = main(["run", "insurance_denial", "--audits", str(audit_repo.audits), "--out",
                 str(tmp_path), "--scheduler", "tcp://127.0.0.1:9", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1
    assert err.startswith("run.scheduler: cannot connect to a dask scheduler at "
                          "'tcp://127.0.0.1:9'")


# ------------------------------------------------------------------ Dask against local


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A two-process LocalCluster on 127.0.0.1, closed after the module."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as local:
        yield local.scheduler_address


def _strip_volatile(run: dict[str, Any]) -> dict[str, Any]:
    run = dict(run)
    for key in ("git_commit", "git_dirty", "seconds"):  # the evaluate step's timings
        run.pop(key, None)
    run["cells"] = [{k: v for k, v in c.items() if k != "seconds"} for c in run["cells"]]
    return run


# slow (minutes); tests/test_dask_reduce.py keeps a LocalCluster in the default suite
@pytest.mark.slow
def test_a_two_audit_run_on_a_dask_cluster_writes_the_local_csvs(
    audit_repo, cluster: str, tmp_path: Path,  # type: ignore[no-untyped-def]
    capsys: pytest.CaptureFixture[str],
) -> None:
    """german credit + insurance through the LocalCluster give the local run's files exactly."""
    params = tmp_path / "params.yaml"
    params.write_text("mitigation:\n  max_iter: 5\nstats:\n  n_resamples: 100\n"
                      "  n_permutations: 100\nrun:\n  jobs: 2\n")
    audits = ["german_credit_lending", "insurance_denial"]
    common = ["run", *audits, "--audits", str(audit_repo.audits), "--params", str(params),
              "--quiet"]
    assert main([*common, "--out", str(tmp_path / "local")]) == 0
    assert main([*common, "--out", str(tmp_path / "dask"), "--backend", "dask",
                 "--scheduler", cluster]) == 0
    for audit in audits:
        for table in TABLES:
            local = (tmp_path / "local" / audit / f"{table}.csv").read_bytes()
            assert local == (tmp_path / "dask" / audit / f"{table}.csv").read_bytes()
        runs = [json.loads((tmp_path / side / audit / "run.json").read_text())
                for side in ("local", "dask")]
        assert _strip_volatile(runs[0]) == _strip_volatile(runs[1])
    captured = capsys.readouterr()
    assert "faircode run: 2 audits" in captured.out  # the summary table stays with --quiet
    assert "S3 random_forest: fit" not in captured.err  # no per-cell lines with --quiet


# ------------------------------------------------------------------ numerical configuration


def _other_kernel_shell(monkeypatch: pytest.MonkeyPatch, *, mode: str | None) -> None:
    """This process's environment as a shell that forces Sandybridge (another CPU's choice):
    what the workers it starts inherit."""
    from faircode.core import numerics

    if not numerics.APPLIED.pinned or "avx" not in (numerics.cpu_flags() or ()):
        pytest.skip("needs the pinned configuration and a CPU that runs Sandybridge")
    if mode is None:
        monkeypatch.delenv(numerics.MODE_ENV, raising=False)
    else:
        monkeypatch.setenv(numerics.MODE_ENV, mode)
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Sandybridge")


def test_a_local_worker_under_another_kernel_stops_the_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A pool worker that computes under another OpenBLAS kernel than this process stops the run
    with one line naming both configurations."""
    from faircode.grid._worker_numerics import WorkerNumericsError

    _other_kernel_shell(monkeypatch, mode="native")  # a worker that keeps the shell's kernel
    with pytest.raises(WorkerNumericsError, match=(
            r"^run.backend local: a worker computed a \(\d,\) under OpenBLAS Sandybridge; .*, "
            r"this run computes under OpenBLAS Haswell; numpy dispatch X86_V3;")):
        run_tasks(_tasks("a", 6), data={"a": Counted(1)}, jobs=2)


def _dask_worker(module: str, address: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", module, address, "--nworkers", "1", "--nthreads", "1",
         "--no-dashboard", "--host", "127.0.0.1"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)


def test_only_dask_workers_started_by_faircode_compute_under_its_configuration(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """From a shell that forces another kernel, a plain ``dask worker`` (numpy loaded before
    faircode) is refused, and ``python -m faircode.grid.dask_worker`` computes under the
    declared configuration (its results are accepted)."""
    import operator

    distributed = pytest.importorskip("distributed")
    from faircode.grid._worker_numerics import WorkerNumericsError

    _other_kernel_shell(monkeypatch, mode=None)
    tasks = [Task(audit="a", key=(i,), fn=operator.add, args=(i,), cost=1.0) for i in range(3)]
    execution = lambda address: ExecutionConfig(backend="dask", scheduler=address)  # noqa: E731
    with distributed.LocalCluster(n_workers=0, host="127.0.0.1", dashboard_address=None) as cl, \
            distributed.Client(cl) as client:
        for module, accepted in (("faircode.grid.dask_worker", True),
                                 ("distributed.cli.dask_worker", False)):
            worker = _dask_worker(module, cl.scheduler_address)
            try:
                client.wait_for_workers(1, timeout=120)
                if accepted:
                    done = run_tasks(tasks, data={"a": 10}, jobs=1,
                                     execution=execution(cl.scheduler_address))
                    assert done == {("a", (i,)): 10 + i for i in range(3)}
                else:
                    with pytest.raises(WorkerNumericsError, match=r"^run.backend dask: a worker "
                                       r"computed a .* under OpenBLAS Sandybridge"):
                        run_tasks(tasks, data={"a": 10}, jobs=1,
                                  execution=execution(cl.scheduler_address))
            finally:
                worker.terminate()
                worker.wait(timeout=60)
                client.retire_workers()
                deadline = time.monotonic() + 60
                while client.scheduler_info()["workers"] and time.monotonic() < deadline:
                    time.sleep(0.2)


def test_a_terminated_pool_has_no_manager_thread_left_to_race_the_exit() -> None:
    """``terminate`` returns once the executor's manager thread has ended: left running, it may
    close its wake-up pipe while the interpreter's exit writes to it (an EBADF traceback after
    a run's stop line).  A pool whose manager ends 0.3 s after its shutdown, as one busy
    noticing its killed workers would."""
    import threading

    from faircode.grid._lifetime import terminate

    class Pool:
        def __init__(self) -> None:
            self._processes: dict[int, Any] = {}
            self._stop = threading.Event()
            self._executor_manager_thread = threading.Thread(
                target=lambda: (self._stop.wait(), time.sleep(0.3)), daemon=True)
            self._executor_manager_thread.start()

        def shutdown(self, *, wait: bool, cancel_futures: bool) -> None:
            self._stop.set()

    pool = Pool()
    terminate(pool)  # type: ignore[arg-type]
    assert not pool._executor_manager_thread.is_alive()
