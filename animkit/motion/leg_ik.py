"""Joint turns written back into poses over all frames at once: the two-bone leg IK the foot lock drives
(:func:`held_leg_ik`: the ankle on a goal, the knee in the clip's own plane and range, soft stops, a limited knee speed)
and the root carried by a ground transform (:func:`_carry`: W_h' = M·W_h, which the lock's pelvis correction and
root motion share), each read back into the joints' DOFs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from animkit import jit
from animkit.ik import two_bone_angles
from animkit.look.surface import BodySurface, descendants
from animkit.model.figure import Figure
from animkit.model.fk import CompiledFigure, DofArrays, compile_figure, world_batch
from animkit.model.transforms import matrix_about_axis
from animkit.motion.leg_write import _columns, _nearest_turns, _rotation, _write_joints
from animkit.motion.legs import Contacts, Leg, MotionError, _intervals, _norm
from animkit.motion.retarget import read_dofs
from animkit.motion.retarget_rest import _mm3
from animkit.recent import Recent

__all__: list[str] = []

Array = NDArray[np.float64]
Bool = NDArray[np.bool_]


def _cross(a: Array, b: Array) -> Array:
    """a × b over rows (F, 3): NumPy's cross's own products and differences (the same bits), without its set-up."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def _frames_batch(a: Array, b: Array) -> Array:
    """Columns (â, b̂⊥, â × b̂⊥) per frame, (F, 3, 3)."""
    a = a / _norm(a, axis=-1, keepdims=True)
    b = b - np.einsum("fi,fi->f", b, a)[:, None] * a
    b = b / np.maximum(_norm(b, axis=-1, keepdims=True), 1e-300)
    out = np.empty(a.shape + (3,))
    out[..., 0], out[..., 1], out[..., 2] = a, b, _cross(a, b)
    return out


@dataclass(frozen=True, eq=False)
class HeldLeg:
    """One leg as a lock pass drives it: its ankle goals (F, 3), the frames it is driven, the foot's turns (F, 3, 3),
    the longest and shortest hip–ankle distance it may take (the clip's own), its lock weights (F,), the clip's
    hip–ankle distance (F,) and ``twist`` (F,): how far (0 to 1) the hip turns the leg about its hip–ankle line so
    that an ankle that cannot twist still gives the foot its heading (:func:`held_leg_ik`; None: not at all)."""

    leg: Leg
    goal: Array
    active: Bool
    Q: Array
    reach: float
    near: float
    w: Array
    d_clip: Array
    twist: Array | None = None


def held_leg_ik(figure: Figure, P: Array, W: Array, held: HeldLeg, goal: Array, active: Bool, max_step: float = np.inf,
                up: int = 1) -> Array:
    """Poses with ``held.leg``'s ankle on ``goal`` where ``active``: the two-bone IK for all frames at once.

    The knee bends in the plane of the clip's own knee: its bend axis n = thigh × shin, averaged in the thigh's
    frame over the clip, so it never flips; the knee lies on the clip's side of the hip–goal line. The foot
    keeps its world orientation from the clip, turned by ``held.Q``; where the ankle has two DOFs and no twist, the
    leg turns about its hip–ankle line by ``held.twist`` times the angle that gives the foot that heading
    (:func:`_heading_swivel`; within the hip's limits, the knee within the clip's own range of turn:
    :func:`_hip_allows`). The hip–ankle distance stays within [near, reach] (the clip's own range: the knee bends no
    further, and straightens no further, than the clip's does); ``max_step``: the knee's largest turn between frames;
    where ``held.w`` ≥ 1 the foot is planted (:func:`_keep_height`). :func:`held_legs_ik` for several legs at once.
    """
    return held_legs_ik(figure, P, W, [(held, goal, active)], max_step, up)


@dataclass(frozen=True, eq=False)
class _LegSolve:
    """One leg's part of :func:`held_legs_ik`: its held leg, goals and active frames, node indices (hip, knee, ankle),
    bone lengths, world bend axis n_w (F, 3), the hip–goal offsets and distances (F, 3), (F,), the distances the leg
    takes (F,), the knee's side (±1) and the shoulder angle α (F,)."""

    held: HeldLeg
    goal: Array
    active: Bool
    nodes: tuple[int, int, int]
    lengths: tuple[float, float]
    n_w: Array
    to_goal: Array
    d: Array
    dd: Array
    side: float
    alpha: Array


