"""The default solver's loop (:mod:`.lm`) compiled with numba for serial chains of revolute DOFs, one effector.

    θ_j = m_j + h_j sin φ_j,   (J_φᵀ W² J_φ + λI + μ_k D) Δφ = J_φᵀ W² V − μ_k D φ,   μ_k = μ₀ γᵏ βʳ min(1, ‖WV‖²)

The same iteration, acceptance and stopping rules as :func:`~animkit.ik.lm._run_one` (its NumPy twin, and the
oracle of this kernel's tests), one problem after another, each in a few microseconds: frames as 4×5 blocks
[C_k E_k(θ) | R_C a] multiplied down the chain, J from a × (e − r) and a, the normal equations solved by Cholesky.
Differences: floating-point sums run in another order, and a time budget is checked between problems, not between
iterations (one problem takes well under a millisecond). Used by :func:`~animkit.ik.lm.run_lm` when
:func:`animkit.jit.enabled`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from .. import jit
from ..jit import kernel
from .constants import (
    GAIN_ABS,
    GAIN_REL,
    LAMBDA_DOWN,
    LAMBDA_MAX,
    LAMBDA_MIN,
    LAMBDA_UP,
    ORIENTATION_FIRST_WEIGHT,
    ORIENTATION_STAGES,
    STATIONARY,
)

__all__ = ["lm_serial", "call_loop", "lm_packed", "packed_entry", "pack_serial", "out_size", "warm_up", "chain_forward",
           "chain_residual", "log_vee", "cholesky", "solve_spd"]

Array = NDArray[np.float64]

# reason codes of the kernel's output
CONVERGED, STALLED, MAX_ITERATIONS = 0, 1, 2


def chain_forward(q: Array, Hs: Array, Ce: Array, T: Array, Te: Array, loc: Array) -> None:
    """T[k] (4×5) = T[k−1][:, :4] · ([1, sin θ_k, 1 − cos θ_k] · Hs[k]); Te = T[n−1][:, :4] · Ce. loc: (20,) scratch."""
    n = q.shape[0]
    for k in range(n):
        s = math.sin(q[k])
        c1 = 1.0 - math.cos(q[k])
        for idx in range(20):
            loc[idx] = Hs[k, 0, idx] + s * Hs[k, 1, idx] + c1 * Hs[k, 2, idx]
        if k == 0:
            for i in range(4):
                for j in range(5):
                    T[0, i, j] = loc[5 * i + j]
        else:
            for i in range(3):  # the last row of every frame stays [0, 0, 0, 1 | 0]
                for j in range(5):
                    T[k, i, j] = T[k - 1, i, 0] * loc[j] + T[k - 1, i, 1] * loc[5 + j] + \
                        T[k - 1, i, 2] * loc[10 + j] + T[k - 1, i, 3] * loc[15 + j]
            for j in range(5):
                T[k, 3, j] = loc[15 + j]
    for i in range(4):
        for j in range(4):
            Te[i, j] = T[n - 1, i, 0] * Ce[0, j] + T[n - 1, i, 1] * Ce[1, j] + T[n - 1, i, 2] * Ce[2, j] + \
                T[n - 1, i, 3] * Ce[3, j]


chain_forward = kernel(chain_forward) or chain_forward


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


log_vee = kernel(log_vee) or log_vee


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


chain_residual = kernel(chain_residual, calls=(log_vee,)) or chain_residual


def _theta(phi: Array, mid: Array, half: Array, limited: Array, lo: Array, hi: Array, q: Array) -> None:
    """θ = m + h sin φ (limited DOFs; θ = φ otherwise), clipped into [lo, hi]."""
    for j in range(phi.shape[0]):
        v = mid[j] + half[j] * math.sin(phi[j]) if limited[j] else phi[j]
        q[j] = min(max(v, lo[j]), hi[j])


_theta = kernel(_theta) or _theta


def _phi(q: Array, mid: Array, half: Array, limited: Array, margin: float, phi: Array) -> None:
    """φ = asin((θ − m)/h), the argument clamped into ±(1 − 2·margin) (limited DOFs; φ = θ otherwise): _theta's
    inverse, where a run starts."""
    for j in range(q.shape[0]):
        if limited[j]:
            s = min(max((q[j] - mid[j]) / half[j], -1.0 + 2.0 * margin), 1.0 - 2.0 * margin)
            phi[j] = math.asin(s)
        else:
            phi[j] = q[j]


_phi = kernel(_phi) or _phi


def _normal_equations(J: Array, V: Array, lam: float, mu: float, limited: Array, phi: Array, jitter: float,
                      kappa: Array, A: Array, rhs: Array) -> float:
    """A = J_φᵀJ_φ + diag(λ(1 + κ) + μD + jitter), rhs = J_φᵀV − μDφ (J_φᵀ stored as J, (n, m)); returns trace A.
    κ: each DOF's stiffness, the metric of the damping (0: none)."""
    n, m = J.shape
    trace = 0.0
    for i in range(n):
        g = 0.0
        for t in range(m):
            g += J[i, t] * V[t]
        for j in range(i + 1):
            acc = 0.0
            for t in range(m):
                acc += J[i, t] * J[j, t]
            A[i, j] = acc
            A[j, i] = acc
        pull_i = mu if limited[i] else 0.0
        A[i, i] += lam * (1.0 + kappa[i]) + pull_i + jitter
        rhs[i] = g - pull_i * phi[i]
        trace += A[i, i]
    return trace


