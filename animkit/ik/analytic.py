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
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import IKError
from animkit.ik.jacobian import rotation_error
from animkit.ik.problem import ChainModel
from animkit.model.transforms import euler_intrinsic_from_matrix

__all__ = ["two_bone_angles", "two_bone_step", "two_bone_layout"]

Array = NDArray[np.float64]


def two_bone_angles(l1: float, l2: float, d: ArrayLike) -> tuple[Any, Any]:
    """(α, β): shoulder offset angle and interior elbow angle by the law of cosines, d clamped to the reach.

    cos β = (l₁² + l₂² − d²)/(2 l₁ l₂), cos α = (l₁² + d² − l₂²)/(2 l₁ d); both arguments clamped to [−1, 1].
    ``d`` may be an array (one distance per frame): α and β are then arrays of its shape, else floats.
    """
    if l1 <= 0 or l2 <= 0:
        raise IKError(f"two-bone lengths must be positive, got l1={l1}, l2={l2}")
    dd = np.clip(np.asarray(d, dtype=float), abs(l1 - l2), l1 + l2)
    cb = (l1 * l1 + l2 * l2 - dd * dd) / (2 * l1 * l2)
    ca = (l1 * l1 + dd * dd - l2 * l2) / (2 * l1 * np.maximum(dd, 1e-300))
    alpha, beta = np.arccos(np.clip(ca, -1.0, 1.0)), np.arccos(np.clip(cb, -1.0, 1.0))
    if dd.ndim == 0:
        return float(alpha), float(beta)
    return alpha, beta


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
    candidates = [q[kb]]
    if rho > 1e-12:
        delta = (d * d - u @ u - w @ w) / 2.0 - alpha
        base = math.atan2(gamma, beta)
        off = math.acos(min(1.0, max(-1.0, delta / rho)))
        candidates = [_nearest(model, kb, q[kb] + phi, q[kb]) for phi in (base + off, base - off)]
    def attempt(val: float, psi: float | None) -> tuple[tuple[float, ...], Array]:
        qc = q.copy()
        qc[kb] = val
        _place(model, qc, shoulder, goal, R_last, pole, A, C, kb, end_point, psi)
        f = _frames(model, qc)
        miss = float(np.linalg.norm(end_point(f) - goal))
        if R_last is not None:
            miss += float(np.linalg.norm(rotation_error(R_last, f.T[C[-1], 0, :3, :3])))
        side = 0.0
        if pole is not None:
            side = -_pole_side(f.r[0, kb] - shoulder, pole - shoulder, goal - shoulder)
        return (round(miss, 9), side, abs(val - q[kb]), abs(math.remainder(psi or 0.0, 2 * math.pi))), qc

    best: tuple[tuple[float, ...], Array] | None = None
    best_args: tuple[float, float | None] = (q[kb], None)
    swivels = [None] if pole is not None else [k * math.pi / 12 for k in range(24)]
    for val in candidates:
        for psi in swivels:
            key, qc = attempt(val, psi)
            if best is None or key < best[0]:
                best, best_args = (key, qc), (val, psi)
    assert best is not None
    val, psi = best_args
    if psi is not None and best[0][0] > 0:  # refine the swivel: golden section on ±7.5°
        lo, hi = psi - math.pi / 24, psi + math.pi / 24
        g = (math.sqrt(5) - 1) / 2
        x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
        f1, f2 = attempt(val, x1), attempt(val, x2)
        for _ in range(40):
            if f1[0] < f2[0]:
                hi, x2, f2 = x2, x1, f1
                x1 = hi - g * (hi - lo)
                f1 = attempt(val, x1)
            else:
                lo, x1, f1 = x1, x2, f2
                x2 = lo + g * (hi - lo)
                f2 = attempt(val, x2)
        for cand in (f1, f2):
            if cand[0] < best[0]:
                best = cand
    return best[1]


def _pole_side(elbow: Array, pole: Array, line: Array) -> float:
    """Cosine between elbow and pole, both projected on the plane perpendicular to the base → goal line."""
    n = np.linalg.norm(line)
    if n < 1e-12:
        return 0.0
    vh = line / n
    e = elbow - vh * (vh @ elbow)
    h = pole - vh * (vh @ pole)
    d = np.linalg.norm(e) * np.linalg.norm(h)
    return float(e @ h / d) if d > 1e-12 else 0.0


