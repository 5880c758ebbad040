"""Every command README.md shows is real: its subcommand and options parse, the cheap ones run.

Commands are taken from the README's ``bash`` blocks and from inline code that starts with a
command (``faircode``, ``dvc``, ``make``, ``mlflow``, optionally behind ``.venv/bin/``).
``faircode``, ``dvc`` and ``mlflow ui`` lines are parsed by those programs' own parsers (nothing
runs), ``make`` targets by ``make -n``; ``faircode --help`` and ``dvc dag
--collapse-foreach-matrix`` run, and the latter draws the pipeline's stages.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import copy_pipeline

from faircode.pipeline.pipeline_command import bag_stage, fit_parts

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
PROGRAMS = ("faircode", "dvc", "make", "mlflow")
INLINE_COMMAND = re.compile(r"`((?:\.venv/bin/)?(?:faircode|dvc|make|mlflow) [^`]*)`")


def _commands(*, inline: bool) -> list[list[str]]:
    """The README's command lines as argument lists (placeholders ``<x>`` become ``x``): those of
    its bash blocks, or its inline ones (``inline``)."""
    if inline:
        lines = INLINE_COMMAND.findall(README)
    else:
        lines = [line for block in re.findall(r"```bash\n(.*?)```", README, re.S)
                 for line in block.splitlines()]
    out = []
    for line in lines:
        args = shlex.split(re.sub(r"<([\w-]+)>", r"\1", line), comments=True)
        if args:
            args[0] = args[0].removeprefix(".venv/bin/")
            out.append(args)
    return out


BLOCKS = _commands(inline=False)
INLINE = _commands(inline=True)
NAMES = [c for c in INLINE if c[0] in ("faircode", "dvc") and all(a.isidentifier() for a in c)
         and f"`{' '.join(c)}`" in README]
"""Inline mentions of a subcommand alone (``faircode audit``): the name must exist."""
COMMANDS = BLOCKS + [c for c in INLINE if c not in NAMES]
"""Every full command line: parsed by its program."""


def _subcommands(parser: object) -> dict[str, object]:
    """The subparsers of an argparse parser, by name."""
    import argparse

    assert isinstance(parser, argparse.ArgumentParser)
    return next((a.choices for a in parser._actions
                 if isinstance(a, argparse._SubParsersAction)), {})


@pytest.mark.parametrize("args", NAMES, ids=" ".join)
def test_named_subcommand_exists(args: list[str]) -> None:
    """A subcommand the README names in passing (``faircode audit``) exists."""
    from dvc.cli.parser import get_main_parser

    from faircode.pipeline.cli import build_parser

    parser: object = {"faircode": build_parser, "dvc": get_main_parser}[args[0]]()
    for name in args[1:]:
        parser = _subcommands(parser)[name]


def test_the_readme_shows_every_workflow_command() -> None:
    """The quick start, the two set-up commands and the three workflows are all there."""
    shown = {" ".join(c[:2]) for c in COMMANDS}
    assert {"make results", "make test", "faircode run", "faircode track", "mlflow ui",
            "dvc exp", "dvc dag", "dvc plots"} <= shown


def test_every_readme_command_is_one_of_the_known_programs() -> None:
    """No README command escapes the checks below."""
    assert [c for c in BLOCKS + INLINE if c[0] not in PROGRAMS] == []


@pytest.mark.parametrize("args", [c for c in COMMANDS if c[0] == "faircode" and "--help" not in c],
                         ids=" ".join)
def test_faircode_command_parses(args: list[str]) -> None:
    """A README faircode command names a real subcommand with real options."""
    from faircode.pipeline.cli import build_parser

    namespace = build_parser().parse_args(args[1:])
    assert callable(namespace.handler)


def test_faircode_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    """`faircode --help` names every subcommand in its description, and the README's table
    lists each of them."""
    from faircode.pipeline.cli import build_parser, main

    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    subparsers = next(a for a in build_parser()._actions if a.choices and a.dest == "command")
    for name in subparsers.choices:
        assert re.search(rf"Subcommands: [^.]*\b{name}\b", text), name
        assert f"| `faircode {name}" in README, name


@pytest.mark.parametrize("args", [c for c in COMMANDS if c[0] == "dvc"], ids=" ".join)
def test_dvc_command_parses(args: list[str]) -> None:
    """A README dvc command is a real dvc subcommand with real options."""
    from dvc.cli.parser import get_main_parser

    namespace = get_main_parser().parse_args(args[1:])
    assert namespace.func is not None


@pytest.mark.parametrize("args", [c for c in COMMANDS if c[0] == "make"], ids=" ".join)
def test_make_target_exists(args: list[str]) -> None:
    """A README make target is one of the Makefile's (``make -n``: nothing runs)."""
    done = subprocess.run(["make", "-n", *args[1:]], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("args", [c for c in COMMANDS if c[0] == "mlflow"], ids=" ".join)
def test_mlflow_command_parses(args: list[str]) -> None:
    """A README mlflow command is a real mlflow subcommand with real options."""
    import click
    from mlflow.cli import cli

    command = cli.get_command(click.Context(cli), args[1])  # `ui` is an alias of `server`
    assert command is not None
    assert command.make_context(args[1], args[2:]).params


def _boxes(drawing: str) -> list[str]:
    """The stage names in the boxes of a ``dvc dag`` drawing, sorted (``upstream/dvc.yaml:fit``
    is the stage ``fit`` of the data stages' file)."""
    return sorted(re.findall(r"\| (?:upstream/dvc\.yaml:)?([\w-]+) \|", drawing))


def test_readme_names_dvc_dag_and_it_draws_the_pipeline(tmp_path: Path) -> None:
    """The README shows the command that draws the stage graph, not a copy of a drawing, and
    `dvc dag --collapse-foreach-matrix` draws the stages of dvc.yaml and upstream/dvc.yaml (the
    drawing's layout varies from run to run; its boxes do not)."""
    assert ["dvc", "dag", "--collapse-foreach-matrix"] in COMMANDS
    assert not re.search(r"```\n +\+-+\+\n", README)
    for name in ("params.yaml", ".dvc/config"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, tmp_path / name)
    copy_pipeline(REPO, tmp_path)
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, env=env)
    done = subprocess.run([sys.executable, "-m", "dvc", "dag", "--collapse-foreach-matrix"],
                          cwd=tmp_path, capture_output=True, text=True, check=True, env=env,
                          timeout=120)
    assert _boxes(done.stdout) == sorted(
        ["check-params", "fetch", "prepare", *(f.stage for f in fit_parts()),
         bag_stage().stage, "evaluate",
         "text-fetch", "text-prepare", "text-train", "text-score", "regression-fetch",
         "regression-fit", "multiclass-fetch", "report", "track"])


