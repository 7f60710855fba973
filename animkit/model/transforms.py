"""Homogeneous transforms and rotation conversions: plain functions on arrays.

Every function is vectorised over any leading batch shape ``...``.
Column vectors: a point ``p`` maps to ``M @ p``. Angles are radians.
Quaternions are ``(w, x, y, z)``. A rotation vector is ``axis * angle``.

Euler angles: ``order`` is three letters from ``xyz`` (``"zyx"``, ``"xyx"``...,
12 valid orders). *Intrinsic* means each rotation is about the already-rotated
(body) axes, so ``R = R_a(α) R_b(β) R_c(γ)`` for order ``"abc"``; *extrinsic*
means about the fixed (world) axes, so ``R = R_c(γ) R_b(β) R_a(α)``.
BVH channel orders are intrinsic.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import AnimkitError, unknown_name
from animkit.model.quaternions import (
    matrix_from_quaternion,
    quaternion_conjugate,
    quaternion_from_matrix,
    quaternion_multiply,
    quaternion_slerp,
)

__all__ = [
    "cross3",
    "IDENTITY3",
    "vector_norm",
    "EULER_ORDERS",
    "AXES",
    "identity",
    "cos_sin",
    "translation",
    "rotation_x",
    "rotation_y",
    "rotation_z",
    "rotation_about_axis",
    "drotation_x",
    "drotation_y",
    "drotation_z",
    "drotation_about_axis",
    "homogeneous",
    "invert_rigid",
    "is_rigid",
    "matrix_about_axis",
    "matrix_from_quaternion",
    "quaternion_from_matrix",
    "matrix_from_axis_angle",
    "axis_angle_from_matrix",
    "rotation_vector_from_matrix",
    "rotation_error",
    "matrix_from_rotation_vector",
    "quaternion_from_axis_angle",
    "axis_angle_from_quaternion",
    "matrix_from_euler_intrinsic",
    "matrix_from_euler_extrinsic",
    "euler_intrinsic_from_matrix",
    "euler_extrinsic_from_matrix",
    "gimbal_margin",
    "euler_order_away_from_lock",
    "quaternion_multiply",
    "quaternion_conjugate",
    "quaternion_slerp",
    "matrix_aligning_z_to",
    "matrix_aligning",
    "swing_twist_from_matrix",
    "matrix_from_swing_twist",
    "axis_vector",
]

Array = NDArray[np.float64]

AXES: Final[dict[str, Array]] = {
    "x": np.array([1.0, 0.0, 0.0]),
    "y": np.array([0.0, 1.0, 0.0]),
    "z": np.array([0.0, 0.0, 1.0]),
}
EULER_ORDERS: Final[tuple[str, ...]] = (
    "xyz", "xzy", "yxz", "yzx", "zxy", "zyx",  # Tait-Bryan
    "xyx", "xzx", "yxy", "yzy", "zxz", "zyz",  # proper Euler
)
_INDEX = {"x": 0, "y": 1, "z": 2}


def axis_vector(axis: str | ArrayLike) -> Array:
    """Unit 3-vector for ``"x"``, ``"-y"``... or any non-zero 3-vector (normalised)."""
    if isinstance(axis, str):
        sign = -1.0 if axis.startswith("-") else 1.0
        letter = axis.lstrip("+-").lower()
        if letter not in AXES:
            raise AnimkitError(unknown_name("axis", axis, ["x", "y", "z", "-x", "-y", "-z"]))
        return sign * AXES[letter]
    v = np.asarray(axis, dtype=float)
    if v.shape != (3,):
        raise AnimkitError(f"an axis must be 3 finite numbers, got {axis!r}")
    x, y, z = v.tolist()  # three scalars: plain arithmetic is several times faster than NumPy's small-array calls
    n = math.sqrt(x * x + y * y + z * z)
    if not math.isfinite(n):
        raise AnimkitError(f"an axis must be 3 finite numbers, got {axis!r}")
    if n < 1e-12:
        raise AnimkitError(f"an axis must be non-zero, got {axis!r}")
    return v / n if n != 1.0 else v.copy()


def cos_sin(theta: ArrayLike) -> tuple[Array, Array]:
    """(cos θ, sin θ) = ((1 − t²)/(1 + t²), 2t/(1 + t²)) with t = tan(θ/2).

    Same values as np.cos/np.sin to an ulp; one vectorised tan is several times faster than the pair
    where NumPy's float64 cos/sin are not vectorised (as on this project's CI machines).
    """
    t = np.tan(0.5 * np.asarray(theta, dtype=float))
    t2 = t * t
    d = 1.0 / (1.0 + t2)
    return (1.0 - t2) * d, 2.0 * t * d


_I4: Final[Array] = np.eye(4)
_I4.setflags(write=False)


def identity(shape: tuple[int, ...] = ()) -> Array:
    """I₄ broadcast to ``shape + (4, 4)``."""
    if not shape:
        return _I4.copy()  # a copy of a constant: several times cheaper than np.eye per call
    return np.broadcast_to(_I4, shape + (4, 4)).copy()


def homogeneous(R: ArrayLike, p: ArrayLike | None = None) -> Array:
    """[[R, p], [0, 1]] from a rotation ``(..., 3, 3)`` and translation ``(..., 3)``."""
    R = np.asarray(R, dtype=float)
    out = identity(R.shape[:-2])
    out[..., :3, :3] = R
    if p is not None:
        out[..., :3, 3] = p
    return out


def translation(l: ArrayLike) -> Array:  # noqa: E741 - the field's name for it
    """L(l) = [[I, l], [0, 1]]: translation by ``l`` of shape ``(..., 3)``."""
    l = np.asarray(l, dtype=float)
    out = identity(l.shape[:-1])
    out[..., :3, 3] = l
    return out


def _planar(theta: ArrayLike, i: int, j: int, derivative: bool) -> Array:
    t = np.asarray(theta, dtype=float)
    c, s = np.cos(t), np.sin(t)
    out = np.zeros(t.shape + (4, 4))
    if derivative:
        # d/dθ of the rotation block; the rest (translation, homogeneous row) is constant
        out[..., i, i] = -s
        out[..., i, j] = -c
        out[..., j, i] = c
        out[..., j, j] = -s
    else:
        k = 3 - i - j
        out[..., k, k] = 1.0
        out[..., 3, 3] = 1.0
        out[..., i, i] = c
        out[..., i, j] = -s
        out[..., j, i] = s
        out[..., j, j] = c
    return out


def rotation_x(theta: ArrayLike) -> Array:
    """R_x(θ): rows (1,0,0), (0,c,−s), (0,s,c)."""
    return _planar(theta, 1, 2, False)


def rotation_y(theta: ArrayLike) -> Array:
    """R_y(θ): rows (c,0,s), (0,1,0), (−s,0,c)."""
    return _planar(theta, 2, 0, False)


def rotation_z(theta: ArrayLike) -> Array:
    """R_z(θ): rows (c,−s,0), (s,c,0), (0,0,1)."""
    return _planar(theta, 0, 1, False)


def drotation_x(theta: ArrayLike) -> Array:
    """dR_x/dθ = [x]_× R_x(θ) (homogeneous, zero translation and zero last row)."""
    return _planar(theta, 1, 2, True)


def drotation_y(theta: ArrayLike) -> Array:
    """dR_y/dθ = [y]_× R_y(θ)."""
    return _planar(theta, 2, 0, True)


def drotation_z(theta: ArrayLike) -> Array:
    """dR_z/dθ = [z]_× R_z(θ)."""
    return _planar(theta, 0, 1, True)


IDENTITY3: Final = np.eye(3)  # I (3, 3), read-only: made once (np.eye's numbers, not allocated on every call)
IDENTITY3.flags.writeable = False


def cross3(a: Array, b: Array) -> Array:
    """a × b = (a₁b₂ − a₂b₁, a₂b₀ − a₀b₂, a₀b₁ − a₁b₀) over the last axis (length 3), broadcast: the same operations
    as ``np.cross``, bit for bit, without its per-call axis handling (≈ 10× faster on the small arrays of IK)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    x = a1 * b2 - a2 * b1
    out = np.empty(x.shape + (3,), x.dtype)  # the three components written in place (np.stack's checks cost more)
    out[..., 0] = x
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


