"""``faircode flips``: audit any text model from two score files (originals, perturbed copies).

The practitioner's path for a model faircode cannot run (one behind an API included):
``faircode perturb --axes axes.yaml payloads.jsonl > copies.jsonl`` writes the copies; the user
scores the originals and the copies with their own model and adds a ``score`` to each; this
command joins the two files on the payload id (:mod:`faircode.audit.score_files`) and writes the
flip rates and CTF gaps of a manifest's text audit (:mod:`faircode.evaluate.text_files`):
``<out>/flips.csv``, ``<out>/ctf.csv`` and ``<out>/run.json``.  No code of the user's is imported.
A bad file is one line naming the file, line and field, exit 2, and nothing is written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from faircode.core.config import MAX_DRAWS
from faircode.pipeline._args import EXIT_OK, HELP, STATS_FLAGS, example, with_flags

__all__ = ["add_flips"]


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
    return EXIT_OK


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
