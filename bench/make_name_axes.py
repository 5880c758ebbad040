"""Write ``audits/bias_madlibs/axes_names.yaml``: the name axes (proxy) of the text audit, from the
36 first names of Bertrand & Mullainathan's field experiment.

The names, and the race and sex each signals, are read from ``ResumeNames.rda`` (the R package
AER's copy of the experiment's data; ``../shared/datasets-extra/resume_names/``, SOURCES.md) with
the pure-Python ``rdata`` reader.  Within each sex the nine White and nine African-American
names are paired in alphabetical order (Allison-Aisha, ..., Emily-Lakisha, ...); within each race
the nine female and nine male names likewise.  Four axes, each one direction of the symmetric
study (the perturbation specification): ``race_white_to_black``, ``race_black_to_white``,
``gender_female_to_male``, ``gender_male_to_female``, every substitution tagged ``proxy`` (a name
never states race or sex).  The file carries its provenance as comments: the source file's
sha256, the name -> race/sex table with each name's number of résumés, and this command.
Its ``groups`` are the four race x sex cells (``white_female``, ...), the placebo groups of the
four axes (:mod:`faircode.counterfactual.placebo`): a swap within a cell changes the name but
neither the race nor the sex it signals.

Run once (the committed file is what the audit reads; the datasheet reviews it)::

    .venv/bin/python bench/make_name_axes.py ../shared/datasets-extra/resume_names/ResumeNames.rda
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import warnings
from pathlib import Path

import pandas as pd

OUT = Path(__file__).resolve().parent.parent / "audits" / "bias_madlibs" / "axes_names.yaml"
RACE = {"cauc": "white", "afam": "black"}


def names_table(rda: Path) -> pd.DataFrame:
    """One row per first name: race (white/black), sex and the number of résumés sent with it."""
    import rdata

    with warnings.catch_warnings():  # "Unknown encoding. Assumed ASCII." (the names are ASCII)
        warnings.simplefilter("ignore", UserWarning)
        frame = rdata.conversion.convert(rdata.parser.parse_file(rda))["ResumeNames"]
    table = (frame.assign(race=frame["ethnicity"].astype(str).map(RACE),
                          sex=frame["gender"].astype(str), name=frame["name"].astype(str))
             .groupby(["name", "race", "sex"], observed=True).size().rename("resumes")
             .reset_index())
    if len(table) != 36 or table["name"].duplicated().any():
        raise SystemExit(f"{rda}: expected 36 first names each of one race and sex, got "
                         f"{len(table)} rows")
    return table.sort_values(["race", "sex", "name"]).reset_index(drop=True)


def pairs(table: pd.DataFrame, *, within: str, across: str, source: str,
          target: str) -> list[tuple[str, str]]:
    """(source name, target name) pairs: alphabetical order within each value of ``within``."""
    out = []
    for value in sorted(table[within].unique()):
        part = table[table[within] == value]
        left = sorted(part.loc[part[across] == source, "name"])
        right = sorted(part.loc[part[across] == target, "name"])
        if len(left) != len(right):
            raise SystemExit(f"expected as many {source} as {target} names for {value}")
        out.extend(zip(left, right, strict=True))
    return out


def render(table: pd.DataFrame, digest: str, rda: Path) -> str:
    lines = [
        "# The name axes (proxy) of the bias_madlibs text audit: the 36 first names of Bertrand &",
        "# Mullainathan, \"Are Emily and Greg More Employable than Lakisha and Jamal?\"",
        "# (AER 94(4), 2004), as distributed in the R package AER (data set ResumeNames).",
        f"# Source: resume_names/{rda.name} of the shared extra datasets (SOURCES.md), sha256",
        f"# {digest}",
        "# Written by: .venv/bin/python bench/make_name_axes.py <ResumeNames.rda> (do not edit by",
        "# hand).  Pairs: alphabetical within sex (race axes) and within race (gender axes).",
        "# Placebo groups: the race x sex cells; a swap within one changes the name, not the",
        "# race or sex it signals (the placebo arm every axis is read against).",
        "#",
        "# name -> race, sex (number of resumes sent with the name in the experiment):",
    ]
    lines += [f"#   {r.name:<9} {r.race:<6} {r.sex:<7} {r.resumes}"
              for r in table.itertuples(index=False)]
    lines.append("axes:")
    for name, within, across, source, target in (
            ("race_white_to_black", "sex", "race", "white", "black"),
            ("race_black_to_white", "sex", "race", "black", "white"),
            ("gender_female_to_male", "race", "sex", "female", "male"),
            ("gender_male_to_female", "race", "sex", "male", "female")):
        lines += [f"  - name: {name}", "    substitutions:"]
        lines += [f"      - {{pattern: {a}, replacement: {b}, kind: proxy}}"
                  for a, b in pairs(table, within=within, across=across, source=source,
                                    target=target)]
    lines.append("groups:")
    for (race, sex), part in table.groupby(["race", "sex"], sort=False):
        lines.append(f"  {race}_{sex}: [{', '.join(sorted(part['name']))}]")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rda", type=Path, help="ResumeNames.rda")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    digest = hashlib.sha256(args.rda.read_bytes()).hexdigest()
    args.out.write_text(render(names_table(args.rda), digest, args.rda))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
