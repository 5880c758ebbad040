"""Parsing the manifest's optional ``strata:`` list: the legitimate factors of an audit.

Private: :func:`faircode.audit._manifest_parse.parse_manifest` calls :func:`parse_strata`.  A
stratum names one or more columns of the raw file whose combinations of values define strata
(résumé quality; a city; an applicant's credit history); every row set's parity gap is then
also reported *within* them (:mod:`faircode.stats.stratified`): is the gap explained by the
declared legitimate factors?

* ``estimator`` (optional) says how the gap is conditioned on the columns: ``mantel_haenszel``
  (the default: within the strata their value combinations make) or ``logistic_regression``
  (covariates that make no strata, such as a ratio; :mod:`faircode.stats.adjusted`).
* A stratum column may be any column of the raw file (a feature or not), but never a protected
  attribute's column (a gap within levels of the attribute itself is no gap) nor the target's
  (stratifying on the outcome conditions on what is being compared).
* The stratified gap is row-level, so a manifest with ``dataset.unit`` declares no strata.
* Names are folder-safe ids and distinct; columns are distinct within a stratum.
"""

from __future__ import annotations

from faircode.audit._manifest_types import STRATUM_ESTIMATORS, Stratum
from faircode.core.names import SAFE_NAME_TEXT, is_safe_name
from faircode.core.schema import Checker

__all__ = ["parse_strata"]

_KEYS: dict[str, bool] = {"name": True, "columns": True, "estimator": False}


def parse_strata(c: Checker, raw: object, *, protected: set[str], target: str,
                 unit: str | None) -> tuple[Stratum, ...]:
    """Validate ``strata`` (a non-empty list of ``{name, columns[, estimator]}``; absent:
    ``()``)."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw:
        raise c.fail("strata", "a non-empty list of {name, columns}", raw)
    if unit is not None:
        raise c.fail("strata", "no strata in an audit with dataset.unit (the stratified gap is "
                     "row-level)", unit)
    out: list[Stratum] = []
    for i, item in enumerate(raw):
        where = f"strata[{i}]"
        data = c.mapping(item, where, _KEYS)
        name = c.string(data["name"], f"{where}.name")
        if not is_safe_name(name):
            raise c.fail(f"{where}.name", SAFE_NAME_TEXT, name)
        if name in (s.name for s in out):
            raise c.fail(f"{where}.name", "a name not used by another stratum", name)
        columns = c.columns(data["columns"], f"{where}.columns", allow_empty=False)
        for j, column in enumerate(columns):
            if column in protected:
                raise c.fail(f"{where}.columns[{j}]",
                             "a column that is not a protected attribute's column", column)
            if column == target:
                raise c.fail(f"{where}.columns[{j}]", "a column other than the target column",
                             column)
        estimator = data.get("estimator", STRATUM_ESTIMATORS[0])
        if estimator not in STRATUM_ESTIMATORS:
            raise c.fail(f"{where}.estimator", f"one of {', '.join(STRATUM_ESTIMATORS)}",
                         estimator)
        out.append(Stratum(name, columns, estimator))
    return tuple(out)
