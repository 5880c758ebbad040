"""faircode against the seed system (Fair-Code 2.0.0), side by side, in one invocation.

Run from the repository root with the project's python, after creating the seed system's venv
once by hand (it has the same import name, ``faircode``, so it never goes into the project's venv):

    python3 -m venv /work/peer-venv
    /work/peer-venv/bin/pip install 'faircode[benchmark]==2.0.0'
    python bench/peer.py --peer-venv /work/peer-venv [--audits A B C] [--repeats N]
        [--n-resamples B] [--n-permutations P] [--jobs N]

It runs ``<venv>/bin/faircode benchmark <audit.yaml ...> --out TMP --no-plots`` (the seed system,
one process) and ``faircode run <audits> --out TMP2`` (this project) on the same audits, raw files
and B/P, ``--repeats`` times alternating which goes first, and prints both median wall times, the
ratio seed / faircode and whether the target (>= 2x) is met.

Design decisions
----------------
* **Installs nothing.**  The seed venv is given (``--peer-venv``); the script only runs it.  The
  seed is started with ``PYTHONPATH`` removed and from a temporary working directory, so its
  ``import faircode`` can never pick up this project's package (same import name).
* **The seed gets reduced copies of the manifests** (:func:`reduce_manifest`): only the keys its
  spec knows (it raises ``TypeError`` on an unknown key inside ``target``, ``row_filters`` or
  ``protected_attributes``, e.g. ``favourable``, and ignores unknown top-level and ``dataset``
  keys), with ``dataset.path`` pointing at the raw file this project verified.  What the seed spec
  cannot express without changing *which rows and labels* are audited (a ``first_by`` filter, a
  ``threshold`` target, a non-default ``dataset.read``) is an error, not a silent difference:
  the comparison must be like for like.  What is dropped without changing the audited rows
  (``favourable``, ``dataset.unit``, ``decision``, ``counterfactual_axes``, provenance keys) is
  listed in the printout with its effect (:func:`reduction_notes`).
* **A missing target drops the row on both sides**: this project drops rows whose target value is
  missing, the seed would label them 0 (COMPAS has 27 such rows), so every seed copy gets a
  ``notna`` filter on the target column, which its spec can express.
* **Like for like is checked, not assumed**: the rows each side audits (the seed's own loader,
  this project's ``run.json``) are printed side by side; a difference exits 1.
* **Same statistics budget**: both sides get the same ``--n-resamples``/``--n-permutations``
  (the seed's CLI takes both, default 2000 each, as here).  The seed runs as it runs (one
  process); ``--jobs`` goes to ``faircode run`` only (default: its own, every core).
* Timings are wall-clock seconds of each whole command (process start to exit, reading data and
  writing results included); every run's outputs go to a temporary folder that is removed.
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
SEED_VERSION = "2.0.0"
DEFAULT_AUDITS = ("german_credit_lending", "insurance_denial", "compas")
TARGET_RATIO = 2.0

# The seed spec (faircode 2.0.0: faircode/manifest.py, Manifest.from_dict and its dataclasses).
SEED_TOP_KEYS = ("name", "title", "dataset", "random_state", "test_size", "row_filters", "target",
                 "protected_attributes", "core_features", "proxy_features")
SEED_DATASET_KEYS = ("path",)
SEED_FILTER_OPERATORS = ("isin", "not_isin", "equals", "not_equals", "notna")
SEED_TARGET_METHODS: Mapping[str, tuple[str, ...]] = {
    "binary": (), "equals": ("value",), "isin": ("values",), "above_median": (),
}
SEED_ATTRIBUTE_KEYS = ("name", "type", "column", "disadvantaged_values", "advantaged_values",
                       "threshold", "disadvantaged")

# dataset.read values equal to pandas' defaults, i.e. to how the seed reads every file.
_READ_DEFAULTS: Mapping[str, object] = {
    "separator": ",", "header": 0, "encoding": "utf-8", "names": None, "missing": [],
}
# What dropping a key means for the comparison (none of these changes the audited rows).
_DROPPED: Mapping[str, str] = {
    "dataset.sha256": "provenance only (this project verified the same file)",
    "dataset.source": "provenance only",
    "dataset.read": "all pandas defaults, as the seed reads",
    "dataset.unit": "same rows, but faircode splits train/test by unit and its intervals are "
                    "cluster bootstraps; the seed splits and resamples rows",
    "target.favourable": "the seed takes label 1 as the favourable outcome, so its gaps have "
                         "the opposite sign (same fits, same work)",
    "decision": "the seed decides at P(y=1) > 0.5; faircode at the manifest's operating point "
                "(same fits, other decisions)",
    "counterfactual_axes": "faircode also computes counterfactual flip rates (extra work on its "
                           "side only)",
}


class ReductionError(ValueError):
    """A manifest says something the seed spec cannot express without changing what is audited."""


@dataclass(frozen=True, slots=True)
class Run:
    """One timed command: its wall seconds and what it wrote, read before the folder is removed."""

    side: str
    seconds: float
    rows: dict[str, int]
    test_rows: dict[str, int]
    audit_seconds: dict[str, float]
    finished_at: dict[str, float]

    def __post_init__(self) -> None:
        if self.side not in ("seed", "faircode"):
            raise ValueError(f"Run.side: expected 'seed' or 'faircode', got {self.side!r}")
        if self.seconds < 0:
            raise ValueError(f"Run.seconds: expected >= 0, got {self.seconds!r}")


def _fail(where: str, expected: str, got: object) -> ReductionError:
    return ReductionError(f"{where}: expected {expected}, got {got!r} ({type(got).__name__})")


def _dropped(key: str) -> str:
    return f"{key} dropped: {_DROPPED.get(key, 'not in the seed spec')}"


def _reduce_dataset(data: Mapping[str, Any], raw_path: Path, where: str,
                    notes: list[str]) -> dict[str, Any]:
    read = data.get("read") or {}
    for key, value in read.items():
        default = _READ_DEFAULTS.get(key, object())
        if value != default and not (key == "missing" and not value):
            raise _fail(f"{where}: dataset.read.{key}",
                        f"pandas' default {default!r} (the seed reads every file with "
                        "pandas' defaults)", value)
    for key in data:
        if key not in SEED_DATASET_KEYS:
            notes.append(_dropped(f"dataset.{key}"))
    return {"path": str(raw_path)}


def _reduce_filter(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    unknown = [k for k in raw if k != "column" and k not in SEED_FILTER_OPERATORS]
    if unknown:
        raise _fail(f"{where}.{unknown[0]}",
                    f"an operator of the seed spec ({', '.join(SEED_FILTER_OPERATORS)}); "
                    "without it the seed would audit other rows", raw[unknown[0]])
    return dict(raw)


def _reduce_target(raw: Mapping[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    method = str(raw.get("method"))
    if method == "quantile" and raw.get("quantile") == 0.5 and raw.get("direction") == "above":
        # the median, strictly above: exactly the seed's above_median
        method = "above_median"
        notes.append("target quantile 0.5 above -> above_median (the same labels)")
    elif method not in SEED_TARGET_METHODS:
        raise _fail(f"{where}.method",
                    f"a target the seed spec can express ({', '.join(SEED_TARGET_METHODS)}, "
                    "or quantile 0.5 above)", raw.get("method"))
    reduced: dict[str, Any] = {"column": raw["column"], "method": method}
    for key in SEED_TARGET_METHODS[method]:
        if key not in raw:
            raise _fail(f"{where}.{key}", f"a {key} for method {method}", None)
        reduced[key] = raw[key]
    used = ("column", "method", "quantile", "direction", *SEED_TARGET_METHODS[method])
    for key in raw:
        if key == "favourable" and raw[key] == 1:
            notes.append("target.favourable 1 dropped: the seed's convention too")
        elif key not in used:
            notes.append(_dropped(f"target.{key}"))
    return reduced


def _reduce_attribute(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    unknown = [k for k in raw if k not in SEED_ATTRIBUTE_KEYS]
    if unknown:
        raise _fail(f"{where}.{unknown[0]}",
                    f"a key of the seed spec ({', '.join(SEED_ATTRIBUTE_KEYS)})", raw[unknown[0]])
    return dict(raw)


def _reduce(mapping: Mapping[str, Any], raw_path: Path | str, where: str
            ) -> tuple[dict[str, Any], tuple[str, ...]]:
    doc = copy.deepcopy(dict(mapping))
    if not isinstance(doc.get("target"), dict):
        raise _fail(f"{where}: target", "a mapping", doc.get("target"))
    notes: list[str] = []
    reduced: dict[str, Any] = {}
    for key in SEED_TOP_KEYS:
        if key not in doc:
            continue
        value = doc[key]
        if key == "dataset":
            reduced[key] = _reduce_dataset(value, Path(raw_path), where, notes)
        elif key == "row_filters":
            reduced[key] = [_reduce_filter(f, f"{where}: row_filters[{i}]")
                            for i, f in enumerate(value or [])]
        elif key == "target":
            reduced[key] = _reduce_target(value, f"{where}: target", notes)
        elif key == "protected_attributes":
            reduced[key] = [_reduce_attribute(a, f"{where}: protected_attributes[{i}]")
                            for i, a in enumerate(value)]
        else:
            reduced[key] = value
    for key in doc:
        if key not in SEED_TOP_KEYS:
            notes.append(_dropped(key))
    # faircode drops rows whose target is missing; the seed would keep them with label 0
    column = doc["target"]["column"]
    reduced.setdefault("row_filters", []).append({"column": column, "notna": True})
    notes.append(f"row filter {column} notna added: faircode drops rows with a missing target, "
                 "the seed would label them 0")
    reduced = {k: reduced[k] for k in SEED_TOP_KEYS if k in reduced}
    return reduced, tuple(notes)


def reduce_manifest(mapping: Mapping[str, Any], raw_path: Path | str, *,
                    where: str = "audit.yaml") -> dict[str, Any]:
    """Return a copy of a manifest mapping that the seed system (Fair-Code 2.0.0) accepts.

    Parameters
    ----------
    mapping : Mapping
        The parsed ``audit.yaml`` of this project; not modified.
    raw_path : Path or str
        The raw data file; the copy's ``dataset.path`` (the seed resolves a relative path against
        the manifest's folder, an absolute one as it is).
    where : str, keyword-only
        The manifest's file name, for error messages.

    Returns
    -------
    dict
        Only the seed spec's keys; a ``quantile`` 0.5 ``above`` target becomes ``above_median``.

    Raises
    ------
    ReductionError
        For a row filter operator, target method or non-default ``dataset.read`` option the seed
        spec cannot express: the seed would audit other rows or labels.
    """
    return _reduce(mapping, raw_path, where)[0]


def reduction_notes(mapping: Mapping[str, Any], *, where: str = "audit.yaml") -> tuple[str, ...]:
    """Return what :func:`reduce_manifest` drops or maps, each with its effect on the comparison."""
    return _reduce(mapping, "raw", where)[1]


# ------------------------------------------------------------------------------ running


def _die(message: str, code: int = 2) -> None:
    print(f"bench/peer.py: {message}", file=sys.stderr)
    raise SystemExit(code)


def _our_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def _seed_env() -> dict[str, str]:
    # the seed's `import faircode` must find its own package, never this project's
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def _raw_file(manifest_path: Path, doc: Mapping[str, Any]) -> Path:
    return (manifest_path.parent / str(doc["dataset"]["path"])).resolve()


def _ensure_raw(audits: Sequence[str], manifests: Mapping[str, Path],
                docs: Mapping[str, Mapping[str, Any]]) -> dict[str, Path]:
    """The verified raw files: data/raw as left by `faircode data fetch`, else from the mirror."""
    raw = {a: _raw_file(manifests[a], docs[a]) for a in audits}
    missing = [a for a in audits if not raw[a].is_file()]
    if missing and os.environ.get("FAIRCODE_DATA_MIRROR"):
        print(f"fetching {', '.join(missing)} from FAIRCODE_DATA_MIRROR "
              "(faircode data fetch --offline)")
        done = subprocess.run([sys.executable, "-m", "faircode.pipeline.cli", "data", "fetch",
                               "--offline",
                               *missing], cwd=REPO, env=_our_env(), capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            _die(f"faircode data fetch: {(done.stderr or done.stdout).strip().splitlines()[-1]}")
    for a in audits:
        if not raw[a].is_file():
            _die(f"{a}: dataset.path: expected the raw file {raw[a]} (run `faircode data fetch` "
                 "or set FAIRCODE_DATA_MIRROR), got no such file")
    return raw


_SEED_ROWS = """
import json, sys
from faircode.benchmark import _load_dataset
from faircode.manifest import load_manifest
rows = {}
for path in sys.argv[1:]:
    m = load_manifest(path)
    rows[m.name] = len(_load_dataset(m)[0])
