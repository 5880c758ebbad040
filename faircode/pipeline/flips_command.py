"""``faircode flips``: audit any text model from two score files (originals, perturbed copies).

The practitioner's path for a model faircode cannot run (one behind an API included):
``faircode perturb --axes axes.yaml payloads.jsonl > copies.jsonl`` writes the copies; the user
scores the originals and the copies with their own model and adds a ``score`` to each; this
command joins the two files on the payload id (:mod:`faircode.audit.score_files`) and writes the
flip rates and CTF gaps of a manifest's text audit (:mod:`faircode.evaluate.text_files`):
``<out>/flips.csv``, ``<out>/ctf.csv`` and ``<out>/run.json``, and prints each operating point x
axis x kind's flip rate with its interval (:func:`flip_lines`).  No code of the user's is
imported.
A bad file is one line naming the file, line and field, exit 2, and nothing is written.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from faircode.core.config import MAX_DRAWS
from faircode.pipeline._args import EXIT_OK, HELP, STATS_FLAGS, example, with_flags

if TYPE_CHECKING:  # pragma: no cover - the CLI imports pandas only once a command runs
    import pandas as pd

__all__ = ["add_flips", "flip_lines"]


def _cmd_flips(args: argparse.Namespace) -> int:
    from faircode.core.config import Params, load_params
    from faircode.evaluate.text_files import audit_flips, write_flips
    from faircode.provenance.state import provenance

    params = load_params(Path(args.params)) if args.params else Params()
    stats = with_flags(params.config, args, STATS_FLAGS, command="faircode flips").stats
    thresholds = args.threshold or [params.config.models.decision_threshold]
    tables = audit_flips(Path(args.originals), Path(args.copies), thresholds=thresholds,
                         stats=stats, seed=args.seed, system=args.name)
    out = write_flips(tables, out=Path(args.out), originals=Path(args.originals),
                      copies=Path(args.copies), stats=stats, seed=args.seed,
                      provenance_record=provenance())
    axes = tables.ctf[["axis", "kind"]].drop_duplicates()
    print(f"{args.name}: {len(tables.pairs.ids):,} originals, {len(tables.pairs.pairs):,} "
          f"changed copies over {len(axes)} axis x kind; wrote {out}")
    print("\n".join(f"  {line}" for line in flip_lines(tables.flips, alpha=stats.alpha)))
    return EXIT_OK


def flip_lines(flips: pd.DataFrame, *, alpha: float) -> list[str]:
    """One line per operating point x axis x kind of ``flips.csv``: the flip rate with its
    interval and counts, ``*`` where its q is below ``alpha``."""
    import numpy as np

    lines = []
    for row in flips.to_dict("records"):
        rate, low, high = (float(row[c]) for c in ("flip_rate", "ci_low", "ci_high"))
        shown = (f"{rate:.1%} [{low:.1%}, {high:.1%}]" if np.isfinite(rate) and np.isfinite(low)
                 else f"{rate:.1%}" if np.isfinite(rate) else f"n/a ({row['note'] or 'undefined'})")
        star = "*" if str(row.get("significant")) == "True" else ""  # q < alpha
        lines.append(f"{row['operating_point']}: {row['axis']} ({row['kind']}): flip rate "
                     f"{shown}{star}, {int(row['n_flipped']):,} of {int(row['n_changed']):,} "
                     "changed copies")
    if lines:
        lines.append(f"(rate: flipped / changed copies, its interval Clopper-Pearson at the "
                     f"effective count; * its q < {alpha:g}; every number: flips.csv)")
    return lines


def add_flips(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register ``faircode flips``."""
    parser = subparsers.add_parser(
        "flips", help=HELP["flips"],
        description="Score faircode perturb's originals and copies with your own model (add a "
                    "\"score\" to each record), then audit the two score files.",
        **example("faircode flips originals.csv copies_scored.jsonl --out flips-out "
                  "--threshold 0.5"))
    parser.add_argument("originals", help="CSV or JSONL: id, score [, unit] per original")
    parser.add_argument("copies", help="CSV or JSONL: id, axis, kind, changed, score per copy "
                                       "(faircode perturb's records with a score)")
    parser.add_argument("--out", required=True, help="folder to write (new, or one this "
                                                     "command wrote)")
    parser.add_argument("--threshold", type=float, action="append",
                        help="decide 1 when score > THRESHOLD; repeatable (default: "
                             "models.decision_threshold, 0.5)")
    parser.add_argument("--name", default="model", help="the model's name in the tables")
    parser.add_argument("--seed", type=int, default=42, help="master seed (default 42)")
    parser.add_argument("--params", help="params.yaml to take stats.* and models.* from")
    parser.add_argument("--n-resamples", type=int,
                        help=f"bootstrap resamples per CI (2000; 1 to {MAX_DRAWS:,})")
    parser.add_argument("--n-permutations", type=int,
                        help=f"permutations per p-value (2000; 1 to {MAX_DRAWS:,})")
    parser.set_defaults(handler=_cmd_flips)