_normal_equations = kernel(_normal_equations) or _normal_equations


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


cholesky = kernel(cholesky) or cholesky


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


solve_spd = kernel(solve_spd, calls=(cholesky,)) or solve_spd


def _lm_one(Hs: Array, Ce: Array, lo: Array, hi: Array, mid: Array, half: Array, limited: Array, kappa: Array,
            q_in: Array, p: Array, Rt: Array, orient: bool, w: Array, tol: float, otol: float, patience: int,
            max_iter: int, damping: float, max_step: float, win: int, ratio: float, stall_min: int, pull: float,
            decay_rate: float, backoff: float, margin: float, q_out: Array, history: Array
            ) -> tuple[float, float, int, int]:
    """One problem of :func:`_lm_serial` from the start ``q_in`` (n,): writes q_out (n,) and history[: it + 1]
    (the rest of ``history`` is left as it was); returns position and orientation errors, iterations, reason."""
    n = q_in.shape[0]
    m = 6 if orient else 3
    T, Tn = np.empty((n, 4, 5)), np.empty((n, 4, 5))
    Te, Ten = np.empty((4, 4)), np.empty((4, 4))
    V, Vn = np.empty(m), np.empty(m)
    J = np.empty((n, m))
    A = np.empty((n, n))
    rhs, d = np.empty(n), np.empty(n)
    qs, q, qn = np.empty(n), np.empty(n), np.empty(n)
    phi, phin = np.empty(n), np.empty(n)
    es = np.empty(max_iter + 1)
    loc, D = np.empty(20), np.empty((3, 3))  # scratch of chain_forward and chain_residual
    for j in range(n):
        qs[j] = min(max(q_in[j], lo[j]), hi[j])
    chain_forward(qs, Hs, Ce, T, Te, loc)
    pos0, ori0, e0 = chain_residual(Te, p, Rt, orient, w, V, D)
    history[0] = e0
    if pos0 <= tol and ori0 <= otol:  # the start meets the target already: it is the answer
        for j in range(n):
            q_out[j] = qs[j]
        return pos0, ori0, 0, CONVERGED
    _phi(qs, mid, half, limited, margin, phi)
    _theta(phi, mid, half, limited, lo, hi, q)
    chain_forward(q, Hs, Ce, T, Te, loc)
    pos, ori, e = chain_residual(Te, p, Rt, orient, w, V, D)
    history[0] = e0
    es[0] = e
    lam, flat, ps, decay = damping, 0, 1.0, 1.0
    it = 0
    while True:
        done = pos <= tol and ori <= otol
        stalled = lam > LAMBDA_MAX or flat >= patience or \
            (win > 0 and it >= max(win, stall_min) and e > ratio * es[it - win])
        if done or stalled or it == max_iter:
            back = (not done) and e >= e0
            for j in range(n):
                q_out[j] = qs[j] if back else q[j]
            history[it] = e0 if back else e
            return (pos0 if back else pos, ori0 if back else ori, it,
                    CONVERGED if done else STALLED if stalled else MAX_ITERATIONS)
        # J_φ (n, m): [a × (e − r), a] · h cos φ · W
        for k in range(n):
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
        mu = pull * decay * ps * min(1.0, e * e)
        trace = _normal_equations(J, V, lam, mu, limited, phi, 0.0, kappa, A, rhs)
        if not solve_spd(A, rhs, d):
            # the NumPy loop's fallback: a relative jitter on the diagonal, then solve again
            _normal_equations(J, V, lam, mu, limited, phi, 1e-12 * (trace / n + 1.0), kappa, A, rhs)
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
        for i in range(n):
            phin[i] = phi[i] + d[i]
        _theta(phin, mid, half, limited, lo, hi, qn)
        chain_forward(qn, Hs, Ce, Tn, Ten, loc)
        pos_n, ori_n, e_n = chain_residual(Ten, p, Rt, orient, w, Vn, D)
        ok = e_n < e  # NaN compares False: a step that produced NaN is rejected
        if ok and e_n < e * (1.0 - GAIN_REL) - GAIN_ABS:
            flat = 0
        else:
            flat += 1
        if ok:
            lam = max(lam * LAMBDA_DOWN, LAMBDA_MIN)
            T, Tn = Tn, T
            Te, Ten = Ten, Te
            V, Vn = Vn, V
            for i in range(n):
                q[i] = qn[i]
                # φ and π − φ give the same θ: keep φ in [−π/2, π/2], where the pull toward 0 is the short way
                phi[i] = math.asin(math.sin(phin[i])) if limited[i] else phin[i]
            pos, ori, e = pos_n, ori_n, e_n
        else:
            lam *= LAMBDA_UP
            ps *= backoff
        it += 1
        history[it] = min(e, e0)
        es[it] = e
        decay *= decay_rate


