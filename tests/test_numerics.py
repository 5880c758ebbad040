"""Tests of the declared numerical configuration (faircode.core.numerics): what importing
faircode puts into the environment, where it refuses, and what this process runs."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from faircode.core import numerics
from faircode.core.numerics import MODE_ENV, Applied, NumericsError, apply, require

V3 = frozenset(numerics.KERNEL_FLAGS) | {"sse4_2", "popcnt"}
DISABLED = " ".join(numerics.NUMPY_DISABLED)


def test_pinned_overrides_inherited_kernel_dispatch_and_threads() -> None:
    """On an x86-64-v3 CPU the declared values replace a kernel forced in the shell, an
    NPY_ENABLE_CPU_FEATURES (numpy refuses it beside the disable list) and thread counts."""
    env = {"OPENBLAS_CORETYPE": "SkylakeX", "NPY_ENABLE_CPU_FEATURES": "X86_V4",
           "OMP_NUM_THREADS": "8", "HOME": "/h"}
    done = apply(env, loaded=False, machine="x86_64", flags=V3)
    assert done == Applied("pinned", True)
    assert env == {"OPENBLAS_CORETYPE": "Haswell", "NPY_DISABLE_CPU_FEATURES": DISABLED,
                   "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "HOME": "/h"}


def test_a_cpu_without_avx2_gets_no_forced_kernel() -> None:
    """Without the x86-64-v3 flags no kernel is forced (an inherited one is dropped: it could
    be one the CPU cannot execute), and the reason names the missing flags."""
    env = {"OPENBLAS_CORETYPE": "Haswell"}
    done = apply(env, loaded=False, machine="x86_64", flags=V3 - {"avx2", "fma"})
    assert not done.pinned and "lacks avx2, fma" in done.note and not done.error
    assert "OPENBLAS_CORETYPE" not in env
    assert env["NPY_DISABLE_CPU_FEATURES"] == DISABLED


def test_unknown_cpu_flags_get_no_forced_kernel() -> None:
    """Where /proc/cpuinfo cannot be read, the kernel is left to OpenBLAS."""
    env: dict[str, str] = {}
    done = apply(env, loaded=False, machine="x86_64", flags=None)
    assert not done.pinned and "cannot be read" in done.note
    assert "OPENBLAS_CORETYPE" not in env


def test_off_x86_no_x86_feature_name_is_set() -> None:
    """On another architecture numpy would warn about x86 feature names; only threads are set,
    and the note says bit-identity is not promised there."""
    env: dict[str, str] = {}
    done = apply(env, loaded=False, machine="aarch64", flags=frozenset({"asimd"}))
    assert env == {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    assert not done.pinned and "not x86-64" in done.note


def test_native_leaves_the_shell_alone() -> None:
    """FAIRCODE_NUMERICS=native (the escape hatch) changes nothing."""
    env = {MODE_ENV: "native", "OPENBLAS_CORETYPE": "SkylakeX"}
    done = apply(env, loaded=False, machine="x86_64", flags=V3)
    assert env == {MODE_ENV: "native", "OPENBLAS_CORETYPE": "SkylakeX"}
    assert done.mode == "native" and not done.pinned and not done.error


def test_an_invalid_mode_is_refused_in_one_line() -> None:
    """A misspelt FAIRCODE_NUMERICS applies nothing, and computing refuses with a line naming
    the variable, the choices and the value."""
    env = {MODE_ENV: "nativ"}
    done = apply(env, loaded=False, machine="x86_64", flags=V3)
    assert env == {MODE_ENV: "nativ"}
    with pytest.raises(NumericsError) as caught:
        require(applied=done, strict=False)
    assert str(caught.value) == ("FAIRCODE_NUMERICS: expected one of pinned, native, got "
                                 "'nativ' (str)")


def test_numpy_imported_first_is_refused_by_entry_points_and_warned_by_the_library() -> None:
    """numpy loaded before faircode under another configuration: the environment is left as it
    is but marked native for the workers; an entry point refuses, the library warns."""
    env = {"OPENBLAS_CORETYPE": "SkylakeX"}
    done = apply(env, loaded=True, machine="x86_64", flags=V3)
    assert env == {"OPENBLAS_CORETYPE": "SkylakeX", MODE_ENV: "native"}
    with pytest.raises(NumericsError, match="numpy was imported before faircode"):
        require(applied=done)
    with pytest.warns(RuntimeWarning, match="numpy was imported before faircode"):
        require(applied=done, strict=False)


def test_numpy_imported_first_under_the_declared_environment_is_pinned() -> None:
    """A shell that already holds the declared values (a Dask worker of a pinned parent) is
    pinned even though numpy came first."""
    env, _ = numerics.declared_environment("x86_64", V3)
    done = apply(dict(env), loaded=True, machine="x86_64", flags=V3)
    assert done == Applied("pinned", True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        require(applied=done)


def test_the_disabled_targets_are_every_numpy_target_above_x86_v3() -> None:
    """The declaration names exactly the installed numpy's dispatch targets above X86_V3 (a
    numpy with a new AVX-512 target must update it, or that target would stay enabled)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__  # type: ignore[attr-defined]

    if "X86_V3" not in __cpu_dispatch__:
        pytest.skip("not an x86-64 numpy")
    assert set(__cpu_dispatch__) - {numerics.NUMPY_DISPATCH} == set(numerics.NUMPY_DISABLED)


