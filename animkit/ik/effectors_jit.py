""":func:`~animkit.ik.effectors.pose_from_effectors`' inner loop compiled: one pass gives the frames, the normal
equations of the effectors and the prior, and the human ranges' projection.

    T_k = T_parent(k) (H0 + sin θ H1 + (1 − cos θ) H2 + θ H3)_k,   a_k = T_k axis_k,   node i: T_link(i) C_i

    H = J_eᵀ J_e + J_xᵀ P_k J_x + D_x,   g = J_eᵀ e − J_xᵀ P_k (x − μ_k) + D_x (θ_rest − θ),   P_k = U_k U_kᵀ = Σ_k⁻¹

with J_e the effectors' rows (position a_j × (p − r_j), orientation a_j, scaled by 1/σ), J_x the features'
Jacobian ∂x/∂θ (:func:`animkit.ik.prior.feature_jacobian`: three non-zero rows a column, so J_xᵀ P J_x costs
O(n² · 3), not O(n² d)) and D_x the held joints' 1/σ² on the diagonal: the same H = JᵀJ and g = Jᵀe as the NumPy
rows of :mod:`animkit.ik.effectors` (its tests' oracle). Cones: R = A(θ) A_refᵀ split into swing and twist about t
(:func:`animkit.transforms.swing_twist_from_matrix`), ρ the swing's excess over its edge (:meth:`Cone._swing_excess`),
R′ = exp([s/max(1, ρ)]×) R_t(clamp τ), and the Euler angles of A′ = R′ A_ref found by Newton from θ on
A(θ) = E₀E₁E₂ (spatial Jacobian [a₀, E₀a₁, E₀E₁a₂]): :meth:`ChainModel.project_cones`' answer, solved for the
angles nearest θ instead of read from a closed form.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..jit import kernel
from .lm_jit import log_vee

__all__ = ["chain_frames", "normal_equations", "project_cones", "rotation_about"]

Array = NDArray[Any]  # float64, and the index (intp) and mask (bool) arrays


def chain_frames(q: Array, H0: Array, H1: Array, H2: Array, H3: Array, parent: Array, revolute: Array, axis: Array,
                 eff_link: Array, eff_C: Array, live: Array, T: Array, R: Array, p: Array, r: Array, a: Array
                 ) -> None:
    """Link frames T (n, 4, 4), DOF world origins r and axes a (n, 3), and the world rotations R and origins p of
    the nodes ``live`` (their link eff_link and constant eff_C); the other rows of R, p are left as they are."""
    n = q.shape[0]
    loc = np.empty((4, 4))
    for k in range(n):
        s = math.sin(q[k])
        c1 = 1.0 - math.cos(q[k])
        t = q[k]
        for i in range(4):
            for j in range(4):
                loc[i, j] = H0[k, i, j] + s * H1[k, i, j] + c1 * H2[k, i, j] + t * H3[k, i, j]
        pk = parent[k]
        if pk < 0:
            for i in range(4):
                for j in range(4):
                    T[k, i, j] = loc[i, j]
        else:
            for i in range(3):
                for j in range(4):
                    T[k, i, j] = T[pk, i, 0] * loc[0, j] + T[pk, i, 1] * loc[1, j] + T[pk, i, 2] * loc[2, j] + \
                        T[pk, i, 3] * loc[3, j]
            for j in range(4):
                T[k, 3, j] = loc[3, j]
        for i in range(3):
            a[k, i] = T[k, i, 0] * axis[k, 0] + T[k, i, 1] * axis[k, 1] + T[k, i, 2] * axis[k, 2]
            r[k, i] = T[k, i, 3] if revolute[k] else T[k, i, 3] - a[k, i] * q[k]
    for e in range(live.shape[0]):
        node = live[e]
        k = eff_link[e]
        for i in range(3):
            for j in range(3):
                R[node, i, j] = T[k, i, 0] * eff_C[e, 0, j] + T[k, i, 1] * eff_C[e, 1, j] + \
                    T[k, i, 2] * eff_C[e, 2, j]
            p[node, i] = T[k, i, 0] * eff_C[e, 0, 3] + T[k, i, 1] * eff_C[e, 1, 3] + T[k, i, 2] * eff_C[e, 2, 3] + \
                T[k, i, 3]


chain_frames = kernel(chain_frames) or chain_frames


def _inverse_left_jacobian(x: Array, out: Array) -> None:
    """J_l⁻¹(φ) = I − ½[φ]× + (1/θ² − (1 + cos θ)/(2θ sin θ)) [φ]×² (3, 3); the series 1/12 + θ²/720 near 0."""
    th = math.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2])
    if th < 1e-4:
        coef = 1.0 / 12.0 + th * th / 720.0
    else:
        coef = 1.0 / (th * th) - (1.0 + math.cos(th)) / (2.0 * th * math.sin(th))
    S = np.zeros((3, 3))
    S[0, 1], S[0, 2], S[1, 2] = -x[2], x[1], -x[0]
    S[1, 0], S[2, 0], S[2, 1] = x[2], -x[1], x[0]
    for i in range(3):
        for j in range(3):
            s2 = S[i, 0] * S[0, j] + S[i, 1] * S[1, j] + S[i, 2] * S[2, j]
            out[i, j] = (1.0 if i == j else 0.0) - 0.5 * S[i, j] + coef * s2


_inverse_left_jacobian = kernel(_inverse_left_jacobian) or _inverse_left_jacobian


# a numba kernel: one straight pass over the links, the targets and the prior's rows, written out loop by loop
def normal_equations(q: Array, cols: Array, R: Array, p: Array, r: Array, a: Array, revolute: Array,  # noqa: C901
                     tmask: Array, tnode: Array, tp: Array, tR: Array, has_R: Array, wp: float, wo: float,
                     bnode: Array, bpar: Array, K: Array, Kp: Array, mb: Array, hips: int, hmask: Array, Kh: Array,
                     up: Array, leg: float, means: Array, P: Array, logw: Array, xcol: Array, xrest: Array,
                     wx: float, x: Array, Jx: Array, H: Array, g: Array) -> tuple[float, float, float]:
    """H (m, m) and g (m,) over the columns ``cols`` (link index of each moving DOF), the cost Σ e² and the
    largest position and orientation misses (see the module docstring). Links: ``revolute`` (n,). Targets:
    ``tmask`` (targets, n): link k moves the target's node; node, position, rotation (``has_R``), weights 1/σ_p
    and 1/σ_o. Bones: nodes, parents' nodes, K, K_p, ``mb`` (bones, n): link moves the bone and not its parent; the
    hips (node; ``hmask`` (n,): link k moves them), K_h, the world up, the leg's length. The prior's marginal:
    means (C, d), precisions P (C, d, d), log weights (C,). Held joints: columns, rest values, 1/σ. Scratch: x (d,),
    Jx (d, m)."""
    m = cols.shape[0]
    for i in range(m):
        g[i] = 0.0
        for j in range(m):
            H[i, j] = 0.0
    cost = 0.0
    pe = 0.0
    oe = 0.0
    J6 = np.empty((6, m))
    e6 = np.empty(6)
    D = np.empty((3, 3))
    for t in range(tnode.shape[0]):
        node = tnode[t]
        rows = 6 if has_R[t] else 3
        ex, ey, ez = tp[t, 0] - p[node, 0], tp[t, 1] - p[node, 1], tp[t, 2] - p[node, 2]
        pe = max(pe, math.sqrt(ex * ex + ey * ey + ez * ez))
        e6[0], e6[1], e6[2] = ex * wp, ey * wp, ez * wp
        if has_R[t]:
            for i in range(3):
                for j in range(3):
                    D[i, j] = tR[t, i, 0] * R[node, j, 0] + tR[t, i, 1] * R[node, j, 1] + tR[t, i, 2] * R[node, j, 2]
            ox, oy, oz = log_vee(D)
            oe = max(oe, math.sqrt(ox * ox + oy * oy + oz * oz))
            e6[3], e6[4], e6[5] = ox * wo, oy * wo, oz * wo
        for c in range(m):
            k = cols[c]
            if not tmask[t, k]:
                for i in range(rows):
                    J6[i, c] = 0.0
                continue
            if revolute[k]:
                dx, dy, dz = p[node, 0] - r[k, 0], p[node, 1] - r[k, 1], p[node, 2] - r[k, 2]
                J6[0, c] = (a[k, 1] * dz - a[k, 2] * dy) * wp
                J6[1, c] = (a[k, 2] * dx - a[k, 0] * dz) * wp
                J6[2, c] = (a[k, 0] * dy - a[k, 1] * dx) * wp
                if rows == 6:
                    J6[3, c], J6[4, c], J6[5, c] = a[k, 0] * wo, a[k, 1] * wo, a[k, 2] * wo
            else:
                J6[0, c], J6[1, c], J6[2, c] = a[k, 0] * wp, a[k, 1] * wp, a[k, 2] * wp
                if rows == 6:
                    J6[3, c] = J6[4, c] = J6[5, c] = 0.0
        for i in range(rows):
            cost += e6[i] * e6[i]
        for c1 in range(m):
            acc = 0.0
            for i in range(rows):
                acc += J6[i, c1] * e6[i]
            g[c1] += acc
            for c2 in range(c1 + 1):
                acc = 0.0
                for i in range(rows):
                    acc += J6[i, c1] * J6[i, c2]
                H[c1, c2] += acc
    # the prior's features and their Jacobian (three non-zero rows a column at most, bones; the root's three rows)
    nb = bnode.shape[0]
    d = x.shape[0]
    Qp = np.empty((3, 3))
    Rb = np.empty((3, 3))
    Ji = np.empty((3, 3))
    loc = np.empty(3)
    for i in range(d):
        for c in range(m):
            Jx[i, c] = 0.0
    for b in range(nb):
        for i in range(3):
            for j in range(3):
                Qp[i, j] = R[bpar[b], i, 0] * Kp[b, 0, j] + R[bpar[b], i, 1] * Kp[b, 1, j] + \
                    R[bpar[b], i, 2] * Kp[b, 2, j]
                Rb[i, j] = R[bnode[b], i, 0] * K[b, 0, j] + R[bnode[b], i, 1] * K[b, 1, j] + \
                    R[bnode[b], i, 2] * K[b, 2, j]
        for i in range(3):
            for j in range(3):
                D[i, j] = Qp[0, i] * Rb[0, j] + Qp[1, i] * Rb[1, j] + Qp[2, i] * Rb[2, j]
        x0, x1, x2 = log_vee(D)
        x[3 * b], x[3 * b + 1], x[3 * b + 2] = x0, x1, x2
        _inverse_left_jacobian(x[3 * b:3 * b + 3], Ji)
        for c in range(m):
            k = cols[c]
            if not mb[b, k]:
                continue
            for i in range(3):
                loc[i] = Qp[0, i] * a[k, 0] + Qp[1, i] * a[k, 1] + Qp[2, i] * a[k, 2]
            for i in range(3):
                Jx[3 * b + i, c] = Ji[i, 0] * loc[0] + Ji[i, 1] * loc[1] + Ji[i, 2] * loc[2]
    for i in range(3):
        for j in range(3):
            Qp[i, j] = R[hips, i, 0] * Kh[0, j] + R[hips, i, 1] * Kh[1, j] + R[hips, i, 2] * Kh[2, j]
    for i in range(3):
        loc[i] = Qp[0, i] * up[0] + Qp[1, i] * up[1] + Qp[2, i] * up[2]
    x[3 * nb] = loc[0]
    x[3 * nb + 1] = loc[2]
    x[3 * nb + 2] = (p[hips, 0] * up[0] + p[hips, 1] * up[1] + p[hips, 2] * up[2]) / leg
    for c in range(m):
        k = cols[c]
        if hmask[k]:
            if revolute[k]:
                cx = up[1] * a[k, 2] - up[2] * a[k, 1]
                cy = up[2] * a[k, 0] - up[0] * a[k, 2]
                cz = up[0] * a[k, 1] - up[1] * a[k, 0]
                Jx[3 * nb, c] = Qp[0, 0] * cx + Qp[1, 0] * cy + Qp[2, 0] * cz
                Jx[3 * nb + 1, c] = Qp[0, 2] * cx + Qp[1, 2] * cy + Qp[2, 2] * cz
                dx, dy, dz = p[hips, 0] - r[k, 0], p[hips, 1] - r[k, 1], p[hips, 2] - r[k, 2]
                vx = a[k, 1] * dz - a[k, 2] * dy
                vy = a[k, 2] * dx - a[k, 0] * dz
                vz = a[k, 0] * dy - a[k, 1] * dx
            else:
                vx, vy, vz = a[k, 0], a[k, 1], a[k, 2]
            Jx[3 * nb + 2, c] = (vx * up[0] + vy * up[1] + vz * up[2]) / leg
    # the dominant component: the largest log π_k − ½ log det Σ_k − ½ (x − μ_k)ᵀ P_k (x − μ_k)
    best = -math.inf
    kbest = 0
    diff = np.empty(d)
    Pd = np.empty(d)
    for kc in range(means.shape[0]):
        for i in range(d):
            diff[i] = x[i] - means[kc, i]
        q2 = 0.0
        for i in range(d):
            acc = 0.0
            for j in range(d):
                acc += P[kc, i, j] * diff[j]
            q2 += diff[i] * acc
        score = logw[kc] - 0.5 * q2
        if score > best:
            best = score
            kbest = kc
    for i in range(d):
        diff[i] = x[i] - means[kbest, i]
    prior_cost = 0.0
    for i in range(d):
        acc = 0.0
        for j in range(d):
            acc += P[kbest, i, j] * diff[j]
        Pd[i] = acc
        prior_cost += diff[i] * acc
    cost += prior_cost
    # PJ = P J_x over each column's non-zero rows, then H += J_xᵀ PJ, g −= J_xᵀ P (x − μ)
    nz = np.empty((m, 8), dtype=np.int64)
    nnz = np.zeros(m, dtype=np.int64)
    PJ = np.zeros((d, m))
    for c in range(m):
        for i in range(d):
            if Jx[i, c] != 0.0:
                if nnz[c] < 8:
                    nz[c, nnz[c]] = i
                    nnz[c] += 1
                else:  # a dense column (never for a humanoid's bones): fall back to every row
                    nnz[c] = -1
                    break
        if nnz[c] < 0:
            for i in range(d):
                acc = 0.0
                for s in range(d):
                    acc += P[kbest, i, s] * Jx[s, c]
                PJ[i, c] = acc
        else:
            for i in range(d):
                acc = 0.0
                for t in range(nnz[c]):
                    s = nz[c, t]
                    acc += P[kbest, i, s] * Jx[s, c]
                PJ[i, c] = acc
    for c1 in range(m):
        acc = 0.0
        if nnz[c1] < 0:
            for i in range(d):
                acc += Jx[i, c1] * Pd[i]
        else:
            for t in range(nnz[c1]):
                acc += Jx[nz[c1, t], c1] * Pd[nz[c1, t]]
        g[c1] -= acc
        for c2 in range(c1 + 1):
            acc = 0.0
            if nnz[c1] < 0:
                for i in range(d):
                    acc += Jx[i, c1] * PJ[i, c2]
            else:
                for t in range(nnz[c1]):
                    acc += Jx[nz[c1, t], c1] * PJ[nz[c1, t], c2]
            H[c1, c2] += acc
    # joints held near rest
    for t in range(xcol.shape[0]):
        c = xcol[t]
        k = cols[c]
        v = (xrest[t] - q[k]) * wx
        cost += v * v
        g[c] += v * wx
        H[c, c] += wx * wx
    for c1 in range(m):
        for c2 in range(c1):
            H[c2, c1] = H[c1, c2]
    return cost, pe, oe


normal_equations = kernel(normal_equations, calls=(log_vee, _inverse_left_jacobian)) or normal_equations


def rotation_about(ax: Array, angle: float, out: Array) -> None:
    """exp(angle [a]×) (Rodrigues) for a unit axis a, written into out (3, 3)."""
    s = math.sin(angle)
    c1 = 1.0 - math.cos(angle)
    x, y, z = ax[0], ax[1], ax[2]
    out[0, 0] = 1.0 - c1 * (y * y + z * z)
    out[1, 1] = 1.0 - c1 * (x * x + z * z)
    out[2, 2] = 1.0 - c1 * (x * x + y * y)
    out[0, 1] = -s * z + c1 * x * y
    out[1, 0] = s * z + c1 * x * y
    out[0, 2] = s * y + c1 * x * z
    out[2, 0] = -s * y + c1 * x * z
    out[1, 2] = -s * x + c1 * y * z
    out[2, 1] = s * x + c1 * y * z


rotation_about = kernel(rotation_about) or rotation_about


def _mul(A: Array, B: Array, out: Array) -> None:
    for i in range(3):
        for j in range(3):
            out[i, j] = A[i, 0] * B[0, j] + A[i, 1] * B[1, j] + A[i, 2] * B[2, j]


_mul = kernel(_mul) or _mul


def project_cones(q: Array, links: Array, axes: Array, Ar: Array, t: Array, front: Array, reach: Array,
                  swing: Array, twist: Array, tol: float, hit: Array) -> int:
    """Move every coned ball joint's three links of q (n,) into its cone, in place; returns how many moved and
    marks them in ``hit`` (C,).

    Per cone c: its links (3,), their axes (3, 3), its reference A_ref, twist axis t, front f and reach (4,)
    (reach[c, 0] < 0: circular, of half-angle swing[c]), twist range (2,). Inside within ``tol`` (the swing's
    excess ρ ≤ 1 + tol and τ within its range ± tol) is left alone."""
    moved = 0
    E0 = np.empty((3, 3))
    E1 = np.empty((3, 3))
    E2 = np.empty((3, 3))
    A = np.empty((3, 3))
    M = np.empty((3, 3))
    Rm = np.empty((3, 3))
    W = np.empty((3, 3))
    Rn = np.empty((3, 3))
    Tw = np.empty((3, 3))
    Ap = np.empty((3, 3))
    D = np.empty((3, 3))
    nvec = np.empty(3)
    for c in range(links.shape[0]):
        hit[c] = False
        l0, l1, l2 = links[c, 0], links[c, 1], links[c, 2]
        rotation_about(axes[c, 0], q[l0], E0)
        rotation_about(axes[c, 1], q[l1], E1)
        rotation_about(axes[c, 2], q[l2], E2)
        _mul(E0, E1, M)
        _mul(M, E2, A)
        for i in range(3):  # R = A A_refᵀ
            for j in range(3):
                Rm[i, j] = A[i, 0] * Ar[c, j, 0] + A[i, 1] * Ar[c, j, 1] + A[i, 2] * Ar[c, j, 2]
        tx, ty, tz = t[c, 0], t[c, 1], t[c, 2]
        dx = Rm[0, 0] * tx + Rm[0, 1] * ty + Rm[0, 2] * tz
        dy = Rm[1, 0] * tx + Rm[1, 1] * ty + Rm[1, 2] * tz
        dz = Rm[2, 0] * tx + Rm[2, 1] * ty + Rm[2, 2] * tz
        cx, cy, cz = ty * dz - tz * dy, tz * dx - tx * dz, tx * dy - ty * dx
        sn = math.sqrt(cx * cx + cy * cy + cz * cz)
        sigma = math.atan2(sn, tx * dx + ty * dy + tz * dz)
        if sn > 1e-12:
            nvec[0], nvec[1], nvec[2] = cx / sn, cy / sn, cz / sn
        else:  # t × e with e the coordinate axis least aligned with t
            ax_, ay_, az_ = abs(tx), abs(ty), abs(tz)
            if ax_ <= ay_ and ax_ <= az_:
                px, py, pz = 0.0, tz, -ty
            elif ay_ <= az_:
                px, py, pz = -tz, 0.0, tx
            else:
                px, py, pz = ty, -tx, 0.0
            pn = math.sqrt(px * px + py * py + pz * pz)
            nvec[0], nvec[1], nvec[2] = px / pn, py / pn, pz / pn
        sx, sy, sz = nvec[0] * sigma, nvec[1] * sigma, nvec[2] * sigma
        rotation_about(nvec, sigma, Rn)
        for i in range(3):  # W = exp([s]×)ᵀ R
            for j in range(3):
                W[i, j] = Rn[0, i] * Rm[0, j] + Rn[1, i] * Rm[1, j] + Rn[2, i] * Rm[2, j]
        ux, uy, uz = 0.5 * (W[2, 1] - W[1, 2]), 0.5 * (W[0, 2] - W[2, 0]), 0.5 * (W[1, 0] - W[0, 1])
        tau = math.atan2(ux * tx + uy * ty + uz * tz, 0.5 * (W[0, 0] + W[1, 1] + W[2, 2] - 1.0))
        if reach[c, 0] < 0.0:
            rho = sigma / max(swing[c], 1e-12)
        else:
            vx, vy, vz = sy * tz - sz * ty, sz * tx - sx * tz, sx * ty - sy * tx  # u = s × t
            fx, fy, fz = front[c, 0], front[c, 1], front[c, 2]
            uf = vx * fx + vy * fy + vz * fz
            us = vx * (ty * fz - tz * fy) + vy * (tz * fx - tx * fz) + vz * (tx * fy - ty * fx)
            rf = max(reach[c, 0] if uf >= 0.0 else reach[c, 1], 1e-9)
            rs = max(reach[c, 2] if us >= 0.0 else reach[c, 3], 1e-9)
            rho = math.hypot(uf / rf, us / rs)
        tau2 = min(max(tau, twist[c, 0]), twist[c, 1])
        if rho <= 1.0 + tol and abs(tau2 - tau) <= tol:
            continue
        moved += 1
        hit[c] = True
        scale = 1.0 / max(1.0, rho)
        rotation_about(nvec, sigma * scale, Rn)
        tvec = t[c]
        rotation_about(tvec, tau2, Tw)
        _mul(Rn, Tw, M)
        _mul(M, Ar[c], Ap)  # A′ = R′ A_ref
        # Newton on A(θ) = A′ from θ: spatial error ω = log(A′ A(θ)ᵀ), Jacobian [a₀, E₀a₁, E₀E₁a₂]
        for _ in range(30):
            rotation_about(axes[c, 0], q[l0], E0)
            rotation_about(axes[c, 1], q[l1], E1)
            rotation_about(axes[c, 2], q[l2], E2)
            _mul(E0, E1, M)
            _mul(M, E2, A)
            for i in range(3):
                for j in range(3):
                    D[i, j] = Ap[i, 0] * A[j, 0] + Ap[i, 1] * A[j, 1] + Ap[i, 2] * A[j, 2]
            wx, wy, wz = log_vee(D)
            if wx * wx + wy * wy + wz * wz < 1e-28:
                break
            # columns of the spatial Jacobian
            j0 = axes[c, 0]
            j1x = E0[0, 0] * axes[c, 1, 0] + E0[0, 1] * axes[c, 1, 1] + E0[0, 2] * axes[c, 1, 2]
            j1y = E0[1, 0] * axes[c, 1, 0] + E0[1, 1] * axes[c, 1, 1] + E0[1, 2] * axes[c, 1, 2]
            j1z = E0[2, 0] * axes[c, 1, 0] + E0[2, 1] * axes[c, 1, 1] + E0[2, 2] * axes[c, 1, 2]
            j2x = M[0, 0] * axes[c, 2, 0] + M[0, 1] * axes[c, 2, 1] + M[0, 2] * axes[c, 2, 2]
            j2y = M[1, 0] * axes[c, 2, 0] + M[1, 1] * axes[c, 2, 1] + M[1, 2] * axes[c, 2, 2]
            j2z = M[2, 0] * axes[c, 2, 0] + M[2, 1] * axes[c, 2, 1] + M[2, 2] * axes[c, 2, 2]
            # damped normal equations (JᵀJ + εI) δ = Jᵀω: exact away from gimbal lock, bounded near it
            a00 = j0[0] * j0[0] + j0[1] * j0[1] + j0[2] * j0[2] + 1e-12
            a01 = j0[0] * j1x + j0[1] * j1y + j0[2] * j1z
            a02 = j0[0] * j2x + j0[1] * j2y + j0[2] * j2z
            a11 = j1x * j1x + j1y * j1y + j1z * j1z + 1e-12
            a12 = j1x * j2x + j1y * j2y + j1z * j2z
            a22 = j2x * j2x + j2y * j2y + j2z * j2z + 1e-12
            b0 = j0[0] * wx + j0[1] * wy + j0[2] * wz
            b1 = j1x * wx + j1y * wy + j1z * wz
            b2 = j2x * wx + j2y * wy + j2z * wz
            c00 = a11 * a22 - a12 * a12
            c01 = a02 * a12 - a01 * a22
            c02 = a01 * a12 - a02 * a11
            c11 = a00 * a22 - a02 * a02
            c12 = a01 * a02 - a00 * a12
            c22 = a00 * a11 - a01 * a01
            det = a00 * c00 + a01 * c01 + a02 * c02
            if not abs(det) > 1e-300:
                break
            q[l0] += (c00 * b0 + c01 * b1 + c02 * b2) / det
            q[l1] += (c01 * b0 + c11 * b1 + c12 * b2) / det
            q[l2] += (c02 * b0 + c12 * b1 + c22 * b2) / det
    return moved


project_cones = kernel(project_cones, calls=(rotation_about, _mul, log_vee)) or project_cones


def cholesky_solve(L: Array, B: Array, X: Array) -> None:
    """X = (L Lᵀ)⁻¹ B for every column of B (n, k), L from :func:`~animkit.ik.lm_jit.cholesky`."""
    n, k = B.shape
    for c in range(k):
        for i in range(n):
            s = B[i, c]
            for t in range(i):
                s -= L[i, t] * X[t, c]
            X[i, c] = s / L[i, i]
        for i in range(n - 1, -1, -1):
            s = X[i, c]
            for t in range(i + 1, n):
                s -= L[t, i] * X[t, c]
            X[i, c] = s / L[i, i]


cholesky_solve = kernel(cholesky_solve) or cholesky_solve