_lm_one = kernel(_lm_one, calls=(chain_forward, chain_residual, _phi, _theta, _normal_equations, solve_spd)) or _lm_one


def _lm_serial(Hs: Array, Ce: Array, lo: Array, hi: Array, mid: Array, half: Array, limited: Array, kappa: Array,
               q0: Array,
               P: Array, R: Array, orient: bool, w: Array, tol: float, otol: float, patience: int, max_iter: int,
               damping: float, max_step: float, win: int, ratio: float, stall_min: int, pull: float, decay_rate: float,
               backoff: float, margin: float, first_success: bool, q_out: Array, iters: Array, reason: Array,
               pos_out: Array, ori_out: Array, history: Array) -> None:
    B, n = q0.shape
    found = False
    for b in range(B):
        if found:  # first_success: a problem before this one converged; this one is not run
            for j in range(n):
                q_out[b, j] = min(max(q0[b, j], lo[j]), hi[j])
            pos_out[b], ori_out[b], iters[b], reason[b] = math.inf, math.inf, 0, MAX_ITERATIONS
            for k in range(history.shape[0]):
                history[k, b] = math.inf
            continue
        h = history[:, b]
        pos_out[b], ori_out[b], it, why = _lm_one(
            Hs, Ce, lo, hi, mid, half, limited, kappa, q0[b], P[b], R[b], orient, w, tol, otol, patience, max_iter,
            damping, max_step, win, ratio, stall_min, pull, decay_rate, backoff, margin, q_out[b], h)
        for k in range(it + 1, history.shape[0]):
            h[k] = h[it]
        iters[b], reason[b] = it, why
        found = first_success and why == CONVERGED


_KERNEL = kernel(_lm_serial, calls=(_lm_one,))


# The packed single-problem entry (:func:`lm_packed`): every constant of a chain and its options in one float64
# array, laid out by :func:`pack_serial`, so that a call hands numba four arrays (its dispatch costs about a
# microsecond an argument). Header slots:
_N, _ORIENT, _TOL, _OTOL, _PATIENCE, _MAX_ITER, _DAMPING, _MAX_STEP, _WIN, _RATIO, _STALL_MIN, _PULL, _DECAY, \
    _BACKOFF, _MARGIN, _RELAX = range(16)
_HEAD = 16
# out (see out_size): q (n), then these slots after it, then the residual history
OUT_POS, OUT_ORI, OUT_ITERS, OUT_REASON, OUT_VALID, OUT_HISTORY = range(6)
UNREACHABLE = 3  # the packed entry's fourth reason code: shown out of reach (lm's _reachability)
# runs of the strategy at most: first, 2 × 2 relaxed, then position first, orientation first and the orientation
# continuation: each 1 + 1 + 2 × 2 relaxed (the continuation: K − 1 + 1 + 2 × 2)
_RUNS = 5 + 6 + 6 + ORIENTATION_STAGES + 4


def _beyond(p: Array, base: Array, reach: float, tol: float) -> bool:
    """api._beyond for one serial chain: the target lies farther from the base origin than the chain reaches."""
    dx, dy, dz = p[0] - base[0], p[1] - base[1], p[2] - base[2]
    return math.sqrt(dx * dx + dy * dy + dz * dz) > reach + tol


_beyond = kernel(_beyond) or _beyond


def _stationary(Hs: Array, Ce: Array, q: Array, lo: Array, hi: Array, p: Array, Rt: Array, orient: bool, w: Array
                ) -> bool:
    """api._reachability's optimality test at q: g = Jᵀ W² V over the DOFs free to move (a DOF on a limit counts
    only toward its inside); True when ‖g‖ ≤ STATIONARY · ‖J‖_F ‖W V‖ (J, V weighted; J over the free DOFs)."""
    n = q.shape[0]
    m = 6 if orient else 3
    T, Te, V = np.empty((n, 4, 5)), np.empty((4, 4)), np.empty(m)
    chain_forward(q, Hs, Ce, T, Te, np.empty(20))
    _, _, vn = chain_residual(Te, p, Rt, orient, w, V, np.empty((3, 3)))
    gn2, jn2 = 0.0, 0.0
    for k in range(n):
        ax, ay, az = T[k, 0, 4], T[k, 1, 4], T[k, 2, 4]
        dx, dy, dz = Te[0, 3] - T[k, 0, 3], Te[1, 3] - T[k, 1, 3], Te[2, 3] - T[k, 2, 3]
        c0, c1, c2 = (ay * dz - az * dy) * w[0], (az * dx - ax * dz) * w[1], (ax * dy - ay * dx) * w[2]
        g = c0 * V[0] + c1 * V[1] + c2 * V[2]
        j2 = c0 * c0 + c1 * c1 + c2 * c2
        if orient:
            c3, c4, c5 = ax * w[3], ay * w[4], az * w[5]
            g += c3 * V[3] + c4 * V[4] + c5 * V[5]
            j2 += c3 * c3 + c4 * c4 + c5 * c5
        blocked = (q[k] <= lo[k] + 1e-9 and g < 0.0) or (q[k] >= hi[k] - 1e-9 and g > 0.0)
        if not blocked:
            gn2 += g * g
            jn2 += j2
    return math.sqrt(gn2) <= STATIONARY * math.sqrt(jn2) * vn


