"""Which audit lists the pipeline files were written for, and check-params' refusal of others.

check-params, the first stage of every repro, refuses pipeline files (:mod:`faircode.pipeline.
dvc_files`) written for other audit lists than ``params.yaml``'s with one line naming
``faircode pipeline`` (:func:`check_written_for`): each list's first data stage
(:data:`FETCH_STAGES`) carries the list as its ``foreach``, and the evaluate stage's manifest
deps must be their union.  Imports nothing but ``core`` and the generator's names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from faircode.core.config import AUDIT_LISTS, Params
from faircode.core.errors import ConfigError
from faircode.pipeline.dvc_files import COMMAND, FILES

__all__ = ["FETCH_STAGES", "check_written_for", "written_for"]

FETCH_STAGES = ("fetch", "text-fetch", "regression-fetch", "multiclass-fetch")
"""Each audit list's first data stage, whose ``foreach`` is the list (:data:`faircode.core.
config.AUDIT_LISTS` order)."""


def written_for(root: Path) -> tuple[frozenset[str], ...] | None:
    """The audits of each list (grid, text, regression, multi-class) the pipeline files under
    ``root`` were written for (the first data stages' ``foreach`` lists, which the evaluate
    stage's manifest deps must equal); ``None`` without a ``dvc.yaml`` (nothing runs them);
    ``ValueError`` when the files do not have the layout :func:`render` writes."""
    from faircode.core.schema import read_yaml

    results, data = (root / name for name in FILES)
    if not results.is_file():
        return None
    lists = []
    stages = _stages(read_yaml(data)) if data.is_file() else None
    for stage in FETCH_STAGES:
        if stages is None:
            raise ValueError(f"{data}: no such file")
        body = stages.get(stage, {"foreach": []})
        names = body.get("foreach") if isinstance(body, dict) else None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"{data}: {stage}.foreach: not a list of names")
        lists.append(frozenset(names))
    evaluate = _stages(read_yaml(results)).get("evaluate")
    deps = evaluate.get("deps") if isinstance(evaluate, dict) else None
    manifests = {d.removeprefix("audits/") for d in deps or () if isinstance(d, str)
                 and d.startswith("audits/")}
    if manifests != frozenset().union(*lists):
        raise ValueError(f"{results}: evaluate.deps: manifests of other audits than "
                         f"upstream/dvc.yaml's")
    return tuple(lists)


def _stages(doc: object) -> dict[str, object]:
    stages = doc.get("stages") if isinstance(doc, dict) else None
    if not isinstance(stages, dict):
        raise ValueError("no stages")
    return stages


def check_written_for(params: Params, *, root: Path) -> None:
    """Raise a one-line :class:`ConfigError` naming :data:`COMMAND` unless the pipeline files
    under ``root`` were written for ``params``' audits and text audits (in any order); nothing
    without a ``dvc.yaml``."""
    try:
        found = written_for(root)
    except ValueError as exc:
        raise ConfigError(f"dvc.yaml: expected the pipeline files {COMMAND} writes, got files "
                          f"of another layout ({exc}); run {COMMAND} to write dvc.yaml and "
                          "upstream/dvc.yaml from params.yaml, then commit them") from None
    if found is None:
        return
    wanted = tuple(frozenset(names) for _, names in params.lists())
    if wanted == found:
        return
    raise ConfigError(f"dvc.yaml: expected the stages of params.yaml's audits, got stages "
                      f"written for another list (params.yaml only: "
                      f"{_names([w - h for w, h in zip(wanted, found, strict=True)])}; dvc.yaml "
                      f"only: {_names([h - w for w, h in zip(wanted, found, strict=True)])}); run "
                      f"{COMMAND} to rewrite dvc.yaml and upstream/dvc.yaml from params.yaml, then "
                      "commit them")


def _names(lists: Sequence[Iterable[str]]) -> str:
    """The names of each list (:data:`~faircode.core.config.AUDIT_LISTS` order), the others'
    than the grid's with their kind (``(text)``)."""
    kinds = [""] + [f" ({key.removesuffix('_audits')})" for key in AUDIT_LISTS[1:]]
    names = [f"{n}{kinds[i]}" for i, found in enumerate(lists) for n in sorted(found)]
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return shown or "none"
