"""The ``audit.yaml`` manifest: a typed, frozen, fully validated description of one audit.

A manifest declares where an audit's raw file lives (and how to obtain and verify it), how rows are
filtered, how the binary label is derived, which protected attributes are compared, and which
columns are core features or proxies.  The schema is ``MANIFEST_SPEC.md``; this module is its only
reader.

Design decisions
----------------
* **Everything is checked at load time**, and every failure is one line naming the file, the key
  path, what was expected and what arrived with its type (``faircode.core.errors.config_error``).
  Nothing invalid is silently dropped or coerced: ``random_state: 42.0`` is an error, not 42.
* **The allowed keys are a table** (``_TOP_KEYS``, ``_DATASET_KEYS``, ...).  Adding a key to the
  schema is one line there plus its parser; a typo such as ``protected_attribute`` is rejected.
* **YAML is read with a safe loader only** (:func:`faircode.core.schema.read_yaml`: bounded size,
  depth and alias expansion, UTF-8, YAML 1.1 merge keys), and a key repeated in one mapping is an
  error (plain ``yaml.safe_load`` keeps the last one silently).
* **Paths are resolved against the manifest's own directory**, and the raw file must be inside
  ``<root>/data/raw/<name>/`` or the manifest's own folder (symlinks followed): the places
  ``faircode data fetch`` may write, so a manifest can neither read ``/etc/passwd`` nor have a
  verified download replace ``README.md``, ``params.yaml`` or code.  The root is the nearest
  ancestor holding ``.git`` or ``pyproject.toml``, never the filesystem root (fallback: the
  parent of ``audits/``, else the manifest's folder).  ``name`` (and ``system.name``) are safe
  names (:mod:`faircode.core.names`): folders and command-line words.
* Column-level checks (does the column exist, does the target yield two classes) need the data and
  live in :mod:`faircode.audit.data`.
* **Repeated people** (``docs/manifest-units.md``): ``dataset.unit`` names the column that
  identifies an independent unit (a person, a patient).  It is read, never a feature, target or
  protected column.  One-row-per-unit designs use the positional row filter
  ``{column: <unit>, first_by: <order column>}``, which keeps, among the rows still kept, each
  unit's row with the smallest order value; a filter, not a dataset option, so its place in the
  filter sequence (and the row count after it) is explicit.
* **Reading options are part of the manifest** (``dataset.read``: separator, header row, encoding,
  column names, extra missing markers) because they decide what the bytes mean; their defaults are
  pandas' own, so a manifest without ``read`` is read exactly as before.  Column names of a file
  without a header are listed in the manifest itself (not a side file), so the manifest's sha256
  recorded with every result covers them.
* **Numeric cuts state their side**: ``threshold`` and ``quantile`` targets need ``direction``
  (``above`` is ``>``, ``at_least`` is ``>=``); there is no default, because ``G3 >= 10`` and
  ``G3 > 10`` are different labels.
* **A deployed system** (``system:``, ``docs/manifest.md``): the audited tool whose outputs are
  columns of the raw file -- its name, its 0/1 decision as a rule on one column (the target's
  rule keys and comparisons: ``isin``, ``equals``, ``threshold`` with ``direction``) and,
  optionally, its score and the score's declared scale.  Its columns are read but are never
  features: a system column that is a feature, protected, target or unit column is an error, and
  :attr:`Manifest.named_columns` (what the prepared rows and ``X`` are built from) leaves them
  out; :attr:`Manifest.read_columns` adds them.
* **Layout**: this module is the public face (value types re-exported, loading, discovery); the
  records live in :mod:`faircode.audit._manifest_types` and the section parsers with their key
  tables in
  :mod:`faircode.audit._manifest_parse`, so neither private module imports this one (no import
  cycle).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from faircode.audit._manifest_parse import parse_manifest
from faircode.audit._manifest_types import (
    ATTRIBUTE_TYPES,
    DECISION_METHODS,
    DIRECTIONS,
    LOGISTIC_REGRESSION,
    MANTEL_HAENSZEL,
    OPERATORS,
    SCORE_SCALES,
    SIDES,
    STRATUM_ESTIMATORS,
    TARGET_METHODS,
    TASKS,
    AttributeType,
    Companion,
    CounterfactualAxis,
    DatasetSpec,
    DecisionMethod,
    DeployedSystem,
    Direction,
    Manifest,
    Operator,
    ProtectedAttribute,
    ReadOptions,
    RowFilter,
    RowId,
    ScoreScale,
    Side,
    Source,
    Stratum,
    SystemDecision,
    SystemScore,
    Target,
    TargetMethod,
    Task,
)
from faircode.audit.decision import DecisionRule
from faircode.core.errors import ManifestError
from faircode.core.kinds import BINARY
from faircode.core.schema import Checker, Scalar, read_yaml

__all__ = [
    "ATTRIBUTE_TYPES",
    "DECISION_METHODS",
    "DIRECTIONS",
    "LOGISTIC_REGRESSION",
    "MANTEL_HAENSZEL",
    "OPERATORS",
    "SCORE_SCALES",
    "SIDES",
    "STRATUM_ESTIMATORS",
    "TARGET_METHODS",
    "TASKS",
    "AttributeType",
    "Companion",
    "CounterfactualAxis",
    "DatasetSpec",
    "DecisionMethod",
    "DecisionRule",
    "DeployedSystem",
    "Direction",
    "Manifest",
    "Operator",
    "ProtectedAttribute",
    "ReadOptions",
    "RowFilter",
    "RowId",
    "Scalar",
    "ScoreScale",
    "Side",
    "Source",
    "Stratum",
    "SystemDecision",
    "SystemScore",
    "Target",
    "TargetMethod",
    "Task",
    "discover_manifests",
    "load_manifest",
    "manifest_kind",
    "read_manifest_document",
    "repository_root",
]


# --------------------------------------------------------------------------------------------
# Reading and validating
# --------------------------------------------------------------------------------------------


def repository_root(manifest_dir: Path) -> Path:
    """Return the nearest ancestor of ``manifest_dir`` holding ``.git`` or ``pyproject.toml``.

    The filesystem root is never a repository root: without a marker below it the root is the
    parent of ``audits/`` when the manifest sits in ``audits/<name>/``, else the manifest's own
    folder.
    """
    manifest_dir = manifest_dir.resolve()
    for candidate in (manifest_dir, *manifest_dir.parents):
        if candidate.parent == candidate:  # "/" (or a drive): never the repository
            break
        if (candidate / ".git").exists() or (candidate / "pyproject.toml").exists():
            return candidate
    above = manifest_dir.parent.parent
    if manifest_dir.parent.name == "audits" and above.parent != above:
        return above
    return manifest_dir


def read_manifest_document(file: Path) -> tuple[Checker, dict[str, Any]]:
    """The checker of ``file`` and its top-level mapping (any kind of manifest); an unreadable
    file or another top level is one :class:`ManifestError` line."""
    c = Checker(file)
    try:
        doc = read_yaml(file, error=ManifestError)
    except OSError as exc:
        raise ManifestError(f"{file}: cannot be read: {exc.__class__.__name__}: {exc}") from None
    if not isinstance(doc, dict):
        raise c.fail("top level", "a YAML mapping", "" if doc is None else doc)
    return c, doc


def load_manifest(path: Path | str, *, root: Path | None = None) -> Manifest:
    """Read and validate the manifest at ``path``; raise :class:`ManifestError` if invalid."""
    file = Path(path)
    c, doc = read_manifest_document(file)
    return parse_manifest(c, doc, root if root is not None else repository_root(file.parent))


TABULAR = BINARY.manifest_kind
"""The ``kind:`` of a grid audit's manifest (the default): the ``binary`` task kind's."""
BINARY_TASK = BINARY.name
"""The ``task:`` of a grid audit's tabular manifest (the default)."""


