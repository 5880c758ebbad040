"""Auditing decisions read as a stream of chunks: a decision log, or a predictions file joined to
an audit -- counted in bounded memory, scored once, the tables of the in-memory path.

* :func:`audit_log` -- a declared log that carries its own groups
  (:mod:`faircode.audit.logs`): every chunk's rows are counted into a
  :class:`~faircode.stats.tally.Tally` (:class:`~faircode.stats.accumulate.TallyBuilder`); the
  tally is scored by :func:`faircode.evaluate.counted.score_counts` as the log's system on every
  row.  ``in_memory=True`` reads every row first and tallies the arrays at once
  (:func:`faircode.stats.tally.tally_rows`): the path the streamed bytes are checked against.
* :func:`audit_predictions` -- a predictions file joined on a key to an audit loaded in memory
  (:class:`~faircode.audit.predictions_file.PredictionsReader`): each chunk's keys are looked up
  in the audit's row index and its groups, labels and units read at those positions.  It gives
  the tables of :func:`faircode.evaluate.deployed.score_given` on the same file, and with a
  score or a rank column the ranking view (:mod:`faircode.evaluate.ranking`; its ordering needs
  every audited row, so it keeps one number and one decision per audited row, not per row of
  the file).
* ``shards``/``client``: the same counting as a Dask reduction over the log's Parquet shards
  (:func:`faircode.grid.dask_reduce.dask_tally`); the results do not depend on the workers.

Design decisions
----------------
* **Two passes where units repeat and a score is binned**: the calibration bins are quantiles
  of every score, and a unit's vector over the bins is known only after them, so the rows are
  read a second time for that histogram (:class:`~faircode.stats.accumulate.UnitBinBuilder`);
  everything else is one pass.
* **Nothing is written before the last row is checked**: a bad row anywhere raises before any
  table exists, as in the in-memory path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from faircode.audit.data import AuditData
from faircode.audit.logs import LogChunk, LogReader, LogRecord
from faircode.audit.manifest import Manifest
from faircode.audit.predictions_file import PredictionsReader
from faircode.audit.table_file import ROWS, TableFile
from faircode.core.config import DegenerateConfig, StatsConfig, VerdictsConfig
from faircode.core.errors import ConfigError
from faircode.evaluate.counted import score_counts
from faircode.evaluate.deployed import DEPLOYED, SYSTEM_KEY, claimed
from faircode.evaluate.ranking import RankedRows, ranking_tables
from faircode.evaluate.score import Rows, cell_result
from faircode.evaluate.stratified import strata_rows
from faircode.evaluate.tables import AuditResults, assemble
from faircode.stats.accumulate import BUDGET, TallyBuilder, UnitBinBuilder
from faircode.stats.tally import Tally, tally_rows

__all__ = ["RowChunk", "audit_log", "audit_predictions", "counted_stream"]


class RowChunk(Protocol):
    """What a chunk gives the counting: label, decision, masks, unit ids, score per row."""

    @property
    def y(self) -> np.ndarray: ...
    @property
    def decision(self) -> np.ndarray: ...
    @property
    def masks(self) -> tuple[np.ndarray, ...]: ...
    @property
    def units(self) -> np.ndarray | None: ...
    @property
    def score(self) -> np.ndarray | None: ...


@contextmanager
def counted_stream(attributes: tuple[str, ...], chunks: Callable[[], Iterable[RowChunk]], *,
                   units: bool, scale: str | None, budget: int = BUDGET,
                   folder: Path | None = None) -> Iterator[Tally]:
    """The tally of every chunk of ``chunks()`` (called twice when units repeat and a score is
    binned); spilled records live until the ``with`` block ends."""
    with TallyBuilder(attributes, units=units, scores=scale is not None, budget=budget,
                      folder=folder) as builder:
        for chunk in chunks():
            builder.add(chunk.y, chunk.decision, chunk.masks, units=chunk.units,
                        score=chunk.score)
            del chunk  # before the next chunk is read
        tally = builder.finish()
        if scale is not None:
            tally = tally.with_bins(scale=scale)
            if tally.units is not None:
                second = UnitBinBuilder(tally, budget=budget, folder=folder)
                for chunk in chunks():
                    assert chunk.units is not None and chunk.score is not None
                    second.add(chunk.y, chunk.masks, units=chunk.units, score=chunk.score)
                    del chunk
                tally = second.finish()
        yield tally


def score_given_tally(tally: Tally, manifest: Manifest, *, name: str, rule: str,
                      stats: StatsConfig, degenerate: DegenerateConfig,
                      verdicts: VerdictsConfig | None = None,
                      row_set: str = "all", strata: Strata | None = None) -> AuditResults:
    """A given system's tally as its own tables, BH family and verdicts (the tables of
    :func:`faircode.evaluate.deployed.score_given`; ``row_set`` names the rows counted;
    ``strata``: the rows a declared stratum's gap is computed from)."""
    counted = score_counts(
        tally, manifest.protected_attributes, favourable=manifest.target.favourable,
        label={"strategy": DEPLOYED, "model": name}, key=SYSTEM_KEY, rule=None,
        objective=f"given ({rule})" if rule else "given", stats=stats, degenerate=degenerate,
        master=manifest.random_state, row_set=row_set, positive=manifest.target.positive())
    label = {"strategy": DEPLOYED, "model": name}
    within = [] if strata is None else strata_rows(
        manifest, strata.yhat_fav(manifest.target.favourable), strata.masks, strata.codes,
        label, stats=stats, master=manifest.random_state, key=SYSTEM_KEY)
    return claimed(assemble(manifest.name, [cell_result(DEPLOYED, name, counted,
                                                        stratified=Rows.of(within))],
                            rule=None, alpha=stats.alpha), stats=stats, verdicts=verdicts)


