"""A natural reach's head, stillness and cones on cases with known answers: the look-at path's speed in closed form,
the head's world angular speed from FK over a range of reach durations, a gaze path that stops at the neck's limit,
and CesiumMan's coned reach meeting its target."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from animkit import load
from animkit.motion.gaze_timing import GAZE_SPEED, gaze_lead, gaze_time, gaze_turn, look_path, turn_degrees
from animkit.motion.reach_measures import jitter

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
UP = np.array([0.0, 1.0, 0.0])


def _head_speed_deg(R: np.ndarray, fps: float) -> np.ndarray:
    """The angle of R(f)ᵀR(f+1) from its trace, acos((tr − 1)/2), times fps: written apart from the measure's log."""
    D = np.swapaxes(R[:-1], 1, 2) @ R[1:]
    tr = np.trace(D, axis1=1, axis2=2)
    return np.degrees(np.arccos(np.clip((tr - 1.0) / 2.0, -1.0, 1.0))) * fps


def _level_head(yaw: np.ndarray, pitch: np.ndarray) -> np.ndarray:
    """A level head's rotation: yaw about +y, then pitch about its own ear axis (+x, forward +z, pitch up +)."""
    cy, sy, cp, sp = np.cos(yaw), np.sin(yaw), np.cos(pitch), np.sin(pitch)
    Ry = np.zeros((len(yaw), 3, 3))
    Ry[:, 0, 0], Ry[:, 0, 2], Ry[:, 1, 1], Ry[:, 2, 0], Ry[:, 2, 2] = cy, sy, 1.0, -sy, cy
    Rx = np.zeros((len(yaw), 3, 3))
    Rx[:, 0, 0], Rx[:, 1, 1], Rx[:, 1, 2], Rx[:, 2, 1], Rx[:, 2, 2] = 1.0, cp, sp, -sp, cp
    return Ry @ Rx


def test_look_path_turns_a_level_head_at_most_gaze_speed() -> None:
    """The look-at path in yaw and pitch: a level head that follows it turns at ṡ A / T_g, peak 1.875 A / T_g ≤
    GAZE_SPEED, and ends exactly on the goal; the earlier straight chord turned the same head faster mid-way."""
    head = np.array([0.0, 1.6, 0.0])
    ahead = np.array([0.0, 0.0, 1.0])
    yaw_b, pitch_b = math.radians(-50.0), math.radians(-55.0)  # down and to the side: a low reach
    rho = 0.9
    goal = head + rho * np.array([math.cos(pitch_b) * math.sin(yaw_b), math.sin(pitch_b),
                                  math.cos(pitch_b) * math.cos(yaw_b)])
    yaw, pa, pb = gaze_turn(head, ahead, goal, UP)
    assert (yaw, pa, pb) == pytest.approx((yaw_b, 0.0, pitch_b), abs=1e-12)
    A = turn_degrees(yaw, pa, pb)
    assert A == pytest.approx(math.degrees(math.hypot(yaw_b, pitch_b)))
    T = gaze_time(A, 2.0)
    assert 1.875 * A / T <= GAZE_SPEED + 1e-9
    fps = 600.0
    t = np.arange(int(T * fps) + 30) / fps
    pts = look_path(head, ahead, goal, UP, t, T)
    assert np.allclose(pts[-1], goal) and np.allclose(pts[0], head + rho * ahead)
    d = (pts - head) / np.linalg.norm(pts - head, axis=1, keepdims=True)
    # the level head looking along d: yaw atan2(dx, dz), pitch asin(dy)
    R = _level_head(np.arctan2(d[:, 0], d[:, 2]), np.arcsin(np.clip(d[:, 1], -1, 1)))
    w = _head_speed_deg(R, fps)
    assert w.max() == pytest.approx(1.875 * A / T, rel=2e-3)
    # the straight chord from the start point to the goal (the earlier path), same timeline: faster in the middle
    from animkit.motion.reach_measures import minimum_jerk

    s = minimum_jerk(t / T)[:, None]
    c = head + rho * ahead + s * (goal - head - rho * ahead) - head
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    Rc = _level_head(np.arctan2(c[:, 0], c[:, 2]), np.arcsin(np.clip(c[:, 1], -1, 1)))
    assert _head_speed_deg(Rc, fps).max() > 1.1 * w.max()


def test_gaze_lead_lets_the_gaze_settle_by_the_hand_peak() -> None:
    assert gaze_lead(0.6, 2.0) == 0.0  # a long reach: its peak (1 s) comes after the gaze (0.6 s)
    assert gaze_lead(0.6, 0.4) == pytest.approx(0.4)  # a short one waits 0.4 s: peak at 0.4 + 0.2 = 0.6 s
    assert gaze_time(90.0, 0.1) == pytest.approx(1.875 * 90.0 / GAZE_SPEED)  # the speed limit wins


@pytest.fixture(scope="module")
def humanoid_scene():
    return load(ROOT / "scenes" / "humanoid.toml")


@pytest.mark.parametrize("duration", [0.1, 0.4, 1.0])
def test_head_world_speed_stays_human_for_any_duration(humanoid_scene, duration) -> None:
    """hips-up at 15 fps: the head's world angular speed from FK (acos of the trace) stays ≤ 200°/s however short
    the reach asked; the gaze starts first and settles before the hand's peak speed; the hand meets the target on
    one bell (a reach too quick for a person is baked slower: its duration_s says how long it took)."""
    from animkit.motion.reach import compare

    fig = humanoid_scene.figure
    c = compare(humanoid_scene, chains=["hips-up"], duration=duration, hold=0.3, fps=15, quiet=True)
    p = c.panels[0]
    h = fig.node_names.index("head")
    R = fig.world_batch(p.poses)[:, h, :3, :3]
    assert _head_speed_deg(R, c.fps).max() <= 200.0
    m = p.measures
    assert m.head_start_s <= m.hand_start_s and m.gaze_lead_s > 0
    assert p.gaze_deg < 5.0 and p.clip_final_error < 1e-3
    assert m.speed_peaks == 1 and m.min_jerk_r >= 0.97
    assert p.duration_s >= duration and p.lead_s >= 0.0


