"""The text audit's ``audit.yaml`` (``kind: text``): sentences, identity terms, axes, systems.

A text audit is declared like every audit, in ``audits/<name>/audit.yaml`` beside its datasheet,
and read here into a frozen :class:`TextManifest`.  It names the payload file (with its sha256
and source, the ``dataset`` block of every manifest), the columns of the sentence, its label and
its template; the identity terms by category (the per-term tables); the axes files, in the
perturbation engine's own format (:func:`faircode.counterfactual.axes.load_axes_file`); and the
systems, by name from :data:`faircode.audit.text_systems.TEXT_SYSTEMS`, each with its declared
operating point.

Design decisions
----------------
* **No built-in axes, here too.**  ``axes`` is required and must name a file with at least one
  axis; a manifest without it is refused with the engine's reason.  ``name_axes`` (optional)
  are applied to the sentences rendered from the name template (``name_slot``): the data's own
  name slot filled with each name the name axes mention, so a name axis edits sentences that
  hold its names, and the explicit axes are never evaluated on rendered copies.
* **Systems by name only**; an unknown one is refused at load time, without importing any
  model package.
* **Operating points.**  Every system is decided at the global threshold
  (``models.decision_threshold``, ``score > t``) and, when declared, at its own
  ``operating_point``: ``{rule: threshold, threshold: t, direction: above|at_least}`` or
  ``{rule: equal_error_rate}`` (Dixon et al. 2018: the threshold at which false positives and
  false negatives are as few as each other on the data's own sentences; ``score >= t``).
* **Placebo groups** are the axes files' own (``groups:``,
  :mod:`faircode.counterfactual.placebo`): which terms belong together is declared beside the
  swaps it controls, and checked against them when the file is read.
* **Declared name frames** (``name_frames``, optional): a file of the audit folder with
  sentences holding one name slot (review-like sentences for the trained systems), each with its
  label; the name axes are applied to them as a set of their own (its name is the file's
  ``set``), beside the data's name frames.
* **Trained systems** (``training``, optional; :mod:`faircode.audit.text_training`): a corpus
  and the systems fitted on it, each also listed in ``systems`` like a deployed one.
* Everything is checked at load time with the manifest reader's one-line errors; the dataset
  block is parsed by the same code as every manifest's (``dataset.unit`` is refused: a text
  audit's units are its template frames).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Literal, cast

from faircode.audit._manifest_parse import _parse_dataset, _parse_name
from faircode.audit._manifest_types import DatasetSpec, Direction
from faircode.audit.manifest import read_manifest_document, repository_root
from faircode.audit.text_systems import TEXT_SYSTEMS
from faircode.audit.text_training import TrainingSpec, parse_training
from faircode.core.errors import ConfigError, ManifestError
from faircode.core.kinds import TEXT
from faircode.core.names import is_safe_name
from faircode.core.schema import Checker, Scalar, read_yaml
from faircode.counterfactual.axes import load_axes_file
from faircode.counterfactual.perturb import AXES_GUIDE, AxisSpec
from faircode.counterfactual.placebo import PlaceboArm, PlaceboGroup
from faircode.counterfactual.texts import SLOT

__all__ = ["AxesFile", "NameFrames", "NameSlot", "OperatingPoint", "Sentences", "TextManifest",
           "TextSystemSpec", "TrainingData", "load_text_manifest"]

PointRule = Literal["threshold", "equal_error_rate"]
_TOP_KEYS: dict[str, bool] = {
    "kind": True, "name": True, "title": False, "dataset": True, "random_state": False,
    "sentences": True, "identity_terms": True, "name_slot": False, "axes": False,
    "name_axes": False, "name_frames": False, "training": False, "systems": True,
}
_FRAME_KEYS = {"set": True, "slot": True, "label_1": True, "label_0": True}
_SENTENCE_KEYS = {"text": True, "label": True, "positive": True, "template": False}
_SLOT_KEYS = {"template": True, "names": True}
_SYSTEM_KEYS = {"name": True, "operating_point": False}
_POINT_KEYS = {"rule": True, "threshold": False, "direction": False}
_NO_AXES = ("the audit's axes file (faircode ships no built-in axes: which identities count "
            "and how they are named is the audit's choice, reviewed in its datasheet; "
            f"{AXES_GUIDE})")


@dataclass(frozen=True, slots=True)
class Sentences:
    """The payload file's columns: the text, its label and the label value that is positive
    (decision 1: flagged), and optionally the template family of each sentence."""

    text: str
    label: str
    positive: Scalar
    template: str | None = None


@dataclass(frozen=True, slots=True)
class NameSlot:
    """The template whose sentences hold a name, and the names that fill it in the data."""

    template: str
    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OperatingPoint:
    """A declared operating point: a fixed threshold (``above``: ``score > t``; ``at_least``:
    ``score >= t``) or the data's equal-error-rate threshold (``score >= t``)."""

    rule: PointRule
    threshold: float | None = None
    direction: Direction = "above"

    def __post_init__(self) -> None:
        if (self.rule == "threshold") != (self.threshold is not None):
            raise ManifestError(f"operating_point: threshold: expected a number exactly with "
                                f"rule threshold, got rule {self.rule!r}, threshold "
                                f"{self.threshold!r}")