def _leg_solve(figure: Figure, W: Array, held: HeldLeg, goal: Array, active: Bool, max_step: float) -> _LegSolve:
    """The per-leg set-up of :func:`held_legs_ik` (its sums over frames: the bend axis and the knee's side)."""
    leg, reach, near = held.leg, held.reach, held.near
    names = figure.node_names
    F = W.shape[0]
    ih, ik_, ia = (names.index(n) for n in (leg.hip, leg.knee, leg.ankle))
    Hp, K, A = W[:, ih, :3, 3], W[:, ik_, :3, 3], W[:, ia, :3, 3]
    Rh = _rotation(W[:, ih, :3, :3])  # a scaled armature (Mixamo's 0.01): turns
    l1 = float(np.linalg.norm(K[0] - Hp[0]))
    l2 = float(np.linalg.norm(A[0] - K[0]))
    thigh, shin = K - Hp, A - K
    n_local = np.einsum("fji,fj->i", Rh, _cross(thigh, shin))  # the bend axis in the thigh's frame, summed
    if np.linalg.norm(n_local) < 1e-12 * l1 * l2 * F:
        raise MotionError(f"leg {leg.side}: the knee never bends in this clip; no knee plane to keep")
    n_local /= np.linalg.norm(n_local)
    n_w = Rh @ n_local
    to_goal = goal - Hp
    d = _norm(to_goal, axis=1)
    dd = _soft_clip(d, min(near, reach), reach, SOFT * (l1 + l2))
    if np.isfinite(max_step):
        dd = _rate_limited(dd, _norm(A - Hp, axis=1), active, l1, l2, max_step)
    u0 = (A - Hp) / _norm(A - Hp, axis=1, keepdims=True)
    side = np.sign(np.einsum("fi,fi->", thigh - np.einsum("fi,fi->f", thigh, u0)[:, None] * u0, _cross(n_w, u0)))
    alpha, _ = two_bone_angles(l1, l2, dd)
    return _LegSolve(held, goal, active, (ih, ik_, ia), (l1, l2), n_w, to_goal, d, dd,
                     float(side) if side != 0 else 1.0, alpha)


def held_legs_ik(figure: Figure, P: Array, W: Array, legs: list[tuple[HeldLeg, Array, Bool]],
                 max_step: float = np.inf, up: int = 1) -> Array:
    """:func:`held_leg_ik` for each (held leg, goal, active frames) of ``legs`` at once (the legs turn joints of their
    own, each read from the same world matrices ``W``): the knee's and the bones' new directions and turns are found
    for every leg's frames stacked in one pass (row by row the same arithmetic as one leg alone), then each leg's
    joints are read back."""
    todo = [_leg_solve(figure, W, h, g, a, max_step) for h, g, a in legs if a.any()]
    if not todo:
        return P
    P = P.copy()
    F = P.shape[0]
    cat = np.concatenate
    Hp = cat([W[:, s.nodes[0], :3, 3] for s in todo])
    K, A = cat([W[:, s.nodes[1], :3, 3] for s in todo]), cat([W[:, s.nodes[2], :3, 3] for s in todo])
    Mh, Mk, Ma = (cat([W[:, s.nodes[j], :3, :3] for s in todo]) for j in range(3))
    n_w, to_goal, dd = cat([s.n_w for s in todo]), cat([s.to_goal for s in todo]), cat([s.dd for s in todo])
    alpha = cat([s.alpha for s in todo])
    l1 = np.repeat([s.lengths[0] for s in todo], F)
    u = _keep_height(to_goal, cat([s.d for s in todo]), dd, up, cat([s.held.w >= 1.0 for s in todo]))
    side = np.repeat([s.side for s in todo], F).astype(float)
    K_new, R_thigh, R_shin = bend_legs((Hp, K, A), (Mh, Mk), n_w, u, (alpha, l1, dd, side))
    R_foot = _mm3(cat([s.held.Q for s in todo]), _rotation(Ma))
    writes = []
    for j, s in enumerate(todo):
        rows = slice(j * F, (j + 1) * F)
        writes += _leg_turns(figure, W, s, (u[rows], K_new[rows] - Hp[rows], Hp[rows]),
                             (R_thigh[rows], R_shin[rows], R_foot[rows]), up)
    _write_joints(figure, P, writes)
    return P


