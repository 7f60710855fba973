"""The default solver's loop (:mod:`.lm_jit`) for many problems at once: problems in lock-step SIMD lanes.

    θ_j = m_j + h_j sin φ_j,   (J_φᵀ W² J_φ + λI + μ_k D) Δφ = J_φᵀ W² V − μ_k D φ,   μ_k = μ₀ γᵏ βʳ min(1, ‖WV‖²)

The same iteration, acceptance and stopping rules as :func:`~animkit.ik.lm_jit._lm_serial`, with the same
floating-point operations in the same order (a problem gets the same bits whichever path solves it), laid out for
SIMD: ``LANES`` problems iterate together, every array holds the lane index innermost (structure of arrays:
frames (n, 3, 5, LANES), J (n, m, LANES), A (n, n, LANES)), so the loops of forward kinematics, the Jacobian, the
normal equations and the Cholesky solve run across problems and LLVM turns them into vector instructions (AVX2:
four doubles at a time; the scalar loop's sums are dependent chains, the lanes' are independent). Each lane keeps
its own damping, pull, stall window and counters; a step is accepted or rejected per lane (a select); a lane whose
problem converged, stalled or ran out of iterations writes its answer and takes the next problem at once, so the
lanes stay full until the last problems. Nothing is allocated per iteration. Used by :func:`~animkit.ik.lm.run_lm`
for batches when :func:`animkit.jit.enabled`; the residual (a rotation's log, with its branches near π) runs lane by
lane.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .. import jit
from ..jit import kernel
from .constants import GAIN_ABS, GAIN_REL, LAMBDA_DOWN, LAMBDA_MAX, LAMBDA_MIN, LAMBDA_UP
from .lm_jit import _phi, _theta, call_loop, chain_forward, chain_residual, log_vee
from .poly_trig import sincos, wrap_sincos

__all__ = ["LANES", "lm_lanes", "restart_start", "lanes_fit", "warm_up", "forward_lanes", "solve_spd_lanes"]

Array = NDArray[np.float64]

LANES = 8  # problems per lock-step block: two AVX2 vectors of doubles (one AVX-512 vector)
CONVERGED, STALLED, MAX_ITERATIONS = 0, 1, 2


# Every loop across lanes below is written as groups of four adjacent lanes, loads before stores: LLVM's SLP
# vectoriser packs each group into one AVX2 instruction (a loop over lanes is unrolled before the loop vectoriser
# sees it, and its stores may alias its loads as far as LLVM can tell, which keeps it scalar).


def forward_lanes(q: Array, Hs: Array, Ce: Array, T: Array, Te: Array, loc: Array, sn: Array, cn: Array,
             live: NDArray[np.bool_], poly: bool) -> None:
    """Every lane: T[k] (rows 0–2 of the 4×5 frame) = T[k−1] · ([1, sin θ_k, 1 − cos θ_k] · Hs[k]) and
    Te (3×4) = T[n−1] · Ce. q (n, L); T (n, 3, 5, L); Te (3, 4, L); loc (15, L), sn, cn (L,): scratch. The sines
    and cosines: ``poly``, :func:`.poly_trig.sincos` on every lane, four at a time (vectorised); otherwise library
    calls, lane by lane, for the lanes that hold a problem (``live``) only.

    The frames' last row is [0, 0, 0, 1 | 0] (rigid links, checked by :func:`lanes_fit`): of lm_jit's fourth term
    T[k−1, i, 3] · loc[15 + j] only j = 3's (· 1) is kept; the others add a zero, which changes no bit."""
    n = q.shape[0]
    for k in range(n):
        if poly:
            for g in range(0, LANES, 4):
                s0, c0 = sincos(q[k, g])
                s1, c1 = sincos(q[k, g + 1])
                s2, c2 = sincos(q[k, g + 2])
                s3, c3 = sincos(q[k, g + 3])
                sn[g], sn[g + 1], sn[g + 2], sn[g + 3] = s0, s1, s2, s3
                cn[g], cn[g + 1], cn[g + 2], cn[g + 3] = 1.0 - c0, 1.0 - c1, 1.0 - c2, 1.0 - c3
        else:
            for lane in range(LANES):
                if live[lane]:
                    sn[lane] = math.sin(q[k, lane])
                    cn[lane] = 1.0 - math.cos(q[k, lane])
        for idx in range(15):
            h0, h1, h2 = Hs[k, 0, idx], Hs[k, 1, idx], Hs[k, 2, idx]
            for g in range(0, LANES, 4):
                s0, s1, s2, s3 = sn[g], sn[g + 1], sn[g + 2], sn[g + 3]
                c0, c1, c2, c3 = cn[g], cn[g + 1], cn[g + 2], cn[g + 3]
                loc[idx, g] = h0 + s0 * h1 + c0 * h2
                loc[idx, g + 1] = h0 + s1 * h1 + c1 * h2
                loc[idx, g + 2] = h0 + s2 * h1 + c2 * h2
                loc[idx, g + 3] = h0 + s3 * h1 + c3 * h2
        if k == 0:
            for i in range(3):
                for j in range(5):
                    for lane in range(LANES):
                        T[0, i, j, lane] = loc[5 * i + j, lane]
            continue
        for i in range(3):
            for g in range(0, LANES, 4):
                a0, a1, a2, a3 = T[k - 1, i, 0, g], T[k - 1, i, 0, g + 1], T[k - 1, i, 0, g + 2], T[k - 1, i, 0, g + 3]
                b0, b1, b2, b3 = T[k - 1, i, 1, g], T[k - 1, i, 1, g + 1], T[k - 1, i, 1, g + 2], T[k - 1, i, 1, g + 3]
                c0, c1, c2, c3 = T[k - 1, i, 2, g], T[k - 1, i, 2, g + 1], T[k - 1, i, 2, g + 2], T[k - 1, i, 2, g + 3]
                t0, t1, t2, t3 = T[k - 1, i, 3, g], T[k - 1, i, 3, g + 1], T[k - 1, i, 3, g + 2], T[k - 1, i, 3, g + 3]
                for j in range(5):
                    x0 = a0 * loc[j, g] + b0 * loc[5 + j, g] + c0 * loc[10 + j, g]
                    x1 = a1 * loc[j, g + 1] + b1 * loc[5 + j, g + 1] + c1 * loc[10 + j, g + 1]
                    x2 = a2 * loc[j, g + 2] + b2 * loc[5 + j, g + 2] + c2 * loc[10 + j, g + 2]
                    x3 = a3 * loc[j, g + 3] + b3 * loc[5 + j, g + 3] + c3 * loc[10 + j, g + 3]
                    if j == 3:
                        x0, x1, x2, x3 = x0 + t0, x1 + t1, x2 + t2, x3 + t3
                    T[k, i, j, g], T[k, i, j, g + 1], T[k, i, j, g + 2], T[k, i, j, g + 3] = x0, x1, x2, x3
    for i in range(3):
        for j in range(4):
            c0, c1, c2, c3 = Ce[0, j], Ce[1, j], Ce[2, j], Ce[3, j]
            for lane in range(LANES):
                Te[i, j, lane] = T[n - 1, i, 0, lane] * c0 + T[n - 1, i, 1, lane] * c1 + \
                    T[n - 1, i, 2, lane] * c2 + T[n - 1, i, 3, lane] * c3


