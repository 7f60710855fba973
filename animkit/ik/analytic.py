"""Two-bone IK in closed form: the law of cosines for the elbow, one swing for the shoulder.

For upper and lower lengths l₁, l₂ and a target at distance d from the shoulder,

    cos β = (l₁² + l₂² − d²) / (2 l₁ l₂)          (β: the interior angle at the elbow)
    cos α = (l₁² + d² − l₂²) / (2 l₁ d)           (α: between the upper bone and the target line)

with d clamped into [|l₁ − l₂|, l₁ + l₂] (out of reach: the arm points straight at the target).
On a figure the elbow is a hinge whose axis need not be perpendicular to the bones, so the elbow
angle φ solves the same relation in general form: |u + R_k(φ)w|² = d² with u = elbow − shoulder,
w = end − elbow, i.e. β cos φ + γ sin φ = δ (one acos, clamped). The shoulder then swings the end
onto the target line, turned about that line so the elbow lies in the half-plane of the pole.
A three-joint chain (shoulder–elbow–wrist) places the wrist centre for a 6D target and turns the
wrist to the target's orientation.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..errors import IKError
from ..transforms import euler_intrinsic_from_matrix
from .jacobian import rotation_error
from .problem import ChainModel

__all__ = ["two_bone_angles", "two_bone_step", "two_bone_layout"]

Array = NDArray[np.float64]


def two_bone_angles(l1: float, l2: float, d: float) -> tuple[float, float]:
    """(α, β): shoulder offset angle and interior elbow angle by the law of cosines, d clamped to the reach.

    cos β = (l₁² + l₂² − d²)/(2 l₁ l₂), cos α = (l₁² + d² − l₂²)/(2 l₁ d); both arguments clamped to [−1, 1].
    """
    if l1 <= 0 or l2 <= 0:
        raise IKError(f"two-bone lengths must be positive, got l1={l1}, l2={l2}")
    d = min(max(d, abs(l1 - l2)), l1 + l2)
    cb = (l1 * l1 + l2 * l2 - d * d) / (2 * l1 * l2)
    ca = (l1 * l1 + d * d - l2 * l2) / (2 * l1 * max(d, 1e-300))
    return math.acos(min(1.0, max(-1.0, ca))), math.acos(min(1.0, max(-1.0, cb)))


def two_bone_layout(model: ChainModel) -> tuple[list[int], list[int], list[int]]:
    """Links of the shoulder, elbow and (optional) wrist joints on effector 0's path; IKError otherwise."""
    if len(model.effectors) != 1:
        raise IKError(f"two-bone solves one effector, got {list(model.effectors)}")
    links = [int(k) for k in np.flatnonzero(model.eff_mask[0])]
    groups: list[list[int]] = []
    for k in links:
        if groups and model.link_node[groups[-1][0]] == model.link_node[k]:
            groups[-1].append(k)
        else:
            groups.append([k])
    names = [model.link_node[g[0]] for g in groups]
    if len(groups) not in (2, 3):
        raise IKError(f"two-bone needs 2 joints (shoulder, elbow) or 3 (shoulder, elbow, wrist) on the path to "
                      f"{model.effectors[0]!r}, got {len(groups)}: {names}")
    for g, what in zip(groups, ("shoulder", "elbow", "wrist"), strict=False):
        if not all(model.revolute[k] for k in g):
            raise IKError(f"two-bone needs revolute DOFs; the {what} {model.link_node[g[0]]!r} has a prismatic one")
    return groups[0], groups[1], groups[2] if len(groups) == 3 else []


def two_bone_step(model: ChainModel, q: Array, P: Array, R: Array | None, pole: Array | None) -> Array:
    """Δθ (b, n) taking each problem to the analytic two-bone pose (limits applied by clamping)."""
    A, Bl, C = two_bone_layout(model)
    out = np.zeros_like(q)
    for i in range(q.shape[0]):
        out[i] = _solve_one(model, q[i].copy(), P[i, 0], None if R is None else R[i, 0], pole, A, Bl, C) - q[i]
    return out


def _frames(model: ChainModel, q: Array):  # noqa: ANN202
    return model.frames(q[None])


def _rot(axis: Array, phi: float) -> Array:
    K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + math.sin(phi) * K + (1.0 - math.cos(phi)) * (K @ K)


def _align(u: Array, v: Array) -> Array:
    """The shortest rotation taking direction u to direction v (a half turn about a perpendicular if opposite)."""
    u = u / np.linalg.norm(u)
    v = v / np.linalg.norm(v)
    c = float(u @ v)
    axis = np.cross(u, v)
    s = float(np.linalg.norm(axis))
    if s < 1e-12:
        if c > 0:
            return np.eye(3)
        perp = np.cross(u, [1.0, 0.0, 0.0])
        if np.linalg.norm(perp) < 1e-6:
            perp = np.cross(u, [0.0, 1.0, 0.0])
        return _rot(perp / np.linalg.norm(perp), math.pi)
    return _rot(axis / s, math.atan2(s, c))


def _clip(model: ChainModel, k: int, value: float) -> float:
    return float(min(max(value, model.lower[k]), model.upper[k]))


def _nearest(model: ChainModel, k: int, value: float, current: float) -> float:
    """``value`` moved by whole turns as close to ``current`` as possible, then into the limits."""
    v = current + (value - current + math.pi) % (2 * math.pi) - math.pi
    for cand in (v, v - 2 * math.pi, v + 2 * math.pi):
        if model.lower[k] <= cand <= model.upper[k]:
            return cand
    return _clip(model, k, v)