def bend_legs(points: tuple[Array, Array, Array], blocks: tuple[Array, Array], n_w: Array, u: Array,
              rows: tuple[Array, Array, Array, Array]) -> tuple[Array, Array, Array]:
    """:func:`held_legs_ik`'s two-bone step for rows of (hip, knee, ankle) positions, the hip's and knee's world
    blocks, the bend axis n_w and the hip → ankle direction û, and (α, l₁, dd, side) per row: (K', R_thigh, R_shin),
    K' = Hp + l₁ (cos α û + sin α v̂), v̂ = side (n̂_p × û), n̂_p = n_w ⊥ û, each bone turned from its old direction
    in the old bend plane to its new one in the new plane. The C extension's ``leg_bend`` (the same arithmetic in one
    pass, to the C library's cos/sin) where it is built, else NumPy."""
    Hp, K, A = points
    alpha, l1, dd, side = rows
    kernel = getattr(jit.native_kernels(), "leg_bend", None)
    if kernel is not None:
        n = len(Hp)
        R_thigh, R_shin, K_new = np.empty((n, 3, 3)), np.empty((n, 3, 3)), np.empty((n, 3))
        c = np.ascontiguousarray
        kernel(c(Hp), c(K), c(A), c(blocks[0]), c(blocks[1]), c(n_w), c(u), c(alpha), c(l1), c(dd), c(side),
               R_thigh, R_shin, K_new, n)
        return K_new, R_thigh, R_shin
    Rh, Rk = _rotation(blocks[0]), _rotation(blocks[1])
    n_p = n_w - np.einsum("fi,fi->f", n_w, u)[:, None] * u
    n_p /= _norm(n_p, axis=1, keepdims=True)
    v = side[:, None] * _cross(n_p, u)
    K_new = Hp + l1[:, None] * (np.cos(alpha)[:, None] * u + np.sin(alpha)[:, None] * v)
    A_new = Hp + dd[:, None] * u
    R_thigh = _mm3(_mm3(_frames_batch(K_new - Hp, n_p), np.swapaxes(_frames_batch(K - Hp, n_w), 1, 2)), Rh)
    R_shin = _mm3(_mm3(_frames_batch(A_new - K_new, n_p), np.swapaxes(_frames_batch(A - K, n_w), 1, 2)), Rk)
    return K_new, R_thigh, R_shin


def _leg_turns(figure: Figure, W: Array, s: _LegSolve, lines: tuple[Array, Array, Array],
               turns: tuple[Array, Array, Array], up: int) -> list[tuple[str, Array, Array, Bool]]:
    """One leg's new world turns (thigh, shin, foot) after the hip's swivel for an ankle that cannot twist
    (:func:`_heading_swivel`), as (node, its world turn, its parent's, the frames written) for :func:`_write_joints`;
    ``lines``: û, the knee's offset from the hip and the hip's position (F, 3) each."""
    held, active, leg = s.held, s.active, s.held.leg
    u, knee, Hp = lines
    R_thigh, R_shin, R_foot = turns
    names = figure.node_names
    F = W.shape[0]
    parent = figure.parent_of(leg.hip)
    Rp = _rotation(W[:, names.index(parent), :3, :3]) if parent is not None else np.broadcast_to(np.eye(3), (F, 3, 3))
    sel = np.flatnonzero(active & (np.asarray(held.twist) > 0.0)) if held.twist is not None else np.zeros(0, int)
    phi = _heading_swivel(figure, leg.ankle, u[sel], R_shin[sel], R_foot[sel]) if sel.size else None
    if phi is not None:  # an ankle that cannot twist: the whole leg turns about the hip–ankle line instead, as far
        # as the hip's limits and the clip's own range of knee turn (:func:`_knee_range`) let it
        assert held.twist is not None
        out = Hp - (W[:, names.index(parent), :3, 3] if parent is not None else 0.0)  # the hip's side, outwards
        out[:, up] = 0.0
        out /= np.maximum(_norm(out, axis=1, keepdims=True), 1e-300)
        lo, hi = _knee_range(W, s.nodes, out)
        phi = _hip_allows(figure, leg.hip, (Rp[sel], R_thigh[sel]), (u[sel], knee[sel], out[sel]),
                          phi * np.asarray(held.twist)[sel], (lo, hi))
        turn = matrix_about_axis(u[sel], phi)
        R_thigh, R_shin = R_thigh.copy(), R_shin.copy()
        R_thigh[sel], R_shin[sel] = _mm3(turn, R_thigh[sel]), _mm3(turn, R_shin[sel])
    return [(leg.hip, R_thigh, Rp, active), (leg.knee, R_shin, R_thigh, active), (leg.ankle, R_foot, R_shin, active)]