def vector_norm(v: Array) -> float:
    """‖v‖ = √(v·v) over every element of a float array: ``np.linalg.norm(v)``'s numbers, bit for bit (the same
    ravel and dot product, a correctly rounded square root), without its per-call checks (≈ 5× faster on the 3-vectors
    of IK, which it measures thousands of times a bake)."""
    x = v.ravel(order="K")
    return math.sqrt(float(x.dot(x)))


def _skew(a: Array) -> Array:
    a = np.asarray(a, dtype=float)
    K = np.zeros(a.shape[:-1] + (3, 3))
    K[..., 0, 1], K[..., 0, 2] = -a[..., 2], a[..., 1]
    K[..., 1, 0], K[..., 1, 2] = a[..., 2], -a[..., 0]
    K[..., 2, 0], K[..., 2, 1] = -a[..., 1], a[..., 0]
    return K


def matrix_about_axis(axis: ArrayLike, theta: ArrayLike) -> Array:
    """Rodrigues: R = I + sinθ [a]_× + (1 − cosθ) [a]_×², 3×3, ``a`` a unit axis ``(..., 3)``."""
    a = np.asarray(axis, dtype=float)
    t = np.asarray(theta, dtype=float)[..., None, None]
    K = _skew(a)
    return IDENTITY3 + np.sin(t) * K + (1.0 - np.cos(t)) * (K @ K)


