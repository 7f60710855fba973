"""The default solver's loop (:mod:`.lm`) compiled with numba for serial chains of revolute DOFs, one effector.

    θ_j = m_j + h_j sin φ_j,   (J_φᵀ W² J_φ + λI + μ_k D) Δφ = J_φᵀ W² V − μ_k D φ,   μ_k = μ₀ γᵏ βʳ min(1, ‖WV‖²)

The same iteration, acceptance and stopping rules as :func:`~animkit.ik.lm.run_lm`'s NumPy loops (the oracle of
this kernel's tests), one problem after another, each in a few microseconds: frames as 4×5 blocks
[C_k E_k(θ) | R_C a] multiplied down the chain, J from a × (e − r) and a, the normal equations solved by Cholesky.
The kernels take records, not argument lists: :class:`LoopChain`, :class:`LoopSettings`, :class:`Goal` (one
problem's target and row weights) and :class:`LoopOut`; the stopping test (:func:`stop_reason`) and the acceptance
rule (:func:`accept_step`) are written once here and used by the lanes (:mod:`.lm_batch_jit`) too. Differences from
NumPy: sums run in another order, and a time budget is checked between problems, not between iterations. The
helpers that allocate nothing are compiled without reference counts (``kernel(refcounts=False)``: those atomic
counts were ~10 % of a reused 7-DOF solve). Used by :func:`~animkit.ik.lm.run_lm` when :func:`animkit.jit.enabled`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from animkit import jit
from animkit.ik.constants import GAIN_ABS, GAIN_REL, LAMBDA_DOWN, LAMBDA_MAX, LAMBDA_MIN, LAMBDA_UP, POLISH_DAMPING
from animkit.ik.lm_rules import stationary, stationary_jit
from animkit.jit import kernel

__all__ = ["LoopChain", "LoopSettings", "Goal", "LoopOut", "lm_one", "lm_serial", "call_loop", "tiny_chain",
           "warm_up", "chain_forward", "chain_residual", "log_vee", "cholesky", "solve_spd", "stop_reason",
           "accept_step", "settings_with", "polish_one", "polish_batch", "CONVERGED", "STALLED", "MAX_ITERATIONS",
           "RUNNING"]

Array = NDArray[np.float64]

# reason codes of the kernels' output (RUNNING: :func:`stop_reason`'s "not yet")
CONVERGED, STALLED, MAX_ITERATIONS, RUNNING = 0, 1, 2, -1


class LoopChain(NamedTuple):
    """A serial chain of revolute DOFs as the compiled loops read it, built once per chain (:func:`.lm.loop_chain`):
    link k's frame [C_k E_k(θ) | R_C a] = [1, sin θ, 1 − cos θ] · Hs[k] (4×5 row-major in 20), the effector offset
    Ce (4×4), the limits lo, hi with mid-range m and half-range h (θ = m + h sin φ where ``limited``), the stiffness
    κ per DOF (0: none), and the base origin and reach (the reachability test)."""

    Hs: Array  # (n, 3, 20)
    Ce: Array  # (4, 4)
    lo: Array  # (n,)
    hi: Array  # (n,)
    mid: Array  # (n,)
    half: Array  # (n,)
    limited: Array  # (n,) 1.0 where limited, else 0.0: floats on every path (bools would compile it again)
    kappa: Array  # (n,)
    base: Array  # (3,)
    reach: float


class LoopSettings(NamedTuple):
    """The loop's settings (:class:`~animkit.ik.solvers.Options` with lm's constants from :mod:`.constants`):
    position and orientation tolerances, patience (iterations without gain), the iteration cap, the starting λ, the
    largest |Δφ_j| (≤ 0: none), the stall test (window, ratio, first iteration it may stop), μ₀, γ, β and the start's
    margin inside the limits."""

    tol: float
    otol: float
    patience: int
    max_iter: int
    damping: float
    max_step: float
    win: int
    ratio: float
    stall_min: int
    pull: float
    decay: float
    backoff: float
    margin: float


class Goal(NamedTuple):
    """One problem's target: position p (3,), rotation Rt (3, 3; read when ``orient``), row weights w (3 or 6)."""

    p: Array
    Rt: Array
    orient: bool
    w: Array


