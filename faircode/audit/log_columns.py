"""A decision log declared by its columns: ``--group sex=F --label repaid --decision approved``.

The short form of a log declaration (:mod:`faircode.audit.log_declaration`), for a file (or a pandas
DataFrame) that carries its own groups, label and decisions: no manifest, no raw dataset, no
benchmark split.  :class:`LogColumns` holds what ``faircode audit FILE --group ...`` and
:func:`faircode.audit_decisions` are given, and :meth:`LogColumns.declaration` writes the
declaration document it stands for, which :func:`faircode.audit.logs.log_manifest` validates
like any other -- so the short form and the YAML file are one audit, with one set of rules and
errors, and ``faircode audit`` saves the document for a repeatable audit.

The column specs::

    --group COL=V[,V...]     categorical: these values are the disadvantaged group, the others
                             the advantaged one (a row without a value is not classified)
    --group COL<X            numeric: below X disadvantaged (COL>=X: X and above)
    --group COL              an indicator: 1/true disadvantaged, 0/false advantaged
    --label COL              0/1 (also true/false, yes/no); COL=V[,V...]: these values are
                             label 1; COL>X or COL>=X: a numeric cut
    --decision COL           0/1, 1 = label 1 predicted; COL=V[,V...], COL>X, COL>=X: a rule
    --score COL --scale S    higher = label 1 more likely, S probability or ordinal
    --favourable 0|1         which label is the favourable outcome (default 1)
    --unit COL               rows of one COL value are one unit (clustered intervals)
    --stratum COL[,COL...]   a legitimate factor: the parity gap also within its levels

Design decisions
----------------
* **Values stay text**: ``sex=1`` is compared by type family like a manifest's values (``1``
  matches a numeric column's 1.0, and the text ``"1"``), so the short form never guesses types.
* **An attribute is named after its column**, a stratum after its columns (joined by ``_``);
  the seed (``random_state``, default 42 as in every audit) is explicit.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from faircode.core.errors import ConfigError, describe
from faircode.core.names import SAFE_NAME_TEXT, is_safe_name

__all__ = ["LogColumns", "parse_spec"]

_CUT = re.compile(r"^(?P<column>[^<>=]+?)\s*(?P<op><|>=|>)\s*(?P<value>[^<>=]+)$")
_INDICATOR = {"disadvantaged_values": ["1", "true", "True"],
              "advantaged_values": ["0", "false", "False"]}

Flag = Callable[[str], str]


def _cli(field: str) -> str:
    return f"--{field}"


@dataclass(frozen=True, slots=True)
class Spec:
    """One parsed column spec: the column, and ``=`` values or a ``<``/``>``/``>=`` cut."""

    column: str
    values: tuple[str, ...] = ()
    op: str = ""
    cut: float = 0.0


def parse_spec(text: object, where: str) -> Spec:
    """``COL``, ``COL=V[,V...]`` or ``COL<X`` / ``COL>X`` / ``COL>=X`` (``where`` names the
    option in the one-line error)."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"{where}: expected COL, COL=V[,V...] or COL>=X, got {describe(text)}")
    found = _CUT.match(text)
    if found:
        try:
            cut = float(found["value"])
        except ValueError:
            raise ConfigError(f"{where}: expected a number after {found['op']}, got "
                              f"{describe(found['value'].strip())}") from None
        return Spec(found["column"].strip(), op=found["op"], cut=cut)
    column, equals, values = text.partition("=")
    listed = tuple(v.strip() for v in values.split(",")) if equals else ()
    if not column.strip() or "<" in text or ">" in text or any(not v for v in listed) or \
            (equals and not listed):
        raise ConfigError(f"{where}: expected COL, COL=V[,V...] or COL>=X, got {describe(text)}")
    return Spec(column.strip(), listed)


