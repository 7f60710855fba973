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
from typing import Any

import numpy as np
from numpy.typing import NDArray

from animkit import jit
from animkit.model.figure import Figure
from animkit.model.fk import world_batch
from animkit.model.graph import Arc
from animkit.model.joints import Dof, Joint
from animkit.model.transforms import matrix_about_axis, matrix_aligning
from animkit.motion.retarget_rest import _mm3, euler_plan, read_dofs, read_local_dofs, rotation_part
from animkit.recent import Recent

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
    dof = _hinge_dof(child_arc)
    if dof is None:
        return R
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


def _hinge_dof(arc: Arc) -> Dof | None:
    """The one revolute DOF of a hinge joint (a joint of that DOF alone) on ``arc``; None for any other joint."""
    joint = arc.joint
    return joint.dofs[0] if joint.dof_count == 1 and joint.dofs[0].revolute else None


def _unwrap_into_limits(values: Array, lower: Array, upper: Array) -> Array:
    """Angles made continuous over frames (np.unwrap), shifted by whole turns into the limits, then clamped; a
    range of a whole turn or more (a free root's ±180°) is no limit: there the angle is wrapped into it by whole
    turns, not clamped (clamping stopped a figure turning round: the hop onto the TOML humanoid lost up to 135° of
    its hips' heading). The C extension's ``unwrap_limits`` takes the same steps in two passes over the frames (to
    1e-12: its mean adds the frames in their order) where it is built."""
    kernel = getattr(jit.native_kernels(), "unwrap_limits", None)
    if kernel is not None and values.ndim == 2 and values.shape[0] >= 1 and values.dtype == np.float64:
        F, n = values.shape
        out = np.empty((F, n))
        kernel(np.ascontiguousarray(values), np.ascontiguousarray(lower, dtype=np.float64),
               np.ascontiguousarray(upper, dtype=np.float64), out, F, n)
        return out
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
    docstring) in its parent's world frame, depth by depth, the parent's frame from the poses found so far
    (:class:`_Turns`, else the compiled FK of the whole figure per depth), so a parent that cannot follow fully (a
    hinge, a limit) is what its children are measured in."""
    F = Ws.shape[0]
    arcs = target.arcs()
    driven = {b.target: b for b in bones if arcs[b.target].joint.dof_count}
    out = np.repeat(P_t0[None], F, axis=0)
    lim = target.dof_limits()
    Wt = Wt0[None]
    Rt0 = rotation_part(Wt0)
    turns = _turns(target, driven, Ws, Ws0, Rt0)
    starts = target.joint_dofs
    parent, levels, world = _plan(target, driven, P_t0, root.hips)
    changed = False
    free: list[int] = []
    for level in levels:
        here = [i for i in level if i in driven]
        if not here:
            continue
        if changed and world is None:
            Wt = world_batch(target.compiled, out)  # the poses are the figure's own: no check needed
        if world is not None:  # the depth's joints read in groups of one DOF layout (the hips alone: a translation)
            free += _drive_groups((arcs, starts), [i for i in here if i != root.hips], turns, world, Wt0, P_t0, lim,
                                  out)
            here = [i for i in here if i == root.hips]
        for i in here:
            arc = arcs[i]
            t = None
            if i == root.hips:  # (with _Turns, no driven bone lies above the hips: their parent stands at rest)
                B3, b = _parent_frame(Wt, None if parent[i] < 0 else parent[i], arc.L)
                t = _root_translation(B3, b, Ws[:, driven[i].source, :3, 3], root)
            if world is not None:
                Bt = world.parent_turn(i, Wt0)
            else:
                B3, _ = _parent_frame(Wt, None if parent[i] < 0 else parent[i], arc.L)
                Bt = rotation_part(B3)
            cols = np.asarray(starts[arc.joint.name])
            vals = _values(arc.joint, _mm3(np.swapaxes(Bt, 1, 2), turns[i]), t, P_t0[cols], lim[cols])
            out[:, cols] = vals
            free += _free_angles(arc.joint, cols, lim)
            if world is not None:
                world.drive(i, Bt, vals)
        changed = True
    if free:  # column by column, as each joint's own would be: unwrapped, a whole turn taken out
        out[:, free] = _unwrap_into_limits(out[:, free], lim[free, 0], lim[free, 1])
    return out


#: per compiled figure, driven joints, standing pose and hips: the parents, the depths and what :meth:`_Turns.of`
#: finds (:func:`_plan`)
_PLANS: Recent[tuple[list[int], list[list[int]], tuple[list[Array], dict[int, Array]] | None]] = Recent(16)


def _plan(target: Figure, driven: Mapping[int, _Bone], P_t0: Array, hips: int
          ) -> tuple[list[int], list[list[int]], _Turns | None]:
    """(each node's parent index (−1 for the root), :func:`_levels`, a fresh :class:`_Turns` or None): what
    :func:`_drive` sets up before its first depth, found once per input (the compiled figure, which holds the arcs'
    L and DOFs, the driven joints, the standing pose ``P_t0`` and the hips) instead of once per call."""
    c = target.compiled
    arcs = target.arcs()

    def make() -> tuple[list[int], list[list[int]], tuple[list[Array], dict[int, Array]] | None]:
        names = target.node_names
        parent = [-1 if a.parent is None else names.index(a.parent.name) for a in arcs]
        world = _Turns.of(target, parent, driven, P_t0, hips)
        return parent, _levels(target), None if world is None else (list(world.turn_L), dict(world.static))

    key = (id(c), tuple(driven), np.ascontiguousarray(P_t0, dtype=float).tobytes(), hips)
    parent, levels, found = _PLANS.fetch(key, (c,), make)
    return parent, levels, None if found is None else _Turns(parent, found[0], found[1], arcs)


def _drive_groups(figure: tuple[Sequence[Arc], Mapping[str, Sequence[int]]], here: Sequence[int],
                  turns: Mapping[int, Array], world: _Turns, Wt0: Array, P_t0: Array, lim: Array, out: Array
                  ) -> list[int]:
    """:func:`_drive`'s reading for the joints ``here`` (one depth, below the hips) whose parents' turns ``world``
    has: the joints of one DOF layout at once, their frames stacked (row by row the same arithmetic as one joint
    alone: :func:`_values` then :meth:`_Turns.drive`); writes ``out``, returns the columns of angles with no limit.
    ``figure``: the target's arcs and its joints' pose columns (``Figure.joint_dofs``)."""
    arcs, starts = figure
    F = out.shape[0]
    free: list[int] = []
    kernel = getattr(jit.native_kernels(), "drive_joint", None)
    if kernel is not None:  # a joint with no limit: its reading fused into one C pass (:func:`_drive_joint`)
        rest = []
        for i in here:
            got = _drive_joint(kernel, arcs[i].joint, starts[arcs[i].joint.name], turns[i], world, i, Wt0, lim, out)
            if got is None:
                rest.append(i)
            else:
                free += got
        here = rest
    groups: dict[tuple[object, ...], list[int]] = {}
    for i in here:
        key = tuple((d.kind, d.axis_letter, tuple(d.axis)) for d in arcs[i].joint.dofs)
        groups.setdefault(key, []).append(i)
    for members in groups.values():
        joint, n = arcs[members[0]].joint, len(members)
        k = joint.dof_count
        Bt = np.stack([np.broadcast_to(world.parent_turn(i, Wt0), (F, 3, 3)) for i in members])  # (n, F, 3, 3)
        Rt = np.stack([turns[i] for i in members])
        cols = np.concatenate([np.asarray(starts[arcs[i].joint.name]) for i in members])
        vals = read_local_dofs(joint, Bt.reshape(n * F, 3, 3), Rt.reshape(n * F, 3, 3),
                               np.repeat(P_t0[cols].reshape(n, k), F, axis=0))
        flat = vals.reshape(n, F, k).transpose(1, 0, 2).reshape(F, n * k)  # (F, n·k): the joints' columns
        kinds = np.tile([d.revolute for d in joint.dofs], n)
        rev = np.flatnonzero(kinds & np.isfinite(lim[cols]).any(axis=1))
        if rev.size:
            flat[:, rev] = _unwrap_into_limits(flat[:, rev], lim[cols[rev], 0], lim[cols[rev], 1])
        pri = np.flatnonzero(np.tile([d.kind == "prismatic" for d in joint.dofs], n))
        if pri.size:
            flat[:, pri] = np.clip(flat[:, pri], lim[cols[pri], 0], lim[cols[pri], 1])
        out[:, cols] = flat
        free += cols[kinds & ~np.isfinite(lim[cols]).any(axis=1)].tolist()  # (:func:`_free_angles`, every joint)
        vals = flat.reshape(F, n, k).transpose(1, 0, 2).reshape(n * F, k)
        R = _turned_by(joint, Bt.reshape(n * F, 3, 3), vals)
        for j, i in enumerate(members):
            world.world[i] = R[j * F:(j + 1) * F]
    return free


def _drive_joint(kernel: Any, joint: Joint, cols: Sequence[int], Rt: Array, world: _Turns, i: int, Wt0: Array,
                 lim: Array, out: Array) -> list[int] | None:
    """A_i = (R_p · R_L)ᵀ · R_t read into joint i's DOFs and its world turn (R_p · R_L) · Π R_a(θ) kept in ``world``:
    :func:`_drive_groups`' steps for one joint (:func:`read_local_dofs`, :func:`_turned_by`, no limit to unwrap into
    or clip to) in one pass of the C extension's ``drive_joint``, the same products and angles bit for bit. Returns
    the joint's angle columns (all free), or None where the pass does not apply: a limit on the joint's columns,
    angles :func:`read_local_dofs` does not read with ``euler_read``."""
    plan = euler_plan(joint)
    if plan is None or np.isfinite(lim[cols]).any() or out.dtype != np.float64 or not out.flags.c_contiguous \
            or len(cols) != joint.dof_count or cols[-1] - cols[0] != joint.dof_count - 1:
        return None
    codes, order = plan
    p = world.parent[i]
    Rp = None if p < 0 else world._of(p)
    if Rp is None:  # a parent frame that stands still: its turn (1, 3, 3) as _Turns.parent_turn gives it
        B, L = world.parent_turn(i, Wt0), _NO_L
    else:  # (a broadcast parent turn, one frame's: read once)
        B, L = (Rp[:1] if Rp.strides[0] == 0 else Rp), world.turn_L[i]
    F = out.shape[0]
    R = np.empty((F, 3, 3))
    kernel(np.ascontiguousarray(B, dtype=np.float64), np.ascontiguousarray(L, dtype=np.float64),
           np.ascontiguousarray(Rt, dtype=np.float64), out, R, F, B.shape[0], out.shape[1], int(cols[0]), codes,
           *order)
    world.world[i] = R
    return [int(cols[c]) for c in np.flatnonzero(codes >= 0).tolist()]


_NO_L = np.empty(0)


def _turned_by(joint: Joint, Bt: Array, vals: Array) -> Array:
    """R = Bt · Π R_a(θ) over the joint's revolute DOFs (Bt (n, 3, 3), θ the columns of ``vals`` (n, k)): the C
    extension's ``turned_by`` where every such axis is a coordinate axis, else :func:`_mm3` of :func:`_about`."""
    kernel = getattr(jit.native_kernels(), "turned_by", None)
    if kernel is not None and all(d.axis_letter is not None for d in joint.dofs if d.revolute):
        letters = np.array([_XYZ[d.axis_letter] if d.revolute and d.axis_letter else -1 for d in joint.dofs],
                           dtype=np.int64)
        out = np.empty(Bt.shape)
        kernel(np.ascontiguousarray(Bt), np.ascontiguousarray(vals), letters, out, Bt.shape[0], vals.shape[1])
        return out
    R = Bt
    for c, dof in enumerate(joint.dofs):
        if dof.revolute:
            R = _mm3(R, _about(dof.axis_letter, dof.axis, vals[:, c]))
    return R


