"""``faircode pipeline``: write ``dvc.yaml`` and ``upstream/dvc.yaml`` for params.yaml's audits.

Run it after changing one of ``params.yaml``'s audit lists (``audits``, ``text_audits``,
``regression_audits``, ``multiclass_audits``: a subset to explore, an audit of your own), commit
the two files, then ``dvc repro``; check-params stops a repro whose files were written for
another list with one line naming this command.  ``--check`` writes nothing and exits 1 when
either file is not what it would write (CI; tests/test_pipeline.py keeps the committed files so).

Before writing it checks what the files will name: ``params.yaml`` as check-params does (every
key, at least one audit, each an ``audits/<name>/`` folder), and each listed audit's manifest --
it loads (its own one-line error otherwise), it is of its list's kind (``audits``: the grid's
tabular manifests; ``text_audits``: ``kind: text``; ``regression_audits``: ``task:
regression``; ``multiclass_audits``: ``task: multiclass``), and its ``name`` is its folder's (the
stages' paths use the folder, the stages' code the name).  A file is replaced whole (written
beside it, then renamed) and only when its text changes.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from faircode.pipeline._args import EXIT_FAILED, EXIT_OK, HELP, example

if TYPE_CHECKING:  # pragma: no cover - the command imports what it uses when it runs
    from faircode.core.config import Params
    from faircode.pipeline.dvc_files import BagStage, FitPart

__all__ = ["add_pipeline", "bag_stage", "check_manifests", "fit_parts", "write_pipeline"]


def fit_parts() -> tuple[FitPart, ...]:
    """The fit stages, one per part of the grid (:data:`faircode.pipeline.stages.PARTS`, in grid
    order), each with the ``mitigation`` params its strategies read
    (:data:`faircode.grid.strategies.READS`; the whole section when they read every key): the one
    place the pipeline files learn the grid's parts."""
    from faircode.core.config import PARAM_KEYS
    from faircode.grid.strategies import READS
    from faircode.pipeline.dvc_files import FitPart
    from faircode.pipeline.stages import PARTS

    every = {p.split(".", 1)[1] for p in PARAM_KEYS if p.startswith("mitigation.")}
    parts = []
    for part, strategies in PARTS.items():
        reads = set().union(*(READS[s] for s in strategies))
        mitigation = ("mitigation",) if reads == every else tuple(
            f"mitigation.{key}" for key in sorted(reads))
        stage = "fit" if part == "unmitigated" else f"fit-{part.replace('_', '-')}"
        parts.append(FitPart(part, stage, mitigation))
    return tuple(parts)


def bag_stage() -> BagStage:
    """The bag stage (:mod:`faircode.grid.bagging`): it writes ``data/predictions/<audit>/
    bagged/`` and reads ``arbitrariness.bags``, ``arbitrariness.all_families_below``,
    ``models.encoding`` and the ``mitigation.*`` keys its bagged strategies read (none for S0
    and S2)."""
    from faircode.core.cells import BAGGED_STRATEGIES
    from faircode.grid.bagging import BAGGED_PART
    from faircode.grid.strategies import READS
    from faircode.pipeline.dvc_files import BagStage

    reads = sorted(set().union(*(READS[s] for s in BAGGED_STRATEGIES)))
    return BagStage("bag", BAGGED_PART, ("arbitrariness.bags", "arbitrariness.all_families_below",
                                         *(f"mitigation.{k}" for k in reads), "models.encoding"))


def check_manifests(params: Params, *, audits_dir: Path) -> None:
    """Raise a one-line error unless each listed audit's manifest loads, is of its list's task
    kind (:attr:`faircode.core.kinds.TaskKind.params_key`) and is named as its folder."""
    from faircode.audit.kinds import load_any_manifest
    from faircode.audit.manifest import manifest_kind
    from faircode.core.errors import ConfigError
    from faircode.core.kinds import TASK_KINDS

    lists = {kind.params_key: kind for kind in TASK_KINDS}
    for key, names in params.lists():
        kind = lists[key]
        for i, name in enumerate(names):
            path = audits_dir / name / "audit.yaml"
            found = manifest_kind(path)
            if found != kind.manifest_kind:
                other = next((k.params_key for k in TASK_KINDS if k.manifest_kind == found),
                             "none")
                raise ConfigError(f"params.yaml: {key}[{i}]: expected a {kind.manifest_kind} "
                                  f"audit, got {name!r}, whose manifest {path} is "
                                  f"{found} (list it under {other})")
            manifest = load_any_manifest(path)
            if manifest.name != name:
                raise ConfigError(f"{path}: name: expected {name!r} (its folder's name: the "
                                  f"pipeline's paths use it), got {manifest.name!r} (str)")


def write_pipeline(root: Path, *, check: bool = False) -> tuple[list[str], Params]:
    """Write (or with ``check`` only compare) the pipeline files under ``root`` for its
    ``params.yaml``; return the files whose text changed (or would) and the params."""
    from faircode.core.config import load_params
    from faircode.pipeline.dvc_files import render

    params = load_params(root / "params.yaml", audits_dir=root / "audits")
    check_manifests(params, audits_dir=root / "audits")
    changed = []
    for name, text in render(params, parts=fit_parts(), bag=bag_stage()).items():
        path = root / name
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        changed.append(name)
        if not check:
            _replace(path, text)
    return changed, params


def _replace(path: Path, text: str) -> None:
    """Write ``text`` beside ``path`` and rename it over ``path`` (never half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _cmd_pipeline(args: argparse.Namespace) -> int:
    from faircode.pipeline.dvc_files import FILES

    changed, params = write_pipeline(Path(args.root), check=args.check)
    lists = ", ".join(f"{len(names)} {key.replace('_', ' ')} ({', '.join(names) or 'none'})"
                      for key, names in params.lists())
    if args.check:
        if changed:
            print(f"{', '.join(changed)}: not what faircode pipeline writes for params.yaml's "
                  f"{lists}; run faircode pipeline and commit")
            return EXIT_FAILED
        print(f"{', '.join(FILES)}: as faircode pipeline writes them for {lists}")
        return EXIT_OK
    print(f"{', '.join(changed) or 'nothing'} {'written' if changed else 'changed'}: "
          f"{', '.join(FILES)} are the pipeline of {lists}"
          + ("; commit them, then dvc repro" if changed else ""))
    return EXIT_OK


def add_pipeline(subparsers: argparse._SubParsersAction,
                 common: argparse.ArgumentParser) -> None:
    """Register ``faircode pipeline``."""
    parser = subparsers.add_parser(
        "pipeline", help=HELP["pipeline"],
        description="Write dvc.yaml and upstream/dvc.yaml from params.yaml's audit lists "
                    "(audits, text_audits, regression_audits, multiclass_audits; run it after "
                    "changing one; commit both files).",
        **example("faircode pipeline --check"))
    parser.add_argument("--root", default=".", help="the project (params.yaml, audits/, the "
                                                    "pipeline files; default: here)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when a file is not what it would write")
    parser.set_defaults(handler=_cmd_pipeline)
