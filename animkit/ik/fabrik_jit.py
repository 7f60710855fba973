"""FABRIK's solve (:mod:`.fabrik` in the shared loop, :func:`animkit.ik.solvers.run` with ``keep_last``) compiled
with numba, one problem after another: the same backward and forward passes, the same halvings of a step that
moves the effectors away, the same subtree fit where a published iteration gains less than ``SLOW``, and the same
stopping rules.

    backward:  b_g = mean_c [b_c − d_c ŵ_c]  (ball),   mean_c [b_c − h_c a − ρ_c ŵ⊥_c]  (hinge)
    forward:   hinge φ = atan2(Σ a·(u⊥ × v⊥), Σ u⊥·v⊥), clamped;  ball A′ = Jᵀ ΔR J A (Kabsch), Euler angles nearest,
               clamped to the box;  other: per-DOF turns, SWEEPS times

The NumPy functions of :mod:`.fabrik` are the reference this kernel's tests hold it to (to 1e-9 per iteration); they
also run with ``ANIMKIT_JIT=0`` and for chains the kernel does not take (swing–twist cones, a time budget). The
chain is one record (:class:`FabrikChain`, a named tuple of arrays) built once per model (:func:`fabrik_chain`).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from animkit.jit import kernel

__all__ = ["FabrikChain", "FabrikSettings", "solve_all", "step_one", "iteration", "best_turn", "clamp_angle1"]

Array = NDArray[Any]
HINGE, BALL, OTHER = 0, 1, 2
CONVERGED, STALLED, MAX_ITERATIONS = 0, 1, 2
BACKTRACK = 4  # as fabrik.BACKTRACK
SLOW = 0.8  # as fabrik.SLOW
SWEEPS = 4  # as fabrik.SWEEPS


class FabrikChain(NamedTuple):
    """A chain for the kernel: links (parent, axis, H0–H2, limits), effectors, and its groups (links of one node)
    with their kind, Euler axes (ball) and the groups and effectors below each, as CSR lists (ptr, idx)."""

    parent: Array
    axis: Array
    H0: Array
    H1: Array
    H2: Array
    lower: Array
    upper: Array
    eff_link: Array
    eff_C: Array
    gptr: Array  # (G + 1,) links of group g: gptr[g] .. gptr[g + 1] (consecutive)
    gparent: Array
    gkind: Array
    gorder: Array  # (G, 3) the ball's Euler axis indices (intrinsic order)
    child_g: tuple[Array, Array]
    child_e: tuple[Array, Array]
    sub_g: tuple[Array, Array]
    sub_e: tuple[Array, Array]


class FabrikSettings(NamedTuple):
    """The loop's settings: ``tol``, ``max_iter``, ``patience``, ``published``, ``max_step`` (≤ 0: no cap), row
    weights ``w`` (3E,)."""

    tol: float
    max_iter: int
    patience: int
    published: bool
    max_step: float
    w: Array


def _local(ch: FabrikChain, k: int, th: float, out: Array) -> None:
    """C_k E_k(θ) = H0 + sin θ H1 + (1 − cos θ) H2 (4×4)."""
    s, c = math.sin(th), 1.0 - math.cos(th)
    for i in range(4):
        for j in range(4):
            out[i, j] = ch.H0[k, i, j] + s * ch.H1[k, i, j] + c * ch.H2[k, i, j]


def _mul4(A: Array, B: Array, out: Array) -> None:
    for i in range(4):
        for j in range(4):
            out[i, j] = A[i, 0] * B[0, j] + A[i, 1] * B[1, j] + A[i, 2] * B[2, j] + A[i, 3] * B[3, j]


def _fk(ch: FabrikChain, q: Array, T: Array, p: Array) -> None:
    """World link frames T (n, 4, 4) and effector positions p (E, 3) for chain values q (n,)."""
    loc = np.empty((4, 4))
    for k in range(q.shape[0]):
        pk = ch.parent[k]
        if pk < 0:
            _local(ch, k, q[k], T[k])
        else:
            _local(ch, k, q[k], loc)
            _mul4(T[pk], loc, T[k])
    for e in range(ch.eff_link.shape[0]):
        k = ch.eff_link[e]
        for i in range(3):
            p[e, i] = T[k, i, 0] * ch.eff_C[e, 0, 3] + T[k, i, 1] * ch.eff_C[e, 1, 3] + \
                T[k, i, 2] * ch.eff_C[e, 2, 3] + T[k, i, 3]


def _mv(M: Array, v: Array) -> Array:
    """M[:3, :3] v."""
    return np.array([M[i, 0] * v[0] + M[i, 1] * v[1] + M[i, 2] * v[2] for i in range(3)])


def _mm(A: Array, B: Array, ta: bool) -> Array:
    """A[:3, :3] B[:3, :3] (``ta``: Aᵀ B)."""
    out = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            if ta:
                out[i, j] = A[0, i] * B[0, j] + A[1, i] * B[1, j] + A[2, i] * B[2, j]
            else:
                out[i, j] = A[i, 0] * B[0, j] + A[i, 1] * B[1, j] + A[i, 2] * B[2, j]
    return out


def _points(X: Array, M: Array, inverse: bool) -> Array:
    """Points (K, 3) mapped by the frame M (4×4): M x (or, ``inverse``, M⁻¹ x for a rigid M)."""
    out = np.empty_like(X)
    for t in range(X.shape[0]):
        for i in range(3):
            if inverse:
                out[t, i] = M[0, i] * (X[t, 0] - M[0, 3]) + M[1, i] * (X[t, 1] - M[1, 3]) + \
                    M[2, i] * (X[t, 2] - M[2, 3])
            else:
                out[t, i] = M[i, 0] * X[t, 0] + M[i, 1] * X[t, 1] + M[i, 2] * X[t, 2] + M[i, 3]
    return out


def _dist(p: Array, P: Array) -> float:
    """Σ_e |p_e − P_e|: the measure a step never raises."""
    s = 0.0
    for e in range(p.shape[0]):
        s += math.sqrt((p[e, 0] - P[e, 0]) ** 2 + (p[e, 1] - P[e, 1]) ** 2 + (p[e, 2] - P[e, 2]) ** 2)
    return s


def _unit_into(v: Array, fallback: Array, out: Array) -> None:
    n = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    for i in range(3):
        out[i] = v[i] / n if n > 1e-12 else fallback[i]


def _backward_point(ch: FabrikChain, g: int, pg: Array, bc: Array, pc: Array, T: Array, out: Array) -> None:
    """One child's candidate for the group's backward point (module docstring), added into ``out``."""
    k = ch.gptr[g]
    w = bc - pg
    rel = pc - pg
    zero = np.zeros(3)
    tmp = np.empty(3)
    dirn = np.empty(3)
    if ch.gkind[g] == HINGE:
        a = _mv(T[k], ch.axis[k])
        h = rel[0] * a[0] + rel[1] * a[1] + rel[2] * a[2]
        rperp = rel - a * h
        rho = math.sqrt(rperp[0] ** 2 + rperp[1] ** 2 + rperp[2] ** 2)
        wperp = w - a * (w[0] * a[0] + w[1] * a[1] + w[2] * a[2])
        _unit_into(rperp, zero, tmp)
        _unit_into(wperp, tmp, dirn)
        out += bc - h * a - rho * dirn
    else:
        d = math.sqrt(rel[0] ** 2 + rel[1] ** 2 + rel[2] ** 2)
        _unit_into(rel, zero, tmp)
        _unit_into(w, tmp, dirn)
        out += bc - d * dirn


def _backward(ch: FabrikChain, T: Array, p: Array, P: Array, back: Array) -> None:
    """The backward pass, children first: back (G, 3); the base's point is its current origin."""
    G = ch.gparent.shape[0]
    for g in range(G):
        back[g] = T[ch.gptr[g], :3, 3]
    cgp, cgi = ch.child_g
    cep, cei = ch.child_e
    for g in range(G - 1, -1, -1):
        if ch.gparent[g] < 0:
            continue
        pg = T[ch.gptr[g], :3, 3].copy()
        acc = np.zeros(3)
        for t in range(cgp[g], cgp[g + 1]):
            h = cgi[t]
            _backward_point(ch, g, pg, back[h].copy(), T[ch.gptr[h], :3, 3].copy(), T, acc)
        for t in range(cep[g], cep[g + 1]):
            j = cei[t]
            _backward_point(ch, g, pg, P[j].copy(), p[j].copy(), T, acc)
        m = (cgp[g + 1] - cgp[g]) + (cep[g + 1] - cep[g])
        back[g] = acc / m


