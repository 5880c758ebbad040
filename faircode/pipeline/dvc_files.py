"""The pipeline files, ``dvc.yaml`` and ``upstream/dvc.yaml``, written from ``params.yaml``.

``params.yaml`` lists the audits the pipeline runs: ``audits`` (the grid's), ``text_audits``,
``regression_audits`` and ``multiclass_audits``.
DVC expands a list into one stage per item (``foreach``), never into one stage's ``deps``
(treeverse/dvc#8171), and evaluate is one stage over every audit (DVC rewrites the whole
``dvc.lock`` after each stage it runs: a sweep value pays that once, not once per audit), so
evaluate, report, track and the threshold-curve plots name each audit: ``faircode pipeline``
(:mod:`faircode.pipeline.pipeline_command`) writes both files from the lists (:func:`render`),
and check-params, the first stage of every repro, refuses files written for another list with
one line naming that command (:func:`faircode.pipeline.dvc_check.check_written_for`).

Design decisions
----------------
* **The lists are written into the files**: each data stage's ``foreach`` is the list itself,
  not ``${audits}``, so neither file reads ``params.yaml``.  A list changed without a rewrite (by
  hand, or ``dvc exp run -S audits=...``) still parses, and the repro stops at check-params --
  not at DVC's ``Could not find 'text_audits'``, nor at an ``[Errno 2]`` in evaluate.  Stage
  names (``fetch@<audit>``), commands, deps, params and outs are those ``foreach: ${audits}``
  gave, so a state's ``dvc.lock`` stays valid.
* **An empty list has no stages**: a text audit alone has no grid stage, strategy plot,
  threshold curve or paired-effects table; grid audits alone have no text stage.  A regression
  audit has two data stages (``regression-fetch``, ``regression-fit``); a multi-class audit one
  (``multiclass-fetch``): its grid is fitted in evaluate.
* **An audit that leaves the lists re-runs the report** through :data:`LISTS`.
* **The fit stages are the grid's parts**, one :class:`FitPart` each, from the caller
  (:func:`faircode.pipeline.pipeline_command.fit_parts`): a new part is a new stage, no edit here;
  so is the bag stage (:class:`BagStage`, :func:`faircode.pipeline.pipeline_command.bag_stage`):
  the bagged ensembles' members, written beside the parts and read by evaluate.
* Every ``cmd`` interpolation is one single-quoted shell word; every name was checked safe
  (:mod:`faircode.core.names`) when ``params.yaml`` was loaded, and is again by each stage.
* check-params imports this module: it imports nothing but ``core``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from faircode.core.cells import STRATEGY_CODES, ModelFamily, Strategy
from faircode.core.config import Params
from faircode.core.errors import ConfigError
from faircode.core.layout import (
    FIGURES,
    MULTICLASS_TABLE,
    RANKING_TABLE,
    REGRESSION_TABLE,
    REPORT_PAGE,
    RESIDUAL_FLOOR,
    SUMMARY,
    SUMMARY_FAMILIES,
    dvc_views,
    paper_table_files,
)
from faircode.core.names import check_name

__all__ = ["COMMAND", "FILES", "LISTS", "BagStage", "FitPart", "lists_text", "render"]

COMMAND = "faircode pipeline"
"""The command that writes the files (``python -m faircode.pipeline.cli pipeline``)."""
FILES = ("dvc.yaml", "upstream/dvc.yaml")
"""The stages that write ``results/`` and, in a file (and lock) of their own, ``data/``."""
FACES = ("faircode/__init__.py", "faircode/pipeline/__init__.py",
         "faircode/pipeline/_boundary.py", "faircode/pipeline/stages/__init__.py")
"""The package faces every stage entry point passes through (a dep of every stage)."""
LISTS = "data/audits.txt"
"""check-params' record of the lists (:func:`lists_text`), a dep of the report: DVC sees no
change in a dep that left a stage, so without it an audit dropped from the lists alone would
leave the report of the old lists."""

@dataclass(frozen=True, slots=True)
class FitPart:
    """One fit stage: the grid's ``part`` (``data/predictions/<audit>/<part>/``), the ``stage``
    name and the ``mitigation`` params its strategies read (every part also reads
    ``models.encoding``, ``run.seeds`` and ``run.seed_mode``)."""

    part: str
    stage: str
    mitigation: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_name(self.part, where="FitPart.part")
        check_name(self.stage, where="FitPart.stage")


@dataclass(frozen=True, slots=True)
class BagStage:
    """The bag stage: its ``stage`` name, the ``part`` folder it writes beside the fit stages'
    (``data/predictions/<audit>/<part>/``, a dep of evaluate) and the ``params`` it reads."""

    stage: str
    part: str
    params: tuple[str, ...]

    def __post_init__(self) -> None:
        check_name(self.part, where="BagStage.part")
        check_name(self.stage, where="BagStage.stage")


def _code(entry: str, *wings: str) -> list[str]:
    """A stage's code deps: its entry point, the faces, then ``faircode/<wing>`` each."""
    return [f"faircode/pipeline/stages/{entry}.py", *FACES, *(f"faircode/{w}" for w in wings)]


