"""Motion measures that see what the eye sees: surfaces on the ground, feet that slide, travel, turns, pops.

All lengths in mm come from figure units by ``metres_per_unit`` (:func:`animkit.motion.metres_per_unit`); H
is the hip height at rest (:func:`animkit.motion.retarget.hip_height`); h(x) is a point's height above ``ground`` (the
floor plane, 0 by default; never found from the clip, so a floating or sunken clip measures so).

* **Surface**: the skinned mesh where the scene has one, else the drawn geometry (:mod:`animkit.look.surface`).
  penetration = max(0, −min_f min_v h(x_v(f))) over the whole body; planted height: h of each planted foot's
  lowest surface point over its contact frames (median, 5th percentile; float = max(0, median)).
* **Contacts** say which frames a foot should be planted: for one clip, from height with a generous speed limit
  (within :data:`PLANTED_HEIGHT` · H of the point's own low and slower than :data:`SLIDE_SPEED` · H per second,
  :func:`animkit.motion.detect_contacts`: a foot sliding at 0.9 m/s on 0.9 m hips is still planted; a
  swinging heel passing 1 cm over the floor at 2–5 m/s, as in CMU's walks, is not: height alone took it for planted and
  scored the CMU walk itself at 615 mm/s), for a retarget the source's contacts found the same way and carried to the
  target's feet (:func:`carry_contacts`), or masks given by the caller.
* **Skate** = the planted feet's ground speed over :data:`SKATE_WINDOW` seconds, |x(f + w) − x(f)| / w with f and
  f + w in the same contact (w shortened to the contact's length), per leg the slowest of its foot points (a foot
  rolling over its toe or heel is not sliding), mean over the legs' planted frames (mm/s). The window makes it
  independent of the frame rate and blind to marker jitter (0.5 mm of noise per frame at 120 fps is 60 mm/s frame
  to frame); a steady slide scores its speed exactly. ``skate_by_point`` gives each point's own windowed speed.
* **Travel** = |p_ground(last) − p_ground(first)| / H_s of the hips, H_s the standing hip height measured on the
  surface (:func:`standing_hip_height`: the hips above the lowest surface point of the feet at rest), not the
  joint-based height a retarget scales by, so that a wrong scale shows; against a source, travel ratio =
  travel_target / travel_source (both in their own standing hip heights). **Facing**: ψ(last) − ψ(first), ψ the
  heading of up × (left hip − right hip) on the ground, unwrapped (degrees).
* **Knee pop**: max_f |θ(f+1) − θ(f)|, θ the angle between thigh and shin (degrees).
* **Angular speed** of a joint: |log(R(f)ᵀ R(f+1))| · fps with R = W_parentᵀ W_node's rotation (its turn
  relative to its parent), deg/s; its peak over the clip, per joint.
* **Limit violations**: (frame, DOF) pairs outside the figure's DOF limits, and each DOF's largest excess
  (degrees for turns, figure units for slides).
* **Bone directions** (a retarget): for every target bone t and mapped child c (pairs from
  :func:`animkit.motion.retarget.bone_map`), the angle between the world directions x_c − x_t on the target and
  x_c′ − x_t′ on the source (turned into the target's up axis), per frame; median and 90th percentile per bone
  and over all bones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from animkit.look.surface import BodySurface, body_surface, descendants
from animkit.model.figure import Figure
from animkit.model.humanoid import match_figure, side_of
from animkit.model.quadruped import match_quadruped_figure
from animkit.model.transforms import rotation_vector_from_matrix
from animkit.motion.leg_ik import _rotation
from animkit.motion.legs import (
    SKATE_WINDOW,
    Contacts,
    Leg,
    MotionError,
    _with_up,
    detect_contacts,
    knee_angles,
    legs_of,
    metres_per_unit,
    windowed_speed,
)
from animkit.motion.retarget import BoneMap, _planted_turn, _world_from, bone_map, hip_height, up_index

if TYPE_CHECKING:
    from animkit.look.mesh import Mesh
    from animkit.scene import UpAxis

__all__ = ["PLANTED_HEIGHT", "SLIDE_SPEED", "SKATE_WINDOW", "MotionReport", "SourceMotion", "measure_motion",
           "standing_hip_height",
           "carry_contacts", "height_contacts",
           "angular_speeds", "limit_violations", "bone_direction_errors", "windowed_speed"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class SourceMotion:
    """The clip a retarget came from: its figure, its poses (the same frames as the target's), its up axis (None:
    the figure's, :attr:`Figure.up`), the bone map used (None: :func:`animkit.motion.retarget.bone_map` of the two
    figures) and its meshes (its surface for the standing hip height; none: its drawn geometry)."""

    figure: Figure
    poses: Array
    up: UpAxis | None = None
    bones: BoneMap | None = None
    meshes: Sequence[Mesh] = ()


@dataclass(frozen=True)
class MotionReport:
    """The measures of one clip (see the module's docstring); None where a measure does not apply (no legs,
    no source). Units are in the names: mm, mm/s, deg, deg/s, hip heights (hh)."""

    frames: int
    fps: float
    metres_per_unit: float
    ground: float
    surface: str
    contacts: str
    contact_frames: int
    penetration_mm: float
    skate_mm_per_s: float | None = None
    skate_by_point_mm_per_s: dict[str, float] = field(default_factory=dict)
    planted_height_median_mm: float | None = None
    planted_height_p5_mm: float | None = None
    float_mm: float | None = None
    travel_hh: float | None = None
    facing_change_deg: float | None = None
    knee_pop_deg: float | None = None
    knee_pop_by_leg_deg: dict[str, float] = field(default_factory=dict)
    angular_speed_peak_deg_per_s: float = 0.0
    angular_speed_peak_joint: str | None = None
    angular_speed_by_joint_deg_per_s: dict[str, float] = field(default_factory=dict)
    limit_violations: int = 0
    limit_excess_by_dof: dict[str, float] = field(default_factory=dict)
    travel_ratio: float | None = None
    facing_error_deg: float | None = None
    bone_direction_median_deg: float | None = None
    bone_direction_p90_deg: float | None = None
    bone_direction_by_bone_deg: dict[str, tuple[float, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field by name (tuples as lists)."""
        d = dataclasses.asdict(self)
        d["bone_direction_by_bone_deg"] = {k: list(v) for k, v in self.bone_direction_by_bone_deg.items()}
        return d


