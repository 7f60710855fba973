"""A reach's frames: each solved toward its waypoint from the one before, paced like a person.

Frame k is solved toward waypoint k warm-started from frame k − 1, its step limited to ``max_speed`` rad/s (m/s for
prismatic DOFs) so the joints never pop; in the hold the effector stays still once within HOLD_TOL of its goal and a
frame's solve is kept only where it brings the effector HOLD_TOL closer (no chatter, no creep). A natural reach's
head looks along a path of its own that leads the hand (:mod:`animkit.motion.gaze_timing`), its world turn per frame
is held to HEAD_SPEED (the whole frame slows, the trunk with the neck), and a movement too quick for a person is
baked again slower (:func:`bake_paced`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import AnimkitError, IKError
from animkit.ik import IKProblem
from animkit.ik.tasks import Gaze, Plant, configuration
from animkit.limits import frame_count
from animkit.model.figure import Figure
from animkit.model.transforms import rotation_vector_from_matrix
from animkit.motion.gaze_timing import gaze_lead, gaze_time, gaze_turn, look_path, turn_degrees
from animkit.motion.reach_measures import minimum_jerk
from animkit.progress import progress

__all__ = ["Timeline", "bake_paced", "bake_frames", "head_capped", "gaze_path", "HOLD_TOL", "HEAD_SPEED", "STRETCH",
           "STRETCH_TOTAL", "eased_into", "posture_dofs", "posture_capped", "POSTURE_ACCEL", "carried", "braking",
           "MOMENTUM_TAU", "planned"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Timeline:
    """When a reach happens and how fast it may go: ``duration`` s of movement (the minimum-jerk path), then ``hold``
    s, at ``fps``; ``path`` = (times (K,), points (K, 3)): a moving target the effector follows instead (linearly
    interpolated at each frame); ``max_speed``: the most rad/s (m/s for a slide) a DOF moves; ``frame_iterations``:
    the most solver iterations a frame; ``lead``: s the hand waits before it starts (a natural reach's gaze starts
    at 0 and may ask for more: :func:`animkit.motion.gaze_timing.gaze_lead`)."""

    duration: float = 2.0
    hold: float = 0.5
    fps: float = 30.0
    path: tuple[ArrayLike, ArrayLike] | None = None
    max_speed: float = 2.0 * math.pi
    frame_iterations: int = 30
    lead: float = 0.0

    def __post_init__(self) -> None:
        d, h, f = self.duration, self.hold, self.fps
        if not (d > 0 and h >= 0 and f > 0 and self.lead >= 0):
            raise IKError(f"duration and fps must be > 0 and hold, lead >= 0; got duration={d}, hold={h}, fps={f}, "
                          f"lead={self.lead}")
        try:
            frame_count(self.lead + d + h, f, "reach")
        except AnimkitError as exc:
            raise IKError(str(exc)) from None
        if not (self.max_speed > 0 and int(self.frame_iterations) >= 1):
            raise IKError(f"max_speed must be > 0 and frame_iterations >= 1; got {self.max_speed}, "
                          f"{self.frame_iterations}")
        if self.path is not None:
            pt, pp = (np.asarray(a, dtype=float) for a in self.path)
            if pp.ndim != 2 or pp.shape[1] != 3 or pt.shape != (len(pp),) or np.any(np.diff(pt) <= 0):
                raise IKError("path must be (times (K,), points (K, 3)) with increasing times")
            object.__setattr__(self, "path", (pt, pp))

    @property
    def times(self) -> Array:
        """The frames' times (F,): 0, 1/fps, … lead + duration + hold."""
        return np.arange(int(round((self.lead + self.duration + self.hold) * self.fps)) + 1) / self.fps

    @property
    def arrival(self) -> int:
        """The frame where the movement ends and the hold begins."""
        return int(round((self.lead + self.duration) * self.fps))

    def waypoints(self, start: Array, end: Array) -> Array:
        """Where the effector is asked to be at each frame (F, 3): w(t) = e₀ + s(t/T)(x_end − e₀) with the
        minimum-jerk s, or the path's points at the frames' times (both from ``lead`` on)."""
        t = self.times - self.lead
        if self.path is None:
            return np.asarray(start + minimum_jerk(t / self.duration)[:, None] * (end - start), dtype=float)
        pt, pp = (np.asarray(a, dtype=float) for a in self.path)
        return np.stack([np.interp(t, pt, pp[:, k]) for k in range(3)], axis=1)


