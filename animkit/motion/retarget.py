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

Only rotations change below the hips, so no bone stretches. The hips move to p_t(f) = s · G · p_s(f) + δ·up,
written in the hips' parent space (t = B₃⁻¹(p − b), B the parent's world matrix times the arc's L: a Mixamo
armature's 0.01 scale and its turn about x included). G turns the source's world into the target's (Y up ↔ Z up);
s = h_t / h_s, h the height of the hips above the lowest foot point (foot joints and the nodes below them) when
standing, measured the same way on both sides (:func:`hip_height`); δ puts the feet on the ground: for a target
with a surface (skinned meshes or drawn geometry, :func:`lowest_surface`) the source's floor plane
(:func:`ground_plane`) is taken out and the surface's lowest point stands on 0 (its median over the frames a
source foot is down, or its 5th percentile 1.5 % of the hip height under it); a bare skeleton's lowest foot joint
stands where the source's does, scaled.

What the target is (:func:`retarget_full`): it stands in its bind pose, read from its skins' inverse bind matrices
(:func:`bind_world`, :func:`bind_pose`), not in whatever node pose its file left; a mapped bone its file never
turns gets rotation DOFs and the hips translation DOFs (:func:`drivable`; ``Retargeted.figure``), and ``notes``
say so, and say what cannot follow fully (a hinge, a bone with no room for a rotation). A skinned character's feet
stand as in its bind pose whenever the source's are planted (its ankle → toe line, which sits anywhere in the
mesh, need not point where the source's does). Unmapped target joints keep their bind (or rest) values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from animkit.model.figure import Figure
from animkit.model.humanoid import side_of
from animkit.model.transforms import matrix_aligning
from animkit.motion.retarget_drive import _Bone, _drive, _Root
from animkit.motion.retarget_ground import (
    DEEPEST,
    FLAT,
    SINK,
    _descendants,
    _ground_height_of,
    _ground_plane_of,
    _lowest_feet,
    _source_feet_down,
    _stance,
    feet_of,
    ground_height,
    ground_plane,
    hip_height,
    lowest_surface,
    up_index,
)
from animkit.motion.retarget_map import BoneMap, RetargetError, bone_map, read_bone_map
from animkit.motion.retarget_rest import (
    _joint,
    bind_pose,
    bind_rest,
    bind_world,
    drivable,
    read_dofs,
    rotation_part,
    standing_target,
    with_rest,
)

if TYPE_CHECKING:
    from animkit.keyframes import Clip
    from animkit.scene import Scene, UpAxis

__all__ = ["RetargetError", "BoneMap", "Retargeted", "bone_map", "read_bone_map", "retarget", "retarget_full",
           "retarget_poses", "hip_height", "read_dofs", "up_index", "feet_of", "rotation_part", "bind_world",
           "bind_pose", "drivable", "with_rest", "ground_height", "ground_plane", "lowest_surface"]

Array = NDArray[np.float64]


def _world_from(source_up: UpAxis, target_up: UpAxis) -> Array:
    """G: the source's world axes in the target's (Y up → Z up turns +y onto +z and +z onto −y)."""
    if source_up == target_up:
        return np.eye(3)
    if source_up == "y":
        return np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])
    return np.array([[1.0, 0, 0], [0, 0, 1.0], [0, -1.0, 0]])


@dataclass(frozen=True, eq=False)
class Retargeted:
    """A retarget: poses (F, D) on ``figure`` (the target, with DOFs added where it needed them) at ``times``, the
    clip holding them, the map, the scale s, and notes on what could not be driven or was changed."""

    poses: Array
    times: Array
    clip: Clip
    bone_map: BoneMap
    scale: float
    hips: tuple[str, str]
    figure: Figure
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


#: the percentile of a planted foot's elevation (ankle → toe) taken as standing flat: a foot on its toes (a hop, a
#: run) points further down, so the flattest quarter of its planted frames, not their median, is how it stands
FLAT_FOOT = 75.0