#: A foot point is planted within this fraction of the hip height (4 cm at 1 m) above its own low (5th percentile).
PLANTED_HEIGHT = 0.04
#: ... and slower than this many hip heights per second (1 m/s at 1 m hips: any slide the eye would call one, and
#: slower than a swinging foot, 2–5 m/s in a walk).
SLIDE_SPEED = 1.0


def height_contacts(figure: Figure, poses: Array, fps: float, *, up: UpAxis | None = None, ground: float = 0.0,
                    height: float = PLANTED_HEIGHT, speed: float = SLIDE_SPEED,
                    legs: tuple[Leg, ...] | None = None) -> Contacts:
    """Contacts from height with a generous speed limit (:func:`animkit.motion.detect_contacts`): the frames
    a foot point is within ``height`` · H of its own low and slower than ``speed`` · H per second."""
    up = figure.up if up is None else up
    return detect_contacts(figure, poses, fps, up=up, ground=ground, height=height, speed=speed, legs=legs)


def carry_contacts(contacts: Contacts, source_legs: Sequence[Leg], target_legs: Sequence[Leg]) -> Contacts:
    """The source's contacts on the target's feet: each target leg's heel (ankle) and toe take the masks of the
    source leg on the same side; a point with no counterpart is never in contact."""
    F = contacts.mask.shape[0]
    by_side = {leg.side: leg for leg in source_legs}
    points: list[str] = []
    cols: list[NDArray[np.bool_]] = []
    for leg in target_legs:
        src = by_side.get(leg.side)
        pairs = [(leg.ankle, src.ankle if src else None)]
        if leg.toe != leg.ankle:
            pairs.append((leg.toe, src.toe if src and src.toe != src.ankle else None))
        for t, s in pairs:
            points.append(t)
            cols.append(contacts.mask[:, contacts.points.index(s)] if s in contacts.points else np.zeros(F, bool))
    return Contacts(tuple(points), np.stack(cols, axis=1), contacts.ground, contacts.ground_found, contacts.height,
                    contacts.speed)


