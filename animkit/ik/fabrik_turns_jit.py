"""The rotations of FABRIK's compiled forward pass (:mod:`.fabrik_jit`), one problem at a time: the best turn of a
group's points onto their backward points, a ball joint's Euler angles nearest its current ones, and the small
frame products the pass takes points through (3×3 products, points into and out of a rigid frame).

    one point:  R = I + [x]× + [x]×² / (1 + c),  x = û × v̂, c = û·v̂            (the shortest turn, Rodrigues)
    several:    R = argmax Σ v̂ᵢᵀ R uᵢ|uᵢ| + ε tr R  = the quaternion of the top eigenvector of Horn's N(S)

The NumPy functions they stand for (:func:`.fabrik.best_turn`, :func:`animkit.model.transforms.matrix_aligning`,
:func:`animkit.model.joints.euler_angles_near`, :func:`.fabrik.clamp_angle`) are their tests' oracles; a single
axis's turn is the least-squares φ* = atan2(Σ a·(u⊥ × v⊥), Σ u⊥·v⊥) (:func:`.fabrik._ls_turn`), clamped into its
limits. Written as scalar loops into caller's arrays (no array expressions, no BLAS): numba compiles them in a
fraction of the time.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from animkit.jit import kernel

__all__ = ["best_turn", "best_turn_into", "euler_near", "clamp_angle1"]

Array = NDArray[Any]
_NUMPY_ERRORS = "numpy"  # no ZeroDivisionError paths: every division here is guarded


def _align(u: Array, v: Array, R: Array) -> None:
    """:func:`animkit.model.transforms.matrix_aligning` for one pair, into R (3, 3): the shortest turn with R û = v̂,
    I + [x]× + [x]×² / (1 + c) with x = û × v̂, c = û·v̂ (a half turn about an axis ⊥ û where c ≈ −1)."""
    nu = math.sqrt(u[0] ** 2 + u[1] ** 2 + u[2] ** 2)
    nv = math.sqrt(v[0] ** 2 + v[1] ** 2 + v[2] ** 2)
    for i in range(3):
        for j in range(3):
            R[i, j] = 1.0 if i == j else 0.0
    if nu < 1e-300 or nv < 1e-300:
        return
    a0, a1, a2 = u[0] / nu, u[1] / nu, u[2] / nu
    b0, b1, b2 = v[0] / nv, v[1] / nv, v[2] / nv
    c = a0 * b0 + a1 * b1 + a2 * b2
    if c < -1.0 + 1e-12:
        x0, x1, x2 = 0.0, a2, -a1  # a × (1, 0, 0)
        if math.sqrt(x1 ** 2 + x2 ** 2) < 1e-6:
            x0, x1, x2 = -a2, 0.0, a0  # a × (0, 1, 0)
        n = math.sqrt(x0 ** 2 + x1 ** 2 + x2 ** 2)
        x0, x1, x2 = x0 / n, x1 / n, x2 / n
        for i, xi in enumerate((x0, x1, x2)):
            R[i, 0], R[i, 1], R[i, 2] = 2.0 * xi * x0, 2.0 * xi * x1, 2.0 * xi * x2
            R[i, i] -= 1.0
        return
    x0, x1, x2 = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0
    K = ((0.0, -x2, x1), (x2, 0.0, -x0), (-x1, x0, 0.0))
    s = 1.0 / max(1.0 + c, 1e-12)
    for i in range(3):
        for j in range(3):
            R[i, j] += K[i][j] + (K[i][0] * K[0][j] + K[i][1] * K[1][j] + K[i][2] * K[2][j]) * s


def best_turn_into(U: Array, V: Array, R: Array, scratch: Array) -> None:
    """:func:`best_turn` into R (3, 3); ``scratch`` (3, 4, 4) its work space (no allocation)."""
    K = U.shape[0]
    if K == 1:
        _align(U[0], V[0], R)
        return
    S, N, E = scratch[0], scratch[1], scratch[2]
    for a in range(3):
        for b in range(3):
            S[a, b] = 0.0
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
    _horn_n(S, N)
    _quat_matrix(E[:, _top_eigenvector(N, E)], R)


def best_turn(U: Array, V: Array, K: int) -> Array:
    """:func:`.fabrik.best_turn` for one problem of K points U, V (K, 3): the shortest turn (one point), else the
    rotation maximising Σ v̂ᵢᵀ R uᵢ|uᵢ| + ε tr R, from Horn's quaternion (the top eigenvector of his 4×4 N, by Jacobi
    sweeps): the same optimum as the Kabsch SVD of the NumPy path, without a LAPACK call."""
    R = np.empty((3, 3))
    best_turn_into(np.ascontiguousarray(U[:K], dtype=np.float64), np.ascontiguousarray(V[:K], dtype=np.float64), R,
                   np.empty((3, 4, 4)))
    return R


def _horn_n(S: Array, N: Array) -> None:
    """Horn's symmetric N (4×4) of S_ab = Σ u_a v_b: its top eigenvector is the quaternion of the best turn u → v."""
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