def _planted_turn(source: Figure, s_name: str, Ws: Array, Ws0: Array, k: int, hip: float) -> Array:
    """C for a foot bone: the turn about the foot's side axis by e_rest − e_planted, the source bone's elevation
    (ankle → its child) at rest less its median elevation over the frames its foot is down (its lowest point within
    5 % of ``hip`` of its 2nd percentile). With R_t(f) = D(f)·C·R_t(rest) the target's foot then stands as it does
    at rest whenever the source's foot is planted, however the source's foot was pitched at rest."""
    names = source.node_names
    kids = [a.child.name for a in source.node(s_name).arcs()]
    if not kids:
        return np.eye(3)
    i, c = names.index(s_name), names.index(kids[0])
    below = [names.index(n) for n in (s_name, *_descendants(source, s_name))]
    low = Ws[:, below, k, 3].min(axis=1)
    down = low <= np.percentile(low, 2.0) + 0.05 * hip
    d = Ws[down, c, :3, 3] - Ws[down, i, :3, 3]
    d0 = Ws0[c, :3, 3] - Ws0[i, :3, 3]
    n0 = np.linalg.norm(d0)
    flat = d0.copy()
    flat[k] = 0.0
    if n0 < 1e-12 or np.linalg.norm(flat) < 1e-9 * n0 or not down.any():
        return np.eye(3)
    e_p = float(np.percentile(np.arcsin(np.clip(d[:, k] / np.linalg.norm(d, axis=1), -1.0, 1.0)), FLAT_FOOT))
    as_planted = np.cos(e_p) * flat / np.linalg.norm(flat) + np.sin(e_p) * np.eye(3)[k]
    return matrix_aligning(as_planted, d0 / n0)


def _bones(source: Figure, target: Figure, pairs: Mapping[str, str], Ws0: Array, Wt0: Array, Ws: Array, k: int,
           hip: float, stand: bool, feet_t: Sequence[str]) -> list[_Bone]:
    s_index = {n: i for i, n in enumerate(source.node_names)}
    t_index = {n: i for i, n in enumerate(target.node_names)}
    tiny_s = 1e-9 * source.size()
    tiny_t = 1e-9 * target.size()
    rows: list[tuple[int, int, Array | int, Array, int, int]] = []  # C, or its row in the shortest turns
    aims: list[tuple[Array, Array]] = []  # (from, to) of the shortest turns, computed at once
    feet = set(feet_t) if stand else set()
    for t_name, s_name in pairs.items():
        ti, si = t_index[t_name], s_index[s_name]
        if t_name in feet:  # feet stand flat when the source's are planted (where an ankle sits differs by rig)
            rows.append((ti, si, _planted_turn(source, s_name, Ws, Ws0, k, hip), np.zeros(3), -1, -1))
            continue
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
        C: Array | int = np.eye(3)
        if pair is not None:
            side_t = Wt0[t_index[pair[0]], :3, 3] - Wt0[t_index[pair[1]], :3, 3]
            side_s = Ws0[s_index[pairs[pair[0]]], :3, 3] - Ws0[s_index[pairs[pair[1]]], :3, 3]
            if child_s >= 0:
                Ft, Fs = _frame(d_t, side_t), _frame(d_s, side_s)
                if Ft is not None and Fs is not None:
                    C = Fs @ Ft.T
                else:
                    C, aims = len(aims), aims + [(d_t, d_s)]
            else:
                C, aims = len(aims), aims + [(side_t, side_s)]
        elif child_s >= 0:
            C, aims = len(aims), aims + [(d_t, d_s)]
        rows.append((ti, si, C, d_t, child_s, t_index[child] if child is not None and child_s >= 0 else -1))
    turn = matrix_aligning(np.array([u for u, _ in aims]), np.array([v for _, v in aims])) if aims else None
    return [_Bone(ti, si, turn[C] if isinstance(C, int) and turn is not None else np.asarray(C), d, cs, ct)
            for ti, si, C, d, cs, ct in rows]