def test_this_process_computes_under_the_declared_configuration() -> None:
    """The test process imported faircode first (conftest): both OpenBLAS libraries run the
    Haswell kernel on one thread and numpy dispatches up to X86_V3, as the record says."""
    if not numerics.APPLIED.pinned:
        pytest.skip(f"not pinned here: {numerics.APPLIED.note}")
    record = numerics.record()
    assert record["configuration"] == {"blas_kernels": ["openblas Haswell"],
                                       "numpy_dispatch": ["X86_V3"]}
    assert record["as_declared"] and record["mode"] == "pinned"
    assert len(record["blas"]) == 2  # numpy's and scipy's own OpenBLAS
    assert {(b["architecture"], b["threads"]) for b in record["blas"]} == {("Haswell", 1)}
    assert len(record["cpu"]["flags_sha256"]) == 64 and "avx2" in record["cpu"]["flags"]


def test_cpu_flags_come_from_the_first_flags_line(tmp_path: Path) -> None:
    """The flags are the first ``flags`` line's words; an unreadable file gives None."""
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 fma\n\nprocessor\t: 1\nflags\t: x\n")
    assert numerics.cpu_flags(info) == frozenset({"fpu", "avx2", "fma"})
    assert numerics.cpu_flags(tmp_path / "missing") is None


def test_describe_names_kernels_and_dispatch() -> None:
    """One short phrase per configuration; an unrecorded one says so."""
    assert numerics.describe({"blas_kernels": ["openblas Haswell"],
                              "numpy_dispatch": ["X86_V3"]}) == (
        "OpenBLAS Haswell; numpy dispatch X86_V3")
    assert numerics.describe({"blas_kernels": ["openblas SkylakeX"], "numpy_dispatch": []}) == (
        "OpenBLAS SkylakeX; numpy dispatch none (baseline only)")
    assert numerics.describe(None) == "not recorded"


# ------------------------------------------------------------------------------ two kernels
# One small audit that exercises ExponentiatedGradient (german credit: every strategy, K = 1,
# B = P = 50, a 10-iteration budget), run by `faircode run` under two kernels forced in the
# shell -- what two CPUs choose by themselves -- in fresh processes.