_stationary = kernel(_stationary, calls=(chain_forward, chain_residual)) or _stationary


def _keep_better(q: Array, H: Array, pos: float, ori: float, it: int, why: int, qc: Array, Hc: Array, pos_c: float,
                 ori_c: float, it_c: int, why_c: int, before: int) -> tuple[float, float, int, int]:
    """lm.keep_better for one problem: the state (q, H[: it + 1], pos, ori, it, why) takes a later run's answer
    (qc, Hc[: it_c + 1], ...) when that converged or ends closer; ``before`` iterations were spent between them.
    Updates q and H in place; returns the new pos, ori, iterations, reason."""
    best = H[it]
    take = why_c == CONVERGED or Hc[it_c] < best
    total = it + before + it_c
    for k in range(it + 1, total + 1):
        H[k] = best
    if not take:
        return pos, ori, total, why
    k0 = it + before + 1
    for j in range(it_c):
        H[k0 + j] = max(min(Hc[1 + j], best), Hc[it_c])
    for k in range(k0 - 1 + it_c, total + 1):
        H[k] = Hc[it_c]
    for j in range(q.shape[0]):
        q[j] = qc[j]
    return pos_c, ori_c, total, why_c


_keep_better = kernel(_keep_better) or _keep_better


def _wrap(q: Array, lo: Array, hi: Array, out: Array) -> None:
    """lm.wrap_into_limits on a chain of revolute DOFs: θ' = l + ((θ − l) mod 2π), an angle in the gap to the nearer
    limit on the circle, where both limits are finite; clipped otherwise."""
    for j in range(q.shape[0]):
        if math.isfinite(lo[j]) and math.isfinite(hi[j]):
            v = lo[j] + (q[j] - lo[j]) % (2.0 * math.pi)
            if v > hi[j]:
                v = hi[j] if v - hi[j] < lo[j] + 2.0 * math.pi - v else lo[j]
            out[j] = v
        else:
            out[j] = min(max(q[j], lo[j]), hi[j])


_wrap = kernel(_wrap) or _wrap


def _relax_stages(Hs: Array, Ce: Array, lo: Array, hi: Array, mid: Array, half: Array, limited: Array,
                  kappa: Array, lo_r: Array, hi_r: Array, mid_r: Array, half_r: Array, lim_r: Array, base: Array,
                  reach: float, p: Array, Rt: Array, orient: bool, w: Array, tol: float, otol: float, patience: int,
                  max_iter: int, damping: float, max_step: float, win: int, ratio: float, stall_min: int, pull: float,
                  decay: float,
                  backoff: float, margin: float, start: Array, q: Array, H: Array, pos: float, ori: float, it: int,
                  why: int) -> tuple[float, float, int, int]:
    """api._relax's first strategy (position_first=False) for one problem: through the relaxed limits from
    ``start``, then, when still undecided, from where the first run stopped; each stage kept when better. The run
    through the relaxed limits gets every iteration; the run back inside them has the stall test (win, ratio)."""
    n = q.shape[0]
    stopped = q.copy()
    qu, qw, qc = np.empty(n), np.empty(n), np.empty(n)
    Hu, Hc = np.empty(max_iter + 1), np.empty(max_iter + 1)
    for k in range(2):
        if why == CONVERGED or _beyond(p, base, reach, tol):
            break
        if k == 1 and _stationary(Hs, Ce, q, lo, hi, p, Rt, orient, w):
            break
        _, _, it_u, _ = _lm_one(Hs, Ce, lo_r, hi_r, mid_r, half_r, lim_r, kappa, start if k == 0 else stopped, p,
                                Rt, orient, w, tol, otol, patience, max_iter, damping, max_step, 0, 0.5, stall_min,
                                pull, decay, backoff, margin, qu, Hu)
        _wrap(qu, lo, hi, qw)
        pos_c, ori_c, it_c, why_c = _lm_one(Hs, Ce, lo, hi, mid, half, limited, kappa, qw, p, Rt, orient, w, tol,
                                            otol, patience, max_iter, damping, max_step, win, ratio, stall_min, pull,
                                            decay, backoff, margin, qc, Hc)
        pos, ori, it, why = _keep_better(q, H, pos, ori, it, why, qc, Hc, pos_c, ori_c, it_c, why_c, it_u)
    return pos, ori, it, why


_relax_stages = kernel(_relax_stages, calls=(_lm_one, _beyond, _stationary, _wrap, _keep_better)) or _relax_stages


