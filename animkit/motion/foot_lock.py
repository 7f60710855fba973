"""Feet held where they land: :func:`lock_feet`, its passes and the judge that keeps it from making a clip worse.

**Foot locking.** During a heel contact the ankle is held at one point over the whole contact (the point of
its path the leg reaches best: a sliding foot is held near its middle); during a toe contact with the heel down the
foot turns so the toe stays too, and when the heel lifts the toe stays where the heel left it and the foot turns
about it (ankle goal = toe lock − Q·(toe − ankle) at f); a foot that spins (turns its heading past 30° over a contact)
pivots on its toe, its heading the clip's (:mod:`animkit.motion.pivot`). The lock holds in full over the whole
contact and is eased in over ``blend`` frames before it and out over ``blend`` after it (the lock's offset from the
clip carried and faded). Its height puts the foot's lowest *surface* point (the skinned mesh, else the drawn geometry:
:mod:`animkit.look.surface`) on the ground (plus 0.5 % of the hip height) while planted and lifts it out of the ground
elsewhere, and it is reached by the two-bone leg IK batched over frames (:func:`animkit.ik.two_bone_angles`): the
knee stays in the plane of the clip's own knee (its bend axis, fixed in the thigh's frame, so it never flips) and
within the clip's own range of bend (soft stops); a swinging leg bent to its limit keeps its foot's height; a biped's
pelvis comes down where a held foot is out of reach and up where a planted knee would bend past the clip's, and
shifts along the ground where the two clash (:mod:`animkit.motion.pelvis`); the foot keeps its world orientation from
the clip (an ankle that cannot twist gets its heading from the hip where the toe alone holds the foot), and where the
ankle's joints cannot turn it so (too few DOFs, limits) the goal's height is corrected for the turn they gave it and
the leg solved again. For a retarget, pass the source's contacts carried to the target
(``contacts=``: :func:`animkit.motion.measures.carry_contacts`), as ``animkit retarget`` and the batch do. Locking
never makes a clip worse: a stretch of frames whose foot surface goes further under the ground, whose knee changes
between frames by more than the clip's largest change, or whose own held foot slides faster, has its contacts left
unlocked (:attr:`LockResult.unlocked` says which and why).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from animkit.look.surface import BodySurface, _Sole, body_surface, descendants
from animkit.model.figure import Figure
from animkit.model.transforms import matrix_aligning, matrix_from_rotation_vector, rotation_vector_from_matrix
from animkit.motion.leg_ik import (
    SOFT,
    HeldLeg,
    _carried_world,
    _carry,
    _fk_below,
    _read_world,
    _rotation,
    _world_below,
    held_legs_ik,
    swivels,
)
from animkit.motion.legs import (
    Contacts,
    Leg,
    MotionMeasures,
    _drift,
    _foot_lows,
    _intervals,
    _norm,
    _spans,
    _with_up,
    detect_contacts,
    knee_angles,
    legs_of,
    measure,
    metres_per_unit,
    rejoined_masks,
)
from animkit.motion.pelvis import _off_held, leg_length, pelvis_offset, smooth_max
from animkit.motion.pivot import held_masks, held_points, twist_weight
from animkit.motion.retarget import hip_height, up_index
from animkit.recent import Recent

if TYPE_CHECKING:
    from animkit.look.mesh import Mesh
    from animkit.scene import UpAxis

__all__ = ["LockResult", "lock_feet"]

Array = NDArray[np.float64]
Bool = NDArray[np.bool_]


@dataclass(frozen=True, eq=False)
class LockResult:
    """Poses with the feet locked, the contacts used, the measures before and after, the contacts left
    unlocked because locking them made something worse (one line each: leg, frames, why), and ``held`` (F, K):
    the frames each of ``contacts.points`` was locked in the end (None when nothing was)."""

    poses: Array
    contacts: Contacts
    before: MotionMeasures
    after: MotionMeasures
    legs: tuple[Leg, ...] = field(default=())
    unlocked: tuple[str, ...] = field(default=())
    held: Bool | None = None


def _lock_point(clip: Array, hip: Array, reach: float, up: int) -> Array:
    """Where a planted ankle is held over its contact (clip (n, 3), the clip's ankle there): the point p on the
    ground path from its first to its last position (and its mean) that minimises max_f (|p_f − hip(f)| − r(f))⁺
    + 0.01·max_f |p − clip(f)|_ground, p_f = p on the ground at the clip's height, r(f) = max(reach, |clip(f) −
    hip(f)|): the leg stretched past its reach
    as little as can be, then the foot as near the clip's as can be (a sliding foot held at its middle moves ±s/2)."""
    t = np.linspace(0.0, 1.0, 9)[:, None]
    cand = np.concatenate([clip[0] + t * (clip[-1] - clip[0]), clip.mean(axis=0, keepdims=True)])  # (C, 3)
    off = cand[:, None, :] - clip[None]  # (C, n, 3)
    off[..., up] = 0.0
    room = np.maximum(_norm(clip - hip, axis=1), reach)  # never shorter than the clip's own
    over = np.maximum(_norm(off + (clip - hip)[None], axis=-1) - room, 0.0).max(axis=1)
    return cand[int(np.argmin(over + 0.01 * _norm(off, axis=-1).max(axis=1)))]


