""":func:`~animkit.ik.effectors.pose_from_effectors`' inner loop compiled: one pass gives the frames, the normal
equations of the effectors and the prior, and the human ranges' projection.

    T_k = T_parent(k) (H0 + sin θ H1 + (1 − cos θ) H2 + θ H3)_k,   a_k = T_k axis_k,   node i: T_link(i) C_i

    H = J_eᵀ J_e + J_xᵀ P_k J_x + D_x,   g = J_eᵀ e − J_xᵀ P_k (x − μ_k) + D_x (θ_rest − θ),   P_k = U_k U_kᵀ = Σ_k⁻¹

with J_e the effectors' rows (position a_j × (p − r_j), orientation a_j, scaled by 1/σ), J_x the features'
Jacobian ∂x/∂θ (:func:`animkit.ik.prior.feature_jacobian`: three non-zero rows a column, so J_xᵀ P J_x costs
O(n² · 3), not O(n² d)) and D_x the held joints' 1/σ² on the diagonal: the same H = JᵀJ and g = Jᵀe as the NumPy
rows of :mod:`animkit.ik.effectors` (its tests' oracle). The kernels read records (named tuples of arrays: the
links, the frames, the targets, the bones, the mixture, the held joints, the outputs). The cones' projection is
:mod:`.cones_jit`'s (re-exported here).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from animkit.ik.cones_jit import Cones, project_cones, rotation_about
from animkit.ik.lm_jit import log_vee
from animkit.jit import kernel

__all__ = ["chain_frames", "normal_equations", "project_cones", "rotation_about", "Links", "State", "Targets",
           "Bones", "Mixture", "Held", "Cones"]

Array = NDArray[Any]  # float64, and the index (intp) and mask (bool) arrays


class Links(NamedTuple):
    """The chain's links (:class:`~animkit.ik.problem.ChainModel`'s arrays) and the nodes the loop reads."""

    H0: Array
    H1: Array
    H2: Array
    H3: Array
    parent: Array
    revolute: Array
    axis: Array
    eff_link: Array
    eff_C: Array


class State(NamedTuple):
    """World node rotations R (N, 3, 3) and origins p (N, 3); DOF origins r and axes a (n, 3); link frames T."""

    R: Array
    p: Array
    r: Array
    a: Array
    T: Array


def chain_frames(q: Array, ln: Links, live: Array, st: State) -> None:
    """Link frames T (n, 4, 4), DOF world origins r and axes a (n, 3), and the world rotations R and origins p of
    the nodes ``live`` (their link eff_link and constant eff_C); the other rows of R, p are left as they are."""
    H0, H1, H2, H3, parent, revolute, axis, eff_link, eff_C = ln
    R, p, r, a, T = st
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


class Targets(NamedTuple):
    """The effectors' targets: ``mask`` (targets, n): link k moves the target's node; node, position, rotation
    (used where ``has_R``); ``base`` (targets,): −1, or the node of the limb's root for a target out of the limb's
    reach, which is then sought at p_base + (t − p_base) · min(1, ``reach`` / ‖t − p_base‖) (the limb pointed at it,
    its mask the limb's own links) and not counted in the largest misses."""

    mask: Array
    node: Array
    p: Array
    R: Array
    has_R: Array
    base: Array
    reach: Array


class Bones(NamedTuple):
    """The prior's bones: nodes, parents' nodes, K, K_p, ``moves`` (bones, n): link moves the bone and not its
    parent; the hips (node; ``hmask`` (n,): link k moves them), K_h, the world up, the leg's length."""

    node: Array
    parent: Array
    K: Array
    Kp: Array
    moves: Array
    hips: int
    hmask: Array
    Kh: Array
    up: Array
    leg: float


class Mixture(NamedTuple):
    """The prior's marginal: means (C, d), precisions P (C, d, d), log weights (C,)."""

    means: Array
    P: Array
    logw: Array


class Held(NamedTuple):
    """Joints held near rest: their columns, rest values and 1/σ."""

    col: Array
    rest: Array
    w: float


class Work(NamedTuple):
    """The outputs H (m, m), g (m,) and scratch: features x (d,), their Jacobian Jx (d, m)."""

    H: Array
    g: Array
    x: Array
    Jx: Array


def _target_rows(cols: Array, rev: Array, st: State, tg: Targets, wp: float, wo: float, wk: Work
                 ) -> tuple[float, float, float]:
    """H += JᵀJ, g += Jᵀe over the targets' rows (position a × (p − r) or a, orientation a; scaled by 1/σ);
    returns Σ e², the largest position and orientation misses."""
    R, p, r, a = st.R, st.p, st.r, st.a
    H, g = wk.H, wk.g
    m = cols.shape[0]
    cost, pe, oe = 0.0, 0.0, 0.0
    J6 = np.empty((6, m))
    e6 = np.empty(6)
    D = np.empty((3, 3))
    for t in range(tg.node.shape[0]):
        node = tg.node[t]
        rows = 6 if tg.has_R[t] else 3
        if tg.base[t] == -2:  # left out
            continue
        tx, ty, tz = tg.p[t, 0], tg.p[t, 1], tg.p[t, 2]
        full = tg.base[t] < 0
        if not full:  # out of the limb's reach: sought at the limb's length along the line from its root
            k0 = tg.base[t]
            bx, by, bz = tx - p[k0, 0], ty - p[k0, 1], tz - p[k0, 2]
            f = min(1.0, tg.reach[t] / max(math.sqrt(bx * bx + by * by + bz * bz), 1e-300))
            tx, ty, tz = p[k0, 0] + f * bx, p[k0, 1] + f * by, p[k0, 2] + f * bz
        ex, ey, ez = tx - p[node, 0], ty - p[node, 1], tz - p[node, 2]
        if full:
            pe = max(pe, math.sqrt(ex * ex + ey * ey + ez * ez))
        e6[0], e6[1], e6[2] = ex * wp, ey * wp, ez * wp
        if tg.has_R[t]:
            for i in range(3):
                for j in range(3):
                    D[i, j] = tg.R[t, i, 0] * R[node, j, 0] + tg.R[t, i, 1] * R[node, j, 1] + \
                        tg.R[t, i, 2] * R[node, j, 2]
            ox, oy, oz = log_vee(D)
            if full:
                oe = max(oe, math.sqrt(ox * ox + oy * oy + oz * oz))
            e6[3], e6[4], e6[5] = ox * wo, oy * wo, oz * wo
        for c in range(m):
            k = cols[c]
            if not tg.mask[t, k]:
                for i in range(rows):
                    J6[i, c] = 0.0
                continue
            if rev[k]:
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
    return cost, pe, oe


def _bone_features(cols: Array, st: State, bn: Bones, x: Array, Jx: Array) -> None:
    """The bones' features x[3b:3b+3] = log(K_pᵀ R_parentᵀ R_b K) and their Jacobian J_l⁻¹ Q_pᵀ a_k (three rows a
    column); Jx is zeroed first."""
    R, a = st.R, st.a
    m = cols.shape[0]
    Qp = np.empty((3, 3))
    Rb = np.empty((3, 3))
    D = np.empty((3, 3))
    Ji = np.empty((3, 3))
    loc = np.empty(3)
    for i in range(x.shape[0]):
        for c in range(m):
            Jx[i, c] = 0.0
    for b in range(bn.node.shape[0]):
        for i in range(3):
            for j in range(3):
                Qp[i, j] = R[bn.parent[b], i, 0] * bn.Kp[b, 0, j] + R[bn.parent[b], i, 1] * bn.Kp[b, 1, j] + \
                    R[bn.parent[b], i, 2] * bn.Kp[b, 2, j]
                Rb[i, j] = R[bn.node[b], i, 0] * bn.K[b, 0, j] + R[bn.node[b], i, 1] * bn.K[b, 1, j] + \
                    R[bn.node[b], i, 2] * bn.K[b, 2, j]
        for i in range(3):
            for j in range(3):
                D[i, j] = Qp[0, i] * Rb[0, j] + Qp[1, i] * Rb[1, j] + Qp[2, i] * Rb[2, j]
        x0, x1, x2 = log_vee(D)
        x[3 * b], x[3 * b + 1], x[3 * b + 2] = x0, x1, x2
        _inverse_left_jacobian(x[3 * b:3 * b + 3], Ji)
        for c in range(m):
            k = cols[c]
            if not bn.moves[b, k]:
                continue
            for i in range(3):
                loc[i] = Qp[0, i] * a[k, 0] + Qp[1, i] * a[k, 1] + Qp[2, i] * a[k, 2]
            for i in range(3):
                Jx[3 * b + i, c] = Ji[i, 0] * loc[0] + Ji[i, 1] * loc[1] + Ji[i, 2] * loc[2]


def _hips_features(cols: Array, rev: Array, st: State, bn: Bones, x: Array, Jx: Array) -> None:
    """The root's three features (the hips' up axis in their frame: x and z parts; their height over the leg's
    length) and their Jacobian rows."""
    R, p, r, a = st.R, st.p, st.r, st.a
    up, hips, leg = bn.up, bn.hips, bn.leg
    nb = bn.node.shape[0]
    Qp = np.empty((3, 3))
    loc = np.empty(3)
    for i in range(3):
        for j in range(3):
            Qp[i, j] = R[hips, i, 0] * bn.Kh[0, j] + R[hips, i, 1] * bn.Kh[1, j] + R[hips, i, 2] * bn.Kh[2, j]
    for i in range(3):
        loc[i] = Qp[0, i] * up[0] + Qp[1, i] * up[1] + Qp[2, i] * up[2]
    x[3 * nb] = loc[0]
    x[3 * nb + 1] = loc[2]
    x[3 * nb + 2] = (p[hips, 0] * up[0] + p[hips, 1] * up[1] + p[hips, 2] * up[2]) / leg
    for c in range(cols.shape[0]):
        k = cols[c]
        if bn.hmask[k]:
            if rev[k]:
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


def _dominant(mx: Mixture, x: Array, Pd: Array) -> tuple[int, float]:
    """The dominant component k (the largest log π_k − ½ (x − μ_k)ᵀ P_k (x − μ_k)), Pd = P_k (x − μ_k) and the
    prior's cost (x − μ_k)ᵀ P_k (x − μ_k)."""
    d = x.shape[0]
    best = -math.inf
    kbest = 0
    diff = np.empty(d)
    for kc in range(mx.means.shape[0]):
        for i in range(d):
            diff[i] = x[i] - mx.means[kc, i]
        q2 = 0.0
        for i in range(d):
            acc = 0.0
            for j in range(d):
                acc += mx.P[kc, i, j] * diff[j]
            q2 += diff[i] * acc
        score = mx.logw[kc] - 0.5 * q2
        if score > best:
            best = score
            kbest = kc
    for i in range(d):
        diff[i] = x[i] - mx.means[kbest, i]
    cost = 0.0
    for i in range(d):
        acc = 0.0
        for j in range(d):
            acc += mx.P[kbest, i, j] * diff[j]
        Pd[i] = acc
        cost += diff[i] * acc
    return kbest, cost


def _sparse_columns(Jx: Array, nz: Array, nnz: Array) -> None:
    """Each column's non-zero rows of Jx (at most 8; nnz[c] = −1: a dense column, every row used)."""
    d, m = Jx.shape
    for c in range(m):
        nnz[c] = 0
        for i in range(d):
            if Jx[i, c] != 0.0:
                if nnz[c] < 8:
                    nz[c, nnz[c]] = i
                    nnz[c] += 1
                else:  # a dense column (never for a humanoid's bones): fall back to every row
                    nnz[c] = -1
                    break


def _prior_rows(mx: Mixture, wk: Work) -> float:
    """H += J_xᵀ P_k J_x, g −= J_xᵀ P_k (x − μ_k) for the dominant component k, over each column's non-zero rows;
    returns the prior's cost."""
    H, g, x, Jx = wk
    d, m = Jx.shape
    Pd = np.empty(d)
    kbest, cost = _dominant(mx, x, Pd)
    P = mx.P[kbest]
    nz = np.empty((m, 8), dtype=np.int64)
    nnz = np.zeros(m, dtype=np.int64)
    _sparse_columns(Jx, nz, nnz)
    PJ = np.zeros((d, m))
    for c in range(m):
        if nnz[c] < 0:
            for i in range(d):
                acc = 0.0
                for s in range(d):
                    acc += P[i, s] * Jx[s, c]
                PJ[i, c] = acc
        else:
            for i in range(d):
                acc = 0.0
                for t in range(nnz[c]):
                    acc += P[i, nz[c, t]] * Jx[nz[c, t], c]
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
    return cost


def normal_equations(q: Array, cols: Array, rev: Array, st: State, tg: Targets, w: tuple[float, float], bn: Bones,
                     mx: Mixture, held: Held, wk: Work) -> tuple[float, float, float]:
    """H (m, m) and g (m,) (in ``wk``) over the columns ``cols`` (link index of each moving DOF; ``rev`` (n,): the
    revolute links), the cost Σ e² and the largest position and orientation misses (see the module docstring):
    the targets' rows weighted w = (1/σ_p, 1/σ_o), the prior's features, the held joints."""
    H, g, x, Jx = wk
    m = cols.shape[0]
    for i in range(m):
        g[i] = 0.0
        for j in range(m):
            H[i, j] = 0.0
    cost, pe, oe = _target_rows(cols, rev, st, tg, w[0], w[1], wk)
    _bone_features(cols, st, bn, x, Jx)
    _hips_features(cols, rev, st, bn, x, Jx)
    cost += _prior_rows(mx, wk)
    for t in range(held.col.shape[0]):  # joints held near rest
        c = held.col[t]
        v = (held.rest[t] - q[cols[c]]) * held.w
        cost += v * v
        g[c] += v * held.w
        H[c, c] += held.w * held.w
    for c1 in range(m):
        for c2 in range(c1):
            H[c2, c1] = H[c1, c2]
    return cost, pe, oe


_target_rows = kernel(_target_rows, calls=(log_vee,)) or _target_rows
_bone_features = kernel(_bone_features, calls=(log_vee, _inverse_left_jacobian)) or _bone_features
_hips_features = kernel(_hips_features) or _hips_features
_dominant = kernel(_dominant) or _dominant
_sparse_columns = kernel(_sparse_columns) or _sparse_columns
_prior_rows = kernel(_prior_rows, calls=(_dominant, _sparse_columns)) or _prior_rows
normal_equations = kernel(normal_equations, calls=(_target_rows, _bone_features, _hips_features, _prior_rows)) \
    or normal_equations


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
