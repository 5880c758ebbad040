"""Run one DVC stage module and record where its wall time went (a helper of bench/sweep.py).

``python _stage_timer.py MODULE ARGS...`` runs ``python -m MODULE ARGS...`` in this process and
appends one JSON line to ``$SWEEP_TIMER_LOG``: the process start (``$SWEEP_TIMER_T0``, set by the
shim just before it started this interpreter), the time the interpreter reached this file, the
seconds spent importing (outermost imports only, so nested ones are not counted twice, and not
those made inside a timed call: they count as the call's) and the seconds inside the library
calls named in :data:`PHASES`.  Nothing is imported early: each
function is wrapped in the moment its module finishes loading, so a stage that never imports
numpy (an unavailable audit) is measured without it.  It has no faircode import of its own and
runs against any checkout (the before and after states of the sweep bench).
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import json
import os
import runpy
import sys
import time
from typing import Any

PHASES: dict[str, tuple[str, ...]] = {
    "faircode.audit.prepared": ("load_prepared",),
    "faircode.grid.predictions": ("load_predictions", "merge_predictions"),
    "faircode.evaluate.reuse": ("inputs_key", "refresh_record"),
    "faircode.evaluate.audit": ("evaluate_audit",),
    "faircode.evaluate.curves": ("audit_curves",),
    "faircode.evaluate.write": ("write_audit",),
    "faircode.report.inputs": ("load_results",),
    "faircode.report.tables": ("write_tables",),
    "faircode.report.figures": ("write_figures",),
    "faircode.report.threshold_curves": ("write_curve_figures",),
    "faircode.report.drawing": ("draw",),  # every figure at once since issue 34
    "faircode.report.html": ("write_html",),
    "faircode.record.tracking": ("sync_results",),
}
"""module -> the functions whose seconds are recorded (by name)."""

T_MAIN = time.time()
SECONDS: dict[str, float] = {}
IMPORTS = {"seconds": 0.0, "depth": 0, "inside_call": 0}


def _timed(name: str, fn: Any) -> Any:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        IMPORTS["inside_call"] += 1
        try:
            return fn(*args, **kwargs)
        finally:
            IMPORTS["inside_call"] -= 1
            SECONDS[name] = SECONDS.get(name, 0.0) + time.perf_counter() - t0
    return wrapper


class _Loader(importlib.abc.Loader):
    """Delegates to the real loader; times outermost imports and wraps :data:`PHASES`."""

    def __init__(self, inner: Any, name: str) -> None:
        self.inner, self.name = inner, name

    def __getattr__(self, item: str) -> Any:  # get_resource_reader, get_data, is_package, ...
        return getattr(self.inner, item)

    def create_module(self, spec: Any) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        outermost = IMPORTS["depth"] == 0 and not IMPORTS["inside_call"]  # else: the call's
        IMPORTS["depth"] += 1
        t0 = time.perf_counter()
        try:
            self.inner.exec_module(module)
        finally:
            IMPORTS["depth"] -= 1
            if outermost:
                IMPORTS["seconds"] += time.perf_counter() - t0
        for attr in PHASES.get(self.name, ()):
            if hasattr(module, attr):
                setattr(module, attr, _timed(attr, getattr(module, attr)))


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _Loader(spec.loader, name)
        return spec


def main() -> None:
    module, args = sys.argv[1], sys.argv[2:]
    sys.meta_path.insert(0, _Finder())
    sys.path[0] = os.getcwd()  # as `python -m` has it (not this file's folder)
    sys.argv = [module, *args]
    code = 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        record = {"module": module, "args": args, "t0": float(os.environ["SWEEP_TIMER_T0"]),
                  "t_main": T_MAIN, "t_end": time.time(), "imports": IMPORTS["seconds"],
                  "calls": SECONDS, "exit": code}
        with open(os.environ["SWEEP_TIMER_LOG"], "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")
    sys.exit(code)


if __name__ == "__main__":
    main()