def swivels(figure: Figure, ankle: str) -> bool:
    """Whether the hip's twist gives the foot its heading (:func:`_heading_swivel`): an ankle of exactly two revolute
    DOFs and no twist of its own (``HeldLeg.twist`` is read for no other)."""
    arc = figure.node(ankle).parent_arc
    return arc is not None and len(arc.joint.dofs) == 2 and all(d.revolute for d in arc.joint.dofs)


def _heading_swivel(figure: Figure, ankle: str, u: Array, R_shin: Array, R_foot: Array) -> Array | None:
    """Angles φ (F,) to turn the leg by, R(û, φ) about its hip–ankle line û, that let an ankle of two revolute DOFs
    (axes e₁, e₂: A = R(e₁, θ₁)·R(e₂, θ₂), no twist of its own) give the foot its world turn R_foot: every such A
    has e₁ᵀ·A·e₂ = e₁·e₂, so with A = (T·R_shin·L)ᵀ·R_foot, φ solves (R(û, φ)·a)·b = e₁·e₂, a = R_shin·L·e₁,
    b = R_foot·e₂: α·cos φ + β·sin φ = γ with α = a⊥·b, β = (û × a)·b, γ = e₁·e₂ − (a·û)(û·b), whose
    roots are φ = ψ ± arccos(γ / ρ), ψ = atan2(β, α), ρ = √(α² + β²) (the nearest reachable φ where |γ| > ρ):
    the one that turns the ankle least (largest tr A; the other points the foot backwards). None for any other
    ankle (three DOFs turn the foot on their own; one cannot be helped by a twist). Where the twist barely moves
    the axis (ρ < 0.5: e₁ along the leg) φ fades to 0 (at ρ ≤ 0.25), and |φ| ≤ 90°."""
    if not swivels(figure, ankle):
        return None
    arc = figure.node(ankle).parent_arc
    assert arc is not None
    e1, e2 = (np.asarray(d.axis, dtype=float) for d in arc.joint.dofs)
    a = np.einsum("fij,j->fi", R_shin, _rotation(arc.L[:3, :3]) @ e1)
    b = R_foot @ e2
    ua, ub = np.einsum("fi,fi->f", a, u), np.einsum("fi,fi->f", b, u)
    alpha = np.einsum("fi,fi->f", a, b) - ua * ub
    beta = np.einsum("fi,fi->f", _cross(u, a), b)
    rho = np.hypot(alpha, beta)
    psi = np.arctan2(beta, alpha)
    off = np.arccos(np.clip((float(e1 @ e2) - ua * ub) / np.maximum(rho, 1e-300), -1.0, 1.0))
    roots = np.stack([psi - off, psi + off])  # (2, F): keep the one that turns the ankle least (the other one
    # points the foot backwards), by tr A = tr(Lᵀ·R_shinᵀ·R(û, φ)ᵀ·R_foot)
    M = _mm3(np.swapaxes(R_foot, 1, 2), R_shin) @ _rotation(arc.L[:3, :3])  # tr A = tr(R_footᵀ·R(û, φ)·R_shin·L)
    tr = [np.einsum("fij,fji->f", M, matrix_about_axis(u, r)) for r in roots]
    phi = np.where(tr[0] >= tr[1], roots[0], roots[1])
    phi = (phi + np.pi) % (2 * np.pi) - np.pi
    x = np.clip((rho - 0.25) / 0.25, 0.0, 1.0)
    return np.clip(phi, -0.5 * np.pi, 0.5 * np.pi) * (x * x * (3.0 - 2.0 * x))


