"""The one shape of every audit's DVC headline (``results/metrics/<audit>.json``), whatever its
task kind: ``attr``, the first protected attribute, and ``gap.S0`` ... one key per strategy of
:data:`~faircode.core.cells.STRATEGY_TABLE`, the kind's headline gap on that attribute under the
strategy (:data:`faircode.core.kinds.TaskKind.headline` names it; null where the strategy does
not apply, has no informative cell, or the audit has no data).

One set of keys for every kind is what keeps ``dvc metrics show`` one line per audit within 120
columns: DVC prints the union of the files' keys, so a kind with keys of its own widens every
line.  Light on purpose (no pandas): an audit without data writes its headline from here.
"""

from __future__ import annotations

from collections.abc import Mapping

from faircode.core.cells import STRATEGY_TABLE

__all__ = ["HEADLINE_KEYS", "UNAVAILABLE_HEADLINE", "headline_record"]

HEADLINE_KEYS: tuple[str, ...] = ("attr", *(f"gap.{s.code}" for s in STRATEGY_TABLE))
"""The flattened keys of every headline file: ``attr``, then ``gap.S0`` ... in the table's
order."""


def headline_record(attribute: str | None,
                    gaps: Mapping[str, float | None]) -> dict[str, object]:
    """A headline: ``attribute`` and, per strategy code, its gap rounded to 3 decimals (null
    when ``gaps`` has none for it or it is NaN)."""
    def rounded(code: str) -> float | None:
        value = gaps.get(code)
        return None if value is None or value != value else round(float(value), 3)

    return {"attr": attribute, "gap": {s.code: rounded(s.code) for s in STRATEGY_TABLE}}


UNAVAILABLE_HEADLINE: dict[str, object] = headline_record(None, {})
"""The headline of an audit without data: its keys, every value null."""
