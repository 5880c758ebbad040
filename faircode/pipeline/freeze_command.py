"""``faircode freeze`` and ``faircode verify``: record the state behind cited numbers, re-derive it.

The library (:mod:`faircode.record.freeze`) takes every input explicitly; these handlers give it
the project root (the working directory), DVC through this interpreter and the environment of a
re-run (:func:`pipeline_env`).  ``verify NAME`` sets ``FAIRCODE_REUSE=0``
(:data:`faircode.evaluate.reuse.REUSE_ENV`) so that the re-run re-computes every number instead
of keeping a frozen table whose inputs it finds unchanged.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from faircode.core.errors import FaircodeError
from faircode.pipeline._args import EXIT_FAILED, EXIT_OK, HELP, MIRROR_ENV, example

if TYPE_CHECKING:  # pragma: no cover
    from faircode.record.compare import CellDrift, NumericsComparison

__all__ = ["add_freeze", "add_verify", "findings", "pipeline_env"]

def pipeline_env(root: Path) -> dict[str, str]:
    """The environment of a re-run: this interpreter's bin first on PATH (DVC stages call
    ``python``), and the data mirror as an absolute path when it is not set."""
    from faircode.audit.fetch import default_mirror

    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.setdefault(MIRROR_ENV, default_mirror(root))
    return env


def add_freeze(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """``faircode freeze NAME``: record, commit and tag the state behind cited numbers."""

    def handler(args: argparse.Namespace) -> int:
        from faircode.record.freeze import freeze, list_freezes, load_freeze, restore_tags

        root = Path.cwd()
        if args.list:
            problems: list[str] = []
            for record in list_freezes(root=root, problems=problems):
                print(f"{record['name']:<24} {record['created']}  "
                      f"commit {str(record['git_commit'])[:12]}  "
                      f"code {str(record['code_sha256'] or 'unrecorded')[:12]}  "
                      f"{record['files']} results files")
            for problem in problems:  # listed around, never a traceback
                print(f"warning: not a freeze record, left out: {problem}", file=sys.stderr)
            return EXIT_OK
        if args.restore_tags:
            print("\n".join(restore_tags(root=root)) or "no freeze records")
            return EXIT_OK
        if not args.name:
            raise FaircodeError("freeze NAME: expected a name (or --list), got nothing")
        path = freeze(args.name, root=root, dvc=(sys.executable, "-m", "dvc"),
                      env=pipeline_env(root))
        state = load_freeze(args.name, root=root)["state"]
        print(f"froze {args.name}: {path.relative_to(root.resolve())} committed and tagged "
              f"{args.name} (results of code {state['code_sha256'][:12]}, params "
              f"{str(state['params_sha256'])[:12]}); cite the record; anyone can re-derive it "
              f"with `faircode verify {args.name}`")
        return EXIT_OK

    parser = subparsers.add_parser(
        "freeze", help=HELP["freeze"],
        description="Record, commit and tag the exact state behind cited numbers: "
                    "freezes/NAME.json names the commit and holds the digests of the DVC locks, "
                    "params, manifests, datasets and every results file (then: git push). "
                    "--list lists the frozen states.",
        **example("faircode freeze v1-paper"))
    parser.add_argument("name", nargs="?", help="the state's name, also its git tag")
    parser.add_argument("--list", action="store_true", help="list the frozen states")
    parser.add_argument("--restore-tags", action="store_true",
                        help="create the missing git tag of every freeze record (a clone may "
                             "lack them; the records are the source of truth)")
    parser.set_defaults(handler=handler)


def findings(numerics: NumericsComparison, environment: Sequence[str],
             drift: Sequence[CellDrift]) -> list[str]:
    """What ``verify`` prints before its summary: the numerical environment first (the first
    suspect of a drift), then package versions, every drifting number, and -- where numbers
    drift under other kernels -- the one line naming that as the likely cause."""
    cause = numerics.cause(len(drift))
    return ([f"numerics differ: {line}" for line in numerics.lines]
            + [f"environment differs: {line}" for line in environment]
            + [f"drift: {cell.describe()}" for cell in drift] + ([cause] if cause else []))


def add_verify(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """``faircode verify NAME``: re-derive a frozen state; exit 0 identical, 1 on drift."""

    def handler(args: argparse.Namespace) -> int:
        from faircode.record.freeze import check_committed, verify

        root = Path.cwd()
        env = pipeline_env(root)
        if args.committed is not None:
            audits = list(args.committed)
            # the pipeline's folders: the grid and the bag stage's tables (--bagged)
            command = [sys.executable, "-m", "faircode.pipeline.cli", "run",
                       "--params", args.params, "--bagged", *audits]
            drift, files, numerics = check_committed(audits, root=root, command=command, env=env)
            for line in findings(numerics, (), drift):
                print(line)
            print(f"{' '.join(audits)}: {files} results files re-derived; "
                  f"{'identical' if not drift else f'{len(drift)} number(s) drift'}")
            return EXIT_OK if not drift else EXIT_FAILED
        if not args.name:
            raise FaircodeError("verify NAME: expected a frozen state's name, got nothing")
        from faircode.evaluate.reuse import REUSE_ENV

        # Re-compute every number: no evaluate stage keeps the frozen tables it finds.
        report = verify(args.name, root=root, env={**env, REUSE_ENV: "0"},
                        command=(sys.executable, "-m", "dvc", "repro", "--force"))
        for line in findings(report.numerics, report.environment, report.drift):
            print(line)
        verdict = ("identical, bit for bit" if report.identical
                   else f"{len(report.drift)} number(s) drift")
        print(f"{args.name} (commit {report.commit[:12]}): {report.identical_files} of "
              f"{report.files} results files identical; {verdict} ({report.seconds:.0f} s)")
        return EXIT_OK if report.identical else EXIT_FAILED

    parser = subparsers.add_parser(
        "verify", help=HELP["verify"],
        description="Re-run a frozen state from its commit and compare every number (exit 0 "
                    "identical, 1 on drift); --committed AUDIT ... re-runs audits at "
                    "params.yaml against the committed results/ instead.",
        **example("faircode verify v0.3-paper"))
    parser.add_argument("name", nargs="?", help="a frozen state (freezes/NAME.json)")
    parser.add_argument("--committed", nargs="*", metavar="AUDIT",
                        help="instead: re-run these audits at params.yaml and compare with the "
                             "committed results/ (the CI drift check)")
    parser.add_argument("--params", default="params.yaml", help="params file for --committed")
    parser.set_defaults(handler=handler)