@dataclass(frozen=True, slots=True)
class TextSystemSpec:
    """A system of :data:`~faircode.audit.text_systems.TEXT_SYSTEMS` and its declared point."""

    name: str
    operating_point: OperatingPoint | None = None


@dataclass(frozen=True, slots=True)
class AxesFile:
    """An axes file of the audit folder: where it is, its sha256 and its axes."""

    path: Path
    declared_path: str
    sha256: str
    axes: tuple[AxisSpec, ...]
    groups: tuple[PlaceboGroup, ...] = ()
    arms: tuple[PlaceboArm, ...] = ()


@dataclass(frozen=True, slots=True)
class NameFrames:
    """Declared name frames: the set they form, and each frame (its slot already
    :data:`~faircode.counterfactual.texts.SLOT`) with its label (1 = flagged)."""

    path: Path
    declared_path: str
    sha256: str
    set: str
    frames: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class TrainingData:
    """The training corpus as a fetchable dataset of the audit (the fetch stage's view)."""

    name: str
    dataset: DatasetSpec


@dataclass(frozen=True, slots=True)
class TextManifest:
    """A validated text audit (see the module docstring)."""

    name: str
    title: str
    file: Path
    dataset: DatasetSpec
    random_state: int
    sentences: Sentences
    identity_terms: tuple[tuple[str, tuple[str, ...]], ...]
    axes: AxesFile
    systems: tuple[TextSystemSpec, ...]
    name_slot: NameSlot | None = None
    name_axes: AxesFile | None = None
    name_frames: NameFrames | None = None
    training: TrainingSpec | None = None

    @property
    def extra_datasets(self) -> tuple[TrainingData, ...]:
        """The other files the audit reads, fetched with its sentences (the training corpus)."""
        if self.training is None:
            return ()
        return (TrainingData(self.name, self.training.dataset),)

    @property
    def terms(self) -> tuple[str, ...]:
        """Every identity term, in declaration order."""
        return tuple(t for _, terms in self.identity_terms for t in terms)

    @property
    def category(self) -> dict[str, str]:
        """term -> its category."""
        return {t: c for c, terms in self.identity_terms for t in terms}


def load_text_manifest(path: Path | str, *, root: Path | None = None) -> TextManifest:
    """Read and validate the text audit manifest at ``path`` (one-line :class:`ManifestError`)."""
    file = Path(path)
    c, doc = read_manifest_document(file)
    return _parse(c, doc, root if root is not None else repository_root(file.parent))