def _top_eigenvector(N: Array, W: Array) -> int:
    """The column of W (4×4, overwritten) that is the eigenvector of the largest eigenvalue of a symmetric 4×4
    (cyclic Jacobi rotations; N is overwritten)."""
    for i in range(4):
        for j in range(4):
            W[i, j] = 1.0 if i == j else 0.0
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
    return best


def _quat_matrix(qv: Array, R: Array) -> None:
    """The rotation of the quaternion (w, x, y, z) (normalised here), into R (3, 3)."""
    n = math.sqrt(qv[0] ** 2 + qv[1] ** 2 + qv[2] ** 2 + qv[3] ** 2)
    w, x, y, z = qv[0] / n, qv[1] / n, qv[2] / n, qv[3] / n
    R[0, 0], R[0, 1], R[0, 2] = 1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y)
    R[1, 0], R[1, 1], R[1, 2] = 2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x)
    R[2, 0], R[2, 1], R[2, 2] = 2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)


def _euler(R: Array, i: int, j: int, k: int) -> tuple[float, float, float]:
    """:func:`animkit.model.transforms.euler_intrinsic_from_matrix` for one matrix, the order as axis indices."""
    proper = i == k
    if proper:
        k = 3 - i - j
    sign = 1.0 if (j - i) % 3 == 1 else -1.0
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
    return alpha, beta, gamma


def euler_near(A: Array, qg: Array, order: Array) -> None:
    """:func:`animkit.model.joints.euler_angles_near` for one matrix, in place of qg (3,): of the two Euler branches
    the one nearest qg, each angle moved by whole turns nearest its qg value."""
    a0, a1, a2 = _euler(A, order[0], order[1], order[2])
    b0, b2 = a0 + math.pi, a2 + math.pi
    b1 = math.pi - a1 if order[0] != order[2] else -a1
    a0, a1, a2 = _near(a0, qg[0]), _near(a1, qg[1]), _near(a2, qg[2])
    b0, b1, b2 = _near(b0, qg[0]), _near(b1, qg[1]), _near(b2, qg[2])
    da = (a0 - qg[0]) ** 2 + (a1 - qg[1]) ** 2 + (a2 - qg[2]) ** 2
    db = (b0 - qg[0]) ** 2 + (b1 - qg[1]) ** 2 + (b2 - qg[2]) ** 2
    best, dist = -1, np.inf
    if da < dist:
        best, dist = 0, da
    if db < dist:
        best = 1
    if best == 0:
        qg[0], qg[1], qg[2] = a0, a1, a2
    elif best == 1:
        qg[0], qg[1], qg[2] = b0, b1, b2


def _near(x: float, ref: float) -> float:
    """x moved by the whole turns that bring it nearest ``ref``."""
    return x + 2 * math.pi * np.rint((ref - x) / (2 * math.pi))



def _mv(M: Array, v: Array, out: Array) -> None:
    """out = M[:3, :3] v."""
    for i in range(3):
        out[i] = M[i, 0] * v[0] + M[i, 1] * v[1] + M[i, 2] * v[2]


def _mm(A: Array, B: Array, out: Array) -> None:
    """out = A[:3, :3] B[:3, :3]."""
    for i in range(3):
        for j in range(3):
            out[i, j] = A[i, 0] * B[0, j] + A[i, 1] * B[1, j] + A[i, 2] * B[2, j]


def _mtm(A: Array, B: Array, out: Array) -> None:
    """out = A[:3, :3]ᵀ B[:3, :3]."""
    for i in range(3):
        for j in range(3):
            out[i, j] = A[0, i] * B[0, j] + A[1, i] * B[1, j] + A[2, i] * B[2, j]


def _into_frame(X: Array, M: Array, out: Array) -> None:
    """Points (K, 3) in the rigid frame M (4×4): M⁻¹ x = M[:3, :3]ᵀ (x − M[:3, 3])."""
    for t in range(X.shape[0]):
        for i in range(3):
            out[t, i] = M[0, i] * (X[t, 0] - M[0, 3]) + M[1, i] * (X[t, 1] - M[1, 3]) + M[2, i] * (X[t, 2] - M[2, 3])


def _out_of_frame(X: Array, M: Array, out: Array) -> None:
    """Points (K, 3) mapped by the frame M (4×4): M x."""
    for t in range(X.shape[0]):
        for i in range(3):
            out[t, i] = M[i, 0] * X[t, 0] + M[i, 1] * X[t, 1] + M[i, 2] * X[t, 2] + M[i, 3]