forward_lanes = kernel(forward_lanes, calls=(sincos,), error_model="numpy", slp=True) or forward_lanes


def _residual(Te: Array, PL: Array, RL: Array, orient: bool, w: Array, V: Array, D: Array, pos: Array, ori: Array,
              e: Array, live: NDArray[np.bool_]) -> None:
    """Every lane: V (6, L) = W [p − e, log(R_t R_cᵀ)^∨] (rows 3–5 left at 0 without orientation), pos = ‖p − e‖,
    ori = ‖ω‖, e = ‖WV‖: lm_jit.chain_residual's operations. PL (3, L), RL (3, 3, L): each lane's target; D (3, 3,
    L): scratch. The rotation's log (:func:`~animkit.ik.lm_jit.log_vee`: atan2, and its branch near π) runs lane by
    lane, for the lanes that hold a problem (``live``)."""
    m = w.shape[0]
    for lane in range(LANES):
        vx = PL[0, lane] - Te[0, 3, lane]
        vy = PL[1, lane] - Te[1, 3, lane]
        vz = PL[2, lane] - Te[2, 3, lane]
        pos[lane] = math.sqrt(vx * vx + vy * vy + vz * vz)
        V[0, lane], V[1, lane], V[2, lane] = vx, vy, vz
    if orient:
        for i in range(3):
            for j in range(3):
                for lane in range(LANES):
                    D[i, j, lane] = RL[i, 0, lane] * Te[j, 0, lane] + RL[i, 1, lane] * Te[j, 1, lane] + \
                        RL[i, 2, lane] * Te[j, 2, lane]
        for lane in range(LANES):
            if not live[lane]:
                continue
            ox, oy, oz = log_vee(D[:, :, lane])
            V[3, lane], V[4, lane], V[5, lane] = ox, oy, oz
            ori[lane] = math.sqrt(ox * ox + oy * oy + oz * oz)
    else:
        for lane in range(LANES):
            ori[lane] = 0.0
    for lane in range(LANES):
        e2 = 0.0
        for i in range(m):
            V[i, lane] *= w[i]
            e2 += V[i, lane] * V[i, lane]
        e[lane] = math.sqrt(e2)


_residual = kernel(_residual, calls=(log_vee,), error_model="numpy", slp=True) or _residual


def _theta_lanes(phi: Array, mid: Array, half: Array, limited: Array, lo: Array, hi: Array, q: Array,
                 sphi: Array, live: NDArray[np.bool_], poly: bool, pw: Array, cw: Array) -> None:
    """Every lane: θ = m + h sin φ (limited DOFs; θ = φ otherwise), clipped into [lo, hi]; sphi = sin φ. Without
    ``poly`` the library's sine for the ``live`` lanes (kept for φ's wrap, asin(sin φ), which needs the same sine);
    with ``poly`` :func:`.poly_trig.wrap_sincos` on every lane, four at a time, which also gives the wrapped φ (pw)
    and its cosine (cw)."""
    for j in range(phi.shape[0]):
        a, b = lo[j], hi[j]
        if limited[j] and poly:
            for g in range(0, LANES, 4):
                p0, s0, c0 = wrap_sincos(phi[j, g])
                p1, s1, c1 = wrap_sincos(phi[j, g + 1])
                p2, s2, c2 = wrap_sincos(phi[j, g + 2])
                p3, s3, c3 = wrap_sincos(phi[j, g + 3])
                sphi[j, g], sphi[j, g + 1], sphi[j, g + 2], sphi[j, g + 3] = s0, s1, s2, s3
                pw[j, g], pw[j, g + 1], pw[j, g + 2], pw[j, g + 3] = p0, p1, p2, p3
                cw[j, g], cw[j, g + 1], cw[j, g + 2], cw[j, g + 3] = c0, c1, c2, c3
        elif limited[j]:
            for lane in range(LANES):
                if live[lane]:
                    sphi[j, lane] = math.sin(phi[j, lane])
        if limited[j]:
            m, h = mid[j], half[j]
            for lane in range(LANES):
                q[j, lane] = min(max(m + h * sphi[j, lane], a), b)
        else:
            for lane in range(LANES):
                q[j, lane] = min(max(phi[j, lane], a), b)


_theta_lanes = kernel(_theta_lanes, calls=(wrap_sincos,), error_model="numpy", slp=True) or _theta_lanes