def _parse(c: Checker, doc: dict[str, Any], root: Path) -> TextManifest:
    if doc.get("kind") != TEXT.manifest_kind:
        raise c.fail("kind", f"{TEXT.manifest_kind} (a text audit's manifest)", doc.get("kind"))
    if doc.get("axes") is None:
        raise ManifestError(f"{c.file}: axes: expected {_NO_AXES}, got nothing")
    data = c.mapping(doc, "", _TOP_KEYS)
    name, title = _parse_name(c, data)
    seed = data.get("random_state", 42)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise c.fail("random_state", "an integer in [0, 2**32)", seed)
    dataset = _parse_dataset(c, data["dataset"], root, name=name)
    if dataset.unit is not None:
        raise c.fail("dataset.unit", "no unit column (a text audit's units are its template "
                     "frames)", dataset.unit)
    sentences = _parse_sentences(c, data["sentences"])
    terms = _parse_terms(c, data["identity_terms"])
    slot = _parse_slot(c, data["name_slot"], sentences) if data.get("name_slot") else None
    name_axes = None
    if data.get("name_axes") is not None:
        if slot is None:
            raise c.fail("name_axes", "name axes only with a name_slot to render them into",
                         data["name_axes"])
        name_axes = _axes_file(c, data["name_axes"], "name_axes", root)
    frames = None
    if data.get("name_frames") is not None:
        if name_axes is None:
            raise c.fail("name_frames", "name frames only with name_axes to apply to them",
                         data["name_frames"])
        frames = _name_frames(c, data["name_frames"], root)
    axes = _axes_file(c, data["axes"], "axes", root)
    if name_axes is not None:  # one axis may have its explicit half here, its proxy there
        both = _channels(axes.axes) & _channels(name_axes.axes)
        if both:
            axis, kind = sorted(both)[0]
            raise c.fail("name_axes", f"axes whose {kind} substitutions are not also in axes",
                         axis)
    training = None
    if data.get("training") is not None:
        training = parse_training(c, data["training"], root, audit=name, reserved=TEXT_SYSTEMS)
    systems = _parse_systems(c, data["systems"], trained=training.names if training else ())
    return TextManifest(name=name, title=title, file=c.file, dataset=dataset,
                        random_state=seed, sentences=sentences, identity_terms=terms,
                        axes=axes, systems=systems, name_slot=slot, name_axes=name_axes,
                        name_frames=frames, training=training)


def _channels(axes: tuple[AxisSpec, ...]) -> set[tuple[str, str]]:
    """The (axis name, kind) channels of ``axes``."""
    return {(a.name, s.kind.value) for a in axes for s in a.substitutions}


def _parse_sentences(c: Checker, raw: object) -> Sentences:
    data = c.mapping(raw, "sentences", _SENTENCE_KEYS)
    template = data.get("template")
    return Sentences(text=c.string(data["text"], "sentences.text"),
                     label=c.string(data["label"], "sentences.label"),
                     positive=c.scalar(data["positive"], "sentences.positive"),
                     template=None if template is None else c.string(template,
                                                                     "sentences.template"))


