"""Quaternions ``(w, x, y, z)``: to and from rotation matrices, the Hamilton product, the conjugate and slerp.
Plain functions on arrays, vectorised over any leading batch shape ``...``; :mod:`animkit.model.transforms` imports them
(its names for them stay importable there).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["matrix_from_quaternion", "quaternion_from_matrix", "quaternion_multiply", "quaternion_conjugate",
           "quaternion_slerp"]

Array = NDArray[np.float64]


def matrix_from_quaternion(q: ArrayLike) -> Array:
    """R(q) for q = (w, x, y, z) (normalised first), 3×3."""
    qn: Array = np.asarray(q, dtype=float)
    qn = qn / np.linalg.norm(qn, axis=-1, keepdims=True)
    w, x, y, z = qn[..., 0], qn[..., 1], qn[..., 2], qn[..., 3]
    R = np.empty(qn.shape[:-1] + (3, 3))
    R[..., 0, 0] = 1 - 2 * (y * y + z * z)
    R[..., 0, 1] = 2 * (x * y - w * z)
    R[..., 0, 2] = 2 * (x * z + w * y)
    R[..., 1, 0] = 2 * (x * y + w * z)
    R[..., 1, 1] = 1 - 2 * (x * x + z * z)
    R[..., 1, 2] = 2 * (y * z - w * x)
    R[..., 2, 0] = 2 * (x * z - w * y)
    R[..., 2, 1] = 2 * (y * z + w * x)
    R[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def quaternion_from_matrix(R: ArrayLike) -> Array:
    """q (w ≥ 0) from a rotation matrix (3×3 or the rotation block of 4×4), by Shepperd's method."""
    R = np.asarray(R, dtype=float)[..., :3, :3]
    m00, m11, m22 = R[..., 0, 0], R[..., 1, 1], R[..., 2, 2]
    trace = m00 + m11 + m22
    # four candidate forms; pick the numerically largest denominator per element
    cands = np.stack(
        [
            np.stack([1 + trace, R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0],
                      R[..., 1, 0] - R[..., 0, 1]], -1),
            np.stack([R[..., 2, 1] - R[..., 1, 2], 1 + m00 - m11 - m22, R[..., 0, 1] + R[..., 1, 0],
                      R[..., 0, 2] + R[..., 2, 0]], -1),
            np.stack([R[..., 0, 2] - R[..., 2, 0], R[..., 0, 1] + R[..., 1, 0], 1 - m00 + m11 - m22,
                      R[..., 1, 2] + R[..., 2, 1]], -1),
            np.stack([R[..., 1, 0] - R[..., 0, 1], R[..., 0, 2] + R[..., 2, 0], R[..., 1, 2] + R[..., 2, 1],
                      1 - m00 - m11 + m22], -1),
        ],
        axis=-2,
    )
    which = np.argmax(np.stack([trace, m00, m11, m22], -1), axis=-1)
    q = np.take_along_axis(cands, which[..., None, None], axis=-2)[..., 0, :]
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(q[..., :1] < 0, -q, q)


def quaternion_multiply(a: ArrayLike, b: ArrayLike) -> Array:
    """Hamilton product a ⊗ b (the rotation b first, then a)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        -1,
    )


def quaternion_conjugate(q: ArrayLike) -> Array:
    """q* = (w, −x, −y, −z): the inverse of a unit quaternion."""
    q = np.asarray(q, dtype=float)
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def quaternion_slerp(q0: ArrayLike, q1: ArrayLike, t: ArrayLike) -> Array:
    """slerp(q0, q1; t) = q0 sin((1−t)Ω)/sinΩ + q1 sin(tΩ)/sinΩ, cosΩ = |q0·q1|, shortest path."""
    q0 = np.asarray(q0, dtype=float)
    q1 = np.asarray(q1, dtype=float)
    t = np.asarray(t, dtype=float)[..., None]
    d = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(d < 0, -q1, q1)  # the short way round
    d = np.abs(d)
    omega = np.arccos(np.clip(d, -1.0, 1.0))
    s = np.sin(omega)
    near = s < 1e-8
    safe = np.where(near, 1.0, s)
    w0 = np.where(near, 1.0 - t, np.sin((1.0 - t) * omega) / safe)
    w1 = np.where(near, t, np.sin(t * omega) / safe)
    q = w0 * q0 + w1 * q1
    return q / np.linalg.norm(q, axis=-1, keepdims=True)