def _items(paths: Iterable[str], indent: int) -> list[str]:
    return [f"{' ' * indent}- {p}" for p in paths]


def _out(path: str, *, persist: bool = True, note: str = "", more: Sequence[str] = ()) -> list[str]:
    """One ``cache: false`` output entry (``persist`` kept in place while its stage runs)."""
    return [f"      - {path}:" + (f"  # {note}" if note else ""), "          cache: false",
            *(["          persist: true"] if persist else []), *(f"          {m}" for m in more)]


# ------------------------------------------------------------------------------ dvc.yaml

RESULTS_HEADER = """\
# The faircode pipeline: `dvc repro` reproduces every committed number in results/.
# Written by `faircode pipeline` from params.yaml's audit lists (its code:
# faircode/pipeline/dvc_files.py): change the lists, run it, commit both files.  check-params,
# the first stage of every repro, refuses files written for another list with one line naming it.
# Two files, one pipeline: this one holds the stages that write results/ (check-params, evaluate,
# report, track); upstream/dvc.yaml the ones that write data/ (fetch, prepare, the fits, the
# text audits' fetch, payloads, trained systems and scores).  DVC keeps one dvc.lock per dvc.yaml
# and rewrites the whole of it after every stage it runs, so a sweep value, which runs only this
# file's stages, rewrites this file's ~1,300-line lock, not the ~5,000 lines of the data stages'
# (K = 5).  `dvc repro` runs both files, in dependency order.
# Every stage is a thin entry point over the library (faircode/pipeline/stages/).  Its deps are
# exactly the code it imports -- its own entry point, the package faces it passes through and the
# wings it loads (tests/test_layout.py imports each stage in a fresh interpreter and fails on an
# undeclared faircode file) -- plus the audit's manifest folder and its upstream outputs:
#   core/, counterfactual/, audit/  -> every stage that reads a manifest re-runs
#   provenance/                     -> evaluate, report and track (what records a state; the
#                                      data stages never import it)
#   grid/                           -> the fit stages (and evaluate, which reads the predictions)
#   stats/, evaluate/               -> evaluate (and report for stats/), never fit
#   report/                         -> report only;  record/ -> track only
#   pipeline/cli.py, progress.py    -> nothing (no stage imports the command line)
# and as params exactly the params.yaml sections it reads:
#   mitigation.* -> each fit stage the keys its strategies read (the strategy table's reads):
#                   fit-in-processing (S3) constraint, eps, max_iter; fit-post-processing (S4)
#                   constraint; fit-relaxed-post-processing (S5) constraint, tolerances; then
#                   evaluate; fit (S0-S2) reads no mitigation key and never re-runs
#   run.seeds, run.seed_mode -> the fit stages + evaluate (never fetch/prepare)
#   models.encoding     -> the fit stages (how the models see nominal columns) + evaluate
#   models.*, stats.*, degenerate.*, verdicts.*, curves.* -> evaluate (then report and track)
#   arbitrariness.bags, .all_families_below -> bag (S0/S2's bagged members; no run.* param: the
#                   members are fitted on replicate 0's split) + evaluate through its output;
#                   arbitrariness.consistency_level, .accuracy_tolerance -> evaluate
#   report.*            -> report only
#   run.*               -> nothing (workers and backend; no number depends on them)
# check-params runs on every repro (always_changed) so an unknown or misspelt key, or an audit
# list these files were not written for, stops the repro with a one-line error; data/params.ok is
# constant, so it triggers nothing downstream, and data/audits.txt (the lists, sorted) changes
# only with the lists and re-runs the report, which reports exactly them (DVC sees no change in
# a dep that left a stage: an audit dropped from the lists would otherwise stay in the report).
# Every interpolation in a cmd is one single-quoted shell word ('${item}', 'data/raw/${item}'):
# DVC runs each cmd through the shell, and an audit name is checked to be a safe name
# (faircode.core.names: no quote, space, ';' or '$') by check-params, which every stage follows,
# and again by each stage's entry point; tests/test_security.py checks every cmd of both files.
# A sweep value re-runs the evaluate stage (its params changed; one stage over every audit, since
# DVC rewrites all of this dvc.lock after each stage it runs) and the report: their outputs
# are `persist: true` (DVC leaves them in place while the stage runs) so that an audit whose
# results/<audit>/run.json records the content address of the same inputs keeps its tables
# (faircode/evaluate/reuse.py: a base_rate audit under a new models.decision_threshold), and a
# figure whose inputs are byte for byte the same is carried over (faircode/report/figure_reuse.py).
# Every such stage still writes all its outputs whole on any other run.
# After evaluate: `report` (summary, paper tables, figures, report.html, of params.yaml's audits
# only) and `track` (MLflow; always_changed, idempotent by content, so a sync is never skipped by
# DVC's run-cache).  Their deps list every results/<audit> of params.yaml's audits; report's also
# each of their manifest folders audits/<name> and data/audits.txt, never the folder `audits`
# itself: that name is also a param, and `dvc exp show` would show two columns of one name
# (`--drop audits` crashed on it; tests/test_dvc_views.py checks no two columns share one).
stages:
  check-params:
    cmd: python -m faircode.pipeline.stages.check_params data/params.ok data/audits.txt
    deps:
"""

