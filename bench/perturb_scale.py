"""How perturbation scales with the number of substitutions: the linear matcher against the old one.

Usage: ``python bench/perturb_scale.py [--engine linear|reference] [--subs 3000] [--kb 17]``

One axis of ``--subs`` whole-word substitutions (``name17`` -> ``other17``, every tenth a
two-word pattern) applied once to a text of about ``--kb`` kilobytes in which every fifth word is
one of the patterns (cased three ways), the rest filler words no pattern matches.  ``linear`` is
:func:`faircode.perturb` (one alternation, the match mapped back by its casefold);
``reference`` is the engine before issue 33 (one named group per substitution,
``tests/perturb_reference.py``).  Prints the engine, the sizes, the substitutions that fired and
the seconds of the perturbation itself; both engines must give the same text (``--check`` runs
both and compares).  Time whole runs from outside (``/usr/bin/time -v``, or any A/B runner) to
compare engines: the process start-up is the same for both.  Nothing random.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from perturb_reference import reference_apply  # noqa: E402

from faircode import AxisSpec, Substitution, perturb  # noqa: E402

FILLER = ("the", "record", "shows", "a", "steady", "history", "of", "work", "and", "study")


def axis(subs: int) -> AxisSpec:
    """``subs`` substitutions; every tenth pattern has two words."""
    return AxisSpec("scale", tuple(
        Substitution(f"name{i} extra" if i % 10 == 0 else f"name{i}", f"other{i}")
        for i in range(subs)))


def text(kilobytes: float, subs: int) -> str:
    """About ``kilobytes`` KB: every fifth word a pattern (lower, Title, UPPER), the rest filler."""
    words: list[str] = []
    size, k = 0, 0
    while size < kilobytes * 1000:
        if k % 5 == 4:
            i = (k * 7919) % subs
            word = f"name{i} extra" if i % 10 == 0 else f"name{i}"
            word = (word, word.title(), word.upper())[k % 3]
        else:
            word = FILLER[k % len(FILLER)]
        words.append(word)
        size += len(word) + 1
        k += 1
    return " ".join(words)


def run(engine: str, spec: AxisSpec, payload: str) -> tuple[str, int, float]:
    """(perturbed text, substitutions fired, seconds) of one engine."""
    started = time.perf_counter()
    if engine == "linear":
        [result] = perturb(payload, [spec])
        out, fired = str(result.perturbed), result.fired
    else:
        out, fired = reference_apply(payload, spec.substitutions)
    return out, sum(n for _, n in fired), time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("linear", "reference"), default="linear")
    parser.add_argument("--subs", type=int, default=3000, help="substitutions (3000)")
    parser.add_argument("--kb", type=float, default=17.0, help="text size in KB (17)")
    parser.add_argument("--check", action="store_true", help="run both engines and compare")
    args = parser.parse_args(argv)
    spec, payload = axis(args.subs), text(args.kb, args.subs)
    engines = ("linear", "reference") if args.check else (args.engine,)
    outputs = []
    for engine in engines:
        out, fired, seconds = run(engine, spec, payload)
        outputs.append(out)
        print(f"{engine}: {args.subs} substitutions, {len(payload.encode()) / 1000:.0f} KB, "
              f"{fired} fired, {seconds:.3f} s")
    if args.check and outputs[0] != outputs[1]:
        print("the engines differ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