def rotation_about_axis(axis: ArrayLike, theta: ArrayLike) -> Array:
    """R_a(θ) homogeneous, by Rodrigues' formula; ``axis`` is a unit 3-vector (or a batch)."""
    R = matrix_about_axis(axis, theta)
    return homogeneous(R)


def drotation_about_axis(axis: ArrayLike, theta: ArrayLike) -> Array:
    """dR_a/dθ = cosθ [a]_× + sinθ [a]_×² (homogeneous, zero last row)."""
    a = np.asarray(axis, dtype=float)
    t = np.asarray(theta, dtype=float)[..., None, None]
    K = _skew(a)
    D = np.cos(t) * K + np.sin(t) * (K @ K)
    out = np.zeros(D.shape[:-2] + (4, 4))
    out[..., :3, :3] = D
    return out


def invert_rigid(M: ArrayLike) -> Array:
    """M⁻¹ = [[Rᵀ, −Rᵀp], [0, 1]] for a rigid ``M = [[R, p], [0, 1]]``."""
    M = np.asarray(M, dtype=float)
    Rt = np.swapaxes(M[..., :3, :3], -1, -2)
    out = identity(M.shape[:-2])
    out[..., :3, :3] = Rt
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", Rt, M[..., :3, 3])
    return out


_ROW = np.array([0.0, 0.0, 0.0, 1.0])


def is_rigid(M: ArrayLike, tol: float = 1e-6) -> bool:
    """True when ``M`` is 4×4 with RᵀR = I, det R = +1, last row (0, 0, 0, 1), all finite."""
    M = np.asarray(M, dtype=float)
    if M.shape[-2:] != (4, 4) or not np.all(np.isfinite(M)):
        return False
    if M.shape == (4, 4):  # one matrix: plain arithmetic, no LAPACK call
        if (M[:3, :3] == IDENTITY3).all() and (M[3] == _ROW).all():  # a pure translation (most arcs): rigid
            return True
        R = M[:3, :3]
        r0, r1, r2 = R
        det = (r0[0] * (r1[1] * r2[2] - r1[2] * r2[1]) - r0[1] * (r1[0] * r2[2] - r1[2] * r2[0])
               + r0[2] * (r1[0] * r2[1] - r1[1] * r2[0]))
        return bool(np.abs(R.T @ R - np.eye(3)).max() <= tol and abs(det - 1.0) <= tol
                    and np.abs(M[3] - (0.0, 0.0, 0.0, 1.0)).max() <= tol)
    R = M[..., :3, :3]
    ortho = np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3)).max() <= tol
    det = np.abs(np.linalg.det(R) - 1.0).max() <= tol
    row = np.abs(M[..., 3, :] - np.array([0.0, 0.0, 0.0, 1.0])).max() <= tol
    return bool(ortho and det and row)