def retarget_poses(source: Figure, poses: Array, target: Figure, bones: BoneMap, *,
                   source_up: UpAxis = "y", target_up: UpAxis = "y", target_rest: Array | None = None,
                   source_rest: Array | None = None, surface: Callable[[Array], Array] | None = None,
                   stand_feet: bool = False) -> tuple[Array, float, tuple[str, str]]:
    """Target poses (F, D_t) for source poses (F, D_s); returns (poses, s, (target hips, source hips)).

    ``target_rest`` / ``source_rest``: the target's / source's standing pose (its bind pose; default its rest
    pose), which unmapped joints keep and the rest alignment is measured in. The hips go to s·G·p_s(f), then the
    whole figure moves along up by one δ: with a ``surface`` (world matrices → the lowest surface point per frame,
    :func:`lowest_surface`) the target stands on flat ground at 0 (the source's ground plane, :func:`ground_plane`,
    taken out of the hips' height; over the frames a source foot is down, δ puts the median of the surface's lowest
    point on 0, or its 5th percentile :data:`SINK` hip heights under it (its lowest :data:`DEEPEST`) where the
    spread is wider); without one its
    lowest foot joint stands, on those frames, at s times the source's (:func:`ground_height`). ``stand_feet`` (a
    skinned character, whose ankle and toe joints sit anywhere inside the foot): its feet stand as in
    ``target_rest`` whenever the source's are planted (:func:`_planted_turn`) instead of pointing their ankle →
    toe line where the source's
    does. See the module's docstring.
    """
    P = np.atleast_2d(source.check_pose(poses))
    G = _world_from(source_up, target_up)
    Gh = np.eye(4)
    Gh[:3, :3] = G
    Ws_own = source.world_batch(P)  # in the source's own world (its ground), then in the target's
    Ws = Ws_own if source_up == target_up else Gh @ Ws_own  # (G is I when the up axes agree)
    P_s0 = source.rest_pose() if source_rest is None else np.asarray(source_rest, dtype=float)
    Ws0 = Gh @ source.world_batch(P_s0[None])[0]
    P_t0 = target.rest_pose() if target_rest is None else np.asarray(target_rest, dtype=float)
    Wt0 = target.world_batch(P_t0[None])[0]
    pairs = bones.pairs
    hips_t = _hips_of(source, pairs)
    hips_s = pairs[hips_t]
    feet_s, feet_t = feet_of(source), feet_of(target)
    h_s = hip_height(source, hips_s, source_up, P_s0, feet_s)
    h_t = hip_height(target, hips_t, target_up, P_t0, feet_t)
    if h_s <= 1e-12 * source.size() or h_t <= 1e-12 * target.size():
        raise RetargetError(f"hips {hips_s!r} / {hips_t!r}: no height above the lowest point of the feet at rest "
                            "(cannot scale the root translation by hip height)")
    scale = h_t / h_s
    k = up_index(target_up)
    slope = np.zeros(3)
    if surface is not None:  # the source's ground plane taken out: the target stands on flat ground
        slope = G @ _ground_plane_of(source, Ws_own, up_index(source_up), h_s, feet_s)[1:]
        if np.linalg.norm(slope) < FLAT:
            slope = np.zeros(3)
    driven = _bones(source, target, pairs, Ws0, Wt0, Ws, k, h_s, stand_feet, feet_t)
    root = _Root(target.node_names.index(hips_t), scale, slope, k)
    out = _drive(target, driven, Ws, Ws0, Wt0, P_t0, root)
    # the whole figure moved along up by δ so that its lowest foot joint stands where it should when a foot is down
    if surface is None:
        Wt = target.world_batch(out)
        low = _lowest_feet(target, Wt, k, feet_t)[0]
        delta = scale * _ground_height_of(source, Ws_own, up_index(source_up), h_s, feet_s) - _stance(low, h_t)
    else:  # the FK of the frames it reads only (frame 0, then those measured): each frame's is its own, bit for bit
        down = np.flatnonzero(_source_feet_down(source, Ws, k, h_s))
        down = down[np.linspace(0, len(down) - 1, min(len(down), 96)).round().astype(int)]
        Wt = target.world_batch(out[np.concatenate([[0], down])])
        lows = surface(Wt[1:])
        delta = -min(float(np.median(lows)), float(np.percentile(lows, 5.0)) + SINK * h_t,
                     float(lows.min()) + DEEPEST * h_t)
    _lift(target, out, Wt[0], root.hips, delta * np.eye(3)[k])
    return out, scale, (hips_t, hips_s)


def _lift(target: Figure, out: Array, W0: Array, hips: int, lift: Array) -> None:
    """The hips' prismatic DOFs in ``out`` moved so that the whole figure moves by ``lift`` (3,) in the world
    (W0: frame 0's world matrices, for the hips' parent space), clamped to their limits."""
    arc = target.arcs()[hips]
    B = arc.L if arc.parent is None else W0[target.node_names.index(arc.parent.name)] @ arc.L
    dt = np.linalg.solve(B[:3, :3], lift)
    lim = target.dof_limits()
    for c, d in zip(target.joint_dofs[arc.joint.name], arc.joint.dofs, strict=True):
        if d.kind == "prismatic":
            out[:, c] = np.clip(out[:, c] + dt @ d.axis, lim[c, 0], lim[c, 1])