def _relative(X: Array, o: Array, out: Array) -> None:
    """out = X − o for points X (K, 3)."""
    for t in range(X.shape[0]):
        for i in range(3):
            out[t, i] = X[t, i] - o[i]


def _ls_turn(a: Array, U: Array, V: Array) -> float:
    """φ* = atan2(Σ a·(u⊥ × v⊥), Σ u⊥·v⊥); 0 where the points lie on the axis (as :func:`.fabrik._ls_turn`: where
    |(num, den)| clears 1e-12 √(Σ|u|² Σ|v|²) ≥ 1e-12 Σ|u||v| (Cauchy–Schwarz), the per-point norms are not needed)."""
    uu, vv, num, den = 0.0, 0.0, 0.0, 0.0
    for i in range(U.shape[0]):
        u0, u1, u2 = U[i, 0], U[i, 1], U[i, 2]
        v0, v1, v2 = V[i, 0], V[i, 1], V[i, 2]
        uu += u0 * u0 + u1 * u1 + u2 * u2
        vv += v0 * v0 + v1 * v1 + v2 * v2
        ua = u0 * a[0] + u1 * a[1] + u2 * a[2]
        va = v0 * a[0] + v1 * a[1] + v2 * a[2]
        u0, u1, u2 = u0 - a[0] * ua, u1 - a[1] * ua, u2 - a[2] * ua
        v0, v1, v2 = v0 - a[0] * va, v1 - a[1] * va, v2 - a[2] * va
        num += a[0] * (u1 * v2 - u2 * v1) + a[1] * (u2 * v0 - u0 * v2) + a[2] * (u0 * v1 - u1 * v0)
        den += u0 * v0 + u1 * v1 + u2 * v2
    size = math.hypot(num, den)
    if size > 1e-12 * math.sqrt(uu * vv):
        return math.atan2(num, den)
    scale = 0.0
    for i in range(U.shape[0]):
        nu = math.sqrt(U[i, 0] ** 2 + U[i, 1] ** 2 + U[i, 2] ** 2)
        scale += nu * math.sqrt(V[i, 0] ** 2 + V[i, 1] ** 2 + V[i, 2] ** 2)
    return math.atan2(num, den) if size > 1e-12 * scale else 0.0


def _wrap(x: float) -> float:
    return abs((x + math.pi) % (2 * math.pi) - math.pi)


def clamp_angle1(theta: float, lower: float, upper: float) -> float:
    """:func:`.fabrik.clamp_angle` for one angle."""
    if lower <= theta <= upper:
        return theta  # what the rules below give inside the limits
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

# refcounts=False: helpers that allocate nothing and return no array (as in .fabrik_jit)
_mv = kernel(_mv, internal=True, refcounts=False) or _mv
_mm = kernel(_mm, internal=True, refcounts=False) or _mm
_mtm = kernel(_mtm, internal=True, refcounts=False) or _mtm
_into_frame = kernel(_into_frame, internal=True, refcounts=False) or _into_frame
_out_of_frame = kernel(_out_of_frame, internal=True, refcounts=False) or _out_of_frame
_relative = kernel(_relative, internal=True, refcounts=False) or _relative
_align = kernel(_align, error_model=_NUMPY_ERRORS, internal=True, refcounts=False) or _align
_horn_n = kernel(_horn_n, internal=True, refcounts=False) or _horn_n
_top_eigenvector = kernel(_top_eigenvector, error_model=_NUMPY_ERRORS, internal=True, refcounts=False) or \
    _top_eigenvector
_quat_matrix = kernel(_quat_matrix, error_model=_NUMPY_ERRORS, internal=True, refcounts=False) or _quat_matrix
best_turn_into = kernel(best_turn_into, calls=(_align, _horn_n, _top_eigenvector, _quat_matrix),
                         error_model=_NUMPY_ERRORS, refcounts=False) or best_turn_into
_euler = kernel(_euler, error_model=_NUMPY_ERRORS, internal=True, refcounts=False) or _euler
_near = kernel(_near, error_model=_NUMPY_ERRORS, internal=True, refcounts=False) or _near
euler_near = kernel(euler_near, calls=(_euler, _near), error_model=_NUMPY_ERRORS, internal=True,
                    refcounts=False) or euler_near
_ls_turn = kernel(_ls_turn, internal=True, refcounts=False) or _ls_turn
_wrap = kernel(_wrap, error_model=_NUMPY_ERRORS, internal=True, refcounts=False) or _wrap
clamp_angle1 = kernel(clamp_angle1, calls=(_wrap,), refcounts=False) or clamp_angle1