def _normal_equations(J: Array, V: Array, lam: Array, mu: Array, limited: Array, phi: Array, jitter: Array,
                      kappa: Array, A: Array, rhs: Array, trace: Array) -> None:
    """Every lane: the lower triangle of A = J_φᵀJ_φ + diag(λ(1 + κ) + μD + jitter), rhs = J_φᵀV − μDφ, trace A
    (lm_jit._normal_equations' sums in its order; J (n, 6, L) and V (6, L) hold zero rows 3–5 without
    orientation, which add zeros)."""
    n = J.shape[0]
    for lane in range(LANES):
        trace[lane] = 0.0
    for i in range(n):
        for g in range(0, LANES, 4):
            x0, x1, x2, x3 = J[i, 0, g] * V[0, g], J[i, 0, g + 1] * V[0, g + 1], J[i, 0, g + 2] * V[0, g + 2], \
                J[i, 0, g + 3] * V[0, g + 3]
            for t in range(1, 6):
                x0 += J[i, t, g] * V[t, g]
                x1 += J[i, t, g + 1] * V[t, g + 1]
                x2 += J[i, t, g + 2] * V[t, g + 2]
                x3 += J[i, t, g + 3] * V[t, g + 3]
            rhs[i, g], rhs[i, g + 1], rhs[i, g + 2], rhs[i, g + 3] = x0, x1, x2, x3
        for j in range(i + 1):
            for g in range(0, LANES, 4):
                x0, x1, x2, x3 = J[i, 0, g] * J[j, 0, g], J[i, 0, g + 1] * J[j, 0, g + 1], \
                    J[i, 0, g + 2] * J[j, 0, g + 2], J[i, 0, g + 3] * J[j, 0, g + 3]
                for t in range(1, 6):
                    x0 += J[i, t, g] * J[j, t, g]
                    x1 += J[i, t, g + 1] * J[j, t, g + 1]
                    x2 += J[i, t, g + 2] * J[j, t, g + 2]
                    x3 += J[i, t, g + 3] * J[j, t, g + 3]
                A[i, j, g], A[i, j, g + 1], A[i, j, g + 2], A[i, j, g + 3] = x0, x1, x2, x3
        ki = kappa[i]
        if limited[i]:
            for lane in range(LANES):
                A[i, i, lane] += lam[lane] * (1.0 + ki) + mu[lane] + jitter[lane]
                rhs[i, lane] = rhs[i, lane] - mu[lane] * phi[i, lane]
                trace[lane] += A[i, i, lane]
        else:
            for lane in range(LANES):
                A[i, i, lane] += lam[lane] * (1.0 + ki) + jitter[lane]
                rhs[i, lane] = rhs[i, lane] - 0.0 * phi[i, lane]
                trace[lane] += A[i, i, lane]


_normal_equations = kernel(_normal_equations, error_model="numpy", slp=True) or _normal_equations