class LoopOut(NamedTuple):
    """A batch's outputs: q (B, n), iterations and reason codes (B,), position and orientation errors (B,), and the
    residual history (B, max_iter + 1): each problem's row contiguous, C order always (one signature a kernel)."""

    q: Array
    iters: NDArray[np.intp]
    reason: NDArray[np.intp]
    pos: Array
    ori: Array
    history: Array


def settings_with(s: LoopSettings, tol: float, otol: float, win: int, ratio: float) -> LoopSettings:
    """``s`` with other tolerances and stall test (numba has no ``_replace``)."""
    return LoopSettings(tol, otol, s.patience, s.max_iter, s.damping, s.max_step, win, ratio, s.stall_min, s.pull,
                        s.decay, s.backoff, s.margin)


settings_with = kernel(settings_with, refcounts=False) or settings_with


def chain_forward(q: Array, Hs: Array, Ce: Array, T: Array, Te: Array, loc: Array) -> None:
    """T[k] (4×5) = T[k−1][:, :4] · ([1, sin θ_k, 1 − cos θ_k] · Hs[k]); Te = T[n−1][:, :4] · Ce. loc: (20,) scratch.
    One problem of :meth:`~animkit.ik.problem.ChainModel.forward` (its NumPy oracle) on a serial revolute chain."""
    n = q.shape[0]
    for k in range(n):
        s = math.sin(q[k])
        c1 = 1.0 - math.cos(q[k])
        for idx in range(15):  # the last row of every block is [0, 0, 0, 1 | 0] whatever θ: not turned
            loc[idx] = Hs[k, 0, idx] + s * Hs[k, 1, idx] + c1 * Hs[k, 2, idx]
        for j in range(5):
            T[k, 3, j] = Hs[k, 0, 15 + j]
        if k == 0:
            for i in range(3):
                for j in range(5):
                    T[0, i, j] = loc[5 * i + j]
        else:
            for i in range(3):  # that row's terms left out: 0 · x adds nothing, 1 · x is x (the same sums)
                t0, t1, t2 = T[k - 1, i, 0], T[k - 1, i, 1], T[k - 1, i, 2]
                for j in range(5):
                    T[k, i, j] = t0 * loc[j] + t1 * loc[5 + j] + t2 * loc[10 + j]
                T[k, i, 3] += T[k - 1, i, 3]
    for i in range(4):
        for j in range(4):
            Te[i, j] = T[n - 1, i, 0] * Ce[0, j] + T[n - 1, i, 1] * Ce[1, j] + T[n - 1, i, 2] * Ce[2, j] + \
                T[n - 1, i, 3] * Ce[3, j]


chain_forward = kernel(chain_forward, refcounts=False) or chain_forward


def log_vee(D: Array) -> tuple[float, float, float]:
    """ω = log(D)^∨ = θ/sin θ · vee(D − Dᵀ)/2, θ = atan2(sin θ, cos θ), cos θ = (tr D − 1)/2, for a rotation D
    (3 × 3, any layout); near θ = π (cos θ < 0, sin θ < 1e-6) the axis from the symmetric part (1 − cos θ) a aᵀ,
    signed by the skew part. The one rotation log of the compiled loops (lm_jit and the lanes)."""
    ox, oy, oz = 0.5 * (D[2, 1] - D[1, 2]), 0.5 * (D[0, 2] - D[2, 0]), 0.5 * (D[1, 0] - D[0, 1])
    cos = 0.5 * (D[0, 0] + D[1, 1] + D[2, 2] - 1.0)
    sin = math.sqrt(ox * ox + oy * oy + oz * oz)
    cc = min(max(cos, -1.0), 1.0)
    angle = math.atan2(sin, cc)
    if cos < 0.0 and sin < 1e-6:
        best, col = -1.0, 0
        for i in range(3):
            if D[i, i] - cc > best:
                best, col = D[i, i] - cc, i
        a0 = 0.5 * (D[col, 0] + D[0, col]) - (cc if col == 0 else 0.0)
        a1 = 0.5 * (D[col, 1] + D[1, col]) - (cc if col == 1 else 0.0)
        a2 = 0.5 * (D[col, 2] + D[2, col]) - (cc if col == 2 else 0.0)
        norm = max(math.sqrt(a0 * a0 + a1 * a1 + a2 * a2), 1e-300)
        sgn = -1.0 if a0 * ox + a1 * oy + a2 * oz < 0.0 else 1.0
        f = sgn * angle / norm
        return a0 * f, a1 * f, a2 * f
    if sin > 1e-12:
        f = angle / sin
        return ox * f, oy * f, oz * f
    return ox, oy, oz


