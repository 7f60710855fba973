"""Legs and where they meet the ground: a figure's legs, foot contacts, and the foot lock's own measures.

**Contacts.** A foot point (the heel: the ankle joint; the toe: the toe joint) is in contact at frame f when

**Measures** (``measure``, the lock's own bookkeeping). Skate: horizontal travel of a foot point per frame it is
in contact (mean, mm); penetration: how far the feet's lowest surface point goes under the ground (mm); knee pop:
the largest frame-to-frame change of the knee angle (degrees). Lengths in mm take ``metres_per_unit`` (default: 1
when the hip height lies in 0.3–3 units, else 0.95 m / hip height — an adult's hips — as for CMU BVH, whose unit
is 1/0.45 inch). The measures that judge a clip as the eye does (skate over the frames a foot should be planted,
in mm/s; surface heights; travel, facing, joint speeds, limits, bone directions) are
:func:`animkit.motion.measures.measure_motion`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit import jit
from animkit.errors import AnimkitError
from animkit.look.surface import BodySurface, body_surface, descendants
from animkit.model.figure import Figure
from animkit.model.humanoid import match_figure
from animkit.model.quadruped import LEGS, match_quadruped_figure
from animkit.motion.retarget import hip_height, up_index
from animkit.recent import Recent

if TYPE_CHECKING:
    from animkit.scene import UpAxis

__all__ = ["MotionError", "Leg", "legs_of", "Contacts", "detect_contacts", "MotionMeasures", "measure",
           "metres_per_unit", "knee_angles", "SKATE_WINDOW", "windowed_speed"]

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
    """The figure's legs from :mod:`animkit.model.humanoid` (upper leg, lower leg, foot, toe; the tip is the toe's
    leaf), or a quadruped's four from :mod:`animkit.model.quadruped` (sides ``fl``, ``fr``, ``hl``, ``hr``).

    MotionError when no leg has its upper leg, lower leg and foot, or a knee is not the hip's child. Found once per
    skeleton (the compiled figure: its node names and parents, which are all this reads).
    """
    c = figure.compiled
    return _LEGS.fetch(id(c), (c,), lambda: _legs_of(figure))


#: legs found lately, by compiled figure (:func:`legs_of`)
_LEGS: Recent[tuple[Leg, ...]] = Recent(16)


def _legs_of(figure: Figure) -> tuple[Leg, ...]:
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
    """Runs of True as half-open [start, end): the frames f where the mask padded with False at both ends changes
    (p[f + 1] ≠ p[f]), read in pairs. The lock reads some 80 short masks a call: a padded copy and one comparison,
    without ``np.flatnonzero``'s Python wrapper and the ends' special cases."""
    m = np.asarray(mask, dtype=bool)
    if not m.size:
        return []
    p = np.zeros(m.size + 2, dtype=bool)
    p[1:-1] = m
    edges = (p[1:] != p[:-1]).nonzero()[0].tolist()
    return list(zip(edges[::2], edges[1::2], strict=True))


def _spans(mask: Bool, bridge: Bool | None) -> dict[int, tuple[int, int]]:
    """Per run of ``mask`` (by its first frame), [a, b): the run joined with its neighbours across ``bridge`` frames
    (a contact that gave way there is still one contact), or the run itself."""
    runs = _intervals(mask)
    if bridge is None or not bridge.any():
        return {s: (s, e) for s, e in runs}
    whole = _intervals(mask | bridge)
    return {s: next((a, b) for a, b in whole if a <= s < b) for s, _ in runs}


def rejoined_masks(mask: tuple[Bool, Bool], gave: Bool) -> tuple[Bool, Bool]:
    """(heel, toe) frames held, with the frames given up inside each of their contacts held again."""
    out = []
    for m in mask:
        m = m.copy()
        for s, e in _intervals(m | gave):
            m[s:e] |= m[s:e].any()
        out.append(m)
    return out[0], out[1]


def _with_up(figure: Figure, up: UpAxis | None) -> Figure:
    """``figure`` when ``up`` is None or its own up axis; else a shallow copy whose :attr:`Figure.up` is ``up`` (the
    same nodes and compiled arrays): the measures and the lock's passes read the up axis from the figure they are
    given; the caller's figure is left as it is."""
    if up is None or up == figure.up:
        return figure
    seen = copy.copy(figure)
    seen.up = up
    return seen