def _full_task_from(Hs: Array, Ce: Array, lo: Array, hi: Array, mid: Array, half: Array, limited: Array,
                    kappa: Array, lifted: bool, lo_r: Array, hi_r: Array, mid_r: Array, half_r: Array, lim_r: Array,
                    base: Array, reach: float, p: Array, Rt: Array, orient: bool, w: Array, tol: float, otol: float,
                    patience: int, max_iter: int, damping: float, max_step: float, win: int, ratio: float,
                    stall_min: int, pull: float, decay: float, backoff: float, margin: float, start: Array,
                    before: int, q: Array, H: Array, pos: float, ori: float, it: int, why: int
                    ) -> tuple[float, float, int, int]:
    """The second half of every continuation (api.retry_position_first and its siblings): the full task from ``start``
    (the answer of an easier problem that took ``before`` iterations), with the relaxed-limits stages when any limit
    was lifted, kept over the state (q, H, pos, ori, it, why) by :func:`_keep_better`."""
    n = q.shape[0]
    qc, Hc = np.empty(n), np.empty(_RUNS * (max_iter + 1))
    pos_c, ori_c, it_c, why_c = _lm_one(Hs, Ce, lo, hi, mid, half, limited, kappa, start, p, Rt, orient, w, tol, otol,
                                        patience, max_iter, damping, max_step, win, ratio, stall_min, pull, decay,
                                        backoff, margin, qc, Hc)
    if lifted:
        pos_c, ori_c, it_c, why_c = _relax_stages(
            Hs, Ce, lo, hi, mid, half, limited, kappa, lo_r, hi_r, mid_r, half_r, lim_r, base, reach, p, Rt, orient, w,
            tol, otol, patience, max_iter, damping, max_step, win, ratio, stall_min, pull, decay, backoff, margin,
            start, qc, Hc, pos_c, ori_c, it_c, why_c)
    return _keep_better(q, H, pos, ori, it, why, qc, Hc, pos_c, ori_c, it_c, why_c, before)


_full_task_from = kernel(_full_task_from, calls=(_lm_one, _relax_stages, _keep_better)) or _full_task_from


def _rotated(wx: float, wy: float, wz: float, t: float, Rs: Array, out: Array) -> None:
    """out = exp(t [ω]_×) R_s (R_s: the upper-left 3×3 of ``Rs``), by Rodrigues as
    :func:`animkit.transforms.matrix_from_rotation_vector`: I + sin θ K + (1 − cos θ) K², θ = t‖ω‖, K = [ω/‖ω‖]_×."""
    vx, vy, vz = wx * t, wy * t, wz * t
    th = math.sqrt(vx * vx + vy * vy + vz * vz)
    safe = 1.0 if th < 1e-300 else th
    ax, ay, az = vx / safe, vy / safe, vz / safe
    K = np.array([[0.0, -az, ay], [az, 0.0, -ax], [-ay, ax, 0.0]])
    s, c = math.sin(th), 1.0 - math.cos(th)
    E = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            kk = K[i, 0] * K[0, j] + K[i, 1] * K[1, j] + K[i, 2] * K[2, j]
            E[i, j] = (1.0 if i == j else 0.0) + s * K[i, j] + c * kk
    for i in range(3):
        for j in range(3):
            out[i, j] = E[i, 0] * Rs[0, j] + E[i, 1] * Rs[1, j] + E[i, 2] * Rs[2, j]


_rotated = kernel(_rotated) or _rotated