class Strata:
    """The row-level values a declared stratum's gap needs, collected chunk by chunk (the
    counts cannot hold them): decision, attribute masks and stratum codes per row."""

    def __init__(self, reader: LogReader) -> None:
        self.reader = reader
        self._parts: list[LogChunk] = []

    def keep(self, chunks: Iterable[LogChunk]) -> Iterator[LogChunk]:
        """Pass ``chunks`` on, keeping what the stratified gap reads of each."""
        for chunk in chunks:
            self._parts.append(LogChunk(chunk.y[:0], chunk.decision, chunk.masks, None, None,
                                        chunk.strata))
            yield chunk

    def yhat_fav(self, favourable: int) -> np.ndarray:
        """The decisions, oriented: 1 = the favourable outcome."""
        decision = np.concatenate([p.decision for p in self._parts])
        return decision if favourable == 1 else (1 - decision).astype(np.int8)

    @property
    def masks(self) -> list[np.ndarray]:
        """Each attribute's disadvantaged mask per row."""
        n = len(self.reader.manifest.protected_attributes)
        return [np.concatenate([p.masks[a] for p in self._parts]) for a in range(n)]

    @property
    def codes(self) -> dict[str, np.ndarray]:
        """Each stratum's code per row, by name (levels in sorted order of their text)."""
        ranks = self.reader.stratum_ranks()
        return {s.name: ranks[j][np.concatenate([p.strata[j] for p in self._parts])]
                for j, s in enumerate(self.reader.manifest.strata)}


def audit_log(
    manifest: Manifest,
    *,
    stats: StatsConfig,
    degenerate: DegenerateConfig,
    verdicts: VerdictsConfig | None = None,
    chunk_rows: int = ROWS,
    budget: int = BUDGET,
    in_memory: bool = False,
    client: Any = None,
    shard_rows: int | None = None,
    table: TableFile | None = None,
) -> tuple[LogRecord, AuditResults]:
    """Audit the declared log ``manifest`` (:func:`faircode.audit.log_declaration.load_log`):
    its system's decisions on every kept row, streamed (default), in memory, or on a Dask
    ``client`` (in shards of about ``shard_rows`` rows of whole Parquet row groups; default
    :data:`~faircode.grid.dask_reduce.SHARD_ROWS`).
    ``table``: the rows (a DataFrame's, :func:`faircode.audit.table_file.frame_table`) instead
    of the log's file.

    With declared strata the decisions, masks and stratum codes are also kept per row (a few
    bytes each) for the gap within them, which is row-level; they cannot be sharded."""
    reader = LogReader(manifest, chunk_rows=chunk_rows, table=table)
    strata = Strata(reader) if manifest.strata else None
    if strata is not None and client is not None:
        raise ConfigError(f"{manifest.file}: strata: expected no strata on a Dask scheduler "
                          "(the gap within strata is row-level), got "
                          f"{', '.join(s.name for s in manifest.strata)}")
    system = manifest.system
    assert system is not None
    scale = None if system.score is None else system.score.scale
    attributes = tuple(a.name for a in manifest.protected_attributes)
    if client is not None:
        from faircode.evaluate.sharded import dask_log_tally

        tally, record = dask_log_tally(client, reader, scale=scale, shard_rows=shard_rows,
                                       budget=budget)
        results = score_given_tally(tally, manifest, name=system.name, rule=reader.record.system
                                    .rule, stats=stats, degenerate=degenerate,
                                     verdicts=verdicts)
        return record, results
    def chunks() -> Iterable[LogChunk]:
        return reader.chunks() if strata is None else strata.keep(reader.chunks())

    if in_memory:
        parts = list(chunks())
        tally = _tally_all(attributes, parts, scale=scale)
        return reader.record, score_given_tally(tally, manifest, name=system.name,
                                                rule=reader.record.system.rule, stats=stats,
                                                degenerate=degenerate, verdicts=verdicts,
                                                strata=strata)
    with counted_stream(attributes, chunks, units=manifest.unit is not None,
                        scale=scale, budget=budget) as tally:
        results = score_given_tally(tally, manifest, name=system.name,
                                    rule=reader.record.system.rule, stats=stats,
                                    degenerate=degenerate, verdicts=verdicts, strata=strata)
    return reader.record, results