def _norm(x: ArrayLike, axis: int = -1, keepdims: bool = False) -> Array:
    """|x| along ``axis``: √(Σ x²), the sum NumPy's ``linalg.norm`` takes for one axis (the same bits) without its
    checks, which cost more than the arithmetic on the lock's short arrays."""
    a = np.asarray(x)
    if a.dtype.kind not in "fc":
        a = a.astype(float)
    sq = a * a
    return np.sqrt(np.add.reduce(sq, axis=axis, keepdims=True) if keepdims else np.add.reduce(sq, axis=axis))


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
    whole = None  # the full window's speeds over every frame, found once for the runs long enough (the same bits)
    for a, b in _intervals(mask):
        w = min(w0, b - a - 1)
        if w < 1:
            continue
        if w == w0:
            if whole is None:
                whole = _norm(X[w0:] - X[:-w0], axis=1) * fps / w0
            out[a:b - w] = whole[a:b - w]
        else:
            out[a:b - w] = _norm(X[a + w:b] - X[a:b - w], axis=1) * fps / w
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
                    legs: tuple[Leg, ...] | None = None, world: Array | None = None) -> Contacts:
    """Contacts of each leg's heel (ankle) and toe from height and speed; see the module's docstring. ``world``: the
    poses' world matrices (F, N, 4, 4) where the caller has them (else FK here)."""
    up = figure.up if up is None else up
    legs = legs_of(figure) if legs is None else legs
    P = np.atleast_2d(figure.check_pose(poses))
    if P.shape[0] < 3:
        raise MotionError(f"contacts need at least 3 frames, got {P.shape[0]}")
    k = up_index(up)
    names = figure.node_names
    pos = figure.world_positions(P) if world is None else world[:, :, :3, 3]
    H = hip_height(figure, legs[0].hip, up)
    low = pos[:, [names.index(n) for n in _lowest_points(legs)], k]
    found = ground is None
    g = float(np.percentile(low.min(axis=1), 2.0)) if ground is None else float(ground)
    pts = _foot_points(legs)
    X = pos[:, [names.index(n) for n in pts]]
    h = X[..., k]
    horiz = [i for i in range(3) if i != k]
    v = _norm(np.gradient(X[..., horiz], axis=0), axis=-1) * fps
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
    if not H > 0.0:  # level or below the feet: no standing figure along this axis (a wrong up, a figure lying down)
        raise AnimkitError(f"figure {figure.name!r}: the hip {legs[0].hip!r} is {H:.4g} above the feet's lowest "
                           f"point along up {up!r} at rest; legs need the hips above the feet (is up right?)")
    return 1.0 if 0.3 <= H <= 3.0 else 0.95 / H


def knee_angles(figure: Figure, poses: Array, legs: tuple[Leg, ...], *, world: Array | None = None) -> Array:
    """(F, legs): the angle between thigh and shin, radians (0 straight). ``world``: the poses' world matrices
    (F, N, 4, 4) where the caller has them (else FK here)."""
    pos = figure.world_positions(np.atleast_2d(poses)) if world is None else world[:, :, :3, 3]
    names = figure.node_names
    out = []
    for leg in legs:
        a = pos[:, names.index(leg.knee)] - pos[:, names.index(leg.hip)]
        b = pos[:, names.index(leg.ankle)] - pos[:, names.index(leg.knee)]
        c = np.einsum("fi,fi->f", a, b) / (_norm(a, axis=1) * _norm(b, axis=1))
        out.append(np.arccos(np.clip(c, -1.0, 1.0)))
    return np.stack(out, axis=1)