def angular_speeds(figure: Figure, W: Array, fps: float) -> dict[str, Array]:
    """Per turning joint (node name): |log(R(f)ᵀ R(f+1))| · fps in rad/s, R the node's rotation relative to its
    parent (the world's for a root), (F − 1,); the world blocks' uniform scale divided out first (a Mixamo armature's
    0.01: its blocks 0.01·R are no rotations, and their log read a still figure as turning 90° a frame)."""
    names = figure.node_names
    out: dict[str, Array] = {}
    turns = _rotation(W[:, :, :3, :3])
    for arc in figure.arcs():
        if not any(d.revolute for d in arc.joint.dofs):
            continue
        i = names.index(arc.child.name)
        R = turns[:, i]
        if arc.parent is not None:
            R = np.swapaxes(turns[:, names.index(arc.parent.name)], 1, 2) @ R
        D = np.swapaxes(R[:-1], 1, 2) @ R[1:]
        out[arc.child.name] = np.linalg.norm(rotation_vector_from_matrix(D), axis=-1) * fps
    return out


def limit_violations(figure: Figure, poses: Array) -> tuple[int, dict[str, float]]:
    """(frame, DOF) pairs outside the DOF limits, and each violated DOF's largest excess (degrees for a turn)."""
    P = np.atleast_2d(poses)
    lim = figure.dof_limits()
    excess = np.maximum(np.maximum(lim[:, 0] - P, P - lim[:, 1]), 0.0)
    revolute = np.zeros(P.shape[1], dtype=bool)
    for arc in figure.arcs():
        for i, d in zip(figure.joint_dofs[arc.joint.name], arc.joint.dofs, strict=True):
            revolute[i] = d.revolute
    excess[:, revolute & (lim[:, 1] - lim[:, 0] >= 2 * np.pi - 1e-9)] = 0.0  # a whole turn: any angle is inside
    bad = excess > 1e-9
    names = figure.dof_names
    by = {names[i]: float(np.degrees(excess[:, i].max()) if revolute[i] else excess[:, i].max())
          for i in np.flatnonzero(bad.any(axis=0))}
    return int(bad.sum()), by


def bone_direction_errors(target: Figure, poses: Array, source: Figure, source_poses: Array, bones: BoneMap, *,
                          up: UpAxis | None = None, source_up: UpAxis | None = None) -> dict[str, Array]:
    """Per target bone "t>c" (t mapped, c its nearest mapped descendant): the angle (radians, (F,)) between the
    world directions of t→c on the target and of the mapped pair on the source. Two kinds of bone are compared for
    what the retarget can set, not for the rigs' anatomy:

    * a bone with a mapped left and right child (hips → upper legs, chest → shoulders): those two are fixed offsets
      whose rest directions are each rig's own (pelvis width and drop); they are replaced by "t>side", the
      direction from the right child to the left on both (the turn about the body's axis), beside t → its other
      mapped child;
    * a foot (ankle → toe: where the toe joint sits in the foot is each rig's own; CesiumMan's line points 64° down,
      CMU's 14°) agrees when it points where the source's does, or when it is turned from standing flat as the
      source's is: the smaller of the angle to the source's direction and the angle to G_s(f)·C·e_t, with
      G_s = R_s(f)·R_s(rest)ᵀ, C the turn from the source's rest foot to its median planted pitch
      (``_planted_turn`` of :mod:`animkit.motion.retarget`, from the source alone) and e_t the target's rest direction
      (its foot stands flat at rest). Compared directly only, a right retarget onto a skinned character measured
      40–45° here; a foot turned wrong measures wrong by both.

    ``up`` and ``source_up``: the two figures' up axes (None: each figure's :attr:`Figure.up`).
    """
    up = target.up if up is None else up
    source_up = source.up if source_up is None else source_up
    P_t, P_s = np.atleast_2d(poses), np.atleast_2d(source_poses)
    Gt = target.world_batch(P_t)
    Wt = Gt[:, :, :3, 3]
    M = _world_from(source_up, up)
    Gs = source.world_batch(P_s)
    Ws = Gs[:, :, :3, 3] @ M.T
    if Wt.shape[0] != Ws.shape[0]:
        raise MotionError(f"bone directions: the target has {Wt.shape[0]} frames and the source {Ws.shape[0]}")
    tn, sn = target.node_names, source.node_names
    pairs = bones.pairs
    rest_t = target.world_batch(target.rest_pose()[None])[0]
    rest_s = source.world_batch(source.rest_pose()[None])[0]
    ht = match_figure(target)
    feet = {ht.get(f"foot_{x}") for x in ("l", "r")} - {None}
    ks = up_index(source_up)
    hip_s = hip_height(source, match_figure(source).get("hips") or sn[0], source_up)

    def angle(a: Array, b: Array) -> Array:
        cos = np.einsum("fi,fi->f", a, b)
        return np.arctan2(np.linalg.norm(np.cross(a, b), axis=1), cos)

    out: dict[str, Array] = {}
    for t, s in pairs.items():
        kids: list[str] = []
        todo = [a.child for a in target.node(t).arcs()]
        while todo:
            n = todo.pop()
            if n.name not in pairs:
                todo.extend(a.child for a in n.arcs())
            else:
                kids.append(n.name)
        it, js = tn.index(t), sn.index(s)
        kept = [c for c in kids
                if np.linalg.norm(rest_t[tn.index(c), :3, 3] - rest_t[it, :3, 3]) >= 1e-6 * target.size()
                and np.linalg.norm(rest_s[sn.index(pairs[c]), :3, 3] - rest_s[js, :3, 3]) >= 1e-6 * source.size()]
        sided = {side_of(c): c for c in kept if side_of(c) in ("l", "r")}
        if len(kids) > 1 and len(sided) == 2:
            il, ir = tn.index(sided["l"]), tn.index(sided["r"])
            jl, jr = sn.index(pairs[sided["l"]]), sn.index(pairs[sided["r"]])
            out[f"{t}>side"] = angle(Wt[:, il] - Wt[:, ir], Ws[:, jl] - Ws[:, jr])
            kept = [c for c in kept if c not in sided.values()]
        for c in kept:
            ic, jc = tn.index(c), sn.index(pairs[c])
            a = Wt[:, ic] - Wt[:, it]
            err = angle(a, Ws[:, jc] - Ws[:, js])
            if t in feet:  # or the source foot's turn from standing flat, on the target's rest direction
                C = _planted_turn(source, s, Gs, rest_s, ks, hip_s)
                G = M @ Gs[:, js, :3, :3] @ rest_s[js, :3, :3].T @ C @ M.T
                err = np.minimum(err, angle(a, G @ (rest_t[ic, :3, 3] - rest_t[it, :3, 3])))
            out[f"{t}>{c}"] = err
    return out


