"""Measures of a reach that say whether it moves like a person: timing, gaze, head, hold, free arm, bend.

For poses θ(f), f = 0 … F−1 at ``fps``, world frames from FK, ``up`` the unit world up axis u, and the humanoid
bones of :func:`animkit.model.humanoid.match_figure`:

* **Minimum jerk** (Flash & Hogan 1985): the effector's speed v(f) = |x(f+1) − x(f)| · fps against the
  minimum-jerk speed v*(τ) = 30 τ² (1 − τ)² (the derivative of s(τ) = 10τ³ − 15τ⁴ + 6τ⁵) over the movement
  [t_on, t_off] (where v first and last exceeds 5 % of its peak), zero outside: Pearson's r over every frame.
  **Speed peaks**: local maxima of v that rise at least 10 % of the peak above the lowest point since the last
  counted one (one bell: 1; a second wind: 2).
* **Gaze lead**: the head starts when its world angular speed |log(R(f)ᵀ R(f+1))| · fps first exceeds 10 % of
  its peak, the hand when v does; the head has settled at the first frame after which its gaze angle (forward
  axis against the direction to the target less the eyes' range E, max(0, ∠ − E): the eye-head gaze is on the
  target once the eyes can reach it, Guitton & Volle 1987; or against where the head aims: ``aims``) stays
  within 5° of its final value; lead = t(hand peak speed) −
  t(head settled) (positive: the head settled first).
* **Head roll**: the ear-to-ear axis e(f) = R_head(f) e_h (e_h: the shoulders' left-to-right direction at the
  rest pose, in the head's frame) against level: asin |e · u| (degrees), its largest over the clip; **head speed**:
  the peak of the head's world angular speed (deg/s). **Head pitch**: the head's forward axis f(f) = R_head(f) f_h
  (f_h = the rest pose's level forward u × r, r the rest left-to-right axis) above the ground plane, asin(f · u)
  (degrees, negative down; the clip's value of largest magnitude): the nod a side view shows (the neck flexes about
  45° (AAOS); the eyes take the rest of a steeper gaze). **Head lean** (the crown's tilt as the front view shows it):
  the head's up axis v(f) = R_head(f) v_h (v_h = u at rest) laid in the front plane spanned by r and u, atan2(|v ·
  r|, v · u) (degrees, largest over the clip): a roll ρ about the forward axis reads ρ, a yaw alone 0, a pitch alone
  0, but pitch φ after yaw ψ reads atan(sin φ sin ψ / cos φ) (the crown tips toward the turned side although the
  ears stay level). **Eyes**: the last frame's angle between f and the direction to the target, ∠(f, t − p_head)
  (degrees): what the eyes turn in the head to see it (their comfortable range ~30°).
* **Hold**: after ``arrival``, the summed revolute joint travel Σ_f Σ_j |Δθ_j| / (hold time) (deg/s);
  **jitter**: max over frames and revolute DOFs of |θ(f+1) − 2θ(f) + θ(f−1)| / 4 (deg): a DOF alternating ±a
  every frame jitters a; a steady one 0, but it counts any acceleration (a smooth min-jerk swing of A over n frames
  reads up to 5.77 A/n²/4: 93° in 15 frames, 0.6°; a joint stopping dead reads a quarter of its speed a frame).
  **Chatter** (the zig-zag alone): max over frames and revolute DOFs of |Δ⁴θ(f)| / 16 = |Δ²θ(f) − ½(Δ²θ(f−1) +
  Δ²θ(f+1))| / 8 (deg), the part of the acceleration that flips sign frame to frame: ±a every frame reads a, a cubic
  in f reads 0, a min-jerk swing 22.5 A/n⁴ at most inside it (93° in 15 frames: 0.04°; 0.05° where it leaves or
  meets a hold), a dead stop an eighth of its speed a frame.
* **Free arm**: the angle between the free side's upper-arm-to-hand direction and −u (degrees; 0 hanging), its
  largest over the frames where the trunk bends (issue 21: the free arm hangs within 45° of vertical when the trunk
  bends): where the trunk's line hips → neck has turned at least TRUNK_BENT from the first frame's, ∠(n(f) − h(f),
  n(0) − h(0)) (:func:`trunk_lean`; every frame where the figure has no hips or neck; none where the trunk stays
  upright). A rig whose rest pose holds the arms out (CesiumMan's and RiggedFigure's A-pose, 61–62°) starts there,
  and that first frame, before anything bends, is the rig's pose, not the reach's: the clip's first and last
  angles are kept beside it.
* **Trunk side bend** (lateral flexion, as seen from the front): with the pelvis's up p(f) (below) and the line
  across the shoulders s(f) (upper arm to upper arm, unit), asin |s · p| (degrees): the shoulders' tilt out of the
  pelvis's own level plane. Flexing forward (about the pelvis's side axis) or turning (about p) leaves it 0; the
  thoracolumbar spine of an adult bends about 35° to a side (AAOS ranges), so more is more than a person can.
* **Trunk twist**: the shoulder line s laid in the pelvis's level plane (s − (s·p)p) against the pelvis's own
  left-to-right axis h(f) = R_hips R_hips,restᵀ h_rest: atan2 of its forward and sideways parts (degrees,
  unsigned); a person's thoracolumbar spine turns about 45° to a side (AAOS). **Trunk flexion**: ∠(p, neck − hips)
  (degrees; AAOS: about 80° forward).
* **Pelvis roll**: the pelvis's left-to-right axis h(f) out of level, asin |h · u| (degrees): its tilt ear to
  shoulder, as the front view shows it; flexing forward (about h) or turning (about u) leaves it 0.
* **Knee in** (as the front view shows it): per leg, the shin's tilt out of the upright plane through the ankle that
  holds the foot's forward axis (toe − ankle, laid level), asin((k − a) · n / |k − a|) with n that plane's unit
  normal toward the other ankle (degrees; positive: the knee falls inside the foot's line, valgus; negative: out).
  A knee that bends over its foot gives 0.
* **Bend shares** between a standing frame r and a bent frame b: with the pelvis's up p(f) = R_hips(f) R_hipsᵀ(rest) u,
  spine flexion φ_s = ∠(p, neck − hips), hip flexion φ_h = ∠(p, hip − knee) and knee flexion φ_k =
  ∠(knee − hip, ankle − knee) (legs averaged), each share = max(0, φ(b) − φ(r)) / Σ over the three.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import AnimkitError
from animkit.model.figure import Figure
from animkit.model.humanoid import HumanoidMap, match_figure
from animkit.model.transforms import rotation_vector_from_matrix

__all__ = ["ReachMeasures", "BendShares", "reach_measures", "bend_shares", "minimum_jerk", "minimum_jerk_speed",
           "speed_correlation", "speed_peaks", "angular_speed", "head_roll", "head_pitch", "head_lean",
           "hold_travel", "jitter", "chatter",
           "free_arm_angle", "trunk_lean", "trunk_side_bend", "trunk_twist", "pelvis_roll", "knee_in", "lowest_frame"]

Array = NDArray[np.float64]

ONSET = 0.05  # a movement starts/stops where the speed crosses this fraction of its peak
HEAD_ONSET = 0.10  # the head starts moving above this fraction of its peak angular speed
HEAD_STILL = 1.0  # deg/s: a head slower than this over the whole clip does not turn
TRUNK_BENT = 5.0  # degrees: the trunk bends where its line hips → neck has turned this far from the first frame's
SETTLED_DEG = 5.0  # the head has settled once its gaze angle stays this close to its final value
PEAK_RISE = 0.10  # a second speed peak counts when it rises this fraction of the peak above the dip before it


def minimum_jerk(tau: ArrayLike) -> Array:
    """s(τ) = 10τ³ − 15τ⁴ + 6τ⁵ on [0, 1] (Flash & Hogan 1985), clamped outside."""
    t: Array = np.clip(np.asarray(tau, dtype=float), 0.0, 1.0)
    return t * t * t * (10.0 + t * (-15.0 + 6.0 * t))


def minimum_jerk_speed(tau: ArrayLike) -> Array:
    """ds/dτ = 30τ²(1 − τ)² on [0, 1], zero outside."""
    t = np.asarray(tau, dtype=float)
    v: Array = np.where((t >= 0) & (t <= 1), 30.0 * t * t * (1.0 - t) ** 2, 0.0)
    return v


def _speed(points: Array, fps: float) -> Array:
    """|x(f+1) − x(f)| · fps (F − 1,)."""
    return np.asarray(np.linalg.norm(np.diff(points, axis=0), axis=1) * fps, dtype=float)


def speed_correlation(speed: ArrayLike) -> float:
    """Pearson's r between a speed profile v (F,) and the minimum-jerk speed over its movement [t_on, t_off] (where
    v first and last exceeds 5 % of its peak; zero outside). 0 for a profile that never moves."""
    v = np.asarray(speed, dtype=float)
    peak = float(v.max(initial=0.0))
    if peak <= 0 or len(v) < 3:
        return 0.0
    moving = np.flatnonzero(v > ONSET * peak)
    on, off = int(moving[0]), int(moving[-1])
    # the window's edges sit where the bell crosses ONSET: widen it to where a minimum-jerk bell would be zero
    # (30τ²(1 − τ)² = ONSET · 1.875 at τ₀ = (1 − √(1 − 4√(ONSET/16)))/2)
    tau0 = (1.0 - math.sqrt(1.0 - 4.0 * math.sqrt(ONSET / 16.0))) / 2.0
    pad = (off - on) * tau0 / (1.0 - 2.0 * tau0)
    f = np.arange(len(v), dtype=float)
    tau = (f - (on - pad)) / max((off + pad) - (on - pad), 1e-9)
    ref = minimum_jerk_speed(tau)
    if np.std(ref) == 0 or np.ptp(v) <= 1e-9 * peak:  # a constant speed has no shape to correlate
        return 0.0
    return float(np.corrcoef(v, ref)[0, 1])


def speed_peaks(speed: ArrayLike, rise: float = PEAK_RISE) -> int:
    """Local maxima of v that stand ``rise`` · peak above the lowest point since the last counted maximum."""
    v = np.asarray(speed, dtype=float)
    peak = float(v.max(initial=0.0))
    if peak <= 0:
        return 0
    need = rise * peak
    count, low, high, climbing = 0, float(v[0]), float(v[0]), False
    for x in v[1:]:
        x = float(x)
        if not climbing:
            low = min(low, x)
            if x - low >= need:
                climbing, high = True, x
                count += 1
        else:
            if x > high:
                high = x
            elif high - x >= need:  # fell back: the next maximum must rise again
                climbing, low = False, x
    return count


def angular_speed(R: Array, fps: float) -> Array:
    """|log(R(f)ᵀ R(f+1))| · fps (F − 1,) for world rotations R (F, 3, 3), radians per second."""
    D = np.swapaxes(R[:-1], 1, 2) @ R[1:]
    return np.asarray(np.linalg.norm(rotation_vector_from_matrix(D), axis=-1) * fps, dtype=float)


def head_roll(R_head: Array, ear_local: Array, up: Array) -> Array:
    """asin |R(f) e_h · u| (F,), degrees: the ear-to-ear axis's tilt from level."""
    e = R_head @ ear_local
    return np.degrees(np.arcsin(np.clip(np.abs(e @ up), 0.0, 1.0)))