_XYZ = {"x": 0, "y": 1, "z": 2}


#: how far MᵀM may stand from s² I (relative) for M to count as a turn times a uniform scale: a scale of 1 rounded to
#: float32 in a glTF file (1 ± 1.2e-7 per axis) moves the polar factor of a chain of them by its square, ~1e-14
SIMILAR = 1e-5


def _similar(M: Array) -> NDArray[np.bool_]:
    """Whether each M (n, 3, 3) is a turn times a uniform scale: MᵀM = s² I to :data:`SIMILAR` of s², det M > 0 (the
    polar factor of a product of such matrices is then the product of theirs, to the square of the departure)."""
    G = np.swapaxes(M, 1, 2) @ M
    s2 = np.trace(G, axis1=1, axis2=2) / 3.0
    off = np.abs(G - s2[:, None, None] * np.eye(3)).max(axis=(1, 2))
    return (s2 > 0.0) & (off <= SIMILAR * s2) & (np.linalg.det(M) > 0.0)


def _about(letter: str | None, axis: Array, theta: Array) -> Array:
    """R_a(θ) (F, 3, 3) for angles θ (F,): a coordinate axis's rows written directly, else Rodrigues."""
    if letter is None:
        return matrix_about_axis(axis, theta)
    i = "xyz".index(letter)
    j, k = (i + 1) % 3, (i + 2) % 3
    c, s = np.cos(theta), np.sin(theta)
    out = np.zeros((len(theta), 3, 3))
    out[:, i, i] = 1.0
    out[:, j, j] = c
    out[:, k, k] = c
    out[:, k, j] = s
    out[:, j, k] = -s
    return out


