"""The lanes' building blocks (:mod:`.lm_batch_jit`): forward kinematics, the residual, θ from φ, the normal
equations and their Cholesky solve, each for ``LANES`` problems at once, lane index innermost (structure of arrays),
written so that LLVM vectorises them across problems. Each mirrors a one-problem function of :mod:`.lm_jit`
operation for operation (the same bits with the library's sines and cosines).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from animkit.ik.lm_jit import log_vee
from animkit.ik.poly_trig import sincos, wrap_sincos
from animkit.jit import kernel

__all__ = ["LANES", "forward_lanes", "residual_lanes", "theta_lanes", "normal_equations_lanes", "solve_spd_lanes"]

Array = NDArray[np.float64]

LANES = 8  # problems per lock-step block: two AVX2 vectors of doubles (one AVX-512 vector)


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


def residual_lanes(Te: Array, PL: Array, RL: Array, orient: bool, w: Array, V: Array, D: Array, pos: Array, ori: Array,
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


residual_lanes = kernel(residual_lanes, calls=(log_vee,), error_model="numpy", slp=True) or residual_lanes


def theta_lanes(phi: Array, mid: Array, half: Array, limited: Array, lo: Array, hi: Array, q: Array,
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


theta_lanes = kernel(theta_lanes, calls=(wrap_sincos,), error_model="numpy", slp=True) or theta_lanes


def normal_equations_lanes(J: Array, V: Array, lam: Array, mu: Array, limited: Array, phi: Array, jitter: Array,
                      kappa: Array, A: Array, rhs: Array, trace: Array) -> None:
    """Every lane: the lower triangle of A = J_φᵀJ_φ + diag(λ(1 + κ) + μD + jitter), rhs = J_φᵀV − μDφ, trace A
    (lm_jit.normal_equations_lanes' sums in its order; J (n, 6, L) and V (6, L) hold zero rows 3–5 without
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


normal_equations_lanes = kernel(normal_equations_lanes, error_model="numpy", slp=True) or normal_equations_lanes


def _rows4_lanes(A: Array, i: int, j: int) -> None:
    """Rows i … i + 3 of column j of the Cholesky factor, all eight lanes: L_rj = (A_rj − Σ_t L_rt L_jt) / L_jj (t
    in order; the four rows share the loads of row j, their 32 sums run in registers, eight vectors, enough to
    hide the subtractions' latency)."""
    d0, d1, d2, d3 = A[j, j, 0], A[j, j, 1], A[j, j, 2], A[j, j, 3]
    d4, d5, d6, d7 = A[j, j, 4], A[j, j, 5], A[j, j, 6], A[j, j, 7]
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


_rows4_lanes = kernel(_rows4_lanes, error_model="numpy", slp=True) or _rows4_lanes


def _row1_lanes(A: Array, i: int, j: int) -> None:
    """Row i of column j of the Cholesky factor, all eight lanes (the rows left after :func:`_rows4_lanes`)."""
    d0, d1, d2, d3 = A[j, j, 0], A[j, j, 1], A[j, j, 2], A[j, j, 3]
    d4, d5, d6, d7 = A[j, j, 4], A[j, j, 5], A[j, j, 6], A[j, j, 7]
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


_row1_lanes = kernel(_row1_lanes, error_model="numpy", slp=True) or _row1_lanes


def _factor_lanes(A: Array, bad: Array) -> None:
    """Every lane: A's lower triangle overwritten by its Cholesky factor L (A = L Lᵀ), column by column: the
    diagonal all eight lanes at a time, then the column below it (:func:`_rows4_lanes`, :func:`_row1_lanes`);
    bad[lane] = 1 where A is not positive definite."""
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
        i = j + 1
        while i + 3 < n:  # four rows at a time
            _rows4_lanes(A, i, j)
            i += 4
        while i < n:  # the last rows one at a time
            _row1_lanes(A, i, j)
            i += 1


_factor_lanes = kernel(_factor_lanes, calls=(_rows4_lanes, _row1_lanes), error_model="numpy", slp=True) or \
    _factor_lanes


def _substitute_lanes(A: Array, b: Array, x: Array) -> None:
    """Every lane: x = (L Lᵀ)⁻¹ b, L in A's lower triangle: L y = b, then Lᵀ x = y, row by row, all eight lanes."""
    n = A.shape[0]
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



_substitute_lanes = kernel(_substitute_lanes, error_model="numpy", slp=True) or _substitute_lanes


def solve_spd_lanes(A: Array, b: Array, x: Array, bad: Array) -> None:
    """Every lane: x = A⁻¹ b by Cholesky of A's lower triangle (overwritten by its factor); bad[lane] = 1 where A is
    not positive definite (that lane's x is then meaningless).

    lm_jit.solve_spd's operations in its order (L_ij = (A_ij − Σ_t L_it L_jt) / L_jj, t = 0, 1, …: the same bits),
    the column below the diagonal all eight lanes and four rows i at a time (they share the loads of row j; their
    32 sums run in registers, eight vectors, enough to hide the subtractions' latency); the diagonal and the two
    triangular solves all eight lanes at a time."""
    _factor_lanes(A, bad)
    _substitute_lanes(A, b, x)


solve_spd_lanes = kernel(solve_spd_lanes, calls=(_factor_lanes, _substitute_lanes), error_model="numpy",
                         slp=True) or solve_spd_lanes
