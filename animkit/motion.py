"""Motion on the ground: foot contacts, foot locking, motion measures, root motion, loops and aligned blends.

**Contacts.** A foot point (the heel: the ankle joint; the toe: the toe joint) is in contact at frame f when

    h(f) − h₅ ≤ height · H      and      |v_xz(f)| ≤ speed · H  (per second)

with h the point's height, h₅ its 5th percentile over the clip (its planted height, robust to a stray
frame such as the T-pose that opens CMU's BVH conversions), v_xz its horizontal velocity (central differences) and H the
figure's hip height at rest (its leg length), so the thresholds follow the figure's size (defaults
``height = 0.04``, ``speed = 0.5``). Gaps of up to ``gap`` frames close and runs shorter than ``min_frames`` drop.

**Foot locking.** During a heel contact the ankle is held at one point over the whole contact (the point of
its path the leg reaches best: a sliding foot is held near its middle); during a toe contact with the heel down the
foot turns so the toe stays too, and when the heel lifts the toe stays where the heel left it and the foot turns
about it (ankle goal = toe lock − Q·(toe − ankle) at f). The lock holds in full over the whole contact and is
eased in over ``blend`` frames before it and out over ``blend`` after it (the lock's offset from the clip carried
and faded). Its height puts the foot's lowest *surface* point (the skinned mesh, else the drawn geometry:
:mod:`animkit.surface`) on the ground (plus 0.5 % of the hip height) while planted and lifts it out of the ground
elsewhere, and it is reached by the two-bone leg IK batched over frames (:func:`animkit.ik.two_bone_angles`): the
knee stays in the plane of the clip's own knee (its bend axis, fixed in the thigh's frame, so it never flips) and
within the clip's own range of bend (soft stops); a swinging leg bent to its limit keeps its foot's height; a biped's
pelvis comes down where a held foot is out of reach and up where a planted knee would bend past the clip's; the
foot keeps its world orientation from the clip. For a retarget, pass the source's contacts carried to the target
(``contacts=``: :func:`animkit.motion_measures.carry_contacts`), as ``animkit retarget`` and the batch do. Locking
never makes a clip worse: a stretch of frames whose foot surface goes further under the ground, whose knee changes
between frames by more than the clip's largest change, or whose own held foot slides faster, has its contacts left
unlocked (:attr:`LockResult.unlocked` says which and why).

**Measures** (``measure``, the lock's own bookkeeping). Skate: horizontal travel of a foot point per frame it is
in contact (mean, mm); penetration: how far the feet's lowest surface point goes under the ground (mm); knee pop:
the largest frame-to-frame change of the knee angle (degrees). Lengths in mm take ``metres_per_unit`` (default: 1
when the hip height lies in 0.3–3 units, else 0.95 m / hip height — an adult's hips — as for CMU BVH, whose unit
is 1/0.45 inch). The measures that judge a clip as the eye does (skate over the frames a foot should be planted,
in mm/s; surface heights; travel, facing, joint speeds, limits, bone directions) are
:func:`animkit.motion_measures.measure_motion`.

**Root motion.** The root's ground trajectory (hips projected on the ground) and heading (the yaw of the hips'
rest forward direction) as a rigid ground transform M(f) = [R_up(ψ(f)), p(f)]. ``in_place`` applies
M(0)·M(f)⁻¹ to the root, ``with_root_motion`` puts a trajectory back; ``loop_poses`` repeats a cycle with
cycle k carried by Δᵏ, Δ = M(end)·M(0)⁻¹, so offsets and headings add up; ``aligned_crossfade`` carries the
second clip by M_a(start)·M_b(0)⁻¹ so the blend starts where and facing where the first clip is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .errors import AnimkitError
from .figure import Figure
from .humanoid import match_figure
from .ik import two_bone_angles
from .quadruped import LEGS, match_quadruped_figure
from .retarget import RetargetError, hip_height, read_dofs, retarget_full, up_index
from .surface import BodySurface, body_surface, descendants
from .transforms import (
    matrix_about_axis,
    matrix_aligning,
    matrix_from_rotation_vector,
    rotation_vector_from_matrix,
)

if TYPE_CHECKING:
    from .keyframes import Clip
    from .mesh import Mesh
    from .scene import UpAxis

__all__ = ["MotionError", "Leg", "legs_of", "Contacts", "detect_contacts", "MotionMeasures", "measure",
           "metres_per_unit", "knee_angles", "SKATE_WINDOW", "windowed_speed", "LockResult", "lock_feet",
           "RootMotion", "root_motion", "in_place", "with_root_motion", "loop_poses", "aligned_crossfade"]

Array = NDArray[np.float64]
Bool = NDArray[np.bool_]


class MotionError(AnimkitError):
    """Motion work that cannot be done: no legs to find, a clip too short to measure."""


@dataclass(frozen=True)
class Leg:
    """One leg's nodes: hip (turns the thigh), knee (the shin), ankle (the foot), toe, and the toe's tip."""

    side: str
    hip: str
    knee: str
    ankle: str
    toe: str
    tip: str


def legs_of(figure: Figure) -> tuple[Leg, ...]:
    """The figure's legs from :mod:`animkit.humanoid` (upper leg, lower leg, foot, toe; the tip is the toe's leaf),
    or a quadruped's four from :mod:`animkit.quadruped` (sides ``fl``, ``fr``, ``hl``, ``hr``).

    MotionError when no leg has its upper leg, lower leg and foot, or a knee is not the hip's child.
    """
    h = match_figure(figure)
    legs = []
    for s in ("l", "r"):
        names = [h.get(f"{b}_{s}") for b in ("upper_leg", "lower_leg", "foot")]
        if not all(names):
            continue
        hip, knee, ankle = (str(n) for n in names)
        if figure.parent_of(knee) != hip or figure.parent_of(ankle) != knee:
            raise MotionError(f"leg {s}: expected {knee!r} to be the child of {hip!r} and {ankle!r} of {knee!r}")
        toe = h.get(f"toe_{s}")
        if toe is None:
            kids = [a.child.name for a in figure.node(ankle).arcs()]
            toe = kids[0] if kids else ankle
        tip = toe
        while True:
            kids = [a.child.name for a in figure.node(tip).arcs()]
            if len(kids) != 1:
                break
            tip = kids[0]
        legs.append(Leg(s, hip, knee, ankle, toe, tip))
    if not h.is_humanoid:  # a quadruped: its four legs (fl, fr, hl, hr), the lower two bones locked by the leg IK
        q = match_quadruped_figure(figure)
        if q.is_quadruped:
            legs = []
            for s in LEGS:
                hip, knee, ankle = q.leg(s)[:3]
                toe = q.bones.get(f"toe_{s}", ankle)
                legs.append(Leg(s, hip, knee, ankle, toe, _tip_of(figure, toe)))
    if not legs:
        raise MotionError(f"figure {figure.name!r}: found no leg (upper leg, lower leg, foot); "
                          f"humanoid bones found: {', '.join(h.bones) or 'none'}")
    return tuple(legs)


def _tip_of(figure: Figure, node: str) -> str:
    """The end of ``node``'s single-child path."""
    while len(kids := [a.child.name for a in figure.node(node).arcs()]) == 1:
        node = kids[0]
    return node


