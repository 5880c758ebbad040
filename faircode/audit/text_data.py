"""A text audit's payloads: its sentences, the name sentences rendered from its name template,
each sentence's template frame and identity terms, and every axis's counterfactual copies.

:func:`build_payloads` reads the audit's raw file (verifying its sha256) and returns
:class:`TextPayloads`, the input of scoring (every distinct text once) and of evaluation.

Design decisions
----------------
* **Two sets of sentences.**  ``data``: the file's rows, edited by the manifest's ``axes``.
  ``names``: for each *name frame* (a sentence of the name template with its name replaced by a
  slot, in file order) one sentence per name the ``name_axes`` substitute (their patterns, in
  order of first mention), with the frame's label; only the name axes edit these, so an explicit
  axis is never evaluated on rendered copies and a name axis only on sentences that hold its
  names.  A name-template row that does not hold exactly one of ``name_slot.names``, or a name
  frame whose rows disagree on the label, is an error naming the row.
* **Units are template frames**: the sentence with every identity term and its name (the
  slot's) replaced by one slot (:func:`faircode.counterfactual.texts.mark_terms`); a rendered
  sentence has the frame of the data's sentences it was rendered from.  ``Being gay is
  wonderful.`` and ``Being old is wonderful.`` share the frame ``Being ⟦·⟧ is wonderful.``;
  every name sentence of one adjective shares one.  The template
  column itself is coarser (six families in the madlibs data) and is kept as a label.
* **Identity terms** are found with the engine's matching (:func:`mark_terms`), each sentence's
  terms joined by ``|`` (the madlibs sentences hold one or none).  A name-template sentence is
  marked through its name frame: the distinct frames once, not every name's sentence.
* **Declared name frames** (``name_frames``: review-like sentences with a name slot) are a
  third set, named by their file (``reviews``): each frame filled with every name the name
  axes substitute, the frame's label; the name axes edit them as they edit ``names``, and each
  frame is its own unit.
* **Copies are indices.**  ``pairs`` holds the changed copies only, as (axis, kind, arm,
  sentence, text); ``texts`` holds every distinct text once (the sentences' first, then each
  new copy), so a copy equal to another sentence -- "Being gay ..." edited to "Being straight
  ..." -- is scored once.  Unchanged payloads are counted per (axis, kind, set, arm) in
  ``axes`` (``n_payloads``), never as "no flip".
* **Placebo copies** (arm ``placebo``): every within-group swap of each placebo group of an axes
  file (:func:`faircode.counterfactual.placebo.placebo_swaps`), on the sets that file's axes
  edit, under the group's name as ``axis`` and the kind of the arms it serves.  Over fully
  crossed sentences every such copy is itself a sentence, so the arm costs no scoring.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from faircode.audit._data_read import read_csv
from faircode.audit.fetch import sha256_file
from faircode.audit.text_manifest import AxesFile, TextManifest
from faircode.core.errors import ChecksumError, DataError, DataUnavailableError, describe
from faircode.counterfactual.perturb import AxisSpec, PerturbationKind
from faircode.counterfactual.placebo import placebo_swaps
from faircode.counterfactual.texts import SLOT, mark_terms, perturb_texts

__all__ = ["AXIS_COLUMNS", "BETWEEN", "PAIR_COLUMNS", "PLACEBO", "SENTENCE_COLUMNS",
           "TextPayloads", "build_payloads", "load_payloads", "load_texts", "name_patterns",
           "save_payloads"]

SENTENCE_COLUMNS = ("text_id", "set", "label", "template", "unit", "frame", "terms", "name",
                    "row")
"""``sentences``: its text (index into ``texts``), set (``data``/``names``), label (1 =
positive), template, unit (frame id), frame, terms (``|``-joined), rendered name, source row
(``line N`` of the file; a rendered sentence names its frame's first row)."""
PAIR_COLUMNS = ("axis", "kind", "arm", "sentence", "text_id")
"""``pairs``: one changed copy -- its axis (a placebo group's name for arm ``placebo``), kind
and arm (``between``: an axis's own swap; ``placebo``: a within-group swap), its original
sentence, its text."""
AXIS_COLUMNS = ("axis", "kind", "set", "arm", "n_payloads", "n_changed")
"""``axes``: per (axis, kind, set, arm) the size of the set and how many it changed."""
BETWEEN, PLACEBO = "between", "placebo"
"""The two arms of a copy: an axis's own swap, or a swap within a placebo group."""


@dataclass(frozen=True, slots=True)
class TextPayloads:
    """Everything a text audit scores and evaluates (see the module docstring)."""

    sha256: str
    sentences: pd.DataFrame
    pairs: pd.DataFrame
    axes: pd.DataFrame
    texts: tuple[str, ...]


def name_patterns(axes: Sequence[AxisSpec]) -> tuple[str, ...]:
    """The names the name axes substitute (their patterns), in order of first mention."""
    return tuple(dict.fromkeys(s.pattern for a in axes for s in a.substitutions))


def _read(manifest: TextManifest, path: Path) -> tuple[pd.DataFrame, str]:
    if not path.is_file():
        raise DataUnavailableError(f"{manifest.name}: dataset unavailable: expected {path} "
                                   f"(the text-fetch@{manifest.name} stage fetches it)")
    digest = sha256_file(path)
    if manifest.dataset.sha256 is not None and digest != manifest.dataset.sha256:
        raise ChecksumError(f"{manifest.name}: {path}: sha256: expected "
                            f"{manifest.dataset.sha256}, got {digest}")
    spec = manifest.sentences
    wanted = [(spec.text, "sentences.text"), (spec.label, "sentences.label")]
    if spec.template is not None:
        wanted.append((spec.template, "sentences.template"))
    where = f"{manifest.file}: dataset.read"
    header = list(read_csv(manifest.dataset.read, path, where=where, nrows=0).columns)
    for column, key in wanted:
        if column not in header:
            raise DataError(f"{manifest.file}: {key}: expected a column of {path.name}, got "
                            f"{column!r} (str)")
    frame = read_csv(manifest.dataset.read, path, where=where, dtype=str,
                     keep_default_na=False, usecols=[c for c, _ in wanted])
    if frame.empty:
        raise DataError(f"{path}: expected sentences below the header, got none")
    return frame, digest


def _labels(manifest: TextManifest, values: pd.Series, path: Path) -> np.ndarray:
    positive = str(manifest.sentences.positive)
    distinct = sorted(set(values))
    if positive not in distinct or len(distinct) != 2:
        raise DataError(f"{manifest.file}: sentences.positive: expected one of exactly two "
                        f"labels of {path.name} column {manifest.sentences.label!r}, got "
                        f"{describe(positive)} with labels {describe(distinct)}")
    return (values == positive).to_numpy().astype(np.int8)


def _name_frames(manifest: TextManifest, data: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """The rows of the name template and each one's name frame (its name replaced by a slot)."""
    slot = manifest.name_slot
    assert slot is not None
    rows = np.flatnonzero(data["template"].to_numpy() == slot.template)
    if not rows.size:
        raise DataError(f"{manifest.file}: name_slot.template: expected a template of the "
                        f"data, got {slot.template!r} (str)")
    marks = mark_terms(data["text"].iloc[rows].tolist(), (), blanks=slot.names)
    bad = np.flatnonzero(marks.blanked != 1)
    if bad.size:
        i = rows[bad[0]]
        raise DataError(f"{data['row'].iat[i]}: expected exactly one of name_slot.names in a "
                        f"{slot.template} sentence, got {marks.blanked[bad[0]]} in "
                        f"{describe(data['text'].iat[i])}")
    return rows, list(marks.frames)


def _render(manifest: TextManifest, data: pd.DataFrame, rows: np.ndarray, frames: list[str],
            names: tuple[str, ...]) -> pd.DataFrame:
    """The name sentences: each name frame filled with each of ``names``, the frame's label."""
    table = pd.DataFrame({"frame": frames, "label": data["label"].to_numpy()[rows],
                          "row": data["row"].to_numpy()[rows]})
    first = table.groupby("frame", sort=False).agg(label=("label", "first"),
                                                    labels=("label", "nunique"),
                                                    row=("row", "first"))
    if (first["labels"] > 1).any():
        frame = first.index[int(np.argmax(first["labels"].to_numpy() > 1))]
        raise DataError(f"{manifest.file}: name_slot: expected one label per name frame, got "
                        f"two for {describe(frame)}")
    slot = manifest.name_slot
    assert slot is not None
    return pd.DataFrame({
        "text": [f.replace(SLOT, n) for f in first.index for n in names],
        "label": np.repeat(first["label"].to_numpy(), len(names)),
        "template": slot.template, "name": list(names) * len(first),
        "row": np.repeat(first["row"].to_numpy(), len(names)), "set": "names",
        "name_frame": np.repeat(first.index.to_numpy(), len(names)),
    })


def _render_declared(manifest: TextManifest, names: tuple[str, ...]) -> pd.DataFrame:
    """The declared name frames' sentences: each frame filled with each of ``names``."""
    frames = manifest.name_frames
    assert frames is not None
    texts = [f for f, _ in frames.frames]
    rows = [f"{frames.path.name}: frame {i + 1}" for i in range(len(texts))]
    return pd.DataFrame({
        "text": [f.replace(SLOT, n) for f in texts for n in names],
        "label": np.repeat(np.array([lab for _, lab in frames.frames], dtype=np.int8),
                           len(names)),
        "template": frames.set, "name": list(names) * len(texts),
        "row": np.repeat(np.asarray(rows, dtype=object), len(names)), "set": frames.set,
        "name_frame": np.repeat(np.asarray(texts, dtype=object), len(names)),
    })


def _mark(manifest: TextManifest, sentences: pd.DataFrame) -> None:
    """Add ``frame``, ``unit`` and ``terms``: the engine marks every sentence outside the name
    template, and each distinct name frame once for all the sentences that share it."""
    terms = manifest.terms
    own = sentences["name_frame"].isna().to_numpy()
    framed = sentences.loc[~own, "name_frame"].astype(str)
    distinct = list(dict.fromkeys(framed))
    texts = [*sentences.loc[own, "text"], *distinct]
    marks = mark_terms(texts, terms)
    found = ["|".join(terms[i] for i in hit) for hit in marks.found]
    n_own = int(own.sum())
    where = {f: n_own + k for k, f in enumerate(distinct)}
    index = np.empty(len(sentences), dtype=np.int64)
    index[own] = np.arange(n_own)
    index[~own] = framed.map(where).to_numpy(dtype=np.int64)
    sentences["frame"] = np.asarray(marks.frames, dtype=object)[index]
    sentences["terms"] = np.asarray(found, dtype=object)[index]
    sentences["unit"] = pd.factorize(sentences["frame"])[0].astype(np.int64)


def build_payloads(manifest: TextManifest, *, path: Path | None = None) -> TextPayloads:
    """Read the audit's raw file (``path``, default ``dataset.path``) and build its payloads."""
    file = manifest.dataset.path if path is None else path
    raw, digest = _read(manifest, file)
    spec = manifest.sentences
    data = pd.DataFrame({
        "text": raw[spec.text].astype(str),
        "label": _labels(manifest, raw[spec.label], file),
        "template": raw[spec.template].astype(str) if spec.template else "",
        "name": "", "row": [f"{file.name}: line {i + 2}" for i in range(len(raw))],
        "set": "data", "name_frame": None,
    })
    name_axes = manifest.name_axes.axes if manifest.name_axes is not None else ()
    parts = [data]
    if manifest.name_slot is not None:
        rows, frames = _name_frames(manifest, data)
        data.loc[data.index[rows], "name_frame"] = frames
        if name_axes:
            parts.append(_render(manifest, data, rows, frames, name_patterns(name_axes)))
    if manifest.name_frames is not None and name_axes:
        parts.append(_render_declared(manifest, name_patterns(name_axes)))
    sentences = pd.concat(parts, ignore_index=True)
    _mark(manifest, sentences)
    ids: dict[str, int] = {}
    sentences["text_id"] = [ids.setdefault(t, len(ids)) for t in sentences["text"]]
    edits: list[tuple[str, AxesFile]] = [("data", manifest.axes)]
    if manifest.name_axes is not None:
        edits.append(("names", manifest.name_axes))
        if manifest.name_frames is not None:
            edits.append((manifest.name_frames.set, manifest.name_axes))
    pairs, axes = _copies(sentences, ids, edits)
    return TextPayloads(sha256=digest, sentences=sentences.loc[:, list(SENTENCE_COLUMNS)],
                        pairs=pairs, axes=axes, texts=tuple(ids))


def _placebo_axes(file: AxesFile) -> list[tuple[str, AxisSpec]]:
    """(group, swap axis) of every placebo group of ``file``, for each kind its arms have."""
    kinds: dict[str, list[PerturbationKind]] = {}
    for arm in file.arms:
        for group in arm.groups:
            if arm.kind not in kinds.setdefault(group, []):
                kinds[group].append(arm.kind)
    return [(g.name, swap) for g in file.groups for kind in kinds.get(g.name, ())
            for swap in placebo_swaps(g, kind)]


def _copies(sentences: pd.DataFrame, ids: dict[str, int],
            edits: Sequence[tuple[str, AxesFile]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every changed copy of every set's axes (arm ``between``) and placebo swaps (arm
    ``placebo``, one group's shifts pooled under its name), and per (axis, kind, set, arm)
    the set's size and how many copies changed."""
    pairs: list[pd.DataFrame] = []
    counts: dict[tuple[str, str, str, str], list[int]] = {}
    for which, file in edits:
        rows = np.flatnonzero(sentences["set"].to_numpy() == which)
        texts = sentences["text"].iloc[rows].tolist()
        placebo = _placebo_axes(file)
        group_of = {swap.name: group for group, swap in placebo}
        for copies in perturb_texts(texts, [*file.axes, *(swap for _, swap in placebo)]):
            arm = PLACEBO if copies.axis in group_of else BETWEEN
            axis = group_of.get(copies.axis, copies.axis)
            changed = np.flatnonzero(copies.changed)
            text_id = [ids.setdefault(copies.texts[i], len(ids)) for i in changed]
            pairs.append(pd.DataFrame({"axis": axis, "kind": copies.kind.value, "arm": arm,
                                       "sentence": rows[changed].astype(np.int64),
                                       "text_id": np.asarray(text_id, dtype=np.int64)}))
            count = counts.setdefault((axis, copies.kind.value, which, arm), [int(rows.size), 0])
            count[1] += int(changed.size)
    pair_frame = (pd.concat(pairs, ignore_index=True) if pairs
                  else pd.DataFrame(columns=list(PAIR_COLUMNS)))
    table = pd.DataFrame([(*key, n, k) for key, (n, k) in counts.items()],
                         columns=list(AXIS_COLUMNS))
    return pair_frame, table


def save_payloads(payloads: TextPayloads, folder: Path) -> None:
    """Write ``payloads`` to ``folder`` (parquet tables and ``payloads.json``), replacing it."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    payloads.sentences.to_parquet(folder / "sentences.parquet", index=False)
    payloads.pairs.to_parquet(folder / "pairs.parquet", index=False)
    payloads.axes.to_parquet(folder / "axes.parquet", index=False)
    pd.DataFrame({"text": list(payloads.texts)}).to_parquet(folder / "texts.parquet",
                                                            index=False)
    (folder / "payloads.json").write_text(json.dumps({"sha256": payloads.sha256}) + "\n")


def load_texts(folder: Path) -> tuple[str, ...]:
    """The distinct texts of saved payloads (what the scoring stage reads)."""
    return tuple(pd.read_parquet(folder / "texts.parquet")["text"].astype(str))


def load_payloads(folder: Path) -> TextPayloads:
    """Read payloads written by :func:`save_payloads`."""
    try:
        meta = json.loads((folder / "payloads.json").read_text())
    except (OSError, ValueError) as exc:
        raise DataError(f"{folder}: expected saved text payloads (payloads.json), got "
                        f"{type(exc).__name__}: {exc}") from None
    return TextPayloads(sha256=str(meta["sha256"]),
                        sentences=pd.read_parquet(folder / "sentences.parquet"),
                        pairs=pd.read_parquet(folder / "pairs.parquet"),
                        axes=pd.read_parquet(folder / "axes.parquet"),
                        texts=load_texts(folder))
