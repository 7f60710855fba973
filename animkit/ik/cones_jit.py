"""The human ranges' cones projected in compiled code (for :func:`~animkit.ik.effectors.pose_from_effectors`' loop):
R = A(θ) A_refᵀ split into swing and twist about t (:func:`animkit.model.transforms.swing_twist_from_matrix`), ρ the
swing's excess over its edge (:meth:`Cone._swing_excess`), R′ = exp([s/max(1, ρ)]×) R_t(clamp τ), and the Euler
angles of A′ = R′ A_ref read in closed form on the branch nearest θ where the joint's axes are an Euler order's
(:meth:`ChainModel.project_cones`' NumPy answer, the tests' oracle, to rounding), else found by Newton from θ on
A(θ) = E₀E₁E₂ (spatial Jacobian [a₀, E₀a₁, E₀E₁a₂]). The cones come as one record (:class:`Cones`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from animkit.ik.lm_jit import log_vee
from animkit.jit import kernel

__all__ = ["Cones", "cone_arrays", "project_cones", "project_rows", "rotation_about"]

Array = NDArray[Any]


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


class Cones(NamedTuple):
    """The chain's coned ball joints: per cone its links (3,), their axes (3, 3), its reference A_ref, twist axis t,
    front f and reach (4,) (reach[c, 0] < 0: circular, of half-angle swing[c]), twist range (2,)."""

    links: Array
    axes: Array
    Ar: Array
    t: Array
    front: Array
    reach: Array
    swing: Array
    twist: Array


def cone_arrays(cones: Sequence[Any], axis: Array) -> Cones:
    """A chain's cones (``ChainModel.cones``: ConeLinks) as one record of flat arrays (reach[:, 0] = −1: circular);
    ``axis`` (n, 3): the chain's links' axes."""
    C = len(cones)
    links = np.zeros((C, 3), dtype=np.intp)
    axes, Ar = np.zeros((C, 3, 3)), np.zeros((C, 3, 3))
    t, front, reach = np.zeros((C, 3)), np.zeros((C, 3)), np.full((C, 4), -1.0)
    swing, twist = np.zeros(C), np.zeros((C, 2))
    for i, cl in enumerate(cones):
        links[i] = cl.links
        axes[i] = axis[list(cl.links)]
        cone = cl.cone
        Ar[i] = cl.rest if cone.reference is None else np.asarray(cone.reference)
        t[i] = cl.axis / np.linalg.norm(cl.axis)
        if cone.reach is not None and cone.front is not None:
            front[i], reach[i] = cone.front, cone.reach
        swing[i], twist[i] = cone.swing, cone.twist
    return Cones(links, axes, Ar, t, front, reach, swing, twist)


def _joint_rotation(cn: Cones, c: int, q: Array, S: Array) -> None:
    """A = S[4] = E₀E₁E₂ of cone c's three links at q (E₀ = S[0] and M = S[3] = E₀E₁ kept for the Jacobian;
    S (≥ 5, 3, 3) scratch)."""
    E0, E1, E2, M, A = S[0], S[1], S[2], S[3], S[4]
    rotation_about(cn.axes[c, 0], q[cn.links[c, 0]], E0)
    rotation_about(cn.axes[c, 1], q[cn.links[c, 1]], E1)
    rotation_about(cn.axes[c, 2], q[cn.links[c, 2]], E2)
    _mul(E0, E1, M)
    _mul(M, E2, A)


def _swing_twist(cn: Cones, c: int, q: Array, nvec: Array, S: Array) -> tuple[float, float, float]:
    """R = A A_refᵀ split as exp([σ n]×) R_t(τ) (n into ``nvec``); returns σ, τ and the swing's excess ρ over the
    cone's edge (ellipse or circle). S (8, 3, 3): scratch."""
    A, Rm, Rn, W = S[4], S[5], S[6], S[7]
    _joint_rotation(cn, c, q, S)
    for i in range(3):  # R = A A_refᵀ
        for j in range(3):
            Rm[i, j] = A[i, 0] * cn.Ar[c, j, 0] + A[i, 1] * cn.Ar[c, j, 1] + A[i, 2] * cn.Ar[c, j, 2]
    tx, ty, tz = cn.t[c, 0], cn.t[c, 1], cn.t[c, 2]
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
    if cn.reach[c, 0] < 0.0:
        return sigma, tau, sigma / max(cn.swing[c], 1e-12)
    vx, vy, vz = sy * tz - sz * ty, sz * tx - sx * tz, sx * ty - sy * tx  # u = s × t
    fx, fy, fz = cn.front[c, 0], cn.front[c, 1], cn.front[c, 2]
    uf = vx * fx + vy * fy + vz * fz
    us = vx * (ty * fz - tz * fy) + vy * (tz * fx - tx * fz) + vz * (tx * fy - ty * fx)
    rf = max(cn.reach[c, 0] if uf >= 0.0 else cn.reach[c, 1], 1e-9)
    rs = max(cn.reach[c, 2] if us >= 0.0 else cn.reach[c, 3], 1e-9)
    return sigma, tau, math.hypot(uf / rf, us / rs)


