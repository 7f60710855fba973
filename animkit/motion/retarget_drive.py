"""The retarget's drive: each mapped target bone's world turn R_t = Δ · D · C · R_t(rest) read into its joint's DOFs,
A_j = (R_parent · R_L)ᵀ R_t, depth by depth (see :mod:`animkit.motion.retarget`'s docstring for the equations).

The parent frames a depth is read in come from the poses already found. Where every node's static matrix and
every joint's scale are a turn times a uniform scale (every rig seen), the turn part of W_parent · L is
(R_w,parent · R_L), and a driven joint's world turn is that times the turn its revolute DOFs give
(:class:`_Turns`): one product per driven bone and depth instead of the whole figure's FK per depth. Anything
else (a non-uniform scale, a driven bone above the hips) runs the figure's FK per depth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from animkit.model.figure import Figure
from animkit.model.fk import world_batch
from animkit.model.graph import Arc
from animkit.model.joints import Joint
from animkit.model.transforms import matrix_about_axis, matrix_aligning
from animkit.motion.retarget_rest import _mm3, read_dofs, rotation_part

Array = NDArray[np.float64]

@dataclass(frozen=True)
class _Bone:
    """One mapped target bone and what drives it (all in node-index terms)."""

    target: int
    source: int
    C: Array  # (3, 3) rest alignment
    d_target: Array  # (3,) the target's rest direction (zero: no per-frame correction)
    child_source: int  # source node whose position gives d_s(f), −1 for none
    child_target: int = -1  # the target's primary mapped child, −1 for none



def _hinge_twist(child_arc: Arc, R: Array, d: Array, want_child: Array) -> Array:
    """R turned about its bone's direction d so that a hinge child can bend onto ``want_child``.

    A hinge turns its bone only in the plane normal to its axis a: the parent's twist about d is chosen so that
    R · R_L · a lies along ±n, n = d × d_child (the sign the hinge's limits bend to), weighted by the bend
    (nothing for a straight limb, whose plane is undefined; fully from 20° of bend on). Other joints: R as is.
    """
    joint = child_arc.joint
    rev = [dof for dof in joint.dofs if dof.revolute]
    if len(rev) != 1 or joint.dof_count != 1:
        return R
    dof = rev[0]
    mid = 0.5 * (max(dof.lower, -np.pi) + min(dof.upper, np.pi))
    u = d / np.linalg.norm(d, axis=1, keepdims=True)
    n = np.cross(u, want_child)
    sin_bend = np.linalg.norm(n, axis=1) / np.linalg.norm(want_child, axis=1)
    n = n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-300)
    a = np.einsum("fij,j->fi", R, child_arc.L[:3, :3] @ dof.axis)
    a = a - np.einsum("fi,fi->f", a, u)[:, None] * u
    if mid < 0:
        n = -n
    elif mid == 0:  # no preferred side: the nearer of ±n
        n = n * np.where(np.einsum("fi,fi->f", a, n) < 0, -1.0, 1.0)[:, None]
    phi = np.arctan2(np.einsum("fi,fi->f", np.cross(a, n), u), np.einsum("fi,fi->f", a, n))
    x = np.clip(sin_bend / np.sin(np.radians(20.0)), 0.0, 1.0)
    return matrix_about_axis(u, phi * x * x * (3 - 2 * x)) @ R


def _unwrap_into_limits(values: Array, lower: Array, upper: Array) -> Array:
    """Angles made continuous over frames (np.unwrap), shifted by whole turns into the limits, then clamped; a
    range of a whole turn or more (a free root's ±180°) is no limit: there the angle is wrapped into it by whole
    turns, not clamped (clamping stopped a figure turning round: the hop onto the TOML humanoid lost up to 135° of
    its hips' heading)."""
    v = np.unwrap(values, axis=0)
    two_pi = 2 * np.pi
    finite = np.isfinite(lower) & np.isfinite(upper)
    mid = np.where(finite, 0.5 * (np.where(finite, lower, 0.0) + np.where(finite, upper, 0.0)), 0.0)
    shift = np.round((np.mean(v, axis=0) - mid) / two_pi) * two_pi
    v = v - shift
    full = finite & (np.where(finite, upper - lower, 0.0) >= two_pi - 1e-9)
    wrapped = np.where(full, lower + np.mod(v - np.where(full, lower, 0.0), two_pi), v)
    return np.where(full, np.minimum(wrapped, upper), np.clip(v, lower, upper))



@dataclass(frozen=True)
class _Root:
    """How the hips (node index ``hips``) move: to s · p_s(f), less the source floor's ``slope`` along up (k)."""

    hips: int
    scale: float
    slope: Array
    k: int


def _levels(fig: Figure) -> list[list[int]]:
    """Arc indices grouped by depth below the root (parents before children)."""
    names = fig.node_names
    depth: list[int] = []
    for arc in fig.arcs():
        depth.append(0 if arc.parent is None else depth[names.index(arc.parent.name)] + 1)
    out: list[list[int]] = [[] for _ in range(max(depth, default=-1) + 1)]
    for i, d in enumerate(depth):
        out[d].append(i)
    return out


def _drive(target: Figure, bones: Sequence[_Bone], Ws: Array, Ws0: Array, Wt0: Array, P_t0: Array,
           root: _Root) -> Array:
    """The target's poses (F, D): each driven joint's DOFs read from R_t = Δ · D · C · R_t(rest) (the module's
    docstring) in its parent's world frame, depth by depth: the world matrices of the joints above come from the
    compiled FK of the poses found so far (one call per depth), so a parent that cannot follow fully (a hinge, a
    limit) is what its children are measured in."""
    F = Ws.shape[0]
    driven = {b.target: b for b in bones if target.arcs()[b.target].joint.dof_count}
    out = np.repeat(P_t0[None], F, axis=0)
    lim = target.dof_limits()
    Wt = Wt0[None]
    Rt0 = rotation_part(Wt0)
    turns = _turns(target, driven, Ws, Ws0, Rt0)
    names, arcs, starts = target.node_names, target.arcs(), target.joint_dofs  # (each built anew when asked)
    changed = False
    for level in _levels(target):
        here = [i for i in level if i in driven]
        if not here:
            continue
        if changed:
            Wt = world_batch(target.compiled, out)  # the poses are the figure's own: no check needed
        for i in here:
            arc = arcs[i]
            B3, b = _parent_frame(Wt, None if arc.parent is None else names.index(arc.parent.name), arc.L)
            t = _root_translation(B3, b, Ws[:, driven[i].source, :3, 3], root) if i == root.hips else None
            cols = np.asarray(starts[arc.joint.name])
            out[:, cols] = _values(arc.joint, _mm3(np.swapaxes(rotation_part(B3), 1, 2), turns[i]), t, P_t0[cols],
                                   lim[cols])
        changed = True
    return out


def _parent_frame(Wt: Array, parent: int | None, L: Array) -> tuple[Array, Array]:
    """B = W_parent · L, as its 3×3 block (F or 1, 3, 3) and translation (F or 1, 3): one matrix product over all
    frames (rows stacked) instead of a batched 4×4 one."""
    if parent is None:
        return L[None, :3, :3], L[None, :3, 3]
    Wp = Wt[:, parent]
    n = Wp.shape[0]
    B3 = (np.ascontiguousarray(Wp[:, :3, :3]).reshape(3 * n, 3) @ L[:3, :3]).reshape(n, 3, 3)
    return B3, Wp[:, :3, :3] @ L[:3, 3] + Wp[:, :3, 3]


def _turns(target: Figure, driven: Mapping[int, _Bone], Ws: Array, Ws0: Array, Rt0: Array) -> dict[int, Array]:
    """:func:`_turn` for every driven bone: D · C · R_t(rest) = R_s(f) · (R_s(rest)ᵀ · C · R_t(rest)) over all bones
    at once (one polar decomposition of the source's turns, one product), then each bone's Δ."""
    order = list(driven)
    if not order:
        return {}
    src = [driven[i].source for i in order]
    Rs = rotation_part(Ws[:, src])  # (F, B, 3, 3)
    Rs0 = rotation_part(Ws0[src])
    K = np.stack([Rs0[j].T @ (driven[i].C @ Rt0[i]) for j, i in enumerate(order)])
    R = _mm3(Rs, K[None])
    return {i: _turn(target, driven, driven[i], Ws, R[:, j], Rt0[i]) for j, i in enumerate(order)}


def _turn(target: Figure, driven: Mapping[int, _Bone], bone: _Bone, Ws: Array, R: Array, Rt0: Array) -> Array:
    """R_t(f) = Δ(f) · R (F, 3, 3), R = D(f) · C · R_t(rest) with D = R_s(f) R_s(rest)ᵀ on rotation parts (a source
    whose world matrices carry a scale, an FBX armature in centimetres, would otherwise scale D); a hinge child's
    plane chosen by the twist about the bone (:func:`_hinge_twist`)."""
    if bone.child_source >= 0:
        now = R @ (Rt0.T @ bone.d_target)
        want = Ws[:, bone.child_source, :3, 3] - Ws[:, bone.source, :3, 3]
        R = _mm3(matrix_aligning(now, want), R)
        child = driven.get(bone.child_target)
        names = target.node_names
        if child is not None and child.child_source >= 0 \
                and target.parent_of(names[child.target]) == names[bone.target]:
            R = _hinge_twist(target.arcs()[child.target], R, want,
                             Ws[:, child.child_source, :3, 3] - Ws[:, child.source, :3, 3])
    return R


def _root_translation(B3: Array, b: Array, p_s: Array, root: _Root) -> Array:
    """t = B₃⁻¹ (p − b), p = s · p_s less the slope's rise along up: the hips' position in their parent's space,
    its scale and turn included (B₃ (F or 1, 3, 3), b (F or 1, 3): the parent's world matrix times the arc's L)."""
    hip = root.scale * p_s
    hip = hip - np.outer(hip @ root.slope, np.eye(3)[root.k])
    F = hip.shape[0]
    B3 = np.broadcast_to(B3, (F, 3, 3))
    return np.asarray(np.linalg.solve(B3, (hip - b)[..., None])[..., 0], dtype=float)


def _values(joint: Joint, Ra: Array, t: Array | None, base: Array, lim: Array) -> Array:
    """The joint's DOF values (F, k) for local turns Ra (F, 3, 3) and translation t: :func:`read_dofs`, angles
    unwrapped into their limits, slides clamped."""
    vals = read_dofs(joint, Ra, t, base)
    rev = [c for c, d in enumerate(joint.dofs) if d.revolute]
    if rev:
        vals[:, rev] = _unwrap_into_limits(vals[:, rev], lim[rev, 0], lim[rev, 1])
    pri = [c for c, d in enumerate(joint.dofs) if d.kind == "prismatic"]
    if pri:
        vals[:, pri] = np.clip(vals[:, pri], lim[pri, 0], lim[pri, 1])
    return vals