def _hip_allows(figure: Figure, hip: str, turns: tuple[Array, Array], lines: tuple[Array, Array, Array],
                phi: Array, sines: tuple[float, float]) -> Array:
    """The swivels s·φ (F,), s ∈ [0, 1] largest (bisection, 1/64) such that, with the thigh turned by R(û, s·φ), the
    hip's DOFs stay within its limits and the knee stays within the clip's own range of turn about the hip–ankle
    line (or no further out of it than it is): min(κ̂₀·ô, lo) ≤ κ̂·ô ≤ max(κ̂₀·ô, hi), κ the knee's offset from the
    hip square to û (κ₀ before the turn), ô the hip's side outwards (unit), ``sines`` = (lo, hi) the clip's range of
    κ̂·ô (:func:`_knee_range`) (where φ itself would not). ``turns``: the world turns of the hip's parent and of the
    thigh; ``lines``: û, the knee's offset from the hip and ô."""
    Rp, R_thigh = turns
    u, knee, side = lines
    arc = figure.node(hip).parent_arc
    assert arc is not None
    idx, lim = _columns(figure, hip)
    RpL_T = np.swapaxes(_mm3(Rp, np.broadcast_to(_rotation(arc.L[:3, :3]), Rp.shape)), 1, 2)

    kp = knee - np.einsum("fi,fi->f", knee, u)[:, None] * u
    now, size = np.einsum("fi,fi->f", kp, side), _norm(kp, axis=1)
    floor, ceil = np.minimum(now, sines[0] * size) - 1e-12 * size, np.maximum(now, sines[1] * size) + 1e-12 * size

    lo_lim, hi_lim, zero = lim[:, 0] - 1e-9, lim[:, 1] + 1e-9, np.zeros(len(idx))

    def ok(angle: Array, at: tuple[Array, ...]) -> Bool:
        u_, RpL_T_, R_thigh_, kp_, side_, floor_, ceil_ = at  # the frames tried, gathered once
        T = matrix_about_axis(u_, angle)
        v = read_dofs(arc.joint, _mm3(RpL_T_, _mm3(T, R_thigh_)), None, zero)
        x = np.einsum("fij,fj,fi->f", T, kp_, side_)
        return np.all((v >= lo_lim) & (v <= hi_lim), axis=1) & (x >= floor_) & (x <= ceil_)

    rows = np.flatnonzero(~ok(np.ones(len(phi)) * phi, (u, RpL_T, R_thigh, kp, side, floor, ceil)))
    if not rows.size:
        return phi
    at = (u[rows], RpL_T[rows], R_thigh[rows], kp[rows], side[rows], floor[rows], ceil[rows])
    phi_r = phi[rows]
    lo, hi = np.zeros(rows.size), np.ones(rows.size)
    for _ in range(6):
        mid = 0.5 * (lo + hi)
        good = ok(mid * phi_r, at)
        lo, hi = np.where(good, mid, lo), np.where(good, hi, mid)
    out = phi.copy()
    out[rows] *= lo
    return out


def _keep_height(to_goal: Array, d: Array, dd: Array, up: int, planted: Bool | None = None) -> Array:
    """Unit directions hip → ankle: towards the goal, except where the knee cannot bend far enough (dd > d) and the
    foot is not ``planted``: there the ankle keeps the goal's height, u = (r·ĥ + y·ê_up) / dd with y the goal's
    height below the hip, ĥ its ground direction and r = √(dd² − y²), so a swinging leg bent to its limit moves
    the foot along the ground, never into it (a planted one stays on its hip–goal line: it never slides)."""
    u = to_goal / d[:, None]
    short = dd > d * (1.0 + 1e-9)
    if planted is not None:
        short &= ~planted
    if not short.any():
        return u
    y = np.clip(to_goal[short, up], -dd[short], dd[short])
    h = to_goal[short].copy()
    h[:, up] = 0.0
    hn = _norm(h, axis=1, keepdims=True)
    h = np.where(hn > 1e-12 * dd[short, None], h / np.maximum(hn, 1e-300), 0.0)
    r = np.sqrt(np.maximum(dd[short] ** 2 - y**2, 0.0))
    out = r[:, None] * h
    out[:, up] += y
    u[short] = out / dd[short, None]
    return u