def _ls_turn(a: Array, U: Array, V: Array, K: int) -> float:
    """φ* = atan2(Σ a·(u⊥ × v⊥), Σ u⊥·v⊥); 0 where the points lie on the axis (as :func:`.fabrik._ls_turn`)."""
    scale = 0.0
    num = 0.0
    den = 0.0
    for i in range(K):
        u, v = U[i], V[i]
        scale += math.sqrt(u[0] ** 2 + u[1] ** 2 + u[2] ** 2) * math.sqrt(v[0] ** 2 + v[1] ** 2 + v[2] ** 2)
        up = u - a * (u[0] * a[0] + u[1] * a[1] + u[2] * a[2])
        vp = v - a * (v[0] * a[0] + v[1] * a[1] + v[2] * a[2])
        num += a[0] * (up[1] * vp[2] - up[2] * vp[1]) + a[1] * (up[2] * vp[0] - up[0] * vp[2]) + \
            a[2] * (up[0] * vp[1] - up[1] * vp[0])
        den += up[0] * vp[0] + up[1] * vp[1] + up[2] * vp[2]
    return math.atan2(num, den) if math.hypot(num, den) > 1e-12 * scale else 0.0


def _wrap(x: float) -> float:
    return abs((x + math.pi) % (2 * math.pi) - math.pi)


