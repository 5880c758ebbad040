"""The perturbation engine's matching as it was before issue 33: one named group per substitution.

Kept as the slow, obviously-right reference the linear engine is tested against
(tests/test_perturb_linear.py) and timed against (bench/perturb_scale.py): the alternation
``(?<!\\w)(?:(?P<s3>...)|(?P<s0>...)|...)(?!\\w)``, longest pattern first (ties in declaration
order), the substitution read from ``lastgroup``.  Quadratic in the number of substitutions:
every match attempt resets all the groups.
"""

from __future__ import annotations

import re

from faircode.counterfactual.perturb import Substitution, transfer_case

__all__ = ["reference_apply"]


def _normalise(pattern: str) -> str:
    return " ".join(pattern.split()).casefold()


def reference_matcher(subs: tuple[Substitution, ...]) -> re.Pattern[str]:
    """One alternation of all ``subs``, longest first; group ``s<i>`` is ``subs[i]``."""
    order = sorted(range(len(subs)), key=lambda i: -len(_normalise(subs[i].pattern)))
    alternatives = [
        f"(?P<s{i}>" + r"\s+".join(re.escape(w) for w in subs[i].pattern.split()) + ")"
        for i in order
    ]
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)


def reference_apply(text: str, subs: tuple[Substitution, ...]
                    ) -> tuple[str, tuple[tuple[str, int], ...]]:
    """``text`` perturbed by ``subs`` and the ``fired`` counts, as the old engine gave them."""
    pattern = reference_matcher(subs)
    counts = [0] * len(subs)

    def replace(m: re.Match[str]) -> str:
        i = int(m.lastgroup[1:])  # type: ignore[index]
        counts[i] += 1
        return transfer_case(m.group(), subs[i].replacement)

    out = pattern.sub(replace, text)
    return out, tuple((s.pattern, n) for s, n in zip(subs, counts, strict=True) if n)
