"""Before/after table of issue 33's second round: its cases as tests, run against two code trees.

Usage: ``python bench/second_round.py [--base REV | --before TREE] [--fast]``

Runs tests/test_security.py, tests/test_download.py and tests/test_reliability.py once with
``PYTHONPATH=<this checkout>`` ("after") and once with the ``faircode/`` of ``--base`` (default
``4d10d00``, the main this work started from, extracted with its ``dvc.yaml`` by ``git archive``)
or of ``--before TREE`` ("before"): the same tests judge both trees (bench/hostile_inputs.py's
runner), their subprocesses and ``dvc repro`` running the tree's own code and ``dvc.yaml``. Every
test's docstring opens with its family -- ``Security``, ``Faults`` or ``Data`` -- the issue's
families; a row per test (outcome, seconds, and for a failure what happened), then the count per
family. The fourth family, predictions files (the 139 MB file, a repeated column name in a
predictions file, parsing without a Python object per row), is issue 34's, and is listed as such.
``--fast`` leaves out the tests marked slow (the 30 s SQLite lock). Nothing random.
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from hostile_inputs import docstrings, run  # noqa: E402

SUITES = tuple(ROOT / "tests" / f"test_{name}.py" for name in ("security", "download",
                                                               "reliability"))
FAMILIES = ("Security", "Faults", "Data")
ELSEWHERE = {"predictions files": "issue 34 (the predictions-file parser: the 139 MB file's "
                                  "MemoryError, rows parsed without one Python object each, a "
                                  "repeated column name in a predictions file)"}


def families() -> dict[str, str]:
    """Test name -> its family (the word before the first colon of its docstring)."""
    found: dict[str, str] = {}
    for suite in SUITES:
        for name, line in docstrings(suite).items():
            family = line.split(":", 1)[0]
            found[name] = family if family in FAMILIES else "?"
    return found


def base_tree(rev: str, into: Path) -> Path:
    """``faircode/`` and ``dvc.yaml`` of ``rev`` extracted into ``into``."""
    archive = subprocess.run(["git", "archive", rev, "faircode", "dvc.yaml"], cwd=ROOT, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="4d10d00", help="the 'before' commit (4d10d00)")
    parser.add_argument("--before", type=Path, help="a folder holding the old faircode/")
    parser.add_argument("--fast", action="store_true", help="leave out the slow tests")
    args = parser.parse_args(argv)
    marks = "not slow" if args.fast else ""
    with tempfile.TemporaryDirectory(prefix="faircode-round2-") as tmp:
        before_tree = args.before or base_tree(args.base, Path(tmp))
        before = run(before_tree, SUITES, marks=marks)
        after = run(ROOT, SUITES, marks=marks)
    family = families()
    print("| family | test | before | after |\n|---|---|---|---|")
    for name, (outcome, seconds, detail) in after.items():
        old = before.get(name)
        shown = "-" if old is None else f"{old[0]} {old[1]:.1f}s {old[2]}".strip()
        print(f"| {family.get(name.split('[')[0], '?')} | {name} | {shown} | "
              f"{outcome} {seconds:.1f}s {detail}".strip() + " |")
    totals: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    for name, (outcome, _, _) in after.items():
        row = totals[family.get(name.split("[")[0], "?")]
        row[0] += 1
        row[1] += before.get(name, ("FAIL",))[0] == "pass"
        row[2] += outcome == "pass"
    print("\n| family | cases | before | after |\n|---|---|---|---|")
    for name in (*FAMILIES, *sorted(set(totals) - set(FAMILIES))):
        if name in totals:
            cases, old, new = totals[name]
            print(f"| {name.lower()} | {cases} | {old} of {cases} | {new} of {cases} |")
    for name, where in ELSEWHERE.items():
        print(f"| {name} | - | covered by {where} | |")
    failed = sum(o != "pass" for o, _, _ in after.values())
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