# --- quaternions: animkit.quaternions (imported above; their names stay importable from here) ---------------


# --- axis-angle ---------------------------------------------------------------------------------------


def matrix_from_axis_angle(axis: ArrayLike, angle: ArrayLike) -> Array:
    """R = exp(θ [a]_×), 3×3 (the axis is normalised first)."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    return matrix_about_axis(a, angle)


def matrix_from_rotation_vector(v: ArrayLike) -> Array:
    """R = exp([v]_×) for a rotation vector v = θ a; the zero vector gives I."""
    v = np.asarray(v, dtype=float)
    theta = np.linalg.norm(v, axis=-1)
    safe = np.where(theta < 1e-300, 1.0, theta)
    return matrix_about_axis(v / safe[..., None], theta)


_VEE_A = np.array([7, 2, 3])  # R[2,1], R[0,2], R[1,0] in a flattened 3×3
_VEE_B = np.array([5, 6, 1])  # R[1,2], R[2,0], R[0,1]
_DIAG = np.array([0, 4, 8])


def rotation_vector_from_matrix(R: ArrayLike) -> Array:
    """v = θ a = log(R)^∨ (..., 3), θ ∈ [0, π]: the one SO(3) log map of animkit.

    With u = vee(R − Rᵀ)/2 = a sin θ and cos θ = (tr R − 1)/2, θ = atan2(|u|, cos θ) and v = u θ/sin θ (→ u at 0).
    Near π, where sin θ vanishes, the axis comes from the symmetric part (R + Rᵀ)/2 − cos θ I = (1 − cos θ) a aᵀ
    (its largest column), signed like u.
    """
    M: Array = np.asarray(R, dtype=float)
    flat = M.reshape(M.shape[:-2] + (9,))
    u = 0.5 * (flat[..., _VEE_A] - flat[..., _VEE_B])
    cos = (0.5 * (flat[..., _DIAG].sum(-1) - 1.0)).clip(-1.0, 1.0)
    sin = np.sqrt(np.einsum("...i,...i->...", u, u))
    angle = np.arctan2(sin, cos)
    out: Array = u * np.where(sin > 1e-12, angle / np.maximum(sin, 1e-300), 1.0)[..., None]
    near_pi = (cos < 0.0) & (sin < 1e-6)
    if near_pi.any():
        S = 0.5 * (M + np.swapaxes(M, -1, -2)) - cos[..., None, None] * np.eye(3)
        col = np.argmax(np.stack([S[..., 0, 0], S[..., 1, 1], S[..., 2, 2]], -1), axis=-1)
        ax = np.take_along_axis(S, col[..., None, None].repeat(3, -1), -2)[..., 0, :]
        ax = ax / np.maximum(np.linalg.norm(ax, axis=-1, keepdims=True), 1e-300)
        sgn = np.where(np.sum(ax * u, -1) < 0, -1.0, 1.0)
        out = np.where(near_pi[..., None], ax * (sgn * angle)[..., None], out)
    return out


def rotation_error(R_target: ArrayLike, R_current: ArrayLike) -> Array:
    """ω = log(R_target · R_currentᵀ)^∨ (..., 3): the rotation vector that turns the current frame onto the target
    (in world coordinates); the orientation residual of IK."""
    Rt = np.asarray(R_target, dtype=float)
    Rc = np.asarray(R_current, dtype=float)
    return rotation_vector_from_matrix(Rt @ np.swapaxes(Rc, -1, -2))


def axis_angle_from_matrix(R: ArrayLike) -> tuple[Array, Array]:
    """(a, θ) with R = exp(θ [a]_×), θ ∈ [0, π]; a = (1, 0, 0) where θ = 0."""
    return axis_angle_from_quaternion(quaternion_from_matrix(R))


def quaternion_from_axis_angle(axis: ArrayLike, angle: ArrayLike) -> Array:
    """q = (cos θ/2, a sin θ/2)."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    h = np.asarray(angle, dtype=float)[..., None] / 2.0
    return np.concatenate([np.cos(h), a * np.sin(h)], axis=-1)