def _intervals(mask: Bool) -> list[tuple[int, int]]:
    """Runs of True as half-open [start, end)."""
    m = np.concatenate([[False], mask, [False]]).astype(np.int8)
    d = np.diff(m)
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist(), strict=True))


def _clean(mask: Bool, gap: int, min_frames: int) -> Bool:
    out = mask.copy()
    runs = _intervals(out)
    for (_, e0), (s1, _) in zip(runs, runs[1:], strict=False):
        if s1 - e0 <= gap:
            out[e0:s1] = True
    for s, e in _intervals(out):
        if e - s < min_frames:
            out[s:e] = False
    return out


@dataclass(frozen=True, eq=False)
class Contacts:
    """Contact masks (F, K) of foot points, the ground height, and the thresholds used (in figure units)."""

    points: tuple[str, ...]
    mask: Bool
    ground: float
    ground_found: bool
    height: float
    speed: float

    def intervals(self, point: str) -> list[tuple[int, int]]:
        """[start, end) frame runs during which ``point`` is in contact."""
        return _intervals(self.mask[:, self.points.index(point)])

    def table(self, fps: float) -> str:
        """One line per point: its contact intervals in frames and seconds."""
        lines = [f"ground {self.ground:.4g} ({'found' if self.ground_found else 'given'}); contact when "
                 f"within {self.height:.3g} of its lowest and slower than {self.speed:.3g} per s"]
        for p in self.points:
            runs = self.intervals(p)
            spans = ", ".join(f"{s}-{e - 1} ({s / fps:.2f}-{(e - 1) / fps:.2f} s)" for s, e in runs) or "none"
            lines.append(f"  {p}: {len(runs)} contacts: {spans}")
        return "\n".join(lines)


#: Skate is a ground speed over this many seconds: |x(f + w) − x(f)| / w within a contact (frame-rate independent,
#: and blind to marker jitter: 0.5 mm of noise per frame at 120 fps is 60 mm/s frame to frame).
SKATE_WINDOW = 0.1


def windowed_speed(X: Array, mask: NDArray[np.bool_], fps: float, window: float = SKATE_WINDOW) -> Array:
    """|x(f + w) − x(f)| · fps / w for the frames f of each run of ``mask`` (w = round(window · fps), at most the
    run's length − 1; NaN elsewhere and on a run's last w frames); X (F, d)."""
    out = np.full(X.shape[0], np.nan)
    w0 = max(1, int(round(window * fps)))
    for a, b in _intervals(mask):
        w = min(w0, b - a - 1)
        if w < 1:
            continue
        out[a:b - w] = np.linalg.norm(X[a + w:b] - X[a:b - w], axis=1) * fps / w
    return out


def _foot_points(legs: tuple[Leg, ...]) -> tuple[str, ...]:
    pts: list[str] = []
    for leg in legs:
        pts += [leg.ankle] + ([leg.toe] if leg.toe != leg.ankle else [])
    return tuple(pts)


def _lowest_points(legs: tuple[Leg, ...]) -> list[str]:
    return sorted({n for leg in legs for n in (leg.ankle, leg.toe, leg.tip)})


def detect_contacts(figure: Figure, poses: Array, fps: float, *, up: UpAxis | None = None, ground: float | None = None,
                    height: float = 0.04, speed: float = 0.5, gap: int = 2, min_frames: int = 3,
                    legs: tuple[Leg, ...] | None = None) -> Contacts:
    """Contacts of each leg's heel (ankle) and toe from height and speed; see the module's docstring."""
    up = figure.up if up is None else up
    legs = legs_of(figure) if legs is None else legs
    P = np.atleast_2d(figure.check_pose(poses))
    if P.shape[0] < 3:
        raise MotionError(f"contacts need at least 3 frames, got {P.shape[0]}")
    k = up_index(up)
    names = figure.node_names
    pos = figure.world_positions(P)
    H = hip_height(figure, legs[0].hip, up)
    low = pos[:, [names.index(n) for n in _lowest_points(legs)], k]
    found = ground is None
    g = float(np.percentile(low.min(axis=1), 2.0)) if ground is None else float(ground)
    pts = _foot_points(legs)
    X = pos[:, [names.index(n) for n in pts]]
    h = X[..., k]
    horiz = [i for i in range(3) if i != k]
    v = np.linalg.norm(np.gradient(X[..., horiz], axis=0), axis=-1) * fps
    mask = (h - np.percentile(h, 5.0, axis=0) <= height * H) & (v <= speed * H)
    mask = np.stack([_clean(mask[:, j], gap, min_frames) for j in range(len(pts))], axis=1)
    return Contacts(pts, mask, g, found, height * H, speed * H)


@dataclass(frozen=True)
class MotionMeasures:
    """Foot skate (mm per contact frame), penetration (mm), knee pop (degrees), per point/leg and overall."""

    skate_mm: float
    skate_by_point: dict[str, float]
    contact_frames: int
    penetration_mm: float
    knee_pop_deg: float
    knee_pop_by_leg: dict[str, float]
    metres_per_unit: float

    def as_dict(self) -> dict[str, object]:
        return {"skate_mm_per_contact_frame": self.skate_mm, "skate_by_point": self.skate_by_point,
                "contact_frames": self.contact_frames, "penetration_mm": self.penetration_mm,
                "knee_pop_deg": self.knee_pop_deg, "knee_pop_by_leg": self.knee_pop_by_leg,
                "metres_per_unit": self.metres_per_unit}


def metres_per_unit(figure: Figure, legs: tuple[Leg, ...], up: UpAxis | None = None) -> float:
    """1 when the hip height lies in 0.3–3 units (metres), else 0.95 / hip height (an adult's hips)."""
    up = figure.up if up is None else up
    H = hip_height(figure, legs[0].hip, up)
    return 1.0 if 0.3 <= H <= 3.0 else 0.95 / H