EVALUATE_NOTE = """\
  # One stage over every audit of params.yaml (not a foreach): DVC rewrites the whole dvc.lock
  # after each stage it runs, so a sweep value pays that once here, not once per audit; an audit
  # whose inputs did not change keeps its tables in ~0.2 s (faircode/evaluate/reuse.py).  Its
  # deps, outs, metrics and plots list each audit of params.yaml (tests/test_pipeline.py checks it),
  # and each text audit of text_audits its manifest, payloads and scores (upstream/dvc.yaml's text
  # stages) and its results folder: a text audit is evaluated beside the grid audits, on the same
  # workers, and its run.json carries the same state (the results' one identity: freeze,
  # report, MLflow parent).  A multi-class audit (multiclass_audits) reads its manifest and raw
  # file and fits its S0-S2 grid here (a few hundred rows: no fit stage of its own)."""

EVALUATE_PARAMS = ("models", "stats", "degenerate", "verdicts", "curves",
                   "arbitrariness.consistency_level", "arbitrariness.accuracy_tolerance",
                   "run.seeds", "run.seed_mode")
RESULTS = Path("results")
REPORT_OUTS = (SUMMARY, SUMMARY_FAMILIES, RESIDUAL_FLOOR, *(
    f for t in ("paper_table", "performance_table", "counterfactual_table",
                "residual_floor_table") for f in paper_table_files(t)))
GRID_REPORT_OUTS = paper_table_files("effects_table")
"""The report's tables of the grid audits' paired effects: written only when there are some."""
REPORT_FIGURES = ("heatmap_demographic_parity_diff.png",
                  "residual_floor_demographic_parity_diff.png")

PLOTS_NOTE = """\
# `dvc plots show` draws the evaluate stage's strategy charts above (one per audit: a panel per
# protected attribute) and these: per audit, S0's parity difference on the first protected
# attribute against the decision threshold (results/curves/<audit>.csv; one line per model
# family; results/<audit>/curves.csv has every metric with its interval; one entry per audit of
# params.yaml, tests/test_dvc_views.py checks it), and two report figures."""


def lists_text(params: Params) -> str:
    """The text of :data:`LISTS` for ``params``: each list's names, sorted (the order changes
    no output); a list of a later task kind only when it names an audit, so the file of a
    pipeline without one is what it was."""
    return "".join(f"{key}: {', '.join(sorted(names))}\n" for key, names in params.lists()
                   if names or key in ("audits", "text_audits"))


