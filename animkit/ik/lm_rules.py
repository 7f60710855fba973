"""lm's solve strategy's decisions, written once: plain functions on scalars and small arrays that the NumPy
strategy (:mod:`.strategy`, :mod:`.lm`: batches, any chain) calls as they are (elementwise forms by np.vectorize, a
problem at a time) and the compiled strategy (:mod:`.lm_strategy_jit`: one problem on a serial chain) calls compiled
(numba takes the same source; scalar loops, which compile in a fraction of the time array expressions take).

    limit coordinates:  θ = m + h sin φ,  m = (l + u)/2,  h = (u − l)/2  where both limits are finite and u > l
    relaxed limits:     l, u → −∞, ∞ for the limited revolute DOFs
    wrap:               θ' = l + ((θ − l) mod 2π), an angle in the gap to the nearer limit on the circle
    first-order optimal: ‖g_free‖ ≤ STATIONARY · ‖J_free‖_F ‖W V‖,  g = Jᵀ W² V, a DOF on a limit free only inwards
    better:             a later run's answer replaces an earlier one where it converged or ends closer
    easier tasks:       position first (orientation rows dropped), orientation first (position rows × 10⁻³)
    the stages:         which run in which order, and who runs each (:func:`retried`, :func:`out_of_reach`)
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from animkit.ik.constants import ORIENTATION_FIRST_WEIGHT, STATIONARY
from animkit.jit import kernel

__all__ = ["limit_coordinate", "relaxed_limit", "wrapped_angle", "limit_coordinates", "relaxed_limits",
           "wrap_into_limits", "stationary", "better", "later_history", "easier_task", "continuation_target",
           "out_of_reach", "retried", "RELAXED_FROM_START", "RELAXED_FROM_STOP", "POSITION_FIRST", "ORIENTATION_FIRST",
           "ORIENTATION_CONTINUATION", "RELAXED_STAGES", "EASIER_TASKS", "CONTINUATIONS"]

Array = NDArray[np.float64]
Mask = NDArray[np.bool_]

# lm's retry stages after a first run that did not converge, in their order (:func:`retried` says who runs each):
# through the relaxed limits from the start, then from where the first run stopped (each then back inside the
# limits); with an orientation target, the continuations: the easier tasks (:func:`easier_task`) position first and
# orientation first, then the orientation continuation (:func:`continuation_target`), each then the full task
RELAXED_FROM_START, RELAXED_FROM_STOP, POSITION_FIRST, ORIENTATION_FIRST, ORIENTATION_CONTINUATION = range(5)
RELAXED_STAGES = (RELAXED_FROM_START, RELAXED_FROM_STOP)
EASIER_TASKS = (POSITION_FIRST, ORIENTATION_FIRST)
CONTINUATIONS = (POSITION_FIRST, ORIENTATION_FIRST, ORIENTATION_CONTINUATION)


def limit_coordinate(lo: float, hi: float) -> tuple[bool, float, float]:
    """(limited, m, h) of θ = m + h sin φ for one DOF: limited where both limits are finite and u > l, m = (l + u)/2
    and h = (u − l)/2 there, m = 0 and h = 1 elsewhere (θ = φ)."""
    if math.isfinite(lo) and math.isfinite(hi) and hi > lo:
        return True, 0.5 * (lo + hi), 0.5 * (hi - lo)
    return False, 0.0, 1.0


def relaxed_limit(lo: float, hi: float, revolute: bool) -> tuple[float, float, bool]:
    """One DOF's limits with those of a limited revolute DOF lifted (its angle on the whole circle; prismatic limits
    kept), and whether they were."""
    if revolute and math.isfinite(lo) and math.isfinite(hi):
        return -math.inf, math.inf, True
    return lo, hi, False


def wrapped_angle(q: float, lo: float, hi: float, revolute: bool) -> float:
    """θ' = l + ((θ − l) mod 2π) for a limited revolute DOF (the same angle); one that falls in the gap
    (u, l + 2π) goes to the nearer limit on the circle. Other DOFs: clipped into their limits."""
    if not (revolute and math.isfinite(lo) and math.isfinite(hi)):
        return min(max(q, lo), hi)
    w = lo + (q - lo) % (2.0 * math.pi)
    if w > hi:
        return hi if w - hi < lo + 2.0 * math.pi - w else lo
    return w


def stationary(g: Array, jj: Array, q: Array, lo: Array, hi: Array, vn: float, free: Mask) -> bool:
    """Whether one problem's result is first-order optimal; ``free`` (n,) set to the DOFs free to move.

    g = Jᵀ W² V (n,) (−∂(½‖WV‖²)/∂θ, the descent direction), jj: the squared norms of J's weighted columns, vn =
    ‖W V‖. A DOF on a limit counts only toward its inside; optimal when ‖g_free‖ ≤ STATIONARY · ‖J_free‖_F · ‖W V‖
    (no small change of the movable set brings the effector closer)."""
    gn2, jn2 = 0.0, 0.0
    for k in range(g.shape[0]):
        free[k] = not ((q[k] <= lo[k] + 1e-9 and g[k] < 0.0) or (q[k] >= hi[k] - 1e-9 and g[k] > 0.0))
        if free[k]:
            gn2 += g[k] * g[k]
            jn2 += jj[k]
    return math.sqrt(gn2) <= STATIONARY * math.sqrt(jn2) * vn


def out_of_reach(beyond: Mask | bool, minimum: Mask | bool) -> Mask | bool:
    """Whether an answer that did not converge is shown out of reach: its target lies beyond the chain's reach, or
    it is a local minimum of ½‖WV‖² (first-order optimal, :func:`stationary`; a fold is not one)."""
    return beyond | minimum


def retried(stage: int, converged: Mask | bool, beyond: Mask | bool, minimum: Mask | bool) -> Mask | bool:
    """Whether a problem runs retry ``stage``: not converged and its target within reach; from where the first run
    stopped (RELAXED_FROM_STOP) only while undecided (not :func:`out_of_reach`)."""
    shown = out_of_reach(beyond, minimum) if stage == RELAXED_FROM_STOP else beyond
    return (converged | shown) ^ True  # not: the same on bools and on boolean arrays (~ negates a bool as an int)


def better(converged: Mask | bool, error: Array | float, best: Array | float) -> Mask | bool:
    """Whether a later run's answer replaces the earlier one: it converged, or it ends closer (‖WV‖ < best)."""
    return converged | (error < best)


