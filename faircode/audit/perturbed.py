"""The audit's counterfactual test rows: each manifest axis applied to the raw test rows.

:func:`perturb_test_rows` edits the raw values with :func:`faircode.counterfactual.perturb.perturb`
and re-encodes them with the audit's own fitted encoder, so the fit step can predict the
perturbed copies beside the originals (:mod:`faircode.stats.flips` turns both into flip rates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd

from faircode.audit.data import AuditData, disadvantaged_mask
from faircode.counterfactual.perturb import Perturbation, PerturbationKind, perturb

__all__ = ["PerturbedRows", "perturb_test_rows"]


@dataclass(frozen=True, slots=True)
class PerturbedRows:
    """A manifest axis applied to the raw test rows of an audit, re-encoded for prediction.

    ``X`` is the whole test table after the edit, encoded with the audit's own fitted encoder;
    ``sensitive`` is the first protected attribute's disadvantaged mask recomputed from the
    edited values (S4 needs the sensitive feature at predict time: when an axis edits the
    protected column itself, the post-processor sees the counterfactual group too; a row the
    edit makes unclassifiable keeps its original group); ``changed`` marks the rows the edit
    touched.
    """

    axis: str
    kind: PerturbationKind
    columns: tuple[str, ...]
    X: pd.DataFrame
    sensitive: np.ndarray
    changed: np.ndarray


def perturb_test_rows(data: AuditData) -> tuple[PerturbedRows, ...]:
    """Apply every ``counterfactual_axes`` entry of the audit's manifest to its test rows.

    Each row's values of the axis's ``columns`` form one record payload; explicit and proxy
    substitutions give separate :class:`PerturbedRows` (explicit first), as :func:`perturb` does.
    """
    manifest = data.manifest
    raw_test = data.raw.iloc[data.test_index].reset_index(drop=True)
    first = manifest.protected_attributes[0]
    original_sensitive = data.disadvantaged[first.name][data.test_index]
    out: list[PerturbedRows] = []
    for entry in manifest.counterfactual_axes:
        columns = list(entry.columns)
        records = [
            {k: (None if _is_missing(v) else v) for k, v in row.items()}
            for row in raw_test.loc[:, columns].to_dict("records")
        ]
        by_kind: dict[PerturbationKind, list[Perturbation]] = {}
        for record in records:
            for pert in perturb(record, [entry.axis]):
                by_kind.setdefault(pert.kind, []).append(pert)
        for kind, perts in by_kind.items():
            edited = raw_test.copy()
            for column in columns:
                values = [cast(dict, p.perturbed)[column] for p in perts]
                dtype = raw_test[column].dtype  # a factor's edit may leave its levels: text
                edited[column] = pd.Series(
                    values, dtype=object if isinstance(dtype, pd.CategoricalDtype) else dtype)
            disadvantaged, classified = disadvantaged_mask(first, edited[first.column])
            sensitive = np.where(classified, disadvantaged, original_sensitive)
            out.append(PerturbedRows(
                axis=entry.axis.name, kind=kind, columns=entry.columns,
                X=data.encoder.transform(edited), sensitive=sensitive,
                changed=np.fromiter((p.changed for p in perts), dtype=bool, count=len(perts)),
            ))
    return tuple(out)


def _is_missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))

