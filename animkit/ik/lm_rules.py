"""lm's solve strategy's decisions, written once: plain functions on arrays that the NumPy strategy
(:mod:`.strategy`, :mod:`.lm`: batches, any chain) calls as they are and the compiled strategy
(:mod:`.lm_strategy_jit`: one problem on a serial chain) calls compiled (numba takes the same source).

    limit coordinates:  θ = m + h sin φ,  m = (l + u)/2,  h = (u − l)/2  where both limits are finite and u > l
    relaxed limits:     l, u → −∞, ∞ for the limited revolute DOFs
    wrap:               θ' = l + ((θ − l) mod 2π), an angle in the gap to the nearer limit on the circle
    first-order optimal: ‖g_free‖ ≤ STATIONARY · ‖J_free‖_F ‖W V‖,  g = Jᵀ W² V, a DOF on a limit free only inwards
    better:             a later run's answer replaces an earlier one where it converged or ends closer
    easier tasks:       position first (orientation rows dropped), orientation first (position rows × 10⁻³)

Each works on one problem (1-D arrays, or rows of one) or a batch (2-D, problems along the first axis) alike.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from animkit.ik.constants import ORIENTATION_FIRST_WEIGHT, STATIONARY
from animkit.jit import kernel

__all__ = ["limit_coordinates", "relaxed_limits", "wrap_into_limits", "stationary", "better", "later_history",
           "easier_task", "POSITION_FIRST", "ORIENTATION_FIRST", "EASIER_TASKS"]

Array = NDArray[np.float64]
Mask = NDArray[np.bool_]

POSITION_FIRST, ORIENTATION_FIRST = 0, 1  # the continuations' easier tasks (:func:`easier_task`), in their order
EASIER_TASKS = (POSITION_FIRST, ORIENTATION_FIRST)


def limit_coordinates(lo: Array, hi: Array) -> tuple[Mask, Array, Array]:
    """(limited, m, h) of θ = m + h sin φ: limited where both limits are finite and u > l, m = (l + u)/2 and
    h = (u − l)/2 there, m = 0 and h = 1 elsewhere (θ = φ)."""
    lim = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    l0, h0 = np.where(lim, lo, 0.0), np.where(lim, hi, 1.0)
    return lim, np.where(lim, 0.5 * (l0 + np.where(lim, hi, 0.0)), 0.0), np.where(lim, 0.5 * (h0 - l0), 1.0)


def relaxed_limits(lo: Array, hi: Array, revolute: Mask) -> tuple[Array, Array, bool]:
    """The limits with those of the limited revolute DOFs lifted (angles on the whole circle; prismatic limits
    kept), and whether any were."""
    lift = revolute & np.isfinite(lo) & np.isfinite(hi)
    return np.where(lift, -math.inf, lo), np.where(lift, math.inf, hi), bool(lift.any())


def wrap_into_limits(q: Array, lower: Array, upper: Array, revolute: Mask) -> Array:
    """θ' = l + ((θ − l) mod 2π) for limited revolute DOFs (the same angle); one that falls in the gap (u, l + 2π)
    goes to the nearer limit on the circle. Other DOFs: clipped into their limits."""
    lim = revolute & np.isfinite(lower) & np.isfinite(upper)
    lo = np.where(lim, lower, 0.0)
    w = lo + np.mod(q - lo, 2.0 * math.pi)
    w = np.where(w > upper, np.where(w - upper < lo + 2.0 * math.pi - w, upper, lo), w)
    return np.where(lim, w, np.minimum(np.maximum(q, lower), upper))


def stationary(g: Array, jj: Array, q: Array, lo: Array, hi: Array, vn: Array) -> tuple[Mask, Mask]:
    """Per problem (rows of g, jj, q: (b, n)): whether the result is first-order optimal, and the DOFs free to move.

    g = Jᵀ W² V (−∂(½‖WV‖²)/∂θ, the descent direction), jj: the squared norms of J's weighted columns, vn = ‖W V‖.
    A DOF on a limit counts only toward its inside; optimal when ‖g_free‖ ≤ STATIONARY · ‖J_free‖_F · ‖W V‖ (no
    small change of the movable set brings the effector closer)."""
    free = ~(((q <= lo + 1e-9) & (g < 0.0)) | ((q >= hi - 1e-9) & (g > 0.0)))
    gn = np.sqrt(np.where(free, g * g, 0.0).sum(axis=1))
    jn = np.sqrt(np.where(free, jj, 0.0).sum(axis=1))
    return gn <= STATIONARY * jn * vn, free


def better(converged: Mask | bool, error: Array | float, best: Array | float) -> Mask | bool:
    """Whether a later run's answer replaces the earlier one: it converged, or it ends closer (‖WV‖ < best)."""
    return converged | (error < best)


def later_history(H: Array, k0: int, Hc: Array, it_c: int, best: float) -> None:
    """A problem's residual history H once a later run (history Hc, it_c iterations, its first iteration in row
    k0 of H) has replaced its answer: rows k0 … k0 + it_c − 1 follow that run, never above the earlier answer's
    ``best`` nor below the returned pose's error Hc[it_c] (a converged run may return a pose a little worse than its
    own start, which it moved inside the limits); the rows from k0 − 1 + it_c on hold Hc[it_c]."""
    H[k0:k0 + it_c] = np.maximum(np.minimum(Hc[1:it_c + 1], best), Hc[it_c])
    H[k0 - 1 + it_c:] = Hc[it_c]


def easier_task(w: Array, task: int, tol: float, otol: float) -> tuple[Array, bool, float, float]:
    """The easier task a continuation solves first: (row weights, whether the orientation rows stay, position and
    orientation tolerances). POSITION_FIRST: each effector's position rows alone, converged on the position;
    ORIENTATION_FIRST: the position rows weighted by ORIENTATION_FIRST_WEIGHT, converged on the orientation.
    w: the row weights, each effector's [position (3), orientation (3)]."""
    pos = (np.arange(w.shape[0]) % 6) < 3
    if task == POSITION_FIRST:
        return w[pos], False, tol, math.inf
    return np.where(pos, ORIENTATION_FIRST_WEIGHT * w, w), True, math.inf, otol


# compiled twins for the compiled strategy's ``calls`` (the plain function where numba is off): the same source
limit_coordinates_jit = kernel(limit_coordinates, internal=True) or limit_coordinates
relaxed_limits_jit = kernel(relaxed_limits, internal=True) or relaxed_limits
wrap_into_limits_jit = kernel(wrap_into_limits, internal=True) or wrap_into_limits
stationary_jit = kernel(stationary, internal=True) or stationary
better_jit = kernel(better, internal=True) or better
later_history_jit = kernel(later_history, internal=True) or later_history
easier_task_jit = kernel(easier_task, internal=True) or easier_task