def later_history(H: Array, k0: int, Hc: Array, it_c: int, best: float) -> None:
    """A problem's residual history H once a later run (history Hc, it_c iterations, its first iteration in row
    k0 of H) has replaced its answer: rows k0 … k0 + it_c − 1 follow that run, never above the earlier answer's
    ``best`` nor below the returned pose's error Hc[it_c] (a converged run may return a pose a little worse than its
    own start, which it moved inside the limits); the rows from k0 − 1 + it_c on hold Hc[it_c]."""
    last = Hc[it_c]
    for j in range(it_c):
        H[k0 + j] = max(min(Hc[1 + j], best), last)
    for k in range(k0 - 1 + it_c, H.shape[0]):
        H[k] = last


def easier_task(w: Array, task: int, tol: float, otol: float) -> tuple[Array, bool, float, float]:
    """The easier task a continuation solves first: (row weights, whether the orientation rows stay, position and
    orientation tolerances). POSITION_FIRST: each effector's position rows alone, converged on the position;
    ORIENTATION_FIRST: the position rows weighted by ORIENTATION_FIRST_WEIGHT, converged on the orientation.
    w: the row weights, each effector's [position (3), orientation (3)]."""
    m = w.shape[0]
    first = task == POSITION_FIRST
    out = np.empty(m - 3 * (m // 6) if first else m)
    k = 0
    for i in range(m):
        if i % 6 < 3:
            out[k] = w[i] if first else ORIENTATION_FIRST_WEIGHT * w[i]
            k += 1
        elif not first:
            out[k] = w[i]
            k += 1
    return (out, False, tol, math.inf) if first else (out, True, math.inf, otol)


def continuation_target(omega: Array, t: float, Rs: Array) -> Array:
    """R = exp(t [ω]_×) R_s per row (ω (b, 3), R_s (b, 3, 3)): the orientation continuation's target at stage
    t = k/K of the geodesic from R_s to the target's rotation (ω = log(R_t R_sᵀ)^∨). Rodrigues, as
    :func:`animkit.model.transforms.matrix_from_rotation_vector`: I + sin θ K + (1 − cos θ) K², θ = t‖ω‖,
    K = [ω/‖ω‖]_×."""
    b = omega.shape[0]
    out = np.empty((b, 3, 3))
    K, E = np.empty((3, 3)), np.empty((3, 3))
    for r in range(b):
        vx, vy, vz = omega[r, 0] * t, omega[r, 1] * t, omega[r, 2] * t
        th = math.sqrt(vx * vx + vy * vy + vz * vz)
        safe = 1.0 if th < 1e-300 else th
        ax, ay, az = vx / safe, vy / safe, vz / safe
        K[0, 0], K[0, 1], K[0, 2] = 0.0, -az, ay
        K[1, 0], K[1, 1], K[1, 2] = az, 0.0, -ax
        K[2, 0], K[2, 1], K[2, 2] = -ay, ax, 0.0
        s, c = math.sin(th), 1.0 - math.cos(th)
        for i in range(3):
            for j in range(3):
                kk = K[i, 0] * K[0, j] + K[i, 1] * K[1, j] + K[i, 2] * K[2, j]
                E[i, j] = (1.0 if i == j else 0.0) + s * K[i, j] + c * kk
        for i in range(3):
            for j in range(3):
                out[r, i, j] = E[i, 0] * Rs[r, 0, j] + E[i, 1] * Rs[r, 1, j] + E[i, 2] * Rs[r, 2, j]
    return out


# NumPy's elementwise forms (a few calls a chain or a retry stage: plain Python speed is enough there)
_limit_coordinates = np.vectorize(limit_coordinate, otypes=[bool, float, float])
_relaxed_limits = np.vectorize(relaxed_limit, otypes=[float, float, bool])
_wrapped = np.vectorize(wrapped_angle, otypes=[float])


def limit_coordinates(lo: Array, hi: Array) -> tuple[Mask, Array, Array]:
    """:func:`limit_coordinate` of every DOF: (limited, m, h), each (n,)."""
    lim, m, h = _limit_coordinates(lo, hi)
    return np.asarray(lim, dtype=bool), np.asarray(m, dtype=float), np.asarray(h, dtype=float)


def relaxed_limits(lo: Array, hi: Array, revolute: Mask) -> tuple[Array, Array, bool]:
    """:func:`relaxed_limit` of every DOF: the lower and upper limits, and whether any were lifted."""
    lo_r, hi_r, lifted = _relaxed_limits(lo, hi, revolute)
    return np.asarray(lo_r, dtype=float), np.asarray(hi_r, dtype=float), bool(np.any(lifted))


def wrap_into_limits(q: Array, lower: Array, upper: Array, revolute: Mask) -> Array:
    """:func:`wrapped_angle` of every DOF (q (n,) or (b, n))."""
    return np.asarray(_wrapped(q, lower, upper, revolute), dtype=float)


# compiled twins for the compiled strategy's ``calls`` (the plain function where numba is off): the same source
limit_coordinate_jit = kernel(limit_coordinate, internal=True) or limit_coordinate
relaxed_limit_jit = kernel(relaxed_limit, internal=True) or relaxed_limit
wrapped_angle_jit = kernel(wrapped_angle, internal=True) or wrapped_angle
stationary_jit = kernel(stationary, internal=True) or stationary
better_jit = kernel(better, internal=True) or better
later_history_jit = kernel(later_history, internal=True) or later_history
easier_task_jit = kernel(easier_task, internal=True) or easier_task
out_of_reach_jit = kernel(out_of_reach, internal=True) or out_of_reach
retried_jit = kernel(retried, calls=(out_of_reach_jit,), internal=True) or retried
continuation_target_jit = kernel(continuation_target, internal=True) or continuation_target