def knee_angles(figure: Figure, poses: Array, legs: tuple[Leg, ...]) -> Array:
    """(F, legs): the angle between thigh and shin, radians (0 straight)."""
    pos = figure.world_positions(np.atleast_2d(poses))
    names = figure.node_names
    out = []
    for leg in legs:
        a = pos[:, names.index(leg.knee)] - pos[:, names.index(leg.hip)]
        b = pos[:, names.index(leg.ankle)] - pos[:, names.index(leg.knee)]
        c = np.einsum("fi,fi->f", a, b) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
        out.append(np.arccos(np.clip(c, -1.0, 1.0)))
    return np.stack(out, axis=1)


def measure(figure: Figure, poses: Array, contacts: Contacts, *, up: UpAxis | None = None,
            legs: tuple[Leg, ...] | None = None, unit: float | None = None, surface: BodySurface | None = None,
            fps: float | None = None) -> MotionMeasures:
    """Skate, penetration and knee pops of ``poses`` against ``contacts`` (see the module's docstring).

    With ``fps``, skate per contact frame is the ground speed over :data:`SKATE_WINDOW` divided by ``fps``
    (:func:`windowed_speed`); without it, the frame-to-frame travel.

    Penetration is how far the feet's lowest *surface* point (``surface``, by default the drawn geometry:
    :func:`animkit.surface.body_surface`) goes under ``contacts.ground``; joint centres never count.
    """
    up = figure.up if up is None else up
    legs = legs_of(figure) if legs is None else legs
    P = np.atleast_2d(figure.check_pose(poses))
    u = metres_per_unit(figure, legs, up) if unit is None else float(unit)
    k = up_index(up)
    names = figure.node_names
    W = figure.world_batch(P)
    pos = W[:, :, :3, 3]
    horiz = [i for i in range(3) if i != k]
    skate: dict[str, float] = {}
    total, frames = 0.0, 0
    for j, p in enumerate(contacts.points):
        X = pos[:, names.index(p)][:, horiz]
        if fps is None:
            step = np.linalg.norm(np.diff(X, axis=0), axis=1)[contacts.mask[1:, j] & contacts.mask[:-1, j]]
        else:  # the ground speed over SKATE_WINDOW, per frame
            step = windowed_speed(X, contacts.mask[:, j], fps)
            step = step[np.isfinite(step)] / fps
        n = int(step.size)
        travel = float(step.sum())
        skate[p] = 1000.0 * u * travel / n if n else 0.0
        total += travel
        frames += n
    low = _foot_lows(figure, W, legs, surface, k)
    pen = max(0.0, float(contacts.ground - np.nanmin(low))) * 1000.0 * u
    knee = knee_angles(figure, P, legs)
    pops = np.degrees(np.abs(np.diff(knee, axis=0))).max(axis=0) if len(P) > 1 else np.zeros(len(legs))
    by_leg = {leg.side: float(x) for leg, x in zip(legs, pops, strict=True)}
    return MotionMeasures(1000.0 * u * total / frames if frames else 0.0, skate, frames, pen,
                          float(pops.max()), by_leg, u)


def _foot_lows(figure: Figure, W: Array, legs: tuple[Leg, ...], surface: BodySurface | None, k: int) -> Array:
    """(F, legs): the lowest surface point of each foot (the ankle and everything below it)."""
    surface = body_surface(figure) if surface is None else surface
    return surface.lowest(W, k, [descendants(figure, leg.ankle) for leg in legs])


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


def _frames_batch(a: Array, b: Array) -> Array:
    """Columns (â, b̂⊥, â × b̂⊥) per frame, (F, 3, 3)."""
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b - np.einsum("fi,fi->f", b, a)[:, None] * a
    b = b / np.maximum(np.linalg.norm(b, axis=-1, keepdims=True), 1e-300)
    return np.stack([a, b, np.cross(a, b)], axis=-1)


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
    room = np.maximum(np.linalg.norm(clip - hip, axis=1), reach)  # never shorter than the clip's own
    over = np.maximum(np.linalg.norm(off + (clip - hip)[None], axis=-1) - room, 0.0).max(axis=1)
    return cand[int(np.argmin(over + 0.01 * np.linalg.norm(off, axis=-1).max(axis=1)))]


def _goal(clip: Array, mask_heel: Bool, mask_toe: Bool, toe: Array, blend: int, hip: Array | None = None,
          reach: float = np.inf, up: int = 1) -> tuple[Array, Array, Array, NDArray[np.intp]]:
    """Ankle goals (F, 3), their weights (F,), the foot's correction turns (F, 3, 3) and, per frame, the frame
    whose lock it eases from (itself during a contact, the contact's first frame before it and its last frame
    after it, −1 elsewhere).

    Heel contact: the ankle stays at one point over the contact (:func:`_lock_point` given the ``hip`` positions
    and the leg's ``reach``, else the clip's mean there). Toe contact with the heel also down: the foot turns (Q)
    so the toe stays where it landed too, and keeps that turn while it pivots on its toe alone (ankle = toe
    lock − Q·(toe − ankle)). The weight is 1 over the whole contact [s, e) and eases in over ``blend`` frames
    before it and out over ``blend`` after it, w = smoothstep(min(f − s + blend + 1, e + blend − f) / (blend +
    1)); around a contact the lock's offset from the clip is carried (goal = clip + lock(s) − clip(s) before it,
    clip + lock(e − 1) − clip(e − 1) after it), goal = (1 − w)·clip + w·lock, Q scaled by w, so nothing pops.
    """
    F = clip.shape[0]
    rel = toe - clip  # the toe's offset from the ankle in the clip, at each frame
    heel_runs, toe_runs = _intervals(mask_heel), _intervals(mask_toe)
    heel_lock = np.full((F, 3), np.nan)
    for s, e in heel_runs:  # a heel that comes down on a planted toe stays where that toe puts it
        ts = [t for t in toe_runs if t[0] < s < t[1]]
        if ts:
            heel_lock[s:e] = toe[ts[0][0]:s].mean(axis=0) - rel[s]
        elif hip is None:
            heel_lock[s:e] = clip[s:e].mean(axis=0)
        else:
            heel_lock[s:e] = _lock_point(clip[s:e], hip[s:e], reach, up)
    toe_lock = np.full((F, 3), np.nan)
    for s, e in toe_runs:
        toe_lock[s:e] = heel_lock[s] + rel[s] if mask_heel[s] else toe[s:e].mean(axis=0)
    both = mask_heel & mask_toe
    only_toe = mask_toe & ~mask_heel
    rv = np.zeros((F, 3))
    if both.any():
        rv[both] = rotation_vector_from_matrix(matrix_aligning(rel[both], toe_lock[both] - heel_lock[both]))
    for s, e in _intervals(only_toe):  # the turn holds while the foot pivots on its toe after standing on both
        if s > 0 and both[s - 1]:
            rv[s:e] = rv[s - 1]
    lock = clip.copy()
    lock[mask_heel] = heel_lock[mask_heel]
    Q = matrix_from_rotation_vector(rv)
    lock[only_toe] = toe_lock[only_toe] - np.einsum("fij,fj->fi", Q[only_toe], rel[only_toe])
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
    src = np.where(locked, idx, np.where(ease, at, -1))
    Q = matrix_from_rotation_vector(rv * w[:, None])
    return (1.0 - w)[:, None] * clip + w[:, None] * goal, w, Q, src