log_vee = kernel(log_vee, refcounts=False) or log_vee


def chain_residual(Te: Array, p: Array, Rt: Array, orient: bool, w: Array, V: Array, D: Array
              ) -> tuple[float, float, float]:
    """V = W [p − e, log(R_t R_cᵀ)^∨] (weighted in place); returns ‖p − e‖, ‖ω‖, ‖WV‖. D: a (3, 3) scratch."""
    vx, vy, vz = p[0] - Te[0, 3], p[1] - Te[1, 3], p[2] - Te[2, 3]
    pos = math.sqrt(vx * vx + vy * vy + vz * vz)
    V[0], V[1], V[2] = vx, vy, vz
    ori = 0.0
    if orient:
        for i in range(3):
            for j in range(3):
                D[i, j] = Rt[i, 0] * Te[j, 0] + Rt[i, 1] * Te[j, 1] + Rt[i, 2] * Te[j, 2]
        ox, oy, oz = log_vee(D)
        V[3], V[4], V[5] = ox, oy, oz
        ori = math.sqrt(ox * ox + oy * oy + oz * oz)
    e2 = 0.0
    for i in range(V.shape[0]):
        V[i] *= w[i]
        e2 += V[i] * V[i]
    return pos, ori, math.sqrt(e2)


chain_residual = kernel(chain_residual, calls=(log_vee,), refcounts=False) or chain_residual


def theta_of(phi: Array, mid: Array, half: Array, limited: Array, lo: Array, hi: Array, q: Array, sphi: Array) -> None:
    """θ = m + h sin φ (limited DOFs; θ = φ otherwise), clipped into [lo, hi]; sphi = sin φ where limited (the
    wrap of an accepted φ, asin(sin φ), reads it instead of taking the sine again)."""
    for j in range(phi.shape[0]):
        sphi[j] = math.sin(phi[j]) if limited[j] else 0.0
        q[j] = min(max(mid[j] + half[j] * sphi[j] if limited[j] else phi[j], lo[j]), hi[j])


theta_of = kernel(theta_of, refcounts=False) or theta_of


def _phi(q: Array, mid: Array, half: Array, limited: Array, margin: float, phi: Array) -> None:
    """φ = asin((θ − m)/h), the argument clamped into ±(1 − 2·margin) (limited DOFs; φ = θ otherwise): theta_of's
    inverse, where a run starts."""
    for j in range(q.shape[0]):
        s = min(max((q[j] - mid[j]) / half[j], -1.0 + 2.0 * margin), 1.0 - 2.0 * margin) if limited[j] else 0.0
        phi[j] = math.asin(s) if limited[j] else q[j]


_phi = kernel(_phi, refcounts=False) or _phi


def lm_normal_equations(J: Array, V: Array, lam: float, mu: float, limited: Array, phi: Array, jitter: float,
                        kappa: Array, A: Array, rhs: Array) -> float:
    """A = J_φᵀJ_φ + diag(λ(1 + κ) + μD + jitter), rhs = J_φᵀV − μDφ (J_φᵀ stored as J, (n, m), m = 6 or 3);
    returns trace A. κ: each DOF's stiffness, the metric of the damping (0: none)."""
    n, m = J.shape
    trace = 0.0
    for i in range(n):
        if m == 6:  # sums over t written out, in the loop's order from 0.0 (the same bits; a loop of 6 or 3 terms
            # compiled to a vector body and remainder cost more than the sums: 7 DOFs, 6 rows 213 -> 139 ns)
            a0, a1, a2, a3, a4, a5 = J[i, 0], J[i, 1], J[i, 2], J[i, 3], J[i, 4], J[i, 5]
            g = 0.0 + a0 * V[0] + a1 * V[1] + a2 * V[2] + a3 * V[3] + a4 * V[4] + a5 * V[5]
            for j in range(i + 1):
                acc = 0.0 + a0 * J[j, 0] + a1 * J[j, 1] + a2 * J[j, 2] + a3 * J[j, 3] + a4 * J[j, 4] + a5 * J[j, 5]
                A[i, j] = acc
                A[j, i] = acc
        else:  # m == 3: a position target (the kernels' only other row count)
            a0, a1, a2 = J[i, 0], J[i, 1], J[i, 2]
            g = 0.0 + a0 * V[0] + a1 * V[1] + a2 * V[2]
            for j in range(i + 1):
                acc = 0.0 + a0 * J[j, 0] + a1 * J[j, 1] + a2 * J[j, 2]
                A[i, j] = acc
                A[j, i] = acc
        pull_i = mu if limited[i] else 0.0
        A[i, i] += lam * (1.0 + kappa[i]) + pull_i + jitter
        rhs[i] = g - pull_i * phi[i]
        trace += A[i, i]
    return trace