def _lm_packed(prm: Array, target: Array, q0: Array, out: Array) -> None:
    """One problem: the target (16,) a 4×4 pose row-major, or (3,) a position; out[n + OUT_VALID] = 0 when the
    target is malformed (not finite; a pose not rigid within 1e-6 or whose last row is not 0 0 0 1), then nothing
    is solved. Otherwise the whole of :meth:`animkit.ik.IKProblem.solve`'s strategy for lm without restarts runs
    here: the first run (:func:`_lm_one`); with ``relax``, the relaxed-limits retries and, for a pose target, the
    position-first continuation (api._relax); then the reachability test (reason UNREACHABLE)."""
    n = int(prm[_N])
    orient = prm[_ORIENT] != 0.0
    tol, otol, patience, max_iter = prm[_TOL], prm[_OTOL], int(prm[_PATIENCE]), int(prm[_MAX_ITER])
    damping, max_step, win, ratio = prm[_DAMPING], prm[_MAX_STEP], int(prm[_WIN]), prm[_RATIO]
    stall_min, pull, decay, backoff, margin = int(prm[_STALL_MIN]), prm[_PULL], prm[_DECAY], prm[_BACKOFF], \
        prm[_MARGIN]
    o = _HEAD
    Hs = prm[o:o + 60 * n].reshape((n, 3, 20))
    o += 60 * n
    Ce = prm[o:o + 16].reshape((4, 4))
    o += 16
    lo, hi, mid, half = prm[o:o + n], prm[o + n:o + 2 * n], prm[o + 2 * n:o + 3 * n], prm[o + 3 * n:o + 4 * n]
    limited, kappa = prm[o + 4 * n:o + 5 * n], prm[o + 5 * n:o + 6 * n]
    w = prm[o + 6 * n:o + 6 * n + 6]
    base = prm[o + 6 * n + 6:o + 6 * n + 9]
    reach = prm[o + 6 * n + 9]
    p = np.empty(3)
    Rt = np.zeros((3, 3))
    valid = True
    if orient:
        if target.shape[0] != 16:
            valid = False
        else:
            for i in range(3):
                p[i] = target[4 * i + 3]
                for j in range(3):
                    Rt[i, j] = target[4 * i + j]
            valid = math.isfinite(p[0] + p[1] + p[2]) and target[12] == 0.0 and target[13] == 0.0 and \
                target[14] == 0.0 and target[15] == 1.0
            for i in range(3):
                for j in range(i + 1):
                    dot = Rt[i, 0] * Rt[j, 0] + Rt[i, 1] * Rt[j, 1] + Rt[i, 2] * Rt[j, 2]
                    if not abs(dot - (1.0 if i == j else 0.0)) <= 1e-6:
                        valid = False
            det = Rt[0, 0] * (Rt[1, 1] * Rt[2, 2] - Rt[1, 2] * Rt[2, 1]) - \
                Rt[0, 1] * (Rt[1, 0] * Rt[2, 2] - Rt[1, 2] * Rt[2, 0]) + \
                Rt[0, 2] * (Rt[1, 0] * Rt[2, 1] - Rt[1, 1] * Rt[2, 0])
            valid = valid and det > 0.0
    else:
        if target.shape[0] != 3:
            valid = False
        else:
            for i in range(3):
                p[i] = target[i]
            valid = math.isfinite(p[0] + p[1] + p[2])
    out[n + OUT_VALID] = 1.0 if valid else 0.0
    if not valid:
        return
    q = out[:n]
    H = out[n + OUT_HISTORY:]
    pos, ori, it, why = _lm_one(Hs, Ce, lo, hi, mid, half, limited, kappa, q0, p, Rt, orient, w, tol, otol, patience,
                                max_iter, damping, max_step, win, ratio, stall_min, pull, decay, backoff, margin, q, H)
    if why != CONVERGED and prm[_RELAX] != 0.0:
        lo_r, hi_r, mid_r, half_r, lim_r = lo.copy(), hi.copy(), mid.copy(), half.copy(), limited.copy()
        lifted = False
        for j in range(n):
            if math.isfinite(lo[j]) and math.isfinite(hi[j]):
                lo_r[j], hi_r[j], mid_r[j], half_r[j], lim_r[j] = -math.inf, math.inf, 0.0, 1.0, 0.0
                lifted = True
        if lifted:
            pos, ori, it, why = _relax_stages(
                Hs, Ce, lo, hi, mid, half, limited, kappa, lo_r, hi_r, mid_r, half_r, lim_r, base, reach, p, Rt,
                orient, w, tol, otol, patience, max_iter, damping, max_step, win, ratio, stall_min, pull, decay,
                backoff, margin, q0, q, H, pos, ori, it, why)
        for stage in range(2):
            if not (orient and why != CONVERGED and not _beyond(p, base, reach, tol)):
                break
            # position first (api.retry_position_first): the position task alone from the start; then orientation
            # first (api.retry_orientation_first): the position rows weighted down; each followed by the full task
            ws = w.copy()
            if stage == 1:
                for i in range(3):
                    ws[i] *= ORIENTATION_FIRST_WEIGHT
            qu, Hu = np.empty(n), np.empty(max_iter + 1)
            _, _, it_u, _ = _lm_one(Hs, Ce, lo, hi, mid, half, limited, kappa, q0, p, Rt, stage == 1, ws,
                                    tol if stage == 0 else math.inf, math.inf if stage == 0 else otol, patience,
                                    max_iter, damping, max_step, win, ratio, stall_min, pull, decay, backoff, margin,
                                    qu, Hu)
            pos, ori, it, why = _full_task_from(
                Hs, Ce, lo, hi, mid, half, limited, kappa, lifted, lo_r, hi_r, mid_r, half_r, lim_r, base, reach, p, Rt,
                orient, w, tol, otol, patience, max_iter, damping, max_step, win, ratio, stall_min, pull, decay,
                backoff, margin, qu, it_u, q, H, pos, ori, it, why)
        if orient and why != CONVERGED and not _beyond(p, base, reach, tol):
            # the orientation continuation (api.retry_orientation_continuation): R_k = exp((k/K) ω) R_s, position held
            qk, qu, Hu = np.empty(n), np.empty(n), np.empty(max_iter + 1)
            for j in range(n):
                qk[j] = min(max(q0[j], lo[j]), hi[j])
            Ts, Tes, Vs = np.empty((n, 4, 5)), np.empty((4, 4)), np.empty(6)
            chain_forward(qk, Hs, Ce, Ts, Tes, np.empty(20))
            chain_residual(Tes, p, Rt, True, np.ones(6), Vs, np.empty((3, 3)))  # Vs[3:] = ω = log(R_t R_sᵀ)^∨
            for j in range(n):
                qk[j] = q0[j]
            Rk = np.empty((3, 3))
            before = 0
            for k in range(1, ORIENTATION_STAGES):
                _rotated(Vs[3], Vs[4], Vs[5], k / ORIENTATION_STAGES, Tes, Rk)
                _, _, it_k, _ = _lm_one(Hs, Ce, lo, hi, mid, half, limited, kappa, qk, p, Rk, orient, w, tol, otol,
                                        patience, max_iter, damping, max_step, win, ratio, stall_min, pull, decay,
                                        backoff, margin, qu, Hu)
                for j in range(n):
                    qk[j] = qu[j]
                before += it_k
            pos, ori, it, why = _full_task_from(
                Hs, Ce, lo, hi, mid, half, limited, kappa, lifted, lo_r, hi_r, mid_r, half_r, lim_r, base, reach, p, Rt,
                orient, w, tol, otol, patience, max_iter, damping, max_step, win, ratio, stall_min, pull, decay,
                backoff, margin, qk, before, q, H, pos, ori, it, why)
    if why != CONVERGED and (_beyond(p, base, reach, tol) or _stationary(Hs, Ce, q, lo, hi, p, Rt, orient, w)):
        why = UNREACHABLE
    out[n + OUT_POS], out[n + OUT_ORI], out[n + OUT_ITERS], out[n + OUT_REASON] = pos, ori, it, why