def measure(figure: Figure, poses: Array, contacts: Contacts, *, up: UpAxis | None = None,
            legs: tuple[Leg, ...] | None = None, unit: float | None = None, surface: BodySurface | None = None,
            fps: float | None = None, world: Array | None = None, lows: Array | None = None,
            knees: Array | None = None) -> MotionMeasures:
    """Skate, penetration and knee pops of ``poses`` against ``contacts`` (see the module's docstring).

    With ``fps``, skate per contact frame is the ground speed over :data:`SKATE_WINDOW` divided by ``fps``
    (:func:`windowed_speed`); without it, the frame-to-frame travel.

    Penetration is how far the feet's lowest *surface* point (``surface``, by default the drawn geometry:
    :func:`animkit.look.surface.body_surface`) goes under ``contacts.ground``; joint centres never count.
    ``world``: the poses' world matrices (F, N, 4, 4) and ``lows`` the feet's lowest surface points (F, legs) where
    the caller has them (else computed here), and ``knees`` their :func:`knee_angles` (F, legs) likewise.
    """
    up = figure.up if up is None else up
    legs = legs_of(figure) if legs is None else legs
    P = np.atleast_2d(figure.check_pose(poses))
    u = metres_per_unit(figure, legs, up) if unit is None else float(unit)
    k = up_index(up)
    names = figure.node_names
    W = figure.world_batch(P) if world is None else world
    pos = W[:, :, :3, 3]
    horiz = [i for i in range(3) if i != k]
    skate: dict[str, float] = {}
    total, frames = 0.0, 0
    for j, p in enumerate(contacts.points):
        X = pos[:, names.index(p)][:, horiz]
        if fps is None:
            step = _norm(np.diff(X, axis=0), axis=1)[contacts.mask[1:, j] & contacts.mask[:-1, j]]
        else:  # the ground speed over SKATE_WINDOW, per frame
            step = windowed_speed(X, contacts.mask[:, j], fps)
            step = step[np.isfinite(step)] / fps
        n = int(step.size)
        travel = float(step.sum())
        skate[p] = 1000.0 * u * travel / n if n else 0.0
        total += travel
        frames += n
    low = _foot_lows(figure, W, legs, surface, k) if lows is None else lows
    pen = max(0.0, float(contacts.ground - np.nanmin(low))) * 1000.0 * u
    knee = knee_angles(figure, P, legs, world=W) if knees is None else knees
    pops = np.degrees(np.abs(np.diff(knee, axis=0))).max(axis=0) if len(P) > 1 else np.zeros(len(legs))
    by_leg = {leg.side: float(x) for leg, x in zip(legs, pops, strict=True)}
    return MotionMeasures(1000.0 * u * total / frames if frames else 0.0, skate, frames, pen,
                          float(pops.max()), by_leg, u)


def _foot_lows(figure: Figure, W: Array, legs: tuple[Leg, ...], surface: BodySurface | None, k: int) -> Array:
    """(F, legs): the lowest surface point of each foot (the ankle and everything below it)."""
    surface = body_surface(figure) if surface is None else surface
    return surface.lowest(W, k, [descendants(figure, leg.ankle) for leg in legs])


def _drift(Xs: tuple[Array, ...], masks: list[tuple[int, Bool]], a: int, b: int, horiz: list[int],
           window: int) -> list[Array]:
    """Per run of a leg's contacts (the union of its planted points' masks, ``masks``: node index, mask; clipped to
    [a, b)), for each of the positions ``Xs`` (F, N, 3): the mean over its frames of the slowest planted point's
    ground speed over ``window`` frames (|x(f + w) − x(f)| / w, w = min(window, run − 1), as
    :func:`windowed_speed` and the skate measure take it; units per frame; NaN for a run too short to tell). The C
    extension's ``drift_means`` takes the same steps in one call (bit for bit) where it is built."""
    clipped = [m[a:b] for _, m in masks]  # frames [a, b) only: no run reaches past them, nor its windows
    union = _intervals(np.logical_or.reduce(clipped))
    kernel = getattr(jit.native_kernels(), "drift_means", None)
    if kernel is not None and masks and b > a and window >= 1:
        nodes = [i for i, _ in masks]
        Y = np.ascontiguousarray(np.stack([X[a:b][:, nodes][..., horiz] for X in Xs]).transpose(0, 2, 1, 3),
                                 dtype=np.float64)  # (len(Xs), points, b − a, 2)
        runs = np.asarray(union, dtype=np.int64).reshape(-1, 2)
        out = np.empty((len(Xs), len(union)))
        kernel(Y, np.ascontiguousarray(clipped, dtype=np.uint8), runs, out, len(Xs), len(masks), b - a, len(union),
               int(window))
        return list(out)
    v = np.full((len(Xs), len(masks), b - a), np.nan)  # every X at once: row by row the same arithmetic
    for j, ((i, _), c) in enumerate(zip(masks, clipped, strict=True)):
        Y = np.stack([X[a:b, i] for X in Xs])[..., horiz]  # (len(Xs), b − a, 2)
        whole = None  # the full window's speeds over [a, b), found once and read by every run long enough
        for s, e in _intervals(c):
            w = min(window, e - s - 1)
            if w == window:
                if whole is None:
                    whole = _norm(Y[:, w:] - Y[:, :-w], axis=2) * 1.0 / w
                v[:, j, s:e - w] = whole[:, s:e - w]
            elif w >= 1:
                v[:, j, s:e - w] = _norm(Y[:, s + w:e] - Y[:, s:e - w], axis=2) * 1.0 / w
    slowest = np.fmin.reduce(v, axis=1)
    means = np.full((len(Xs), len(union)), np.nan)
    for u, (s, e) in enumerate(union):  # np.nanmean's own sum and count
        seg = slowest[:, s:e]
        nan = np.isnan(seg)
        some = ~nan.all(axis=1)
        means[some, u] = np.where(nan, 0.0, seg)[some].sum(axis=1) / (~nan[some]).sum(axis=1)
    return list(means)