class _Turns:
    """World turns R_w (F or 1, 3, 3) of the target's nodes as the drive finds its poses: a driven joint's is its
    parent frame's turn times Π R_a(θ) over its revolute DOFs, an undriven node's its parent's times its static
    turn (rotation_part of L · A(rest)); nodes with no driven node above them stand still (None: their W from the
    rest pose). Valid where every such static matrix, and each driven joint's L · A(θ) with its turns at 0, is a
    turn times a uniform scale (:func:`_similar`), and no driven bone lies above the hips."""

    def __init__(self, parent: Sequence[int], turn_L: Sequence[Array], static: Mapping[int, Array],
                 arcs: Sequence[Arc]) -> None:
        self.parent, self.turn_L, self.static, self.arcs = parent, turn_L, static, arcs
        self.world: dict[int, Array | None] = {}

    @classmethod
    def of(cls, target: Figure, parent: Sequence[int], driven: Mapping[int, _Bone], P_t0: Array,
           hips: int) -> _Turns | None:
        """The tracker for ``target``, or None where its matrices are not all turns times uniform scales."""
        up = parent[hips]
        while up >= 0:
            if up in driven:
                return None
            up = parent[up]
        arcs, starts = target.arcs(), target.joint_dofs
        L3 = np.stack([arc.L[:3, :3] for arc in arcs])
        bare = P_t0.copy()  # the driven joints' turns at 0: M_i = L_i · A_i(θ) is W_parent⁻¹ W_i, from one FK
        for i in driven:
            cols = starts[arcs[i].joint.name]
            bare[cols] = np.where([d.revolute for d in arcs[i].joint.dofs], 0.0, P_t0[cols])
        W = world_batch(target.compiled, bare[None])[0]
        above = np.array([W[p] if p >= 0 else np.eye(4) for p in parent])
        M = np.linalg.solve(above, W)[:, :3, :3]
        if not (_similar(L3) & _similar(M)).all():
            return None
        turn_L, static = rotation_part(L3), rotation_part(M)
        return cls(parent, list(turn_L), {i: static[i] for i in range(len(arcs)) if i not in driven}, arcs)

    def _of(self, n: int) -> Array | None:
        if n not in self.world:
            p = self.parent[n]
            Rp = None if p < 0 else self._of(p)
            self.world[n] = None if Rp is None else _mm3(Rp, self.static[n][None])
        return self.world[n]

    def parent_turn(self, i: int, Wt0: Array) -> Array:
        """rotation_part(W_parent · L_i) (F or 1, 3, 3)."""
        p = self.parent[i]
        Rp = None if p < 0 else self._of(p)
        if Rp is None:
            B = self.arcs[i].L[:3, :3] if p < 0 else Wt0[p, :3, :3] @ self.arcs[i].L[:3, :3]
            return rotation_part(B[None])
        return _mm3(Rp, self.turn_L[i][None])

    def drive(self, i: int, Bt: Array, values: Array) -> None:
        """Node i's world turn from its parent frame's ``Bt`` and its DOF values (F, k)."""
        R = Bt
        for c, dof in enumerate(self.arcs[i].joint.dofs):
            if dof.revolute:
                R = _mm3(R, _about(dof.axis_letter, dof.axis, values[:, c]))
        self.world[i] = np.broadcast_to(R, (values.shape[0], 3, 3)) if R.shape[0] == 1 else R


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
    """R_t(f) = Δ(f) · R (F, 3, 3) for every driven bone, R = D(f) · C · R_t(rest) = R_s(f) · (R_s(rest)ᵀ · C ·
    R_t(rest)) with D = R_s(f) R_s(rest)ᵀ on rotation parts (a source whose world matrices carry a scale, an FBX
    armature in centimetres, would otherwise scale D): one polar decomposition of the source's turns, one product,
    one shortest turn Δ for every bone with a direction at once; then a hinge child's plane chosen by the twist
    about its bone (:func:`_hinge_twist`)."""
    order = list(driven)
    if not order:
        return {}
    src = [driven[i].source for i in order]
    Rs0 = rotation_part(Ws0[src])
    K = np.stack([Rs0[j].T @ (driven[i].C @ Rt0[i]) for j, i in enumerate(order)])
    d = np.stack([Rt0[i].T @ driven[i].d_target for i in order])  # (B, 3): used where the bone aims
    child = np.array([driven[i].child_source for i in order], dtype=np.int64)
    R = bone_turns_compiled(Ws, np.asarray(src, dtype=np.int64), child, K, d)
    if R is None:
        R = bone_turns_numpy(Ws, src, child, K, d)
    out = {i: R[j] for j, i in enumerate(order)}
    names = target.node_names
    for i in (i for i in order if driven[i].child_source >= 0):
        child_bone = driven.get(driven[i].child_target)
        if child_bone is not None and child_bone.child_source >= 0 \
                and target.parent_of(names[child_bone.target]) == names[i] \
                and _hinge_dof(target.arcs()[child_bone.target]) is not None:  # (other joints: R as is)
            want = Ws[:, driven[i].child_source, :3, 3] - Ws[:, driven[i].source, :3, 3]
            out[i] = _hinge_twist(target.arcs()[child_bone.target], out[i], want,
                                  Ws[:, child_bone.child_source, :3, 3] - Ws[:, child_bone.source, :3, 3])
    return out


