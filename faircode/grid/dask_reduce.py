"""A map-reduce over the shards of a Parquet table on a Dask cluster, beside the grid's backend.

The grid's Dask backend (:mod:`faircode.grid.scheduler`) runs fits; this runs counts: a table
(one Parquet file or a folder of files) is cut into shards of whole row groups
(:func:`table_shards`); :func:`map_shards` runs one function per shard on the workers (the
shared argument -- a log reader, a key index -- scattered once to every worker) and
:func:`pick_buckets` and :func:`reduce_buckets` pool, per bucket, the parts every shard emitted
for it, each bucket on one worker.  What is counted and how parts combine is the caller's
(:mod:`faircode.evaluate.sharded`); nothing here knows a statistic.

Design decisions
----------------
* **The first failing shard in table order** raises its error in the driver, whatever finished
  first, so a bad row's one-line message does not depend on the workers.
* **Parts are picked where they are**: a shard's result stays on its worker, and a small task
  there (``pick``) hands each bucket only its own part, so no shard's result travels whole.
* **Nothing outlives its use**: every part of a shard is picked at once and the shard's result
  dropped, so a part is freed when its bucket's reducer has run, not kept by its shard's whole
  result (one worker's peak on a 10⁸-row log: 7,610 MiB before, 5,962 MiB after;
  ``bench/log_scale.py dask``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faircode.audit.table_file import TableFile
from faircode.core.config import check_scheduler
from faircode.grid.scheduler import CONNECT_TIMEOUT, SchedulerError

__all__ = ["SHARD_ROWS", "Shard", "connect", "map_shards", "pick_buckets", "reduce_buckets",
           "table_shards"]

SHARD_ROWS = 2_000_000
"""About this many rows per shard (whole row groups)."""


def connect(address: str) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address`` (one line if it does not answer)."""
    from distributed import Client

    check_scheduler(address, where="--scheduler")
    try:
        return Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise SchedulerError(
            f"--scheduler: cannot connect to a dask scheduler at {address!r}: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None


@dataclass(frozen=True, slots=True)
class Shard:
    """Consecutive row groups of one Parquet file, its first row being data row ``start``."""

    file: Path
    row_groups: tuple[int, ...]
    start: int


def table_shards(table: TableFile, *, rows: int = SHARD_ROWS) -> list[Shard]:
    """The table's row groups cut into shards of about ``rows`` rows, in table order (a shard
    never spans two files)."""
    shards: list[Shard] = []
    file: Path | None = None
    groups: list[int] = []
    start = size = offset = 0
    for path, group, n in table.row_groups():
        if path != file:
            if groups and file is not None:
                shards.append(Shard(file, tuple(groups), start))
            file, groups, start, size, offset = path, [], 0, 0, 0
        if groups and size + n > rows:
            shards.append(Shard(path, tuple(groups), start))
            groups, start, size = [], offset, 0
        groups.append(group)
        size += n
        offset += n
    if groups and file is not None:
        shards.append(Shard(file, tuple(groups), start))
    return shards


def map_shards(client: Any, fn: Callable[..., Any], shared: Any, shards: Sequence[Shard],
               *args: Any) -> list[Any]:
    """``fn(shared, shard, *args)`` for every shard on ``client`` (futures, in shard order);
    raises the error of the first failing shard in order, cancelling the rest."""
    shipped = client.scatter(shared, broadcast=True, hash=False)
    futures = [client.submit(fn, shipped, s, *args, pure=False) for s in shards]
    for future in futures:
        try:
            future.result()
        except Exception:
            for other in futures:
                other.cancel()
            raise
    return futures


def pick_buckets(client: Any, futures: Sequence[Any], pick: Callable[..., Any],
                 n_buckets: int) -> list[list[Any]]:
    """Per bucket ``b``, ``pick(r, b)`` of every shard result ``r`` (futures, run where ``r``
    is).  Pick every kind of part a shard emits, then drop ``futures``: each shard's whole
    result is freed as soon as it is picked, its parts living on until their bucket is
    reduced."""
    return [[client.submit(pick, f, b, pure=False) for f in futures] for b in range(n_buckets)]


def reduce_buckets(client: Any, picked: list[list[Any]], reduce: Callable[..., Any],
                   *args: Any) -> list[Any]:
    """Per bucket: ``reduce(*args, *its parts)`` (futures).  Consumes ``picked``, so no part
    outlives its reducer."""
    out = []
    while picked:
        out.append(client.submit(reduce, *args, *picked.pop(0), pure=False))
    return out