def clamp_angle1(theta: float, lower: float, upper: float) -> float:
    """:func:`.fabrik.clamp_angle` for one angle."""
    out = min(max(theta, lower), upper)
    if lower <= -math.pi and upper >= math.pi or not (math.isfinite(lower) and math.isfinite(upper)):
        return out
    for shift in (-2 * math.pi, 2 * math.pi):
        alt = theta + shift
        if lower <= alt <= upper and (theta < lower or theta > upper):
            out = alt
    if lower <= out <= upper and abs(out - theta) % (2 * math.pi) < 1e-12:
        return out
    return lower if _wrap(theta - lower) <= _wrap(theta - upper) else upper


def _cross(a: Array, b: Array) -> Array:
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def _align(u: Array, v: Array) -> Array:
    """:func:`animkit.model.transforms.matrix_aligning` for one pair: the shortest turn R with R û = v̂."""
    nu = math.sqrt(u[0] ** 2 + u[1] ** 2 + u[2] ** 2)
    nv = math.sqrt(v[0] ** 2 + v[1] ** 2 + v[2] ** 2)
    if nu < 1e-300 or nv < 1e-300:
        return np.eye(3)
    a, b = u / nu, v / nv
    c = a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
    if c < -1.0 + 1e-12:
        perp = _cross(a, np.array([1.0, 0.0, 0.0]))
        if math.sqrt(perp[0] ** 2 + perp[1] ** 2 + perp[2] ** 2) < 1e-6:
            perp = _cross(a, np.array([0.0, 1.0, 0.0]))
        perp = perp / math.sqrt(perp[0] ** 2 + perp[1] ** 2 + perp[2] ** 2)
        return 2.0 * np.outer(perp, perp) - np.eye(3)
    x = _cross(a, b)
    Km = np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])
    return np.eye(3) + Km + (Km @ Km) / max(1.0 + c, 1e-12)