def bone_turns_compiled(Ws: Array, src: NDArray[np.int64], child: NDArray[np.int64], K: Array, d: Array
                        ) -> Array | None:
    """:func:`bone_turns_numpy`'s R from the C extension's one pass (``retarget_turns``, compiled ahead of time: no
    start-up to repay), the same to 1e-12 (the C library's cbrt and trigonometry, not NumPy's SIMD ones, which may
    differ in the last bit), or None where it is not built or off, or met a polar factor that needs the SVD."""
    kernel = getattr(jit.native_kernels(), "retarget_turns", None)
    if kernel is None:
        return None
    F, N = Ws.shape[:2]
    R = np.empty((len(src), F, 3, 3))
    good = kernel(np.ascontiguousarray(Ws), src, child, np.ascontiguousarray(K), np.ascontiguousarray(d), R, F, N,
                  len(src))
    return R if good else None


def bone_turns_numpy(Ws: Array, src: Sequence[int], child: NDArray[np.int64], K: Array, d: Array) -> Array:
    """R (B, F, 3, 3) = Δ(f) · rotation_part(W_s(f)) · K for each bone (its source ``src``, its rest product ``K``),
    Δ the shortest turn taking R · d onto the source bone's direction (to its child ``child``, where ≥ 0)."""
    # bone-major (B, F, …): each bone's frames one contiguous block, read as they are by every product after this
    Rs = rotation_part(np.swapaxes(Ws, 0, 1)[src])  # (B, F, 3, 3)
    R = _mm3(Rs, K[:, None])
    aim = np.flatnonzero(child >= 0)
    if aim.size:
        da = d[aim]  # (A, 3)
        Ra = R[aim]
        now = Ra[..., 0] * da[:, None, None, 0] + Ra[..., 1] * da[:, None, None, 1] \
            + Ra[..., 2] * da[:, None, None, 2]
        pos = np.swapaxes(Ws[..., :3, 3], 0, 1)  # (N, F, 3), a view: the positions only are gathered
        w = pos[child[aim]] - pos[np.asarray(src)[aim]]  # (A, F, 3)
        R[aim] = _mm3(matrix_aligning(now, w), Ra)
    return R


