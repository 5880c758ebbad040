"""Executing fit tasks: one queue for every cell of every audit of a run, longest first.

A :class:`Task` is a module-level (picklable) function, the arguments of one call and the audit
whose data the function receives as its first argument, plus its expected cost in seconds.
:func:`run_tasks` runs a list of tasks -- the 15 grid cells of several audits, or any other fits
of an audit, such as re-fits with other seeds -- and returns every result keyed by
``(audit, key)``.  The coordinating process receives every result; workers never write files.

Design decisions
----------------
* **Longest expected first, across all audits, on one pool.**  A run's tasks form one queue
  ordered by decreasing expected cost (:func:`dispatch_order`; ties keep the given order), and
  one pool of warm worker processes takes them in that order.  With audits run one after
  another, each in its own pool, every audit waits for its own longest cell while a core idles;
  greedy dispatch to the first free worker ends within ``total / workers + longest task``, and
  longest first within 4/3 of the best possible schedule; in practice it comes close to the lower
  bound ``max(longest task, total / workers)`` (``bench/grid.py`` measures the ratio).
* **Each audit's data reaches a worker once**, not once per task: the local pool's workers
  receive every audit's data, pickled once in the coordinating process, when they start
  (the initializer); a Dask run scatters each audit's data once and passes the future to its
  tasks, so a worker fetches it the first time it runs a task of that audit.
* **Results do not depend on the backend, the worker count or the order**: every stochastic step
  of a task is seeded by the task's position (its key), never by when or where it runs (see
  :mod:`faircode.grid.fit`).  Local workers run single-threaded numerical libraries (as Dask's
  nanny workers do), so the processes never oversubscribe the cores.  Every worker's result comes
  with the kernels that computed it, and one computed under another numerical configuration than
  this process stops the run (:mod:`faircode.grid._worker_numerics`).
* **The cost model is for ordering only.**  :class:`CostModel` predicts a grid cell's seconds from
  its training rows, strategy and model family (coefficients fitted on the committed
  ``results/*/run.json`` timings, :data:`DEFAULT_COEFFICIENTS`); the per-cell seconds of a
  previous ``run.json`` of the same audit replace the prediction when present.  A wrong
  estimate can only make the run slower, never change a number.
* ``jobs = 1``, a single task, or a queue expected to take less than :data:`INLINE_SECONDS` in
  all runs in this process, in dispatch order: starting a pool (spawned workers importing the
  numerical stack and receiving the data) would cost more than it saves.
* **No worker outlives the coordinating process** (:mod:`faircode.grid._lifetime`): a local worker
  dies with its parent (``prctl(PR_SET_PDEATHSIG)`` on Linux, a ``getppid`` watchdog elsewhere),
  and SIGTERM/SIGINT during the pool kill the workers and exit ``128 + signal``
  (:class:`Stopped`); the multiprocessing resource tracker then exits by itself.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import pickle
import signal
import sys
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faircode.core.config import ExecutionConfig
from faircode.core.errors import FaircodeError
from faircode.grid._lifetime import SignalStop, Stopped, follow_parent, terminate
from faircode.grid._worker_numerics import Configuration, WorkerCheck, checked

__all__ = [
    "DEFAULT_COEFFICIENTS",
    "CostModel",
    "Finished",
    "ProgressEstimate",
    "SchedulerError",
    "Stopped",
    "Task",
    "TaskKey",
    "dispatch_order",
    "previous_cell_seconds",
    "run_tasks",
]

TaskKey = tuple[str, tuple[Hashable, ...]]
"""``(audit, key)``: the identity of a task within a run."""

CONNECT_TIMEOUT = "10s"

INLINE_SECONDS = 5.0
"""A queue whose tasks are expected to take less than this in all runs in this process."""


class SchedulerError(FaircodeError):
    """The execution backend cannot be used (e.g. no dask scheduler at the configured address)."""


@dataclass(frozen=True, slots=True)
class Task:
    """One call ``fn(data[audit], *args)`` of a run, with its expected cost.

    Parameters
    ----------
    audit
        Which audit's data the function receives as its first argument.
    key
        Unique within the audit; ``(strategy, family)`` for a grid cell, longer for further fits.
    fn
        A module-level (picklable) function.
    args
        Its further arguments (picklable; kept small -- the data travels once per worker).
    cost
        Expected seconds (:class:`CostModel`), for longest-first dispatch and the progress ETA.
    """

    audit: str
    key: tuple[Hashable, ...]
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    cost: float

    def __post_init__(self) -> None:
        if not isinstance(self.audit, str) or not self.audit:
            raise ValueError(f"Task.audit: expected an audit name, got {self.audit!r}")
        if not isinstance(self.key, tuple):
            raise ValueError(f"Task.key: expected a tuple, got {self.key!r}")
        if not isinstance(self.cost, int | float) or not math.isfinite(self.cost) \
                or self.cost < 0:
            raise ValueError(f"Task.cost: expected finite seconds >= 0, got {self.cost!r}")

    @property
    def id(self) -> TaskKey:
        """``(audit, key)``."""
        return (self.audit, self.key)


@dataclass(frozen=True, slots=True)
class Finished:
    """A task's result as the coordinating process receives it, with the task's wall seconds."""

    task: Task
    result: Any
    seconds: float


def dispatch_order(tasks: Iterable[Task]) -> list[Task]:
    """Return ``tasks`` by decreasing expected cost; equal costs keep their given order."""
    return sorted(tasks, key=lambda t: -t.cost)


# ------------------------------------------------------------------------------ cost model

DEFAULT_COEFFICIENTS: dict[tuple[str, str], tuple[float, float]] = {
    ("baseline", "logistic_regression"): (-3.195, 0.141),
    ("baseline", "random_forest"): (-5.549, 0.630),
    ("baseline", "gradient_boosting"): (-6.327, 0.703),
    ("unawareness", "logistic_regression"): (-5.926, 0.282),
    ("unawareness", "random_forest"): (-6.361, 0.697),
    ("unawareness", "gradient_boosting"): (-6.068, 0.663),
    ("unawareness_proxy_removal", "logistic_regression"): (-5.810, 0.264),
    ("unawareness_proxy_removal", "random_forest"): (-6.013, 0.640),
    ("unawareness_proxy_removal", "gradient_boosting"): (-5.922, 0.620),
    ("in_processing", "logistic_regression"): (-1.202, 0.124),
    ("in_processing", "random_forest"): (-0.191, 0.414),
    ("in_processing", "gradient_boosting"): (-2.685, 0.633),
    ("post_processing", "logistic_regression"): (-5.342, 0.342),
    ("post_processing", "random_forest"): (-5.395, 0.560),
    ("post_processing", "gradient_boosting"): (-5.328, 0.539),
}
"""``(strategy, family) -> (a, b)`` of ``seconds = exp(a) * train_rows ** b``: least squares of
``log seconds`` (fit + predict + counterfactual) on ``log train_rows`` over the twelve committed
``results/<audit>/run.json`` (commit 6144190, ``run.jobs`` 2 on two cores); refit and print with
``python bench/cost_model.py``.  Residual spread: 0.2-1.0 in log seconds (the number of
ExponentiatedGradient iterations varies by audit), ample to put the S3 tree cells first."""


@dataclass(frozen=True, slots=True)
class CostModel:
    """Expected seconds of a grid cell from its training rows, strategy and model family.

    ``coefficients`` maps ``(strategy, family)`` to ``(a, b)`` of ``exp(a) * rows ** b``;
    ``observed`` maps ``(strategy, family)`` to the seconds a previous run took on the same
    audit, which replace the prediction (:func:`previous_cell_seconds`).
    """

    coefficients: Mapping[tuple[str, str], tuple[float, float]]
    observed: Mapping[tuple[str, str], float] | None = None

    def expected(self, strategy: str, family: str, *, rows: int) -> float:
        """Expected seconds of cell ``(strategy, family)`` on ``rows`` training rows."""
        cell = (str(strategy), str(family))
        if self.observed is not None and cell in self.observed:
            return self.observed[cell]
        a, b = self.coefficients.get(cell, (0.0, 0.0))
        return math.exp(a) * max(rows, 1) ** b


def fit_coefficients(
    samples: Iterable[tuple[str, str, int, float]],
) -> dict[tuple[str, str], tuple[float, float]]:
    """Least-squares ``(a, b)`` of ``log seconds = a + b log rows`` per ``(strategy, family)``.

    ``samples`` are ``(strategy, family, train_rows, seconds)``; a cell with fewer than two
    distinct row counts gets ``b = 0`` (its mean log seconds).
    """
    import numpy as np

    by_cell: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for strategy, family, rows, seconds in samples:
        by_cell.setdefault((strategy, family), []).append(
            (math.log(max(rows, 1)), math.log(max(seconds, 1e-3))))
    out = {}
    for cell, points in by_cell.items():
        x, y = np.array(points).T
        if np.unique(x).size < 2:
            out[cell] = (float(y.mean()), 0.0)
            continue
        b, a = np.polyfit(x, y, 1)
        out[cell] = (round(float(a), 3), round(float(b), 3))
    return out


def previous_cell_seconds(run_json: Path) -> dict[tuple[str, str], float]:
    """Per-cell seconds (fit + predict + counterfactual) of a previous ``run.json``, if any.

    Ordering hints only: a missing or unreadable file gives ``{}`` (never an error), since no
    number of the run depends on it.  Skipped cells are left out.
    """
    try:
        record = json.loads(run_json.read_text(encoding="utf-8"))
        cells = record["cells"]
        return {
            (str(c["strategy"]), str(c["model"])): float(sum(
                c["seconds"].get(k, 0.0) for k in ("fit", "predict", "counterfactual")))
            for c in cells if not c.get("skipped")
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


# ------------------------------------------------------------------------------ progress


class ProgressEstimate:
    """Cells done / total and the remaining wall time the cost model expects.

    The ETA is the remaining expected cost, scaled by the observed / expected seconds of the
    tasks done so far (the machine's speed relative to the model), divided by the workers.
    """

    def __init__(self, tasks: Sequence[Task], *, workers: int) -> None:
        self.total = len(tasks)
        self.workers = max(1, workers)
        self.done = 0
        self._remaining_cost = float(sum(t.cost for t in tasks))
        self._done_cost = 0.0
        self._done_seconds = 0.0

    def record(self, finished: Finished) -> None:
        """Count ``finished`` as done."""
        self.done += 1
        self._remaining_cost = max(0.0, self._remaining_cost - finished.task.cost)
        self._done_cost += finished.task.cost
        self._done_seconds += finished.seconds

    def eta_seconds(self) -> float:
        """Expected wall seconds until every task is done."""
        scale = self._done_seconds / self._done_cost if self._done_cost > 0 else 1.0
        return self._remaining_cost * scale / self.workers


# ------------------------------------------------------------------------------ execution

_WORKER_DATA: dict[str, Any] = {}
"""In a local worker process: every audit's data, installed once by :func:`_install`."""


def _install(payload: bytes, parent: int) -> None:
    """Local worker initializer: die with ``parent``; unpickle every audit's data once; one
    thread per library."""
    from threadpoolctl import threadpool_limits

    follow_parent(parent)
    threadpool_limits(1)
    _WORKER_DATA.update(pickle.loads(payload))


def _timed(fn: Callable[..., Any], data: Any, *args: Any) -> tuple[Any, float]:
    """Run ``fn(data, *args)``; return its result and wall seconds."""
    start = time.perf_counter()
    result = fn(data, *args)
    return result, time.perf_counter() - start


def _run_local(audit: str, fn: Callable[..., Any],
               args: tuple[Any, ...]) -> tuple[Any, float, Configuration]:
    """In a local worker: run a task on the audit's installed data (and say under which kernels)."""
    return checked(_timed, fn, _WORKER_DATA[audit], *args)


OnStart = Callable[[Sequence[Task], int], None]
OnDone = Callable[[Finished], None]
OnError = Callable[[Task, BaseException], None]


def run_tasks(
    tasks: Sequence[Task],
    *,
    data: Mapping[str, Any],
    jobs: int,
    execution: ExecutionConfig | None = None,
    on_start: OnStart | None = None,
    on_done: OnDone | None = None,
    on_error: OnError | None = None,
) -> dict[TaskKey, Any]:
    """Run every task, longest expected first, and return the results keyed by ``(audit, key)``.

    Parameters
    ----------
    tasks
        The run's tasks, of any audits of ``data``; ``(audit, key)`` must be unique.
    data
        Each audit's data (the first argument of its tasks), shipped once per worker.
    jobs
        Local worker processes (``backend: local``); Dask uses the cluster's workers.
    execution
        The backend (:class:`~faircode.core.config.ExecutionConfig`; default local).
    on_start
        Called with the dispatch order and the number of workers once the workers are ready.
    on_done
        Called in this process with each :class:`Finished` task, in completion order.
    on_error
        Without it, the first failing task cancels the rest and its exception is raised.  With
        it, ``on_error(task, exception)`` is called, the failed task's audit's pending tasks are
        dropped, and the other audits' tasks go on (their results are returned).

    Raises
    ------
    SchedulerError
        The Dask scheduler cannot be reached.
    Stopped
        SIGTERM or SIGINT arrived while a local pool ran; its workers are killed.
    """
    execution = execution or ExecutionConfig()
    order = dispatch_order(tasks)
    ids = [t.id for t in order]
    if len(set(ids)) != len(ids):
        raise ValueError("run_tasks: expected unique (audit, key) tasks, got duplicates")
    missing = sorted({t.audit for t in order} - set(data))
    if missing:
        raise ValueError(f"run_tasks: no data for audit(s) {', '.join(missing)}")
    if execution.backend == "dask":
        assert execution.scheduler is not None  # ExecutionConfig guarantees it
        return _run_dask(order, data=data, address=execution.scheduler, on_start=on_start,
                         on_done=on_done, on_error=on_error)
    workers = max(1, min(jobs, len(order)))
    if workers == 1 or sum(t.cost for t in order) < INLINE_SECONDS:
        return _run_inline(order, data=data, on_start=on_start, on_done=on_done,
                           on_error=on_error)
    return _run_pool(order, data=data, workers=workers, on_start=on_start, on_done=on_done,
                     on_error=on_error)


class _Collector:
    """Results, callbacks and failure handling shared by every backend."""

    def __init__(self, on_done: OnDone | None, on_error: OnError | None,
                 backend: str = "local") -> None:
        self.results: dict[TaskKey, Any] = {}
        self.failed: set[str] = set()
        self.on_done, self.on_error = on_done, on_error
        self.numerics = WorkerCheck(backend)

    def done(self, task: Task, result: Any, seconds: float,
             configuration: Configuration | None = None) -> None:
        if configuration is not None:  # a worker's result: computed under this run's kernels?
            self.numerics.check(configuration, task=f"{task.audit} {task.key}")
        if task.audit in self.failed:
            return
        self.results[task.id] = result
        if self.on_done is not None:
            self.on_done(Finished(task, result, seconds))

    def error(self, task: Task, exc: BaseException) -> None:
        """Record a failure (or re-raise it when there is no ``on_error``)."""
        if self.on_error is None:
            raise exc
        if task.audit in self.failed:
            return
        self.failed.add(task.audit)
        self.results = {k: v for k, v in self.results.items() if k[0] != task.audit}
        self.on_error(task, exc)


def _run_inline(order: Sequence[Task], *, data: Mapping[str, Any], on_start: OnStart | None,
                on_done: OnDone | None, on_error: OnError | None) -> dict[TaskKey, Any]:
    collector = _Collector(on_done, on_error)
    if on_start is not None:
        on_start(order, 1)
    for task in order:
        if task.audit in collector.failed:
            continue
        try:
            result, seconds = _timed(task.fn, data[task.audit], *task.args)
        except Exception as exc:
            collector.error(task, exc)
            continue
        collector.done(task, result, seconds)
    return collector.results


def _run_pool(order: Sequence[Task], *, data: Mapping[str, Any], workers: int,
              on_start: OnStart | None, on_done: OnDone | None,
              on_error: OnError | None) -> dict[TaskKey, Any]:
    needed = {t.audit for t in order}
    payload = pickle.dumps({a: d for a, d in data.items() if a in needed},
                           protocol=pickle.HIGHEST_PROTOCOL)
    collector = _Collector(on_done, on_error)
    # spawn: no fork of a process that may run threads (progress display, BLAS); the data
    # travels in the initializer, once per worker.
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_install, initargs=(payload, os.getpid()))
    stop = SignalStop()  # SIGTERM/SIGINT: kill the workers, exit 128 + signal
    try:
        stop.install()
        if on_start is not None:
            on_start(order, workers)
        # The executor feeds its workers in submission order: submitting longest first is
        # dispatching longest first.
        with stop.held():  # not while submit spawns a worker: it would be left half-started
            pending: dict[Future[tuple[Any, float, Configuration]], Task] = {
                pool.submit(_run_local, t.audit, t.fn, t.args): t for t in order}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                task = pending.pop(future)
                if future.cancelled():
                    continue
                exc = future.exception()
                if exc is not None:
                    collector.error(task, exc)
                    for other, t in pending.items():
                        if t.audit == task.audit:
                            other.cancel()
                    continue
                collector.done(task, *future.result())
    except BaseException as exc:
        stop.restore()
        terminate(pool)
        if isinstance(exc, Stopped):
            print(f"stopped by {signal.Signals(exc.signum).name}: the worker processes are "
                  "killed", file=sys.stderr)
        raise
    stop.restore()
    pool.shutdown(wait=True)
    return collector.results