@dataclass(frozen=True, slots=True)
class LogColumns:
    """What a decision file's columns mean (module docstring): groups, label, decision."""

    groups: tuple[str, ...]
    label: str
    decision: str
    score: str | None = None
    scale: str | None = None
    unit: str | None = None
    strata: tuple[str, ...] = ()
    favourable: int = 1
    name: str = "model"
    seed: int = 42

    def declaration(self, *, audit: str, log: str | None, flag: Flag = _cli) -> dict[str, Any]:
        """The declaration document these columns stand for (``log``: its ``log.path``; None
        for a DataFrame); ``flag(field)`` names an option in errors (``--group``)."""
        if not self.groups:
            raise ConfigError(f"{flag('group')}: expected at least one COL[=V,...] naming a "
                              "protected group, got none")
        if self.favourable not in (0, 1) or isinstance(self.favourable, bool):
            raise ConfigError(f"{flag('favourable')}: expected 0 or 1, got "
                              f"{describe(self.favourable)}")
        doc: dict[str, Any] = {"name": audit}
        if log is not None:
            doc["log"] = {"path": log}
        doc.update({"random_state": self.seed,
                    "target": {**_rule(parse_spec(self.label, flag("label")), flag("label"),
                                       target=True), "favourable": self.favourable},
                    "protected_attributes": [_group(g, flag("group")) for g in self.groups],
                    "system": self._system(flag)})
        if self.unit is not None:
            doc["unit"] = self.unit
        if self.strata:
            doc["strata"] = [_stratum(s, flag("stratum")) for s in self.strata]
        return doc

    def wanted(self, flag: Flag = _cli) -> list[tuple[str, str]]:
        """Every column named, with the option naming it (``(column, "--group")``)."""
        named = [(parse_spec(g, flag("group")).column, flag("group")) for g in self.groups]
        named += [(parse_spec(self.label, flag("label")).column, flag("label")),
                  (parse_spec(self.decision, flag("decision")).column, flag("decision"))]
        named += [(c, flag(f)) for c, f in ((self.score, "score"), (self.unit, "unit"))
                  if c is not None]
        named += [(c.strip(), flag("stratum")) for s in self.strata for c in s.split(",")]
        return named

    def _system(self, flag: Flag) -> dict[str, Any]:
        system: dict[str, Any] = {
            "name": self.name, "decision": _rule(parse_spec(self.decision, flag("decision")),
                                                 flag("decision"), target=False)}
        if self.score is not None:
            if self.scale is None:
                raise ConfigError(f"{flag('scale')}: expected probability or ordinal with "
                                  f"{flag('score')} {self.score}, got nothing")
            system["score"] = {"column": self.score, "scale": self.scale}
        return system


def _group(text: str, where: str) -> dict[str, Any]:
    spec = parse_spec(text, where)
    attribute: dict[str, Any] = {"name": spec.column, "column": spec.column}
    if spec.op == ">":
        raise ConfigError(f"{where}: expected COL<X (below X disadvantaged) or COL>=X (X and "
                          f"above), got {describe(text)}")
    if spec.op:
        return {**attribute, "type": "numeric_threshold", "threshold": spec.cut,
                "disadvantaged": "below" if spec.op == "<" else "above"}
    if not spec.values:
        return {**attribute, "type": "categorical", **_INDICATOR}
    return {**attribute, "type": "categorical", "disadvantaged_values": list(spec.values)}


def _rule(spec: Spec, where: str, *, target: bool) -> dict[str, Any]:
    """A target's (``target``) or a decision's rule of one spec."""
    if spec.op == "<":
        raise ConfigError(f"{where}: expected COL>X or COL>=X (the values meaning label 1), "
                          f"got {spec.column}<{spec.cut:g}")
    if spec.op:
        direction = "above" if spec.op == ">" else "at_least"
        method = "threshold"
        return {"column": spec.column, **({"method": method} if target else {}),
                method: spec.cut, "direction": direction}
    if not spec.values:
        return ({"column": spec.column, "method": "binary"} if target
                else {"column": spec.column, "binary": True})
    return ({"column": spec.column, "method": "isin", "values": list(spec.values)} if target
            else {"column": spec.column, "isin": list(spec.values)})


def _stratum(text: str, where: str) -> dict[str, Any]:
    columns = [c.strip() for c in text.split(",")] if isinstance(text, str) else []
    name = "_".join(columns)
    if not columns or not all(columns) or not is_safe_name(name):
        raise ConfigError(f"{where}: expected COL[,COL...] of columns whose names joined by _ "
                          f"are {SAFE_NAME_TEXT}, got {describe(text)}")
    return {"name": name, "columns": columns}