_PACKED = kernel(_lm_packed, calls=(_lm_one, _beyond, _stationary, _relax_stages, _full_task_from, _rotated,
                                    chain_forward, chain_residual))


def pack_serial(Hs: Array, Ce: Array, lo: Array, hi: Array, mid: Array, half: Array, limited: NDArray[np.bool_],
                kappa: Array, w: Array, base: Array, reach: float, *, orient: bool, relax: bool, tol: float,
                otol: float, patience: int, max_iter: int,
                damping: float, max_step: float | None, win: int, ratio: float, stall_min: int, pull: float,
                decay: float, backoff: float, margin: float) -> Array:
    """The one parameter array of :func:`lm_packed`: the arguments of :func:`lm_serial` for one chain and one set
    of options (Hs (n, 3, 20): revolute DOFs only; w: 3 or 6 row weights), the chain's base origin and reach (the
    reachability test), and whether lm's retries run (``relax``)."""
    n = len(lo)
    head = np.zeros(_HEAD)
    head[:] = (n, float(orient), tol, otol, patience, max_iter, damping, -1.0 if max_step is None else max_step,
               win, ratio, stall_min, pull, decay, backoff, margin, float(relax))
    w6 = np.ones(6)
    w6[:len(w)] = w
    return np.ascontiguousarray(np.concatenate([
        head, np.asarray(Hs, dtype=float).reshape(-1), np.asarray(Ce, dtype=float).reshape(-1), lo, hi, mid, half,
        np.asarray(limited, dtype=float), kappa, w6, np.asarray(base, dtype=float).reshape(3), [reach]]))


def out_size(n: int, max_iter: int) -> int:
    """Length of :func:`lm_packed`'s output array (the history holds every run of the strategy)."""
    return n + OUT_HISTORY + _RUNS * (max_iter + 1)


def lm_packed(prm: Array, target: Array, q0: Array, out: Array) -> None:
    """Run the compiled loop on one problem with the parameters of :func:`pack_serial`: target (16,) or (3,)
    contiguous float64 (a pose row-major, or a position), q0 (n,), out (:func:`out_size`) written. Needs
    :func:`animkit.jit.enabled`."""
    assert _PACKED is not None
    _PACKED(prm, target, q0, out)


def lm_serial(Hs: Array, Ce: Array, lo: Array, hi: Array, mid: Array, half: Array, limited: NDArray[np.bool_],
              kappa: Array, q0: Array,
              P: Array, R: Array | None, w: Array, *, tol: float, otol: float, patience: int, max_iter: int,
              damping: float, max_step: float | None, win: int, ratio: float, stall_min: int, pull: float,
              decay: float, backoff: float, margin: float, first_success: bool = False
              ) -> tuple[Array, NDArray[np.intp], NDArray[np.intp], Array, Array, Array]:
    """Run the compiled loop on B problems: q0 (B, n), P (B, 3), R (B, 3, 3) or None; the chain's arrays (Hs,
    Ce, lo, hi, mid, half, limited: bool, kappa: the stiffness damping per DOF, w) contiguous float64.

    Returns q (B, n), iterations (B,), reason codes (B,: 0 converged, 1 stalled, 2 max_iterations), position and
    orientation errors (B,), and the residual history (max iterations + 1, B), each problem's value held after it
    finished. With ``first_success`` the problems after the first that converges are not run (their errors are
    inf). Needs :func:`animkit.jit.enabled`.
    """
    assert _KERNEL is not None
    return call_loop(_KERNEL, first_success, Hs, Ce, lo, hi, mid, half, limited, kappa, q0, P, R, w, tol=tol,
                     otol=otol, patience=patience, max_iter=max_iter, damping=damping, max_step=max_step, win=win,
                     ratio=ratio, stall_min=stall_min, pull=pull, decay=decay, backoff=backoff, margin=margin)