def retarget(source: Scene | Clip, target: Figure | Scene, mapping: Mapping[str, str] | BoneMap | None = None, *,
             name: str | None = None) -> Clip:
    """The source's clip on ``target``: a Clip with one frame per source frame, at the source's frame times.

    ``source`` is a Scene (its first clip) or a Clip whose layout is its Figure; ``target`` a Figure or a
    Scene; the up axes are the figures' own (``Figure.up``, set by their readers). ``mapping`` (target bone →
    source bone) overrides the automatic map.
    See :func:`retarget_full` for the map, the scale and the poses as well.
    """
    return retarget_full(source, target, mapping, name=name).clip


def retarget_full(source: Scene | Clip, target: Figure | Scene, mapping: Mapping[str, str] | BoneMap | None = None,
                  *, name: str | None = None) -> Retargeted:
    """:func:`retarget`, returning the poses, the bone map, the scale and the figure they drive with the clip.

    The target stands in its bind pose (:func:`bind_world`, from its skins' inverse bind matrices) where it has
    skins. A mapped bone the target file never turns gets rotation DOFs, the hips translation DOFs
    (:func:`drivable`; the result's ``figure``); what cannot be driven fully is said in ``notes``.
    """
    from animkit.keyframes import Clip
    from animkit.scene import Scene

    s_rest = None
    if isinstance(source, Scene):
        clip = source.clip()
        s_fig, s_up = source.figure, source.up
        s_rest = bind_rest(s_fig, source.meshes)  # the source stands in its bind pose too
    else:
        clip = source
        if not isinstance(clip.layout, Figure):
            raise RetargetError(f"clip {clip.name!r}: its layout is not a Figure; pass the Scene it came from")
        s_fig, s_up = clip.layout, clip.layout.up  # the figure knows its up (its reader set it)
    t_fig, t_up = (target.figure, target.up) if isinstance(target, Scene) else (target, target.up)
    meshes = target.meshes if isinstance(target, Scene) else ()
    bm = mapping if isinstance(mapping, BoneMap) else bone_map(s_fig, t_fig, mapping)
    hips_t = _hips_of(s_fig, bm.pairs)
    fig, failed, turned = standing_target(t_fig, meshes, list(bm.pairs), hips_t)
    notes: list[str] = []
    if turned:
        worst = max(turned.values())
        notes.append(f"rest pose: the skin's bind pose ({len(turned)} joints stand otherwise in the file's nodes, "
                     f"by up to {np.degrees(worst):.1f} deg)")
    rotate = [n for n in t_fig.node_names if n in bm.pairs or n in turned]
    added_r = [n for n in rotate if n not in failed and not any(d.revolute for d in _joint(t_fig, n).dofs)]
    if added_r:
        notes.append(f"rotation DOFs added to {len(added_r)} bones the target never turns: {', '.join(added_r)}")
    if not any(d.kind == "prismatic" for d in _joint(t_fig, hips_t).dofs):
        notes.append(f"translation DOFs added to the hips {hips_t!r} (the target never moves them)")
    for n in failed:
        notes.append(f"NOT DRIVEN: {n!r} (its static scale and its scale DOFs leave no place for a rotation); "
                     "it keeps its rest")
    for n in bm.pairs:
        if n in failed:
            continue
        joint = _joint(fig, n)
        k = sum(d.revolute for d in joint.dofs)
        if 0 < k < 3:
            notes.append(f"{n!r}: a {joint.kind} joint with {k} rotation DOF(s) follows its source bone only as far "
                         "as those turn")
    rest = fig.rest_pose()
    times = clip.frame_times()
    poses, scale, hips = retarget_poses(s_fig, clip.sample(times), fig, bm, source_up=s_up, target_up=t_up,
                                        target_rest=rest, source_rest=s_rest, surface=lowest_surface(fig, meshes, t_up),
                                        stand_feet=any(m.skinned for m in meshes))
    out = Clip.from_poses(fig, times, poses, name=name or clip.name, fps=clip.fps, loop=clip.loop)
    return Retargeted(poses, times, out, bm, scale, hips, fig, tuple(notes))


def _hips_of(source: Figure, pairs: Mapping[str, str]) -> str:
    """The target bone whose source bone lies nearest the source's root: the hips the root translation drives."""
    s_depth: dict[str, int] = {}  # arcs from the root arc down to each node's (len(Figure.path_to)), in one pass
    for a in source.arcs():  # (parents before children)
        s_depth[a.child.name] = 1 if a.parent is None else s_depth[a.parent.name] + 1
    return min(pairs, key=lambda t: s_depth[pairs[t]])