def head_pitch(R_head: Array, forward_local: Array, up: Array) -> Array:
    """asin(R(f) f_h · u) (F,), degrees: the head's forward axis above the ground plane (negative: looking down)."""
    f = R_head @ (forward_local / np.linalg.norm(forward_local))
    return np.degrees(np.arcsin(np.clip(f @ up, -1.0, 1.0)))


def head_lean(R_head: Array, up_local: Array, right: Array, up: Array) -> Array:
    """atan2(|v · r|, v · u) (F,), degrees, v = R(f) v_h: the head's up axis from vertical in the front plane (r, u)."""
    v = R_head @ (up_local / np.linalg.norm(up_local))
    return np.degrees(np.arctan2(np.abs(v @ right), v @ up))


def hold_travel(figure: Figure, poses: Array, fps: float, arrival: int) -> float:
    """Σ_{f ≥ arrival} Σ_revolute |θ(f+1) − θ(f)| / ((F − 1 − arrival) / fps), degrees per second (0 without hold)."""
    P = np.asarray(poses, dtype=float)[arrival:]
    if len(P) < 2:
        return 0.0
    rev = np.array([d.revolute for d in figure.dofs], dtype=bool)
    travel = float(np.degrees(np.abs(np.diff(P[:, rev], axis=0)).sum()))
    return travel / ((len(P) - 1) / fps)