def _check_params() -> list[str]:
    return [*_items(_code("check_params", "pipeline/dvc_files.py", "pipeline/dvc_check.py",
                          "core"), 6), "    outs:",
            *_out("data/params.ok", persist=False),
            *_out(LISTS, persist=False, note="the lists, sorted: a dep of the report"),
            "    always_changed: true"]


def _evaluate(params: Params, parts: Sequence[FitPart], bag: BagStage | None) -> list[str]:
    grid, text, regression = params.audits, params.text_audits, params.regression_audits
    multi = params.multiclass_audits
    deps = _code("evaluate", "core", "provenance", "counterfactual", "audit", "stats", "grid",
                 "evaluate")
    folders = [*(f.part for f in parts), *([bag.part] if bag is not None else [])]
    deps += [p for a in grid for p in (f"audits/{a}", f"data/prepared/{a}",
                                       *(f"data/predictions/{a}/{f}" for f in folders))]
    lines = ["", EVALUATE_NOTE, "  evaluate:", "    cmd: python -m faircode.pipeline.stages."
             "evaluate data/prepared data/predictions data/text results", "    deps:",
             *_items(deps, 6)]
    if text:
        lines += ["      # a text audit (params.yaml's text_audits): its manifest, payloads, "
                  "trained systems and scores", *_items([p for a in text for p in (
                      f"audits/{a}", f"data/text/{a}/payloads", f"data/text/{a}/systems",
                      f"data/text/{a}/scores")], 6)]
    if regression:
        lines += ["      # a regression audit (params.yaml's regression_audits): its manifest, raw "
                  "file and fit", *_items([p for a in regression for p in (
                      f"audits/{a}", f"data/raw/{a}", f"data/predictions/{a}/{REGRESSION_PART}")],
                      6)]
    if multi:
        lines += ["      # a multi-class audit (params.yaml's multiclass_audits): its manifest and "
                  "raw file", *_items([p for a in multi for p in (f"audits/{a}",
                                                                   f"data/raw/{a}")], 6)]
    lines += ["    params:", *_items(EVALUATE_PARAMS, 6),
              "    outs:  # persist: kept in place while the stage runs, so it can find them "
              "unchanged"]
    views = {a: dvc_views(RESULTS, a) for a in grid}
    for a in grid:
        lines += [*_out(f"results/{a}"), *_out(views[a].curve.as_posix()),
                  *_out(views[a].full.as_posix())]
    for a in text:
        lines += _out(f"results/{a}", persist=False,
                      note="a text audit's tables and run.json, written whole")
    for a in regression:
        lines += [*_out(f"results/{a}", persist=False,
                        note="a regression audit's tables and run.json, written whole"),
                  *_out(dvc_views(RESULTS, a).full.as_posix(), persist=False)]
    for a in multi:
        lines += [*_out(f"results/{a}", persist=False,
                        note="a multi-class audit's tables and run.json, written whole"),
                  *_out(dvc_views(RESULTS, a).full.as_posix(), persist=False)]
    if grid or regression or multi:
        lines += [
            "    # results/metrics/full/<audit>.json: every row set, <audit>.<S0..S4|deployed>."
            "<LR|RF|GB|", "    # system>.{accuracy,dp_diff.<attr>,dp_q.<attr>} (a regression "
            "audit's: its units, margin and", "    # every row set's mean gap with its verdict)",
            "    metrics:  # the headline, the same keys in every audit's file: attr, gap.S0 .. "
            "(the kind's headline", "      # gap per strategy: a parity difference, a mean gap "
            "in the outcome's units, a largest class share gap)",
            *(x for a in (*grid, *regression)
              for x in _out(dvc_views(RESULTS, a).headline.as_posix())),
            *(x for a in multi for x in _out(dvc_views(RESULTS, a).headline.as_posix(),
                                             persist=False))]
    if grid:
        lines += [
            "    plots:",
            "      # every row set's demographic-parity difference with its interval, a panel "
            "per attribute",
            "      # (faircode/evaluate/summary.py; the template is "
            ".dvc/plots/faircode_strategies.json)"]
        for a in grid:
            lines += _out(views[a].strategies.as_posix(), more=(
                "template: faircode_strategies", "x: dp_diff", "y: strategy",
                f'title: "{a}: demographic parity difference by strategy and model family"',
                'x_label: "demographic_parity_diff (disadvantaged - advantaged selection rate)"',
                "y_label: strategy"))
    return lines