def _parse_terms(c: Checker, raw: object) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``identity_terms``: category -> a non-empty list of terms, each term in one category."""
    if not isinstance(raw, dict) or not raw:
        raise c.fail("identity_terms", "a mapping of categories to lists of terms", raw)
    seen: dict[str, str] = {}
    out = []
    for category, terms in raw.items():
        where = f"identity_terms.{category}"
        if not isinstance(category, str) or not is_safe_name(category):
            raise c.fail(where, "a category name of letters, digits, '_', '.', '-'", category)
        names = c.columns(terms, where, allow_empty=False)
        for i, term in enumerate(names):
            c.visible(term, f"{where}[{i}]")  # with a zero-width space: counted nowhere
            key = " ".join(term.split()).casefold()
            if key in seen:
                raise c.fail(f"{where}[{i}]", f"a term not also in {seen[key]}", term)
            seen[key] = category
        out.append((category, names))
    return tuple(out)


def _parse_slot(c: Checker, raw: object, sentences: Sentences) -> NameSlot:
    if sentences.template is None:
        raise c.fail("name_slot", "a name slot only with sentences.template naming the column "
                     "of each sentence's template", raw)
    data = c.mapping(raw, "name_slot", _SLOT_KEYS)
    return NameSlot(template=c.string(data["template"], "name_slot.template"),
                    names=c.columns(data["names"], "name_slot.names", allow_empty=False))


def _beside(c: Checker, raw: object, key: str, root: Path, what: str) -> tuple[str, Path]:
    """A file of the audit folder named by ``key``: its declared and resolved path."""
    declared = c.string(raw, key)
    if PurePosixPath(declared).is_absolute() or PureWindowsPath(declared).is_absolute():
        raise c.fail(key, "a path relative to the manifest's directory", declared)
    path = (c.file.parent / declared).resolve()
    if not path.is_relative_to(root.resolve()):
        raise c.fail(key, f"a path inside the repository {root}", declared)
    if not path.is_file():
        raise c.fail(key, f"{what} beside the manifest", declared)
    return declared, path


def _axes_file(c: Checker, raw: object, key: str, root: Path) -> AxesFile:
    declared, path = _beside(c, raw, key, root, "an axes file")
    try:  # one-line errors naming the axes file; none at all is refused; groups checked
        doc = load_axes_file(path)
    except ConfigError as exc:
        raise ManifestError(f"{c.file}: {key}: {exc}") from None
    return AxesFile(path=path, declared_path=declared,
                    sha256=hashlib.sha256(path.read_bytes()).hexdigest(), axes=doc.axes,
                    groups=doc.groups, arms=doc.arms)


def _name_frames(c: Checker, raw: object, root: Path) -> NameFrames:
    """``name_frames``: a file ``{set, slot, label_1: [...], label_0: [...]}``; every frame holds
    the slot once, no frame twice."""
    declared, path = _beside(c, raw, "name_frames", root, "a frames file")
    doc = read_yaml(path, error=ManifestError)  # one line naming the frames file
    f = Checker(path)
    data = f.mapping(doc, "", _FRAME_KEYS)
    which = f.string(data["set"], "set")
    if not is_safe_name(which) or which in ("data", "names"):
        raise f.fail("set", "a safe name other than data and names (the audit's own sets)",
                     which)
    slot = f.string(data["slot"], "slot")
    frames: list[tuple[str, int]] = []
    seen: set[str] = set()
    for key, label in (("label_1", 1), ("label_0", 0)):
        for i, text in enumerate(f.columns(data[key], key, allow_empty=False)):
            if text.count(slot) != 1 or SLOT in text:
                raise f.fail(f"{key}[{i}]", f"a sentence holding the slot {slot!r} once", text)
            if text in seen:
                raise f.fail(f"{key}[{i}]", "a frame not listed twice", text)
            seen.add(text)
            frames.append((text.replace(slot, SLOT), label))
    return NameFrames(path=path, declared_path=declared,
                      sha256=hashlib.sha256(path.read_bytes()).hexdigest(), set=which,
                      frames=tuple(frames))


def _parse_systems(c: Checker, raw: object, *, trained: tuple[str, ...]
                   ) -> tuple[TextSystemSpec, ...]:
    if not isinstance(raw, list) or not raw:
        raise c.fail("systems", "a non-empty list of systems", raw)
    out: list[TextSystemSpec] = []
    for i, item in enumerate(raw):
        where = f"systems[{i}]"
        data = c.mapping(item, where, _SYSTEM_KEYS)
        name = c.choice(data["name"], f"{where}.name", (*TEXT_SYSTEMS, *trained))
        if name in (s.name for s in out):
            raise c.fail(f"{where}.name", "a system not listed twice", name)
        point = None
        if data.get("operating_point") is not None:
            point = _parse_point(c, data["operating_point"], f"{where}.operating_point")
        out.append(TextSystemSpec(name=name, operating_point=point))
    missing = [n for n in trained if n not in (s.name for s in out)]
    if missing:
        raise c.fail("systems", f"every trained system listed (training.systems), {missing[0]} "
                     "too", [s.name for s in out])
    return tuple(out)


def _parse_point(c: Checker, raw: object, where: str) -> OperatingPoint:
    data = c.mapping(raw, where, _POINT_KEYS)
    rule = cast(PointRule, c.choice(data["rule"], f"{where}.rule",
                                    ("threshold", "equal_error_rate")))
    if rule == "equal_error_rate":
        extra = [k for k in ("threshold", "direction") if k in data]
        if extra:
            raise c.fail(f"{where}.{extra[0]}", "no threshold or direction with rule "
                         "equal_error_rate (it is computed from the data)", data[extra[0]])
        return OperatingPoint(rule=rule)
    if "threshold" not in data:
        raise ManifestError(f"{c.file}: {where}.threshold: expected a number in [0, 1] (rule "
                            "threshold), got nothing")
    value = c.number(data["threshold"], f"{where}.threshold")
    if not 0 <= value <= 1:
        raise c.fail(f"{where}.threshold", "a number in [0, 1]", data["threshold"])
    direction = cast(Direction, c.choice(data.get("direction", "above"), f"{where}.direction",
                                         ("above", "at_least")))
    return OperatingPoint(rule=rule, threshold=value, direction=direction)