def solve_spd_lanes(A: Array, b: Array, x: Array, bad: Array) -> None:
    """Every lane: x = A⁻¹ b by Cholesky of A's lower triangle (overwritten by its factor); bad[lane] = 1 where A is
    not positive definite (that lane's x is then meaningless).

    lm_jit.solve_spd's operations in its order (L_ij = (A_ij − Σ_t L_it L_jt) / L_jj, t = 0, 1, …: the same bits),
    the column below the diagonal all eight lanes and four rows i at a time (they share the loads of row j; their
    32 sums run in registers, eight vectors, enough to hide the subtractions' latency); the diagonal and the two
    triangular solves all eight lanes at a time."""
    n = A.shape[0]
    for lane in range(LANES):
        bad[lane] = 0.0
    for j in range(n):
        s0, s1, s2, s3 = A[j, j, 0], A[j, j, 1], A[j, j, 2], A[j, j, 3]
        s4, s5, s6, s7 = A[j, j, 4], A[j, j, 5], A[j, j, 6], A[j, j, 7]
        for t in range(j):
            s0 -= A[j, t, 0] * A[j, t, 0]
            s1 -= A[j, t, 1] * A[j, t, 1]
            s2 -= A[j, t, 2] * A[j, t, 2]
            s3 -= A[j, t, 3] * A[j, t, 3]
            s4 -= A[j, t, 4] * A[j, t, 4]
            s5 -= A[j, t, 5] * A[j, t, 5]
            s6 -= A[j, t, 6] * A[j, t, 6]
            s7 -= A[j, t, 7] * A[j, t, 7]
        A[j, j, 0], A[j, j, 1], A[j, j, 2], A[j, j, 3] = \
            s0, s1, s2, s3
        A[j, j, 4], A[j, j, 5], A[j, j, 6], A[j, j, 7] = \
            s4, s5, s6, s7
        for lane in range(LANES):
            s = A[j, j, lane]
            good = s > 0.0
            bad[lane] = bad[lane] if good else 1.0
            A[j, j, lane] = math.sqrt(s) if good else 1.0
        # all eight lanes (two vectors) and four rows i at a time: eight independent sums in registers, which
        # hides the subtraction's latency (the same operations in the same order per lane: the same bits)
        d0, d1, d2, d3 = A[j, j, 0], A[j, j, 1], A[j, j, 2], A[j, j, 3]
        d4, d5, d6, d7 = A[j, j, 4], A[j, j, 5], A[j, j, 6], A[j, j, 7]
        i = j + 1
        while i + 3 < n:  # four rows at a time
            x0, x1, x2, x3 = A[i, j, 0], A[i, j, 1], A[i, j, 2], A[i, j, 3]
            x4, x5, x6, x7 = A[i, j, 4], A[i, j, 5], A[i, j, 6], A[i, j, 7]
            y0, y1, y2, y3 = A[i + 1, j, 0], A[i + 1, j, 1], A[i + 1, j, 2], A[i + 1, j, 3]
            y4, y5, y6, y7 = A[i + 1, j, 4], A[i + 1, j, 5], A[i + 1, j, 6], A[i + 1, j, 7]
            z0, z1, z2, z3 = A[i + 2, j, 0], A[i + 2, j, 1], A[i + 2, j, 2], A[i + 2, j, 3]
            z4, z5, z6, z7 = A[i + 2, j, 4], A[i + 2, j, 5], A[i + 2, j, 6], A[i + 2, j, 7]
            u0, u1, u2, u3 = A[i + 3, j, 0], A[i + 3, j, 1], A[i + 3, j, 2], A[i + 3, j, 3]
            u4, u5, u6, u7 = A[i + 3, j, 4], A[i + 3, j, 5], A[i + 3, j, 6], A[i + 3, j, 7]
            for t in range(j):
                b0, b1, b2, b3 = A[j, t, 0], A[j, t, 1], A[j, t, 2], A[j, t, 3]
                b4, b5, b6, b7 = A[j, t, 4], A[j, t, 5], A[j, t, 6], A[j, t, 7]
                x0 -= A[i, t, 0] * b0
                x1 -= A[i, t, 1] * b1
                x2 -= A[i, t, 2] * b2
                x3 -= A[i, t, 3] * b3
                x4 -= A[i, t, 4] * b4
                x5 -= A[i, t, 5] * b5
                x6 -= A[i, t, 6] * b6
                x7 -= A[i, t, 7] * b7
                y0 -= A[i + 1, t, 0] * b0
                y1 -= A[i + 1, t, 1] * b1
                y2 -= A[i + 1, t, 2] * b2
                y3 -= A[i + 1, t, 3] * b3
                y4 -= A[i + 1, t, 4] * b4
                y5 -= A[i + 1, t, 5] * b5
                y6 -= A[i + 1, t, 6] * b6
                y7 -= A[i + 1, t, 7] * b7
                z0 -= A[i + 2, t, 0] * b0
                z1 -= A[i + 2, t, 1] * b1
                z2 -= A[i + 2, t, 2] * b2
                z3 -= A[i + 2, t, 3] * b3
                z4 -= A[i + 2, t, 4] * b4
                z5 -= A[i + 2, t, 5] * b5
                z6 -= A[i + 2, t, 6] * b6
                z7 -= A[i + 2, t, 7] * b7
                u0 -= A[i + 3, t, 0] * b0
                u1 -= A[i + 3, t, 1] * b1
                u2 -= A[i + 3, t, 2] * b2
                u3 -= A[i + 3, t, 3] * b3
                u4 -= A[i + 3, t, 4] * b4
                u5 -= A[i + 3, t, 5] * b5
                u6 -= A[i + 3, t, 6] * b6
                u7 -= A[i + 3, t, 7] * b7
            A[i, j, 0], A[i, j, 1], A[i, j, 2], A[i, j, 3] = x0 / d0, x1 / d1, x2 / d2, x3 / d3
            A[i, j, 4], A[i, j, 5], A[i, j, 6], A[i, j, 7] = x4 / d4, x5 / d5, x6 / d6, x7 / d7
            A[i + 1, j, 0], A[i + 1, j, 1], A[i + 1, j, 2], A[i + 1, j, 3] = y0 / d0, y1 / d1, y2 / d2, y3 / d3
            A[i + 1, j, 4], A[i + 1, j, 5], A[i + 1, j, 6], A[i + 1, j, 7] = y4 / d4, y5 / d5, y6 / d6, y7 / d7
            A[i + 2, j, 0], A[i + 2, j, 1], A[i + 2, j, 2], A[i + 2, j, 3] = z0 / d0, z1 / d1, z2 / d2, z3 / d3
            A[i + 2, j, 4], A[i + 2, j, 5], A[i + 2, j, 6], A[i + 2, j, 7] = z4 / d4, z5 / d5, z6 / d6, z7 / d7
            A[i + 3, j, 0], A[i + 3, j, 1], A[i + 3, j, 2], A[i + 3, j, 3] = u0 / d0, u1 / d1, u2 / d2, u3 / d3
            A[i + 3, j, 4], A[i + 3, j, 5], A[i + 3, j, 6], A[i + 3, j, 7] = u4 / d4, u5 / d5, u6 / d6, u7 / d7
            i += 4
        while i < n:  # the last rows one at a time
            x0, x1, x2, x3 = A[i, j, 0], A[i, j, 1], A[i, j, 2], A[i, j, 3]
            x4, x5, x6, x7 = A[i, j, 4], A[i, j, 5], A[i, j, 6], A[i, j, 7]
            for t in range(j):
                b0, b1, b2, b3 = A[j, t, 0], A[j, t, 1], A[j, t, 2], A[j, t, 3]
                b4, b5, b6, b7 = A[j, t, 4], A[j, t, 5], A[j, t, 6], A[j, t, 7]
                x0 -= A[i, t, 0] * b0
                x1 -= A[i, t, 1] * b1
                x2 -= A[i, t, 2] * b2
                x3 -= A[i, t, 3] * b3
                x4 -= A[i, t, 4] * b4
                x5 -= A[i, t, 5] * b5
                x6 -= A[i, t, 6] * b6
                x7 -= A[i, t, 7] * b7
            A[i, j, 0], A[i, j, 1], A[i, j, 2], A[i, j, 3] = x0 / d0, x1 / d1, x2 / d2, x3 / d3
            A[i, j, 4], A[i, j, 5], A[i, j, 6], A[i, j, 7] = x4 / d4, x5 / d5, x6 / d6, x7 / d7
            i += 1
    for i in range(n):  # L y = b, row by row (t = 0, …, i − 1 in order; row i of L is contiguous), all eight lanes
        s0, s1, s2, s3 = b[i, 0], b[i, 1], b[i, 2], b[i, 3]
        s4, s5, s6, s7 = b[i, 4], b[i, 5], b[i, 6], b[i, 7]
        for t in range(i):
            s0 -= A[i, t, 0] * x[t, 0]
            s1 -= A[i, t, 1] * x[t, 1]
            s2 -= A[i, t, 2] * x[t, 2]
            s3 -= A[i, t, 3] * x[t, 3]
            s4 -= A[i, t, 4] * x[t, 4]
            s5 -= A[i, t, 5] * x[t, 5]
            s6 -= A[i, t, 6] * x[t, 6]
            s7 -= A[i, t, 7] * x[t, 7]
        x[i, 0], x[i, 1], x[i, 2], x[i, 3] = \
            s0 / A[i, i, 0], s1 / A[i, i, 1], s2 / A[i, i, 2], s3 / A[i, i, 3]
        x[i, 4], x[i, 5], x[i, 6], x[i, 7] = \
            s4 / A[i, i, 4], s5 / A[i, i, 5], s6 / A[i, i, 6], s7 / A[i, i, 7]
    for i in range(n - 1, -1, -1):  # Lᵀ x = y, row by row (t = i + 1, …, n − 1 in order)
        s0, s1, s2, s3 = x[i, 0], x[i, 1], x[i, 2], x[i, 3]
        s4, s5, s6, s7 = x[i, 4], x[i, 5], x[i, 6], x[i, 7]
        for t in range(i + 1, n):
            s0 -= A[t, i, 0] * x[t, 0]
            s1 -= A[t, i, 1] * x[t, 1]
            s2 -= A[t, i, 2] * x[t, 2]
            s3 -= A[t, i, 3] * x[t, 3]
            s4 -= A[t, i, 4] * x[t, 4]
            s5 -= A[t, i, 5] * x[t, 5]
            s6 -= A[t, i, 6] * x[t, 6]
            s7 -= A[t, i, 7] * x[t, 7]
        x[i, 0], x[i, 1], x[i, 2], x[i, 3] = \
            s0 / A[i, i, 0], s1 / A[i, i, 1], s2 / A[i, i, 2], s3 / A[i, i, 3]
        x[i, 4], x[i, 5], x[i, 6], x[i, 7] = \
            s4 / A[i, i, 4], s5 / A[i, i, 5], s6 / A[i, i, 6], s7 / A[i, i, 7]