def jitter(figure: Figure, poses: Array) -> tuple[float, str | None]:
    """max over frames and revolute DOFs of |θ(f+1) − 2θ(f) + θ(f−1)| / 4 (degrees), and that DOF's name."""
    return _largest_difference(figure, poses, 2)


def chatter(figure: Figure, poses: Array) -> tuple[float, str | None]:
    """max over frames and revolute DOFs of |Δ⁴θ| / 16 = |θ(f−2) − 4θ(f−1) + 6θ(f) − 4θ(f+1) + θ(f+2)| / 16
    (degrees), and that DOF's name: the zig-zag of the acceleration (the module docstring)."""
    return _largest_difference(figure, poses, 4)


def _largest_difference(figure: Figure, poses: Array, n: int) -> tuple[float, str | None]:
    """max over frames and revolute DOFs of |Δⁿθ| / 2ⁿ (degrees: a ±a zig-zag reads a), and that DOF's name."""
    P = np.asarray(poses, dtype=float)
    rev = np.flatnonzero([d.revolute for d in figure.dofs])
    if len(P) < n + 1 or not len(rev):
        return 0.0, None
    a = np.abs(np.diff(P[:, rev], n=n, axis=0)) / 2.0 ** n
    f, j = np.unravel_index(int(np.argmax(a)), a.shape)
    return float(np.degrees(a[f, j])), figure.dof_names[int(rev[j])]