def _heading(pos: Array, left: int, right: int, k: int) -> Array:
    """ψ(f) unwrapped: the heading of up × (left hip − right hip) on the ground (radians)."""
    side = pos[:, left] - pos[:, right]
    upv = np.eye(3)[k]
    fwd = np.cross(side, upv)
    a, b = (2, 0) if k == 1 else (0, 1)
    return np.unwrap(np.arctan2(fwd[:, b], fwd[:, a]))


def standing_hip_height(figure: Figure, hips: str, up: UpAxis | None = None, surface: BodySurface | None = None
                        ) -> float:
    """H_s = y_hips − min_v y_v at rest: the hips above the lowest point of the feet's surface (the skinned mesh,
    else the drawn geometry: :func:`animkit.look.surface.body_surface`) in the standing (rest) pose; where the feet own
    no surface point, above the lowest point of the whole surface, and without a surface, above the lowest joint
    of the feet (:func:`animkit.motion.retarget.hip_height`). Measured from the surface, independently of the
    joint-based height a retarget scales its root translation by. ``up``: None, the figure's :attr:`Figure.up`."""
    up = figure.up if up is None else up
    k = up_index(up)
    surface = body_surface(figure) if surface is None else surface
    W0 = figure.world_batch(figure.rest_pose()[None])
    try:
        groups = [descendants(figure, leg.ankle) for leg in legs_of(figure)]
    except MotionError:
        groups = []
    low = np.nanmin(surface.lowest(W0, k, groups)) if groups else np.nan
    if not np.isfinite(low):
        low = surface.lowest(W0, k)[0, 0]
    if not np.isfinite(low):
        return hip_height(figure, hips, up)
    return float(W0[0, figure.node_names.index(hips), k, 3] - low)