def best_turn(U: Array, V: Array, K: int) -> Array:
    """:func:`.fabrik.best_turn` for one problem: the shortest turn (one point), else the rotation maximising
    Σ v̂ᵢᵀ R uᵢ|uᵢ| + ε tr R, from Horn's quaternion (the top eigenvector of his 4×4 N, by Jacobi sweeps): the same
    optimum as the Kabsch SVD of the NumPy path, without a LAPACK call."""
    if K == 1:
        return _align(U[0], V[0])
    S = np.zeros((3, 3))
    s2 = 0.0
    for i in range(K):
        nu = math.sqrt(U[i, 0] ** 2 + U[i, 1] ** 2 + U[i, 2] ** 2)
        nv = max(math.sqrt(V[i, 0] ** 2 + V[i, 1] ** 2 + V[i, 2] ** 2), 1e-300)
        s2 += nu * nu
        for a in range(3):
            for b in range(3):
                S[a, b] += U[i, a] * V[i, b] / nv * nu
    for a in range(3):
        S[a, a] += 1e-9 * s2
    return _quat_matrix(_top_eigenvector(_horn_n(S)))


def _horn_n(S: Array) -> Array:
    """Horn's symmetric N (4×4) of S_ab = Σ u_a v_b: its top eigenvector is the quaternion of the best turn u → v."""
    N = np.empty((4, 4))
    N[0, 0] = S[0, 0] + S[1, 1] + S[2, 2]
    N[1, 1] = S[0, 0] - S[1, 1] - S[2, 2]
    N[2, 2] = -S[0, 0] + S[1, 1] - S[2, 2]
    N[3, 3] = -S[0, 0] - S[1, 1] + S[2, 2]
    N[0, 1] = N[1, 0] = S[1, 2] - S[2, 1]
    N[0, 2] = N[2, 0] = S[2, 0] - S[0, 2]
    N[0, 3] = N[3, 0] = S[0, 1] - S[1, 0]
    N[1, 2] = N[2, 1] = S[0, 1] + S[1, 0]
    N[1, 3] = N[3, 1] = S[2, 0] + S[0, 2]
    N[2, 3] = N[3, 2] = S[1, 2] + S[2, 1]
    return N


def _top_eigenvector(N: Array) -> Array:
    """The eigenvector of the largest eigenvalue of a symmetric 4×4 (cyclic Jacobi rotations; N is overwritten)."""
    W = np.eye(4)
    scale = 0.0
    for i in range(4):
        for j in range(4):
            scale += N[i, j] * N[i, j]
    for _ in range(50):
        off = 0.0
        for i in range(3):
            for j in range(i + 1, 4):
                off += N[i, j] * N[i, j]
        if off <= 1e-32 * scale:
            break
        for p in range(3):
            for r in range(p + 1, 4):
                if N[p, r] == 0.0:
                    continue
                th = (N[r, r] - N[p, p]) / (2.0 * N[p, r])
                t = 1.0 / (2.0 * th) if abs(th) > 1e150 else \
                    math.copysign(1.0, th) / (abs(th) + math.sqrt(th * th + 1.0))
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                for k in range(4):
                    a, b = N[k, p], N[k, r]
                    N[k, p], N[k, r] = c * a - s * b, s * a + c * b
                for k in range(4):
                    a, b = N[p, k], N[r, k]
                    N[p, k], N[r, k] = c * a - s * b, s * a + c * b
                for k in range(4):
                    a, b = W[k, p], W[k, r]
                    W[k, p], W[k, r] = c * a - s * b, s * a + c * b
    best = 0
    for i in range(1, 4):
        if N[i, i] > N[best, best]:
            best = i
    return W[:, best].copy()


def _quat_matrix(qv: Array) -> Array:
    """The rotation of the quaternion (w, x, y, z) (normalised here)."""
    n = math.sqrt(qv[0] ** 2 + qv[1] ** 2 + qv[2] ** 2 + qv[3] ** 2)
    w, x, y, z = qv[0] / n, qv[1] / n, qv[2] / n, qv[3] / n
    return np.array([[1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y)],
                     [2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x)],
                     [2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)]])


