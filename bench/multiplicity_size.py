"""Size and power of the test of a less discriminatory alternative of equal accuracy.

Run from the repository root (the machine is shared: ``nice``):

    PYTHONPATH=$PWD nice python bench/multiplicity_size.py [--audits 2000] [--resamples 1000]
        [--seed 0] [--tolerance 0.01] [--sizes 2000 10000 40000] [--quick]

Workload: an audit's test rows (``n`` = 2,000, 10,000 and 40,000), two groups of equal size and
base rate 0.5, and the test decisions of ``M`` = 20 models.  Every model errs on a share ``e`` =
0.2 of each group's rows, so every model has the same accuracy in each group; a model with gap
parameter ``δ`` errs towards the unfavourable decision in the disadvantaged group (a
favourable-labelled row flipped with probability ``e + δ``, an unfavourable one with ``e − δ``)
and towards the favourable one in the advantaged group, so its parity gap is ``−2δ`` with the
same accuracy; ``δ`` = 0 is a model at parity.  The models share one uniform per row (so they
agree except where a row falls between their flip probabilities) and each flips its own 1 % of
rows on top (independent noise): about 8 % of the rows differ between a model at parity and one
at ``δ`` = 0.03.  Scenarios, each over ``--audits`` simulated audits:

* ``same gap``: every model at ``δ`` = 0.03 (gap −0.06): no fairer model exists; a rejection is
  a type-I error (the winner's curse of picking the least-gap model on the selection half is
  what the held-out half guards against);
* ``fairer, less accurate``: three models at parity whose error rate is ``e + 2·tolerance``
  (accuracy lower by twice the tolerance), the others at ``δ`` = 0.03: a fairer model exists but
  none of equal accuracy; a rejection is a type-I error of the intersection-union test;
* ``one alternative``: one model at parity with the others' accuracy: the power;
* ``three alternatives``: three such models: the power.

Each audit runs :func:`faircode.stats.multiplicity.alternative_test` exactly as the evaluate
step does (the seeded half split of :func:`~faircode.stats.multiplicity.held_out_split`, the set
within ``--tolerance`` on the selection half, the paired test on the held-out half with the
accuracy's equivalence margin at the tolerance) and counts :func:`~faircode.stats.multiplicity.
alternative_shown` at alpha 0.05 (one test per audit: its p is its q).  The rate's Monte-Carlo
s.e. is about 0.005 at 2,000 audits where it is 0.05.  Audit ``a`` of scenario ``s`` at size
``n`` draws from ``child_seed(seed, n, s, a)`` (so one size's rows do not depend on which other
sizes run).  ``--quick``: 200 audits x 200 resamples.  Cost: about 0.07 s of CPU per audit
(the paired engine's exact interval inversions, whatever ``--resamples``): 2,000 audits of the
four scenarios took 524 s of CPU at n = 10,000, 1,174 s at n = 2,000 and 40,000 together.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from faircode.core.config import DegenerateConfig
from faircode.core.seeds import child_seed
from faircode.stats.multiplicity import alternative_shown, alternative_test, held_out_split

SIZES = (2000, 10_000, 40_000)
MODELS, ERROR, DELTA, NOISE = 20, 0.2, 0.03, 0.01
SCENARIOS = ("same gap", "fairer, less accurate", "one alternative", "three alternatives")


def simulate(rng: np.random.Generator, n: int, *, fair: int, fair_error: float
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels, disadvantaged, decisions (M, n)) of one audit (module docstring); the first
    ``fair`` models are at parity with error rate ``fair_error``."""
    group = rng.random(n) < 0.5
    y = rng.random(n) < 0.5
    shared = rng.random(n)
    decisions = np.empty((MODELS, n), dtype=np.int8)
    for m in range(MODELS):
        delta, error = (0.0, fair_error) if m < fair else (DELTA, ERROR)
        # disadvantaged: favourable rows flip more often; advantaged: unfavourable rows do
        p = np.where(group == y, error + delta, error - delta)
        flip = (shared < p) ^ (rng.random(n) < NOISE)
        decisions[m] = np.where(flip, ~y, y)
    return y.astype(np.int8), group.astype(np.int8), decisions


def rejection_rate(scenario: int, size: int, *, audits: int, resamples: int, seed: int,
                   tolerance: float) -> float:
    """The share of ``audits`` simulated audits of ``scenario`` where an alternative is shown."""
    fair, fair_error = {0: (0, ERROR), 1: (3, ERROR + 2 * tolerance), 2: (1, ERROR),
                        3: (3, ERROR)}[scenario]
    shown = 0
    for a in range(audits):
        rng = np.random.default_rng(child_seed(seed, size, scenario, a))
        y, group, decisions = simulate(rng, size, fair=fair, fair_error=fair_error)
        select, held = held_out_split(y, seed=child_seed(seed, size, scenario, a, 1))
        test = alternative_test(decisions, y, group, select=select, held_out=held,
                                tolerance=tolerance, margin=0.05, degenerate=DegenerateConfig(),
                                seed=child_seed(seed, size, scenario, a, 2),
                                n_resamples=resamples, n_permutations=1)
        if test.gap_effect is not None and test.accuracy_effect is not None:
            shown += bool(alternative_shown(test.gap_effect.p_value, test.gap_effect.ci_high,
                                            test.accuracy_effect.equivalence_p_value,
                                            alpha=0.05))
    return shown / audits


def main() -> None:
    """Print the rejection rate of every scenario at every size."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--audits", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tolerance", type=float, default=0.01)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    audits, resamples = (200, 200) if args.quick else (args.audits, args.resamples)
    print(f"{audits} audits per cell, B = {resamples}, tolerance {args.tolerance}, "
          f"seed {args.seed}")
    sizes = tuple(args.sizes)
    print("| scenario | " + " | ".join(f"n = {n:,}" for n in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    started = time.process_time()
    for s, name in enumerate(SCENARIOS):
        rates = [rejection_rate(s, n, audits=audits, resamples=resamples, seed=args.seed,
                                tolerance=args.tolerance) for n in sizes]
        print(f"| {name} | " + " | ".join(f"{r:.3f}" for r in rates) + " |", flush=True)
    print(f"{time.process_time() - started:.0f} s of CPU")


if __name__ == "__main__":
    main()