def _root_translation(B3: Array, b: Array, p_s: Array, root: _Root) -> Array:
    """t = B₃⁻¹ (p − b), p = s · p_s less the slope's rise along up: the hips' position in their parent's space,
    its scale and turn included (B₃ (F or 1, 3, 3), b (F or 1, 3): the parent's world matrix times the arc's L)."""
    hip = root.scale * p_s
    hip = hip - np.outer(hip @ root.slope, np.eye(3)[root.k])
    if B3.shape[0] == 1:  # a parent at rest: one factorisation, every frame a right-hand side
        return np.asarray(np.linalg.solve(B3[0], np.broadcast_to(hip - b, hip.shape).T).T, dtype=float)
    return np.asarray(np.linalg.solve(B3, (hip - b)[..., None])[..., 0], dtype=float)


def _free_angles(joint: Joint, cols: Array, lim: Array) -> list[int]:
    """The pose columns of ``joint``'s revolute DOFs with no limit either way (``cols``: its columns)."""
    return [int(cols[c]) for c, d in enumerate(joint.dofs) if d.revolute and not np.isfinite(lim[cols[c]]).any()]


def _values(joint: Joint, Ra: Array, t: Array | None, base: Array, lim: Array) -> Array:
    """The joint's DOF values (F, k) for local turns Ra (F, 3, 3) and translation t: :func:`read_dofs`, angles with
    a limit unwrapped into it (angles with none are left to the caller: the same turn), slides clamped."""
    vals = read_dofs(joint, Ra, t, base)
    rev = [c for c, d in enumerate(joint.dofs) if d.revolute and np.isfinite(lim[c]).any()]
    if rev:
        vals[:, rev] = _unwrap_into_limits(vals[:, rev], lim[rev, 0], lim[rev, 1])
    pri = [c for c, d in enumerate(joint.dofs) if d.kind == "prismatic"]
    if pri:
        vals[:, pri] = np.clip(vals[:, pri], lim[pri, 0], lim[pri, 1])
    return vals


