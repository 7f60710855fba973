"""Retargeting: motion on one skeleton onto another, bone by bone through world bone directions.

For each mapped target bone j (its source bone j′) at frame f::

    R_t,j(f) = Δ_j(f) · D_j′(f) · C_j · R_t,j(rest)        D_j′(f) = R_s,j′(f) · R_s,j′(rest)ᵀ

``D`` is the world turn the source bone made from its rest pose. ``C_j`` aligns the two rest poses: the
turn taking the target bone's rest world direction (towards its mapped child) onto the source's, or,
where the bone has a mapped left and right child (hips, chest), the turn taking the target's frame
(direction, side vector) onto the source's. ``Δ_j(f)`` is the shortest turn taking D·C·d_t(rest) onto the
source bone's direction d_s(f) at frame f: identity unless source joints the target lacks lie between
j′ and its mapped child. So each target bone points where its source bone points, whatever the two
rest poses (T-pose, A-pose, arms down). The joint's articulation is then A_j = (R_parent · R_L)ᵀ R_t,j,
read into the joint's DOFs (Euler angles for a ball joint, the twist about the axis for a hinge).

Only rotations change below the hips, so no bone stretches. The hips move to
p_t(f) = s · G · p_s(f): G turns the source's world into the target's (Y up ↔ Z up) and
s = h_t / h_s is the ratio of the hip heights at rest (hips above the lowest point of the figure),
i.e. of the leg lengths. Unmapped target joints keep their rest values.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .errors import AnimkitError, ParseError, unknown_name
from .figure import Figure
from .graph import Arc
from .humanoid import match_figure, side_of
from .joints import Joint
from .transforms import (
    euler_intrinsic_from_matrix,
    matrix_about_axis,
    matrix_aligning,
    quaternion_from_matrix,
)

if TYPE_CHECKING:
    from .keyframes import Clip
    from .scene import Scene, UpAxis

__all__ = ["RetargetError", "BoneMap", "Retargeted", "bone_map", "read_bone_map", "retarget", "retarget_full",
           "retarget_poses", "hip_height", "read_dofs", "up_index"]

Array = NDArray[np.float64]


class RetargetError(AnimkitError):
    """A retarget that cannot be done: a bone that matters without a source, a joint kind it cannot drive."""


@dataclass(frozen=True)
class BoneMap:
    """Target node → source node, with what stayed unmapped on either side and how the map was made."""

    pairs: Mapping[str, str]
    unmapped_target: tuple[str, ...] = ()
    unmapped_source: tuple[str, ...] = ()
    scheme: str = "names"

    def report(self) -> str:
        """What mapped and what did not, one line each."""
        lines = [f"bone map ({self.scheme}): {len(self.pairs)} bones mapped"]
        lines += [f"  {t} <- {s}" for t, s in self.pairs.items()]
        if self.unmapped_target:
            lines.append("  target bones left at rest: " + ", ".join(self.unmapped_target))
        if self.unmapped_source:
            lines.append("  source bones not used: " + ", ".join(self.unmapped_source))
        return "\n".join(lines)


def read_bone_map(path: str | os.PathLike[str]) -> dict[str, str]:
    """A user map from TOML: ``[bones]`` with ``target_bone = "source_bone"`` lines."""
    import tomllib

    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ParseError(str(p), f"cannot read bone map ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ParseError(str(p), f"bone map is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ParseError(str(p), f"not valid TOML: {exc}") from None
    bones = data.get("bones")
    if not isinstance(bones, dict):
        raise ParseError(str(p), "expected a [bones] table of target_bone = \"source_bone\"", key="bones")
    out: dict[str, str] = {}
    for k, v in bones.items():
        if not isinstance(v, str):
            raise ParseError(str(p), f"expected a source bone name (a string), got {v!r}", key=f"bones.{k}")
        out[str(k)] = v
    return out


def _moving(fig: Figure) -> list[str]:
    """Nodes whose arc has DOFs (joints that move), in traversal order."""
    return [a.child.name for a in fig.arcs() if a.joint.dof_count]


#: Canonical bones a target cannot do without when it has them: they carry everything below them.
MATTERS: tuple[str, ...] = ("hips", "spine", "upper_arm_l", "upper_arm_r", "upper_leg_l", "upper_leg_r")


def bone_map(source: Figure, target: Figure, user: Mapping[str, str] | None = None) -> BoneMap:
    """Target → source bones: canonical humanoid bones (:mod:`animkit.humanoid`), then equal names, then the user's.

    RetargetError when the target has a bone that matters (hips, spine, a limb root: :data:`MATTERS`) and the
    source has none for it, or a name in the user's map is not a node.
    """
    src_names, tgt_names = source.node_names, target.node_names
    hs, ht = match_figure(source), match_figure(target)
    pairs = {ht.bones[b]: n for b, n in hs.bones.items() if b in ht.bones}
    scheme = "humanoid" if pairs else "names"
    used = set(pairs.values())
    moving_t = _moving(target)
    for n in moving_t:  # equal names fill in the rest (fingers, extra spine joints, a copy of the source)
        if n not in pairs and n in src_names and n not in used:
            pairs[n] = n
            used.add(n)
    if user:
        for t, s in user.items():
            if t not in tgt_names:
                raise RetargetError("bone map: " + unknown_name("target bone", t, tgt_names))
            if s not in src_names:
                raise RetargetError(f"bone map: target bone {t!r}: " + unknown_name("source bone", s, src_names))
        pairs = {**{t: s for t, s in pairs.items() if s not in set(user.values())}, **user}
        scheme += " + user map"
    for b in MATTERS:
        node = ht.bones.get(b)
        if node is not None and node not in pairs:
            raise RetargetError(f"source {source.name!r} has no {b} for target bone {node!r} (found: "
                                f"{', '.join(hs.bones) or 'no humanoid bones'}); map it: {node} = \"<source bone>\"")
    if not pairs:
        raise RetargetError(f"no bone of {target.name!r} matches a bone of {source.name!r}; give a map "
                            f"(target bone = source bone), e.g. for {moving_t[:3]}")
    ordered = {n: pairs[n] for n in tgt_names if n in pairs}
    used = set(ordered.values())
    return BoneMap(ordered, tuple(n for n in moving_t if n not in ordered),
                   tuple(n for n in _moving(source) if n not in used), scheme)


def _descendants(fig: Figure, name: str) -> list[str]:
    out: list[str] = []
    todo = [a.child for a in fig.node(name).arcs()]
    while todo:
        node = todo.pop()
        out.append(node.name)
        todo.extend(a.child for a in node.arcs())
    return out


def up_index(up: UpAxis) -> int:
    """The coordinate index of the up axis: 1 for "y", 2 for "z"."""
    return 1 if up == "y" else 2


def hip_height(fig: Figure, hips: str, up: UpAxis = "y") -> float:
    """h = height of ``hips`` above the lowest node of the figure at rest (the leg length, for a humanoid)."""
    W = fig.world_batch(fig.rest_pose()[None])[0]
    k = up_index(up)
    return float(W[fig.node_names.index(hips), k, 3] - W[:, k, 3].min())


def _world_from(source_up: UpAxis, target_up: UpAxis) -> Array:
    """G: the source's world axes in the target's (Y up → Z up turns +y onto +z and +z onto −y)."""
    if source_up == target_up:
        return np.eye(3)
    if source_up == "y":
        return np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])
    return np.array([[1.0, 0, 0], [0, 0, 1.0], [0, -1.0, 0]])


@dataclass(frozen=True)
class _Bone:
    """One mapped target bone and what drives it (all in node-index terms)."""

    target: int
    source: int
    C: Array  # (3, 3) rest alignment
    d_target: Array  # (3,) the target's rest direction (zero: no per-frame correction)
    child_source: int  # source node whose position gives d_s(f), −1 for none
    child_target: int = -1  # the target's primary mapped child, −1 for none


@dataclass(frozen=True, eq=False)
class Retargeted:
    """A retarget: poses (F, D) on the target at ``times``, the clip holding them, the map and the scale s."""

    poses: Array
    times: Array
    clip: Clip
    bone_map: BoneMap
    scale: float
    hips: tuple[str, str]
    notes: tuple[str, ...] = field(default=())


def _primary_child(fig: Figure, node: str, mapped: Mapping[str, str]
                   ) -> tuple[str | None, tuple[str, str] | None]:
    """(primary mapped child, (left child, right child) or None) among the nearest mapped descendants."""
    near: list[str] = []
    todo = [a.child for a in fig.node(node).arcs()]
    while todo:
        n = todo.pop()
        if n.name in mapped:
            near.append(n.name)
        else:
            todo.extend(a.child for a in n.arcs())
    if not near:
        return None, None
    sides = {n: side_of(n) for n in near}
    left = [n for n in near if sides[n] == "l"]
    right = [n for n in near if sides[n] == "r"]
    pair = (left[0], right[0]) if left and right else None
    centre = [n for n in near if sides[n] is None]
    if centre:
        return centre[0], pair
    if len(near) == 1:
        return near[0], None
    return None, pair


def _frame(a: Array, b: Array) -> Array | None:
    """Columns (â, b̂⊥, â × b̂⊥): a right-handed frame from a direction and a second vector; None if degenerate."""
    na = np.linalg.norm(a)
    if na < 1e-12:
        return None
    a = a / na
    b = b - (b @ a) * a
    nb = np.linalg.norm(b)
    if nb < 1e-9:
        return None
    b = b / nb
    return np.stack([a, b, np.cross(a, b)], axis=1)


def _bones(source: Figure, target: Figure, pairs: Mapping[str, str], Ws0: Array, Wt0: Array) -> list[_Bone]:
    s_index = {n: i for i, n in enumerate(source.node_names)}
    t_index = {n: i for i, n in enumerate(target.node_names)}
    tiny_s = 1e-9 * source.size()
    tiny_t = 1e-9 * target.size()
    bones = []
    for t_name, s_name in pairs.items():
        ti, si = t_index[t_name], s_index[s_name]
        child, pair = _primary_child(target, t_name, pairs)
        pt, ps = Wt0[ti, :3, 3], Ws0[si, :3, 3]
        d_t = d_s = np.zeros(3)
        child_s = -1
        if child is not None:
            d_t = Wt0[t_index[child], :3, 3] - pt
            d_s = Ws0[s_index[pairs[child]], :3, 3] - ps
            child_s = s_index[pairs[child]]
        else:
            kids_t = list(target.node(t_name).arcs())
            kids_s = list(source.node(s_name).arcs())
            if pair is None and len(kids_t) == 1 and len(kids_s) == 1:  # a leaf bone: its end
                d_t = Wt0[t_index[kids_t[0].child.name], :3, 3] - pt
                d_s = Ws0[s_index[kids_s[0].child.name], :3, 3] - ps
                child_s = s_index[kids_s[0].child.name]
        if np.linalg.norm(d_t) < tiny_t or np.linalg.norm(d_s) < tiny_s:
            d_t = d_s = np.zeros(3)
            child_s = -1
        C = np.eye(3)
        if pair is not None:
            side_t = Wt0[t_index[pair[0]], :3, 3] - Wt0[t_index[pair[1]], :3, 3]
            side_s = Ws0[s_index[pairs[pair[0]]], :3, 3] - Ws0[s_index[pairs[pair[1]]], :3, 3]
            if child_s >= 0:
                Ft, Fs = _frame(d_t, side_t), _frame(d_s, side_s)
                if Ft is not None and Fs is not None:
                    C = Fs @ Ft.T
                else:
                    C = matrix_aligning(d_t, d_s)
            else:
                C = matrix_aligning(side_t, side_s)
        elif child_s >= 0:
            C = matrix_aligning(d_t, d_s)
        bones.append(_Bone(ti, si, C, d_t, child_s, t_index[child] if child is not None and child_s >= 0 else -1))
    return bones


def read_dofs(joint: Joint, Ra: Array, t: Array | None, base: Array) -> Array:
    """DOF values (F, k) of ``joint`` whose rotation best gives Ra (F, 3, 3) and whose translation gives t (F, 3).

    Three revolute DOFs about distinct coordinate axes: intrinsic Euler angles in their order. One: the twist
    about its axis, 2·atan2(q⃗ · a, w). Two about coordinate axes a, b: the first two angles of the intrinsic
    Euler order a, b, c. Prismatic DOFs (before the rotations) take t along their axis, or keep ``base``
    (k,) or (F, k); scale DOFs (glTF's, after the rotations) keep ``base``.
    """
    F = Ra.shape[0]
    out = np.broadcast_to(np.asarray(base, dtype=float), (F, joint.dof_count)).copy()
    rev = [i for i, d in enumerate(joint.dofs) if d.revolute]
    pri = [i for i, d in enumerate(joint.dofs) if d.kind == "prismatic"]
    if pri and rev and max(pri) > min(rev):
        raise RetargetError(f"joint {joint.name!r}: translations after rotations; retargeting drives a joint "
                            "whose DOFs translate first, then turn")
    if t is not None:
        for i in pri:
            out[:, i] = t @ joint.dofs[i].axis
    if not rev:
        return out
    letters = [joint.dofs[i].axis_letter for i in rev]
    if len(rev) == 1:
        q = quaternion_from_matrix(Ra)
        a = joint.dofs[rev[0]].axis
        ang = 2.0 * np.arctan2(q[:, 1:] @ a, q[:, 0])
        out[:, rev[0]] = (ang + np.pi) % (2 * np.pi) - np.pi
        return out
    if all(letters) and len(set(letters)) == len(letters) and len(rev) in (2, 3):
        order = "".join(letters)  # type: ignore[arg-type]
        if len(order) == 2:
            order += next(c for c in "xyz" if c not in order)
        eul = euler_intrinsic_from_matrix(Ra, order)
        out[:, rev] = eul[:, :len(rev)]
        return out
    raise RetargetError(f"joint {joint.name!r} ({joint.kind}): cannot read a rotation into its DOFs "
                        f"{[d.name for d in joint.dofs]}; retargeting drives 1, 2 or 3 rotations about distinct "
                        "coordinate axes")


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
    """Angles made continuous over frames (np.unwrap), shifted by whole turns into the limits, then clamped."""
    v = np.unwrap(values, axis=0)
    two_pi = 2 * np.pi
    finite = np.isfinite(lower) & np.isfinite(upper)
    mid = np.where(finite, 0.5 * (np.where(finite, lower, 0.0) + np.where(finite, upper, 0.0)), 0.0)
    shift = np.round((np.mean(v, axis=0) - mid) / two_pi) * two_pi
    v = v - shift
    return np.clip(v, lower, upper)


def retarget_poses(source: Figure, poses: Array, target: Figure, bones: BoneMap, *,
                   source_up: UpAxis = "y", target_up: UpAxis = "y") -> tuple[Array, float, tuple[str, str]]:
    """Target poses (F, D_t) for source poses (F, D_s); returns (poses, s, (target hips, source hips)).

    See the module's docstring for the equations. Vectorised over frames: one pass over the target's bones.
    """
    P = source.check_pose(poses)
    P = np.atleast_2d(P)
    F = P.shape[0]
    G = _world_from(source_up, target_up)
    Gh = np.eye(4)
    Gh[:3, :3] = G
    Ws = Gh @ source.world_batch(P)
    Ws0 = Gh @ source.world_batch(source.rest_pose()[None])[0]
    Wt0 = target.world_batch(target.rest_pose()[None])[0]
    pairs = bones.pairs
    s_depth = {a.child.name: len(source.path_to(a.child.name)) for a in source.arcs()}
    hips_t = min(pairs, key=lambda t: s_depth[pairs[t]])
    hips_s = pairs[hips_t]
    h_s = hip_height(source, hips_s, source_up)
    h_t = hip_height(target, hips_t, target_up)
    if h_s <= 1e-12 * source.size() or h_t <= 1e-12 * target.size():
        raise RetargetError(f"hips {hips_s!r} / {hips_t!r}: no height above the lowest joint at rest "
                            "(cannot scale the root translation by hip height)")
    scale = h_t / h_s
    driven = {b.target: b for b in _bones(source, target, pairs, Ws0, Wt0)}
    t_names = target.node_names
    parent = [-1 if (up := target.parent_of(n)) is None else t_names.index(up) for n in t_names]
    starts = target.joint_dofs
    lim = target.dof_limits()
    out = np.repeat(target.rest_pose()[None], F, axis=0)
    Wt = np.empty((F, len(t_names), 4, 4))
    Rt0 = Wt0[:, :3, :3]
    hips_i = t_names.index(hips_t)
    for i, arc in enumerate(target.arcs()):
        joint = arc.joint
        B = arc.L[None] if parent[i] < 0 else Wt[:, parent[i]] @ arc.L
        idx = starts[joint.name]
        bone = driven.get(i)
        if bone is not None and joint.dof_count:
            D = Ws[:, bone.source, :3, :3] @ Ws0[bone.source, :3, :3].T
            R = D @ (bone.C @ Rt0[i])
            if bone.child_source >= 0:
                now = np.einsum("fij,j->fi", R, Rt0[i].T @ bone.d_target)
                want = Ws[:, bone.child_source, :3, 3] - Ws[:, bone.source, :3, 3]
                R = matrix_aligning(now, want) @ R
                child = driven.get(bone.child_target)
                if child is not None and child.child_source >= 0 and parent[child.target] == i:
                    R = _hinge_twist(target.arcs()[child.target], R, want,
                                     Ws[:, child.child_source, :3, 3] - Ws[:, child.source, :3, 3])
            BR = np.broadcast_to(B[:, :3, :3], (F, 3, 3))
            Ra = np.swapaxes(BR, 1, 2) @ R
            t = None
            if i == hips_i:
                hip = scale * Ws[:, bone.source, :3, 3]
                t = np.einsum("fji,fj->fi", BR, hip - B[:, :3, 3])
            vals = read_dofs(joint, Ra, t, target.rest_pose()[idx])
            rev = [k for k, d in enumerate(joint.dofs) if d.revolute]
            cols = np.asarray(idx)
            if rev:
                vals[:, rev] = _unwrap_into_limits(vals[:, rev], lim[cols[rev], 0], lim[cols[rev], 1])
            pri = [k for k, d in enumerate(joint.dofs) if d.kind == "prismatic"]
            if pri:
                vals[:, pri] = np.clip(vals[:, pri], lim[cols[pri], 0], lim[cols[pri], 1])
            out[:, cols] = vals
            Wt[:, i] = B @ joint.matrix(vals)
        else:
            Wt[:, i] = B @ joint.matrix(out[0, idx])
    return out, scale, (hips_t, hips_s)


def retarget(source: Scene | Clip, target: Figure | Scene, mapping: Mapping[str, str] | BoneMap | None = None, *,
             name: str | None = None) -> Clip:
    """The source's clip on ``target``: a Clip with one frame per source frame, at the source's frame times.

    ``source`` is a Scene (its first clip) or a Clip whose layout is its Figure; ``target`` a Figure or a
    Scene (then its up axis counts too). ``mapping`` (target bone → source bone) overrides the automatic map.
    See :func:`retarget_full` for the map, the scale and the poses as well.
    """
    return retarget_full(source, target, mapping, name=name).clip


def retarget_full(source: Scene | Clip, target: Figure | Scene, mapping: Mapping[str, str] | BoneMap | None = None,
                  *, name: str | None = None) -> Retargeted:
    """:func:`retarget`, returning the poses, the bone map and the scale with the clip."""
    from .keyframes import Clip
    from .scene import Scene

    if isinstance(source, Scene):
        clip = source.clip()
        s_fig, s_up = source.figure, source.up
    else:
        clip = source
        if not isinstance(clip.layout, Figure):
            raise RetargetError(f"clip {clip.name!r}: its layout is not a Figure; pass the Scene it came from")
        s_fig, s_up = clip.layout, "y"
    t_fig, t_up = (target.figure, target.up) if isinstance(target, Scene) else (target, "y")
    bm = mapping if isinstance(mapping, BoneMap) else bone_map(s_fig, t_fig, mapping)
    times = clip.frame_times()
    poses, scale, hips = retarget_poses(s_fig, clip.sample(times), t_fig, bm, source_up=s_up, target_up=t_up)
    out = Clip.from_poses(t_fig, times, poses, name=name or clip.name, fps=clip.fps, loop=clip.loop)
    return Retargeted(poses, times, out, bm, scale, hips)