def _leg_ik(figure: Figure, P: Array, W: Array, leg: Leg, goal: Array, active: Bool, Q: Array, reach: float,
            near: float = 0.0, max_step: float = np.inf, up: int = 1, planted: Bool | None = None) -> Array:
    """Poses with ``leg``'s ankle on ``goal`` where ``active``: the two-bone IK for all frames at once.

    The knee bends in the plane of the clip's own knee: its bend axis n = thigh × shin, averaged in the thigh's
    frame over the clip, so it never flips; the knee lies on the clip's side of the hip–goal line. The foot
    keeps its world orientation from the clip, turned by Q. The hip–ankle distance stays within [near, reach]
    (the clip's own range: the knee bends no further, and straightens no further, than the clip's does).
    """
    if not active.any():
        return P
    P = P.copy()
    names = figure.node_names
    F = P.shape[0]
    ih, ik_, ia = (names.index(n) for n in (leg.hip, leg.knee, leg.ankle))
    Hp, K, A = W[:, ih, :3, 3], W[:, ik_, :3, 3], W[:, ia, :3, 3]
    Rh, Rk, Ra = (_rotation(W[:, i, :3, :3]) for i in (ih, ik_, ia))  # a scaled armature (Mixamo's 0.01): turns
    l1 = float(np.linalg.norm(K[0] - Hp[0]))
    l2 = float(np.linalg.norm(A[0] - K[0]))
    thigh, shin = K - Hp, A - K
    n_local = np.einsum("fji,fj->i", Rh, np.cross(thigh, shin))  # the bend axis in the thigh's frame, summed
    if np.linalg.norm(n_local) < 1e-12 * l1 * l2 * F:
        raise MotionError(f"leg {leg.side}: the knee never bends in this clip; no knee plane to keep")
    n_local /= np.linalg.norm(n_local)
    n_w = Rh @ n_local
    to_goal = goal - Hp
    d = np.linalg.norm(to_goal, axis=1)
    dd = _soft_clip(d, min(near, reach), reach, SOFT * (l1 + l2))
    if np.isfinite(max_step):
        dd = _rate_limited(dd, np.linalg.norm(A - Hp, axis=1), active, l1, l2, max_step)
    u = _keep_height(to_goal, d, dd, up, planted)
    n_p = n_w - np.einsum("fi,fi->f", n_w, u)[:, None] * u
    n_p /= np.linalg.norm(n_p, axis=1, keepdims=True)
    u0 = (A - Hp) / np.linalg.norm(A - Hp, axis=1, keepdims=True)
    side = np.sign(np.einsum("fi,fi->", thigh - np.einsum("fi,fi->f", thigh, u0)[:, None] * u0, np.cross(n_w, u0)))
    v = (side if side != 0 else 1.0) * np.cross(n_p, u)
    alpha, _ = two_bone_angles(l1, l2, dd)
    K_new = Hp + l1 * (np.cos(alpha)[:, None] * u + np.sin(alpha)[:, None] * v)
    A_new = Hp + dd[:, None] * u
    R_thigh = _frames_batch(K_new - Hp, n_p) @ np.swapaxes(_frames_batch(thigh, n_w), 1, 2) @ Rh
    R_shin = _frames_batch(A_new - K_new, n_p) @ np.swapaxes(_frames_batch(shin, n_w), 1, 2) @ Rk
    parent = figure.parent_of(leg.hip)
    Rp = _rotation(W[:, names.index(parent), :3, :3]) if parent is not None else np.broadcast_to(np.eye(3), (F, 3, 3))
    starts = figure.joint_dofs
    lim = figure.dof_limits()
    for node, R_world, R_above in ((leg.hip, R_thigh, Rp), (leg.knee, R_shin, R_thigh), (leg.ankle, Q @ Ra, R_shin)):
        arc = figure.node(node).parent_arc
        assert arc is not None
        idx = np.asarray(starts[arc.joint.name])
        if not idx.size:
            continue
        R_local = np.swapaxes(R_above[active] @ _rotation(arc.L[:3, :3]), 1, 2) @ R_world[active]
        old = P[np.ix_(active, idx)]
        vals = read_dofs(arc.joint, R_local, None, old)
        rev = np.array([dof.revolute for dof in arc.joint.dofs])
        vals[:, rev] = _nearest_turns(vals[:, rev], old[:, rev])
        P[np.ix_(active, idx)] = np.clip(vals, lim[idx, 0], lim[idx, 1])
    return P


def _rotation(M: Array) -> Array:
    """The turn of a uniformly scaled 3×3 block (…, 3, 3): M / |M e₁| (a node under Mixamo's 0.01-scaled armature has
    world blocks 0.01·R, whose transpose is not their inverse)."""
    return M / np.linalg.norm(M[..., :, :1], axis=-2, keepdims=True)


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
    hn = np.linalg.norm(h, axis=1, keepdims=True)
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
    for s, e in _intervals(active):
        for f in range(max(s, 1), e):  # forwards from the frame before the run
            th[f] = min(max(th[f], th[f - 1] - step), th[f - 1] + step)
        for f in range(min(e, len(th) - 1) - 1, s - 1, -1):  # backwards into the frame after it
            th[f] = min(max(th[f], th[f + 1] - step), th[f + 1] + step)
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


def _nearest_turns(new: Array, old: Array) -> Array:
    """``new`` moved by whole turns to lie closest to ``old``."""
    return old + (new - old + np.pi) % (2 * np.pi) - np.pi


@dataclass(frozen=True, eq=False)
class _Judge:
    """The clip as given, as the never-worse checks read it: its poses, knee angles (F, legs) and feet's lowest
    surface points (F, legs), the ground, the surface, the up index, metres per unit, the blend in frames and the
    contacts."""

    figure: Figure
    P0: Array
    legs: tuple[Leg, ...]
    knee0: Array
    low0: Array
    ground: float
    surface: BodySurface
    k: int
    unit: float
    nb: int
    contacts: Contacts