def _goal(clip: Array, mask_heel: Bool, mask_toe: Bool, toe: Array, blend: int, hip: Array | None = None,
          reach: float = np.inf, up: int = 1, bridge: Bool | None = None
          ) -> tuple[Array, Array, Array, NDArray[np.intp]]:
    """Ankle goals (F, 3), their weights (F,), the foot's correction turns (F, 3, 3) and, per frame, the frame
    whose lock it eases from (itself during a contact, the contact's first frame before it and its last frame
    after it, −1 elsewhere).

    Heel contact: the ankle stays at one point over the contact (:func:`_lock_point` given the ``hip`` positions
    and the leg's ``reach``, else the clip's mean there). Toe contact with the heel also down: the foot turns (Q)
    so the toe stays where it landed too, and keeps that turn while it pivots on its toe alone (ankle = toe
    lock − Q·(toe − ankle)); when the toe lifts and the heel stays, Q eases back to none over ``blend`` frames.
    The weight is 1 over the whole contact [s, e) and eases in over ``blend`` frames
    before it and out over ``blend`` after it, w = smoothstep(min(f − s + blend + 1, e + blend − f) / (blend +
    1)); around a contact the lock's offset from the clip is carried (goal = clip + lock(s) − clip(s) before it,
    clip + lock(e − 1) − clip(e − 1) after it), goal = (1 − w)·clip + w·lock, Q scaled by w, so nothing pops.
    Frames ``bridge`` (where a contact gave way: :func:`_lock_held`) join the runs either side into one contact for
    where it is held (one lock point over them all), and there the hold gives way along up only: the foot keeps its
    lock along the ground, the carried offset going over linearly from the earlier frame's to the later one's,
    (1 − t)·o(p) + t·o(n) with t = (f − p) / (n − p) (p and n the locked frames either side), eased by w along up.
    """
    F = clip.shape[0]
    rel = toe - clip  # the toe's offset from the ankle in the clip, at each frame
    heel_runs, toe_runs = _intervals(mask_heel), _intervals(mask_toe)
    span_h, span_t = _spans(mask_heel, bridge), _spans(mask_toe, bridge)  # each run's whole contact
    heel_lock, toe_lock = np.full((F, 3), np.nan), np.full((F, 3), np.nan)
    for s, e, heel in sorted([(s, e, True) for s, e in heel_runs] + [(s, e, False) for s, e in toe_runs],
                             key=lambda r: (r[0], not r[2])):  # in time order: a lock is where the other one left it
        a, b = (span_h if heel else span_t)[s]
        if a < s:  # the same contact again after it gave way: held where it was
            (heel_lock if heel else toe_lock)[s:e] = (heel_lock if heel else toe_lock)[a]
        elif heel and mask_toe[s] and s > 0 and mask_toe[s - 1]:  # a heel that comes down on a planted toe stays
            heel_lock[s:e] = toe_lock[s] - rel[s]  # where that toe is held: the ankle does not jump as it lands
        elif heel and s > 0 and mask_toe[s - 1]:  # a heel that stays down as a pivoting toe lifts: where it left it
            heel_lock[s:e] = toe_lock[s - 1] - rel[s - 1]
        elif heel:
            heel_lock[s:e] = clip[a:b].mean(axis=0) if hip is None else _lock_point(clip[a:b], hip[a:b], reach, up)
        else:
            toe_lock[s:e] = heel_lock[s] + rel[s] if mask_heel[s] else toe[a:b].mean(axis=0)
    both = mask_heel & mask_toe
    only_toe = mask_toe & ~mask_heel
    rv = np.zeros((F, 3))
    if both.any():
        rv[both] = rotation_vector_from_matrix(matrix_aligning(rel[both], toe_lock[both] - heel_lock[both]))
    for s, e in _intervals(only_toe):  # the turn holds while the foot pivots on its toe after standing on both
        if s > 0 and both[s - 1]:
            rv[s:e] = rv[s - 1]
    for s, e in _intervals(mask_heel & ~mask_toe):  # and eases out over the blend once the toe lifts off a planted
        if s > 0 and both[s - 1]:  # heel (a turn dropped at once would make the knee snap the sole up or down)
            x = np.clip(1.0 - np.arange(1, e - s + 1) / (blend + 1.0), 0.0, 1.0)
            rv[s:e] = rv[s - 1] * (x * x * (3.0 - 2.0 * x))[:, None]
    lock = clip.copy()
    lock[mask_heel] = heel_lock[mask_heel]
    turned = bool(rv.any())  # (no turn anywhere, a quadruped's paws: Q = I, whose product is the offset itself)
    lock[only_toe] = toe_lock[only_toe] - (np.einsum("fij,fj->fi", matrix_from_rotation_vector(rv[only_toe]),
                                                     rel[only_toe]) if turned else rel[only_toe])
    locked = mask_heel | mask_toe
    idx = np.arange(F)
    prev = np.maximum.accumulate(np.where(locked, idx, -1))  # the last locked frame up to f, the first from f on
    nxt = np.minimum.accumulate(np.where(locked, idx, F)[::-1])[::-1]
    after = np.where(prev >= 0, idx - prev, F + blend + 1)
    before = np.where(nxt < F, nxt - idx, F + blend + 1)
    x = np.clip((blend + 1.0 - np.minimum(after, before)) / (blend + 1.0), 0.0, 1.0)
    w = x * x * (3.0 - 2.0 * x)  # smoothstep: no jump in speed where a ramp starts or ends
    at = np.where(after <= before, prev, nxt)  # the nearer contact's end (after it) or start (before it)
    ease = ~locked & (np.minimum(after, before) <= blend)
    goal = lock.copy()
    goal[ease] = clip[ease] + lock[at[ease]] - clip[at[ease]]
    rv[ease] = rv[at[ease]]
    mid = ease & (prev >= 0) & (nxt < F) & (bridge if bridge is not None else False)
    if mid.any():  # where a contact gave way: from one side's offset to the other's
        p, n = prev[mid], nxt[mid]
        t = ((idx[mid] - p) / (n - p))[:, None]
        goal[mid] = clip[mid] + (1.0 - t) * (lock[p] - clip[p]) + t * (lock[n] - clip[n])
        rv[mid] = (1.0 - t) * rv[p] + t * rv[n]
    src = np.where(locked, idx, np.where(ease, at, -1))
    Q = matrix_from_rotation_vector(rv * w[:, None]) if turned else np.tile(np.eye(3), (F, 1, 1))
    out = (1.0 - w)[:, None] * clip + w[:, None] * goal
    if mid.any():  # the lock kept along the ground (the height is eased by w: :func:`_lock_pass`)
        out[np.ix_(mid, np.arange(3) != up)] = goal[np.ix_(mid, np.arange(3) != up)]
    return out, w, Q, src