def _report(params: Params) -> list[str]:
    audits = params.every_audit
    deps = [*_code("report", "core", "provenance", "counterfactual", "audit", "stats", "report"),
            *(f"audits/{a}" for a in sorted(audits)), *(f"results/{a}" for a in audits), LISTS]
    tables = REPORT_OUTS + (GRID_REPORT_OUTS if params.audits else ()) + (
        paper_table_files(REGRESSION_TABLE) if params.regression_audits else ())
    tables += ((RANKING_TABLE,) if params.audits else ()) + (
        (MULTICLASS_TABLE,) if params.multiclass_audits else ())
    return ["", "  report:",
            "    cmd: python -m faircode.pipeline.stages.report --params params.yaml --results "
            "results --audits audits", "    deps:", *_items(deps, 6),
            "    params:", "      - report", "    outs:",
            *(x for t in tables for x in _out(f"results/{t}", persist=False)),
            *_out((RESULTS / FIGURES).as_posix(),
                  note="persist: a figure whose inputs did not change is carried over"),
            *_out((RESULTS / REPORT_PAGE).as_posix(),
                  note="persist: an image of the same PNG bytes is carried over")]


def _track(params: Params) -> list[str]:
    deps = [*_code("track", "core", "provenance", "record"), (RESULTS / SUMMARY).as_posix(),
            *(f"results/{a}" for a in params.every_audit)]
    return ["", "  track:", "    cmd: python -m faircode.pipeline.stages.track results",
            "    deps:", *_items(deps, 6), "    always_changed: true"]


def _plots(params: Params) -> list[str]:
    if not params.audits:
        return []
    lines = ["", PLOTS_NOTE, "plots:"]
    columns = ", ".join(f'"{STRATEGY_CODES[Strategy.BASELINE]} {f.value}"' for f in ModelFamily)
    for a in params.audits:
        lines += [
            f'  - "{a} threshold curve":', "      template: faircode_curves",
            f'      title: "{a}: S0 demographic parity difference (first protected attribute) '
            'against the decision threshold"',
            '      x_label: "decision threshold (decide 1 above it)"',
            "      y_label: demographic_parity_diff", "      x: threshold", "      y:",
            f"        {dvc_views(RESULTS, a).curve.as_posix()}:", f"          [{columns}]"]
    return lines + _items(((RESULTS / FIGURES / f).as_posix() for f in REPORT_FIGURES), 2)


def _results_file(params: Params, parts: Sequence[FitPart], bag: BagStage | None) -> str:
    lines = [RESULTS_HEADER.rstrip("\n"), *_check_params(), *_evaluate(params, parts, bag),
             *_report(params), *_track(params), *_plots(params)]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ upstream/dvc.yaml

DATA_HEADER = """\
# The upstream stages of the faircode pipeline: fetch, prepare, the fit stages and the bag stage
# of every audit of params.yaml, and the text audits' fetch, payloads and scores -- all under data/
# that results/ is computed from.  ../dvc.yaml holds the stages that write results/ and the
# conventions every stage follows (deps exactly the code a stage imports, params exactly the
# sections it reads, every interpolation one single-quoted shell word).  Written, as
# ../dvc.yaml, by `faircode pipeline` from params.yaml's lists, which each foreach names itself
# (the list under fetch, an alias of it elsewhere): neither file reads params.yaml.
# Why a file of their own: DVC keeps one dvc.lock per dvc.yaml and rewrites the whole of it -- a
# ruamel.yaml round trip -- after every stage it runs.  These stages' entries (every raw,
# prepared and prediction file at K = 5: ~5,000 lines) live in upstream/dvc.lock, which a sweep
# value (check-params, evaluate, report, track) never rewrites: it rewrites only
# the ~1,300 lines of ../dvc.lock.  Every stage runs in the project root (wdir: ..), so its
# paths, its params.yaml and its lock entries are the root's, as in ../dvc.yaml; `dvc repro`
# runs both files.  Address a stage by this file: dvc repro -s upstream/dvc.yaml:fit@compas.
stages:"""