def _hips_travel(figure: Figure, pos: Array, surface: BodySurface | None = None) -> tuple[str, float | None]:
    """(hips node, its net ground travel in standing hip heights, None when the figure has no height above its
    feet), on the ground of the figure's up axis."""
    hips = match_figure(figure).get("hips") or match_quadruped_figure(figure).bones.get("hips") or figure.node_names[0]
    H = standing_hip_height(figure, hips, surface=surface)
    if H <= 1e-9 * figure.size():
        return hips, None
    d = pos[-1, figure.node_names.index(hips)] - pos[0, figure.node_names.index(hips)]
    d[up_index(figure.up)] = 0.0
    return hips, float(np.linalg.norm(d) / H)


def measure_motion(figure: Figure, poses: Array, fps: float, *, up: UpAxis | None = None, meshes: Sequence[Mesh] = (),
                   ground: float = 0.0, contacts: Contacts | None = None, legs: tuple[Leg, ...] | None = None,
                   unit: float | None = None, source: SourceMotion | None = None,
                   surface: BodySurface | None = None) -> MotionReport:
    """Every measure of the module's docstring for ``poses`` (F, D) at ``fps``.

    ``meshes``: the scene's meshes (their surface counts; none: the drawn geometry). ``contacts``: the frames the
    feet should be planted (default: the source's carried over when ``source`` is given, else from height).
    ``source``: the clip a retarget came from, for travel ratio, facing error and bone directions. ``up``: None, the
    figure's :attr:`Figure.up` (another axis measures the figure as if it were its up).
    """
    figure = _with_up(figure, up)
    P = np.atleast_2d(figure.check_pose(poses))
    F = P.shape[0]
    if F < 3:
        raise MotionError(f"motion measures need at least 3 frames, got {F}")
    k = up_index(figure.up)
    surface = body_surface(figure, meshes) if surface is None else surface
    W = figure.world_batch(P)
    pos = W[:, :, :3, 3]
    if legs is None:
        try:
            legs = legs_of(figure)
        except MotionError:
            legs = ()
    if unit is not None:
        u = float(unit)
    elif legs:
        u = metres_per_unit(figure, legs)
    else:
        u = 1.0
    mm = 1000.0 * u
    low_all = surface.lowest(W, k)[:, 0]
    pen = max(0.0, float(ground - np.nanmin(low_all))) * mm if np.isfinite(low_all).any() else 0.0
    speeds = angular_speeds(figure, W, fps)
    peaks = {n: float(np.degrees(v.max(initial=0.0))) for n, v in speeds.items()}
    top = max(peaks, key=lambda n: peaks[n]) if peaks else None
    nviol, excess = limit_violations(figure, P)
    hips, travel = _hips_travel(figure, pos, surface)
    report = MotionReport(F, float(fps), u, float(ground), surface.kind, "none", 0, pen,
                          travel_hh=travel, angular_speed_peak_deg_per_s=peaks[top] if top else 0.0,
                          angular_speed_peak_joint=top, angular_speed_by_joint_deg_per_s=peaks,
                          limit_violations=nviol, limit_excess_by_dof=excess)
    if legs:
        report = _with_legs(report, figure, P, W, fps, ground, legs, contacts, source, surface)
    if source is not None:
        report = _with_source(report, figure, P, legs, source)
    return report