def _rate_limited(d: Array, d_clip: Array, active: Bool, l1: float, l2: float, step: float) -> Array:
    """Hip–ankle distances whose knee angle θ (cos θ = (l1² + l2² − d²) / 2·l1·l2) changes by at most ``step``
    radians between frames: the clip's own θ where not ``active``, the goal's elsewhere, limited forwards then
    backwards over each active run (a held foot then trails its goal for a frame or two instead of the knee
    popping; the lock's check for missed goals ends a lock that falls behind)."""
    c = 2.0 * l1 * l2
    th = np.arccos(np.clip((l1 * l1 + l2 * l2 - np.where(active, d, d_clip) ** 2) / c, -1.0, 1.0))
    if np.abs(np.diff(th)).max(initial=0.0) <= step:
        return d
    t = th.tolist()  # the scan on Python floats (the same arithmetic; NumPy scalars cost more than it)
    for s, e in _intervals(active):
        for f in range(max(s, 1), e):  # forwards from the frame before the run
            t[f] = min(max(t[f], t[f - 1] - step), t[f - 1] + step)
        for f in range(min(e, len(t) - 1) - 1, s - 1, -1):  # backwards into the frame after it
            t[f] = min(max(t[f], t[f + 1] - step), t[f + 1] + step)
    th = np.asarray(t)
    return np.where(active, np.sqrt(np.maximum(l1 * l1 + l2 * l2 - c * np.cos(th), 0.0)), d)


#: The width of the soft stops at the leg's shortest and longest hip–ankle distance, a fraction of its length.
SOFT = 0.03


def _soft_clip(x: Array, lo: float, hi: float, soft: float) -> Array:
    """x kept inside [lo, hi] with a smooth (C¹) knee of width ``soft`` at each end: within ``soft`` of an end,
    x ↦ end ∓ soft·exp(−(x − (end ∓ soft)) / soft), so a leg stretched towards its limit slows down instead of
    stopping dead (which a knee would show as a pop)."""
    soft = min(soft, 0.25 * max(hi - lo, 0.0))
    if soft <= 0.0:
        return np.clip(x, lo, hi)
    top, bottom = hi - soft, lo + soft
    y = np.where(x > top, hi - soft * np.exp(-(x - top) / soft), x)
    return np.where(x < bottom, lo + soft * np.exp(-(bottom - x) / soft), y)


def _hips(figure: Figure) -> str:
    """The first node (traversal order) whose joint translates: the node root motion moves."""
    for arc in figure.arcs():
        if any(not d.revolute for d in arc.joint.dofs):
            return arc.child.name
    raise MotionError(f"figure {figure.name!r} has no joint that translates; no root to move")


def _carry(figure: Figure, poses: Array, M: Array, W: Array | None = None) -> Array:
    """Poses with the hips' world transform left-multiplied by M (F, 4, 4): W_h' = M W_h, read into the root's DOFs.
    ``W``: the poses' world matrices (F, N, 4, 4) where the caller has them (else computed here)."""
    P = np.atleast_2d(figure.check_pose(poses)).copy()
    hips = _hips(figure)
    arc = figure.node(hips).parent_arc
    assert arc is not None
    if W is None:
        W = figure.world_batch(P)
    names = figure.node_names
    parent = figure.parent_of(hips)
    B = arc.L[None] if parent is None else W[:, names.index(parent)] @ arc.L
    Wh = M @ W[:, names.index(hips)]
    if B.shape[0] > 1 and (B == B[0]).all():  # a parent standing still (every rig's hips): one inverse, the same bits
        B = B[:1]
    Binv = np.linalg.inv(B)
    A = Binv @ Wh
    idx = np.asarray(figure.joint_dofs[arc.joint.name])
    vals = read_dofs(arc.joint, A[:, :3, :3], A[:, :3, 3], P[:, idx])
    rev = np.array([d.revolute for d in arc.joint.dofs])
    vals[:, rev] = _nearest_turns(vals[:, rev], P[:, idx][:, rev])
    P[:, idx] = vals
    return P


def _knee_range(W: Array, nodes: tuple[int, int, int], side: Array) -> tuple[float, float]:
    """(lo, hi): the range over the clip's frames of its knee's turn out of straight ahead, κ̂·ô (the sine of the
    angle about the hip–ankle line û; κ the knee's offset from the hip square to û, ô the hip's side outwards, unit,
    (F, 3) in ``side``), over the frames whose knee stands at least :data:`KNEE_BENT` of the thigh's length off û
    (a straight knee has no direction); (+inf, −inf), no range, where none does. ``W``: the clip's world matrices;
    ``nodes``: hip, knee and ankle."""
    H, K, A = (W[:, i, :3, 3] for i in nodes)
    u = (A - H) / _norm(A - H, axis=1, keepdims=True)
    kp = (K - H) - np.einsum("fi,fi->f", K - H, u)[:, None] * u
    size = _norm(kp, axis=1)
    bent = size >= KNEE_BENT * _norm(K - H, axis=1)
    if not bent.any():
        return np.inf, -np.inf
    s = np.einsum("fi,fi->f", kp[bent], side[bent]) / size[bent]
    return float(s.min()), float(s.max())