lm_normal_equations = kernel(lm_normal_equations, refcounts=False) or lm_normal_equations


def cholesky(A: Array) -> bool:
    """A = L Lᵀ in place (L in the lower triangle); False when A is not positive definite."""
    n = A.shape[0]
    for j in range(n):
        s = A[j, j]
        for t in range(j):
            s -= A[j, t] * A[j, t]
        if not s > 0.0:
            return False
        d = math.sqrt(s)
        A[j, j] = d
        for i in range(j + 1, n):
            s = A[i, j]
            for t in range(j):
                s -= A[i, t] * A[j, t]
            A[i, j] = s / d
    return True


cholesky = kernel(cholesky, refcounts=False) or cholesky


def solve_spd(A: Array, b: Array, x: Array) -> bool:
    """x = A⁻¹ b by Cholesky (A is overwritten by its factor, :func:`cholesky`); False when A is not positive
    definite."""
    if not cholesky(A):
        return False
    n = A.shape[0]
    for i in range(n):
        s = b[i]
        for t in range(i):
            s -= A[i, t] * x[t]
        x[i] = s / A[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for t in range(i + 1, n):
            s -= A[t, i] * x[t]
        x[i] = s / A[i, i]
    return True


solve_spd = kernel(solve_spd, calls=(cholesky,), refcounts=False) or solve_spd


def stop_reason(s: LoopSettings, pos: float, ori: float, e: float, lam: float, flat: int, it: int, e_win: float
                ) -> int:
    """CONVERGED when ‖p − e‖ ≤ tol and ‖ω‖ ≤ otol; STALLED when λ > LAMBDA_MAX, ``patience`` iterations gained
    nothing, or ‖WV‖ > ratio · ``e_win`` (‖WV‖ ``win`` iterations ago; inf before the stall test may stop a run);
    MAX_ITERATIONS at the cap; else RUNNING. The one stopping rule of the compiled loops."""
    if pos <= s.tol and ori <= s.otol:
        return CONVERGED
    if lam > LAMBDA_MAX or flat >= s.patience or e > s.ratio * e_win:
        return STALLED
    if it == s.max_iter:
        return MAX_ITERATIONS
    return RUNNING


stop_reason = kernel(stop_reason, refcounts=False) or stop_reason


def accept_step(e_n: float, e: float, lam: float, flat: int, ps: float, backoff: float
                ) -> tuple[bool, float, int, float]:
    """A step is kept when ‖WV‖_new < ‖WV‖ (NaN: rejected): λ ← max(λ·LAMBDA_DOWN, LAMBDA_MIN); else λ ← λ·LAMBDA_UP
    and the pull's scale ps ← β·ps. ``flat`` counts the steps without a gain of GAIN_REL (relative) and GAIN_ABS.
    Returns (kept, λ, flat, ps): the one acceptance rule of the compiled loops."""
    ok = e_n < e
    if ok and e_n < e * (1.0 - GAIN_REL) - GAIN_ABS:
        flat = 0
    else:
        flat += 1
    if ok:
        lam = max(lam * LAMBDA_DOWN, LAMBDA_MIN)
    else:
        lam *= LAMBDA_UP
        ps *= backoff
    return ok, lam, flat, ps


accept_step = kernel(accept_step, refcounts=False) or accept_step


def _jacobian_phi(T: Array, Te: Array, half: Array, limited: Array, phi: Array, w: Array, orient: bool, J: Array
                  ) -> None:
    """J_φᵀ (n, m) = [a × (e − r), a] · h cos φ · W, from the frames T (n, 4, 5) and the effector's Te. (The hot
    helpers take arrays, not records: a record passed to a call that is not inlined costs a reference count per
    array in it, every iteration.)"""
    for k in range(T.shape[0]):
        ax, ay, az = T[k, 0, 4], T[k, 1, 4], T[k, 2, 4]
        dx, dy, dz = Te[0, 3] - T[k, 0, 3], Te[1, 3] - T[k, 1, 3], Te[2, 3] - T[k, 2, 3]
        sc = half[k] * math.cos(phi[k]) if limited[k] else 1.0
        J[k, 0] = (ay * dz - az * dy) * sc * w[0]
        J[k, 1] = (az * dx - ax * dz) * sc * w[1]
        J[k, 2] = (ax * dy - ay * dx) * sc * w[2]
        if orient:
            J[k, 3] = ax * sc * w[3]
            J[k, 4] = ay * sc * w[4]
            J[k, 5] = az * sc * w[5]


_jacobian_phi = kernel(_jacobian_phi, refcounts=False) or _jacobian_phi


def _damped_step(J: Array, V: Array, lam: float, mu: float, phi: Array, limited: Array, kappa: Array,
                 max_step: float, A: Array, rhs: Array, d: Array) -> None:
    """d = Δφ from the normal equations (:func:`lm_normal_equations`, Cholesky); where A is not positive definite a
    relative jitter on its diagonal, then 0 if that fails too; |d_j| capped at ``max_step`` (scaled as a whole)."""
    n = d.shape[0]
    trace = lm_normal_equations(J, V, lam, mu, limited, phi, 0.0, kappa, A, rhs)
    if not solve_spd(A, rhs, d):
        lm_normal_equations(J, V, lam, mu, limited, phi, 1e-12 * (trace / n + 1.0), kappa, A, rhs)
        if not solve_spd(A, rhs, d):
            for i in range(n):
                d[i] = 0.0
    if max_step > 0.0:
        big = 0.0
        for i in range(n):
            big = max(big, abs(d[i]))
        if big > max_step:
            for i in range(n):
                d[i] *= max_step / big


_damped_step = kernel(_damped_step, calls=(lm_normal_equations, solve_spd), refcounts=False) or _damped_step


def lm_one(chain: LoopChain, s: LoopSettings, goal: Goal, q_in: Array, q_out: Array, history: Array
            ) -> tuple[float, float, int, int]:
    """One problem from the start ``q_in`` (n,): writes q_out (n,) and history[: it + 1] (the rest of ``history``
    is left as it was); returns position and orientation errors, iterations, reason."""
    n = q_in.shape[0]
    m = 6 if goal.orient else 3
    bw, k = 20 * n + 16 + m, 20 * n  # buf: [T | Te | V] of the point, then of the trial (an accepted one is copied)
    buf, v, J, A = np.empty(2 * bw), np.empty((8, n)), np.empty((n, m)), np.empty((n, n))
    T, Te, V = buf[:k].reshape((n, 4, 5)), buf[k:k + 16].reshape((4, 4)), buf[k + 16:bw]
    Tn, Ten, Vn = buf[bw:bw + k].reshape((n, 4, 5)), buf[bw + k:bw + k + 16].reshape((4, 4)), buf[bw + k + 16:]
    rhs, d, qs, q, qn, phi, phin, sphi = v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
    es, loc, D = np.empty(s.max_iter + 1), np.empty(20), np.empty((3, 3))  # loc, D: chain_forward's, chain_residual's
    Hs, Ce, lo, hi, mid, half, lim, kappa = chain.Hs, chain.Ce, chain.lo, chain.hi, chain.mid, chain.half, \
        chain.limited, chain.kappa
    p, Rt, orient, w, max_step = goal.p, goal.Rt, goal.orient, goal.w, s.max_step
    for j in range(n):
        qs[j] = min(max(q_in[j], lo[j]), hi[j])
    chain_forward(qs, Hs, Ce, T, Te, loc)
    pos0, ori0, e0 = chain_residual(Te, p, Rt, orient, w, V, D)
    history[0] = e0
    if pos0 <= s.tol and ori0 <= s.otol:  # the start meets the target already: it is the answer
        for j in range(n):
            q_out[j] = qs[j]
        return pos0, ori0, 0, CONVERGED
    _phi(qs, mid, half, lim, s.margin, phi)
    theta_of(phi, mid, half, lim, lo, hi, q, sphi)
    chain_forward(q, Hs, Ce, T, Te, loc)
    pos, ori, e = chain_residual(Te, p, Rt, orient, w, V, D)
    es[0] = e
    lam, flat, ps, decay, it, ok = s.damping, 0, 1.0, 1.0, 0, True
    while True:
        e_win = es[it - s.win] if s.win > 0 and it >= max(s.win, s.stall_min) else math.inf
        why = stop_reason(s, pos, ori, e, lam, flat, it, e_win)
        if why != RUNNING:
            back = why != CONVERGED and e >= e0
            for j in range(n):
                q_out[j] = qs[j] if back else q[j]
            history[it] = e0 if back else e
            return pos0 if back else pos, ori0 if back else ori, it, why
        if ok:  # after a rejected step φ and the frames are as they were, and so is J
            _jacobian_phi(T, Te, half, lim, phi, w, orient, J)
        _damped_step(J, V, lam, s.pull * decay * ps * min(1.0, e * e), phi, lim, kappa, max_step, A, rhs, d)
        for i in range(n):
            phin[i] = phi[i] + d[i]
        theta_of(phin, mid, half, lim, lo, hi, qn, sphi)
        chain_forward(qn, Hs, Ce, Tn, Ten, loc)
        pos_n, ori_n, e_n = chain_residual(Ten, p, Rt, orient, w, Vn, D)
        ok, lam, flat, ps = accept_step(e_n, e, lam, flat, ps, s.backoff)
        if ok:  # the trial's frames, effector and residual copied over the point's (a swap counts references)
            for i in range(bw):
                buf[i] = buf[bw + i]
            for i in range(n):
                q[i] = qn[i]
                # φ and π − φ give the same θ: keep φ in [−π/2, π/2], where the pull toward 0 is the short way
                phi[i] = math.asin(sphi[i]) if lim[i] else phin[i]  # sphi: sin φ_new (theta_of)
            pos, ori, e = pos_n, ori_n, e_n
        it += 1
        history[it] = min(e, e0)
        es[it] = e
        decay *= s.decay


lm_one = kernel(lm_one, calls=(chain_forward, chain_residual, _phi, theta_of, stop_reason, _jacobian_phi,
                                 _damped_step, accept_step)) or lm_one


def polish_one(chain: LoopChain, s: LoopSettings, goal: Goal, q: Array, history: Array, it: int, steps: int
               ) -> tuple[float, float, int, bool]:
    """(J_Fᵀ W² J_F + λ(I + K)) Δθ = J_Fᵀ W² V, θ ← clip(θ + Δθ, l, u): :func:`~animkit.ik.lm.polish` (its NumPy
    reference) for one problem, at most ``steps`` steps from q (n,, updated in place); J_F: the rows of the DOFs held
    at a limit zeroed (lm_rules.stationary's set); λ from POLISH_DAMPING by :func:`accept_step`; history[it + k] =
    ‖WV‖ after step k. Returns position and orientation errors, the steps taken and whether it converged."""
    n, m = q.shape[0], 6 if goal.orient else 3
    T, Tn, Te, Ten = np.empty((n, 4, 5)), np.empty((n, 4, 5)), np.empty((4, 4)), np.empty((4, 4))
    V, Vn, J, A, loc, D = np.empty(m), np.empty(m), np.empty((n, m)), np.empty((n, n)), np.empty(20), np.empty((3, 3))
    rhs, d, qn, g, jj = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    held, free = np.zeros_like(chain.limited), np.empty(n, dtype=np.bool_)  # held: θ itself, no limit coordinate
    Hs, Ce, lo, hi, w = chain.Hs, chain.Ce, chain.lo, chain.hi, goal.w
    chain_forward(q, Hs, Ce, T, Te, loc)
    pos, ori, e = chain_residual(Te, goal.p, goal.Rt, goal.orient, w, V, D)
    lam, flat, ps, k = POLISH_DAMPING, 0, 1.0, 0
    while k < steps and not (pos <= s.tol and ori <= s.otol):
        _jacobian_phi(T, Te, chain.half, held, q, w, goal.orient, J)
        for i in range(n):
            gi, ji = 0.0, 0.0
            for t in range(m):
                gi += J[i, t] * V[t]
                ji += J[i, t] * J[i, t]
            g[i], jj[i] = gi, ji
        if stationary(g, jj, q, lo, hi, e, free):
            break
        for i in range(n):
            if not free[i]:
                for t in range(m):
                    J[i, t] = 0.0
        _damped_step(J, V, lam, 0.0, q, held, chain.kappa, s.max_step, A, rhs, d)
        for i in range(n):
            qn[i] = min(max(q[i] + d[i], lo[i]), hi[i])
        chain_forward(qn, Hs, Ce, Tn, Ten, loc)
        pos_n, ori_n, e_n = chain_residual(Ten, goal.p, goal.Rt, goal.orient, w, Vn, D)
        ok, lam, flat, ps = accept_step(e_n, e, lam, flat, ps, 1.0)
        if ok:
            T, Tn, Te, Ten, V, Vn = Tn, T, Ten, Te, Vn, V
            for i in range(n):
                q[i] = qn[i]
            pos, ori, e = pos_n, ori_n, e_n
        k += 1
        history[it + k] = e
        if lam > LAMBDA_MAX or flat >= s.patience:
            break
    return pos, ori, k, pos <= s.tol and ori <= s.otol


polish_one = kernel(polish_one, calls=(chain_forward, chain_residual, _jacobian_phi, stationary_jit, _damped_step,
                                       accept_step), internal=True) or polish_one


def _polish_batch(chain: LoopChain, s: LoopSettings, P: Array, R: Array, orient: bool, w: Array, steps: int,
                  out: LoopOut) -> None:
    for b in range(out.q.shape[0]):
        k0 = out.iters[b]
        k = min(steps, s.max_iter - k0)
        if out.reason[b] == CONVERGED or k <= 0:
            continue
        h = out.history[b]
        pos, ori, taken, done = polish_one(chain, s, Goal(P[b], R[b], orient, w), out.q[b], h, k0, k)
        for r in range(k0 + taken + 1, h.shape[0]):
            h[r] = h[k0 + taken]
        out.pos[b], out.ori[b], out.iters[b] = pos, ori, k0 + taken
        if done:
            out.reason[b] = CONVERGED


_POLISH = kernel(_polish_batch, calls=(polish_one,))


def polish_batch(chain: LoopChain, s: LoopSettings, P: Array, R: Array, orient: bool, w: Array, steps: int,
                 out: LoopOut) -> None:
    """Every answer in ``out`` (untrimmed) that did not converge, finished by :func:`polish_one` (≤ ``steps``, within
    ``max_iter``; history held after): the lanes with restarts' end, as the NumPy rounds' (lm.polish). Its kernel is
    loaded only where some answer has steps left."""
    left = (out.reason != CONVERGED) & (out.iters < s.max_iter)
    if steps > 0 and bool(left.any()):
        assert _POLISH is not None
        _POLISH(chain, s, P, R, orient, w, int(steps), out)


def _lm_serial(chain: LoopChain, s: LoopSettings, q0: Array, P: Array, R: Array, orient: bool, w: Array,
               first_success: bool, out: LoopOut) -> None:
    B, n = q0.shape
    found = False
    for b in range(B):
        if found:  # first_success: a problem before this one converged; this one is not run
            for j in range(n):
                out.q[b, j] = min(max(q0[b, j], chain.lo[j]), chain.hi[j])
            out.pos[b], out.ori[b], out.iters[b], out.reason[b] = math.inf, math.inf, 0, MAX_ITERATIONS
            for k in range(out.history.shape[1]):
                out.history[b, k] = math.inf
            continue
        h = out.history[b]
        pos, ori, it, why = lm_one(chain, s, Goal(P[b], R[b], orient, w), q0[b], out.q[b], h)
        for k in range(it + 1, h.shape[0]):
            h[k] = h[it]
        out.pos[b], out.ori[b], out.iters[b], out.reason[b] = pos, ori, it, why
        found = first_success and why == CONVERGED


_KERNEL = kernel(_lm_serial, calls=(lm_one,))


def lm_serial(chain: LoopChain, s: LoopSettings, q0: Array, P: Array, R: Array | None, w: Array, *,
              first_success: bool = False) -> tuple[Array, NDArray[np.intp], NDArray[np.intp], Array, Array, Array]:
    """Run the compiled loop on B problems: q0 (B, n), P (B, 3), R (B, 3, 3) or None, row weights w (3 or 6) on
    ``chain`` with ``s`` (:func:`~animkit.ik.lm.loop_chain`, :func:`~animkit.ik.lm.loop_settings`). Returns q (B, n),
    iterations (B,), reason codes (B,: 0 converged, 1 stalled, 2 max_iterations), position and orientation errors
    (B,), and the residual history (max iterations + 1, B), each problem's value held after it finished. With
    ``first_success`` the problems after the first that converges are not run (their errors are inf). Needs
    :func:`animkit.jit.enabled`."""
    assert _KERNEL is not None
    return call_loop(_KERNEL, first_success, chain, s, q0, P, R, w)


def call_loop(loop: Callable[..., None], flag: bool, chain: LoopChain, s: LoopSettings, q0: Array, P: Array,
              R: Array | None, w: Array, restart: tuple[int, int, float, int] | None = None,
              tries: NDArray[np.intp] | None = None, polish: int = 0
              ) -> tuple[Array, NDArray[np.intp], NDArray[np.intp], Array, Array, Array]:
    """Call a compiled lm loop over B problems (lm_serial's or the lanes' kernel; ``flag``: its one switch,
    ``first_success`` or ``poly``) with fresh outputs: q (B, n), iterations, reason codes, position and orientation
    errors (B,) and the residual history trimmed to the longest run. The lanes' kernel also takes ``restart``
    (restarts, seed, μ₀ of a restart, the first problem's index) and fills ``tries`` (B,): the random starts each
    problem ran. ``polish`` > 0: the answers that did not converge are then finished in θ (:func:`polish_batch`)."""
    B, n = q0.shape
    orient = R is not None
    Rk = np.ascontiguousarray(R, dtype=float) if R is not None else np.zeros((B, 3, 3))
    # (B, max_iter + 1), returned transposed: a run fills its own row (a column's writes cost ~1 µs a problem)
    out = LoopOut(np.empty((B, n)), np.zeros(B, dtype=np.intp), np.zeros(B, dtype=np.intp), np.empty(B), np.empty(B),
                  np.empty((B, s.max_iter + 1)))
    args = (chain, s, np.ascontiguousarray(q0, dtype=float), np.ascontiguousarray(P, dtype=float), Rk, orient, w,
            bool(flag))
    if restart is None:
        loop(*args, out)
    else:
        restarts, seed, r_pull, index0 = restart
        loop(*args, (int(restarts), int(seed), float(r_pull), int(index0)), out,
             np.zeros(B, dtype=np.intp) if tries is None else tries)
    if polish > 0:
        polish_batch(chain, s, args[3], Rk, orient, w, polish, out)
    rows = int(out.iters.max()) + 1 if B else 1
    return out.q, out.iters, out.reason, out.pos, out.ori, out.history[:, :rows].T


def tiny_chain() -> tuple[LoopChain, LoopSettings]:
    """A one-DOF chain and settings of one iteration: what the warm-ups compile the kernels on."""
    Hs = np.zeros((1, 3, 20))
    Hs[0, 0, 15:] = (0.0, 0.0, 0.0, 1.0, 0.0)
    limited: Array = np.ones(1)  # 0/1 floats, as LoopChain.limited
    chain = LoopChain(Hs, np.eye(4), np.full(1, -1.0), np.ones(1), np.zeros(1), np.ones(1), limited, np.zeros(1),
                      np.zeros(3), 1.0)
    return chain, LoopSettings(1e-5, 1e-4, 12, 1, 1.0, -1.0, 0, 0.5, 10, 1.0, 0.95, 0.1, 0.05)


def warm_up() -> None:
    """Compile (or load from numba's disk cache) the loop now, e.g. before timing; nothing when numba is off."""
    if _KERNEL is not None and jit.enabled():
        chain, s = tiny_chain()
        lm_serial(chain, s, np.zeros((1, 1)), np.ones((1, 3)), np.eye(3)[None], np.ones(6))