AUDIT = "german_credit_lending"
PARAMS = """audits: [german_credit_lending]
mitigation: {constraint: demographic_parity, eps: 0.01, max_iter: 10}
models: {decision_threshold: 0.5}
stats: {n_resamples: 50, n_permutations: 50, confidence: 0.95, alpha: 0.05}
degenerate: {min_selection_rate: 0.01, max_selection_rate: 0.99, balanced_accuracy_margin: 0.02}
curves: {thresholds: [0.3, 0.5, 0.7]}
run: {jobs: 2, seeds: 1, seed_mode: model}
"""
SKYLAKEX_FLAGS = frozenset({"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"})
LOGISTIC = """
import hashlib, numpy as np
from sklearn.linear_model import LogisticRegression
rng = np.random.default_rng(7)
X = rng.normal(size=(3000, 40)); y = (X @ rng.normal(size=40) + rng.normal(size=3000) > 0)
p = LogisticRegression(max_iter=500).fit(X, y).predict_proba(X)
print(hashlib.sha256(p.tobytes()).hexdigest())
"""


def _two_kernels() -> tuple[str, str]:
    """Haswell and a second kernel this CPU runs (SkylakeX with AVX-512, else Sandybridge)."""
    import platform

    flags = numerics.cpu_flags() or frozenset()
    if platform.machine().lower() not in ("x86_64", "amd64") or not (
            set(numerics.KERNEL_FLAGS) <= flags):
        pytest.skip("the CPU cannot run the pinned Haswell kernel and a second one")
    return "Haswell", "SkylakeX" if SKYLAKEX_FLAGS <= flags else "Sandybridge"


def _shell(kernel: str, *, mode: str | None = None) -> dict[str, str]:
    """A shell that forces ``kernel`` and sets none of the declared values."""
    import os

    env = {k: v for k, v in os.environ.items() if k not in (
        MODE_ENV, "NPY_DISABLE_CPU_FEATURES", *numerics.THREAD_ENV)}
    env.update({"OPENBLAS_CORETYPE": kernel, "PYTHONPATH": str(REPO), "PYTHONWARNINGS": "ignore"})
    if mode is not None:
        env[MODE_ENV] = mode
    return env


REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory,
             mirrors: tuple[Path, ...]) -> dict[str, Path]:
    """kernel forced in the shell -> that run's results/german_credit_lending/."""
    import shutil
    import subprocess
    import sys

    from faircode.audit.fetch import fetch
    from faircode.audit.manifest import load_manifest

    kernels = _two_kernels()
    root = tmp_path_factory.mktemp("kernels")
    (root / "pyproject.toml").write_text("# test repository root\n")
    (root / "audits" / AUDIT).mkdir(parents=True)
    shutil.copy(REPO / "audits" / AUDIT / "audit.yaml", root / "audits" / AUDIT / "audit.yaml")
    (root / "params.yaml").write_text(PARAMS)
    fetch(load_manifest(root / "audits" / AUDIT / "audit.yaml"), mirrors=mirrors)
    out = {}
    for kernel in kernels:
        done = subprocess.run(
            [sys.executable, "-m", "faircode.pipeline.cli", "run", AUDIT, "--params",
             "params.yaml", "--out", f"out-{kernel}", "--quiet"], cwd=root, env=_shell(kernel),
            capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout + done.stderr
        out[kernel] = root / f"out-{kernel}" / AUDIT
    return out


@pytest.mark.integration
def test_two_forced_kernels_give_byte_identical_results(two_runs: dict[str, Path]) -> None:
    """Under Haswell and under a second kernel forced in the shell, every results file is the
    same bytes (run.json: the same but for its timings and the machine's record)."""
    from faircode.record.compare import VOLATILE_RUN_KEYS, without_keys

    first, second = two_runs.values()
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in second.iterdir()) and "fairness.csv" in names
    for name in names:
        if name != "run.json":
            assert (first / name).read_bytes() == (second / name).read_bytes(), name
    import json

    a, b = (json.loads((f / "run.json").read_text()) for f in (first, second))
    assert without_keys(a, VOLATILE_RUN_KEYS) == without_keys(b, VOLATILE_RUN_KEYS)
    assert a["numerics"]["configuration"] == b["numerics"]["configuration"]


