"""Parsing the manifest's optional ``system:`` block: the deployed system whose outputs are columns.

Private: :func:`faircode.audit._manifest_parse.parse_manifest` calls :func:`parse_system`.  The
block names the system, says how one column becomes its 0/1 decision (the target's rule keys
``isin``/``equals``/``threshold`` + ``direction``, one mechanism with the target's) and, where it
has one, which column is its score and on what scale.  Column-level checks (the columns exist,
the score is numeric, the rule matches some row) need the data and live in
:mod:`faircode.audit.outputs`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from faircode.audit._manifest_types import (
    DECISION_METHODS,
    DIRECTIONS,
    OUTCOME,
    SCORE_SCALES,
    DecisionMethod,
    DeployedSystem,
    Direction,
    ScoreScale,
    SystemDecision,
    SystemScore,
)
from faircode.core.cells import ModelFamily
from faircode.core.errors import ManifestError
from faircode.core.names import check_name
from faircode.core.schema import Checker

__all__ = ["parse_system"]

_SYSTEM_KEYS: dict[str, bool] = {"name": True, "title": False, "decision": True, "score": False}
_DECISION_KEYS: dict[str, bool] = {"column": True, **{m: False for m in DECISION_METHODS},
                                   "direction": False}
_SCORE_KEYS: dict[str, bool] = {"column": True, "scale": True}


def parse_system(c: Checker, raw: object, *, roles: Mapping[str, str],
                 target: str) -> DeployedSystem:
    """Validate ``system:``; ``roles`` maps each column the audit already uses to its role.

    A system column that is a feature, protected, target or unit column is refused: the tool's
    outputs must never be model inputs, and a column cannot be both the outcome and a prediction
    of it.  ``decision: outcome`` is the exception that says so: the system's decision *is* the
    recorded outcome (``target``, the target's column), people's decisions with no separate
    ground truth, and such a system has no score.  Its name is a safe name
    (:func:`faircode.core.names.check_name`): a row label, an MLflow run name and, for an audit
    of one's own model, part of a results folder.
    """
    data = c.mapping(raw, "system", _SYSTEM_KEYS)
    name = check_name(data["name"], where=f"{c.file}: system.name", cls=ManifestError)
    if name in {m.value for m in ModelFamily}:
        raise c.fail("system.name", "a name that is not a grid model family", name)
    title = c.string(data["title"], "system.title") if data.get("title") is not None else name
    if data["decision"] == OUTCOME:
        if data.get("score") is not None:
            raise c.fail("system.score", "no score for a decision that is the recorded outcome",
                         data["score"])
        return DeployedSystem(name=name, title=title,
                              decision=SystemDecision(target, "outcome"))
    decision = _parse_decision(c, data["decision"])
    score = None
    if data.get("score") is not None:
        block = c.mapping(data["score"], "system.score", _SCORE_KEYS)
        score = SystemScore(c.string(block["column"], "system.score.column"),
                            cast(ScoreScale, c.choice(block["scale"], "system.score.scale",
                                                      SCORE_SCALES)))
    for key, column in (("decision", decision.column),
                        ("score", None if score is None else score.column)):
        if column is not None and column in roles:
            raise c.fail(f"system.{key}.column",
                         f"a column the audit does not use as {roles[column]}", column)
    return DeployedSystem(name=name, title=title, decision=decision, score=score)


def _parse_decision(c: Checker, raw: object) -> SystemDecision:
    """``system.decision``: ``column`` and exactly one rule (``threshold`` with ``direction``)."""
    if not isinstance(raw, dict):
        raise c.fail("system.decision", f"a mapping with a column and a rule, or {OUTCOME!r} "
                     "(the decision is the recorded outcome)", raw)
    data = c.mapping(raw, "system.decision", _DECISION_KEYS)
    column = c.string(data["column"], "system.decision.column")
    methods = [m for m in DECISION_METHODS if m in data]
    if len(methods) != 1:
        raise c.fail("system.decision", f"exactly one rule of {', '.join(DECISION_METHODS)}",
                     tuple(methods))
    method = cast(DecisionMethod, methods[0])
    where = f"system.decision.{method}"
    if method == "binary" and data[method] is not True:
        raise c.fail("system.decision.binary", "true (the column holds 0/1 decisions)",
                     data[method])
    if method == "binary":
        if "direction" in data:
            raise c.fail("system.decision.direction", "a direction only with threshold",
                         data["direction"])
        return SystemDecision(column, method)
    if method != "threshold":
        if "direction" in data:
            raise c.fail("system.decision.direction", "a direction only with threshold",
                         data["direction"])
        if method == "isin":
            return SystemDecision(column, method, values=c.scalars(data[method], where))
        return SystemDecision(column, method, value=c.scalar(data[method], where))
    if "direction" not in data:
        raise c.fail("system.decision.direction",
                     f"one of {', '.join(DIRECTIONS)} with threshold (no default)", None)
    direction = cast(Direction, c.choice(data["direction"], "system.decision.direction",
                                         DIRECTIONS))
    return SystemDecision(column, method, threshold=c.number(data[method], where),
                          direction=direction)