def _run_dask(order: Sequence[Task], *, data: Mapping[str, Any], address: str,
              on_start: OnStart | None, on_done: OnDone | None,
              on_error: OnError | None) -> dict[TaskKey, Any]:
    try:
        from distributed import Client, as_completed
    except ImportError as exc:  # pragma: no cover - a dependency of faircode
        raise SchedulerError(f"run.backend: dask needs the distributed package ({exc})") from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise SchedulerError(
            f"run.scheduler: cannot connect to a dask scheduler at {address!r}: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    collector = _Collector(on_done, on_error, backend="dask")
    with client:
        needed = list(dict.fromkeys(t.audit for t in order))
        # one scatter per audit; its tasks take the future and a worker fetches the data once
        shipped = {a: client.scatter(data[a], hash=False) for a in needed}
        workers = max(1, sum(client.nthreads().values()))
        if on_start is not None:
            on_start(order, workers)
        futures = {}
        for rank, task in enumerate(order):
            future = client.submit(checked, _timed, task.fn, shipped[task.audit], *task.args,
                                   priority=len(order) - rank, pure=False, retries=0,
                                   key=f"faircode-{task.audit}-{rank}-{time.time_ns()}")
            futures[future] = task
        for future in as_completed(list(futures), loop=client.loop):
            task = futures[future]
            if future.cancelled():
                continue
            if future.status == "error":
                try:
                    future.result()
                except Exception as exc:
                    collector.error(task, exc)
                for other, t in futures.items():
                    if t.audit == task.audit and not other.done():
                        other.cancel()
                continue
            collector.done(task, *future.result())
    return collector.results
