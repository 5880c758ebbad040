"""Input checks shared by every numeric function: 0/1 arrays, masks, lengths, counts, levels.

Each raises ``ValueError`` with the one-line message format of :mod:`faircode.core.errors`
(where, expected, got with its type); callers that know the file or key re-raise with it.
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core.errors import describe

__all__ = ["as_binary", "as_mask", "check_confidence", "check_lengths", "check_positive_int"]


def as_binary(name: str, values: ArrayLike) -> NDArray[np.int8]:
    """Return ``values`` as an int8 array after checking it is 1-D and only 0/1 (or bool)."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of 0/1, got ndim={array.ndim}")
    if array.dtype == np.bool_:
        return array.astype(np.int8)
    if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise ValueError(f"{name}: expected a 1-D array of 0/1, got dtype {array.dtype}")
    bad = ~np.isin(array, (0, 1))
    if bad.any():
        where = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{where}]: expected 0 or 1, got {describe(array[where].item())}")
    return array.astype(np.int8)


def as_mask(name: str, values: ArrayLike) -> NDArray[np.bool_]:
    """Return ``values`` as a 1-D boolean array; any other dtype is an error."""
    array = np.asarray(values)
    if array.ndim != 1 or array.dtype != np.bool_:
        raise ValueError(
            f"{name}: expected a 1-D boolean mask, got ndim={array.ndim} dtype {array.dtype}"
        )
    return array


def check_lengths(**arrays: NDArray[np.generic]) -> None:
    lengths = {name: int(array.shape[0]) for name, array in arrays.items()}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{name}={n}" for name, n in lengths.items())
        raise ValueError(f"array lengths differ: expected equal lengths, got {shown}")


def check_positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name}: expected a positive int, got {describe(value)}")


def check_confidence(confidence: float) -> None:
    """Raise ``ValueError`` unless ``confidence`` is a float strictly between 0 and 1."""
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, numbers.Real)
        or not 0.0 < float(confidence) < 1.0
    ):
        raise ValueError(f"confidence: expected a float in (0, 1), got {describe(confidence)}")

