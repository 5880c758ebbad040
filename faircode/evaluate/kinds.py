"""The evaluate wing's table of task kinds: each kind's evaluator, as the evaluate stage runs it.

An evaluator (:class:`faircode.evaluate.job.Evaluator`) owns one kind's step from the data
stages' outputs to its results folder: its ``settle`` writes what needs no evaluation (an
audit without data: its note and any views of its own; an audit whose results are those of
the same inputs: kept) and otherwise returns the :class:`~faircode.evaluate.job.Job`; its
``run`` evaluates the job and writes its results folder (its tables, statistics and
``run.json``), in this process or a worker.  :data:`EVALUATORS` names each kind's
(:mod:`faircode.evaluate.binary_kind`, :mod:`faircode.evaluate.text_kind`,
:mod:`faircode.evaluate.multiclass_kind`).

Design decisions
----------------
* **Keyed by** :attr:`faircode.core.kinds.TaskKind.name` (``tests/test_layout.py`` checks the
  table covers every kind); the evaluate stage never names a kind.
* **Nothing numerical is imported** by this table or by an evaluator's module: an evaluator
  imports numpy, pandas and the statistics inside its ``run`` (and past its unavailable check
  in its ``settle``), so a sweep that re-runs the stage for an audit without data costs no
  import.
"""

from __future__ import annotations

from faircode.core.kinds import TaskKind, registered
from faircode.evaluate.job import Evaluator

__all__ = ["EVALUATORS", "evaluator"]

EVALUATORS: dict[str, str] = {
    "binary": "faircode.evaluate.binary_kind:EVALUATOR",
    "text": "faircode.evaluate.text_kind:EVALUATOR",
    "regression": "faircode.evaluate.regression_kind:EVALUATOR",
    "multiclass": "faircode.evaluate.multiclass_kind:EVALUATOR",
}
"""Task kind -> ``"<module>:<attribute>"`` of its :class:`~faircode.evaluate.job.Evaluator`
(:func:`faircode.core.kinds.registered`)."""


def evaluator(kind: TaskKind) -> Evaluator:
    """The evaluator :data:`EVALUATORS` registers for ``kind`` (its module imported now)."""
    found: Evaluator = registered(EVALUATORS, kind, where="faircode.evaluate.kinds.EVALUATORS")
    return found