@dataclass(frozen=True, eq=False)
class _Judge:
    """The clip as given, as the never-worse checks read it: its poses and their world matrices, knee angles
    (F, legs) and feet's lowest surface points (F, legs), the ground, the surface, the up index, metres per unit,
    the blend in frames, the contacts and the hip height; ``seen``: the last world matrices judged, their feet's
    lowest points and their knee angles."""

    figure: Figure
    P0: Array
    W0: Array
    legs: tuple[Leg, ...]
    knee0: Array
    low0: Array
    ground: float
    surface: BodySurface
    k: int
    unit: float
    nb: int
    contacts: Contacts
    hip: float
    seen: dict[str, tuple[Array, Array, Array]] = field(default_factory=dict)

    def lows(self, W: Array) -> Array | None:
        """The feet's lowest surface points (F, legs) for world matrices ``W`` where this judge has them: the clip's,
        or those of the poses it judged last (None else)."""
        if W is self.W0:
            return self.low0
        last = self.seen.get("last")
        return last[1] if last is not None and last[0] is W else None

    def knees(self, W: Array) -> Array | None:
        """The knee angles (F, legs) for world matrices ``W`` where this judge has them (as :meth:`lows`)."""
        if W is self.W0:
            return self.knee0
        last = self.seen.get("last")
        return last[2] if last is not None and last[0] is W else None


def _unlock_worse(judge: _Judge, lock: Callable[[], tuple[Array, Array]], masks: dict[str, tuple[Bool, Bool]],
                  lift: dict[str, Bool], notes: list[str]) -> tuple[Array, Array, dict[str, tuple[Bool, Bool]]]:
    """(poses, their world matrices, masks): ``lock()`` (which reads ``masks`` and ``lift``) again until no stretch is
    worse than the clip as given (:func:`_worse_stretches`; ≤ 12 times): each worse stretch's locks are dropped (the leg
    at fault's own there, else the other leg's: a biped's leg moved only because the pelvis moved for the other's lock).
    Then the legs still made worse lose every lock, and if that is still worse, the clip is returned as given (masks
    then empty)."""
    F = judge.P0.shape[0]
    for _ in range(12):
        P, W = lock()
        worse = _worse_stretches(judge, P, W, masks)
        if not worse:
            return P, W, masks
        for s0, e0, side, why in worse:
            lift[side][s0:e0] = False
            own = any(s1 < e0 and e1 > s0 for m in masks[side] for s1, e1 in _intervals(m))
            for other in [side] if own else [leg.side for leg in judge.legs if leg.side != side]:
                for m in masks[other]:
                    for s1, e1 in _intervals(m):
                        if s1 < e0 and e1 > s0:
                            m[s1:e1] = False
                            notes.append(f"leg {other} frames {s1}-{e1 - 1} left unlocked: locked, leg {side}: {why}")
    for side in dict.fromkeys(w[2] for w in worse):
        masks[side] = (np.zeros(F, bool), np.zeros(F, bool))
        lift[side][:] = False
        notes.append(f"leg {side} left as given: every lock of it made some stretch worse")
    P, W = lock()
    if _worse_stretches(judge, P, W, masks):
        notes.append("feet left as given: every lock made some stretch worse")
        return judge.P0, judge.W0, {}
    return P, W, masks


