"""Selection rate and balanced accuracy of each candidate decision rule, per audit (a quick check).

Run from the repository root after `faircode data fetch`:

    .venv/bin/python bench/operating_points.py [AUDIT ...]

For each audit it fits the S0 logistic regression (every manifest feature, the audit's own split
and ``random_state``) and prints, on the test rows, the share decided ŷ = 1 and the balanced
accuracy under the three rules a manifest's decision block may name: ``threshold`` 0.5,
``base_rate`` (score above the training label rate) and ``top_fraction`` at the training label
rate (cutoff = the training scores' ``1 - fraction`` quantile).  It backs the "Operating point"
paragraph of each datasheet; it is one model family, not the grid.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from sklearn.metrics import balanced_accuracy_score

from faircode.audit.data import load_audit
from faircode.audit.manifest import load_manifest
from faircode.core.errors import DataUnavailableError
from faircode.grid.models import make_model
from faircode.pipeline.cli import resolve_manifests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("audits", nargs="*")
    args = parser.parse_args()
    for path in resolve_manifests(Path("audits"), args.audits):
        try:
            data = load_audit(load_manifest(path))
        except DataUnavailableError as exc:
            print(f"skipped: {exc}")
            continue
        features = data.X[list(data.manifest.feature_columns)]
        train, test = data.train_index, data.test_index
        model = make_model("logistic_regression", random_state=data.manifest.random_state)
        model.fit(features.iloc[train], data.y[train])
        train_scores = model.predict_proba(features.iloc[train])[:, 1]
        test_scores = model.predict_proba(features.iloc[test])[:, 1]
        rate = float(data.y[train].mean())
        rules = {
            "threshold 0.5": 0.5,
            f"base_rate {rate:.3f}": rate,
            f"top_fraction {rate:.3f}": float(np.quantile(train_scores, 1 - rate)),
        }
        for rule, cutoff in rules.items():
            decided = (test_scores > cutoff).astype(int)
            balanced = balanced_accuracy_score(data.y[test], decided)
            print(f"{data.manifest.name:<22} {rule:<22} selection rate {decided.mean():.3f}  "
                  f"balanced accuracy {balanced:.3f}")


if __name__ == "__main__":
    main()
