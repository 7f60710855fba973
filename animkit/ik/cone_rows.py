"""A ball joint's swing–twist cone (:class:`~animkit.model.joints.Cone`) as inequality rows J Δθ ≤ room, the form in
which the prioritised (natural) solver holds its bounds: a joint on its cone's edge then slides along it (the rows
cut only the outward part of a step) instead of being projected back or frozen.

With R = A(θ) A_refᵀ (the turn from the cone's reference, in the joint's frame), t the twist axis, b = R t,
φ = ∠(t, b), p̂ = (b − t cos φ)/sin φ and u = φ p̂ (= s × t for the swing s), a turn of the joint's frame by ω
(dR = [ω]× R; for intrinsic Euler angles ω = Σ_k ω_k dθ_k, ω_k = E₀…E_{k−1} a_k) moves

    ρ = hypot(u·f / r, u·g / r′)       (g = t × f; r, r′ the quadrant's reaches; a circular cone: r = r′ = swing)
    ∂ρ/∂ω = Mᵀ (u_f f / r² + u_s g / r′²) / ρ,
    M = ∂u/∂ω = −p̂ (b × t)ᵀ / sin φ + (φ / sin φ)(−(I − p̂p̂ᵀ)[b]× − t (b × t)ᵀ)
    τ = 2 atan2(v·t, w)                (q = (w, v) the quaternion of R: R = exp([s]×) R_t(τ))
    ∂τ/∂ω = (w (w t + v × t) + (v·t) v) / (w² + (v·t)²)

(dq = ½ (0, ω) ⊗ q for the twist; dφ = −(b × t)·ω / sin φ for the swing). The rows: ∂ρ/∂θ Δθ ≤ 1 − ρ once
ρ ≥ 1 − SWING_BAND, and ±∂τ/∂θ Δθ ≤ (hi − τ, τ − lo) within the outer TWIST_BAND of the twist range.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from animkit.ik.problem import ChainModel, ConeLink
from animkit.model.joints import Cone
from animkit.model.quaternions import quaternion_from_matrix
from animkit.model.transforms import AXES, matrix_about_axis, matrix_from_euler_intrinsic

__all__ = ["swing_excess", "twist_angle", "euler_turn_axes", "cone_rows", "cone_bounds", "trust_scaled", "slipped",
           "SWING_BAND", "TWIST_BAND"]

Array = NDArray[np.float64]
SWING_BAND = 0.5  # a cone's swing row is given once its excess ρ passes 1 − SWING_BAND (half-way to the edge)
TWIST_BAND = 0.5  # a twist row is given in the outer half of the range's half-width on its side
_TINY = 1e-6  # sin φ below this: the swing's direction is undefined (at the cone's axis), no swing row


def swing_excess(R: Array, axis: Array, cone: Cone) -> tuple[float, Array]:
    """ρ (1 on the cone's edge, :meth:`Cone._swing_excess`'s measure) of the turn R (3, 3) about the twist axis
    ``axis`` and ∂ρ/∂ω (3,) under dR = [ω]× R (the module docstring); ∂ρ = 0 where the swing is under _TINY."""
    t = np.asarray(axis, dtype=float)
    b = R @ t
    c = float(np.clip(t @ b, -1.0, 1.0))
    p = b - t * c
    sn = float(np.linalg.norm(p))
    phi = math.atan2(sn, c)
    if cone.reach is None or cone.front is None:
        r4 = (cone.swing,) * 4
        f = np.cross(t, np.eye(3)[int(np.argmin(np.abs(t)))])
        f = f / np.linalg.norm(f)
    else:
        r4, f = cone.reach, np.asarray(cone.front, dtype=float)
    if sn < _TINY:
        return phi / max(min(r4), 1e-12), np.zeros(3)
    g = np.cross(t, f)
    ph = p / sn
    u = phi * ph
    uf, us = float(u @ f), float(u @ g)
    r = max(r4[0] if uf >= 0 else r4[1], 1e-9)
    rp = max(r4[2] if us >= 0 else r4[3], 1e-9)
    rho = math.hypot(uf / r, us / rp)
    bxt = np.cross(b, t)
    Bx = np.array([[0.0, -b[2], b[1]], [b[2], 0.0, -b[0]], [-b[1], b[0], 0.0]])
    M = -np.outer(ph, bxt) / sn + (phi / sn) * (-(np.eye(3) - np.outer(ph, ph)) @ Bx - np.outer(t, bxt))
    grad = M.T @ (uf / (r * r) * f + us / (rp * rp) * g) / max(rho, 1e-300)
    return rho, np.asarray(grad, dtype=float)


def twist_angle(R: Array, axis: Array) -> tuple[float, Array]:
    """τ = 2 atan2(v·t, w) ∈ (−π, π] of R = exp([s]×) R_t(τ) (q = (w, v) of R) and ∂τ/∂ω (3,) under dR = [ω]× R."""
    t = np.asarray(axis, dtype=float)
    q = quaternion_from_matrix(R)
    w, v = float(q[0]), q[1:]
    y = float(v @ t)
    tau = 2.0 * math.atan2(y, w)
    tau = tau - 2.0 * math.pi if tau > math.pi else tau
    den = w * w + y * y
    grad = (w * (w * t + np.cross(v, t)) + y * v) / max(den, 1e-300)
    return tau, np.asarray(grad, dtype=float)


def euler_turn_axes(values: Array, order: str) -> Array:
    """Ω (3, 3): column k the axis ω_k = E₀…E_{k−1} a_k about which angle k of intrinsic ``order`` turns the joint's
    frame (dA = [Ω dθ]× A for A = E₀(θ₀) E₁(θ₁) E₂(θ₂))."""
    out = np.zeros((3, 3))
    E = np.eye(3)
    for k, letter in enumerate(order):
        out[:, k] = E @ AXES[letter]
        E = E @ matrix_about_axis(AXES[letter], float(values[k]))
    return out


def cone_turn(link: ConeLink, values: Array) -> tuple[Array, Array]:
    """(R = A(θ) A_refᵀ, Ω): the coned joint's turn from its cone's reference (the cone's ``reference``, else the
    joint's rest) at its angles ``values`` (3,), and the world-frame axes Ω (3, 3) its angles turn about
    (:func:`euler_turn_axes`), which carry a gradient over R's turn to one over the angles."""
    order = link.joint.order
    assert order is not None
    ref = link.rest if link.cone.reference is None else np.asarray(link.cone.reference, dtype=float)
    return matrix_from_euler_intrinsic(values, order) @ ref.T, euler_turn_axes(values, order)


def cone_rows(link: ConeLink, values: Array) -> tuple[Array, Array]:
    """The rows J (m, 3) over the joint's three angles ``values`` (its DOF order) and their room (m,) that keep the
    joint in its cone to first order (the module docstring): the swing's once ρ ≥ 1 − SWING_BAND, each twist limit's
    within TWIST_BAND of it; none (m = 0) well inside."""
    cone = link.cone
    R, Om = cone_turn(link, values)
    rows, room = [], []
    rho, g = swing_excess(R, link.axis, cone)
    if rho >= 1.0 - SWING_BAND and g.any():
        rows.append(g @ Om)
        room.append(1.0 - rho)
    lo, hi = cone.twist
    if hi - lo < 2.0 * math.pi:
        tau, gt = twist_angle(R, link.axis)
        band = TWIST_BAND * 0.5 * (hi - lo)
        if tau >= hi - band:
            rows.append(gt @ Om)
            room.append(hi - tau)
        if tau <= lo + band:
            rows.append(-(gt @ Om))
            room.append(tau - lo)
    return np.array(rows).reshape(-1, 3), np.array(room)


def cone_bounds(cones: Sequence[ConeLink], q: Array, loose: NDArray[np.bool_] | None = None, factor: float = 1.0
                ) -> tuple[Array, Array] | None:
    """Every cone's rows near its edge (:func:`cone_rows`) over the chain's DOFs q (n,): J (m, n) and room (m,),
    the room of a joint whose DOFs are all ``loose`` (n,) times ``factor``; None without rows."""
    rows, room = [], []
    for cl in cones:
        idx = np.asarray(cl.links, dtype=np.intp)
        J3, r = cone_rows(cl, q[idx])
        if len(r) and loose is not None and loose[idx].all():
            r = r * factor
        if len(r):
            J = np.zeros((len(r), len(q)))
            J[:, idx] = J3
            rows.append(J)
            room.append(r)
    return (np.vstack(rows), np.concatenate(room)) if rows else None


def trust_scaled(cones: Sequence[ConeLink], q: Array, dq: Array, trusted: NDArray[np.bool_], trust: float) -> Array:
    """dq (n,) with each ``trusted`` joint near its cone's edge (one with rows: :func:`cone_rows`) moving no angle
    more than ``trust``: its part scaled by min(1, trust / max_k |Δθ_k|) (a trust region: the edge curves, and a
    longer tangent step ends farther out). A scaling, not rows J Δθ = ±trust: held as active rows beside the edge's
    own, the trust rows asked a move the edge's row forbade, and the joint 2-cycled along its rim by ±trust."""
    out = np.array(dq, dtype=float)
    for cl in cones:
        idx = np.asarray(cl.links, dtype=np.intp)
        big = float(np.max(np.abs(out[idx])))
        if big > trust and trusted[idx].all() and len(cone_rows(cl, q[idx])[1]):
            out[idx] *= trust / big
    return out


def slipped(model: ChainModel, raw: Array, qn: Array, slip: float) -> list[NDArray[np.intp]]:
    """The links (3,) of each coned joint whose angles the projection from ``raw`` to ``qn`` moved by more than
    ``slip``."""
    out = []
    for c in model.cones:
        links = np.asarray(c.links, dtype=np.intp)
        if float(np.max(np.abs(raw[links] - qn[links]))) > slip:
            out.append(links)
    return out