def lock_feet(figure: Figure, poses: Array, fps: float, *, up: UpAxis | None = None, ground: float | None = None,
              contacts: Contacts | None = None, blend: float = 0.2, legs: tuple[Leg, ...] | None = None,
              unit: float | None = None, meshes: Sequence[Mesh] = ()) -> LockResult:
    """Feet held where they land during contacts, by the two-bone leg IK over all frames at once.

    ``ground``: the floor's height (default 0, the world's floor plane; ``contacts``' own ground is not used).
    During a contact the foot's lowest *surface* point (``meshes``, a scene's skinned meshes, else the drawn
    geometry: :mod:`animkit.look.surface`) is put on the ground (:data:`SOLE_CLEARANCE` above it), and a foot under the
    ground elsewhere is lifted out of it; ``blend``: seconds over which a lock eases in and out (at least 2 frames).
    ``contacts``: for a retarget, the source's carried to the target (else found on this clip). The knee bends no
    further and straightens no further than the clip's own knee does (soft stops). A lock the leg cannot hold (its
    joint limits or its length keep the ankle more than 2 % of the leg's length from the lock along the ground)
    keeps only its longest run of frames held, and the pass is made again (at most 8 times). Then **nothing gets
    worse**: each contact (its frames with their ease in and out) and each other stretch of frames where a leg
    changed is compared with the clip as given; where the foot's surface goes further under the ground than it did
    there, a knee changes between two frames by more than the clip's largest knee change, or a planted foot of a leg
    holding a lock there slides faster, the contacts there are left unlocked (``LockResult.unlocked`` says which and
    why) and the work is done again (at most 12 times; then a leg still made worse is left as given, whole, and if
    that is not enough the clip is returned as given). Each leg's lock turns that leg's own joints only (hip, knee,
    ankle); the one shared correction is a biped's pelvis, lowered where a held foot is out of reach and raised
    where a planted knee would bend past the clip's, with the other leg then holding its own foot where the clip has
    it. Four legs keep the body as given, so a quadruped leg left unlocked is exactly as given. A quadruped stands
    on its paws: its contacts hold the paw (the toe) and the leg pivots about it; where only its hock or wrist (the
    ankle) is in contact, that is held. "Slides further" is judged per
    contact by its mean ground speed over half the blend (:data:`DRIFT_TOLERANCE`), not by the frame-to-frame path,
    which marker jitter dominates.
    """
    figure = _with_up(figure, up)  # the passes read up from the figure
    up = figure.up
    legs = legs_of(figure) if legs is None else legs
    P0 = np.atleast_2d(figure.check_pose(poses)).copy()
    F = P0.shape[0]
    g = 0.0 if ground is None else float(ground)
    surface = body_surface(figure, meshes)
    W0 = _read_world(figure, P0, legs, surface, contacts)  # computed once: every pass and judgement reads them
    c = contacts if contacts is not None else detect_contacts(figure, P0, fps, up=up, ground=g, legs=legs, world=W0)
    c = dataclasses.replace(c, ground=g, ground_found=False)
    k = up_index(up)
    low0 = _foot_lows(figure, W0, legs, surface, k)
    u = metres_per_unit(figure, legs, up) if unit is None else float(unit)
    names = figure.node_names
    masks = held_masks(c, legs, W0[:, [names.index(leg.ankle) for leg in legs], :3, :3], k)
    lift = {leg.side: np.ones(F, dtype=bool) for leg in legs}  # where each foot may be lifted out of the ground
    nb = max(2, int(round(blend * fps)))
    knee0 = knee_angles(figure, P0, legs, world=W0)
    measured = functools.partial(measure, figure, up=up, legs=legs, unit=u, surface=surface, fps=fps)
    before = measured(P0, c, world=W0, lows=low0, knees=knee0)
    pop0 = 0.999 * float(np.abs(np.diff(knee0, axis=0)).max(initial=0.0))  # no knee turns faster than the clip's
    names = figure.node_names
    soles = [_Sole(surface.points(W0, descendants(figure, leg.ankle)), W0[:, names.index(leg.ankle), :3, 3].copy())
             for leg in legs]  # each foot's surface and its ankle in the clip
    notes: list[str] = []
    judge = _Judge(figure, P0, W0, legs, knee0, low0, g, surface, k, u, nb, c, hip_height(figure, legs[0].hip, up))
    # where a contact gave way (:func:`_lock_held`); a biped's pelvis still comes down for those frames as if held
    gave = {leg.side: np.zeros(F, dtype=bool) for leg in legs}

    def lock() -> tuple[Array, Array]:
        return _lock_held(figure, P0, W0, nb, g, masks, lift, judge.hip, legs, soles, pop0, gave)

    P, W, masks = _unlock_worse(judge, lock, masks, lift, notes)
    after = measured(P, c, world=W, lows=judge.lows(W), knees=judge.knees(W))
    if masks and after.skate_mm > before.skate_mm:  # the planted feet slide more in all: the legs whose own points
        # slide more lose their locks; if the feet still slide more, the clip is returned as given
        for leg in legs:
            pts = [p for p in dict.fromkeys((leg.ankle, leg.toe)) if p in c.points]
            if sum(after.skate_by_point[p] for p in pts) > sum(before.skate_by_point[p] for p in pts):
                masks[leg.side] = (np.zeros(F, bool), np.zeros(F, bool))
                lift[leg.side][:] = False
                notes.append(f"leg {leg.side} left unlocked: its planted points slid more in all")
        P, W, masks = _unlock_worse(judge, lock, masks, lift, notes)
        after = measured(P, c, world=W, lows=judge.lows(W), knees=judge.knees(W))
        if (after.skate_mm > before.skate_mm or after.penetration_mm > before.penetration_mm + 1e-9
                or after.knee_pop_deg > before.knee_pop_deg + 1e-9):
            P, masks, after = P0, {}, before
            notes.append("feet left as given: the planted feet slid more in all")
    return LockResult(P, c, before, after, legs, tuple(dict.fromkeys(notes)), held_points(c, legs, masks))