def axis_angle_from_quaternion(q: ArrayLike) -> tuple[Array, Array]:
    """(a, θ) with θ = 2 atan2(|v|, w) ∈ [0, π] for q = (w, v); a = (1, 0, 0) where θ = 0."""
    qn: Array = np.asarray(q, dtype=float)
    qn = qn / np.linalg.norm(qn, axis=-1, keepdims=True)
    qn = np.where(qn[..., :1] < 0, -qn, qn)
    v = qn[..., 1:]
    n = np.linalg.norm(v, axis=-1)
    angle = 2.0 * np.arctan2(n, qn[..., 0])
    small = n < 1e-15
    axis = np.where(small[..., None], np.array([1.0, 0.0, 0.0]), v / np.where(small, 1.0, n)[..., None])
    return axis, angle


# --- swing and twist ----------------------------------------------------------------------------------


def swing_twist_from_matrix(R: ArrayLike, axis: ArrayLike) -> tuple[Array, Array]:
    """(s, τ) with R = exp([s]_×) R_t(τ): the twist R_t(τ) about the unit axis t, then the swing s ⊥ t, the shortest
    turn carrying t onto R t: s = σ (t × Rt)/|t × Rt|, σ = atan2(|t × Rt|, t·Rt) ∈ [0, π];
    τ = atan2(t·vee(W − Wᵀ)/2, (tr W − 1)/2) ∈ (−π, π] for W = exp([s]_×)ᵀ R.

    At σ = π (R t = −t) the swing axis is any direction ⊥ t; this picks t × e with e the coordinate axis least
    aligned with t, so the pair still composes back to R."""
    M: Array = np.asarray(R, dtype=float)[..., :3, :3]
    t = np.asarray(axis, dtype=float)
    t = np.broadcast_to(t / np.linalg.norm(t, axis=-1, keepdims=True), M.shape[:-1])
    d = np.einsum("...ij,...j->...i", M, t)
    c = np.cross(t, d)
    sn = np.linalg.norm(c, axis=-1)
    cs = np.sum(t * d, axis=-1)
    sigma = np.arctan2(sn, cs)
    e = np.eye(3)[np.argmin(np.abs(t), axis=-1)]
    perp = np.cross(t, e)
    n = np.where((sn > 1e-12)[..., None], c / np.maximum(sn, 1e-300)[..., None],
                 perp / np.linalg.norm(perp, axis=-1, keepdims=True))
    s = n * sigma[..., None]
    W = np.swapaxes(matrix_about_axis(n, sigma), -1, -2) @ M
    flat = W.reshape(W.shape[:-2] + (9,))
    u = 0.5 * (flat[..., _VEE_A] - flat[..., _VEE_B])
    tau = np.arctan2(np.sum(u * t, axis=-1), 0.5 * (flat[..., _DIAG].sum(-1) - 1.0))
    return s, tau


def matrix_from_swing_twist(s: ArrayLike, tau: ArrayLike, axis: ArrayLike) -> Array:
    """R = exp([s]_×) R_t(τ), the inverse of :func:`swing_twist_from_matrix`."""
    t = np.asarray(axis, dtype=float)
    t = t / np.linalg.norm(t, axis=-1, keepdims=True)
    return matrix_from_rotation_vector(s) @ matrix_about_axis(np.broadcast_to(t, np.shape(s)),
                                                              np.asarray(tau, dtype=float))


# --- Euler angles -------------------------------------------------------------------------------------


def _check_order(order: str) -> str:
    o = order.lower()
    if o not in EULER_ORDERS:
        raise AnimkitError(unknown_name("Euler order", order, EULER_ORDERS))
    return o