solve_spd_lanes = kernel(solve_spd_lanes, error_model="numpy", slp=True) or solve_spd_lanes


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)


def _splitmix(z: np.uint64) -> np.uint64:
    """z ← z + φ·2⁶⁴; z ← (z ⊕ z≫30)·c₁; z ← (z ⊕ z≫27)·c₂; z ⊕ z≫31 (SplitMix64's finaliser, mod 2⁶⁴)."""
    z = z + _GOLDEN
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


_splitmix = kernel(_splitmix) or _splitmix


def restart_start(seed: int, b: int, a: int, q0: Array, lo: Array, hi: Array,
                  limited: NDArray[np.bool_] | Array, out: Array) -> None:
    """θ_j = lo_j + u_j (hi_j − lo_j) for limited DOFs, θ0_j + (2u_j − 1)π otherwise (radians; scene units for
    an unlimited slider), u_j = h(seed, b, a, j)/2⁶⁴ by SplitMix64: attempt ``a`` ≥ 1's random start for problem
    ``b`` (``q0``: its given start), a pure function of (seed, b, a, j) — the same whichever lane, order or path
    (compiled lanes, NumPy rounds, a single solve's restarts: problem 0) draws it. Scalar unsigned arithmetic,
    wrapping mod 2⁶⁴ (NumPy warns of the wrap where this runs uncompiled: callers silence it)."""
    z = _splitmix(_splitmix(_splitmix(np.uint64(seed)) + np.uint64(b)) + np.uint64(a))
    for j in range(q0.shape[0]):
        u = np.float64(_splitmix(z + np.uint64(j)) >> _S11) * (1.0 / 9007199254740992.0)
        out[j] = lo[j] + u * (hi[j] - lo[j]) if limited[j] else q0[j] + (2.0 * u - 1.0) * math.pi


restart_start = kernel(restart_start, calls=(_splitmix,)) or restart_start


