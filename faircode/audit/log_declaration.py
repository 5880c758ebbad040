"""A decision log's declaration: the YAML file (or document) that says what its columns are.

A deployed system's log -- every loan, claim or moderation decision of a quarter, with the
applicant's groups and the observed outcome -- is audited from a small YAML declaration, no raw
dataset to fetch::

    name: loans_2024q3            # the results folder (a folder-safe id)
    log: {path: decisions.parquet, sha256: ...}   # relative to this file; sha256 optional
    target: {column: repaid, method: binary, favourable: 1}
    system:                       # the audited system: how a column is its 0/1 decision
      name: scorecard
      decision: {column: approved, equals: 1}     # or binary: true (a 0/1 column)
      score: {column: risk, scale: probability}   # optional
    unit: customer_id             # optional: rows of one customer are one unit
    protected_attributes:
      - {name: sex, type: categorical, column: sex, disadvantaged_values: [F]}
    row_filters: [{column: channel, equals: online}]   # optional
    strata: [{name: region, columns: [region]}]        # optional: the gap within its levels

:func:`load_log` validates it with the manifest's own parsers
(:mod:`faircode.audit._manifest_parse`: the same keys, rules and one-line errors naming the
file and key path) and returns a :class:`~faircode.audit.manifest.Manifest` whose dataset is the
log and whose ``system`` is the audited system, so everything downstream (run.json, the report,
MLflow) treats it as an audit whose deployed system is scored on every row; its rows are read by
:class:`faircode.audit.logs.LogReader`.  The short form on the command line (``faircode audit
FILE --group sex=F ...``) writes such a declaration (:mod:`faircode.audit.log_columns`), and
:func:`log_manifest` validates a document given in code (a DataFrame's, with no ``log:``).

Design decisions
----------------
* **One pass, so only row-wise rules**: a target of method ``above_median``/``quantile`` or a
  ``first_by`` filter needs every row before the first can be labelled, and is refused (cut the
  target at a declared ``threshold``; de-duplicate the log first).
* **A log has no split**: every kept row is audited (``test_size`` is a placeholder no reader
  uses), so ``strata`` and ``unit`` follow a manifest's rules (no strata with a unit).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath

from faircode.audit._manifest_parse import (
    _parse_attributes,
    _parse_filter,
    _parse_name,
    _parse_target,
)
from faircode.audit._manifest_strata import parse_strata
from faircode.audit._manifest_system import parse_system
from faircode.audit._manifest_types import _SHA_RE, DatasetSpec, Manifest
from faircode.core.errors import ManifestError
from faircode.core.schema import Checker, read_yaml

__all__ = ["is_log_declaration", "load_log", "log_manifest"]

_TOP = {"name": True, "title": False, "log": True, "random_state": False, "row_filters": False,
        "target": True, "protected_attributes": True, "unit": False, "system": True,
        "strata": False}
_LOG = {"path": True, "sha256": False}
_ONE_PASS_TARGETS = ("binary", "equals", "isin", "threshold")


def is_log_declaration(path: Path) -> bool:
    """Whether the YAML file at ``path`` is a log declaration (it has a top-level ``log:``)."""
    try:
        doc = read_yaml(path, error=ManifestError)
    except (ManifestError, OSError):
        return False
    return isinstance(doc, dict) and "log" in doc and "dataset" not in doc


def load_log(path: Path | str) -> Manifest:
    """Validate the log declaration at ``path`` (module docstring) into a manifest."""
    file = Path(path)
    try:
        doc = read_yaml(file, error=ManifestError)
    except OSError as exc:
        raise ManifestError(f"{file}: cannot be read: {exc.__class__.__name__}: {exc}") from None
    return log_manifest(doc, file=file)


def log_manifest(doc: object, *, file: Path, frame: bool = False) -> Manifest:
    """Validate a declaration's document ``doc`` (read from, or named in errors as, ``file``).

    ``frame``: the rows are a pandas DataFrame given beside it (:func:`frame_table`), so the
    document has no ``log:`` block.
    """
    c = Checker(file)
    if not isinstance(doc, dict):
        raise c.fail("top level", "a YAML mapping", doc)
    data = c.mapping(doc, "", {k: r for k, r in _TOP.items() if not (frame and k == "log")})
    name, title = _parse_name(c, data)
    random_state = data.get("random_state", 42)
    if isinstance(random_state, bool) or not isinstance(random_state, int) or \
            not 0 <= random_state < 2**32:
        raise c.fail("random_state", "an integer in [0, 2**32)", random_state)
    raw_filters = data.get("row_filters") or []
    if not isinstance(raw_filters, list):
        raise c.fail("row_filters", "a list", raw_filters)
    filters = tuple(_parse_filter(c, f, f"row_filters[{i}]") for i, f in enumerate(raw_filters))
    for i, f in enumerate(filters):
        if f.operator == "first_by":
            raise c.fail(f"row_filters[{i}].first_by", "a row-wise filter in a decision log "
                         "(read in one pass: de-duplicate the log first)", f.value)
    target = _parse_target(c, data["target"])
    if target.method not in _ONE_PASS_TARGETS:
        raise c.fail("target.method", f"one of {', '.join(_ONE_PASS_TARGETS)} in a decision "
                     "log (read in one pass)", target.method)
    attributes = _parse_attributes(c, data["protected_attributes"])
    unit = c.optional_string(data.get("unit"), "unit")
    roles = {**({unit: "the unit (unit)"} if unit else {}), target.column: "the target column",
             **{a.column: "a protected attribute's column" for a in attributes}}
    system = parse_system(c, data["system"], roles=roles, target=target.column)
    strata = parse_strata(c, data.get("strata"), protected={a.column for a in attributes},
                          target=target.column, unit=unit)
    for i, stratum in enumerate(strata):
        if stratum.regression:  # a log keeps level ids per row, not a covariate matrix
            raise c.fail(f"strata[{i}].estimator", "mantel_haenszel in a decision log (the gap "
                         "within levels; a logistic_regression stratum needs a manifest audit)",
                         stratum.estimator)
    dataset = (_parse_log(c, data["log"], unit) if not frame else
               DatasetSpec(path=Path.cwd() / file.name, declared_path=str(file), unit=unit))
    return Manifest(name=name, title=title, file=file, dataset=dataset,
                    random_state=random_state, test_size=0.5, row_filters=filters,
                    target=target, protected_attributes=attributes, core_features=(),
                    system=system, strata=strata)


def _parse_log(c: Checker, raw: object, unit: str | None) -> DatasetSpec:
    data = c.mapping(raw, "log", _LOG)
    declared = c.string(data["path"], "log.path")
    if "\0" in declared:  # no file name holds one (os calls raise ValueError)
        raise c.fail("log.path", "a path without a NUL character", declared)
    absolute = PurePosixPath(declared).is_absolute() or PureWindowsPath(declared).is_absolute()
    resolved = Path(declared) if absolute else (c.file.parent / declared)
    sha = data.get("sha256")
    if sha is not None and (not isinstance(sha, str) or not _SHA_RE.match(sha)):
        raise c.fail("log.sha256", "64 lowercase hex digits", sha)
    return DatasetSpec(path=resolved.resolve(), declared_path=declared, sha256=sha, unit=unit)