def pose_matrix(R: Array, p: Array) -> Array:
    """The 4×4 of rotation R (3, 3) and translation p (3,)."""
    M = np.eye(4)
    M[:3, :3] = R
    M[:3, 3] = p
    return M


def _position(target: Array) -> Array:
    return target[:3, 3] if target.shape == (4, 4) else target


def bake_paced(problem: IKProblem, node_index: int, tl: Timeline, ends: tuple[Array, Array, Array],
               show: tuple[str, bool], settle: Array | None = None, plan: Array | None = None
               ) -> tuple[Timeline, Array, Array, int, float]:
    """The frames of a bake from ``ends`` = (the effector's start, its end, the target). A natural reach's head
    starts first (the hand waits ``lead`` s: :mod:`animkit.motion.gaze_timing`), and a movement too quick for a
    person (a frame before arrival slowed by a factor r by the joints' max_speed or the head's HEAD_SPEED) is baked
    again clip(r, STRETCH) times slower (a minimum-jerk stroke's speeds scale as 1/T), up to STRETCH_ROUNDS times:
    the hand arrives on one minimum-jerk stroke, later than asked (the timeline returned says when), rather than
    whip the trunk and head round. ``settle``: out of reach, the direct solve's pose, which the frames ease into on
    the stroke's own timing (:func:`eased_into`). ``plan``: a reachable target's end posture (the direct solve's),
    which the frames' warm starts lean toward early in the stroke (:func:`planned`). Returns the timeline used, the
    waypoints, poses, iterations and solve time (summed over the tries)."""
    figure = problem.figure
    gaze = next((t for t in problem.tasks if isinstance(t, Gaze) and t.weight > 0), None)
    iters, t_solve = 0, 0.0
    before, longest = math.inf, STRETCH_TOTAL * tl.duration  # the last bake's slowing; the longest bake there is
    trims = 0 if np.array_equal(ends[1], _position(ends[2])) else TRIM_ROUNDS  # out of reach: the end may move in
    for attempt in range(STRETCH_ROUNDS + 1):
        looks = None
        if gaze is not None:  # the head starts first: the hand waits until the gaze settles by its peak speed
            path, lead = gaze_path(figure, gaze, problem.pose, _position(ends[2]), tl)
            tl = replace(tl, lead=lead)
            looks = (path, figure.node_names.index(gaze.head))
        waypoints = tl.waypoints(ends[0], ends[1])
        poses, it, ts, slowed = bake_frames(problem, node_index, tl, waypoints, ends[2], looks, show, plan)
        iters, t_solve = iters + it, t_solve + ts
        while trims:  # out of reach: the stroke ends where the frames' own posture still follows it
            trims -= 1
            lag = np.linalg.norm(figure.world_positions(poses[: tl.arrival + 1])[:, node_index]
                                 - waypoints[: tl.arrival + 1], axis=1)
            if lag[-1] <= LAG_TOL:  # the frames follow the stroke to its end (a lag on the way that they make up
                break  # is no lost stroke: cut there, RiggedFigure's torso reach ended 49-50 cm off, its solve 20)
            ends = (ends[0], waypoints[int(np.flatnonzero(lag <= LAG_TOL)[-1])], ends[2])  # lost for good after it
            waypoints = tl.waypoints(ends[0], ends[1])
            poses, it, ts, slowed = bake_frames(problem, node_index, tl, waypoints, ends[2], looks, show)
            iters, t_solve = iters + it, t_solve + ts
        # a slowing that a slower bake does not lessen is no speed's (a joint near gimbal lock, a frame's solve that
        # jumps): stretching again only multiplied the work (CesiumMan's reach: 2 s → 5.9 → 17 → … s, > 300 s)
        if (gaze is None or not slowed or attempt == STRETCH_ROUNDS or slowed >= before
                or tl.duration >= longest * (1.0 - 1e-9)):
            if settle is not None:  # out of reach: the frames that missed the solve's hand ease into its pose
                miss = np.ptp(figure.world_positions(np.stack([poses[-1], settle]))[:, node_index], axis=0)
                weight = float(np.clip(np.linalg.norm(miss) / LAG_TOL - 1.0, 0.0, 1.0))
                poses = eased_into(poses, tl, settle, figure.dof_limits(), weight)
            return tl, waypoints, poses, iters, t_solve
        before = slowed
        longer = min(tl.duration * float(np.clip(slowed, *STRETCH)), longest)
        # whole frames: the bell sampled the same at both ends
        tl = replace(tl, duration=math.ceil(longer * tl.fps - 1e-9) / tl.fps, lead=0.0)
    raise AssertionError("unreachable")  # pragma: no cover