def bone_stretch(parent: ArrayLike, x: Array, fixed_above: int | None = None) -> Array:
    """s_f = max_i | ‖x_f,i − x_f,p(i)‖ − ‖x_0,i − x_0,p(i)‖ |: how far any bone's length strays from the first
    frame's, per frame, over the bones below ``fixed_above`` (the node whose translation is root motion: the hips;
    None: every bone); 0 on a body of turning joints, whatever the pose (a glTF node's translation DOFs driven
    by a solve show here: a neck stretched 15 cm)."""
    P = np.asarray(parent)
    keep = P >= 0
    if fixed_above is not None:  # the root-motion node and its ancestors carry the body, not a bone
        k = fixed_above
        while k >= 0:
            keep[k] = False
            k = int(P[k])
    i = np.flatnonzero(keep)
    if not len(i):
        return np.zeros(len(x))
    length = np.linalg.norm(x[:, i] - x[:, P[i]], axis=-1)
    stretch: Array = np.abs(length - length[:1]).max(axis=1)
    return stretch


def free_arm_angle(positions: Array, upper_arm: int, hand: int, up: Array) -> Array:
    """∠(x_hand − x_upper_arm, −u) (F,), degrees."""
    d = positions[:, hand] - positions[:, upper_arm]
    return _angle(d, np.broadcast_to(-up, d.shape))


def trunk_lean(positions: Array, hips: int, neck: int) -> Array:
    """∠(n(f) − h(f), n(0) − h(0)) (F,), degrees: how far the trunk's line from the hips to the neck has turned in
    the world since the first frame (forward, sideways or with the pelvis)."""
    d = positions[:, neck] - positions[:, hips]
    return _angle(d, np.broadcast_to(d[0], d.shape))


def trunk_side_bend(figure: Figure, W: Array, bones: HumanoidMap, up: Array, rest: Array | None = None
                    ) -> Array | None:
    """asin |s · p| (degrees) per frame of world frames W (F, N, 4, 4): s the unit line across the shoulders (upper
    arms), p the pelvis's up R_hips R_hips,restᵀ u (``rest``: the rest pose's world frames, computed when not
    given); None where the figure has no hips or upper arms."""
    names = figure.node_names
    hips, left, right = bones.get("hips"), bones.get("upper_arm_l"), bones.get("upper_arm_r")
    if hips is None or left is None or right is None:
        return None
    h = names.index(hips)
    rest = figure.world_batch(figure.rest_pose()[None])[0] if rest is None else rest
    p = W[:, h, :3, :3] @ (rest[h, :3, :3].T @ up)
    s = W[:, names.index(right), :3, 3] - W[:, names.index(left), :3, 3]
    s = s / np.linalg.norm(s, axis=1, keepdims=True)
    return np.asarray(np.degrees(np.arcsin(np.clip(np.abs(np.sum(s * p, axis=1)), 0.0, 1.0))), dtype=float)