# complexity: a numba kernel: the whole LM loop flat, with no calls in the hot path
def _lm_lanes(Hs: Array, Ce: Array, lo: Array, hi: Array, mid: Array, half: Array, limited: Array,  # noqa: C901
              kappa: Array,
              q0: Array, P: Array, R: Array, orient: bool, w: Array, tol: float, otol: float, patience: int,
              max_iter: int, damping: float, max_step: float, win: int, ratio: float, stall_min: int, pull: float,
              decay_rate: float, backoff: float, margin: float, poly: bool, restarts: int, seed: int,
              r_pull: float, index0: int, q_out: Array, iters: Array, reason: Array, pos_out: Array, ori_out: Array,
              history: Array, tries: Array) -> None:
    B, n = q0.shape
    L = LANES
    # the state of every lane (zeros: lanes without a problem compute on harmless numbers)
    T, Tn = np.zeros((n, 3, 5, L)), np.zeros((n, 3, 5, L))
    Te, Ten = np.zeros((3, 4, L)), np.zeros((3, 4, L))
    V, Vn = np.zeros((6, L)), np.zeros((6, L))
    # one problem's start (lm_jit's layout)
    T1, Te1, V1, D1 = np.zeros((n, 4, 5)), np.zeros((4, 4)), np.zeros(w.shape[0]), np.zeros((3, 3))
    qs1, q1, phi1, loc1 = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(20)
    Te0, cq, cphi1, cached = np.zeros((4, 4)), np.zeros(n), np.zeros(n), False  # the last start's (see below)
    J = np.zeros((n, 6, L))
    A = np.zeros((n, n, L))
    rhs, d = np.zeros((n, L)), np.zeros((n, L))
    qs, q, qn = np.zeros((n, L)), np.zeros((n, L)), np.zeros((n, L))
    phi, phin, cphi, sphi = np.zeros((n, L)), np.zeros((n, L)), np.zeros((n, L)), np.zeros((n, L))
    pw, cw = np.zeros((n, L)), np.zeros((n, L))
    PL, RL = np.zeros((3, L)), np.zeros((3, 3, L))
    es = np.zeros((max_iter + 1, L))  # ‖WV‖ after each iteration, per lane
    loc, sn, cn = np.zeros((15, L)), np.zeros(L), np.zeros(L)
    trace, bad, jitter = np.zeros(L), np.zeros(L), np.zeros(L)
    D = np.zeros((3, 3, L))
    job = np.full(L, -1, dtype=np.intp)  # the problem in each lane; −1: none
    pos, ori, e = np.zeros(L), np.zeros(L), np.zeros(L)
    pos0, ori0, e0 = np.zeros(L), np.zeros(L), np.zeros(L)
    pos_n, ori_n, e_n = np.zeros(L), np.zeros(L), np.zeros(L)
    lam, ps, decay, mu = np.zeros(L), np.zeros(L), np.zeros(L), np.zeros(L)
    ok, live = np.zeros(L, dtype=np.bool_), np.zeros(L, dtype=np.bool_)
    flat, it = np.zeros(L, dtype=np.intp), np.zeros(L, dtype=np.intp)
    att, pl = np.zeros(L, dtype=np.intp), np.zeros(L)  # each lane's attempt (0: the given start) and its μ₀
    # each problem's returned error and attempt so far, its lowest converged attempt (restarts + 1: none), its next
    # attempt; problems waiting for their next random start (a ring: each is in it at most once)
    best, best_a = np.zeros(B), np.zeros(B, dtype=np.intp)
    first_ok, next_a = np.full(B, restarts + 1, dtype=np.intp), np.zeros(B, dtype=np.intp)
    queue, queued = np.zeros(max(B, 1), dtype=np.intp), np.zeros(B, dtype=np.bool_)
    q_head = q_tail = 0
    nxt = 0
    while True:
        # lanes whose problem is done write its answer and take the next problem: its start by lm_jit's own
        # one-problem functions (the same operations), copied into the lane
        running = 0
        for lane in range(L):
            while True:
                b = job[lane]
                if b >= 0:
                    a = att[lane]
                    if a > first_ok[b]:  # a lower attempt of this problem converged: this one cannot be returned
                        job[lane] = -1
                    else:
                        k = it[lane]
                        el = e[lane]
                        done = pos[lane] <= tol and ori[lane] <= otol
                        stalled = lam[lane] > LAMBDA_MAX or flat[lane] >= patience or \
                            (win > 0 and k >= max(win, stall_min) and el > ratio * es[k - win, lane])
                        if not (done or stalled or k == max_iter):
                            running += 1
                            break
                        back = (not done) and el >= e0[lane]
                        ef = e0[lane] if back else el
                        # returned: the lowest converged attempt, else the lowest error (the lower attempt on a tie)
                        if a == 0 or done or (first_ok[b] > restarts and
                                              (ef < best[b] or (ef == best[b] and a < best_a[b]))):
                            best[b], best_a[b] = ef, a
                            for j in range(n):
                                q_out[b, j] = qs[j, lane] if back else q[j, lane]
                            pos_out[b] = pos0[lane] if back else pos[lane]
                            ori_out[b] = ori0[lane] if back else ori[lane]
                            history[0, b] = e0[lane]  # then the returned pose's: the start's unless beaten
                            for r in range(1, k):
                                history[r, b] = min(es[r, lane], e0[lane])
                            for r in range(k, history.shape[0]):
                                history[r, b] = ef
                            iters[b] = k
                            reason[b] = CONVERGED if done else STALLED if stalled else MAX_ITERATIONS
                        if done:
                            first_ok[b] = a
                        elif first_ok[b] > restarts and next_a[b] <= restarts and not queued[b]:
                            queue[q_tail % B], queued[b] = b, True
                            q_tail += 1
                        job[lane] = -1
                # take work: a problem's next random start first (hard problems start early), else a new problem
                b, a = -1, 0
                while q_head < q_tail:
                    c = queue[q_head % B]
                    q_head += 1
                    queued[c] = False
                    if first_ok[c] <= restarts or next_a[c] > restarts:
                        continue  # converged, or its last start is out already
                    b, a = c, next_a[c]
                    next_a[c] += 1
                    if nxt == B and next_a[c] <= restarts:  # no new problems left: idle lanes take its next start
                        queue[q_tail % B], queued[c] = c, True  # at once, side by side (the answer depends only on
                        q_tail += 1  # which attempts converge, not on the order they run in)
                    restart_start(seed, index0 + b, a, q0[b], lo, hi, limited, qs1)
                    break
                if b < 0:
                    if nxt == B:
                        break
                    b = nxt
                    nxt += 1
                    next_a[b] = 1
                    for j in range(n):
                        qs1[j] = min(max(q0[b, j], lo[j]), hi[j])
                job[lane], att[lane] = b, a
                pl[lane] = pull if a == 0 else r_pull
                p, Rt = P[b], R[b]
                for i in range(3):
                    PL[i, lane] = p[i]
                    for j in range(3):
                        RL[i, j, lane] = Rt[i, j]
                for j in range(n):
                    qs[j, lane] = qs1[j]
                # the start's frames, φ, θ and the frames there: computed once for consecutive problems with the
                # same start (a batch from one pose), the same numbers either way
                fresh = not cached
                for j in range(n):
                    if fresh or qs1[j] != cq[j]:
                        fresh = True
                        break
                if fresh:
                    chain_forward(qs1, Hs, Ce, T1, Te0, loc1)
                    _phi(qs1, mid, half, limited, margin, phi1)
                    _theta(phi1, mid, half, limited, lo, hi, q1)
                    chain_forward(q1, Hs, Ce, T1, Te1, loc1)
                    for j in range(n):
                        cq[j] = qs1[j]
                        cphi1[j] = math.cos(phi1[j])
                    cached = True
                pos0[lane], ori0[lane], e0[lane] = chain_residual(Te0, p, Rt, orient, w, V1, D1)
                if pos0[lane] <= tol and ori0[lane] <= otol:  # as lm_jit._lm_one: the start is the answer
                    if a < first_ok[b]:
                        for j in range(n):
                            q_out[b, j] = qs1[j]
                        pos_out[b], ori_out[b], iters[b], reason[b] = pos0[lane], ori0[lane], 0, CONVERGED
                        for r in range(history.shape[0]):
                            history[r, b] = e0[lane]
                        first_ok[b] = a
                    job[lane] = -1
                    continue
                pos[lane], ori[lane], e[lane] = chain_residual(Te1, p, Rt, orient, w, V1, D1)
                for k in range(n):
                    q[k, lane] = q1[k]
                    phi[k, lane] = phi1[k]
                    cphi[k, lane] = cphi1[k]
                    for i in range(3):
                        for j in range(5):
                            T[k, i, j, lane] = T1[k, i, j]
                for i in range(3):
                    for j in range(4):
                        Te[i, j, lane] = Te1[i, j]
                for i in range(V1.shape[0]):
                    V[i, lane] = V1[i]
                es[0, lane] = e[lane]
                lam[lane], flat[lane], ps[lane], decay[lane], it[lane] = damping, 0, 1.0, 1.0, 0
        if running == 0:
            for b in range(B):  # the random starts run: up to the converged one, else all
                tries[b] = first_ok[b] if first_ok[b] <= restarts else next_a[b] - 1
            return
        for lane in range(L):
            live[lane] = job[lane] >= 0
        # one iteration of every lane. J_φ (n, 6, L): [a × (e − r), a] · h cos φ · W
        for k in range(n):
            hk = half[k] if limited[k] else 1.0
            for lane in range(L):
                sc = hk * cphi[k, lane] if limited[k] else 1.0
                axx, ayy, azz = T[k, 0, 4, lane], T[k, 1, 4, lane], T[k, 2, 4, lane]
                dx = Te[0, 3, lane] - T[k, 0, 3, lane]
                dy = Te[1, 3, lane] - T[k, 1, 3, lane]
                dz = Te[2, 3, lane] - T[k, 2, 3, lane]
                J[k, 0, lane] = (ayy * dz - azz * dy) * sc * w[0]
                J[k, 1, lane] = (azz * dx - axx * dz) * sc * w[1]
                J[k, 2, lane] = (axx * dy - ayy * dx) * sc * w[2]
            if orient:
                for lane in range(L):
                    sc = hk * cphi[k, lane] if limited[k] else 1.0
                    J[k, 3, lane] = T[k, 0, 4, lane] * sc * w[3]
                    J[k, 4, lane] = T[k, 1, 4, lane] * sc * w[4]
                    J[k, 5, lane] = T[k, 2, 4, lane] * sc * w[5]
        for lane in range(L):
            el = e[lane]
            mu[lane] = pl[lane] * decay[lane] * ps[lane] * min(1.0, el * el)
            jitter[lane] = 0.0
        _normal_equations(J, V, lam, mu, limited, phi, jitter, kappa, A, rhs, trace)
        solve_spd_lanes(A, rhs, d, bad)
        retry = False
        for lane in range(L):
            if job[lane] >= 0 and bad[lane] != 0.0:
                # lm_jit's fallback: a relative jitter on the diagonal, then solve again
                jitter[lane] = 1e-12 * (trace[lane] / n + 1.0)
                retry = True
        if retry:
            _normal_equations(J, V, lam, mu, limited, phi, jitter, kappa, A, rhs, trace)
            solve_spd_lanes(A, rhs, d, bad)
            for lane in range(L):
                if jitter[lane] != 0.0 and bad[lane] != 0.0:
                    for i in range(n):
                        d[i, lane] = 0.0
        if max_step > 0.0:
            for lane in range(L):
                big = 0.0
                for i in range(n):
                    big = max(big, abs(d[i, lane]))
                if big > max_step:
                    f = max_step / big
                    for i in range(n):
                        d[i, lane] *= f
        for i in range(n):
            for lane in range(L):
                phin[i, lane] = phi[i, lane] + d[i, lane]
        _theta_lanes(phin, mid, half, limited, lo, hi, qn, sphi, live, poly, pw, cw)
        forward_lanes(qn, Hs, Ce, Tn, Ten, loc, sn, cn, live, poly)
        _residual(Ten, PL, RL, orient, w, Vn, D, pos_n, ori_n, e_n, live)
        every = True
        for lane in range(L):
            b = job[lane]
            if b < 0:
                ok[lane] = False
                continue
            en, el = e_n[lane], e[lane]
            good = en < el  # NaN compares False: a step that produced NaN is rejected
            ok[lane] = good
            every = every and good
            if good and en < el * (1.0 - GAIN_REL) - GAIN_ABS:
                flat[lane] = 0
            else:
                flat[lane] += 1
            if good:
                lam[lane] = max(lam[lane] * LAMBDA_DOWN, LAMBDA_MIN)
                pos[lane], ori[lane], e[lane] = pos_n[lane], ori_n[lane], en
                el = en
            else:
                lam[lane] *= LAMBDA_UP
                ps[lane] *= backoff
            it[lane] += 1
            k = it[lane]
            es[k, lane] = el
            decay[lane] *= decay_rate
        # the trial becomes the current state (the buffers swap); a lane that refused its step copies its own
        # state back from the old buffers (refusals are the rarer case)
        T, Tn = Tn, T
        Te, Ten = Ten, Te
        V, Vn = Vn, V
        q, qn = qn, q
        if not every:
            for lane in range(L):
                if ok[lane] or job[lane] < 0:
                    continue
                for k in range(n):
                    q[k, lane] = qn[k, lane]
                    for i in range(3):
                        for j in range(5):
                            T[k, i, j, lane] = Tn[k, i, j, lane]
                for i in range(3):
                    for j in range(4):
                        Te[i, j, lane] = Ten[i, j, lane]
                for i in range(6):
                    V[i, lane] = Vn[i, lane]
        # φ and π − φ give the same θ: keep φ in [−π/2, π/2], where the pull toward 0 is the short way
        for i in range(n):
            if poly:
                if limited[i]:
                    for lane in range(L):
                        if ok[lane]:
                            phi[i, lane] = pw[i, lane]
                            cphi[i, lane] = cw[i, lane]
                else:
                    for lane in range(L):
                        if ok[lane]:
                            phi[i, lane] = phin[i, lane]
                            cphi[i, lane] = sincos(phin[i, lane])[1]
            elif limited[i]:
                for lane in range(L):
                    if ok[lane]:
                        phi[i, lane] = math.asin(sphi[i, lane])
                        cphi[i, lane] = math.cos(phi[i, lane])
            else:
                for lane in range(L):
                    if ok[lane]:
                        phi[i, lane] = phin[i, lane]
                        cphi[i, lane] = math.cos(phin[i, lane])