def _euler(R: Array, i: int, j: int, k: int) -> Array:
    """:func:`animkit.model.transforms.euler_intrinsic_from_matrix` for one matrix, the order as axis indices."""
    proper = i == k
    if proper:
        k = 3 - i - j
    sign = 1.0 if (j - i) % 3 == 1 else -1.0
    out = np.empty(3)
    if proper:
        beta = math.acos(min(max(R[i, i], -1.0), 1.0))
        lock = math.sin(beta) < 1e-9
        alpha = math.atan2(R[j, i], -sign * R[k, i])
        gamma = math.atan2(R[i, j], sign * R[i, k])
    else:
        sb = min(max(sign * R[i, k], -1.0), 1.0)
        beta = math.asin(sb)
        lock = abs(sb) > 1.0 - 1e-12
        alpha = math.atan2(-sign * R[j, k], R[k, k])
        gamma = math.atan2(-sign * R[i, j], R[i, i])
    if lock:
        alpha, gamma = math.atan2(sign * R[k, j], R[j, j]), 0.0
    out[0], out[1], out[2] = alpha, beta, gamma
    return out


def _euler_near(A: Array, near: Array, order: Array) -> Array:
    """:func:`animkit.model.joints.euler_angles_near` for one matrix: of the two Euler branches the one nearest
    ``near``, each angle moved by whole turns nearest its ``near`` value."""
    e1 = _euler(A, order[0], order[1], order[2])
    e2 = e1 + np.array([math.pi, 0.0, math.pi])
    e2[1] = math.pi - e1[1] if order[0] != order[2] else -e1[1]
    best, dist = near.copy(), np.inf
    for e in (e1, e2):
        e = e + 2 * math.pi * np.round((near - e) / (2 * math.pi))
        dd = np.sum((e - near) ** 2)
        if dd < dist:
            best, dist = e, dd
    return best


def _place(ch: FabrikChain, g: int, qg: Array, T_in: Array, x_loc: Array, Ts: Array) -> Array:
    """Frames Ts (m, 4, 4) of the group's links for its values qg (m,), and its subtree's points (K, 3) carried
    along (x_loc: in the last link's frame)."""
    k1 = ch.gptr[g]
    m = ch.gptr[g + 1] - k1
    loc = np.empty((4, 4))
    for i in range(m):
        _local(ch, k1 + i, qg[i], loc)
        if i == 0:
            _mul4(T_in, loc, Ts[0])
        else:
            _mul4(Ts[i - 1], loc, Ts[i])
    return _points(x_loc, Ts[m - 1], False)


def _targets(ch: FabrikChain, g: int, whole: bool, T: Array, p: Array, back: Array, P: Array) -> tuple[Array, Array]:
    """The points X (K, 3) the group turns (the first links' origins, then the effectors, below it: every one when
    ``whole``, else its children) and their backward points Y (K, 3)."""
    gp, gi = ch.sub_g if whole else ch.child_g
    ep, ei = ch.sub_e if whole else ch.child_e
    ng, ne = gp[g + 1] - gp[g], ep[g + 1] - ep[g]
    X = np.empty((ng + ne, 3))
    Y = np.empty((ng + ne, 3))
    for t in range(ng):
        h = gi[gp[g] + t]
        X[t] = T[ch.gptr[h], :3, 3]
        Y[t] = back[h]
    for t in range(ne):
        j = ei[ep[g] + t]
        X[ng + t] = p[j]
        Y[ng + t] = P[j]
    return X, Y


def _turn_group(ch: FabrikChain, g: int, qg: Array, T_in: Array, x_loc: Array, Y: Array) -> None:
    """The forward pass's turn of group g (module docstring), its values qg (m,) updated in place."""
    k1 = ch.gptr[g]
    m = ch.gptr[g + 1] - k1
    K = Y.shape[0]
    Ts = np.empty((m, 4, 4))
    pos = _place(ch, g, qg, T_in, x_loc, Ts)
    origin = Ts[0, :3, 3].copy()
    us = pos - origin
    vs = Y - origin
    if ch.gkind[g] == HINGE:
        a = _mv(Ts[0], ch.axis[k1])
        qg[0] = clamp_angle1(qg[0] + _ls_turn(a, us, vs, K), ch.lower[k1], ch.upper[k1])
    elif ch.gkind[g] == BALL:
        dR = best_turn(us, vs, K)
        J = _mm(T_in, ch.H0[k1], False)
        A = _mm(J, _mm(dR, Ts[m - 1], False), True)
        e = _euler_near(A, qg.copy(), ch.gorder[g])
        for i in range(m):
            qg[i] = min(max(e[i], ch.lower[k1 + i]), ch.upper[k1 + i])
    else:
        for _ in range(SWEEPS):
            for i in range(m):
                a = _mv(Ts[i], ch.axis[k1 + i])
                phi = _ls_turn(a, pos - origin, vs, K)
                qg[i] = clamp_angle1(qg[i] + phi, ch.lower[k1 + i], ch.upper[k1 + i])
                pos = _place(ch, g, qg, T_in, x_loc, Ts)


