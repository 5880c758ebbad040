"""The ``faircode`` command line: ``data fetch``, ``validate``, ``run``, ``audit``, ``perturb``,
``flips``, ``report``, ``track``, ``freeze``, ``verify`` and ``pipeline``.

Design decisions
----------------
* **One function per subcommand.**  Each ``_add_<command>(subparsers)`` registers its parser and
  sets ``handler``; :data:`SUBCOMMANDS` lists them.  Adding a subcommand is one function plus one
  entry in that tuple.
* **Bad input is one line, exit 2.**  A :class:`~faircode.core.errors.FaircodeError` is printed as
  its message on stderr; anything else is a bug and keeps its traceback.  A command line argparse
  refuses is one line too (``faircode run: --n-resamples: expected an integer, got 'ten' (str)``),
  not the whole usage block.
* **Unavailable data is a skip, not a failure**: the audit is reported as skipped with the
  instructions to obtain it, and the exit code stays 0 if nothing else failed.
* The CLI is the only place that reads the environment (``FAIRCODE_DATA_MIRROR``); the library
  takes every input as an explicit argument.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from faircode.core.config import MAX_DRAWS, MAX_JOBS, MAX_SEEDS
from faircode.core.errors import DataUnavailableError, FaircodeError
from faircode.core.numerics import require
from faircode.pipeline._args import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    HELP,
    MIRROR_ENV,
    MIRROR_HELP,
    example,
    mirrors,
    obtain,
    searched,
    with_flags,
)
from faircode.pipeline._boundary import run_command
from faircode.pipeline.audit_command import add_audit
from faircode.pipeline.flips_command import add_flips
from faircode.pipeline.freeze_command import add_freeze, add_verify
from faircode.pipeline.pipeline_command import add_pipeline

if TYPE_CHECKING:  # pragma: no cover - the subcommands import what they use
    from faircode.audit.data import AuditData
    from faircode.audit.manifest import Manifest
    from faircode.core.config import BenchmarkConfig
    from faircode.core.kinds import TaskKind

__all__ = ["SUBCOMMANDS", "main", "resolve_manifests"]

Handler = Callable[[argparse.Namespace], int]


def resolve_manifests(audits_dir: Path, names: Sequence[str]) -> list[Path]:
    """Map AUDIT arguments (names, manifest paths or audit folders) to manifest paths."""
    from faircode.audit.manifest import discover_manifests

    if not names:
        found = discover_manifests(audits_dir)
        if not found:
            raise FaircodeError(f"{audits_dir}: expected audits/*/audit.yaml manifests, got none")
        return found
    paths = []
    for name in names:
        candidate = Path(name)
        if candidate.is_file():
            paths.append(candidate)
        elif (candidate / "audit.yaml").is_file():
            paths.append(candidate / "audit.yaml")
        elif (audits_dir / name / "audit.yaml").is_file():
            paths.append(audits_dir / name / "audit.yaml")
        else:
            known = ", ".join(p.parent.name for p in discover_manifests(audits_dir)) or "none"
            raise FaircodeError(
                f"AUDIT: expected an audit name in {audits_dir} ({known}) or a manifest path, "
                f"got {name!r} (str)"
            )
    return paths


def _each_manifest(args: argparse.Namespace, work: Callable[[Manifest], None]) -> int:
    """Run ``work`` on every selected manifest (of any task kind, read by its kind's loader:
    :func:`faircode.audit.kinds.load_any_manifest`); report errors and skips; return the exit
    code.

    An audit without data is a skip (exit 0) when every audit runs, and a failure (exit 1, its one
    line on stderr saying how to obtain the data) when it was named on the command line."""
    from faircode.audit.kinds import load_any_manifest

    failed = unavailable = False
    for path in resolve_manifests(Path(args.audits), args.audit):
        try:
            work(load_any_manifest(path))
        except DataUnavailableError as exc:
            if args.audit:
                print(str(exc), file=sys.stderr)
                unavailable = True
            else:
                print(f"skipped: {exc}")
        except FaircodeError as exc:
            print(str(exc), file=sys.stderr)
            failed = True
    return EXIT_USAGE if failed else EXIT_FAILED if unavailable else EXIT_OK


# ------------------------------------------------------------------------------ data fetch




def _cmd_fetch(args: argparse.Namespace) -> int:
    from faircode.audit.fetch import fetch

    folders = mirrors(args.mirror)

    def work(manifest: Manifest) -> None:
        target = manifest
        if args.offline and manifest.dataset.source is not None:
            source = replace(manifest.dataset.source, url=None, member=None)
            target = replace(manifest, dataset=replace(manifest.dataset, source=source))
        try:
            result = fetch(target, mirrors=folders, timeout=args.timeout,
                           deadline=args.deadline, progress=sys.stderr.isatty())
        except DataUnavailableError as exc:
            raise DataUnavailableError(f"{exc} ({searched(manifest, folders)})") from None
        print(result.line(manifest.name))

    return _each_manifest(args, work)


def _add_data(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    data = subparsers.add_parser("data", help="manage the raw data files (data fetch)",
                                 **example("faircode data fetch german_credit_lending"))
    data_sub = data.add_subparsers(dest="data_command", required=True)
    fetch_p = data_sub.add_parser(
        "fetch", parents=[common], help=HELP["data fetch"],
        description=f"Fetch and verify each audit's raw file: from the mirrors ({MIRROR_HELP}), "
                    "else the manifest's URL; every copy is checked against its sha256.",
        **example("faircode data fetch german_credit_lending"))
    fetch_p.add_argument(
        "--mirror", action="append", metavar="DIR",
        help=f"a folder of <audit>/<file> copies; repeatable, the first holding the file wins "
             f"(default: ${MIRROR_ENV}, {os.pathsep}-separated, else ../shared/datasets and "
             "../shared/datasets-extra beside the project)",
    )
    fetch_p.add_argument("--timeout", type=float, default=60.0,
                         help="seconds a download may wait for its next bytes (60)")
    fetch_p.add_argument("--deadline", type=float, default=600.0,
                         help="seconds a whole download may take, connecting included (600)")
    fetch_p.add_argument("--offline", action="store_true", help="never download; mirror only")
    fetch_p.set_defaults(handler=_cmd_fetch)


# ------------------------------------------------------------------------------ validate


def summary_lines(data: AuditData) -> list[str]:
    """Render the validation summary of a prepared audit (no row-level values)."""
    import numpy as np

    m, y = data.manifest, data.y
    lines = [f"{m.name}: {m.title}  (sha256 {data.sha256[:12]}...)"]
    lines += [f"  {step:<66} {n:>9,} rows" for step, n in data.steps]
    classes = [str(c) for c in m.target.values or ()] if m.target.method == "classes" else []
    if classes:  # a multi-class outcome: each class's rows, overall and by group
        lines.append(f"  classes of {m.target.column}: " + ", ".join(
            f"{c} {int((y == i).sum()):,}" for i, c in enumerate(classes)))
    else:
        lines.append(f"  label rate (label 1 = {m.target.label_text(data.target_cut)}): "
                     f"{y.mean():.4f}")
    for attribute in m.protected_attributes:
        dis = data.disadvantaged[attribute.name]
        for group, mask in (("disadvantaged", dis), ("advantaged", ~dis)):
            size = int(mask.sum())
            if classes:
                shown = " / ".join(str(int((y[mask] == i).sum())) for i in range(len(classes)))
                lines.append(f"  {attribute.name:<16} {group:<14} {size:>9,} rows  classes "
                             f"{shown}")
                continue
            rate = float(y[mask].mean()) if mask.any() else float("nan")
            lines.append(
                f"  {attribute.name:<16} {group:<14} {size:>9,} rows  label rate {rate:.4f}"
            )
    lines.append(f"  train {len(data.train_index):,} / test {len(data.test_index):,} rows")
    if data.system is not None and m.system is not None:
        system, decided = data.system, data.system.decision
        lines.append(f"  system {system.name}: decision 1 = {system.rule}: selection rate "
                     f"{decided.mean():.4f} ({int(decided.sum()):,} of {decided.size:,} rows)")
        if system.score is not None and m.system.score is not None:
            lines.append(f"  system {system.name}: score {m.system.score.column} "
                         f"({system.scale}) from {system.score.min():g} to "
                         f"{system.score.max():g}")
    for stratum in m.strata:  # the legitimate factors the gap is also conditioned on
        shape = (f"{data.covariates[stratum.name].shape[1]} covariate terms (logistic "
                 "regression)" if stratum.regression else
                 f"{len(data.stratum_levels[stratum.name])} levels")
        lines.append(f"  stratum {stratum.name} ({', '.join(stratum.columns)}): {shape}")
    if data.unit is not None:
        sizes = np.bincount(data.unit)
        shared = np.intersect1d(data.unit[data.train_index], data.unit[data.test_index]).size
        lines.append(
            f"  units ({m.unit}): {sizes.size:,}; {int(sizes[sizes > 1].sum()):,} rows in "
            f"{int((sizes > 1).sum()):,} repeated units (at most {int(sizes.max())} rows); "
            f"train {np.unique(data.unit[data.train_index]).size:,} / test "
            f"{np.unique(data.unit[data.test_index]).size:,} units, {shared} in both"
        )
    return lines


def _cmd_validate(args: argparse.Namespace) -> int:
    from faircode.audit.data import load_audit
    from faircode.audit.manifest import Manifest
    from faircode.grid.calibration import calibration_warning

    folders = mirrors()

    def work(manifest: Manifest) -> None:
        obtain(manifest, folders)
        if not isinstance(manifest, Manifest):  # another task kind's (a regression's)
            print("\n".join(_kind_summary(manifest)))
            return
        data = load_audit(manifest)
        first = manifest.protected_attributes[0]  # S4's sensitive feature
        train = data.train_index
        fit = "" if manifest.task != "binary" else calibration_warning(
            data.y[train], data.disadvantaged[first.name][train],
            attribute=f"protected_attributes[0] ({first.name})")
        for warning in (*data.warnings, *([f"{manifest.file}: {fit}"] if fit else [])):
            print(f"warning: {warning}", file=sys.stderr)  # data a user may mean, but should see
        print("\n".join(summary_lines(data)))

    return _each_manifest(args, work)


def _kind_summary(manifest: object) -> list[str]:
    """``validate``'s summary of a manifest of another task kind than the grid's."""
    from faircode.audit.regression_data import load_regression_audit
    from faircode.audit.regression_manifest import RegressionManifest
    from faircode.pipeline.regression_command import regression_summary_lines

    if not isinstance(manifest, RegressionManifest):
        raise FaircodeError(f"{getattr(manifest, 'file', manifest)}: faircode validate: "
                            "expected a tabular manifest (a text audit is checked by its "
                            "stages), got another kind")
    data = load_regression_audit(manifest)
    for warning in data.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return regression_summary_lines(data)


def _add_validate(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "validate", parents=[common], help=HELP["validate"],
        **example("faircode validate german_credit_lending"))
    parser.set_defaults(handler=_cmd_validate)


# ------------------------------------------------------------------------------ run


def _cmd_run(args: argparse.Namespace) -> int:
    import time

    from rich.console import Console

    from faircode.core.config import ExecutionConfig, Params, load_params
    from faircode.core.kinds import REGRESSION
    from faircode.pipeline.progress import RunDisplay, audit_summary, summary_table
    from faircode.pipeline.run import degenerate_cells, prepare_audits, run_audits, split_by_kind
    from faircode.provenance.state import provenance

    started = time.perf_counter()
    # params.yaml (optional) -> config, then the flags override it: the same object either way
    params = load_params(Path(args.params)) if args.params else Params()
    config = with_flags(params.config, args, {
        "n_resamples": "stats.n_resamples", "n_permutations": "stats.n_permutations",
        "jobs": "run.jobs", "constraint": "mitigation.constraint", "eps": "mitigation.eps",
        "decision_threshold": "models.decision_threshold", "seeds": "run.seeds",
        "seed_mode": "run.seed_mode", "encoding": "models.encoding"}, command="faircode run")
    backend = args.backend or ("dask" if args.scheduler else params.execution.backend)
    execution = ExecutionConfig(backend=backend,
                                scheduler=args.scheduler or params.execution.scheduler)
    failed, bad_input = False, False

    def report(name: str, exc: BaseException) -> None:
        nonlocal failed, bad_input
        if isinstance(exc, FaircodeError):  # bad input (manifest, data): exit 2 as everywhere
            print(str(exc), file=sys.stderr)
            bad_input = True
        else:  # one audit's bug must not lose the others' results
            print(f"{name}: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            failed = True

    unavailable, folders = False, mirrors()

    def skipped(message: str) -> None:  # a named audit without data fails; in a batch it skips
        nonlocal unavailable
        if args.audit:
            print(message, file=sys.stderr)
            unavailable = True
        else:
            print(f"skipped: {message}")

    paths = resolve_manifests(Path(args.audits), args.audit or list(params.every_audit))
    grid, alone = split_by_kind(paths, on_error=report)
    regression = _regression_paths([p for p, kind in alone if kind is REGRESSION], folders,
                                   on_error=report, on_skipped=skipped)
    prepared = prepare_audits(grid, on_error=report, on_skipped=skipped,
                              obtain=lambda m: obtain(m, folders))
    with RunDisplay(Console(stderr=True), quiet=args.quiet) as display:
        runs = run_audits(prepared, config=config, execution=execution, out=Path(args.out),
                          provenance_record=provenance(), on_error=report,
                          on_start=display.start, on_cell_done=display.done,
                          bagged=args.bagged)
    for path, kind in alone:  # a kind without the grid: its own steps, in one process
        if kind is REGRESSION:  # its own fit, after the grid (run_regression_audits)
            continue
        _run_alone(path, kind, config=config, out=Path(args.out), folders=folders,
                   report=report, skipped=skipped)
    for run in runs:
        print(f"{run.data.manifest.name}: wrote {run.folder}")
    if runs:
        # a file or pipe gets the whole table on one line per audit, not 80-column wrapping
        Console(width=None if sys.stdout.isatty() else 160).print(summary_table(
            [audit_summary(r.predictions, r.results, rows=len(r.data.y)) for r in runs],
            wall=time.perf_counter() - started))
        print("degenerate decisions (uninformative cells: their gaps are not findings):")
        for run in runs:
            cells = degenerate_cells(run.results)
            print(f"  {run.data.manifest.name}: " + ("; ".join(cells) if cells else "none"))
    if regression:
        from faircode.pipeline.regression_command import run_regression_audits

        run_regression_audits(regression, config=config, out=Path(args.out),
                              provenance_record=provenance(), on_error=report)
    return EXIT_USAGE if bad_input else EXIT_FAILED if failed or unavailable else EXIT_OK


def _regression_paths(paths: Sequence[Path], folders: tuple[Path, ...], *,
                      on_error: Callable[[str, BaseException], None],
                      on_skipped: Callable[[str], None]) -> list[Path]:
    """The regression audits of ``paths`` (their own fit and tables:
    :mod:`faircode.pipeline.regression_command`) whose raw files could be obtained; one
    without data is ``on_skipped``, a bad one ``on_error``, and neither runs."""
    from faircode.audit.regression_manifest import load_regression_manifest

    found = []
    for path in paths:
        try:
            obtain(load_regression_manifest(path), folders)
        except DataUnavailableError as exc:
            on_skipped(str(exc))
        except FaircodeError as exc:
            on_error(path.parent.name, exc)
        else:
            found.append(path)
    return found


def _run_alone(path: Path, kind: TaskKind, *, config: BenchmarkConfig, out: Path,
               folders: tuple[Path, ...], report: Callable[[str, BaseException], None],
               skipped: Callable[[str], None]) -> None:
    """Run one audit of a kind without the grid -- a text audit
    (:func:`faircode.pipeline.text_run.run_text_audit`), a multi-class one from its raw file
    (:func:`faircode.pipeline.run.run_alone`) -- reporting its failure or missing data as a
    grid audit's."""
    from faircode.core.kinds import TEXT
    from faircode.pipeline.run import run_alone, run_lines
    from faircode.pipeline.text_run import run_text_audit
    from faircode.provenance.state import provenance

    try:
        if kind is TEXT:
            folder = run_text_audit(path, config=config, out=out,
                                    obtain=lambda m: obtain(m, folders),
                                    provenance_record=provenance(), say=print)
        else:
            folder = run_alone(path, kind, config=config, out=out,
                               obtain=lambda m: obtain(m, folders))
    except DataUnavailableError as exc:
        skipped(str(exc))
    except Exception as exc:  # one audit's failure must not lose the others
        report(path.parent.name, exc)
    else:
        print(f"{path.parent.name}: wrote {folder}")
        if kind is not TEXT:
            print("\n".join(run_lines(folder, kind)))