def _newton_angles(cn: Cones, c: int, q: Array, Ap: Array, S: Array) -> None:
    """Cone c's three angles of q moved, in place, to A(θ) = A′ by Newton from θ: spatial error ω = log(A′ A(θ)ᵀ),
    Jacobian [a₀, E₀a₁, E₀E₁a₂], damped normal equations (JᵀJ + εI) δ = Jᵀω (exact away from gimbal lock)."""
    E0, M, A, D = S[0], S[3], S[4], S[5]
    ax = cn.axes[c]
    start = (q[cn.links[c, 0]], q[cn.links[c, 1]], q[cn.links[c, 2]])
    for _ in range(30):
        _joint_rotation(cn, c, q, S)
        for i in range(3):
            for j in range(3):
                D[i, j] = Ap[i, 0] * A[j, 0] + Ap[i, 1] * A[j, 1] + Ap[i, 2] * A[j, 2]
        wx, wy, wz = log_vee(D)
        if wx * wx + wy * wy + wz * wz < 1e-28:
            break
        j0 = ax[0]
        j1x = E0[0, 0] * ax[1, 0] + E0[0, 1] * ax[1, 1] + E0[0, 2] * ax[1, 2]
        j1y = E0[1, 0] * ax[1, 0] + E0[1, 1] * ax[1, 1] + E0[1, 2] * ax[1, 2]
        j1z = E0[2, 0] * ax[1, 0] + E0[2, 1] * ax[1, 1] + E0[2, 2] * ax[1, 2]
        j2x = M[0, 0] * ax[2, 0] + M[0, 1] * ax[2, 1] + M[0, 2] * ax[2, 2]
        j2y = M[1, 0] * ax[2, 0] + M[1, 1] * ax[2, 1] + M[1, 2] * ax[2, 2]
        j2z = M[2, 0] * ax[2, 0] + M[2, 1] * ax[2, 1] + M[2, 2] * ax[2, 2]
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
        q[cn.links[c, 0]] += (c00 * b0 + c01 * b1 + c02 * b2) / det
        q[cn.links[c, 1]] += (c01 * b0 + c11 * b1 + c12 * b2) / det
        q[cn.links[c, 2]] += (c02 * b0 + c12 * b1 + c22 * b2) / det
    _nearest_branch(cn, c, q, start)


def _nearest_branch(cn: Cones, c: int, q: Array, start: tuple[float, float, float]) -> None:
    """Cone c's angles of q, the same turn, moved to whichever of the two Euler branches (α, β, γ) and
    (α + π, π − β, γ + π) (proper orders: −β) lies nearest ``start``, each angle by whole turns nearest its start
    value (:func:`animkit.model.joints.euler_angles_near`'s choice: Newton near gimbal lock may wind round)."""
    a, b, g = q[cn.links[c, 0]], q[cn.links[c, 1]], q[cn.links[c, 2]]
    proper = abs(cn.axes[c, 0] @ cn.axes[c, 2]) > 0.5
    best = (a, b, g)
    dist = math.inf
    for cand in ((a, b, g), (a + math.pi, -b if proper else math.pi - b, g + math.pi)):
        e = [cand[k] + 2.0 * math.pi * round((start[k] - cand[k]) / (2.0 * math.pi)) for k in range(3)]
        d = (e[0] - start[0]) ** 2 + (e[1] - start[1]) ** 2 + (e[2] - start[2]) ** 2
        if d < dist:
            best, dist = (e[0], e[1], e[2]), d
    q[cn.links[c, 0]], q[cn.links[c, 1]], q[cn.links[c, 2]] = best