def _unlock_worse(judge: _Judge, lock: Callable[[], Array], masks: dict[str, tuple[Bool, Bool]],
                  lift: dict[str, Bool], notes: list[str]) -> tuple[Array, dict[str, tuple[Bool, Bool]]]:
    """``lock()`` (which reads ``masks`` and ``lift``) again until no stretch is worse than the clip as given
    (:func:`_worse_stretches`; ≤ 12 times): each worse stretch's locks are dropped (the leg at fault's own there, else
    the other leg's: a biped's leg moved only because the pelvis moved for the other's lock). Then the legs still
    made worse lose every lock, and if that is still worse, the clip is returned as given (masks then empty)."""
    F = judge.P0.shape[0]
    for _ in range(12):
        P = lock()
        worse = _worse_stretches(judge, P, masks)
        if not worse:
            return P, masks
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
    P = lock()
    if _worse_stretches(judge, P, masks):
        notes.append("feet left as given: every lock made some stretch worse")
        return judge.P0, {}
    return P, masks


def lock_feet(figure: Figure, poses: Array, fps: float, *, up: UpAxis | None = None, ground: float | None = None,
              contacts: Contacts | None = None, blend: float = 0.2, legs: tuple[Leg, ...] | None = None,
              unit: float | None = None, meshes: Sequence[Mesh] = ()) -> LockResult:
    """Feet held where they land during contacts, by the two-bone leg IK over all frames at once.

    ``ground``: the floor's height (default 0, the world's floor plane; ``contacts``' own ground is not used).
    During a contact the foot's lowest *surface* point (``meshes``, a scene's skinned meshes, else the drawn
    geometry: :mod:`animkit.surface`) is put on the ground (:data:`SOLE_CLEARANCE` above it), and a foot under the
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
    on its paws: its contacts hold the paw (the toe) and the leg pivots about it. "Slides further" is judged per
    contact by its mean ground speed over half the blend (:data:`DRIFT_TOLERANCE`), not by the frame-to-frame path,
    which marker jitter dominates.
    """
    up = figure.up if up is None else up
    legs = legs_of(figure) if legs is None else legs
    P0 = np.atleast_2d(figure.check_pose(poses)).copy()
    F = P0.shape[0]
    g = 0.0 if ground is None else float(ground)
    c = contacts if contacts is not None else detect_contacts(figure, P0, fps, up=up, ground=g, legs=legs)
    c = dataclasses.replace(c, ground=g, ground_found=False)
    surface = body_surface(figure, meshes)
    before = measure(figure, P0, c, up=up, legs=legs, unit=unit, surface=surface, fps=fps)
    masks = {leg.side: (c.mask[:, c.points.index(leg.ankle)].copy(),
                        c.mask[:, c.points.index(leg.toe)].copy() if leg.toe in c.points else np.zeros(F, bool))
             for leg in legs}
    for leg in legs:  # a quadruped stands on its paws (the toe): its "ankle" is a hock or wrist off the ground, so
        # the paw is held and the leg pivots about it (ankle = toe lock − (toe − ankle) as the clip turns the foot)
        if leg.side not in ("l", "r") and leg.toe != leg.ankle:
            mh, mt = masks[leg.side]
            masks[leg.side] = (np.zeros(F, bool), mh | mt)
    lift = {leg.side: np.ones(F, dtype=bool) for leg in legs}  # where each foot may be lifted out of the ground
    nb = max(2, int(round(blend * fps)))
    k = up_index(up)
    u = metres_per_unit(figure, legs, up) if unit is None else float(unit)
    knee0 = knee_angles(figure, P0, legs)
    pop0 = 0.999 * float(np.abs(np.diff(knee0, axis=0)).max(initial=0.0))  # no knee turns faster than the clip's
    W0 = figure.world_batch(P0)
    low0 = _foot_lows(figure, W0, legs, surface, k)
    names = figure.node_names
    soles = [surface.positions(W0, descendants(figure, leg.ankle)) - W0[:, names.index(leg.ankle), None, :3, 3]
             for leg in legs]  # each foot's surface about its ankle, in the clip
    notes: list[str] = []
    judge = _Judge(figure, P0, legs, knee0, low0, g, surface, k, u, nb, c)
    def lock() -> Array:
        return _lock_held(figure, P0, fps, up, g, masks, lift, blend, legs, soles, pop0)

    P, masks = _unlock_worse(judge, lock, masks, lift, notes)
    after = measure(figure, P, c, up=up, legs=legs, unit=unit, surface=surface, fps=fps)
    if masks and after.skate_mm > before.skate_mm:  # the planted feet slide more in all: the legs whose own points
        # slide more lose their locks; if the feet still slide more, the clip is returned as given
        for leg in legs:
            pts = [p for p in dict.fromkeys((leg.ankle, leg.toe)) if p in c.points]
            if sum(after.skate_by_point[p] for p in pts) > sum(before.skate_by_point[p] for p in pts):
                masks[leg.side] = (np.zeros(F, bool), np.zeros(F, bool))
                lift[leg.side][:] = False
                notes.append(f"leg {leg.side} left unlocked: its planted points slid more in all")
        P, masks = _unlock_worse(judge, lock, masks, lift, notes)
        after = measure(figure, P, c, up=up, legs=legs, unit=unit, surface=surface, fps=fps)
        if (after.skate_mm > before.skate_mm or after.penetration_mm > before.penetration_mm + 1e-9
                or after.knee_pop_deg > before.knee_pop_deg + 1e-9):
            P, masks, after = P0, {}, before
            notes.append("feet left as given: the planted feet slid more in all")
    return LockResult(P, c, before, after, legs, tuple(dict.fromkeys(notes)), _held(c, legs, masks))


def _held(c: Contacts, legs: tuple[Leg, ...], masks: dict[str, tuple[Bool, Bool]]) -> Bool | None:
    """(F, K): the frames each of ``c.points`` was locked in the end (None when nothing was)."""
    if not masks:
        return None
    held = np.zeros_like(c.mask)
    for leg in legs:
        mh, mt = masks[leg.side]
        held[:, c.points.index(leg.ankle)] = mh
        if leg.toe in c.points:
            held[:, c.points.index(leg.toe)] = mt
    return held


#: A lock may leave a planted foot sliding this fraction of the hip height a frame faster than the clip as given
#: (its mean ground speed over the contact) before it is judged worse (0.09 mm a frame at 0.9 m hips: 11 mm/s at
#: 120 fps): the IK's soft stops and the ease in and out.
DRIFT_TOLERANCE = 0.0001