TRIM_ROUNDS = 2  # out of reach, the end moved in at most this many times: to the last waypoint the frames met
# before they lost the stroke for good (a lag at the stroke's end)
LAG_TOL = 5e-3  # m: a frame whose effector is farther than this from its waypoint lost the stroke (out of reach, the
# direct solve's end may lie on another posture's branch: the frames jumped 11-12° a frame toward it near the end)
STRETCH, STRETCH_ROUNDS = (1.2, 4.0), 8  # a natural reach too quick for a person: baked 1.2–4× slower, ≤ 8 times
STRETCH_TOTAL = 16.0  # and at most this many times the asked duration in all (each bake's work bounded)


def eased_into(poses: Array, tl: Timeline, settle: Array, lim: Array, weight: float = 1.0) -> Array:
    """θ'_k = θ_k + w s(τ_k)(θ* − θ_F), s the minimum-jerk s of τ_k = (t_k − lead)/T clamped to [0, 1], within the
    limits ``lim`` (D, 2): the frames ``poses`` (F, D) eased into the direct solve's pose θ* = ``settle`` on the
    stroke's own bell, the last frame exactly θ* at w = 1 (the hold moved by θ* − θ_F whole). :func:`bake_paced`
    takes w = clip(m / LAG_TOL − 1, 0, 1), m the frames' hand's miss of the solve's: frames that got there keep their
    own posture (eased by a posture difference alone, 11° of the humanoid arm's shoulder twist, the bent arm's hand
    swung off its stroke: a second speed peak), those 2 LAG_TOL off or more end on θ*, continuously between.

    Out of reach the direct solve chooses the end posture, the hand as far toward the target as the body goes; the
    frames, each warm-started from the last, follow the straight stroke there, but they may settle on another
    posture or stop short (a stroke cut where they lost it), and which one hangs on rounding (RiggedFigure's torso
    reach ended 0.2 m or 0.5 m off with the compiled or NumPy cones). People plan a reach's end posture and move
    every joint toward it on one bell-shaped time course (Rosenbaum et al. 2001, posture-based planning): the
    difference left is spread over the stroke on its own timing, and the clip ends where the solve does whatever the
    frames chose (the easing is not held to max_speed: it spreads what the capped frames left)."""
    s = weight * minimum_jerk((tl.times - tl.lead) / tl.duration)[:, None]
    return np.asarray(np.clip(poses + s * (settle - poses[-1]), lim[:, 0], lim[:, 1]), dtype=float)