def _pelvis_axes(figure: Figure, W: Array, hips: int, up: Array, rest: Array) -> tuple[Array, Array] | None:
    """The pelvis's up p(f) and left-to-right axis h(f) (F, 3) each: the rest pose's world up and right carried by
    the hips' turn since rest; None without a left-to-right direction."""
    right = _right(match_figure(figure), rest, figure.node_names, up)
    if right is None:
        return None
    turn = W[:, hips, :3, :3] @ rest[hips, :3, :3].T
    return turn @ up, turn @ right


def trunk_twist(figure: Figure, W: Array, bones: HumanoidMap, up: Array, rest: Array) -> Array | None:
    """|atan2(s⊥ · g, s⊥ · h)| (degrees) per frame: s⊥ the shoulder line in the pelvis's level plane, h the pelvis's
    left-to-right axis and g = p × h (module docstring); None without hips or upper arms."""
    names = figure.node_names
    hips, left, right = bones.get("hips"), bones.get("upper_arm_l"), bones.get("upper_arm_r")
    axes = None if hips is None else _pelvis_axes(figure, W, names.index(hips), up, rest)
    if axes is None or left is None or right is None:
        return None
    p, h = axes
    s = W[:, names.index(right), :3, 3] - W[:, names.index(left), :3, 3]
    s = s - np.sum(s * p, axis=1, keepdims=True) * p
    g = np.cross(p, h)
    return np.asarray(np.abs(np.degrees(np.arctan2(np.sum(s * g, axis=1), np.sum(s * h, axis=1)))), dtype=float)


def pelvis_roll(figure: Figure, W: Array, bones: HumanoidMap, up: Array, rest: Array) -> Array | None:
    """asin |h · u| (degrees) per frame: the pelvis's left-to-right axis out of level; None without hips."""
    hips = bones.get("hips")
    axes = None if hips is None else _pelvis_axes(figure, W, figure.node_names.index(hips), up, rest)
    if axes is None:
        return None
    return np.asarray(np.degrees(np.arcsin(np.clip(np.abs(axes[1] @ up), 0.0, 1.0))), dtype=float)


def knee_in(knee: Array, ankle: Array, toe: Array, other_ankle: Array, up: Array) -> Array:
    """asin((k − a) · n / |k − a|) (degrees) per frame of world points (F, 3): n the level unit normal of the upright
    plane through the ankle holding the foot's forward axis, turned toward ``other_ankle`` (module docstring):
    positive where the knee falls inside the foot's line."""
    n = np.cross(up, toe - ankle)
    n = n - np.outer(n @ up, up)
    n = n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-300)
    n = n * np.where(np.sum(n * (other_ankle - ankle), axis=1) < 0, -1.0, 1.0)[:, None]
    a = knee - ankle
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    return np.asarray(np.degrees(np.arcsin(np.clip(np.sum(a * n, axis=1), -1.0, 1.0))), dtype=float)


def _knees_in(figure: Figure, x: Array, b: HumanoidMap, up: Array) -> Array | None:
    """:func:`knee_in` of both legs (F, 2); None without knees, feet and toes on both sides."""
    need = [f"{k}_{s}" for s in "lr" for k in ("lower_leg", "foot", "toe")]
    if any(b.get(n) is None for n in need):
        return None
    ix = {n: figure.node_names.index(b.node(n)) for n in need}
    return np.stack([knee_in(x[:, ix[f"lower_leg_{s}"]], x[:, ix[f"foot_{s}"]], x[:, ix[f"toe_{s}"]],
                             x[:, ix[f"foot_{o}"]], up) for s, o in (("l", "r"), ("r", "l"))], axis=1)