def _drift(X: Array, masks: list[tuple[int, Bool]], a: int, b: int, horiz: list[int], window: int) -> Array:
    """Per run of a leg's contacts (the union of its planted points' masks, ``masks``: node index, mask; clipped to
    [a, b)): the mean over its frames of the slowest planted point's ground speed over ``window`` frames
    (:func:`windowed_speed`, units per frame; NaN for a run too short to tell), as the skate measure takes it."""
    clipped = []
    for _, m in masks:
        c = np.zeros_like(m)
        c[a:b] = m[a:b]
        clipped.append(c)
    v = np.stack([windowed_speed(X[:, i][:, horiz], c, 1.0, float(window)) for (i, _), c in zip(masks, clipped,
                                                                                                 strict=True)])
    slowest = np.fmin.reduce(v, axis=0)
    out = [float(np.nanmean(slowest[s:e])) if np.isfinite(slowest[s:e]).any() else np.nan
           for s, e in _intervals(np.logical_or.reduce(clipped))]
    return np.asarray(out, dtype=float)


def _worse_stretches(judge: _Judge, P: Array, masks: dict[str, tuple[Bool, Bool]]) -> list[tuple[int, int, str, str]]:
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
    W = figure.world_batch(P)
    knee = knee_angles(figure, P, legs)
    low = _foot_lows(figure, W, legs, judge.surface, k)
    pos0 = figure.world_positions(judge.P0)
    tiny = 1e-9 * figure.size()
    clip_pop = float(np.abs(np.diff(knee0, axis=0)).max(initial=0.0))  # the clip's own largest knee change
    hip = hip_height(figure, legs[0].hip, "xyz"[k])  # type: ignore[arg-type]
    out: list[tuple[int, int, str, str]] = []
    horiz = [i for i in range(3) if i != k]
    for j, leg in enumerate(legs):
        ia = names.index(leg.ankle)
        pts = [names.index(p) for p in dict.fromkeys((leg.ankle, leg.toe)) if p in contacts.points]
        runs_of = [(i, contacts.mask[:, contacts.points.index(names[i])]) for i in pts]
        moved = np.linalg.norm(W[:, ia, :3, 3] - pos0[:, ia], axis=1) > tiny
        moved |= np.abs(knee[:, j] - knee0[:, j]) > 1e-9
        win = np.zeros(len(P), dtype=bool)  # each contact (held or not) with its ease either side, judged apart
        runs = []
        for s, e in _intervals(np.logical_or.reduce([masks[leg.side][0], masks[leg.side][1]]
                                                    + [m for _, m in runs_of])):
            win[max(0, s - nb):e + nb] = True
            if moved[max(0, s - nb):e + nb].any():
                runs.append((max(0, s - nb), min(len(P), e + nb)))
        runs += _intervals(moved & ~win)
        for s, e in runs:
            a, b = max(0, s - 1), min(len(P), e + 1)
            pen0 = max(0.0, float(np.nanmax(ground - low0[a:b, j], initial=-np.inf)))  # NaN: no surface there
            pen1 = max(0.0, float(np.nanmax(ground - low[a:b, j], initial=-np.inf)))
            pop0 = clip_pop
            pop1 = float(np.abs(np.diff(knee[a:b, j])).max(initial=0.0))
            if pen1 > pen0 + 1e-6 * figure.size():
                out.append((a, b, leg.side, f"the foot would go {1e3 * unit * pen1:.1f} mm under the ground (as given "
                            f"{1e3 * unit * pen0:.1f} mm)"))
            elif pop1 > pop0 + 1e-6:
                out.append((a, b, leg.side, f"the knee would change {np.degrees(pop1):.1f}° in a frame (as given "
                            f"at most {np.degrees(pop0):.1f}°)"))
            elif (masks[leg.side][0] | masks[leg.side][1])[a:b].any():  # a lock of its own that slides more (a
                # leg the pelvis moved, holding no lock, is judged by its surface and knee only)
                half = max(1, nb // 2)
                d0 = _drift(pos0, runs_of, a, b, horiz, half)
                d1 = _drift(W[:, :, :3, 3], runs_of, a, b, horiz, half)
                worse = np.flatnonzero(d1 > d0 + DRIFT_TOLERANCE * hip)  # NaN (too short to tell) compares False
                if worse.size:
                    v0, v1 = float(d0[worse[0]]), float(d1[worse[0]])
                    out.append((a, b, leg.side, f"a planted foot would slide {1e3 * unit * v1:.2f} mm a frame in "
                                f"its contact (as given {1e3 * unit * v0:.2f} mm)"))
    return out


def _lock_held(figure: Figure, P0: Array, fps: float, up: UpAxis, ground: float,
               masks: dict[str, tuple[Bool, Bool]], lift: dict[str, Bool], blend: float, legs: tuple[Leg, ...],
               soles: list[Array], max_step: float = np.inf) -> Array:
    """Passes of :func:`_lock_pass` until every lock holds (a lock the leg cannot hold keeps its longest run of
    frames held, the ankle on the ground within 2 % of the leg's length of its goal; ≤ 8 passes)."""
    names = figure.node_names
    k = up_index(up)
    P = P0
    for _ in range(8):
        P, goals = _lock_pass(figure, P0, fps, up, ground, masks, lift, blend, legs, soles, max_step)
        pos = figure.world_positions(P)
        again = False
        for leg, (goal, w) in zip(legs, goals, strict=True):
            ih, ik_, ia = (names.index(n) for n in (leg.hip, leg.knee, leg.ankle))
            length = float(np.linalg.norm(pos[0, ik_] - pos[0, ih]) + np.linalg.norm(pos[0, ia] - pos[0, ik_]))
            gap = pos[:, ia] - goal
            gap[:, k] = 0.0  # a foot short of its goal's height only is not sliding (the surface check judges it)
            miss = (w > 0.0) & (np.linalg.norm(gap, axis=1) > 0.02 * length)
            for m in masks[leg.side]:
                for s0, e0 in _intervals(m):
                    if miss[s0:e0].any():  # missed in the lock: its longest run of frames held stays locked (a
                        # miss in its ease, the foot in the air, is no slide)
                        runs = _intervals(~miss[s0:e0]) or [(0, 1)]
                        a, b = max(runs, key=lambda r: r[1] - r[0])
                        m[s0:e0] = False
                        m[s0 + a:s0 + b] = True
                        again = True
        if not again:
            break
    return P


def _smooth_max(x: Array, r: int) -> Array:
    """A max filter then a mean filter, both of half-width r: a bump that covers x and eases in and out."""
    pad = np.pad(x, r, mode="edge")
    wide = np.lib.stride_tricks.sliding_window_view(pad, 2 * r + 1).max(axis=1)
    pad = np.pad(wide, r, mode="edge")
    return np.lib.stride_tricks.sliding_window_view(pad, 2 * r + 1).mean(axis=1)


def _off_held(bump: Array, x: Array, held: Bool, r: int) -> Array:
    """max(x, s·bump): ``bump`` (covering x ≥ 0, a lift out of the ground) eased by s = smoothstep(min(t / r, 1)),
    t the frames to the nearest ``held`` frame (s = 0 there, where x = 0): no lift spread by :func:`_smooth_max`
    reaches a held frame (its goal already stands the sole on the ground), and near one the foot is lifted only as
    far as it must be (its sole kept on the ground)."""
    F = len(x)
    idx = np.arange(F)
    prev = np.maximum.accumulate(np.where(held, idx, -F - r))  # the last held frame up to f, the first from f on
    nxt = np.minimum.accumulate(np.where(held, idx, 2 * F + r)[::-1])[::-1]
    z = np.clip(np.minimum(idx - prev, nxt - idx) / r, 0.0, 1.0)
    return np.maximum(x, z * z * (3.0 - 2.0 * z) * bump)


#: A planted sole is put this fraction of the hip height above the ground (4.5 mm at 0.9 m): a foot turned a
#: little by the leg's joint limits then still stays out of the ground.
SOLE_CLEARANCE = 0.005
REACH = 0.0


def _lock_pass(figure: Figure, P: Array, fps: float, up: UpAxis, ground: float, masks: dict[str, tuple[Bool, Bool]],
               lift: dict[str, Bool], blend: float, legs: tuple[Leg, ...], soles: list[Array],
               max_step: float = np.inf) -> tuple[Array, list[tuple[Array, Array]]]:
    """One pass over all frames: goals, the hips lowered where needed, the leg IK → (poses, (goal, w) per leg).

    The goal's height puts the foot's lowest surface point (the foot turned by Q about the ankle) on the ground
    during a contact, blended in and out with the lock; elsewhere it only lifts a foot out of the ground (where
    ``lift``), eased in and out but never into a held frame (:func:`_off_held`). ``soles``: each foot's surface
    points about its ankle in the clip (F, V, 3).
    """
    P = P.copy()
    F = P.shape[0]
    W = figure.world_batch(P)
    names = figure.node_names
    k = up_index(up)
    nb = max(2, int(round(blend * fps)))
    clear = SOLE_CLEARANCE * hip_height(figure, legs[0].hip, up)
    feet = []
    weights: list[tuple[Array, Array]] = []
    for leg, rel in zip(legs, soles, strict=True):
        ih, ik_, ia, it = (names.index(n) for n in (leg.hip, leg.knee, leg.ankle, leg.toe))
        A, toe = W[:, ia, :3, 3], W[:, it, :3, 3]
        mh, mt = masks[leg.side]
        Hp = W[:, ih, :3, 3]
        Kp = W[0, ik_, :3, 3]
        full = float(np.linalg.norm(Kp - Hp[0]) + np.linalg.norm(A[0] - Kp))
        d0 = np.linalg.norm(A - Hp, axis=1)
        reach = min(max(float(d0.max()), REACH * full), (1 - 1e-9) * full)  # REACH_PATCH
        goal, w, Q, src = _goal(A, mh, mt, toe, nb, Hp, reach - SOFT * full, k)
        # the foot's surface about the ankle, turned by Q: its lowest point below the ankle
        if rel.shape[1]:
            below = np.einsum("fj,fvj->fv", Q[:, k], rel).min(axis=1)
            off = ground + clear - below - A[:, k]  # the ankle's rise (or fall) that puts the sole on the ground
        else:  # no surface under this foot (a drawn leaf): its height stays the clip's; only the ground is held
            below, off = np.zeros(F), np.zeros(F)
        goal[:, k] = A[:, k] + w * np.where(src >= 0, off[np.maximum(src, 0)], 0.0)  # carried, as the lock
        sole = goal[:, k] + below
        deficit = np.where(lift[leg.side] & (sole < ground + clear), ground + clear - sole, 0.0)  # out of the ground
        if deficit.max() > 0:
            deficit = _off_held(_smooth_max(deficit, nb), deficit, w >= 1.0, nb)
            goal[:, k] += deficit
        feet.append((leg, goal, (w > 0) | (deficit > 0), Q, reach, float(d0.min()), w, d0))
        weights.append((goal, w))
    # the hips come down where a locked leg could not reach its goal and up where a planted one would have to bend
    # further than the clip's knee does, smoothly (max filter, then a mean)
    upv = np.eye(3)[k]
    drop = np.zeros(F)
    if len(legs) == 2:  # a biped's pelvis, shared by its two legs; four legs keep the body as given
        down, rise = np.zeros(F), np.zeros(F)
        for leg, goal, active, _, reach, near, w, d_clip in feet:
            off = goal - W[:, names.index(leg.hip), :3, 3]
            vert = off @ upv
            flat2 = np.maximum(np.einsum("fi,fi->f", off, off) - vert**2, 0.0)
            far = reach - 0.5 * SOFT * reach  # half into the IK's soft stop: the foot ≤ 0.11 of its width short
            need = np.where(active & (flat2 < far**2), -vert - np.sqrt(np.maximum(far**2 - flat2, 0.0)), 0.0)
            down = np.maximum(down, need)
            # half into the soft stop, but never for a bend the clip makes itself at that frame
            bent = np.minimum(near + 0.5 * SOFT * reach, d_clip)
            need = np.where((w >= 1.0) & (flat2 < bent**2), np.sqrt(np.maximum(bent**2 - flat2, 0.0)) + vert, 0.0)
            rise = np.maximum(rise, need)
        drop = (_smooth_max(down, nb) if down.max() > 0 else down) - (_smooth_max(rise, nb) if rise.max() > 0 else rise)
    if np.abs(drop).max() > 0:
        M = np.tile(np.eye(4), (F, 1, 1))
        M[:, :3, 3] = -drop[:, None] * upv
        P = _carry(figure, P, M)
        W = figure.world_batch(P)
    for leg, goal, active, Q, reach, near, w, _ in feet:  # where the hips moved, the feet stay where the clip had them
        P = _leg_ik(figure, P, W, leg, goal, active | (drop != 0), Q, reach, near, max_step, k, w >= 1.0)
    return P, weights


# --- root motion -------------------------------------------------------------------------------------------


def _hips(figure: Figure) -> str:
    """The first node (traversal order) whose joint translates: the node root motion moves."""
    for arc in figure.arcs():
        if any(not d.revolute for d in arc.joint.dofs):
            return arc.child.name
    raise MotionError(f"figure {figure.name!r} has no joint that translates; no root to move")


def _forward(figure: Figure, hips: str, up: UpAxis) -> Array:
    """The hips' facing at rest in the hips' own frame: side × up, side from the right to the left hip."""
    W0 = figure.world_batch(figure.rest_pose()[None])[0]
    names = figure.node_names
    upv = np.eye(3)[up_index(up)]
    try:
        legs = {leg.side: leg for leg in legs_of(figure)}
        side = W0[names.index(legs["l"].hip), :3, 3] - W0[names.index(legs["r"].hip), :3, 3]
        f = np.cross(side, upv)
    except (MotionError, KeyError):
        f = np.eye(3)[2] if up == "y" else np.eye(3)[0]
    f = f - (f @ upv) * upv
    f /= np.linalg.norm(f)
    return W0[names.index(hips), :3, :3].T @ f


@dataclass(frozen=True, eq=False)
class RootMotion:
    """The root's ground trajectory (F, 3, on the ground plane) and heading ψ (F,), radians about up."""

    positions: Array
    heading: Array
    up: str

    def transforms(self) -> Array:
        """M(f) = [R_up(ψ(f)), p(f)]: (F, 4, 4)."""
        F = self.positions.shape[0]
        M = np.tile(np.eye(4), (F, 1, 1))
        M[:, :3, :3] = matrix_about_axis(np.eye(3)[up_index(self.up)], self.heading)  # type: ignore[arg-type]
        M[:, :3, 3] = self.positions
        return M


def root_motion(figure: Figure, poses: Array, *, up: UpAxis | None = None) -> RootMotion:
    """The hips projected on the ground, and the yaw of their rest facing, per frame (heading unwrapped)."""
    up = figure.up if up is None else up
    P = np.atleast_2d(figure.check_pose(poses))
    hips = _hips(figure)
    W = figure.world_batch(P)[:, figure.node_names.index(hips)]
    k = up_index(up)
    p = W[:, :3, 3].copy()
    p[:, k] = 0.0
    f = W[:, :3, :3] @ _forward(figure, hips, up)
    # ψ about the up axis, measured from the axis that up turns onto the forward axis of a y-up figure (+z)
    a, b = (2, 0) if up == "y" else (0, 1)
    psi = np.unwrap(np.arctan2(f[:, b], f[:, a]))
    return RootMotion(p, psi, up)


def _carry(figure: Figure, poses: Array, M: Array) -> Array:
    """Poses with the hips' world transform left-multiplied by M (F, 4, 4): W_h' = M W_h, read into the root's DOFs."""
    P = np.atleast_2d(figure.check_pose(poses)).copy()
    hips = _hips(figure)
    arc = figure.node(hips).parent_arc
    assert arc is not None
    W = figure.world_batch(P)
    names = figure.node_names
    parent = figure.parent_of(hips)
    B = arc.L[None] if parent is None else W[:, names.index(parent)] @ arc.L
    Wh = M @ W[:, names.index(hips)]
    B = np.broadcast_to(B, Wh.shape)
    Binv = np.linalg.inv(B)
    A = Binv @ Wh
    idx = np.asarray(figure.joint_dofs[arc.joint.name])
    vals = read_dofs(arc.joint, A[:, :3, :3], A[:, :3, 3], P[:, idx])
    rev = np.array([d.revolute for d in arc.joint.dofs])
    vals[:, rev] = _nearest_turns(vals[:, rev], P[:, idx][:, rev])
    P[:, idx] = vals
    return P


def in_place(figure: Figure, poses: Array, *, up: UpAxis | None = None) -> tuple[Array, RootMotion]:
    """(poses with the root held at its first ground position and heading, the root motion taken out)."""
    up = figure.up if up is None else up
    rm = root_motion(figure, poses, up=up)
    M = rm.transforms()
    return _carry(figure, poses, M[0] @ np.linalg.inv(M)), rm


def with_root_motion(figure: Figure, in_place_poses: Array, motion: RootMotion) -> Array:
    """The inverse of :func:`in_place`: the trajectory ``motion`` put back onto in-place poses."""
    M = motion.transforms()
    return _carry(figure, in_place_poses, M @ np.linalg.inv(M[0]))


def loop_poses(figure: Figure, cycle: Array, loops: int, *, up: UpAxis | None = None) -> Array:
    """``loops`` cycles one after another, cycle k carried by Δᵏ (Δ = M(last)·M(first)⁻¹): no jump, no turn back.

    ``cycle`` (F, D) includes both ends (its last frame is the next cycle's first); the result has
    loops·(F − 1) + 1 frames.
    """
    up = figure.up if up is None else up
    if loops < 1:
        raise MotionError(f"loops must be a whole number ≥ 1, got {loops}")
    P = np.atleast_2d(figure.check_pose(cycle))
    if loops == 1:
        return P.copy()
    M = root_motion(figure, P[[0, -1]], up=up).transforms()
    delta = M[1] @ np.linalg.inv(M[0])
    parts = [P[:-1]]
    step = np.eye(4)
    for _ in range(1, loops):
        step = delta @ step
        parts.append(_carry(figure, P[:-1], np.broadcast_to(step, (P.shape[0] - 1, 4, 4))))
    parts.append(_carry(figure, P[-1:], step[None]))
    return np.concatenate(parts)


def aligned_crossfade(figure: Figure, a: Clip, b: Clip, start: float, length: float, *, up: UpAxis | None = None,
                      b_figure: Figure | None = None, name: str | None = None) -> Clip:
    """A crossfade from a to b with b carried so its root starts at a's ground position and heading at ``start``.

    b is carried by Δ = M_a(start)·M_b(0)⁻¹ (ground transforms of the root). When b is on another skeleton
    (``b_figure``, or b's layout when it is a Figure), it is retargeted onto ``figure`` first.
    """
    up = figure.up if up is None else up
    from .keyframes import Clip, crossfade

    src = b_figure if b_figure is not None else b.layout
    if isinstance(src, Figure) and src is not figure and src.dof_names != figure.dof_names:
        from .scene import Scene

        b = retarget_full(Scene(src, clips={b.name: b}, up=up), Scene(figure, up=up)).clip
    elif not isinstance(src, Figure) and list(b.layout.dof_names) != figure.dof_names:
        raise RetargetError(f"clip {b.name!r} is on another layout; pass b_figure to retarget it first")
    tb = b.frame_times()
    pb = b.sample(tb)
    Ma = root_motion(figure, a.sample(np.array([float(start)])), up=up).transforms()[0]
    Mb = root_motion(figure, pb[:1], up=up).transforms()[0]
    moved = _carry(figure, pb, np.broadcast_to(Ma @ np.linalg.inv(Mb), (pb.shape[0], 4, 4)))
    b2 = Clip.from_poses(figure, tb, moved, name=b.name, fps=b.fps)
    return crossfade(a, b2, start, length, name=name)