def _with_legs(report: MotionReport, figure: Figure, P: Array, W: Array, fps: float, ground: float,
               legs: tuple[Leg, ...], contacts: Contacts | None, source: SourceMotion | None,
               surface: BodySurface) -> MotionReport:
    """The feet's measures: contacts, skate, planted heights, knee pops, facing (up: the figure's)."""
    k = up_index(figure.up)
    names = figure.node_names
    pos = W[:, :, :3, 3]
    kind = "given"
    if contacts is None and source is not None:
        try:
            s_legs = legs_of(source.figure)
        except MotionError:
            s_legs = ()
        if s_legs:
            sc = height_contacts(_with_up(source.figure, source.up), source.poses, fps, legs=s_legs)
            contacts, kind = carry_contacts(sc, s_legs, legs), "source"
    if contacts is None:
        contacts, kind = height_contacts(figure, P, fps, ground=ground, legs=legs), "height"
    if contacts.mask.shape[0] != P.shape[0]:
        raise MotionError(f"contacts cover {contacts.mask.shape[0]} frames, the clip {P.shape[0]}")
    mm = 1000.0 * report.metres_per_unit
    horiz = [i for i in range(3) if i != k]
    by_point: dict[str, float] = {}
    speed = np.full((P.shape[0], len(contacts.points)), np.nan)
    for j, p in enumerate(contacts.points):
        speed[:, j] = windowed_speed(pos[:, names.index(p)][:, horiz], contacts.mask[:, j], fps)
        v = speed[:, j][np.isfinite(speed[:, j])]
        by_point[p] = float(v.mean() * mm) if v.size else 0.0
    per_leg: list[Array] = []
    for leg in legs:
        cols = [contacts.points.index(p) for p in (leg.ankle, leg.toe) if p in contacts.points]
        if cols:
            v = speed[:, cols]
            ok = np.isfinite(v).any(axis=1)
            per_leg.append(np.nanmin(np.where(np.isfinite(v), v, np.inf)[ok], axis=1))
    legs_v = np.concatenate(per_leg) if per_leg else np.zeros(0)
    lows = surface.lowest(W, k, [descendants(figure, leg.ankle) for leg in legs])
    planted: list[Array] = []
    for j, leg in enumerate(legs):
        cols = [contacts.points.index(p) for p in (leg.ankle, leg.toe) if p in contacts.points]
        down = contacts.mask[:, cols].any(axis=1) if cols else np.zeros(P.shape[0], bool)
        planted.append((lows[down, j] - ground) * mm)
    heights = np.concatenate(planted) if planted else np.zeros(0)
    heights = heights[np.isfinite(heights)]
    knee = np.degrees(knee_angles(figure, P, legs))
    pops = np.abs(np.diff(knee, axis=0)).max(axis=0)
    facing = None
    sides = {leg.side: leg for leg in legs}
    if "l" in sides and "r" in sides:
        psi = _heading(pos, names.index(sides["l"].hip), names.index(sides["r"].hip), k)
        facing = float(np.degrees(psi[-1] - psi[0]))
    med = float(np.median(heights)) if heights.size else None
    return dataclasses.replace(
        report, contacts=kind, contact_frames=int(contacts.mask.any(axis=1).sum()),
        skate_mm_per_s=float(legs_v.mean() * mm) if legs_v.size else 0.0, skate_by_point_mm_per_s=by_point,
        planted_height_median_mm=med,
        planted_height_p5_mm=float(np.percentile(heights, 5.0)) if heights.size else None,
        float_mm=None if med is None else max(0.0, med), facing_change_deg=facing, knee_pop_deg=float(pops.max()),
        knee_pop_by_leg_deg={leg.side: float(x) for leg, x in zip(legs, pops, strict=True)})


def _with_source(report: MotionReport, figure: Figure, P: Array, legs: tuple[Leg, ...], source: SourceMotion
                 ) -> MotionReport:
    """Against the source: travel ratio, facing error, bone-direction agreement (each figure's up)."""
    sfig = _with_up(source.figure, source.up)
    S = np.atleast_2d(sfig.check_pose(source.poses))
    if S.shape[0] != P.shape[0]:
        raise MotionError(f"the source has {S.shape[0]} frames and the retarget {P.shape[0]}")
    bones = source.bones if source.bones is not None else bone_map(sfig, figure)
    errs = bone_direction_errors(figure, P, sfig, S, bones)
    by_bone = {b: (float(np.degrees(np.median(e))), float(np.degrees(np.percentile(e, 90.0))))
               for b, e in errs.items()}
    every = np.degrees(np.concatenate(list(errs.values()))) if errs else np.zeros(0)
    spos = sfig.world_positions(S)
    _, s_travel = _hips_travel(sfig, spos, body_surface(sfig, source.meshes))
    ratio = None
    if report.travel_hh is not None and s_travel is not None and s_travel > 0.05:
        ratio = report.travel_hh / s_travel
    facing_error = None
    try:
        s_legs = {leg.side: leg for leg in legs_of(sfig)}
    except MotionError:
        s_legs = {}
    if report.facing_change_deg is not None and "l" in s_legs and "r" in s_legs:
        names = sfig.node_names
        psi = _heading(spos, names.index(s_legs["l"].hip), names.index(s_legs["r"].hip), up_index(sfig.up))
        facing_error = abs(report.facing_change_deg - float(np.degrees(psi[-1] - psi[0])))
    return dataclasses.replace(
        report, travel_ratio=ratio, facing_error_deg=facing_error,
        bone_direction_median_deg=float(np.median(every)) if every.size else None,
        bone_direction_p90_deg=float(np.percentile(every, 90.0)) if every.size else None,
        bone_direction_by_bone_deg=by_bone)