def bake_frames(problem: IKProblem, node_index: int, tl: Timeline, waypoints: Array, tgt: Array,
                looks: tuple[Array, int] | None, show: tuple[str, bool], plan: Array | None = None
                ) -> tuple[Array, int, float, float]:
    """Each frame k solved toward waypoint k from frame k − 1, its step capped at max_speed / fps (and, with a gaze,
    where the head's world turn would pass HEAD_SPEED: :func:`head_capped`); in the hold, still once within
    HOLD_TOL of the goal, and a solve kept only where it brings the effector HOLD_TOL closer. Returns the poses
    (F, D), the iterations summed, the time spent solving and, before arrival, the most a cap slowed a frame (the
    head's turn, or a step led by a DOF on the effector's path, over its cap; 0 where none did).
    ``looks``: the Gaze task's point per frame and the head's node index. ``plan``: the end posture the warm starts
    lean toward: frame k starts from (the last frame carried on) + (1 − s_k)³(π_k − π_{k−1}), π the
    :func:`planned` path and s_k the stroke's minimum-jerk share: the lean fades as the frames' solves take over
    (fading as 1 − s_k, the trunk ran ahead of the gaze: the head settled 0.2 s later on the main job; the quick
    reach across the body chattered 0.43°, 0.35° before the lean)."""
    figure = problem.figure
    n_frames = len(waypoints)
    orient = tgt[:3, :3] if tgt.shape == (4, 4) else None
    lim = figure.dof_limits()
    step_cap = tl.max_speed / tl.fps
    poses = np.empty((n_frames, figure.dof_count))
    poses[0] = problem.pose
    iters, t_solve, slowed = 0, 0.0, 0.0
    path = np.zeros(figure.dof_count, dtype=bool)  # the DOFs that carry the effector: their speed paces the reach
    for arc in figure.path_to(problem.effectors[0]):
        path[list(figure.joint_dofs.get(arc.joint.name, ()))] = True
    free = posture_dofs(problem)
    s = minimum_jerk((tl.times - tl.lead) / tl.duration)
    lean = None if plan is None or tl.path is not None else planned(figure, node_index, problem.pose, plan, s,
                                                                      waypoints[[0, -1]])
    for k in progress(range(1, n_frames), f"baking {show[0]}", enabled=False if show[1] else None):
        w = waypoints[k]
        frame_target = w if orient is None else pose_matrix(orient, w)
        held = None
        if k > tl.arrival:  # the hold: still once arrived; a solve is kept only where it brings the hand 1 mm closer
            held = float(np.linalg.norm(figure.world_positions(poses[k - 1])[0, node_index] - w))
            if held <= HOLD_TOL:
                poses[k] = poses[k - 1]
                continue
        t0 = time.perf_counter()
        start = poses[k - 1] if held is not None or k < 2 else carried(poses[k - 2: k], lim, tl.fps)
        if lean is not None and held is None:  # the planned posture's step, fading as the stroke goes on
            start = np.clip(start + (1.0 - s[k]) ** 3 * (lean[k] - lean[k - 1]), lim[:, 0], lim[:, 1])
        r = problem.solve(frame_target, start, targets=None if looks is None else {"gaze": looks[0][k]},
                          report=False)  # the frame's pose is what is kept, not its task measures
        iters += r.iterations
        t_solve += time.perf_counter() - t0
        delta = r.pose - poses[k - 1]
        biggest = float(np.max(np.abs(delta))) if delta.size else 0.0
        if biggest > step_cap:  # keep the direction, bound the speed
            delta *= step_cap / biggest
            if k <= tl.arrival and path[int(np.argmax(np.abs(delta)))]:
                slowed = max(slowed, biggest / step_cap)
        if k >= 2 and free.any():
            delta[free] = posture_capped(poses[k - 2: k, free], delta[free], lim[free], POSTURE_ACCEL)
        poses[k] = np.clip(poses[k - 1] + delta, lim[:, 0], lim[:, 1])
        if looks is not None:
            poses[k], capped = head_capped(figure, looks[1], poses[k - 1], poses[k], HEAD_SPEED / tl.fps)
            slowed = max(slowed, capped if k <= tl.arrival else 0.0)
        if held is not None and (float(np.linalg.norm(figure.world_positions(poses[k])[0, node_index] - w))
                                 > held - HOLD_TOL):
            poses[k] = poses[k - 1]  # no closer: hold still rather than chatter
    return poses, iters, t_solve, slowed