def _angle(a: Array, b: Array) -> Array:
    """∠(a, b) = atan2(|a × b|, a · b) rowwise, degrees (exact near 0° and 180°, where acos is not)."""
    return np.degrees(np.arctan2(np.linalg.norm(np.cross(a, b), axis=-1), np.sum(a * b, axis=-1)))


@dataclass(frozen=True)
class BendShares:
    """How a bend is shared: the spine's, hips' and knees' flexion (degrees, change from the standing frame) and
    each one's share of their sum."""

    spine_deg: float
    hip_deg: float
    knee_deg: float
    spine: float
    hip: float
    knee: float

    def to_dict(self) -> dict[str, float]:
        return dataclasses.asdict(self)


def bend_shares(figure: Figure, poses: ArrayLike, standing: int, bent: int, *, up: ArrayLike = (0.0, 1.0, 0.0),
                bones: HumanoidMap | None = None) -> BendShares | None:
    """The spine/hip/knee shares of the bend from frame ``standing`` to frame ``bent`` (module docstring); None for a
    figure without hips, neck, upper legs, lower legs and feet."""
    b = match_figure(figure) if bones is None else bones
    need = ("hips", "neck", "upper_leg_l", "upper_leg_r", "lower_leg_l", "lower_leg_r", "foot_l", "foot_r")
    if any(b.get(n) is None for n in need):
        return None
    names = figure.node_names
    ix = {n: names.index(b.node(n)) for n in need}
    P = np.asarray(poses, dtype=float)[[standing, bent]]
    W = figure.world_batch(P)
    rest = figure.world_batch(figure.rest_pose()[None])[0]
    u = np.asarray(up, dtype=float)
    u = u / np.linalg.norm(u)
    hips = ix["hips"]
    p_local = rest[hips, :3, :3].T @ u
    pelvis = W[:, hips, :3, :3] @ p_local  # (2, 3)
    x = W[:, :, :3, 3]
    spine = _angle(pelvis, x[:, ix["neck"]] - x[:, hips])
    hip = np.mean([_angle(pelvis, x[:, ix[f"upper_leg_{s}"]] - x[:, ix[f"lower_leg_{s}"]]) for s in "lr"], axis=0)
    knee = np.mean([_angle(x[:, ix[f"lower_leg_{s}"]] - x[:, ix[f"upper_leg_{s}"]],
                           x[:, ix[f"foot_{s}"]] - x[:, ix[f"lower_leg_{s}"]]) for s in "lr"], axis=0)
    d = [max(0.0, float(a[1] - a[0])) for a in (spine, hip, knee)]
    total = sum(d)
    shares = [v / total if total > 0 else 0.0 for v in d]
    return BendShares(d[0], d[1], d[2], *shares)


def lowest_frame(figure: Figure, poses: ArrayLike, node: str, *, up: ArrayLike = (0.0, 1.0, 0.0)) -> int:
    """The frame where ``node`` is lowest along ``up``."""
    u = np.asarray(up, dtype=float)
    h = figure.world_positions(np.asarray(poses, dtype=float))[:, figure.node_names.index(node)] @ u
    return int(np.argmin(h))