def _place(model: ChainModel, q: Array, shoulder: Array, goal: Array, R_last: Array | None, pole: Array | None,
           A: list[int], C: list[int], kb: int, end_point, swivel: float | None) -> None:  # noqa: ANN001
    """With the elbow set: swing the shoulder (twisted toward the pole), then turn the wrist."""
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
        elif swivel:
            G = _rot(vv / np.linalg.norm(vv), swivel) @ G
        _turn_joint(model, q, A, G, fr, end_point, goal)
    if R_last is not None:
        fr = _frames(model, q)
        Rc = fr.T[C[-1], 0, :3, :3]
        _turn_joint(model, q, C, R_last @ Rc.T, fr, None, None)
    np.clip(q, model.lower, model.upper, out=q)


_ORDERS = {"xyz", "xzy", "yxz", "yzx", "zxy", "zyx"}


def _turn_joint(model: ChainModel, q: Array, links: list[int], G: Array, fr, end, goal: Array | None  # noqa: ANN001
                ) -> None:
    """Turn the frame after ``links`` by the world rotation G: exactly for a ball joint, else best effort."""
    order = "".join("xyz"[int(np.argmax(np.abs(model.axis[k])))] for k in links)
    exact_axes = np.allclose(model.axis[links], np.eye(3)[["xyz".index(c) for c in order]])
    plain = np.allclose(model.H0[links[1:]], np.eye(4))
    if len(links) == 3 and order in _ORDERS and exact_axes and plain:
        R_after = fr.T[links[-1], 0, :3, :3]
        local = np.eye(3)
        for k in links:
            local = local @ _rot(model.axis[k], q[k])
        R_before = R_after @ local.T
        M = R_before.T @ G @ R_after
        a0, b0, g0 = (float(x) for x in euler_intrinsic_from_matrix(M, order))
        best = None
        for ang in ((a0, b0, g0), (a0 + math.pi, math.pi - b0, g0 + math.pi)):  # the two Tait-Bryan branches
            vals = [_nearest(model, k, a, q[k]) for k, a in zip(links, ang, strict=True)]
            miss = sum(abs(math.remainder(v - a, 2 * math.pi)) for v, a in zip(vals, ang, strict=True))
            key = (round(miss, 12), sum(abs(v - q[k]) for v, k in zip(vals, links, strict=True)))
            if best is None or key < best[0]:
                best = (key, vals)
        assert best is not None
        for k, v in zip(links, best[1], strict=True):
            q[k] = v
        return
    # otherwise: a few coordinate sweeps on these DOFs, toward the goal point or the rotation G
    target_R = G @ fr.T[links[-1], 0, :3, :3]
    if goal is None and plain:
        _sweep_rotation(model, q, links, target_R, fr.T[links[-1], 0, :3, :3])
        return
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



def _sweep_rotation(model: ChainModel, q: Array, links: list[int], target_R: Array, R_after: Array) -> None:
    """The sweeps of :func:`_turn_joint` toward a rotation, on joints with no offset between them: the frame after
    them is R_before · Π_k exp(θ_k [a_k]_×) and DOF k's world axis R_before · Π_{j<k} exp(θ_j [a_j]_×) · a_k, so
    each step reads them from the joint's own turns instead of the whole chain's forward kinematics."""
    local = np.eye(3)
    for k in links:
        local = local @ _rot(model.axis[k], q[k])
    R_before = R_after @ local.T
    turns = {k: _rot(model.axis[k], q[k]) for k in links}
    for _ in range(8):
        for k in links[::-1]:
            before_k = R_before.copy()
            for j in links:
                if j == k:
                    break
                before_k = before_k @ turns[j]
            R_end = R_before
            for j in links:
                R_end = R_end @ turns[j]
            phi = float(rotation_error(target_R, R_end) @ (before_k @ model.axis[k]))
            q[k] = _nearest(model, k, q[k] + phi, q[k])
            turns[k] = _rot(model.axis[k], q[k])