PLAN_SAMPLES = 65  # the planned path's progress is sampled at this many shares u in [0, 1] (and interpolated)
PLAN_PROGRESS = 1e-9  # a path whose hand makes less than this share of the stroke gives no plan


def planned(figure: Figure, node_index: int, start: Array, end: Array, s: Array, stroke: Array) -> Array | None:
    """π_k = θ₀ + u_k (θ* − θ₀) (F, D), u_k = g⁻¹(s_k), g(u) = (x(θ₀ + u(θ* − θ₀)) − x₀) · d / (x(θ*) − x₀) · d:
    the joint-space path from the start pose θ₀ = ``start`` to the end posture θ* = ``end``, timed so that its hand
    x keeps pace with the stroke d = ``stroke`` (2, 3) end − start; g (the path's progress along the stroke) is
    sampled at PLAN_SAMPLES shares, made monotone and interpolated in √g; s_k = ``s`` (F,) are the waypoints'
    shares. None where the path makes no progress along the stroke (less than PLAN_PROGRESS of it).

    People plan a reach's end posture and move toward it from the start (Rosenbaum et al. 2001; :func:`eased_into`
    spreads an out-of-reach end the same way). Timed by g rather than by s itself, the plan bends a straight,
    hanging arm as a person's does: its hand climbs along the arm to second order only (g ∝ u²), so u ∝ √s and the
    elbow bends from the first frame, where the least-change frame solve lifted the hand by the clavicle and the
    wrist first until, the clavicle at its limit, the elbow snapped (−6° → −24° in a frame: the high target's
    chatter)."""
    d = stroke[1] - stroke[0]
    u = np.linspace(0.0, 1.0, PLAN_SAMPLES)
    x = figure.world_positions(start + u[:, None] * (end - start))[:, node_index]
    g = np.maximum.accumulate((x - x[0]) @ d)
    if not g[-1] > PLAN_PROGRESS * (d @ d):
        return None
    share = np.interp(np.sqrt(np.clip(s, 0.0, 1.0)), np.sqrt(g / g[-1]), u)  # in √g: exact on a climb g ∝ u²
    return np.asarray(start + share[:, None] * (end - start), dtype=float)


MOMENTUM_TAU = 0.05  # s: a frame's solve starts from the last frame carried on by its velocity decayed by
# exp(−1/(fps τ)) (0.26 at 15 fps, 0.51 at 30): the least-change step from there spreads the hand's motion over the
# joints as the frames before did, where from the last frame it re-chose the split each frame (the elbow and
# shoulder kicked 2.5° a frame at 15 fps as the trunk took over; the free arm fell 46° behind the bending chest)


def carried(before: Array, lim: Array, fps: float) -> Array:
    """θ(k−1) + e^(−1/(fps τ)) (θ(k−1) − θ(k−2)) within the limits ``lim`` (D, 2), from the last two frames
    ``before`` (2, D): the warm start of frame k (τ = MOMENTUM_TAU)."""
    beta = math.exp(-1.0 / (fps * MOMENTUM_TAU))
    v = beta * (before[1] - before[0])
    room = np.where(v > 0, lim[:, 1] - before[1], before[1] - lim[:, 0])
    v = np.clip(v, -braking(room, POSTURE_ACCEL), braking(room, POSTURE_ACCEL))  # no momentum into a limit
    return np.asarray(np.clip(before[1] + v, lim[:, 0], lim[:, 1]), dtype=float)


def braking(room: Array, cap: float) -> Array:
    """The most a DOF may move this frame and still stop within ``room`` slowing by ``cap`` a frame:
    v + (v − cap) + (v − 2 cap) + … ≤ room, v = −cap/2 + √(cap²/4 + 2 cap · room)."""
    return np.asarray(-0.5 * cap + np.sqrt(0.25 * cap * cap + 2.0 * cap * np.maximum(room, 0.0)), dtype=float)


POSTURE_ACCEL = math.radians(1.6)  # rad a frame²: the most a posture DOF's step changes from one frame to the next
# (1440°/s² at 30 fps; a jitter of 0.4°: the sampled path stays smooth at any frame rate)


