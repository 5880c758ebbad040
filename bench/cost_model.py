"""Refit the fit queue's cost model from the committed per-cell timings and print it.

Run from the repository root:

    .venv/bin/python bench/cost_model.py [RESULTS_DIR]

Reads every ``<RESULTS_DIR>/<audit>/run.json`` (default ``results``) and the timings beside
the folder (``<audit>.seconds.json``), takes each fitted cell's
fit + predict + counterfactual seconds and the audit's training rows, fits
``log seconds = a + b log rows`` per strategy x model family
(faircode.grid.scheduler.fit_coefficients)
and prints the table in the form of ``faircode.grid.scheduler.DEFAULT_COEFFICIENTS``, with the
residual
spread, and how many of each audit's cells the committed coefficients order as the timings do
(Kendall tau of the predicted against the measured seconds).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from scipy.stats import kendalltau

from faircode.evaluate.write import read_timings
from faircode.grid.scheduler import DEFAULT_COEFFICIENTS, CostModel, fit_coefficients


def main() -> None:
    results = Path(sys.argv[1] if len(sys.argv) > 1 else "results")
    samples: list[tuple[str, str, int, float]] = []
    by_audit: dict[str, list[tuple[str, str, int, float]]] = {}
    for run_json in sorted(results.glob("*/run.json")):
        run = json.loads(run_json.read_text())
        rows = int(run["rows"]["train"])
        for cell in read_timings(run_json.parent).get("cells", []):  # beside the folder
            if cell.get("skipped"):
                continue
            seconds = sum(cell["seconds"].get(k, 0.0) for k in ("fit", "predict",
                                                                 "counterfactual"))
            sample = (cell["strategy"], cell["model"], rows, seconds)
            samples.append(sample)
            by_audit.setdefault(run["audit"], []).append(sample)
    fitted = fit_coefficients(samples)
    print("DEFAULT_COEFFICIENTS = {")
    for (strategy, family), (a, b) in fitted.items():
        residuals = [math.log(max(t, 1e-3)) - (a + b * math.log(n))
                     for s, f, n, t in samples if (s, f) == (strategy, family)]
        spread = math.sqrt(sum(r * r for r in residuals) / len(residuals))
        print(f"    ({strategy!r}, {family!r}): ({a}, {b}),  # rms log residual {spread:.2f}")
    print("}")
    model = CostModel(DEFAULT_COEFFICIENTS)
    for audit, cells in by_audit.items():
        predicted = [model.expected(s, f, rows=n) for s, f, n, _ in cells]
        tau = kendalltau(predicted, [t for *_, t in cells]).statistic
        print(f"{audit:<24} committed model vs timings: Kendall tau {tau:.2f}")


if __name__ == "__main__":
    main()