def test_readme_is_a_landing_page() -> None:
    """The README stays short and links into docs/ (never into ../shared/)."""
    assert len(README.splitlines()) <= 250
    assert "](../" not in README and "../shared" not in README
    for doc in ("methodology", "statistics", "pipeline", "operations"):
        assert f"](docs/{doc}.md" in README and (REPO / "docs" / f"{doc}.md").is_file()


QUICK_START = re.search(r"\*\*2\. One small audit run\*\*.*?```bash\n(.*?)```", README, re.S)
"""The quick start's commands (step 2)."""


def _quick_start() -> list[list[str]]:
    assert QUICK_START is not None
    return [shlex.split(line) for line in QUICK_START.group(1).splitlines() if line.strip()]


def test_every_block_command_is_reachable_as_written() -> None:
    """Each command of the README's bash blocks is `make ...` or `.venv/bin/<program>`: no bare
    `dvc` or `faircode`, which the documented install does not put on PATH."""
    lines = [line for block in re.findall(r"```bash\n(.*?)```", README, re.S)
             for line in block.splitlines() if line.strip() and not line.startswith(" ")]
    assert lines and [x for x in lines if not x.startswith(("make ", ".venv/bin/"))] == []


def test_command_table_is_the_cli_help() -> None:
    """The README's command table says what each subcommand's --help line says."""
    from faircode.pipeline._args import HELP

    table = dict(re.findall(r"^\| `faircode ([a-z ]+)` \| (.+?) \|$", README, re.M))
    assert {name: text.replace("`", "") for name, text in table.items()} == HELP


def _project(tmp_path: Path, mirror: Path) -> tuple[Path, dict[str, str]]:
    """A clone-like project (manifests, params) with a fixture mirror beside it in
    ``../shared/datasets`` holding German credit only; the environment names no mirror."""
    from conftest import copy_manifests

    root = tmp_path / "clone"
    root.mkdir()
    copy_manifests(root)
    shutil.copy(REPO / "params.yaml", root / "params.yaml")
    shared = tmp_path / "shared" / "datasets" / "german_credit_lending"
    shared.mkdir(parents=True)
    shutil.copy(mirror / "german_credit_lending" / "credit_customers.csv", shared)
    env = {k: v for k, v in os.environ.items() if k != "FAIRCODE_DATA_MIRROR"}
    env["PYTHONPATH"] = str(REPO)
    return root, env