def posture_capped(before: Array, delta: Array, lim: Array, cap: float) -> Array:
    """A posture DOF's step: its speed changes by at most ``cap`` a frame (from the last two frames ``before``
    (2, n)), and is at most :func:`braking` (room, cap) toward a limit ``room`` away (it brakes in time instead of
    stopping dead on the limit, as a clamp would)."""
    was = before[1] - before[0]
    d = was + np.clip(delta - was, -cap, cap)
    room = np.where(d > 0, lim[:, 1] - before[1], before[1] - lim[:, 0])
    brake = braking(room, cap)
    return np.asarray(np.clip(d, -brake, brake), dtype=float)


def posture_dofs(problem: IKProblem) -> NDArray[np.bool_]:
    """The movable DOFs that move no node of the problem's (the effector, a gaze's head) nor a planted foot: a free
    arm. Their motion is posture, never the reach: a cap on their acceleration changes no goal (the neck keeps the
    gaze's pace: capped, it fell behind the look-at point and chattered)."""
    figure = problem.figure
    out = np.zeros(figure.dof_count, dtype=bool)
    out[problem.model.dofs] = True
    nodes = list(problem.effectors) + [t.node for t in problem.tasks if isinstance(t, Plant)]
    for node in nodes:
        for arc in figure.path_to(figure.effector(node)):
            out[list(figure.joint_dofs.get(arc.joint.name, ()))] = False
    return out


HOLD_TOL = 1e-3  # m: in the hold, a hand this close to its goal stays still, and a frame must gain this much
HEAD_SPEED = math.radians(190.0)  # rad/s: the most a natural reach's head turns in the world (people: ~200°/s)


def head_capped(figure: Figure, head: int, before: Array, after: Array, cap: float) -> tuple[Array, float]:
    """(``after``, 0) where the head's world turn |log(R_bᵀ R_a)| from ``before`` to ``after`` is at most ``cap``
    (rad); else (the pose on the way there where it is ``cap``, found by bisection, and turn / cap): the whole
    frame slows, the trunk with the neck, as a person's would rather than whip the head round."""
    Rb = figure.world_batch(before[None])[0, head, :3, :3]

    def turn(s: float) -> float:
        Ra = figure.world_batch((before + s * (after - before))[None])[0, head, :3, :3]
        return float(np.linalg.norm(rotation_vector_from_matrix(Rb.T @ Ra)))

    whole = turn(1.0)
    if whole <= cap:
        return after, 0.0
    lo, hi = 0.0, 1.0  # bisect (the first try at s = 1 stayed there: a frame over the cap froze whole, and the next
    for _ in range(HEAD_ROUNDS):  # leapt the step cap's 36° at 10 fps, the planted feet drifting 18 mm)
        s = 0.5 * (lo + hi)
        lo, hi = (s, hi) if turn(s) <= cap else (lo, s)
    return np.asarray(before + lo * (after - before), dtype=float), whole / cap


HEAD_ROUNDS = 8  # bisections of a frame's step against the head's cap (the step found within 2⁻⁷ of the largest)


def gaze_path(figure: Figure, gaze: Gaze, pose0: Array, goal: Array, tl: Timeline) -> tuple[Array, float]:
    """Where the head looks at each frame (F, 3) and how long the hand waits behind it
    (:mod:`animkit.motion.gaze_timing`: yaw and pitch on one minimum-jerk timeline, at most GAZE_SPEED)."""
    c = configuration(figure, pose0)
    head = c.state.p[c.node(gaze.head)]
    up = np.asarray(gaze.up, dtype=float)
    up = up / np.linalg.norm(up)
    ahead = gaze.looking_at(c, float(np.linalg.norm(goal - head))) - head
    t_gaze = gaze_time(turn_degrees(*gaze_turn(head, ahead, goal, up)), tl.duration)
    lead = max(tl.lead, gaze_lead(t_gaze, tl.duration))
    return look_path(head, ahead, goal, up, replace(tl, lead=lead).times, t_gaze), lead