def manifest_kind(path: Path | str) -> str:
    """The kind an ``audit.yaml`` declares: its ``kind`` -- ``tabular`` (the default) or ``text``
    (:mod:`faircode.audit.text_manifest`) -- and for a tabular manifest its ``task`` when that
    is not ``binary`` (the grid's, the default): ``regression``
    (:mod:`faircode.audit.regression_manifest`) or ``multiclass``
    (:mod:`faircode.audit.multiclass_manifest`).  An unreadable file counts as ``tabular``,
    whose reader then names what is wrong with it."""
    try:
        doc = read_yaml(Path(path), error=ManifestError)
    except (OSError, ManifestError):
        return TABULAR
    if not isinstance(doc, dict):
        return TABULAR
    kind = doc.get("kind", TABULAR)
    if not isinstance(kind, str):
        return TABULAR
    task = doc.get("task", BINARY_TASK) if kind == TABULAR else BINARY_TASK
    return task if isinstance(task, str) and task != BINARY_TASK else kind


def discover_manifests(root: Path | str, *, kind: str | None = TABULAR) -> list[Path]:
    """Return ``<root>/*/audit.yaml`` (``root`` is the ``audits/`` folder) of one ``kind``
    (:func:`manifest_kind`; ``None``: every kind), sorted."""
    found = sorted(Path(root).glob("*/audit.yaml"))
    return found if kind is None else [p for p in found if manifest_kind(p) == kind]
