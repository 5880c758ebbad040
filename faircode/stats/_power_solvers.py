"""The numeric kernels behind :mod:`faircode.stats.power`: bisection, Newton, power functions.

Private; everything is vectorised elementwise over arrays of any shape, and every function
returns, element by element, the same floats whatever else is in the array (no reduction across
elements, so batching comparisons never changes a result).

Design decisions
----------------
* **Bit-identical to the one-comparison-at-a-time code that produced the committed results**
  (``tests/power_reference.py``, frozen).  That code ran on numpy *scalars*, and numpy squares a
  float64 scalar with the C library's ``pow`` but an array with ``x * x``; the two differ in the
  last bit for about 0.1 % of values, so :func:`square` calls ``pow`` on arrays too
  (``np.float_power``, the same libm function).
* **Fewer calls, same bits.**  :func:`bisect` stops once a step moves no bracket (every later
  step would compute the same midpoint and the same comparison), and with ``ahead`` (the
  equalized-odds power function, a 12-step Newton solve per call) it takes its steps a few at
  a time, from one call on every midpoint those steps could visit, computed as the steps
  compute them.  :func:`max_critical` stops once every element equals its value of two steps
  before (a fixed point or a 2-cycle of the floats) and returns what the last of its
  :data:`NEWTON` steps would give; elements cycling with a longer period (about 2 % at the
  float level) keep the full count.
* :func:`rate_power` is statsmodels' ``normal_power(h, n, alpha, 'two-sided')`` written out: the
  same ``ndtr`` calls on the same operands, without scipy's per-call argument handling, which
  cost ~0.2 ms per call in a 64-step loop.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps
from scipy.special import ndtr, ndtri

Floats = NDArray[np.float64]

ITERATIONS = 64  # bisection steps: the bracket shrinks by 2**-64, below float resolution
NEWTON = 12  # Newton steps for the equalized-odds critical value (quadratic convergence)


def square(x: ArrayLike) -> Floats:
    """``x²`` by the C library's ``pow``, as numpy squares a float64 *scalar* (not ``x * x``)."""
    return np.asarray(np.float_power(x, 2.0), np.float64)


def same(x: Floats, y: Floats) -> bool:
    """Whether two float arrays hold the same bits (so any function of them agrees too)."""
    return not bool((x.view(np.int64) != y.view(np.int64)).any())


def bisect(
    fn: Callable[[Floats], Floats], low: Floats, high: Floats, target: float, *,
    ahead: bool = False,
) -> Floats:
    """Vectorised bisection for ``fn(x) = target`` with ``fn`` increasing on ``[low, high]``.

    :data:`ITERATIONS` halving steps; it stops once a step moves no bracket (every later step
    would repeat it).  With ``ahead`` (for an ``fn`` whose calls cost more than its elements)
    the steps are taken :func:`lookahead` at a time: the midpoints of every path of the next
    few steps are computed exactly as the steps would compute them, ``fn`` is evaluated on all
    of them in one call (it must broadcast over a new leading axis), and the steps are then
    taken by looking the comparisons up: the plain bisection's result, bit for bit, from
    several times fewer calls of ``fn``.
    """
    low, high = np.array(low, dtype=np.float64), np.array(high, dtype=np.float64)
    taken = 0
    while taken < ITERATIONS:
        depth = min(lookahead(low.size) if ahead else 1, ITERATIONS - taken)
        mids = _midpoint_tree(low, high, depth) if depth > 1 else ((low + high) / 2.0)[None]
        below = fn(mids) < target  # (2**depth - 1, *shape): every node of the tree
        path = np.zeros(low.shape, dtype=np.intp)
        for level in range(depth):
            if depth == 1:
                mid, step_below = mids[0], below[0]
            else:
                node = (2**level - 1 + path)[None]
                mid = np.take_along_axis(mids, node, axis=0)[0]
                step_below = np.take_along_axis(below, node, axis=0)[0]
            if same(mid, np.where(step_below, low, high)):  # the endpoint it replaces: no move
                return (low + high) / 2.0
            low, high = np.where(step_below, mid, low), np.where(step_below, high, mid)
            path = 2 * path + step_below
        taken += depth
    return (low + high) / 2.0


def lookahead(size: int) -> int:
    """Bisection steps per call of ``fn`` for ``size`` elements: more when calls cost overhead.

    Looking ``d`` steps ahead evaluates ``2**d - 1`` points for ``d`` steps, so it pays while
    ``fn``'s per-call overhead outweighs its per-element work (``ndtr`` and ``pow``, ~25 ns per
    element each); the thresholds were timed on the equalized-odds power function, whose
    ``size`` is 4 per comparison (2 components x 2 sides).
    """
    return 4 if size <= 4 else 3 if size <= 16 else 2 if size <= 80 else 1