_KERNEL = kernel(_lm_lanes, slp=True, error_model="numpy",
                 calls=(forward_lanes, _residual, _theta_lanes, _normal_equations, solve_spd_lanes, chain_forward,
                        chain_residual, _phi, _theta, sincos, restart_start))


def lanes_fit(Hs: Array, Ce: Array) -> bool:
    """Whether a serial chain's link blocks Hs (n, 3, 20) and effector offset Ce (4, 4) are rigid (last rows
    [0, 0, 0, 1 | 0] and 0), the layout :func:`lm_lanes` assumes."""
    last = np.array([0.0, 0.0, 0.0, 1.0, 0.0])
    return bool(Hs.shape[1] == 3 and np.array_equal(Hs[:, 0, 15:], np.broadcast_to(last, (Hs.shape[0], 5)))
                and not Hs[:, 1:, 15:].any() and np.array_equal(Ce[3], last[:4]))


def lm_lanes(Hs: Array, Ce: Array, lo: Array, hi: Array, mid: Array, half: Array, limited: NDArray[np.bool_],
             kappa: Array, q0: Array, P: Array, R: Array | None, w: Array, *, tol: float, otol: float, patience: int,
             max_iter: int, damping: float, max_step: float | None, win: int, ratio: float, stall_min: int,
             pull: float, decay: float, backoff: float, margin: float, poly: bool = True, restarts: int = 0,
             seed: int = 0, restart_pull: float = 0.1, index0: int = 0, tries: NDArray[np.intp] | None = None
             ) -> tuple[Array, NDArray[np.intp], NDArray[np.intp], Array, Array, Array]:
    """:func:`~animkit.ik.lm_jit.lm_serial` (same arguments and outputs, no ``first_success``) by the lanes: B
    problems, q0 (B, n), P (B, 3), R (B, 3, 3) or None, on a chain for which :func:`lanes_fit` holds. Needs
    :func:`animkit.jit.enabled`. ``poly`` (the default): the iterations' sines and cosines by
    :mod:`.poly_trig` (vectorised, ≤ 2 ulp from the library's), so a problem's iterates differ from lm_serial's by
    rounding, which can change the path of a run that wanders; False: the C library's, and lm_serial's bits.

    ``restarts`` > 0: a problem whose run ends unconverged runs again in its lane at once, from
    :func:`restart_start` (attempt 1, 2, …, pull μ₀ = ``restart_pull``), until one converges or ``restarts`` random
    starts have run; it returns the first run's answer unless a restart converged or ended lower (its iterations and
    history are that run's), and ``tries`` (B,), when given, receives the random starts each problem ran. Problem b
    draws its starts as problem ``index0`` + b (a chunk of a larger batch draws what the whole batch would)."""
    assert _KERNEL is not None
    return call_loop(_KERNEL, poly, Hs, Ce, lo, hi, mid, half, limited, kappa, q0, P, R, w, tol=tol, otol=otol,
                     patience=patience, max_iter=max_iter, damping=damping, max_step=max_step, win=win, ratio=ratio,
                     stall_min=stall_min, pull=pull, decay=decay, backoff=backoff, margin=margin,
                     restart=(restarts, seed, restart_pull, index0), tries=tries)


def warm_up() -> None:
    """Compile (or load from numba's disk cache) the lanes now, e.g. before timing; nothing when numba is off."""
    if _KERNEL is not None and jit.enabled():
        Hs = np.zeros((1, 3, 20))
        Hs[0, 0, 15:] = (0.0, 0.0, 0.0, 1.0, 0.0)
        for R in (np.eye(3)[None], None):
            lm_lanes(Hs, np.eye(4), np.full(1, -1.0), np.ones(1), np.zeros(1), np.ones(1), np.ones(1, dtype=np.bool_),
                     np.zeros(1), np.zeros((1, 1)), np.ones((1, 3)), R, np.ones(6 if R is not None else 3),
                     tol=1e-5, otol=1e-4, patience=12, max_iter=1, damping=1.0, max_step=None, win=0, ratio=0.5,
                     stall_min=10, pull=1.0, decay=0.95, backoff=0.1, margin=0.05)
