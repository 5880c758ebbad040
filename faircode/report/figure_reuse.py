"""Carrying a per-audit figure over from the previous report when its inputs did not change.

The report rewrites ``results/figures/`` whole, and drawing is most of its time (PNG at 300 dpi
and a PDF with embedded font subsets: ~0.5 s a figure).  In a sweep most audits' tables do not
move -- a ``base_rate`` audit under a new ``models.decision_threshold`` keeps them byte for byte
(:mod:`faircode.evaluate.reuse`) -- so their figures would come out identical.
:class:`FigureReuse` gives each per-audit figure a key and, when the previous report drew the
same key, copies its PNG and PDF instead of drawing them again.

Design decisions
----------------
* **Only figures of one audit's own tables.**  The slots reused are the per-audit figures
  whose every input is that audit's result files and the report's settings (``by_strategy``,
  ``tradeoff``, the curve figure).  Figures across audits (the heatmap, the residual floor) and
  the deployed system's calibration figure (it reads the deployed inputs) are always drawn.
* **The key is everything such a figure can read**: sha256 of the slot (figure x audit), the
  bytes of every CSV in ``results/<audit>/`` (and its ``deployed/``), the settings (metric,
  models, alpha, confidence), the source of every file of the report stage's code deps
  (:data:`CODE`) and the versions of matplotlib, numpy and pandas.  Anything else is a miss.
* **The record lives beside the figures**: ``figures/inputs.json`` maps each drawn or reused
  slot to its key, file name, caption, section, audit and kind.  A missing or unreadable
  record, or a missing file, is a miss; the folder is still the report's alone (no stale file
  survives: only the slots of this report are carried over).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from faircode.core.layout import FIGURES_RECORD

__all__ = ["CODE", "RECORD", "FigureReuse"]

RECORD = FIGURES_RECORD
"""The record of ``figures/``: slot -> key, name, caption, section, audit, kind."""

CODE: tuple[str, ...] = ("pipeline/stages/report.py", "__init__.py", "pipeline/__init__.py",
                         "pipeline/stages/__init__.py", "core", "counterfactual", "audit",
                         "stats", "report")
"""The report stage's code deps (``dvc.yaml``), relative to the ``faircode`` package."""

_PACKAGE = Path(__file__).resolve().parents[1]


def _code_digest() -> bytes:
    h = hashlib.sha256()
    files: set[Path] = set()
    for name in CODE:
        path = _PACKAGE / name
        files.update([path] if path.is_file() else
                     (p for p in path.rglob("*.py") if "__pycache__" not in p.parts))
    for path in sorted(files):
        h.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0"
                 + hashlib.sha256(path.read_bytes()).digest())
    for package in ("matplotlib", "numpy", "pandas"):
        try:
            h.update(f"{package}={version(package)}\0".encode())
        except PackageNotFoundError:  # pragma: no cover - every one is a dependency
            h.update(f"{package}=?\0".encode())
    return h.digest()


class FigureReuse:
    """Keys of per-audit figures, and the previous report's figures to carry over.

    ``previous`` is the previous ``figures/`` folder (set aside, or missing), ``results`` the
    results folder, ``settings`` the report's metric, models, alpha and confidence, ``make``
    the figure record's constructor (``FigureFile(name, png, pdf, caption, section, audit,
    kind)``).
    """

    def __init__(self, previous: Path, *, results: Path, settings: Mapping[str, Any],
                 make: Callable[..., Any]) -> None:
        self.previous, self.results, self.make = previous, results, make
        self.settings = json.dumps(dict(settings), sort_keys=True, default=str).encode()
        self.code = _code_digest()
        self.old = self._read(previous / RECORD)
        self.new: dict[str, dict[str, str]] = {}
        self.reused = 0

    @staticmethod
    def _read(path: Path) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def key(self, slot: str, audit: str) -> str:
        """The key of ``slot`` for ``audit`` (see the module docstring)."""
        h = hashlib.sha256(b"faircode-figure-v2\0" + slot.encode() + b"\0")
        h.update(self.settings + b"\0" + self.code)
        folder = self.results / audit
        for path in sorted(folder.rglob("*.csv")) if folder.is_dir() else ():
            h.update(path.relative_to(folder).as_posix().encode() + b"\0"
                     + hashlib.sha256(path.read_bytes()).digest())
        return h.hexdigest()

    def lookup(self, slot: str, audit: str, out: Path) -> tuple[str, Any]:
        """``slot``'s key for ``audit``, and its previous files copied into ``out`` as a figure
        record when the previous report drew the same key (else ``None``: draw it, then
        :meth:`record` it)."""
        key = self.key(slot, audit)
        old = self.old.get(slot)
        if isinstance(old, dict) and old.get("key") == key:
            carried = self._carry(old, out)
            if carried is not None:
                self.new[slot] = old
                self.reused += 1
                return key, carried
        return key, None

    def record(self, slot: str, key: str, drawn: Any) -> None:
        """Record a figure drawn for ``slot`` under ``key`` (nothing drawn: nothing recorded)."""
        if drawn is not None:
            self.new[slot] = {"key": key, "name": drawn.name, "caption": drawn.caption,
                              "section": drawn.section, "audit": drawn.audit,
                              "kind": drawn.kind}

    def _carry(self, record: Mapping[str, str], out: Path) -> Any:
        name = str(record.get("name", ""))
        files = [self.previous / f"{name}{suffix}" for suffix in (".png", ".pdf")]
        if not name or not all(f.is_file() for f in files):
            return None
        out.mkdir(parents=True, exist_ok=True)
        for f in files:
            shutil.copyfile(f, out / f.name)
        return self.make(name, out / f"{name}.png", out / f"{name}.pdf",
                         str(record.get("caption", "")), str(record.get("section", "figures")),
                         str(record.get("audit", "")), str(record.get("kind", "")))

    def write(self, out: Path) -> Path:
        """Write ``out/inputs.json`` (the slots drawn or carried by this report)."""
        out.mkdir(parents=True, exist_ok=True)
        path = out / RECORD
        path.write_text(json.dumps(dict(sorted(self.new.items())), indent=1) + "\n")
        return path
