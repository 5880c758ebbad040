"""Tests of the package layout: wings in one order, no import circle, honest DVC stage deps.

The wings, bottom to top, and what each may import (besides itself and ``core``)::

    core  <-  counterfactual  <-  audit  <-  grid  <-  evaluate  <-  pipeline
                     ^   \\_____________________ stats <-/ report <-/  record <-/

``provenance`` (the state a result records) imports only ``core`` and is imported by
``evaluate``, ``report``, ``record`` and ``pipeline``.

An arrow against this order, an import circle anywhere, or a DVC stage that loads a faircode file
its ``deps:`` do not name would let a change re-run too little (or a refactor tangle the wings),
so each is a failing test here.  Imports are read with :mod:`ast` (module-level and in-function,
so lazy imports count too) and, for the stages, also observed in a fresh interpreter.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest
from conftest import pipeline_stages

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "faircode"

ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "provenance": frozenset({"core"}),
    "counterfactual": frozenset({"core"}),
    "audit": frozenset({"core", "counterfactual"}),
    "stats": frozenset({"core", "counterfactual"}),
    "grid": frozenset({"core", "counterfactual", "audit"}),
    "evaluate": frozenset({"core", "provenance", "counterfactual", "audit", "stats", "grid"}),
    "report": frozenset({"core", "provenance", "counterfactual", "audit", "stats"}),
    "record": frozenset({"core", "provenance"}),
    "pipeline": frozenset({"core", "provenance", "counterfactual", "audit", "stats", "grid",
                           "evaluate", "report", "record"}),
}
"""Which wings each wing may import.  ``faircode/__init__.py`` (the face) imports lazily only,
but for :data:`FACE_EAGER`."""
FACE_EAGER = frozenset({"faircode.core.numerics"})
"""What the face imports on ``import faircode``: the numerical configuration, which must be in
the environment before anything imports numpy (standard library only)."""

HEAVY = ("sklearn", "fairlearn", "statsmodels")
REGISTERED = re.compile(r"(faircode(?:\.\w+)+):\w+")
"""A wing's task-kind table entry, ``"<module>:<attribute>"`` (:func:`faircode.core.kinds.
registered` imports it): counted as an import of the module."""


def module_name(path: Path) -> str:
    """``faircode/stats/metrics.py`` -> ``faircode.stats.metrics`` (a package: its folder)."""
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every faircode module ``path`` imports, at module level or inside a function.

    ``from faircode.x import y`` counts as ``faircode.x.y`` when that is a module, else as
    ``faircode.x``; relative imports are resolved against the file's package; a task-kind
    table entry ``"faircode.x.y:attr"`` (:data:`REGISTERED`) counts as ``faircode.x.y``.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: set[str] = set()
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "faircode")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "faircode":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if _is_module(sub) else target)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and (entry := REGISTERED.fullmatch(node.value)) and _is_module(entry[1])):
            found.add(entry[1])  # a wing's table entry: imported when its kind is used
    found.discard(module_name(path))
    return found


def _runtime_nodes(tree: ast.AST) -> Iterable[ast.AST]:
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (never run)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if (isinstance(child, ast.If) and isinstance(child.test, ast.Name)
                    and child.test.id == "TYPE_CHECKING"):
                todo.extend(child.orelse)
                continue
            todo.append(child)


def _is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (REPO / rel.with_suffix(".py")).is_file() or (REPO / rel / "__init__.py").is_file()


def module_file(name: str) -> Path:
    rel = Path(*name.split("."))
    file = REPO / rel.with_suffix(".py")
    return file if file.is_file() else REPO / rel / "__init__.py"


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the faircode modules it imports, for every module under ``root``."""
    return {module_name(p): imports_of(p) for p in sorted(root.rglob("*.py"))}


def wing(module: str) -> str:
    """The wing of a module (``faircode.stats.metrics`` -> ``stats``); the face is ``face``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "face"


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), plus self-loops."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:  # recursion depth is bounded by the module count
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in graph:
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def arrows_against_order(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """Every import from one wing into a wing it may not import."""
    bad = []
    for module, targets in graph.items():
        source = wing(module)
        for target in targets:
            other = wing(target)
            if source == "face":
                if target not in FACE_EAGER:
                    bad.append(f"{module} -> {target} (the package face imports lazily only)")
            elif other not in (source, "face") and other not in ALLOWED[source]:
                bad.append(f"{module} -> {target} ({source} may not import {other})")
    return sorted(bad)


def closure(module: str, graph: Mapping[str, set[str]]) -> set[str]:
    """``module``, the modules it reaches through imports, and every package ``__init__`` those
    imports execute on the way."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        parts = current.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        todo.extend(graph.get(current, ()))
    return seen


def stage_modules() -> dict[str, tuple[str, list[str]]]:
    """Stage name -> (its entry module, its ``faircode/`` deps) as the pipeline files
    (``dvc.yaml``, ``upstream/dvc.yaml``) declare them."""
    stages = pipeline_stages()
    out = {}
    for name, stage in stages.items():
        body = stage.get("do", stage)
        module = body["cmd"].split("python -m ", 1)[1].split()[0]
        deps = [d for d in body["deps"] if str(d).startswith("faircode")]
        out[name] = (module, deps)
    return out


def undeclared(files: Iterable[Path], deps: Iterable[str]) -> list[str]:
    """The files (under the repository) that lie under none of ``deps``."""
    roots = [REPO / d for d in deps]
    return sorted(str(f.relative_to(REPO)) for f in files
                  if not any(f == r or r in f.parents for r in roots))


def loaded_in_fresh_interpreter(module: str) -> tuple[list[Path], list[str]]:
    """Import ``module`` in a new interpreter: (faircode files it loaded, heavy packages)."""
    code = (
        "import importlib, json, sys\n"
        f"importlib.import_module({module!r})\n"
        "files = sorted(m.__file__ for n, m in list(sys.modules.items())\n"
        "               if n.split('.')[0] == 'faircode' and getattr(m, '__file__', None))\n"
        f"heavy = sorted({{n.split('.')[0] for n in sys.modules}} & {set(HEAVY)!r})\n"
        "print(json.dumps([files, heavy]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, check=True, timeout=120)
    files, heavy = json.loads(done.stdout)
    return [Path(f).resolve() for f in files], heavy


def test_no_import_circle_anywhere() -> None:
    """No two faircode modules import each other, directly or through others."""
    assert circles(import_graph()) == []


def test_every_arrow_follows_the_wing_order() -> None:
    """Every import goes to the same wing or one the wing order allows (never upward)."""
    assert arrows_against_order(import_graph()) == []


def test_every_module_lives_in_a_declared_wing() -> None:
    """Each module sits in one of the wings (no flat module beside them but the face)."""
    wings = {wing(m) for m in import_graph()}
    assert wings <= {*ALLOWED, "face"}


def test_checks_find_a_circle_and_an_upward_arrow() -> None:
    """The graph checks fail on a made-up circle and on a stats -> grid arrow."""
    graph = {"faircode.stats.a": {"faircode.grid.b"}, "faircode.grid.b": {"faircode.stats.a"}}
    assert circles(graph) == [["faircode.grid.b", "faircode.stats.a"]]
    assert arrows_against_order(graph) == [
        "faircode.grid.b -> faircode.stats.a (grid may not import stats)",
        "faircode.stats.a -> faircode.grid.b (stats may not import grid)",
    ]


@pytest.mark.parametrize("stage", sorted(stage_modules()))
def test_stage_imports_only_its_declared_deps(stage: str) -> None:
    """Every faircode file a stage loads -- in a fresh interpreter, and by its imports read
    statically (lazy imports included) -- lies under one of the stage's ``deps:``."""
    module, deps = stage_modules()[stage]
    loaded, _ = loaded_in_fresh_interpreter(module)
    assert undeclared(loaded, deps) == []
    static = {module_file(m).resolve() for m in closure(module, import_graph())}
    assert undeclared(static, deps) == []


def test_stage_deps_catch_an_undeclared_import() -> None:
    """The deps check fails when the evaluate stage's deps leave out a wing it imports."""
    module, deps = stage_modules()["evaluate"]
    static = {module_file(m).resolve() for m in closure(module, import_graph())}
    missing = undeclared(static, [d for d in deps if d != "faircode/stats"])
    assert "faircode/stats/metrics.py" in missing


def test_check_params_loads_no_model_library() -> None:
    """The check-params stage validates params.yaml without scikit-learn, fairlearn or
    statsmodels."""
    _, heavy = loaded_in_fresh_interpreter("faircode.pipeline.stages.check_params")
    assert heavy == []


def test_package_face_is_quiet() -> None:
    """``import faircode`` loads no wing but core's numerical configuration (and no numpy), and
    using ``perturb`` loads only the counterfactual and core wings."""
    code = (
        "import json, sys, faircode\n"
        "first = sorted(n for n in sys.modules if n.startswith(('faircode.', 'numpy')))\n"
        "faircode.perturb('he', [faircode.AxisSpec('g', (faircode.Substitution('he', 'she'),))])\n"
        "then = sorted({n.split('.')[1] for n in sys.modules if n.startswith('faircode.')})\n"
        "print(json.dumps([first, then]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, check=True, timeout=120)
    first, then = json.loads(done.stdout)
    assert first == ["faircode.core", "faircode.core.errors", "faircode.core.numerics"]
    assert then == ["core", "counterfactual"]


# ---------------------------------------------------------------------------- one home: results
LAYOUT = PACKAGE / "core" / "layout.py"


def _string_nodes(tree: ast.AST) -> Iterable[ast.Constant]:
    """Every string constant of ``tree`` but docstrings (prose may name a file)."""
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docs]


def spelled_results_files(path: Path, names: frozenset[str], *, root: Path = REPO) -> list[str]:
    """Where ``path`` spells a results file name itself: a string equal to one of ``names`` (or
    a path ending in one), or an f-string ``"{table}.csv"``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(root)
    found = [f"{where}:{n.lineno}: {n.value!r}" for n in _string_nodes(tree)
             if n.value in names or any(n.value.endswith(f"/{name}") for name in names)]
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            for a, b in zip(node.values, node.values[1:], strict=False):
                if (isinstance(a, ast.FormattedValue) and isinstance(b, ast.Constant)
                        and str(b.value).startswith(".csv")):
                    found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_every_results_file_name_comes_from_the_layout_module() -> None:
    """No module but core/layout.py spells a results folder's file name (``"run.json"``,
    ``"fairness.csv"``, ``f"{table}.csv"`` ...): each is read from the layout module."""
    from faircode.core.kinds import TASK_KINDS
    from faircode.core.layout import file_names, table_file

    names = file_names() | {table_file(t) for k in TASK_KINDS
                            for t in (*k.tables, *k.optional_tables)}
    assert {"run.json", "unavailable.json", "fairness.csv", "flips.csv", "summary.csv"} <= names
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) if path != LAYOUT
             for hit in spelled_results_files(path, names)]
    assert found == []


def test_the_literal_check_finds_a_spelled_file_name(tmp_path: Path) -> None:
    """The check flags ``"run.json"``, a path ending in it and ``f"{t}.csv"``, not prose."""
    module = tmp_path / "m.py"
    module.write_text('"""Reads run.json."""\nA = "run.json"\nB = "*/run.json"\n'
                      'C = f"{t}.csv"\nD = "the run.json record"\n')
    hits = spelled_results_files(module, frozenset({"run.json"}), root=tmp_path)
    assert hits == ["m.py:2: 'run.json'", "m.py:3: '*/run.json'", "m.py:4: f'{t}.csv'"]


def test_a_folder_kind_is_told_in_one_place() -> None:
    """Which kind of run a folder holds is decided once (core/layout.py: ``run_kind``,
    ``folder_kind``): no ``is_text_run`` elsewhere, and no module compares a ``.get("kind")``
    with a task kind's name."""
    from faircode.core.kinds import TASK_KINDS

    kinds = {v for k in TASK_KINDS for v in (k.name, k.run_kind, k.manifest_kind)}
    defined, compared = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(REPO)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name in (
                    "is_text_run", "is_text_results", "run_kind", "folder_kind"):
                defined.append(f"{where}:{node.name}")
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                reads_kind = any(isinstance(s, ast.Call) and isinstance(s.func, ast.Attribute)
                                 and s.func.attr == "get" and s.args
                                 and isinstance(s.args[0], ast.Constant)
                                 and s.args[0].value == "kind" for s in sides)
                if reads_kind and any(isinstance(s, ast.Constant) and s.value in kinds
                                      for s in sides):
                    compared.append(f"{where}:{node.lineno}")
    assert defined == ["faircode/core/layout.py:run_kind", "faircode/core/layout.py:folder_kind"]
    assert compared == []


# ---------------------------------------------------------------------------- the task-kind seam
WING_TABLES = {
    "audit": ("faircode.audit.kinds", "MANIFESTS"),
    "evaluate": ("faircode.evaluate.kinds", "EVALUATORS"),
    "report": ("faircode.report.kinds", "SECTIONS"),
    "record": ("faircode.record.kinds", "CHILDREN"),
}
"""Each wing's table of task kinds: module and attribute."""


@pytest.mark.parametrize("wing_name", sorted(WING_TABLES))
def test_every_wing_registers_every_task_kind(wing_name: str) -> None:
    """Each wing's table has exactly core's task kinds as keys, and every entry imports to an
    object of the wing's shape (a loader, an evaluator, a section, a children function)."""
    import importlib

    from faircode.core.kinds import TASK_KINDS, registered

    module, attribute = WING_TABLES[wing_name]
    table = getattr(importlib.import_module(module), attribute)
    assert set(table) == {k.name for k in TASK_KINDS}
    shapes = {"audit": (), "record": (), "evaluate": ("settle", "run"),
              "report": ("load", "tables", "drawings", "headline", "html")}
    for kind in TASK_KINDS:
        entry = registered(table, kind, where=attribute)
        assert callable(entry) or shapes[wing_name]
        assert all(callable(getattr(entry, m, None)) for m in shapes[wing_name])


def test_a_kind_without_the_grid_has_a_section_of_its_own() -> None:
    """A kind whose runs the grid view does not read has its own report section, else its
    audits would not be reported."""
    from faircode.core.kinds import TASK_KINDS
    from faircode.report.kinds import GRID_VIEW, section

    assert all(section(k) is not GRID_VIEW for k in TASK_KINDS if not k.grid)


def test_every_task_kind_names_a_params_list_and_distinct_kinds() -> None:
    """Each kind's ``params_key`` is a list of :class:`~faircode.core.config.Params`, and no two
    kinds share a name, a manifest kind or a run kind."""
    import dataclasses

    from faircode.core.config import Params
    from faircode.core.kinds import TASK_KINDS

    fields = {f.name for f in dataclasses.fields(Params)}
    assert all(k.params_key in fields for k in TASK_KINDS)
    for attribute in ("name", "manifest_kind", "run_kind", "params_key"):
        values = [getattr(k, attribute) for k in TASK_KINDS]
        assert len(set(values)) == len(values)


def test_dispatchers_name_no_task_kind() -> None:
    """The modules that serve every kind look kinds up: none spells a kind's name."""
    from faircode.core.kinds import TASK_KINDS

    names = {k.name for k in TASK_KINDS}
    dispatchers = ("pipeline/stages/evaluate.py", "pipeline/stages/fetch.py", "report/build.py",
                   "report/html.py", "report/inputs.py", "record/tracking.py",
                   "record/kinds.py", "evaluate/kinds.py", "report/kinds.py", "audit/kinds.py")
    found = []
    for rel in dispatchers:
        path = PACKAGE / rel
        tree = ast.parse(path.read_text(encoding="utf-8"))
        table_keys = {id(k) for n in ast.walk(tree) if isinstance(n, ast.Dict)
                      for k in n.keys if k is not None}  # a wing's table keys its entries
        found += [f"{rel}:{n.lineno}: {n.value!r}" for n in _string_nodes(tree)
                  if n.value in names and id(n) not in table_keys]
    assert found == []


def test_folder_kind_reads_run_json(tmp_path: Path) -> None:
    """A folder's kind: run.json's ``kind``, the grid's without one or when unreadable, the
    note's alone ``unavailable``, nothing ``None``."""
    from faircode.core.layout import GRID_RUN, UNAVAILABLE, folder_kind

    cases = {"text": '{"kind": "text"}', "grid": '{"audit": "a"}', "bad": "{not json"}
    for name, text in cases.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.json").write_text(text)
    (tmp_path / "note").mkdir()
    (tmp_path / "note" / "unavailable.json").write_text("{}")
    (tmp_path / "empty").mkdir()
    assert [folder_kind(tmp_path / n) for n in ("text", "grid", "bad", "note", "empty")] == [
        "text", GRID_RUN, GRID_RUN, UNAVAILABLE, None]


CODE = re.compile(r"(?<![A-Za-z0-9_])S\d+(?![A-Za-z0-9_])")
"""A strategy code as a token (``S0``, ``dp.S3``, ``S3-S2``)."""
TABLES = frozenset({"faircode/core/cells.py", "faircode/core/metrics.py"})
"""The tables that spell the strategy codes and the metric names (:mod:`faircode.core`)."""
R_TYPES = ("faircode/audit/_data_rdata.py", "S4")
"""R's ``S4`` object type, a name of the R data reader, not a strategy."""


def spelled_in_code(path: Path) -> list[tuple[int, str]]:
    """The string literals of ``path`` that are not docstrings (a bare string statement)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docs]


def table_spellings(root: Path = PACKAGE) -> list[str]:
    """Every literal outside the tables that spells a strategy code as a key (a token in a
    string without spaces: prose may name ``S0``) or is a fairness metric's name."""
    from faircode.core.metrics import FAIRNESS_METRICS

    found = []
    for path in sorted(root.rglob("*.py")):
        rel = str(path.relative_to(root.parent))
        if rel in TABLES:
            continue
        for line, text in spelled_in_code(path):
            code = CODE.search(text) is not None and not re.search(r"\s", text)
            if (code and (rel, text) != R_TYPES) or text in FAIRNESS_METRICS:
                found.append(f"{rel}:{line}: {text!r}")
    return found


def test_strategy_codes_and_metric_names_are_spelled_only_in_their_tables() -> None:
    """No ``"S0"`` ... literal (nor a key such as ``dp.S0``) and no metric name outside
    faircode/core/cells.py and faircode/core/metrics.py: every other module reads the tables."""
    assert table_spellings() == []


def test_spelling_check_finds_a_code_and_a_metric_name(tmp_path: Path) -> None:
    """The check flags ``"S3"``, ``"dp.S3"`` and a metric name in code, not in prose or
    docstrings."""
    package = tmp_path / "faircode"
    package.mkdir()
    (package / "x.py").write_text('"""S0 and tpr_gap in a docstring."""\nA = "S3"\nB = "dp.S3"\n'
                                  'C = "tpr_gap"\nD = "S0 (baseline) leaves a gap"\n')
    assert table_spellings(package) == ["faircode/x.py:2: 'S3'", "faircode/x.py:3: 'dp.S3'",
                     "faircode/x.py:4: 'tpr_gap'"]


def test_one_effect_verdict_vocabulary() -> None:
    """Exactly one ``EffectVerdict`` class exists in the package (faircode.stats.verdicts)."""
    homes = [str(p.relative_to(REPO)) for p in sorted(PACKAGE.rglob("*.py"))
             for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
             if isinstance(node, ast.ClassDef) and node.name == "EffectVerdict"]
    assert homes == ["faircode/stats/verdicts.py"]
