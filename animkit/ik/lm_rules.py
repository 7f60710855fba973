"""lm's solve strategy's decisions, written once: plain functions on scalars and small arrays that the NumPy
strategy (:mod:`.strategy`, :mod:`.lm`: batches, any chain) calls on arrays (every DOF and problem at once) and the
compiled strategy (:mod:`.lm_strategy_jit`: one problem on a serial chain) calls compiled on scalars: the same source,
branch-free (:func:`pick` is np.where on arrays and a compiled ``c ? a : b`` on scalars).

    limit coordinates:  θ = m + h sin φ,  m = (l + u)/2,  h = (u − l)/2  where both limits are finite and u > l
    relaxed limits:     l, u → −∞, ∞ for the limited revolute DOFs
    wrap:               θ' = l + ((θ − l) mod 2π), an angle in the gap to the nearer limit on the circle
    first-order optimal: ‖g_free‖ ≤ STATIONARY · ‖J_free‖_F ‖W V‖,  g = Jᵀ W² V, a DOF on a limit free only inwards
    better:             a later run's answer replaces an earlier one where it converged or ends closer
    easier tasks:       position first (orientation rows dropped), orientation first (position rows × 10⁻³)
    the stages:         which run in which order, and who runs each (:func:`retried`, :func:`out_of_reach`), walked by
                        :func:`relaxed_stages` and :func:`continuations` for both strategies (over their backends)
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from animkit.ik.constants import ORIENTATION_FIRST_WEIGHT, STATIONARY
from animkit.jit import kernel

__all__ = ["limit_coordinate", "relaxed_limit", "wrapped_angle", "limit_coordinates", "relaxed_limits",
           "wrap_into_limits", "stationary", "better", "history_row", "later_history", "pick", "easier_task",
           "continuation_target", "out_of_reach", "stretched", "retried", "RELAXED_FROM_START", "RELAXED_FROM_STOP",
           "POSITION_FIRST", "ORIENTATION_FIRST", "ORIENTATION_CONTINUATION", "RELAXED_STAGES", "EASIER_TASKS",
           "CONTINUATIONS", "relaxed_stages", "continuations", "over"]

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


def _pick_one(c: bool, a: float, b: float) -> float:
    """c ? a : b for one element: what :func:`pick` is inside a kernel (numba's np.where on scalars gives arrays)."""
    return a if c else b


_pick_one.__name__ = "pick"  # a kernel binds this compiled in place of the module's ``pick`` (jit.Kernel's calls)
pick_jit = kernel(_pick_one, internal=True) or _pick_one
pick = np.where  # c ? a : b elementwise: NumPy's on arrays; compiled, :func:`_pick_one` on scalars


def limit_coordinate(lo: Any, hi: Any) -> tuple[Any, Any, Any]:
    """(limited, m, h) of θ = m + h sin φ for each DOF: limited where both limits are finite and u > l, m = (l + u)/2
    and h = (u − l)/2 there, m = 0 and h = 1 elsewhere (θ = φ). Elementwise: scalars compiled, arrays in NumPy."""
    lim = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    lf, hf = pick(lim, lo, 0.0), pick(lim, hi, 0.0)
    return lim, 0.5 * (lf + hf), pick(lim, 0.5 * (hf - lf), 1.0)


def relaxed_limit(lo: Any, hi: Any, revolute: Any) -> tuple[Any, Any, Any]:
    """Each DOF's limits with those of a limited revolute DOF lifted (its angle on the whole circle; prismatic
    limits kept), and whether they were. Elementwise."""
    lift = revolute & np.isfinite(lo) & np.isfinite(hi)
    return pick(lift, -math.inf, lo), pick(lift, math.inf, hi), lift


def wrapped_angle(q: Any, lo: Any, hi: Any, revolute: Any) -> Any:
    """θ' = l + ((θ − l) mod 2π) for a limited revolute DOF (the same angle); one that falls in the gap
    (u, l + 2π) goes to the nearer limit on the circle. Other DOFs: clipped into their limits. Elementwise."""
    wrap = revolute & np.isfinite(lo) & np.isfinite(hi)
    lf, hf = pick(wrap, lo, 0.0), pick(wrap, hi, 0.0)
    w = lf + (q - lf) % (2.0 * math.pi)
    w = pick(w > hf, pick(w - hf < lf + 2.0 * math.pi - w, hf, lf), w)
    return pick(wrap, w, np.minimum(np.maximum(q, lo), hi))


def stationary(g: Array, jj: Array, q: Array, lo: Array, hi: Array, vn: Any, free: Mask) -> Any:
    """Whether each problem's result is first-order optimal; ``free`` set to the DOFs free to move. One problem
    (g, jj, q (n,), vn a float: compiled) or a batch (g, jj, q (b, n), vn (b,): NumPy, no loop over problems).

    g = Jᵀ W² V (−∂(½‖WV‖²)/∂θ, the descent direction), jj: the squared norms of J's weighted columns, vn =
    ‖W V‖. A DOF on a limit counts only toward its inside; optimal when ‖g_free‖ ≤ STATIONARY · ‖J_free‖_F · ‖W V‖
    (no small change of the movable set brings the effector closer). Sums in DOF order (the same bits either way)."""
    gn2, jn2 = 0.0 * vn, 0.0 * vn
    for k in range(g.shape[-1]):
        gk = g[..., k]
        f = ((q[..., k] <= lo[k] + 1e-9) & (gk < 0.0) | (q[..., k] >= hi[k] - 1e-9) & (gk > 0.0)) ^ True
        free[..., k] = f
        gn2 = gn2 + gk * gk * f  # × a bool: + 0 where the DOF is held (g, jj finite)
        jn2 = jn2 + jj[..., k] * f
    return np.sqrt(gn2) <= STATIONARY * np.sqrt(jn2) * vn


def out_of_reach(beyond: Mask | bool, minimum: Mask | bool) -> Mask | bool:
    """Whether an answer that did not converge is shown out of reach: its target lies beyond the chain's reach, or
    it is a local minimum of ½‖WV‖² (first-order optimal, :func:`stationary`; a fold is not one)."""
    return beyond | minimum


def stretched(dist: Any, reach: Any, pos: Any, tol: float) -> Any:
    """Whether a target lies beyond reach (its distance from the chain's base ``dist`` > ``reach`` + tol) and the
    answer already ends at the closed-form bound: position error ``pos`` ≤ dist − reach + tol (the chain stretched
    toward it; no pose ends closer). A target beyond reach that ends farther (lm held on a limit, the arm bent
    away) still runs the retries. Elementwise."""
    return (dist > reach + tol) & (pos <= dist - reach + tol)


def retried(stage: int, converged: Mask | bool, beyond: Mask | bool, minimum: Mask | bool,
            settled: Mask | bool) -> Mask | bool:
    """Whether a problem runs retry ``stage``: not converged and its target within reach; from where the first run
    stopped (RELAXED_FROM_STOP) only while undecided (not :func:`out_of_reach`). A target beyond reach runs the
    relaxed limits from the start (RELAXED_FROM_START) too, unless its answer is ``settled`` (:func:`stretched`: at
    the bound, nothing ends closer): a first run held on a limit with the arm bent away is left there otherwise."""
    shown = settled if stage == RELAXED_FROM_START else out_of_reach(beyond, minimum) if stage == RELAXED_FROM_STOP \
        else beyond
    return (converged | shown) ^ True  # not: the same on bools and on boolean arrays (~ negates a bool as an int)


def better(converged: Mask | bool, error: Array | float, best: Array | float) -> Mask | bool:
    """Whether a later run's answer replaces the earlier one: it converged, or it ends closer (‖WV‖ < best)."""
    return converged | (error < best)


def history_row(h: Any, k: Any, k0: Any, it_c: Any, hc: Any, best: Any, last: Any) -> Any:
    """Row k of a problem's residual history once a later run (``hc`` = its history's row 1 + k − k0, it_c
    iterations, its first iteration in row k0) has replaced its answer: rows k0 … k0 + it_c − 1 follow that run,
    never above the earlier answer's ``best`` nor below the returned pose's error ``last`` (a converged run may
    return a pose a little worse than its own start, which it moved inside the limits); rows from k0 − 1 + it_c on
    hold ``last``; earlier rows keep h. Elementwise (NumPy: every row and problem at once)."""
    return pick(k >= k0 - 1 + it_c, last, pick(k >= k0, np.maximum(np.minimum(hc, best), last), h))


def later_history(H: Array, k0: int, Hc: Array, it_c: int, best: float) -> None:
    """One problem's history H (rows,) rewritten by :func:`history_row` in place (Hc: the later run's history)."""
    last = Hc[it_c]
    for k in range(k0 - 1, H.shape[0]):
        H[k] = history_row(H[k], k, k0, it_c, Hc[min(max(1 + k - k0, 0), Hc.shape[0] - 1)], best, last)


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
    K = [ω/‖ω‖]_×. Array expressions over the rows (the same source compiled and in NumPy)."""
    vx, vy, vz = omega[:, 0] * t, omega[:, 1] * t, omega[:, 2] * t
    th = np.sqrt(vx * vx + vy * vy + vz * vz)
    safe = th + (th < 1e-300)  # 1 where θ < 1e-300 (1 + θ rounds to 1 there)
    ax, ay, az = vx / safe, vy / safe, vz / safe
    s, c = np.sin(th), 1.0 - np.cos(th)
    b = omega.shape[0]
    K, E = np.zeros((3, 3, b)), np.empty((3, 3, b))
    K[0, 1], K[0, 2], K[1, 0], K[1, 2], K[2, 0], K[2, 1] = -az, ay, az, -ax, -ay, ax
    for i in range(3):
        for j in range(3):
            kk = K[i, 0] * K[0, j] + K[i, 1] * K[1, j] + K[i, 2] * K[2, j]
            E[i, j] = (1.0 if i == j else 0.0) + s * K[i, j] + c * kk
    out = np.empty((b, 3, 3))
    for i in range(3):
        for j in range(3):
            out[:, i, j] = E[i, 0] * Rs[:, 0, j] + E[i, 1] * Rs[:, 1, j] + E[i, 2] * Rs[:, 2, j]
    return out


def limit_coordinates(lo: Array, hi: Array) -> tuple[Mask, Array, Array]:
    """:func:`limit_coordinate` of every DOF: (limited, m, h), each (n,)."""
    lim, m, h = limit_coordinate(np.asarray(lo, dtype=float), np.asarray(hi, dtype=float))
    return np.asarray(lim, dtype=bool), np.asarray(m, dtype=float), np.asarray(h, dtype=float)


def relaxed_limits(lo: Array, hi: Array, revolute: Mask) -> tuple[Array, Array, bool]:
    """:func:`relaxed_limit` of every DOF: the lower and upper limits, and whether any were lifted."""
    lo_r, hi_r, lifted = relaxed_limit(lo, hi, revolute)
    return np.asarray(lo_r, dtype=float), np.asarray(hi_r, dtype=float), bool(np.any(lifted))


def wrap_into_limits(q: Array, lower: Array, upper: Array, revolute: Mask) -> Array:
    """:func:`wrapped_angle` of every DOF (q (n,) or (b, n))."""
    return np.asarray(wrapped_angle(q, lower, upper, revolute), dtype=float)


# The stages' walk, written once over a backend: ``ctx`` (the problems and their settings), ``state`` (the answers
# so far) and ``who`` (those that run a stage) are the backend's; its functions, bound by name, are
#   answer_of(state), who_retries(ctx, stage, state), none_of(who),
#   through_relaxed_limits(ctx, start, who, state), continued(ctx, stage, start, who, state).
# The NumPy strategy binds batched ones (:func:`over`: a batch, index arrays), the compiled strategy compiled ones
# for one problem (a kernel's ``calls``: a bool for ``who``).

def _unbound(name: str) -> Callable[..., Any]:
    def backend(*args: Any) -> Any:
        raise NotImplementedError(f"{name}: the backend's; bind it with over() or a kernel's calls")
    backend.__name__ = name
    return backend


answer_of = _unbound("answer_of")  # the answers (poses) in ``state``: where the run before stopped
who_retries = _unbound("who_retries")  # who runs ``stage`` (by :func:`retried`)
none_of = _unbound("none_of")  # whether ``who`` is nobody
through_relaxed_limits = _unbound("through_relaxed_limits")  # a relaxed-limits retry for ``who``, kept if better
continued = _unbound("continued")  # continuation ``stage`` then the full task for ``who``, kept if better


def relaxed_stages(ctx: Any, start: Any, state: Any) -> Any:
    """The relaxed-limits retries in their order (RELAXED_STAGES): through the relaxed limits from ``start``, then
    from where the run before stopped (each back inside the limits, kept when :func:`better`), each for the problems
    :func:`retried` names; stops at the first stage nobody runs."""
    stopped = answer_of(state)
    for stage in RELAXED_STAGES:
        who = who_retries(ctx, stage, state)
        if none_of(who):
            break
        state = through_relaxed_limits(ctx, start if stage == RELAXED_FROM_START else stopped, who, state)
    return state


def continuations(ctx: Any, start: Any, state: Any) -> Any:
    """A pose target's continuations in their order (CONTINUATIONS: position first, orientation first, the
    orientation continuation), each from ``start`` and then the full task (with :func:`relaxed_stages`), for the
    problems :func:`retried` names; stops at the first stage nobody runs."""
    for stage in CONTINUATIONS:
        who = who_retries(ctx, stage, state)
        if none_of(who):
            break
        state = continued(ctx, stage, start, who, state)
    return state


def over(driver: Callable[..., Any], **backend: Callable[..., Any]) -> Callable[..., Any]:
    """``driver`` (:func:`relaxed_stages`, :func:`continuations`) with the backend's functions bound by name in a
    copy of its globals (as :func:`animkit.jit.kernel` binds the compiled ones it ``calls``)."""
    scope = dict(driver.__globals__)
    scope.update(backend)
    fn = types.FunctionType(driver.__code__, scope, driver.__name__, driver.__defaults__, driver.__closure__)
    fn.__qualname__, fn.__doc__ = driver.__qualname__, driver.__doc__
    return fn


# compiled twins for the compiled strategy's ``calls`` (the plain function where numba is off): the same source
limit_coordinate_jit = kernel(limit_coordinate, calls=(pick_jit,), internal=True) or limit_coordinate
relaxed_limit_jit = kernel(relaxed_limit, calls=(pick_jit,), internal=True) or relaxed_limit
wrapped_angle_jit = kernel(wrapped_angle, calls=(pick_jit,), internal=True) or wrapped_angle
stationary_jit = kernel(stationary, internal=True) or stationary
better_jit = kernel(better, internal=True) or better
history_row_jit = kernel(history_row, calls=(pick_jit,), internal=True) or history_row
later_history_jit = kernel(later_history, calls=(history_row_jit,), internal=True) or later_history
easier_task_jit = kernel(easier_task, internal=True) or easier_task
out_of_reach_jit = kernel(out_of_reach, internal=True) or out_of_reach
stretched_jit = kernel(stretched, internal=True) or stretched
retried_jit = kernel(retried, calls=(out_of_reach_jit,), internal=True) or retried
continuation_target_jit = kernel(continuation_target, internal=True) or continuation_target