#: A lock may leave a planted foot sliding this fraction of the hip height a frame faster than the clip as given
#: (its mean ground speed over the contact) before it is judged worse (0.09 mm a frame at 0.9 m hips: 11 mm/s at
#: 120 fps): the IK's soft stops and the ease in and out.
DRIFT_TOLERANCE = 0.0001


def _worse_stretches(judge: _Judge, P: Array, W: Array,
                     masks: dict[str, tuple[Bool, Bool]]) -> list[tuple[int, int, str, str]]:
    """Stretches [s, e) of frames where a leg changed and its foot's surface went further under the ground than in
    the clip as given there, or its knee changed between two frames by more than any knee does in the clip as
    given (its knee pop), or its planted points (``contacts``) slid further; with the leg's side and a description of
    what got worse.
    A leg's stretches are its contacts (held or not), each with
    ``nb`` frames either side (each judged on its own, overlapping its neighbours), and the runs of changed frames
    outside them, judged apart."""
    figure, legs, k, nb, contacts = judge.figure, judge.legs, judge.k, judge.nb, judge.contacts
    knee0, low0, ground, unit = judge.knee0, judge.low0, judge.ground, judge.unit
    names = figure.node_names
    knee = knee_angles(figure, P, legs, world=W)  # W: the world matrices of P
    low = _foot_lows(figure, W, legs, judge.surface, k)
    judge.seen["last"] = (W, low, knee)
    pos0 = judge.W0[:, :, :3, 3]
    size = figure.size()
    tiny = 1e-9 * size
    clip_pop = float(np.abs(np.diff(knee0, axis=0)).max(initial=0.0))  # the clip's own largest knee change
    hip = judge.hip
    out: list[tuple[int, int, str, str]] = []
    horiz = [i for i in range(3) if i != k]
    for j, leg in enumerate(legs):
        ia = names.index(leg.ankle)
        pts = [names.index(p) for p in dict.fromkeys((leg.ankle, leg.toe)) if p in contacts.points]
        runs_of = [(i, contacts.mask[:, contacts.points.index(names[i])]) for i in pts]
        moved = _norm(W[:, ia, :3, 3] - pos0[:, ia], axis=1) > tiny
        moved |= np.abs(knee[:, j] - knee0[:, j]) > 1e-9
        win = np.zeros(len(P), dtype=bool)  # each contact (held or not) with its ease either side, judged apart
        runs = []
        for s, e in _intervals(np.logical_or.reduce([masks[leg.side][0], masks[leg.side][1]]
                                                    + [m for _, m in runs_of])):
            win[max(0, s - nb):e + nb] = True
            if moved[max(0, s - nb):e + nb].any():
                runs.append((max(0, s - nb), min(len(P), e + nb)))
        runs += _intervals(moved & ~win)
        # per leg once, read per stretch (the same values: a max is exact, a slice of the differences is the
        # differences of the slice): how far under the ground each frame's foot goes as given and now, NaN (no
        # surface there) as -inf (np.nanmax skips it), the knee's change from the frame before, the frames held so far
        deep = [np.where(np.isnan(x), -np.inf, x).tolist() for x in (ground - low0[:, j], ground - low[:, j])]
        change = np.abs(np.diff(knee[:, j]))
        held = np.concatenate([[0], np.cumsum(masks[leg.side][0] | masks[leg.side][1])]).tolist()
        for s, e in runs:
            a, b = max(0, s - 1), min(len(P), e + 1)
            pen0, pen1 = max(0.0, max(deep[0][a:b], default=-np.inf)), max(0.0, max(deep[1][a:b], default=-np.inf))
            pop0, pop1 = clip_pop, float(change[a:b - 1].max(initial=0.0))
            if pen1 > pen0 + 1e-6 * size:
                out.append((a, b, leg.side, f"the foot would go {1e3 * unit * pen1:.1f} mm under the ground (as given "
                            f"{1e3 * unit * pen0:.1f} mm)"))
            elif pop1 > pop0 + 1e-6:
                out.append((a, b, leg.side, f"the knee would change {np.degrees(pop1):.1f}° in a frame (as given "
                            f"at most {np.degrees(pop0):.1f}°)"))
            elif held[b] > held[a]:  # a lock of its own that slides more (a
                # leg the pelvis moved, holding no lock, is judged by its surface and knee only)
                half = max(1, nb // 2)
                d0, d1 = _drift((pos0, W[:, :, :3, 3]), runs_of, a, b, horiz, half)
                worse = np.flatnonzero(d1 > d0 + DRIFT_TOLERANCE * hip)  # NaN (too short to tell) compares False
                if worse.size:
                    v0, v1 = float(d0[worse[0]]), float(d1[worse[0]])
                    out.append((a, b, leg.side, f"a planted foot would slide {1e3 * unit * v1:.2f} mm a frame in "
                                f"its contact (as given {1e3 * unit * v0:.2f} mm)"))
    return out


def _lock_held(figure: Figure, P0: Array, W0: Array, nb: int, ground: float,
               masks: dict[str, tuple[Bool, Bool]], lift: dict[str, Bool], hip: float, legs: tuple[Leg, ...],
               soles: list[_Sole], max_step: float, gave: dict[str, Bool]) -> tuple[Array, Array]:
    """Passes of :func:`_lock_pass` until every lock holds (a lock the leg cannot hold keeps its longest run of
    frames held: the ankle on the ground within 2 % of the leg's length of its goal; and a contact whose first or
    last frames, held in full, leave the foot's lowest surface point (``soles`` as the leg turned the foot) higher
    than :data:`SOLE_CLEARANCE` + :data:`LIFT_MISS` of the hip height above the ground loses those frames; with
    ``gave`` (per leg's side, written here), such frames inside a contact give way too and the contact stays one
    (:func:`_goal`'s ``bridge``; a biped's pelvis still comes down for them); ≤ 8 passes). Returns the poses and
    their world matrices; ``W0``: those of ``P0``; ``nb``: the blend in frames; ``hip``: the hip height; up is the
    figure's (``figure.up``)."""
    names = figure.node_names
    k = up_index(figure.up)
    P, W = P0, W0
    top = ground + (SOLE_CLEARANCE + LIFT_MISS) * hip
    for _ in range(8):
        P, W, goals = _lock_pass(figure, P0, W0, nb, ground, masks, lift, hip, legs, soles, max_step, gave)
        pos = W[:, :, :3, 3]
        again = False
        for leg, rel, (goal, w) in zip(legs, soles, goals, strict=True):
            ia = names.index(leg.ankle)
            length = leg_length(W[0], names, leg)
            gap = pos[:, ia] - goal
            gap[:, k] = 0.0  # a foot short of its goal's height only is not sliding (the surface check judges it)
            miss = (w > 0.0) & (_norm(gap, axis=1) > 0.02 * length)
            high = np.zeros_like(miss)
            if rel.count:  # a held foot the leg cannot bring down floats: its contact's ends are trimmed off
                R = _rotation(W[:, ia, :3, :3]) @ np.swapaxes(_rotation(W0[:, ia, :3, :3]), 1, 2)
                high = (w >= 1.0) & (pos[:, ia, k] + rel.below(R[:, k]) > top)
            g = gave[leg.side]
            for m in masks[leg.side]:
                for s0, e0 in _intervals(m | g):  # each contact whole, across the frames where it gave way
                    if not m[s0:e0].any():
                        continue
                    a, b = 0, e0 - s0
                    if miss[s0:e0].any():  # missed in the lock: its longest run of frames held stays locked (a
                        # miss in its ease, the foot in the air, is no slide)
                        a, b = max(_intervals(~miss[s0:e0]) or [(0, 1)], key=lambda r: r[1] - r[0])
                    while b - a > 1 and high[s0 + a]:
                        a += 1
                    while b - a > 1 and high[s0 + b - 1]:
                        b -= 1
                    g[s0:s0 + a] = g[s0 + b:e0] = False
                    # a held frame whose sole stays up inside the contact (the body as given, or a biped's pelvis
                    # down as far as it goes) gives way: one contact still, its lock kept along the ground (_goal)
                    g[s0 + a:s0 + b] |= high[s0 + a:s0 + b]
                    keep = np.zeros(e0 - s0, dtype=bool)
                    keep[a:b] = ~g[s0 + a:s0 + b]
                    if (keep != m[s0:e0]).any():
                        m[s0:e0] = keep
                        again = True
        if not again:
            break
    return P, W


#: A held foot whose lowest surface point stays higher than this fraction of the hip height above its clearance
#: (:data:`SOLE_CLEARANCE`: together 9.9 mm at 0.9 m hips, within issue 25's 1 cm) misses its lock as one that
#: slides off it does.
LIFT_MISS = 0.006


#: A planted sole is put this fraction of the hip height above the ground (4.5 mm at 0.9 m): a foot turned a
#: little by the leg's joint limits then still stays out of the ground.
SOLE_CLEARANCE = 0.005
REACH = 0.0


def _lock_pass(figure: Figure, P: Array, W: Array, nb: int, ground: float,
               masks: dict[str, tuple[Bool, Bool]], lift: dict[str, Bool], hip: float, legs: tuple[Leg, ...],
               soles: list[_Sole], max_step: float = np.inf, gave: dict[str, Bool] | None = None
               ) -> tuple[Array, Array, list[tuple[Array, Array]]]:
    """One pass over all frames: goals, the hips lowered where needed, the leg IK → (poses, their world matrices,
    (goal, w) per leg); ``W``: the world matrices of ``P``.

    The goal's height puts the foot's lowest surface point (the foot turned by Q about the ankle) on the ground
    during a contact, blended in and out with the lock; elsewhere it only lifts a foot out of the ground (where
    ``lift``), eased in and out but never into a held frame (:func:`_off_held`). ``soles``: each foot's surface
    points about its ankle in the clip (F, V, 3); ``nb``: the blend in frames; ``hip``: the hip height (the sole's
    clearance is its :data:`SOLE_CLEARANCE`); up is the figure's (``figure.up``); ``gave``: per leg's side, the frames
    where a contact gave way (:func:`_goal`'s ``bridge``).
    """
    P, F, names, k, clear = P.copy(), P.shape[0], figure.node_names, up_index(figure.up), SOLE_CLEARANCE * hip
    feet: list[HeldLeg] = []
    planned: list[tuple[Array, _Sole]] = []  # per leg: its sole's lowest point below the ankle as the goal has it
    weights: list[tuple[Array, Array]] = []
    for leg, rel in zip(legs, soles, strict=True):
        bridge = None if gave is None else gave[leg.side]
        foot, below = _held_leg_kept(figure, W, leg, rel, masks[leg.side], lift[leg.side], nb, ground, clear, bridge)
        feet.append(foot)
        planned.append((below, rel))
        weights.append((foot.goal, foot.w))
    asked = feet  # what the pelvis answers: a biped's frames given up still ask it down (as if held: its neighbours
    # keep the drop that the frames given up needed and did not get)
    if len(legs) == 2 and gave is not None and any(gave[leg.side].any() for leg in legs):
        asked = [_held_leg(figure, W, leg, rel, rejoined_masks(masks[leg.side], gave[leg.side]), lift[leg.side], nb,
                           ground, clear, None)[0] for leg, rel in zip(legs, soles, strict=True)]
    # the pelvis comes down where a locked leg could not reach its goal and up where a planted one would have to bend
    # further than the clip's knee does, and shifts along the ground where the two ask for both (smoothly)
    shift = pelvis_offset(asked, W, names, k, nb) if len(legs) == 2 else np.zeros((F, 3))  # four legs: as given
    moved = np.abs(shift).max(axis=1) > 0
    if moved.any():
        M = np.tile(np.eye(4), (F, 1, 1))
        M[:, :3, 3] = shift
        P = _carry(figure, P, M, W)
        W = _carried_world(figure, P, W)  # the nodes the lock reads, moved with the hips
    # every leg at once; where the hips moved, the feet stay where the clip had them
    P = held_legs_ik(figure, P, W, [(f, f.goal, f.active | moved) for f in feet], max_step, k)
    P, W1 = _sole_kept(figure, P, W, feet, planned, moved, max_step, k)
    return P, W1, weights


def _held_leg(figure: Figure, W: Array, leg: Leg, rel: _Sole, mask: tuple[Bool, Bool], lift: Bool, nb: int,
              ground: float, clear: float, bridge: Bool | None) -> tuple[HeldLeg, Array]:
    """One leg as a pass drives it (:func:`_goal` at the height that puts the sole ``clear`` above the ground while
    held, lifted out of the ground elsewhere where ``lift``), and its sole's lowest point below the ankle (F,)."""
    names, k, F = figure.node_names, up_index(figure.up), W.shape[0]
    ih, ik_, ia, it = (names.index(n) for n in (leg.hip, leg.knee, leg.ankle, leg.toe))
    A, toe, Hp, Kp = W[:, ia, :3, 3], W[:, it, :3, 3], W[:, ih, :3, 3], W[0, ik_, :3, 3]
    full = float(np.linalg.norm(Kp - Hp[0]) + np.linalg.norm(A[0] - Kp))
    d0 = _norm(A - Hp, axis=1)
    reach = min(max(float(d0.max()), REACH * full), (1 - 1e-9) * full)  # REACH_PATCH
    goal, w, Q, src = _goal(A, *mask, toe, nb, Hp, reach - SOFT * full, k, bridge)
    if rel.count:  # the foot's surface about the ankle, turned by Q: its lowest point below the ankle
        below = rel.below(Q[:, k])
        off = ground + clear - below - A[:, k]  # the ankle's rise (or fall) that puts the sole on the ground
    else:  # no surface under this foot (a drawn leaf): its height stays the clip's; only the ground is held
        below, off = np.zeros(F), np.zeros(F)
    goal[:, k] = A[:, k] + w * np.where(src >= 0, off[np.maximum(src, 0)], 0.0)  # carried, as the lock
    sole = goal[:, k] + below
    deficit = np.where(lift & (sole < ground + clear), ground + clear - sole, 0.0)  # out of the ground
    if deficit.max() > 0:
        deficit = _off_held(smooth_max(deficit, nb), deficit, w >= 1.0, nb)
        goal[:, k] += deficit
    twist = twist_weight(*mask, W[:, ia, :3, :3], k, nb) if swivels(figure, leg.ankle) else None  # two turns only
    return HeldLeg(leg, goal, (w > 0) | (deficit > 0), Q, reach, float(d0.min()), w, d0, twist), below


#: legs as a lock pass drives them, by their inputs (figure, W and sole by identity: every pass of a call reads the
#: same; the rest by value): a later pass makes again only the legs whose masks, lift or bridge changed. Read-only.
_HELD: Recent[tuple[HeldLeg, Array]] = Recent(8)


def _held_leg_kept(figure: Figure, W: Array, leg: Leg, rel: _Sole, mask: tuple[Bool, Bool], lift: Bool, nb: int,
                   ground: float, clear: float, bridge: Bool | None) -> tuple[HeldLeg, Array]:
    """:func:`_held_leg`, kept for the same inputs (:data:`_HELD`)."""
    def make() -> tuple[HeldLeg, Array]:
        foot, below = _held_leg(figure, W, leg, rel, mask, lift, nb, ground, clear, bridge)
        for a in (foot.goal, foot.active, foot.Q, foot.w, foot.d_clip, foot.twist, below):
            if isinstance(a, np.ndarray):
                a.setflags(write=False)
        return foot, below

    key = (id(figure), id(W), id(rel), leg, nb, ground, clear, mask[0].tobytes(), mask[1].tobytes(), lift.tobytes(),
           None if bridge is None else bridge.tobytes())
    return _HELD.fetch(key, (figure, W, rel), make)


def _sole_kept(figure: Figure, P: Array, W: Array, feet: list[HeldLeg], planned: list[tuple[Array, _Sole]], moved: Bool,
               max_step: float, k: int) -> tuple[Array, Array]:
    """(poses, their world matrices): the leg IK again where a foot's sole ends up lower than its goal put it (or off it
    while held): the foot as the leg's joints turned it, R = R_ankle'·R_ankleᵀ (an ankle of fewer DOFs than a turn, or
    at its limits, turns the foot other than asked), has its lowest point b' = min_v (R·s_v)·ê_up below the ankle where
    the goal assumed b; the goal's height moves by b − b' (where b − b' > 0, and both ways while held) and the IK is run
    once more from the same world transforms ``W``."""
    names = figure.node_names
    hips = [names.index(f.leg.hip) for f in feet]  # only the legs' joints changed since W: FK of them alone
    fresh = _fk_below(figure, P, hips)  # the legs' nodes (the whole W is made once, for the poses handed back)
    again: list[tuple[HeldLeg, Array, Bool]] = []  # the legs to solve again, all at once
    for f, (below, rel) in zip(feet, planned, strict=True):
        if not rel.count or not f.active.any():
            continue
        ia = names.index(f.leg.ankle)
        R = _rotation(fresh[ia][:, :3, :3]) @ np.swapaxes(_rotation(W[:, ia, :3, :3]), 1, 2)
        fix = below - rel.below(R[:, k])  # R·s then its up component: s·(row k of R)
        fix = np.where(f.active, np.where(f.w >= 1.0, fix, np.maximum(fix, 0.0)), 0.0)
        if np.abs(fix).max() > 1e-4 * leg_length(W[0], names, f.leg):
            goal = f.goal.copy()
            goal[:, k] += fix
            again.append((f, goal, f.active | moved))
    if not again:
        return P, _world_below(figure, P, W, hips, fresh)
    P = held_legs_ik(figure, P, W, again, max_step, k)
    return P, _world_below(figure, P, W, hips)