def _closed_angles(cn: Cones, c: int, q: Array, Ap: Array) -> bool:
    """Cone c's three angles of q set, in place, to A(θ) = A′ in closed form where its axes are ± coordinate axes
    (an Euler order's: :func:`animkit.model.transforms.euler_intrinsic_from_matrix`'s formulas, its gimbal lock
    included, each angle's sign the axis's), then the branch nearest the angles before
    (:func:`_nearest_branch`): the NumPy path's answer to rounding. False (q untouched) for other axes."""
    ids = (0, 0, 0)
    sg = (1.0, 1.0, 1.0)
    for m in range(3):
        a = cn.axes[c, m]
        r = 0
        if abs(a[1]) > abs(a[r]):
            r = 1
        if abs(a[2]) > abs(a[r]):
            r = 2
        if abs(abs(a[r]) - 1.0) > 1e-12:
            return False
        ids = (r, ids[1], ids[2]) if m == 0 else (ids[0], r, ids[2]) if m == 1 else (ids[0], ids[1], r)
        s = 1.0 if a[r] > 0.0 else -1.0
        sg = (s, sg[1], sg[2]) if m == 0 else (sg[0], s, sg[2]) if m == 1 else (sg[0], sg[1], s)
    i, j, k = ids
    proper = i == k
    if proper:
        k = 3 - i - j
    sign = 1.0 if (j - i + 3) % 3 == 1 else -1.0
    if proper:  # A′ = R_i(α) R_j(β) R_i(γ)
        beta = math.acos(min(max(Ap[i, i], -1.0), 1.0))
        if math.sin(beta) < 1e-9:
            alpha, gamma = math.atan2(sign * Ap[k, j], Ap[j, j]), 0.0
        else:
            alpha, gamma = math.atan2(Ap[j, i], -sign * Ap[k, i]), math.atan2(Ap[i, j], sign * Ap[i, k])
    else:  # A′ = R_i(α) R_j(β) R_k(γ)
        sb = min(max(sign * Ap[i, k], -1.0), 1.0)
        beta = math.asin(sb)
        if abs(sb) > 1.0 - 1e-12:
            alpha, gamma = math.atan2(sign * Ap[k, j], Ap[j, j]), 0.0
        else:
            alpha, gamma = math.atan2(-sign * Ap[j, k], Ap[k, k]), math.atan2(-sign * Ap[i, j], Ap[i, i])
    start = (q[cn.links[c, 0]], q[cn.links[c, 1]], q[cn.links[c, 2]])
    q[cn.links[c, 0]], q[cn.links[c, 1]], q[cn.links[c, 2]] = sg[0] * alpha, sg[1] * beta, sg[2] * gamma
    _nearest_branch(cn, c, q, start)
    return True


def project_cones(q: Array, cn: Cones, tol: float, hit: Array) -> int:
    """Move every coned ball joint's three links of q (n,) into its cone, in place; returns how many moved and
    marks them in ``hit`` (C,). Inside within ``tol`` (the swing's excess ρ ≤ 1 + tol and τ within its range ± tol)
    is left alone; else R′ = exp([σ n / max(1, ρ)]×) R_t(clamp τ) and A′ = R′ A_ref, solved for the angles."""
    moved = 0
    nvec = np.empty(3)
    S = np.empty((8, 3, 3))
    Rn, Tw, M, Ap = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    for c in range(cn.links.shape[0]):
        hit[c] = False
        sigma, tau, rho = _swing_twist(cn, c, q, nvec, S)
        tau2 = min(max(tau, cn.twist[c, 0]), cn.twist[c, 1])
        if rho <= 1.0 + tol and abs(tau2 - tau) <= tol:
            continue
        moved += 1
        hit[c] = True
        scale = 1.0 / max(1.0, rho)
        rotation_about(nvec, sigma * scale, Rn)
        rotation_about(cn.t[c], tau2, Tw)
        _mul(Rn, Tw, M)
        _mul(M, cn.Ar[c], Ap)  # A′ = R′ A_ref
        if not _closed_angles(cn, c, q, Ap):  # an Euler order's axes: closed form (Newton from θ wandered through
            _newton_angles(cn, c, q, Ap, S)  # a proper order's lock at β = 0 past its 30 iterations: 3.6° off)
    return moved


def project_rows(q: Array, cn: Cones) -> None:
    """:func:`project_cones` on every row of q (B, n), in place (exactly inside: tol 0)."""
    hit = np.zeros(cn.links.shape[0], dtype=np.bool_)
    for b in range(q.shape[0]):
        project_cones(q[b], cn, 0.0, hit)


_joint_rotation = kernel(_joint_rotation, calls=(rotation_about, _mul)) or _joint_rotation
_swing_twist = kernel(_swing_twist, calls=(_joint_rotation, rotation_about)) or _swing_twist
_nearest_branch = kernel(_nearest_branch) or _nearest_branch
_newton_angles = kernel(_newton_angles, calls=(_joint_rotation, log_vee, _nearest_branch)) or _newton_angles
_closed_angles = kernel(_closed_angles, calls=(_nearest_branch,)) or _closed_angles
project_cones = kernel(project_cones, calls=(_swing_twist, _closed_angles, _newton_angles, rotation_about, _mul)
                       ) or project_cones
project_rows = kernel(project_rows, calls=(project_cones,)) or project_rows