def iteration(ch: FabrikChain, q: Array, P: Array, subtree: bool) -> Array:
    """One backward and one forward pass from q (n,) toward P (E, 3): the new values (:func:`.fabrik.fabrik_iteration`'s
    ``q`` for one problem)."""
    n = q.shape[0]
    G = ch.gparent.shape[0]
    T = np.empty((n, 4, 4))
    p = np.empty((ch.eff_link.shape[0], 3))
    _fk(ch, q, T, p)
    back = np.empty((G, 3))
    _backward(ch, T, p, P, back)
    qn = q.copy()
    for g in range(G):
        if g > 0:
            _fk(ch, qn, T, p)
        k1, kl = ch.gptr[g], ch.gptr[g + 1] - 1
        T_in = np.eye(4) if ch.parent[k1] < 0 else T[ch.parent[k1]].copy()
        X, Y = _targets(ch, g, subtree or ch.gkind[g] == HINGE, T, p, back, P)
        x_loc = _points(X, T[kl], True)
        qg = qn[k1:kl + 1].copy()
        _turn_group(ch, g, qg, T_in, x_loc, Y)
        qn[k1:kl + 1] = qg
    return qn


def _dist_at(ch: FabrikChain, q: Array, P: Array) -> float:
    T = np.empty((q.shape[0], 4, 4))
    p = np.empty((ch.eff_link.shape[0], 3))
    _fk(ch, q, T, p)
    return _dist(p, P)


def _kept(ch: FabrikChain, q: Array, P: Array, before: float, dq: Array) -> Array:
    """A step that never moves the effectors away: halved up to BACKTRACK times where it does, then none."""
    for _ in range(BACKTRACK):
        if _dist_at(ch, q + dq, P) <= before:
            return dq
        dq = 0.5 * dq
    if _dist_at(ch, q + dq, P) > before:
        return np.zeros_like(dq)
    return dq


def step_one(ch: FabrikChain, q: Array, P: Array, published: bool) -> Array:
    """Δθ (n,) of one FABRIK step (:func:`.fabrik.fabrik_step` for one problem without cones)."""
    before = _dist_at(ch, q, P)
    dq = _kept(ch, q, P, before, iteration(ch, q, P, not published) - q)
    if not published:
        return dq
    after = _dist_at(ch, q + dq, P)
    if after > (1.0 - SLOW) * before:
        sub = _kept(ch, q, P, before, iteration(ch, q, P, True) - q)
        if _dist_at(ch, q + sub, P) < after:
            return sub
    return dq


def _measure(ch: FabrikChain, q: Array, P: Array, w: Array) -> tuple[float, float]:
    """‖W(P − p)‖ and the worst effector's distance (:func:`animkit.ik.solvers.evaluate` without orientation)."""
    T = np.empty((q.shape[0], 4, 4))
    p = np.empty((ch.eff_link.shape[0], 3))
    _fk(ch, q, T, p)
    err2, worst = 0.0, 0.0
    for e in range(p.shape[0]):
        d2 = 0.0
        for i in range(3):
            d = P[e, i] - p[e, i]
            d2 += d * d
            err2 += (d * w[3 * e + i]) ** 2
        worst = max(worst, d2)
    return math.sqrt(err2), math.sqrt(worst)


