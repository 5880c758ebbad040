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