print(json.dumps(rows))
"""


def _seed_rows(python: Path, paths: Sequence[Path], cwd: Path) -> dict[str, int]:
    """Rows the seed audits per manifest, counted by its own loader (not timed)."""
    done = subprocess.run([str(python), "-I", "-c", _SEED_ROWS, *map(str, paths)], cwd=cwd,
                          env=_seed_env(), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        _die(f"seed system: cannot load the reduced manifests: "
             f"{done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
    return {str(k): int(v) for k, v in json.loads(done.stdout).items()}


def _tail(path: Path) -> str:
    lines = path.read_text(errors="replace").strip().splitlines()
    return lines[-1] if lines else "(no output)"


def run_seed(faircode_bin: Path, manifests: Sequence[Path], *, n_resamples: int,
             n_permutations: int, work: Path) -> Run:
    """Time ``faircode benchmark`` of the seed system and read its results' test-set sizes."""
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        out, log = Path(tmp) / "out", Path(tmp) / "stderr.txt"
        cmd = [str(faircode_bin), "benchmark", *map(str, manifests), "--out", str(out),
               "--no-plots", "--n-resamples", str(n_resamples),
               "--n-permutations", str(n_permutations)]
        with log.open("w") as err:
            start = time.perf_counter()
            code = subprocess.run(cmd, cwd=tmp, env=_seed_env(), stdout=subprocess.DEVNULL,
                                  stderr=err, check=False).returncode
            seconds = time.perf_counter() - start
        if code != 0:
            _die(f"seed system exited {code}: {_tail(log)}", 1)
        test_rows: dict[str, int] = {}
        with (out / "results_fairness.csv").open(newline="") as f:
            for row in csv.DictReader(f):
                if row["metric"] == "demographic_parity_diff" and row["audit"] not in test_rows:
                    test_rows[row["audit"]] = int(row["n_disadvantaged"]) + int(row["n_advantaged"])
    return Run(side="seed", seconds=seconds, rows={}, test_rows=test_rows, audit_seconds={},
               finished_at={})