def _solve_one(model: ChainModel, q: Array, t: Array, Rt: Array | None, pole: Array | None,
               A: list[int], Bl: list[int], C: list[int]) -> Array:
    fr = _frames(model, q)
    shoulder = fr.r[0, A[0]]
    # the point to place: the effector, or for a 6D target with a wrist, the wrist centre
    if Rt is not None and C:
        R_last = Rt @ model.eff_C[0, :3, :3].T
        goal = t - R_last @ model.eff_C[0, :3, 3]
        last_C = C[-1]
        tail = np.flatnonzero(model.eff_mask[0])[-1]
        if tail != last_C:
            raise IKError("two-bone: the wrist must be the last joint above the effector")
    else:
        R_last = None
        goal = t

    def end_point(f) -> Array:  # noqa: ANN001
        return f.r[0, C[0]] if R_last is not None else f.p[0, 0]

    # elbow: |u + R_k(φ) w| = d
    kb = Bl[0]
    c = end_point(fr)
    b = fr.r[0, kb]
    k = fr.a[0, kb]
    u = b - shoulder
    w = c - b
    w_par = k * (k @ w)
    w_perp = w - w_par
    alpha = u @ w_par
    beta = u @ w_perp
    gamma = u @ np.cross(k, w_perp)
    d = float(np.linalg.norm(goal - shoulder))
    rho = math.hypot(beta, gamma)
    if rho > 1e-12:
        delta = (d * d - u @ u - w @ w) / 2.0 - alpha
        base = math.atan2(gamma, beta)
        off = math.acos(min(1.0, max(-1.0, delta / rho)))
        best = None
        for phi in (base + off, base - off):
            val = _nearest(model, kb, q[kb] + phi, q[kb])
            inside = abs(math.remainder(val - (q[kb] + phi), 2 * math.pi)) < 1e-9
            key = (not inside, abs(val - q[kb]))
            if best is None or key < best[0]:
                best = (key, val)
        assert best is not None
        q[kb] = best[1]
    # shoulder swing (and twist toward the pole)
    fr = _frames(model, q)
    c = end_point(fr)
    uu = c - shoulder
    vv = goal - shoulder
    if np.linalg.norm(uu) > 1e-12 and np.linalg.norm(vv) > 1e-12:
        G = _align(uu, vv)
        if pole is not None:
            vh = vv / np.linalg.norm(vv)
            eb = G @ (fr.r[0, kb] - shoulder)
            ep = pole - shoulder
            eb = eb - vh * (vh @ eb)
            ep = ep - vh * (vh @ ep)
            if np.linalg.norm(eb) > 1e-9 and np.linalg.norm(ep) > 1e-9:
                psi = math.atan2(vh @ np.cross(eb, ep), eb @ ep)
                G = _rot(vh, psi) @ G
        _turn_joint(model, q, A, G, fr, end_point, goal)
    # wrist orientation
    if R_last is not None:
        fr = _frames(model, q)
        Rc = fr.T[C[-1], 0, :3, :3]
        _turn_joint(model, q, C, R_last @ Rc.T, fr, None, None)
    return np.clip(q, model.lower, model.upper)


_ORDERS = {"xyz", "xzy", "yxz", "yzx", "zxy", "zyx"}


def _turn_joint(model: ChainModel, q: Array, links: list[int], G: Array, fr, end, goal: Array | None  # noqa: ANN001
                ) -> None:
    """Turn the frame after ``links`` by the world rotation G: exactly for a ball joint, else best effort."""
    order = "".join("xyz"[int(np.argmax(np.abs(model.axis[k])))] for k in links)
    exact_axes = all(np.allclose(model.axis[k], np.eye(3)["xyz".index(order[i])]) for i, k in enumerate(links))
    plain = all(np.allclose(model.H0[k], np.eye(4)) for k in links[1:])
    if len(links) == 3 and order in _ORDERS and exact_axes and plain:
        R_after = fr.T[links[-1], 0, :3, :3]
        local = np.eye(3)
        for k in links:
            local = local @ _rot(model.axis[k], q[k])
        R_before = R_after @ local.T
        M = R_before.T @ G @ R_after
        ang = euler_intrinsic_from_matrix(M, order)
        for k, a in zip(links, ang, strict=True):
            q[k] = _nearest(model, k, float(a), q[k])
        return
    # otherwise: a few coordinate sweeps on these DOFs, toward the goal point or the rotation G
    target_R = G @ fr.T[links[-1], 0, :3, :3]
    for _ in range(8):
        for k in links[::-1]:
            f = _frames(model, q)
            a = f.a[0, k]
            r = f.r[0, k]
            if goal is not None:
                p = end(f)
                uu = p - r
                vv = goal - r
                uu = uu - a * (a @ uu)
                vv = vv - a * (a @ vv)
                if np.linalg.norm(uu) < 1e-12 or np.linalg.norm(vv) < 1e-12:
                    continue
                phi = math.atan2(a @ np.cross(uu, vv), uu @ vv)
            else:
                phi = float(rotation_error(target_R, f.T[links[-1], 0, :3, :3]) @ a)
            q[k] = _nearest(model, k, q[k] + phi, q[k])

