"""Do the headline verdicts depend on how logistic regression sees nominal columns?

Run from the repository root (the machine is shared: ``nice``):

    PYTHONPATH=$PWD FAIRCODE_DATA_MIRROR=... nice python bench/encoding_sensitivity.py
        [--audits german_credit_lending insurance_denial ...] [--seeds 1] [--resamples 2000]
        [--jobs 2] [--out DIR] [--table results/encoding_sensitivity.csv]
        [--gap-verdicts module:function] [--effect-verdicts module:function]

For each audit (default: every audit of params.yaml with data) the grid runs through the library
(``faircode run``'s steps) twice on the same prepared split, at ``run.seeds`` = ``--seeds``
(K = 1 by default: the whole grid twice per audit is what the shared machine affords; a K = 1
verdict is replicate 0's) and B = P = ``--resamples``: once with ``models.encoding: label`` (the
manifest specification's default, the paper state) and once with ``onehot``.  ``onehot`` changes
logistic regression only (:data:`faircode.grid.models.ONEHOT_FAMILIES`; the tree families'
predictions are the same bit for bit), so the second run re-fits the LR cells alone and reuses
the trees' predictions; both are evaluated and written in full (``--out``: ``label/`` and
``onehot/`` results folders; default a temporary folder, removed).

The headline's claims per audit, on its first protected attribute and the report metric
(demographic parity), each under both encodings:

* ``S0 gap`` -- the number of model families whose S0 gap verdict is ``gap`` (and the LR one);
* ``S3 reduces``/``S4 reduces`` -- families whose paired effect against S0 is ``reduced``;
* ``S3 parity``/``S4 parity`` -- families whose own gap verdict is ``parity``;
* ``LR S0 accuracy`` -- the number the encoding moves (0.827 -> 0.855 on benefits_denial).

A claim "changes" when its count of families (or the LR verdict) differs.  Verdicts come through
two adapters so the table can be recomputed with the final verdict functions:
``--gap-verdicts`` (default :func:`gap_verdicts_today`: ``fairness.csv``'s ``verdict`` column,
the shipped rule; for a folder written before verdicts ``gap`` when it calls the gap
significant, ``parity`` when its interval lies inside ±0.05, ``uninformative`` for a degenerate
cell, else ``inconclusive``) and ``--effect-verdicts`` (default
:func:`effect_verdicts_today`: ``effects.csv``'s ``verdict`` column).  Each is a function of one
audit's results folder returning rows ``strategy, model, protected_attribute, metric, verdict``
(the effects' also ``reference``).  The table (one row per audit x claim: ``label``, ``onehot``,
``changed``, ``seeds``) is printed as Markdown and, with ``--table``, written as CSV (the report
reads ``<results>/encoding_sensitivity.csv`` for its one line) with the Markdown beside it.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from faircode.audit.data import load_audit
from faircode.audit.manifest import load_manifest
from faircode.audit.prepared import PreparedAudit, prepare, replicate_split
from faircode.core.cells import ModelFamily
from faircode.core.config import BenchmarkConfig, load_params
from faircode.core.errors import DataUnavailableError
from faircode.core.seeds import replicate_seed
from faircode.evaluate.write import write_audit
from faircode.grid.fit import fit_cell
from faircode.grid.models import ONEHOT_FAMILIES
from faircode.grid.predictions import AuditPredictions, CellPredictions, ReplicatePredictions
from faircode.pipeline.run import evaluate, fit
from faircode.provenance.state import provenance

DP = "demographic_parity_diff"
BASELINE, S3, S4 = "baseline", "in_processing", "post_processing"
MARGIN = 0.05
LR = ModelFamily.LOGISTIC_REGRESSION.value
Verdicts = Callable[[Path], pd.DataFrame]


def gap_verdicts_today(folder: Path) -> pd.DataFrame:
    """Gap verdicts from ``fairness.csv``: its own ``verdict`` column (written by the shipped
    verdict rule, :mod:`faircode.stats.verdicts`); for a folder written before verdicts,
    significance and a ±0.05 interval."""
    fair = pd.read_csv(folder / "fairness.csv", keep_default_na=True)
    columns = ["strategy", "model", "protected_attribute", "metric", "verdict"]
    if "verdict" in fair:
        return fair.loc[:, columns]
    note = fair["note"].fillna("").astype(str)
    inside = (fair["ci_low"] > -MARGIN) & (fair["ci_high"] < MARGIN)
    verdict = np.where(note.str.contains("degenerate_decisions") | fair["value"].isna(),
                       "uninformative", np.where(fair["significant"].astype(str) == "True",
                                                 "gap", np.where(inside, "parity",
                                                                 "inconclusive")))
    return fair.assign(verdict=verdict).loc[:, columns]


def effect_verdicts_today(folder: Path) -> pd.DataFrame:
    """Effect verdicts: ``effects.csv``'s own ``verdict`` column (at K > 1 the K-replicate
    estimate's, as the report's)."""
    effects = pd.read_csv(folder / "effects.csv", keep_default_na=True)
    return effects.loc[:, ["strategy", "reference", "model", "protected_attribute", "metric",
                           "verdict"]]


def _adapter(spec: str | None, default: Verdicts) -> Verdicts:
    """``module:function`` imported, or ``default``."""
    if not spec:
        return default
    module, _, name = spec.partition(":")
    fn: Verdicts = getattr(importlib.import_module(module), name)
    return fn


def _onehot(data: PreparedAudit, base: AuditPredictions, config: BenchmarkConfig
            ) -> AuditPredictions:
    """``base`` (label) with every cell (and replicate) of a one-hot family re-fitted onehot."""
    def refit(cell: CellPredictions, seed: int, train: np.ndarray, test: np.ndarray,
              perturbed: bool) -> CellPredictions:
        return fit_cell(data, cell.strategy, cell.family, mitigation=config.mitigation,
                        seed=seed, train=train, test=test,
                        perturbed=data.perturbed if perturbed else None,
                        keep_train_scores=perturbed or cell.train_score is not None,
                        encoding="onehot")

    master = data.manifest.random_state
    cells = tuple(refit(c, master, data.train_index, data.test_index, True)
                  if c.family in ONEHOT_FAMILIES and not c.skipped else c for c in base.cells)
    replicates = []
    for r in base.replicates:
        if r.cell.family in ONEHOT_FAMILIES and not r.cell.skipped:
            train, test = replicate_split(data, replicate=r.replicate,
                                          mode=config.replicates.seed_mode)
            r = ReplicatePredictions(r.replicate, refit(
                r.cell, replicate_seed(master, r.replicate), train, test, False), r.test_index)
        replicates.append(r)
    return dataclasses.replace(base, cells=cells, replicates=tuple(replicates),
                               config={**base.config, "encoding": "onehot"})


def run_audit(name: str, *, config: BenchmarkConfig, out: Path) -> dict[str, float]:
    """Fit, evaluate and write one audit under both encodings; the seconds of each fit."""
    data = prepare(load_audit(load_manifest(Path("audits") / name / "audit.yaml")))
    t0 = time.perf_counter()
    label = fit(data, config=config)
    t1 = time.perf_counter()
    onehot = _onehot(data, label, config)
    t2 = time.perf_counter()
    for encoding, predictions in (("label", label), ("onehot", onehot)):
        run_config = config.with_params({"models.encoding": encoding})
        results = evaluate(data, predictions, config=run_config)
        write_audit(data, results, config=run_config, out_dir=out / encoding,
                    provenance_record=provenance())
    return {"fit_label": t1 - t0, "refit_lr_onehot": t2 - t1}


def claims(folder: Path, first: str, *, gaps: Verdicts, effects: Verdicts) -> dict[str, str]:
    """One audit's headline claims (module docstring) on attribute ``first`` from its results
    ``folder``."""
    gap = gaps(folder)
    gap = gap[(gap["metric"] == DP) & (gap["protected_attribute"] == first)]
    eff = effects(folder)
    eff = eff[(eff["metric"] == DP) & (eff["protected_attribute"] == first)
              & (eff["reference"] == BASELINE)]
    perf = pd.read_csv(folder / "performance.csv")
    acc = perf[(perf["strategy"] == BASELINE) & (perf["model"] == LR)
               & (perf["metric"] == "accuracy")]["value"]
    out = {"attribute": first}

    def count(rows: pd.DataFrame, strategy: str, word: str) -> str:
        mine = rows[rows["strategy"] == strategy]
        informative = mine[mine["verdict"] != "uninformative"]
        lr = mine[mine["model"] == LR]["verdict"]
        lr_word = str(lr.iloc[0]) if len(lr) else "n/a"
        return (f"{int((informative['verdict'] == word).sum())} of {len(informative)} "
                f"(LR {lr_word})")

    out["S0 gap"] = count(gap, BASELINE, "gap")
    out["S3 reduces"] = count(eff, S3, "reduced")
    out["S4 reduces"] = count(eff, S4, "reduced")
    out["S3 parity"] = count(gap, S3, "parity")
    out["S4 parity"] = count(gap, S4, "parity")
    out["LR S0 accuracy"] = f"{float(acc.iloc[0]):.3f}" if len(acc) else "n/a"
    return out


def table(out: Path, audits: list[str], *, seeds: int, gaps: Verdicts,
          effects: Verdicts) -> pd.DataFrame:
    """The sensitivity table: one row per audit x claim under both encodings."""
    rows = []
    for name in audits:
        first = load_manifest(Path("audits") / name / "audit.yaml").protected_attributes[0].name
        label = claims(out / "label" / name, first, gaps=gaps, effects=effects)
        onehot = claims(out / "onehot" / name, first, gaps=gaps, effects=effects)
        for claim in label:
            if claim == "attribute":
                continue
            changed = label[claim] != onehot[claim] if claim != "LR S0 accuracy" else ""
            rows.append({"audit": name, "attribute": label["attribute"], "claim": claim,
                         "label": label[claim], "onehot": onehot[claim], "changed": changed,
                         "seeds": seeds})
    return pd.DataFrame(rows)


def markdown(frame: pd.DataFrame) -> str:
    """The table as Markdown."""
    head = "| audit | attribute | claim | label | onehot | changed |\n|---|---|---|---|---|---|\n"
    return head + "".join(f"| {r.audit} | {r.attribute} | {r.claim} | {r.label} | {r.onehot} "
                          f"| {'yes' if r.changed is True else 'no' if r.changed is False else ''}"
                          f" |\n" for r in frame.itertuples())


def main() -> None:
    """Run the audits under both encodings and print (and write) the sensitivity table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", nargs="+", help="default: params.yaml's audits with data")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, help="keep both results folders here")
    parser.add_argument("--table", type=Path, help="write the table here (CSV; .md beside it)")
    parser.add_argument("--gap-verdicts", help="module:function (default: fairness.csv's "
                        "verdict)")
    parser.add_argument("--effect-verdicts", help="module:function (default: effects.csv's "
                        "verdict)")
    args = parser.parse_args()
    params = load_params(Path("params.yaml"))
    audits = args.audits or list(params.audits)
    config = params.config.with_params({
        "stats.n_resamples": args.resamples, "stats.n_permutations": args.resamples,
        "run.seeds": args.seeds, "run.seed_mode": "split" if args.seeds > 1 else "model"
    })
    out = args.out or Path(tempfile.mkdtemp(prefix="encoding-sensitivity-"))
    done, seconds = [], {}
    try:
        for name in audits:
            try:
                seconds[name] = run_audit(name, config=config, out=out)
                done.append(name)
            except DataUnavailableError as exc:
                print(f"{name}: skipped ({str(exc).splitlines()[0]})")
        frame = table(out, done, seeds=args.seeds,
                      gaps=_adapter(args.gap_verdicts, gap_verdicts_today),
                      effects=_adapter(args.effect_verdicts, effect_verdicts_today))
    finally:
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)
    print(f"# encoding sensitivity: K = {args.seeds}, B = P = {args.resamples}, "
          f"{len(done)} audits (demographic parity, first protected attribute)\n")
    print(markdown(frame))
    changed = frame[frame["changed"] == True]  # noqa: E712  (object column: True/False/"")
    print(f"claims that change under onehot: {len(changed)} of "
          f"{int((frame['changed'] != '').sum())}")
    for name, s in seconds.items():
        print(f"{name}: fit (label, whole grid) {s['fit_label']:.0f} s, LR cells re-fitted "
              f"onehot {s['refit_lr_onehot']:.0f} s")
    if args.table:
        args.table.parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(args.table, index=False)
        args.table.with_suffix(".md").write_text(markdown(frame))


if __name__ == "__main__":
    main()