def _pitch_sweep(fig, frames: int, step: float) -> tuple[np.ndarray, list[int]]:
    """A synthetic gaze path: the look-at point sweeps down at ``step`` degrees a frame, far enough that head.rx
    (±30°) meets its limit and neck.rx (−40…50°) must take the rest; the hand held where it is."""
    from animkit.ik import IKProblem
    from animkit.ik.natural import Natural
    from animkit.ik.tasks import Gaze, Reach

    names = fig.dof_names
    neck = [names.index(n) for n in ("neck.rz", "neck.rx", "neck.ry", "head.rx")]
    arm = [names.index(n) for n in ("shoulder_r.rx", "shoulder_r.rz", "elbow_r.rx")]
    p0 = fig.rest_pose()
    hand = fig.world_positions(p0[None])[0, fig.node_names.index("hand_r")]
    gaze = Gaze(head="head", forward=(0.0, 0.0, 1.0), ear=(1.0, 0.0, 0.0), dofs=tuple(neck))
    prob = IKProblem(fig, [names[i] for i in neck + arm], [Reach(effector="hand_r", target=hand), gaze],
                     pose=p0, solver=Natural(max_iter=8, settle=False), tol=1e-4)
    head = fig.world_positions(p0[None])[0, fig.node_names.index("head")]
    P = [p0]
    for k in range(1, frames):
        a = math.radians(step * k)
        P.append(prob.solve(hand, P[-1], targets={"gaze": head + np.array([0.0, -math.sin(a), math.cos(a)])}).pose)
    out = np.tile(p0, (frames, 1))
    out[:, neck] = np.asarray(P)[:, neck]  # the neck's DOFs alone: the jitter measured is theirs
    return out, neck


def test_gaze_path_into_a_limit_hands_over_smoothly(humanoid_scene, monkeypatch) -> None:
    """The head's pitch runs into its limit while the gaze goes on down: head.rx slows into it and neck.rx takes
    over gradually (the posture DOFs' weights fade near their limits), so the neck's largest second difference stays
    small; with the fade off (LIMIT_BAND 0: a DOF dropped only once its step would cross the limit) the same sweep
    kinks where head.rx stops."""
    import animkit.ik.natural as natural

    fig = humanoid_scene.figure
    P, _ = _pitch_sweep(fig, 40, 2.0)
    assert np.degrees(P[-1, fig.dof_names.index("head.rx")]) == pytest.approx(30.0, abs=1.0)  # at its limit
    smooth = jitter(fig, P)[0]
    monkeypatch.setattr(natural, "LIMIT_BAND", 0.0)
    kinked = jitter(fig, _pitch_sweep(fig, 40, 2.0)[0])[0]
    assert smooth < 0.2 and kinked > 2.0 * smooth, (smooth, kinked)


def test_cesium_man_coned_reach_meets_its_target() -> None:
    """CesiumMan (ten swing-twist cones): the natural torso reach toward (−0.3, 0.9, 0.4), which plain LM meets, is
    met within 1 mm by the direct solve and by the bake's last frame (the cone projections no longer undo the reach:
    it stalled 17–19 mm short), on one minimum-jerk stroke."""
    from animkit.motion.reach import compare

    scene = load(DATA / "CesiumMan.glb")
    c = compare(scene, effector="hand_r", target=[-0.3, 0.9, 0.4], chains=["torso"], solvers=["natural"],
                duration=1.0, hold=0.3, fps=15, quiet=True)
    p = c.panels[0]
    assert p.result.position_error < 1e-3 and p.clip_final_error < 1e-3
    hand = p.trail[-1]  # the hand's site (animkit.motion.reach_surface), where the wrist's centre was aimed before
    assert np.linalg.norm(hand - [-0.3, 0.9, 0.4]) < 1e-3
    assert p.measures.speed_peaks == 1 and p.measures.min_jerk_r >= 0.97


def test_head_cap_slows_a_frame_to_the_cap_not_to_a_stop(humanoid_scene) -> None:
    """A frame that turns the head 3 caps (the neck's yaw alone: the head's world turn is the yaw) is cut to the
    pose where the head has turned one cap (bisection: within 3 cap · 2⁻⁸), and says it was 3 times over; one
    within the cap is kept whole. (It froze the whole frame: the bisection never left s = 1.)"""
    from animkit.motion.reach_frames import HEAD_ROUNDS, head_capped

    fig = humanoid_scene.figure
    cap = math.radians(10.0)
    before = fig.rest_pose()
    after = before.copy()
    after[fig.dof_names.index("neck.ry")] = 3 * cap
    head = fig.node_names.index("head")
    kept, over = head_capped(fig, head, before, after, cap)
    assert over == pytest.approx(3.0)
    assert kept[fig.dof_names.index("neck.ry")] == pytest.approx(cap, abs=3 * cap * 2.0 ** -HEAD_ROUNDS)
    assert kept[fig.dof_names.index("neck.ry")] <= cap
    small = before.copy()
    small[fig.dof_names.index("neck.ry")] = 0.9 * cap
    same, none = head_capped(fig, head, before, small, cap)
    assert none == 0.0 and np.array_equal(same, small)
