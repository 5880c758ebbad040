"""The JSONL front end of the perturbation engine (``faircode perturb``).

Every line is validated and perturbed before anything is returned, so a malformed line never
leaves a half-written output.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from faircode.core.errors import ConfigError, PerturbationError, config_error
from faircode.counterfactual._jsonl import parse_line
from faircode.counterfactual.perturb import AxisSpec, perturb

__all__ = ["perturb_jsonl"]


def perturb_jsonl(axes: Sequence[AxisSpec], lines: Iterable[str], *, source: str) -> list[dict]:
    """Perturb each JSON-object line and return one record per (line, axis, kind).

    A line's id is its ``"id"`` field if present (a string or integer), else its 1-based line
    number; its payload is the ``"payload"`` field if present, else the whole object without
    ``"id"`` (other fields beside ``"payload"`` are neither perturbed nor echoed).  Blank lines are
    skipped.  Records are ``{"id", "axis", "kind", "fired": {pattern: n}, "changed",
    "perturbed"}``.  A malformed line raises :class:`~faircode.core.errors.ConfigError` naming
    ``source`` and the line number; nothing is returned unless every line is valid.  ``lines`` are
    split at ``\n`` only (:func:`faircode.counterfactual._jsonl.split_lines`): U+2028 is valid
    inside a JSON string.  Each line is parsed by :func:`faircode.counterfactual._jsonl.parse_line`
    (bounded nesting and integer digits; NaN and Infinity refused, as they are not JSON).
    """
    parsed: list[tuple[object, object]] = []
    ids: dict[object, int] = {}
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}:{lineno}"
        obj = parse_line(line, where=where)  # bounded depth and digits; NaN refused
        if not isinstance(obj, dict):
            raise config_error(where, "a JSON object", obj)
        if "id" in obj:
            pid = obj["id"]
            if isinstance(pid, bool) or not isinstance(pid, str | int):
                raise config_error(f"{where}: id", "a string or integer", pid)
        else:
            pid = lineno
        if pid in ids:
            raise ConfigError(f"{where}: id: duplicate id {pid!r} (also line {ids[pid]})")
        ids[pid] = lineno
        payload = obj["payload"] if "payload" in obj else {k: v for k, v in obj.items()
                                                           if k != "id"}
        parsed.append((pid, payload))
    records: list[dict] = []
    for pid, payload in parsed:
        try:
            perts = perturb(payload, axes)
        except PerturbationError as exc:
            raise ConfigError(f"{source}: {exc}") from exc
        records.extend(
            {"id": pid, "axis": p.axis, "kind": p.kind.value, "fired": dict(p.fired),
             "changed": p.changed, "perturbed": p.perturbed}
            for p in perts
        )
    return records