@dataclass(frozen=True)
class ReachMeasures:
    """The measures of one baked reach (module docstring); None where the figure lacks the bones a measure needs.
    Units are in the names: s, deg, deg/s."""

    min_jerk_r: float
    speed_peaks: int
    hand_start_s: float | None
    hand_peak_s: float | None
    head_start_s: float | None = None
    head_settled_s: float | None = None
    gaze_lead_s: float | None = None
    head_roll_deg: float | None = None
    head_speed_deg_per_s: float | None = None
    head_pitch_deg: float | None = None  # the head's largest pitch from level (negative: down; the neck: ~45°)
    head_lean_deg: float | None = None  # the crown's largest tilt from vertical as seen from the front
    eyes_deg: float | None = None  # the last frame's angle from the head's forward axis to the target (the eyes' turn)
    hold_deg_per_s: float = 0.0
    jitter_deg: float = 0.0
    jitter_dof: str | None = None
    chatter_deg: float = 0.0  # the zig-zag alone (jitter counts any acceleration)
    chatter_dof: str | None = None
    stretch_mm: float = 0.0  # the largest change of a bone's length over the clip (turning joints: 0)
    free_arm_deg: float | None = None  # the free arm's largest angle from hanging while the trunk bends (goal ≤ 45°)
    free_arm_start_deg: float | None = None  # ... at the first frame (the rig's own pose: an A-pose's 61°)
    free_arm_end_deg: float | None = None  # ... at the last frame
    side_bend_deg: float | None = None  # the trunk's largest lateral flexion over the clip (a person: ≤ ~35°)
    twist_deg: float | None = None  # the trunk's largest axial turn over the clip (a person: ≤ ~45°)
    flexion_deg: float | None = None  # the trunk's largest forward flexion over the clip (a person: ≤ ~80°)
    pelvis_roll_deg: float | None = None  # the pelvis's largest tilt out of level
    knee_in_deg: float | None = None  # the knees' largest fall inside the feet's line (dynamic valgus)
    bend: BendShares | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field by name (the bend shares as a dict)."""
        return dataclasses.asdict(self)


def reach_measures(figure: Figure, poses: ArrayLike, fps: float, effector: str, target: ArrayLike, arrival: int, *,
                   up: ArrayLike = (0.0, 1.0, 0.0), bones: HumanoidMap | None = None,
                   aims: ArrayLike | None = None, eye_range: float = 0.0) -> ReachMeasures:
    """Every measure of a reach of ``effector`` (a node) toward ``target`` ((3,) or (4, 4)) baked into ``poses``
    (F, D) at ``fps`` that arrives at frame ``arrival`` (the hold follows); ``aims`` (F, 3): where the head aims each
    frame when the eyes take part of the gaze (:mod:`animkit.ik.head_aim`; None: at the target), what its gaze
    angle for settling is taken against; ``eye_range`` (E, radians; with ``aims`` None): the eyes see the target
    within E of the head's forward axis, so the gaze's error is what they leave, max(0, ∠(f, t − p_head) − E)."""
    P = np.asarray(poses, dtype=float)
    u = np.asarray(up, dtype=float)
    u = u / np.linalg.norm(u)
    t = np.asarray(target, dtype=float)
    goal = t[:3, 3] if t.shape == (4, 4) else t
    names = figure.node_names
    try:
        eff = names.index(effector)
    except ValueError:
        raise AnimkitError(f"reach_measures: no node {effector!r} in the figure") from None
    W = figure.world_batch(P)
    x = W[:, :, :3, 3]
    v = _speed(x[:, eff], fps)
    peak_v = float(v.max(initial=0.0))
    hand_start = hand_peak = None
    if peak_v > 0:
        hand_start = float(np.flatnonzero(v > ONSET * peak_v)[0]) / fps
        hand_peak = float(np.argmax(v)) / fps
    wj, wdof = jitter(figure, P)
    zc, zdof = chatter(figure, P)
    out: dict[str, Any] = {"min_jerk_r": speed_correlation(v), "speed_peaks": speed_peaks(v),
                           "hand_start_s": hand_start, "hand_peak_s": hand_peak,
                           "hold_deg_per_s": hold_travel(figure, P, fps, arrival), "jitter_deg": wj,
                           "jitter_dof": wdof, "chatter_deg": zc, "chatter_dof": zdof}
    b = match_figure(figure) if bones is None else bones
    hips = b.get("hips")
    out["stretch_mm"] = 1000.0 * float(bone_stretch(figure.compiled.parent, x,
                                                     None if hips is None else names.index(hips)).max())
    rest = figure.world_batch(figure.rest_pose()[None])[0]
    head = b.get("head")
    right = _right(b, rest, names, u)
    if head is not None and right is not None:
        h = names.index(head)
        Rh = W[:, h, :3, :3]
        fwd = rest[h, :3, :3].T @ np.cross(u, right)
        pitch = head_pitch(Rh, fwd, u)
        out.update(head_roll_deg=float(head_roll(Rh, rest[h, :3, :3].T @ right, u).max()),
                   head_pitch_deg=float(pitch[int(np.argmax(np.abs(pitch)))]),
                   head_lean_deg=float(head_lean(Rh, rest[h, :3, :3].T @ u, right, u).max()))
        f = Rh @ (fwd / np.linalg.norm(fwd))
        look = goal - x[:, h]
        gaze = np.maximum(_angle(f, look) - math.degrees(eye_range), 0.0) if aims is None else \
            _angle(f, np.asarray(aims, dtype=float) - x[:, h])
        out["eyes_deg"] = float(_angle(f[-1], look[-1]))
        out.update(_gaze_timing(np.degrees(angular_speed(Rh, fps)), gaze, fps, hand_peak))
    side = _free_side(figure, b, effector)
    if side is not None:
        a = free_arm_angle(x, names.index(b.node(f"upper_arm_{side}")), names.index(b.node(f"hand_{side}")), u)
        bent = np.ones(len(a), dtype=bool) if hips is None or b.get("neck") is None else \
            trunk_lean(x, names.index(hips), names.index(b.node("neck"))) >= TRUNK_BENT
        out["free_arm_deg"] = float(a[bent].max()) if bent.any() else None
        out["free_arm_start_deg"] = float(a[0])
        out["free_arm_end_deg"] = float(a[-1])
    lateral = trunk_side_bend(figure, W, b, u, rest)
    if lateral is not None:
        out["side_bend_deg"] = float(lateral.max())
    twist = trunk_twist(figure, W, b, u, rest)
    if twist is not None:
        out["twist_deg"] = float(twist.max())
    roll = pelvis_roll(figure, W, b, u, rest)
    if roll is not None:
        out["pelvis_roll_deg"] = float(roll.max())
    if b.get("hips") is not None and b.get("neck") is not None:
        h = names.index(b.node("hips"))
        pv = W[:, h, :3, :3] @ (rest[h, :3, :3].T @ u)
        out["flexion_deg"] = float(_angle(pv, x[:, names.index(b.node("neck"))] - x[:, h]).max())
    knees = _knees_in(figure, x, b, u)
    if knees is not None:
        out["knee_in_deg"] = float(knees.max())
    out["bend"] = bend_shares(figure, P, 0, len(P) - 1, up=u, bones=b)
    return ReachMeasures(**out)


def _gaze_timing(w: Array, gaze: Array, fps: float, hand_peak: float | None) -> dict[str, float]:
    """The head's peak speed and, where it turns at all, when it starts, when its gaze (error ``gaze`` (F,), degrees)
    settles and the lead over the hand's peak (module docstring)."""
    out = {"head_speed_deg_per_s": float(w.max(initial=0.0))}
    if w.max(initial=0.0) > HEAD_STILL:  # a head that never turns neither starts, settles nor leads
        out["head_start_s"] = float(np.flatnonzero(w > HEAD_ONSET * w.max())[0]) / fps
        off = np.flatnonzero(np.abs(gaze - gaze[-1]) > SETTLED_DEG)
        settled = 0 if not len(off) else int(off[-1]) + 1
        out["head_settled_s"] = settled / fps
        if hand_peak is not None:
            out["gaze_lead_s"] = hand_peak - settled / fps
    return out


def _right(b: HumanoidMap, rest: Array, names: list[str], u: Array) -> Array | None:
    """The figure's left-to-right direction at rest, level: from the left to the right upper arm (or upper leg)."""
    for a, c in (("upper_arm_l", "upper_arm_r"), ("upper_leg_l", "upper_leg_r")):
        na, nc = b.get(a), b.get(c)
        if na is not None and nc is not None:
            d = rest[names.index(nc), :3, 3] - rest[names.index(na), :3, 3]
            d = d - u * (d @ u)
            n = float(np.linalg.norm(d))
            if n > 1e-9:
                return np.asarray(d / n, dtype=float)
    return None


def _free_side(figure: Figure, b: HumanoidMap, effector: str) -> str | None:
    """The arm that is not reaching: 'l' when the effector is on the right arm, 'r' when on the left, else None."""
    path = {a.child.name for a in figure.path_to(effector)}
    for side, other in (("r", "l"), ("l", "r")):
        hand = b.get(f"hand_{side}")
        if hand is not None and hand in path and b.get(f"upper_arm_{other}") and b.get(f"hand_{other}"):
            return other
    return None