TEXT_NOTE = """\
  # The text audits (params.yaml text_audits; audits/<name>/audit.yaml with kind: text): fetch,
  # payloads (sentences, rendered name sentences, every axis's copies and placebo swaps), the
  # systems a text audit trains (its manifest's training: block, seeded by its random_state; no
  # param) and one score per distinct text and system; ../dvc.yaml's evaluate writes the tables.
  # text-score imports the audited systems' packages and no statistics, so a statistics edit
  # re-runs evaluate only."""


def _foreach(name: str, audits: Sequence[str], *, first: bool) -> list[str]:
    """A ``foreach`` over ``audits``: the list itself at the ``first`` stage of the kind (YAML
    anchor ``name``), an alias of it after."""
    if not first:
        return [f"    foreach: *{name}"]
    return [f"    foreach: &{name}  # params.yaml's {name}", *_items(audits, 6)]


def _data_stage(stage: str, foreach: list[str], cmd: str, deps: Sequence[str], outs: str,
                params: Sequence[str] = ()) -> list[str]:
    lines = ["", f"  {stage}:", *foreach, "    do:", "      wdir: ..", f"      cmd: {cmd}",
             "      deps:", *_items(deps, 8)]
    if params:
        lines += ["      params:", *_items(params, 8)]
    return [*lines, "      outs:", f"        - {outs}"]


def _grid_stages(audits: Sequence[str], parts: Sequence[FitPart],
                 bag: BagStage | None) -> list[str]:
    if not audits:
        return []
    lines = _data_stage("fetch", _foreach("audits", audits, first=True),
                        "python -m faircode.pipeline.stages.fetch '${item}'",
                        ["data/params.ok", *_code("fetch", "core", "counterfactual", "audit"),
                         "audits/${item}"], "data/raw/${item}")
    lines += _data_stage("prepare", _foreach("audits", audits, first=False),
                         "python -m faircode.pipeline.stages.prepare '${item}' "
                         "'data/raw/${item}' 'data/prepared/${item}'",
                         [*_code("prepare", "core", "counterfactual", "audit"), "audits/${item}",
                          "data/raw/${item}"], "data/prepared/${item}")
    for f in parts:
        cmd = (">-\n        python -m faircode.pipeline.stages.fit '${item}' "
               f"{f.part} 'data/prepared/${{item}}'\n        'data/predictions/${{item}}/{f.part}'")
        lines += _data_stage(f.stage, _foreach("audits", audits, first=False), cmd,
                             [*_code("fit", "core", "counterfactual", "audit", "grid"),
                              "audits/${item}", "data/prepared/${item}"],
                             f"data/predictions/${{item}}/{f.part}",
                             params=(*f.mitigation, "models.encoding", "run.seeds",
                                     "run.seed_mode"))
    if bag is not None:
        lines += _data_stage(bag.stage, _foreach("audits", audits, first=False),
                             ">-\n        python -m faircode.pipeline.stages.bag '${item}' "
                             "'data/prepared/${item}'\n        "
                             f"'data/predictions/${{item}}/{bag.part}'",
                             [*_code("bag", "core", "counterfactual", "audit", "grid"),
                              "audits/${item}", "data/prepared/${item}"],
                             f"data/predictions/${{item}}/{bag.part}", params=bag.params)
    return lines


def _text_stages(audits: Sequence[str]) -> list[str]:
    if not audits:
        return []
    lines = ["", TEXT_NOTE]
    lines += _data_stage("text-fetch", _foreach("text_audits", audits, first=True),
                         "python -m faircode.pipeline.stages.fetch '${item}'",
                         ["data/params.ok", *_code("fetch", "core", "counterfactual", "audit"),
                          "audits/${item}"], "data/raw/${item}")[1:]
    lines += _data_stage("text-prepare", _foreach("text_audits", audits, first=False),
                         ">-\n        python -m faircode.pipeline.stages.text_prepare '${item}' "
                         "'data/raw/${item}'\n        'data/text/${item}/payloads'",
                         [*_code("text_prepare", "core", "counterfactual", "audit"),
                          "audits/${item}", "data/raw/${item}"], "data/text/${item}/payloads")
    lines += _data_stage("text-train", _foreach("text_audits", audits, first=False),
                         ">-\n        python -m faircode.pipeline.stages.text_train '${item}' "
                         "'data/raw/${item}'\n        'data/text/${item}/systems'",
                         [*_code("text_train", "core", "counterfactual", "audit"),
                          "audits/${item}", "data/raw/${item}"], "data/text/${item}/systems")
    lines += _data_stage("text-score", _foreach("text_audits", audits, first=False),
                         ">-\n        python -m faircode.pipeline.stages.text_score '${item}' "
                         "'data/text/${item}/payloads'\n        'data/text/${item}/systems' "
                         "'data/text/${item}/scores'",
                         [*_code("text_score", "core", "counterfactual", "audit"),
                          "audits/${item}", "data/text/${item}/payloads",
                          "data/text/${item}/systems"],
                         "data/text/${item}/scores")
    return lines