#: A knee counts towards the clip's range of knee turn (:func:`_knee_range`) where it stands at least this fraction of
#: the thigh's length off the hip–ankle line (0.1: a bend of about 11.5° with bones of equal length).
KNEE_BENT = 0.1


def _below(figure: Figure, roots: list[int]) -> NDArray[np.bool_]:
    """(N,) the nodes at or below any of ``roots`` (node indices; parents come before their children)."""
    parent = figure.compiled.parent.tolist()
    out = [False] * len(parent)
    for i in roots:
        out[i] = True
    for i, p in enumerate(parent):
        out[i] = out[i] or (p >= 0 and out[p])
    return np.asarray(out, dtype=bool)


#: The FK programmes of some of a figure's nodes with their ancestors (:func:`_world_below`, :func:`_world_of`)
_SUBS: Recent[tuple[CompiledFigure, NDArray[np.intp], NDArray[np.intp], NDArray[np.intp]]] = Recent(8)


def _sub_figure(c: CompiledFigure, roots: tuple[int, ...], extra: tuple[int, ...] = ()
                ) -> tuple[CompiledFigure, NDArray[np.intp], NDArray[np.intp], NDArray[np.intp]]:
    """(the FK programme of the nodes at or below ``roots``, the nodes ``extra`` and all their ancestors, in the
    figure's order; its nodes; the pose columns it reads; the rows of it that are at or below ``roots``)."""
    parent = c.parent.tolist()
    below = [False] * len(parent)
    keep = [False] * len(parent)
    for i in roots:
        below[i] = True
    for i, p in enumerate(parent):
        below[i] = below[i] or (p >= 0 and below[p])
    for i in [i for i in range(len(parent)) if below[i]] + list(extra):
        while i >= 0 and not keep[i]:
            keep[i] = True
            i = parent[i]
    nodes = np.flatnonzero(keep)
    at = np.full(len(parent), -1, dtype=np.intp)
    at[nodes] = np.arange(nodes.size)
    first = np.searchsorted(c.dof_node, np.arange(len(parent) + 1))
    cols = np.concatenate([np.arange(first[i], first[i + 1]) for i in nodes]).astype(np.intp)
    sub = compile_figure(node_names=[c.node_names[i] for i in nodes],
                         parent=[at[parent[i]] if parent[i] >= 0 else -1 for i in nodes], L=c.L[nodes],
                         T=c.T[nodes], dof_counts=np.diff(first)[nodes],
                         dofs=DofArrays([c.dof_names[d] for d in cols], c.dof_revolute[cols], c.dof_axis[cols],
                                        c.dof_letter[cols], c.lower[cols], c.upper[cols], c.rest[cols],
                                        c.dof_scale[cols]))
    return sub, nodes, cols, np.flatnonzero(np.asarray(below)[nodes])


def _sub_of(c: CompiledFigure, roots: list[int], extra: Sequence[int] = ()
            ) -> tuple[CompiledFigure, NDArray[np.intp], NDArray[np.intp], NDArray[np.intp]]:
    """:func:`_sub_figure`, made once per figure and node sets."""
    key = (tuple(sorted(set(roots))), tuple(sorted(set(extra))))
    return _SUBS.fetch((id(c), key), (c,), lambda: _sub_figure(c, *key))


def _fk_below(figure: Figure, P: Array, roots: list[int]) -> dict[int, Array]:
    """The world matrices (F, 4, 4) of poses ``P`` of the nodes at or below ``roots`` and their ancestors, by node
    index: FK of them alone (each node's product the same arithmetic as the whole figure's FK, bit for bit)."""
    sub, nodes, cols, _ = _sub_of(figure.compiled, roots)
    fresh = world_batch(sub, np.ascontiguousarray(P[:, cols]))
    return {n: fresh[:, j] for j, n in enumerate(nodes.tolist())}