def _elementary(letter: str, theta: Array) -> Array:
    return matrix_about_axis(AXES[letter], theta)


def matrix_from_euler_intrinsic(angles: ArrayLike, order: str) -> Array:
    """R = R_a(α) R_b(β) R_c(γ) for intrinsic order ``"abc"`` and angles (α, β, γ), 3×3."""
    o = _check_order(order)
    a = np.asarray(angles, dtype=float)
    return _elementary(o[0], a[..., 0]) @ _elementary(o[1], a[..., 1]) @ _elementary(o[2], a[..., 2])


def matrix_from_euler_extrinsic(angles: ArrayLike, order: str) -> Array:
    """R = R_c(γ) R_b(β) R_a(α) for extrinsic order ``"abc"`` (about fixed axes a, then b, then c)."""
    o = _check_order(order)
    a = np.asarray(angles, dtype=float)
    return _elementary(o[2], a[..., 2]) @ _elementary(o[1], a[..., 1]) @ _elementary(o[0], a[..., 0])


def euler_intrinsic_from_matrix(R: ArrayLike, order: str) -> Array:
    """(α, β, γ) with R = R_a(α) R_b(β) R_c(γ); β ∈ [−π/2, π/2] (Tait-Bryan) or [0, π] (proper).

    At gimbal lock (β at its bound) γ is set to 0 and α carries the whole turn.
    """
    o = _check_order(order)
    R = np.asarray(R, dtype=float)[..., :3, :3]
    i, j, k = (_INDEX[c] for c in o)
    proper = i == k
    if proper:
        k = 3 - i - j
    # parity: +1 when (i, j, k) is a cyclic permutation of (0, 1, 2)
    sign = 1.0 if (j - i) % 3 == 1 else -1.0
    if proper:
        # R = R_i(α) R_j(β) R_i(γ)
        cb = np.clip(R[..., i, i], -1.0, 1.0)
        beta = np.arccos(cb)
        sb = np.sin(beta)
        lock = sb < 1e-9
        alpha = np.arctan2(R[..., j, i], -sign * R[..., k, i])
        gamma = np.arctan2(R[..., i, j], sign * R[..., i, k])
        # lock: R = R_i(α ± γ); put everything into α
        alpha_lock = np.arctan2(sign * R[..., k, j], R[..., j, j])
        alpha = np.where(lock, alpha_lock, alpha)
        gamma = np.where(lock, 0.0, gamma)
    else:
        # R = R_i(α) R_j(β) R_k(γ)
        sb = np.clip(sign * R[..., i, k], -1.0, 1.0)
        beta = np.arcsin(sb)
        lock = np.abs(sb) > 1.0 - 1e-12
        alpha = np.arctan2(-sign * R[..., j, k], R[..., k, k])
        gamma = np.arctan2(-sign * R[..., i, j], R[..., i, i])
        alpha_lock = np.arctan2(sign * R[..., k, j], R[..., j, j])
        alpha = np.where(lock, alpha_lock, alpha)
        gamma = np.where(lock, 0.0, gamma)
    return np.stack([alpha, beta, gamma], axis=-1)


def euler_extrinsic_from_matrix(R: ArrayLike, order: str) -> Array:
    """(α, β, γ) with R = R_c(γ) R_b(β) R_a(α) for extrinsic order ``"abc"``.

    Extrinsic "abc" with angles (α, β, γ) equals intrinsic "cba" with (γ, β, α).
    """
    o = _check_order(order)
    return euler_intrinsic_from_matrix(R, o[::-1])[..., ::-1].copy()


def gimbal_margin(R: ArrayLike, order: str) -> Array:
    """π/2 − |β| (Tait–Bryan) or min(β, π − β) (proper orders): how far R's intrinsic angles in ``order`` lie
    from gimbal lock, where a small turn of R moves α and γ by up to 1/cos β (1/sin β) times as much."""
    beta = euler_intrinsic_from_matrix(R, order)[..., 1]
    o = _check_order(order)
    return np.minimum(beta, math.pi - beta) if o[0] == o[2] else math.pi / 2 - np.abs(beta)