def _run(command: list[str], root: Path, env: dict[str, str], tmp_path: Path) -> int:
    """A quick-start command as written (``.venv/bin/faircode`` -> this interpreter), its
    ``/tmp/faircode-quick`` redirected into ``tmp_path``."""
    assert command[0] == ".venv/bin/faircode"
    args = [a.replace("/tmp/faircode-quick", str(tmp_path / "quick")) for a in command[1:]]
    done = subprocess.run([sys.executable, "-m", "faircode.pipeline.cli", *args], cwd=root,
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0 or not done.stderr.count("\n") > 1, done.stderr
    return done.returncode


def test_quick_start_fetch_finds_the_mirror_beside_the_clone(tmp_path: Path, mirror: Path) -> None:
    """Step 2's `data fetch`, as written and with no mirror setting, takes the raw file from
    ../shared/datasets beside the project (exit 0, the verified file in data/raw)."""
    root, env = _project(tmp_path, mirror)
    fetch = next(c for c in _quick_start() if c[1:3] == ["data", "fetch"])
    assert _run(fetch, root, env, tmp_path) == 0
    assert (root / "data" / "raw" / "german_credit_lending" / "credit_customers.csv").is_file()


def test_quick_start_commands_name_one_audit_that_the_mirror_holds(mirror: Path) -> None:
    """Every faircode command of step 2 names german_credit_lending, which the mirror holds."""
    commands = [c for c in _quick_start() if c[0] == ".venv/bin/faircode"]
    assert len(commands) == 3 and all("german_credit_lending" in c for c in commands)
    assert (mirror / "german_credit_lending" / "credit_customers.csv").is_file()


@pytest.mark.slow
def test_quick_start_runs_as_written(tmp_path: Path, mirror: Path) -> None:
    """Step 2 end to end in a clone-like project with only the fixture mirror beside it: every
    command exits 0 and the report exists (the run fetches nothing more)."""
    root, env = _project(tmp_path, mirror)
    for command in (c for c in _quick_start() if c[0] == ".venv/bin/faircode"):
        assert _run(command, root, env, tmp_path) == 0, command
    assert (tmp_path / "quick" / "german_credit_lending" / "fairness.csv").is_file()
    assert (tmp_path / "quick" / "report.html").is_file()


def test_readme_counts_are_the_committed_states() -> None:
    """The MLflow counts the README quotes are those of the committed results: the child runs
    of one sync, and the first screen's audit, attribute and run count."""
    from faircode.record.first_screen import first_screen
    from faircode.record.tracking import collect_children  # what `faircode track` logs: the
    # grid's children and the text audits' (faircode.record.text_runs)

    children, _ = collect_children(REPO / "results")
    quoted = re.search(r"1 parent, ([\d,]+) child runs", README)
    assert quoted is not None and int(quoted.group(1).replace(",", "")) == len(children)
    view = first_screen(children, digest="d")
    assert view is not None
    audit, attribute = re.findall(r"tags\.\w+ = '([^']+)'", view["searchFilter"])[1:3]
    shown = [c for c in children if c.tags["table"] == "fairness" and c.audit == audit
             and c.tags["attribute"] == attribute]
    first = re.search(r"first audit of the state \(`(\w+)`,\s+its first attribute `(\w+)`\): "
                      r"the (\d+) runs", README)
    assert first is not None and first.groups() == (audit, attribute, str(len(shown)))
    assert f'"{len(shown)} matching\nruns"' in README or f'"{len(shown)} matching runs"' in \
        " ".join(README.split())


def test_the_readme_headline_is_the_committed_reports_first_screen() -> None:
    """README's finding is the committed report's first screen, word for word: its lead and
    every count (``faircode.report.headline.short_lead``), and the frozen state it names is the
    last freeze record -- so a re-derived state cannot leave README quoting the last one."""
    import html

    page = (REPO / "results" / "report.html").read_text(encoding="utf-8")
    lead = re.search(r'<p class="lead" id="lead">(.*?)</p>', page, re.S)
    counts = re.search(r'<ul class="counts" id="counts">(.*?)</ul>', page, re.S)
    assert lead is not None and counts is not None
    quoted = [html.unescape(lead.group(1)),
              *(f"- {html.unescape(c)}" for c in re.findall(r"<li>(.*?)</li>", counts.group(1)))]
    block = [line[2:] for line in README.splitlines() if line.startswith("> ")]
    assert block[:len(quoted)] == quoted
    states = sorted((REPO / "freezes").glob("*-paper.json"),
                    key=lambda p: tuple(int(x) for x in re.findall(r"\d+", p.stem)))
    assert f"(K = 5, `{states[-1].stem}`)" in README