def _world_below(figure: Figure, P: Array, W: Array, roots: list[int], fresh: dict[int, Array] | None = None
                 ) -> Array:
    """The world matrices of poses ``P`` that differ from those of ``W``'s poses only in the DOFs of the nodes at or
    below ``roots`` (a leg IK's hips): ``W`` with those nodes' matrices made again (:func:`_fk_below`, or ``fresh``,
    its result for ``P``)."""
    out = W.copy()
    for n, M in (_fk_below(figure, P, roots) if fresh is None else fresh).items():  # a slice each, no gather
        out[:, n] = M
    return out


def _world_of(figure: Figure, P: Array, roots: list[int], extra: list[int]) -> Array:
    """World matrices (F, N, 4, 4) of poses ``P`` for the nodes at or below ``roots``, the nodes ``extra`` and their
    ancestors (bit for bit the whole figure's FK there); NaN for every other node (what the foot lock never reads)."""
    c = figure.compiled
    sub, nodes, cols, _ = _sub_of(c, roots, extra)
    if nodes.size == c.node_count:
        return world_batch(c, np.ascontiguousarray(P))
    out = np.full((P.shape[0], c.node_count, 4, 4), np.nan)
    fresh = world_batch(sub, np.ascontiguousarray(P[:, cols]))
    for j, n in enumerate(nodes.tolist()):
        out[:, n] = fresh[:, j]
    return out


def _world_like(figure: Figure, P: Array, W: Array) -> Array:
    """:func:`_world_of` for the nodes that ``W`` (one such result) holds: the world matrices of poses ``P`` there."""
    if not W.shape[0]:
        return figure.world_batch(P)
    return _world_of(figure, P, [], np.flatnonzero(W[0, :, 3, 3] == 1.0).tolist())


def _carried_world(figure: Figure, P: Array, W: Array) -> Array:
    """:func:`_world_like` for poses ``P`` that :func:`_carry` made from ``W``'s with M a translation (W_h' = M·W_h,
    M = [I t; 0 1]): every node at or below the hips keeps its turn and moves by the hips' own move t, W' = M·W (the
    FK of the hips and their ancestors alone gives t). Where the hips' turn moved by more than rounding (a root whose
    DOFs cannot carry the translation alone), the FK of every node ``W`` holds."""
    names = figure.node_names
    hips = _hips(figure)
    h = names.index(hips)
    sub, nodes, cols, _ = _sub_of(figure.compiled, [], [h])
    Wh = world_batch(sub, np.ascontiguousarray(P[:, cols]))[:, int(np.flatnonzero(nodes == h)[0])]
    if np.abs(Wh[:, :3, :3] - W[:, h, :3, :3]).max(initial=0.0) > 1e-12 * max(1.0, float(np.abs(Wh[0, :3, :3]).max())):
        return _world_like(figure, P, W)
    out = W.copy()
    move = Wh[:, :3, 3] - W[:, h, :3, 3]
    below = descendants(figure, hips)  # a run of nodes (every rig's hips): a strided view, no gather and scatter
    run = slice(below[0], below[-1] + 1) if below[-1] + 1 - below[0] == len(below) else below
    out[:, :, :3, 3][:, run] += move[:, None]  # every node at once, each entry the same sum
    out[:, h] = Wh
    return out


def _root_mover(figure: Figure) -> list[int]:
    """[the node root motion moves (:func:`_hips`)], or [] where no joint translates."""
    for arc in figure.arcs():
        if any(not d.revolute for d in arc.joint.dofs):
            return [figure.node_names.index(arc.child.name)]
    return []


def _read_world(figure: Figure, P: Array, legs: tuple[Leg, ...], surface: BodySurface,
                contacts: Contacts | None) -> Array:
    """The world matrices (F, N, 4, 4) of the nodes the lock reads (each leg from its hip down, the feet's surface's
    joints, the node root motion moves, the contacts' points, and their ancestors: :func:`_world_of`); NaN elsewhere."""
    names = figure.node_names
    extra = _root_mover(figure) + [names.index(p) for p in (contacts.points if contacts is not None else ())]
    for leg in legs:
        extra += surface.movers(descendants(figure, leg.ankle))
    return _world_of(figure, P, [names.index(leg.hip) for leg in legs], extra)


#: How far past straight ahead (sin of the angle about the hip–ankle line) the hip's twist may turn a knee in, where it
#: did not point in already (:func:`_hip_allows`): 30° (a hopping humanoid's knee turns in 22° on its own).
KNEE_IN = np.sin(np.radians(30.0))