def call_loop(loop: Callable[..., None], flag: bool, Hs: Array, Ce: Array, lo: Array, hi: Array, mid: Array,
              half: Array, limited: NDArray[np.bool_], kappa: Array, q0: Array, P: Array, R: Array | None, w: Array,
              *, tol: float, otol: float, patience: int, max_iter: int, damping: float, max_step: float | None,
              win: int, ratio: float, stall_min: int, pull: float, decay: float, backoff: float, margin: float,
              restart: tuple[int, int, float, int] | None = None, tries: NDArray[np.intp] | None = None
              ) -> tuple[Array, NDArray[np.intp], NDArray[np.intp], Array, Array, Array]:
    """Call a compiled lm loop over B problems (lm_serial's or the lanes' kernel; ``flag``: its one switch,
    ``first_success`` or ``poly``) with fresh outputs: q (B, n), iterations, reason codes, position and orientation
    errors (B,) and the residual history trimmed to the longest run. The lanes' kernel also takes ``restart``
    (restarts, seed, μ₀ of a restart, the first problem's index) and fills ``tries`` (B,): the random starts each
    problem ran."""
    B, n = q0.shape
    orient = R is not None
    Rk = np.ascontiguousarray(R, dtype=float) if R is not None else np.zeros((B, 3, 3))
    # the chain's constants (Hs, Ce, lo, hi, mid, half, limited, w) come contiguous from the caller, prepared once
    # per chain (a conversion per call costs about a microsecond each on small arrays)
    q_out = np.empty((B, n))
    iters = np.zeros(B, dtype=np.intp)
    reason = np.zeros(B, dtype=np.intp)
    pos, ori = np.empty(B), np.empty(B)
    # (max_iter + 1, B) with each problem's column contiguous: a run fills its own column to the end (row-major, a
    # column's writes a page apart cost ~1 µs a problem)
    history = np.empty((B, max_iter + 1)).T
    args = (Hs, Ce, lo, hi, mid, half, limited, kappa, np.ascontiguousarray(q0, dtype=float),
            np.ascontiguousarray(P, dtype=float), Rk, orient, w, float(tol), float(otol), int(patience), int(max_iter),
            float(damping), -1.0 if max_step is None else float(max_step), int(win), float(ratio), int(stall_min),
            float(pull), float(decay), float(backoff), float(margin), bool(flag))
    if restart is None:
        loop(*args, q_out, iters, reason, pos, ori, history)
    else:
        restarts, seed, r_pull, index0 = restart
        loop(*args, int(restarts), int(seed), float(r_pull), int(index0), q_out, iters, reason, pos, ori, history,
             np.zeros(B, dtype=np.intp) if tries is None else tries)
    rows = int(iters.max()) + 1 if B else 1
    return q_out, iters, reason, pos, ori, history[:rows]


def packed_entry() -> Callable[..., None] | None:
    """:func:`lm_packed`'s compiled loop itself once it has run in this process (numba's dispatcher: no checks
    around it, for a hot loop of single solves), else None. Callers check :data:`animkit.jit.ENABLED` before each
    use (tests turn the compiled paths off)."""
    k = _PACKED
    if not isinstance(k, jit.Kernel) or not k.ready or not jit.enabled():
        return None
    entry: Callable[..., None] = k.compiled()
    return entry


def warm_up() -> None:
    """Compile (or load from numba's disk cache) the loop now, e.g. before timing; nothing when numba is off."""
    if _KERNEL is not None and jit.enabled():
        lm_serial(np.zeros((1, 3, 20)), np.eye(4), np.full(1, -1.0), np.ones(1), np.zeros(1), np.ones(1),
                  np.ones(1, dtype=np.bool_), np.zeros(1), np.zeros((1, 1)), np.ones((1, 3)), np.eye(3)[None],
                  np.ones(6),
                  tol=1e-5, otol=1e-4, patience=12, max_iter=1, damping=1.0, max_step=None, win=0, ratio=0.5,
                  stall_min=10, pull=1.0, decay=0.95, backoff=0.1, margin=0.05)
        prm = pack_serial(np.zeros((1, 3, 20)), np.eye(4), np.full(1, -1.0), np.ones(1), np.zeros(1), np.ones(1),
                          np.ones(1, dtype=np.bool_), np.zeros(1), np.ones(6), np.zeros(3), 1.0, orient=True,
                          relax=True, tol=1e-5, otol=1e-4,
                          patience=12, max_iter=1, damping=1.0, max_step=None, win=0, ratio=0.5, stall_min=10,
                          pull=1.0, decay=0.95, backoff=0.1, margin=0.05)
        lm_packed(prm, np.eye(4).reshape(-1), np.zeros(1), np.empty(out_size(1, 1)))