def euler_order_away_from_lock(R: ArrayLike, preferred: str = "zyx", margin: float = math.pi / 4) -> str:
    """The intrinsic Tait–Bryan order for a joint resting at R (3×3): ``preferred`` when R lies at least
    ``margin`` from its gimbal lock, else the order whose middle angle β lies farthest from ±π/2.

    The six orders' sin β are R's six off-diagonal entries (±R[i, k] for order i, j, k), and each row's two
    off-diagonals have squares summing to at most 1, so the farthest order has |sin β| ≤ 1/√2: every rotation
    lies at least π/4 from some order's lock, and with ``margin`` ≤ π/4 the order returned always does.
    """
    M = np.asarray(R, dtype=float)[:3, :3]
    if float(gimbal_margin(M, preferred)) >= margin:
        return _check_order(preferred)
    tait_bryan = [o for o in EULER_ORDERS if o[0] != o[2]]
    return max(tait_bryan, key=lambda o: float(gimbal_margin(M, o)))


def matrix_aligning_z_to(direction: ArrayLike) -> Array:
    """A rotation (3×3) taking +z to the unit vector along ``direction`` (the shortest such turn):
    R = I + K + K²/(1 + c), K = [ẑ × d̂]_×, c = ẑ · d̂; −z gives diag(1, −1, −1), a zero direction I.
    Batched: directions (..., 3) give (..., 3, 3)."""
    d = np.asarray(direction, dtype=float)
    if d.ndim > 1:
        nb = np.linalg.norm(d, axis=-1)
        u = d / np.where(nb < 1e-12, 1.0, nb)[..., None]
        cb = u[..., 2]
        Kb = _skew(np.cross(AXES["z"], u))
        R = np.eye(3) + Kb + (Kb @ Kb) / np.maximum(1.0 + cb, 1e-12)[..., None, None]
        R[cb < -1.0 + 1e-12] = np.diag([1.0, -1.0, -1.0])
        R[nb < 1e-12] = np.eye(3)
        return R
    n = np.linalg.norm(d)
    if n < 1e-12:
        return np.eye(3)
    d = d / n
    z = AXES["z"]
    c = float(np.dot(z, d))
    if c < -1.0 + 1e-12:
        return np.diag([1.0, -1.0, -1.0])
    v = np.cross(z, d)
    K = _skew(v)
    return np.eye(3) + K + K @ K / (1.0 + c)


def matrix_aligning(u: ArrayLike, v: ArrayLike) -> Array:
    """The shortest turn R with R û = v̂: R = I + K + K²/(1 + c), K = [û × v̂]_×, c = û · v̂ (batched).

    Directions need not be unit length; a zero direction gives I. Opposite directions (c → −1) have no
    shortest turn: a half turn about an axis perpendicular to û is returned.
    """
    a = np.asarray(u, dtype=float)
    b = np.asarray(v, dtype=float)
    a, b = np.broadcast_arrays(a, b)
    na = np.linalg.norm(a, axis=-1, keepdims=True)
    nb = np.linalg.norm(b, axis=-1, keepdims=True)
    zero = (na[..., 0] < 1e-300) | (nb[..., 0] < 1e-300)
    a = a / np.where(na < 1e-300, 1.0, na)
    b = b / np.where(nb < 1e-300, 1.0, nb)
    c = np.einsum("...i,...i->...", a, b)
    K = _skew(np.cross(a, b))
    opposite = c < -1.0 + 1e-12
    R = np.eye(3) + K + (K @ K) / np.maximum(1.0 + c, 1e-12)[..., None, None]
    if opposite.any():
        ap = a[opposite]
        perp = np.cross(ap, AXES["x"])
        small = np.linalg.norm(perp, axis=-1) < 1e-6
        perp[small] = np.cross(ap[small], AXES["y"])
        perp /= np.linalg.norm(perp, axis=-1, keepdims=True)
        R[opposite] = 2.0 * perp[..., :, None] * perp[..., None, :] - np.eye(3)
    if zero.any():
        R[zero] = np.eye(3)
    return R