def _has_quiet() -> bool:
    done = subprocess.run([sys.executable, "-m", "faircode.pipeline.cli", "run", "--help"],
                          cwd=REPO,
                          env=_our_env(), capture_output=True, text=True, check=False)
    return "--quiet" in done.stdout


_WROTE = re.compile(r"^(\S+): wrote ")


def run_faircode(audits: Sequence[str], *, n_resamples: int, n_permutations: int,
                 jobs: int | None, quiet: bool, work: Path) -> Run:
    """Time ``faircode run`` and read the rows, test rows and cell seconds from each run.json."""
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        out, log = Path(tmp) / "out", Path(tmp) / "stderr.txt"
        cmd = [sys.executable, "-m", "faircode.pipeline.cli", "run", *audits, "--out", str(out),
               "--n-resamples", str(n_resamples), "--n-permutations", str(n_permutations)]
        cmd += ["--jobs", str(jobs)] if jobs is not None else []
        cmd += ["--quiet"] if quiet else []
        finished: dict[str, float] = {}
        with log.open("w") as err:
            start = time.perf_counter()
            proc = subprocess.Popen(cmd, cwd=REPO, env=_our_env(), stdout=subprocess.PIPE,
                                    stderr=err, text=True)
            assert proc.stdout is not None
            for line in proc.stdout:
                if match := _WROTE.match(line):
                    finished[match.group(1)] = time.perf_counter() - start
            code = proc.wait()
            seconds = time.perf_counter() - start
        if code != 0:
            _die(f"faircode run exited {code}: {_tail(log)}", 1)
        from faircode.evaluate.write import read_timings
        rows, test_rows, cell_seconds = {}, {}, {}
        for audit in audits:
            path = out / audit / "run.json"
            if not path.is_file():  # a skipped audit would make this side look faster
                _die(f"faircode run: {audit}: expected {path.name}, got none "
                     f"(skipped or failed: {_tail(log)})", 1)
            record = json.loads(path.read_text())
            rows[audit] = int(record["rows"]["steps"][-1][1])
            test_rows[audit] = int(record["rows"]["test"])
            cell_seconds[audit] = sum(sum(c["seconds"].values())
                                      for c in read_timings(out / audit).get("cells", []))
    return Run(side="faircode", seconds=seconds, rows=rows, test_rows=test_rows,
               audit_seconds=cell_seconds, finished_at=finished)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0],
        epilog="example: python bench/peer.py --peer-venv /work/peer-venv --repeats 1")
    parser.add_argument("--peer-venv", required=True, type=Path,
                        help="venv holding the seed system (faircode 2.0.0 with its benchmark "
                             "extra); created by hand, never by this script")
    parser.add_argument("--audits", nargs="+", default=list(DEFAULT_AUDITS),
                        help=f"audit names (default: {' '.join(DEFAULT_AUDITS)})")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed runs per side, alternating which goes first (default 3)")
    parser.add_argument("--n-resamples", type=int, default=2000, help="B, both sides (2000)")
    parser.add_argument("--n-permutations", type=int, default=2000, help="P, both sides (2000)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="faircode run's workers (default: its own, every core); the seed "
                             "system always runs in one process")
    args = parser.parse_args(argv)
    for flag in ("repeats", "n_resamples", "n_permutations"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')}: expected an integer >= 1, "
                         f"got {getattr(args, flag)!r} (int)")
    if args.jobs is not None and args.jobs < 1:
        parser.error(f"--jobs: expected an integer >= 1, got {args.jobs!r} (int)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    venv = args.peer_venv.resolve()
    seed_bin, seed_python = venv / "bin" / "faircode", venv / "bin" / "python"
    if not seed_bin.is_file():
        _die(f"--peer-venv: expected the seed system at {seed_bin}, got no such file; create it "
             f"with: python3 -m venv {venv} && {venv}/bin/pip install "
             f"'faircode[benchmark]=={SEED_VERSION}'")
    manifests: dict[str, Path] = {}
    docs: dict[str, dict[str, Any]] = {}
    for audit in args.audits:
        path = REPO / "audits" / audit / "audit.yaml"
        if not path.is_file():
            _die(f"--audits: expected an audit of {REPO / 'audits'}, got {audit!r} (str)")
        manifests[audit] = path
        docs[audit] = yaml.safe_load(path.read_text())
    raw = _ensure_raw(args.audits, manifests, docs)

    with tempfile.TemporaryDirectory(prefix="faircode-peer-") as tmp:
        work = Path(tmp)
        print(f"B = {args.n_resamples}, P = {args.n_permutations}, repeats = {args.repeats}, "
              f"faircode jobs = {args.jobs or 'all cores'} (machine: {os.cpu_count()} cores)")
        version = subprocess.run([str(seed_python), "-I", "-c",
                                  "import faircode; print(faircode.__version__)"], cwd=work,
                                 env=_seed_env(), capture_output=True, text=True, check=False)
        print(f"seed system: faircode {version.stdout.strip() or '?'} at {venv} (one process)")
        seed_paths = []
        for audit in args.audits:
            where = str(manifests[audit].relative_to(REPO))
            try:
                reduced, notes = _reduce(docs[audit], raw[audit], where)
            except ReductionError as exc:
                _die(f"{exc}")
            target = work / "seed-manifests" / audit / "audit.yaml"
            target.parent.mkdir(parents=True)
            target.write_text(yaml.safe_dump(reduced, sort_keys=False))
            seed_paths.append(target)
            print(f"{audit}: seed copy of {where}; " + ("; ".join(notes) or "nothing dropped"))
        seed_rows = _seed_rows(seed_python, seed_paths, work)
        quiet = _has_quiet()

        runs: dict[str, list[Run]] = {"seed": [], "faircode": []}
        for i in range(args.repeats):
            for side in (("seed", "faircode") if i % 2 == 0 else ("faircode", "seed")):
                if side == "seed":
                    run = run_seed(seed_bin, seed_paths, n_resamples=args.n_resamples,
                                   n_permutations=args.n_permutations, work=work)
                else:
                    run = run_faircode(args.audits, n_resamples=args.n_resamples,
                                       n_permutations=args.n_permutations, jobs=args.jobs,
                                       quiet=quiet, work=work)
                runs[side].append(run)
                print(f"  run {i + 1} {side:<9}{run.seconds:8.1f} s", flush=True)

    ours = runs["faircode"][-1]
    seed = runs["seed"][-1]
    print(f"\n{'audit':<24}{'rows seed':>10}{'rows ours':>10}{'test seed':>10}{'test ours':>10}"
          f"{'ours cell s':>12}{'ours done at s':>15}")
    alike = True
    for audit in args.audits:
        same = seed_rows.get(audit) == ours.rows[audit]
        alike &= same
        done_at = ours.finished_at.get(audit, float("nan"))
        print(f"{audit:<24}{seed_rows.get(audit, -1):>10}{ours.rows[audit]:>10}"
              f"{seed.test_rows.get(audit, -1):>10}{ours.test_rows[audit]:>10}"
              f"{ours.audit_seconds[audit]:>12.1f}{done_at:>15.1f}"
              + ("" if same else "   ROWS DIFFER"))
    print("(the seed system records no per-audit time; 'ours cell s' sums the 15 cells' "
          "fit/predict/statistics/counterfactual seconds, 'done at' is from faircode run's start)")
    seed_median = statistics.median(r.seconds for r in runs["seed"])
    our_median = statistics.median(r.seconds for r in runs["faircode"])
    ratio = seed_median / our_median
    print(f"\nseed system (median of {args.repeats}): {seed_median:.1f} s")
    print(f"faircode    (median of {args.repeats}): {our_median:.1f} s")
    print(f"ratio seed / faircode: {ratio:.2f}x; target >= {TARGET_RATIO:g}x "
          f"{'met' if ratio >= TARGET_RATIO else 'NOT met'}")
    if not alike:
        print("NOT like for like: the two sides audit different rows (see above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