@pytest.mark.integration
def test_run_json_records_the_numerical_environment(two_runs: dict[str, Path]) -> None:
    """run.json names the mode, the kernels of the fit and of the evaluation, each OpenBLAS
    (version, kernel, threads), numpy's dispatch and the CPU (model, flags digest)."""
    import json

    record = json.loads((two_runs["Haswell"] / "run.json").read_text())["numerics"]
    pinned = {"blas_kernels": ["openblas Haswell"], "numpy_dispatch": ["X86_V3"]}
    assert record["mode"] == "pinned" and record["pinned"] and record["as_declared"]
    assert record["configuration"] == pinned and record["fit"] == pinned
    assert {(b["version"], b["architecture"], b["threads"]) for b in record["blas"]} == {
        ("0.3.30", "Haswell", 1), ("0.3.31.188.0", "Haswell", 1)}
    assert record["numpy"]["enabled"] == ["X86_V3"] and record["numpy"]["baseline"] == ["X86_V2"]
    assert record["cpu"]["model"] and len(record["cpu"]["flags_sha256"]) == 64


@pytest.mark.integration
def test_the_test_has_teeth_native_kernels_differ_and_pinned_ones_do_not() -> None:
    """The control: with FAIRCODE_NUMERICS=native the two kernels give a logistic regression's
    probabilities in other bytes; pinned (the default) the same bytes."""
    import subprocess
    import sys

    kernels = _two_kernels()

    def digest(kernel: str, mode: str | None) -> str:
        code = "import faircode\n" + LOGISTIC
        done = subprocess.run([sys.executable, "-c", code], env=_shell(kernel, mode=mode),
                              capture_output=True, text=True, timeout=300, check=True)
        return done.stdout.strip()

    native = {digest(k, "native") for k in kernels}
    pinned = {digest(k, None) for k in kernels}
    assert len(native) == 2 and len(pinned) == 1


@pytest.mark.integration
def test_verify_names_a_different_kernel_as_the_likely_cause_in_one_line(
        two_runs: dict[str, Path], tmp_path: Path) -> None:
    """Committed results that record another kernel (and a number it computed differently):
    the drift check lists the numerical difference first and says in exactly one line that
    the kernel is the likely cause."""
    import json
    import shutil

    from test_report import record_files

    from faircode.pipeline.freeze_command import findings
    from faircode.record.freeze import check_committed

    committed = tmp_path / "repo" / "results" / AUDIT
    shutil.copytree(two_runs["Haswell"], committed)
    run = json.loads((committed / "run.json").read_text())
    other = {"blas_kernels": ["openblas SkylakeX"], "numpy_dispatch": ["X86_V3", "X86_V4"]}
    run["numerics"].update(configuration=other, fit=other)
    (committed / "run.json").write_text(json.dumps(run))
    table = committed / "performance.csv"
    lines = table.read_text().splitlines()
    lines[1] = lines[1].replace(",0.", ",0.0000001", 1)
    table.write_text("\n".join(lines) + "\n")
    record_files(committed)  # committed as results whose record lists these bytes
    copy = ("sh", "-c", 'mkdir -p "$2" && cp -r "$0" "$2"/', str(two_runs["Haswell"]))
    drift, _, compared = check_committed([AUDIT], root=tmp_path / "repo", command=copy)
    shown = findings(compared, (), drift)
    assert shown[0] == (f"numerics differ: kernels: frozen OpenBLAS SkylakeX; numpy dispatch "
                        f"X86_V3 X86_V4, now OpenBLAS Haswell; numpy dispatch X86_V3 ({AUDIT})")
    causes = [line for line in shown if line.startswith("likely cause:")]
    assert len(causes) == 1 and shown[-1] == causes[0]
    assert "frozen OpenBLAS SkylakeX" in causes[0] and "now OpenBLAS Haswell" in causes[0]
    assert [line for line in shown if line.startswith("drift: ")]