def _tally_all(attributes: tuple[str, ...], parts: list[LogChunk], *,
               scale: str | None) -> Tally:
    """The in-memory tally: every chunk's rows concatenated, counted at once."""
    def joined(name: str) -> np.ndarray | None:
        values = [getattr(p, name) for p in parts]
        return None if values[0] is None else np.concatenate(values)

    masks = [np.concatenate([p.masks[a] for p in parts]) for a in range(len(attributes))]
    y, decision = joined("y"), joined("decision")
    assert y is not None and decision is not None
    return tally_rows(attributes, y, decision, masks, units=joined("units"),
                      score=joined("score"), scale=scale)


class _Joined:
    """A predictions chunk joined to the audit: the audit's rows at its positions."""

    def __init__(self, data: AuditData, positions: np.ndarray, decision: np.ndarray,
                 score: np.ndarray | None) -> None:
        self.y = data.y[positions]
        self.masks = tuple(data.disadvantaged[a.name][positions]
                           for a in data.manifest.protected_attributes)
        self.units = None if data.unit is None else data.unit[positions]
        self.decision, self.score = decision, score


@dataclass(frozen=True, slots=True)
class StreamedPredictions:
    """A predictions file's audit: its tables and which audit rows the file covers."""

    results: AuditResults
    covered: np.ndarray
    """Per audit row, whether the file has a row for it (audited or not)."""


def audit_predictions(
    data: AuditData,
    reader: PredictionsReader,
    *,
    name: str,
    threshold: float,
    stats: StatsConfig,
    degenerate: DegenerateConfig,
    verdicts: VerdictsConfig | None = None,
    audited: np.ndarray | None = None,
    budget: int = BUDGET,
) -> StreamedPredictions:
    """Audit the predictions of ``reader`` (joined to ``data`` on its key) chunk by chunk: the
    tables :func:`faircode.evaluate.deployed.score_given` gives on the file read whole.

    ``audited`` is the audit rows to count (a sorted array of positions, e.g. the held-out
    ``test_index``; None: every row the file covers); the file's other rows are read, checked
    and left out."""
    rule = "" if reader.decision is not None else f"score > {threshold:g}"
    covered = np.zeros(len(data.y), dtype=bool)
    keep = None
    if audited is not None:
        keep = np.zeros(len(data.y), dtype=bool)
        keep[audited] = True
    ranks = _RankOrder(data, reader)

    def chunks() -> Iterator[_Joined]:
        for part in reader.chunks():
            covered[part.positions] = True
            decision, score, positions = part.decision, part.score, part.positions
            rank = part.rank
            if decision is None:
                assert score is not None
                decision = (score > threshold).astype(np.int8)
            if keep is not None:
                inside = keep[positions]
                positions, decision = positions[inside], decision[inside]
                score = None if score is None else score[inside]
                rank = None if rank is None else rank[inside]
            ranks.add(positions, decision, score, rank)
            yield _Joined(data, positions, decision, score)

    attributes = tuple(a.name for a in data.manifest.protected_attributes)
    row_set = "all" if audited is None else "test"
    with counted_stream(attributes, chunks, units=data.unit is not None, scale=reader.scale,
                        budget=budget) as tally:
        results = score_given_tally(tally, data.manifest, name=name, rule=rule, stats=stats,
                                    degenerate=degenerate, verdicts=verdicts, row_set=row_set)
    found = ranks.tables(name=name, row_set=row_set, stats=stats, verdicts=verdicts)
    if found is not None:
        results.ranking, results.ranking_topk = found
    return StreamedPredictions(results, covered)


class _RankOrder:
    """The audited rows' ranking key and favourable decisions, gathered from the chunks for the
    ranking view (:mod:`faircode.evaluate.ranking`): a ``--rank`` column (1 = the top,
    favourable end first) or a score; none without either."""

    def __init__(self, data: AuditData, reader: PredictionsReader) -> None:
        self.data, self.used = data, reader.rank is not None or reader.score is not None
        n = len(data.y) if self.used else 0
        self.key, self.favourable = np.zeros(n), np.zeros(n, dtype=np.int8)
        self.seen = np.zeros(n, dtype=bool)

    def add(self, positions: np.ndarray, decision: np.ndarray, score: np.ndarray | None,
            rank: np.ndarray | None) -> None:
        """One chunk's audited rows (positions, 0/1 decisions, scores, ranks)."""
        if not self.used:
            return
        favourable = self.data.manifest.target.favourable == 1
        if rank is not None:  # a score of label 1, so the view's favourable end is rank 1
            self.key[positions] = -rank if favourable else rank
        else:
            assert score is not None
            self.key[positions] = score
        self.favourable[positions] = decision if favourable else 1 - decision
        self.seen[positions] = True

    def tables(self, *, name: str, row_set: str, stats: StatsConfig,
               verdicts: VerdictsConfig | None) -> Any:
        """The ranking view of the gathered rows (None without a rank or a score)."""
        if not self.used or not self.seen.any():
            return None
        rows = np.flatnonzero(self.seen)
        ranked = RankedRows(DEPLOYED, name, self.key[rows], self.favourable[rows])
        return ranking_tables(self.data, [ranked], rows=rows, row_set=row_set, stats=stats,
                              verdicts=verdicts or VerdictsConfig())