def _add_run(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from faircode.core.config import CONSTRAINTS

    parser = subparsers.add_parser(
        "run", parents=[common], help=HELP["run"],
        description="Fit and score the strategy x model grid of each audit (a missing raw file is "
                    f"fetched first: {MIRROR_HELP}).",
        **example("faircode run german_credit_lending --n-resamples 200 --n-permutations 200 "
                  "--out /tmp/faircode-quick"))
    parser.add_argument("--out", default="results", help="results folder (default: results)")
    parser.add_argument("--params", help="params.yaml to start from (flags override its keys; "
                                         "its audits apply when no AUDIT is given)")
    parser.add_argument("--n-resamples", type=int,
                        help=f"bootstrap resamples per CI (2000; 1 to {MAX_DRAWS:,})")
    parser.add_argument("--n-permutations", type=int,
                        help=f"permutations per p-value (2000; 1 to {MAX_DRAWS:,})")
    parser.add_argument("--jobs", type=int,
                        help=f"local worker processes (default: all cores; at most {MAX_JOBS})")
    parser.add_argument("--backend", help="where the fits run: local (worker processes here) "
                                          "or dask (an existing scheduler; default: params "
                                          "run.backend, else local)")
    parser.add_argument("--scheduler", help="dask scheduler address, e.g. tcp://host:8786 "
                                            "(implies --backend dask)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bar and no per-cell lines (CI); the summary stays")
    parser.add_argument("--constraint", choices=CONSTRAINTS, help="S3-S5 fairness constraint")
    parser.add_argument("--eps", type=float, help="ExponentiatedGradient eps (0.01)")
    parser.add_argument("--decision-threshold", type=float, help="S0-S2 threshold (0.5)")
    parser.add_argument("--seeds", type=int, help="training replicates per cell (1; the paper "
                                                  "state: params.yaml's 5; at most "
                                                  f"{MAX_SEEDS}); K > 1 writes "
                                                  "stability.csv and effects_stability.csv")
    parser.add_argument("--seed-mode", help="what a replicate re-draws: model (model seeds, "
                                            "same split; default) or split (also the split)")
    parser.add_argument("--encoding", help="how logistic regression sees nominal columns: label "
                                           "(sorted integer codes; default) or onehot")
    parser.add_argument("--bagged", action="store_true",
                        help="also fit the bagged ensembles of S0 and S2 (arbitrariness.bags "
                             "members each, the bag stage of dvc repro) and write the "
                             "arbitrariness and multiplicity tables: the pipeline's folder")
    parser.set_defaults(handler=_cmd_run)


# ------------------------------------------------------------------------------ perturb


PERTURB_DESCRIPTION = """\
Perturb JSONL payloads with the axes of a YAML file; the copies go to stdout, one record per
payload, axis and kind (id, axis, kind, fired, changed, perturbed). faircode ships no built-in axes:
you choose them (how an axis works, illustrative axes to copy and scrutinise, how to build your
own: docs/perturbation-axes.md).

the axes file (a list of axes, or a mapping with the key axes and optionally groups, a text
audit's placebo groups: docs/perturbation-axes.md):
  axes:
    - name: gender_male_to_female      # one direction; the reverse is another axis
      substitutions:                   # whole-word, case-insensitive, case-preserving
        - {pattern: he, replacement: she}              # kind: explicit (the default)
        - {pattern: his, replacement: her}
    - name: name_white_to_black
      substitutions:
        - {pattern: Emily, replacement: Lakisha, kind: proxy}   # a correlate, not the attribute
"""


def _cmd_perturb(args: argparse.Namespace) -> int:
    from faircode.core.errors import ConfigError
    from faircode.core.files import read_bounded
    from faircode.core.schema import decode_utf8
    from faircode.counterfactual._jsonl import MAX_JSONL_BYTES, dumps_line, split_lines
    from faircode.counterfactual.axes import load_axes
    from faircode.counterfactual.jsonl import perturb_jsonl

    axes = load_axes(Path(args.axes))
    source = Path(args.input)
    try:  # a regular file only (a FIFO would never end), at most MAX_JSONL_BYTES of it
        data = read_bounded(source, limit=MAX_JSONL_BYTES, error=ConfigError, what="JSONL file")
    except OSError as exc:
        raise FaircodeError(f"{source}: cannot be read: {type(exc).__name__}: {exc}") from None
    lines = split_lines(decode_utf8(data, where=str(source)))  # "\n" only: U+2028 is JSON text
    records = perturb_jsonl(axes, lines, source=str(source))  # every line checked first
    return _write_stdout("".join(dumps_line(r) + "\n" for r in records))


def _write_stdout(text: str) -> int:
    """Write ``text`` to stdout and flush; a failing stdout (a full disk, a closed pipe) is one
    line on stderr and exit 1 (the input was fine), never a traceback."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as exc:
        # what is still buffered would fail again at exit ("Exception ignored ..."): point the
        # descriptor at /dev/null, as the Python documentation advises for a broken pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"stdout: cannot write the output: {exc.strerror or exc} ({type(exc).__name__})",
              file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _add_perturb(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "perturb", help=HELP["perturb"],
        description=PERTURB_DESCRIPTION,
        **example("faircode perturb --axes axes.yaml payloads.jsonl > perturbed.jsonl"))
    parser.add_argument("--axes", required=True, help="YAML file of axes (a list or {axes: ...})")
    parser.add_argument("input", help="JSONL file: one payload object per line")
    parser.set_defaults(handler=_cmd_perturb)


# ------------------------------------------------------------------------------ report


def _add_report(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    def handler(args: argparse.Namespace) -> int:
        from faircode.provenance.state import REPORT_CODE, params_file_record, provenance
        from faircode.report.build import write_report

        record = {**provenance(code=REPORT_CODE, numerics=False),
                  "params_file": params_file_record(Path(args.params))}
        outputs = write_report(
            Path(args.results), audits_dir=Path(args.audits), only=tuple(args.audit),
            metric=args.metric, model=args.model, provenance=record)
        print(f"wrote {outputs.summary}, {len(outputs.tables)} tables, "
              f"{len(outputs.figures)} figures (PNG+PDF), "
              f"{outputs.html}")
        return EXIT_OK

    parser = subparsers.add_parser(
        "report", parents=[common], help=HELP["report"],
        **example("faircode report german_credit_lending --results /tmp/faircode-quick"))
    parser.add_argument("--results", default="results", help="results folder (default: results)")
    parser.add_argument("--metric", default="demographic_parity",
                        help="fairness metric of the paper table and figures "
                             "(default: demographic_parity)")
    parser.add_argument("--model", help="one model family (default: every family)")
    parser.add_argument("--params", default="params.yaml",
                        help="the params file whose parameters the runs' are compared with in "
                             "the provenance (default: params.yaml)")
    parser.set_defaults(handler=handler)


# ------------------------------------------------------------------------------ track


def _add_track(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """``faircode track``: sync results/ into MLflow once per state; exit 0, 2 bad results,
    3 tracking failed (results intact, one line saying how to re-sync)."""

    def handler(args: argparse.Namespace) -> int:
        from faircode.pipeline.stages.track import track

        root = Path(os.environ.get("DVC_ROOT") or Path.cwd())
        return track(Path(args.results), root=root, env=os.environ,
                     tracking_uri=args.tracking_uri, experiment=args.experiment)

    parser = subparsers.add_parser(
        "track", help=HELP["track"],
        description="Log a results folder to MLflow once per state (exit 2: bad results, 3: the "
                    "store failed, results intact).",
        **example("faircode track --results results"))
    parser.add_argument("--results", default="results", help="results folder (default: results)")
    parser.add_argument("--tracking-uri", help="MLflow store or server ($MLFLOW_TRACKING_URI, "
                        "default sqlite:///<project root>/mlflow.db)")
    parser.add_argument("--experiment", default="faircode", help="experiment (default faircode)")
    parser.set_defaults(handler=handler)


SUBCOMMANDS: tuple[Callable[[argparse._SubParsersAction, argparse.ArgumentParser], None], ...] = (
    _add_data,
    _add_validate,
    _add_run,
    _add_perturb,
    _add_report,
    _add_track,
    add_freeze,
    add_verify,
    add_audit,
    add_flips,
    add_pipeline,
)


_TYPE_NAMES = {"int": "an integer", "float": "a number"}
_INVALID_VALUE = re.compile(r"^argument (?P<arg>[^:]+): invalid (?P<type>\w+) value: (?P<got>.*)$")
_INVALID_CHOICE = re.compile(
    r"^argument (?P<arg>[^:]+): invalid choice: (?P<got>.*?) \(choose from (?P<options>.*)\)$")


class _UsageError(FaircodeError):
    """A command line argparse refuses; one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (no usage block), like every other error.

    ``--n-resamples ten`` reads ``faircode run: --n-resamples: expected an integer, got 'ten'
    (str)``; the usage stays one ``--help`` away.
    """

    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{self.prog}: {_usage_line(message)}")


def _usage_line(message: str) -> str:
    """argparse's error message in the ``<where>: expected ..., got ...`` form."""
    message = " ".join(message.split())
    if found := _INVALID_VALUE.match(message):
        expected = _TYPE_NAMES.get(found["type"], f"a valid {found['type']}")
        return f"{found['arg']}: expected {expected}, got {found['got']} (str)"
    if found := _INVALID_CHOICE.match(message):
        options = found["options"].replace("'", "")
        return f"{found['arg']}: expected one of {options}, got {found['got']} (str)"
    if message.startswith("the following arguments are required: "):
        names = [n if n != "command" and not n.endswith("_command") else "a subcommand"
                 for n in message.split(": ", 1)[1].split(", ")]
        return f"expected {', '.join(names)} (see --help), got nothing"
    if message.startswith("unrecognized arguments: "):
        return f"expected known arguments (see --help), got {message.split(': ', 1)[1]!r} (str)"
    if (found := re.match(r"^argument ([^:]+): (expected .*)$", message)) is not None:
        return f"{found[1]}: {found[2]}, got nothing"
    return f"{message} (see --help)"


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every subcommand of :data:`SUBCOMMANDS`."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--audits", default="audits", help="folder of <name>/audit.yaml")
    common.add_argument("audit", nargs="*", metavar="AUDIT",
                        help="an audit name (audits/<name>/) or a manifest path; repeatable "
                             "(default: every audit)")
    parser = _Parser(prog="faircode", **example("faircode data fetch german_credit_lending"))
    subparsers = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(subparsers, common)
    parser.description = ("Audit machine-learning decisions for bias. Subcommands: "
                          f"{', '.join(subparsers.choices)} (faircode <subcommand> --help).")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``faircode`` command line; return the exit code.

    Bad input, an ``OSError``, a ``MemoryError``, SIGINT and SIGTERM each end it with one line
    (:func:`faircode.pipeline._boundary.run_command`; the codes are in docs/operations.md).
    """
    def body() -> int:
        given = sys.argv[1:] if argv is None else argv
        for i, arg in enumerate(given, start=1):
            if "\0" in arg:  # no file name can hold one; os calls would raise ValueError
                raise _UsageError(f"faircode: argument {i}: expected no NUL character (a path "
                                  f"never holds one), got {arg!r} (str)")
        args = build_parser().parse_args(argv)
        handler: Handler = args.handler
        require()  # this process computes under the declared numerical configuration
        return handler(args)

    return run_command(body)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