def _midpoint_tree(low: Floats, high: Floats, depth: int) -> Floats:
    """The midpoints of all ``2**depth - 1`` brackets the next ``depth`` steps can visit.

    Level ``l`` holds path ``p`` (the bits of the comparisons so far, 1 = below) at row
    ``2**l - 1 + p``; a below-comparison keeps ``[mid, high]``, otherwise ``[low, mid]``.
    """
    lows, highs, levels = low[None], high[None], []
    for _ in range(depth):
        mid = (lows + highs) / 2.0
        levels.append(mid)
        shape = (2 * len(mid), *mid.shape[1:])
        lows = np.stack([lows, mid], axis=1).reshape(shape)
        highs = np.stack([mid, highs], axis=1).reshape(shape)
    return np.concatenate(levels)


def rate_power(root_n: Floats, alpha: float) -> Callable[[Floats], Floats]:
    """Two-sided power of the normal test of Cohen's ``h`` at ``sqrt(n_eff) = root_n``."""
    upper, lower = float(sps.norm.isf(alpha / 2.0)), float(sps.norm.ppf(alpha / 2.0))

    def power_of(h: Floats) -> Floats:
        x = h * root_n / 1.0  # statsmodels: effect_size * sqrt(nobs) / sigma, sigma = 1
        return np.asarray(ndtr(-(upper - x)) + ndtr(lower - x), np.float64)  # sf + cdf

    return power_of


def correction(n_d: ArrayLike, n_a: ArrayLike) -> Floats:
    """The continuity correction ``½(1/n_d + 1/n_a)`` of a difference of two proportions."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(0.5 * (1.0 / np.asarray(n_d, np.float64)
                                 + 1.0 / np.asarray(n_a, np.float64)))


def null_sd(rate: Floats, n_d: Floats, n_a: Floats) -> Floats:
    """Null s.d. of a rate gap when both groups share ``rate`` (NaN for an empty group)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(rate * (1.0 - rate) * (1.0 / n_d + 1.0 / n_a))


def inside(c: Floats, sd: Floats) -> Floats:
    """P(|N(0, sd)| < c); 1 for a degenerate (zero-variance) component."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd > 0, 2.0 * ndtr(c / sd) - 1.0, 1.0)


def max_critical(sd_1: Floats, sd_2: Floats, alpha: float) -> Floats:
    """Solve ``P(|G_1| < c)·P(|G_2| < c) = 1 − alpha`` for ``c`` by Newton's method.

    The start, ``z_{1−(1−√(1−alpha))/2}·max(sd)``, makes each factor at least ``√(1 − alpha)``,
    so it lies right of the root; the product is increasing and concave there, so the steps
    descend monotonically onto the root (a dozen suffice to float precision).  Both components
    are evaluated in one stacked array; the early exit is described in the module docstring.
    """
    level = np.sqrt(1.0 - alpha)
    c = float(ndtri(0.5 + level / 2.0)) * np.fmax(sd_1, sd_2)
    sd = np.stack(np.broadcast_arrays(sd_1, sd_2))
    live, scale = sd > 0, np.sqrt(2 * np.pi) * sd
    history = [c]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for step_number in range(1, NEWTON + 1):
            z = c / sd
            f = np.where(live, 2.0 * ndtr(z) - 1.0, 1.0)  # inside(c, sd_k)
            density = np.where(live, 2.0 * np.exp(-0.5 * square(z)) / scale, 0.0)  # d/dc
            slope = f[0] * density[1] + f[1] * density[0]
            step = np.where(slope > 0, (f[0] * f[1] - (1.0 - alpha)) / slope, 0.0)
            c = np.fmax(c - step, 0.0)
            if step_number >= 2 and same(c, history[-2]):  # period 1 or 2 from here on
                return c if (NEWTON - step_number) % 2 == 0 else history[-1]
            history.append(c)
    return c


def eodds_power(
    n_d: Floats, n_a: Floats, base: Floats, sign: Floats, null_other: Floats, alpha: float
) -> Callable[[Floats], Floats]:
    """Power of the max test when one component's disadvantaged rate is ``base + sign·delta``.

    The permutation test conditions on the pooled counts, so the carrying component's null s.d.
    is taken at its pooled rate under the alternative; the critical value ``c`` of the maximum
    solves ``P(|G_k| < c)·P(|G_j| < c) = 1 − alpha`` (independent strata).
    """
    total, spread = n_d + n_a, 1.0 / n_d + 1.0 / n_a
    base_var = base * (1.0 - base) / n_a

    def power_of(delta: Floats) -> Floats:
        with np.errstate(divide="ignore", invalid="ignore"):
            p_d = base + sign * delta
            rate = (n_d * p_d + n_a * base) / total
            null_own = np.sqrt(rate * (1.0 - rate) * spread)  # null_sd(rate, n_d, n_a)
            crit = max_critical(null_own, null_other, alpha)
            sd = np.sqrt(p_d * (1.0 - p_d) / n_d + base_var)
            keep = np.where(
                sd > 0,
                ndtr((crit - delta) / sd) - ndtr((-crit - delta) / sd),
                (delta < crit).astype(np.float64),
            )
        return np.asarray(1.0 - keep * inside(crit, null_other), np.float64)

    return power_of