REGRESSION_NOTE = """\
  # The regression audits (params.yaml regression_audits; audits/<name>/audit.yaml with task:
  # regression): fetch and the S0-S3 regression grid (faircode/grid/regression.py: S3 reads
  # mitigation.eps and mitigation.max_iter, never the classification constraint); ../dvc.yaml's
  # evaluate writes the tables from the raw file and these predictions."""
REGRESSION_PART = "regression"
"""The regression fit's folder under ``data/predictions/<audit>/``
(:data:`faircode.evaluate.regression_kind.PART`)."""


def _regression_stages(audits: Sequence[str]) -> list[str]:
    if not audits:
        return []
    lines = ["", REGRESSION_NOTE]
    lines += _data_stage("regression-fetch", _foreach("regression_audits", audits, first=True),
                         "python -m faircode.pipeline.stages.fetch '${item}'",
                         ["data/params.ok", *_code("fetch", "core", "counterfactual", "audit"),
                          "audits/${item}"], "data/raw/${item}")[1:]
    lines += _data_stage("regression-fit", _foreach("regression_audits", audits, first=False),
                         ">-\n        python -m faircode.pipeline.stages.regression_fit "
                         "'${item}' 'data/raw/${item}'\n        "
                         f"'data/predictions/${{item}}/{REGRESSION_PART}'",
                         [*_code("regression_fit", "core", "counterfactual", "audit", "grid"),
                          "audits/${item}", "data/raw/${item}"],
                         f"data/predictions/${{item}}/{REGRESSION_PART}",
                         params=("mitigation.eps", "mitigation.max_iter", "models.encoding",
                                 "run.seeds", "run.seed_mode"))
    return lines


MULTICLASS_NOTE = """\
  # The multi-class audits (params.yaml multiclass_audits; audits/<name>/audit.yaml with task:
  # multiclass): their raw file only; ../dvc.yaml's evaluate fits their S0-S2 grid and writes
  # the tables (a few hundred rows: no fit stage)."""


def _multiclass_stages(audits: Sequence[str]) -> list[str]:
    if not audits:
        return []
    return ["", MULTICLASS_NOTE, *_data_stage(
        "multiclass-fetch", _foreach("multiclass_audits", audits, first=True),
        "python -m faircode.pipeline.stages.fetch '${item}'",
        ["data/params.ok", *_code("fetch", "core", "counterfactual", "audit"), "audits/${item}"],
        "data/raw/${item}")[1:]]


def _data_file(params: Params, parts: Sequence[FitPart], bag: BagStage | None) -> str:
    lines = [DATA_HEADER, *_grid_stages(params.audits, parts, bag),
             *_text_stages(params.text_audits), *_regression_stages(params.regression_audits),
             *_multiclass_stages(params.multiclass_audits)]
    text = "\n".join(lines) + "\n"
    return text.replace("stages:\n\n", "stages:\n", 1)


def render(params: Params, *, parts: Sequence[FitPart],
           bag: BagStage | None = None) -> dict[str, str]:
    """The text of each pipeline file (:data:`FILES`) for ``params``' audits and text audits,
    with one fit stage per part of ``parts`` and, with ``bag``, the bag stage."""
    if not params.every_audit:
        raise ConfigError("params.yaml: audits: expected a non-empty list of audit names, or "
                          "audits in text_audits, regression_audits, multiclass_audits (the "
                          "audits the pipeline runs), got none")
    return {FILES[0]: _results_file(params, parts, bag),
            FILES[1]: _data_file(params, parts, bag)}