def _solve_one(ch: FabrikChain, st: FabrikSettings, q: Array, P: Array, hist: Array) -> tuple[int, int, float]:
    """The shared loop with ``keep_last`` for one problem: q (n,) updated in place; hist (max_iter + 1,) the
    error after each iteration. Returns (iterations, reason code, position error)."""
    q[:] = np.minimum(np.maximum(q, ch.lower), ch.upper)
    err, pos = _measure(ch, q, P, st.w)
    hist[0] = err
    flat, iters = 0, 0
    for it in range(st.max_iter + 1):
        done = pos <= st.tol
        if done:
            return iters, CONVERGED, pos
        if flat >= st.patience:
            return iters, STALLED, pos
        if it == st.max_iter:
            return iters, MAX_ITERATIONS, pos
        iters += 1
        dq = step_one(ch, q, P, st.published)
        if st.max_step > 0.0:
            big = np.max(np.abs(dq))
            dq = dq * min(1.0, st.max_step / max(big, 1e-300))
        qn = np.minimum(np.maximum(q + dq, ch.lower), ch.upper)
        for i in range(qn.shape[0]):
            if not math.isfinite(qn[i]):
                qn[i] = q[i]
        flat = 0 if np.max(np.abs(qn - q)) > 1e-14 else st.patience
        q[:] = qn
        err, pos = _measure(ch, q, P, st.w)
        hist[it + 1] = err
    return iters, MAX_ITERATIONS, pos


def solve_all(ch: FabrikChain, st: FabrikSettings, q: Array, P: Array, iters: Array, reason: Array, pos: Array,
              hist: Array) -> None:
    """:func:`_solve_one` for each of B problems: q (B, n) in place; iters, reason, pos (B,); hist (max_iter + 1, B)
    with each problem's last error carried to the end."""
    for b in range(q.shape[0]):
        h = np.empty(st.max_iter + 1)
        it, why, pe = _solve_one(ch, st, q[b], P[b], h)
        iters[b], reason[b], pos[b] = it, why, pe
        hist[:it + 1, b] = h[:it + 1]
        hist[it + 1:, b] = h[it]



_local = kernel(_local) or _local
_mul4 = kernel(_mul4) or _mul4
_fk = kernel(_fk, calls=(_local, _mul4)) or _fk
_dist = kernel(_dist) or _dist
_mv = kernel(_mv) or _mv
_mm = kernel(_mm) or _mm
_points = kernel(_points) or _points
_unit_into = kernel(_unit_into) or _unit_into
_backward_point = kernel(_backward_point, calls=(_unit_into, _mv)) or _backward_point
_backward = kernel(_backward, calls=(_backward_point,)) or _backward
_ls_turn = kernel(_ls_turn) or _ls_turn
_wrap = kernel(_wrap) or _wrap
clamp_angle1 = kernel(clamp_angle1, calls=(_wrap,)) or clamp_angle1
_cross = kernel(_cross) or _cross
_align = kernel(_align, calls=(_cross,)) or _align
_horn_n = kernel(_horn_n) or _horn_n
_top_eigenvector = kernel(_top_eigenvector) or _top_eigenvector
_quat_matrix = kernel(_quat_matrix) or _quat_matrix
best_turn = kernel(best_turn, calls=(_align, _horn_n, _top_eigenvector, _quat_matrix)) or best_turn
_euler = kernel(_euler) or _euler
_euler_near = kernel(_euler_near, calls=(_euler,)) or _euler_near
_place = kernel(_place, calls=(_local, _mul4, _points)) or _place
_targets = kernel(_targets) or _targets
_turn_group = kernel(_turn_group, calls=(_place, _ls_turn, clamp_angle1, best_turn, _euler_near, _mv, _mm)) \
    or _turn_group
iteration = kernel(iteration, calls=(_fk, _backward, _targets, _turn_group, _points)) or iteration
_dist_at = kernel(_dist_at, calls=(_fk, _dist)) or _dist_at
_kept = kernel(_kept, calls=(_dist_at,)) or _kept
step_one = kernel(step_one, calls=(_dist_at, _kept, iteration)) or step_one
_measure = kernel(_measure, calls=(_fk,)) or _measure
_solve_one = kernel(_solve_one, calls=(_measure, step_one)) or _solve_one
solve_all = kernel(solve_all, calls=(_solve_one,)) or solve_all
