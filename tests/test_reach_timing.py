"""Reach measures (animkit.motion.reach_measures) on cases with known answers, and the main job's reaches held to
them."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
import pytest

from animkit import load
from animkit.motion.reach_measures import (
    TRUNK_BENT,
    bend_shares,
    chatter,
    free_arm_angle,
    hold_travel,
    jitter,
    knee_in,
    lowest_frame,
    minimum_jerk,
    reach_measures,
    speed_correlation,
    speed_peaks,
    trunk_lean,
)

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
FPS = 30.0


@pytest.fixture(scope="module")
def humanoid():
    return load(ROOT / "scenes" / "humanoid.toml").figure


def _speed(x: np.ndarray, fps: float = FPS) -> np.ndarray:
    return np.linalg.norm(np.diff(x, axis=0), axis=1) * fps


def test_minimum_jerk_is_flash_hogan() -> None:
    t = np.linspace(0, 1, 1001)
    s = minimum_jerk(t)
    assert s[0] == 0 and s[-1] == pytest.approx(1.0)
    # zero velocity and acceleration at both ends, symmetric, peak speed 15/8 (Flash & Hogan 1985)
    v = np.gradient(s, t)
    assert v.max() == pytest.approx(1.875, rel=1e-4)
    assert np.allclose(s, 1 - s[::-1], atol=1e-12)


def test_speed_correlation_and_peaks_known_profiles() -> None:
    t = np.linspace(0, 1, 61)
    one = minimum_jerk(t)[:, None] * [0.4, -0.2, 0.3]
    held = np.vstack([one, np.repeat(one[-1:], 15, axis=0)])
    v = _speed(held)
    assert speed_correlation(v) > 0.999 and speed_peaks(v) == 1
    # a second wind: two minimum-jerk strokes back to back
    half = minimum_jerk(np.linspace(0, 1, 31))
    two = np.concatenate([0.6 * half, 0.6 + 0.4 * half[1:]])[:, None] * [1.0, 0.0, 0.0]
    v2 = _speed(two)
    assert speed_peaks(v2) == 2 and speed_correlation(v2) < 0.5
    # constant speed (a box profile) correlates worse than the bell, and still has one peak
    box = np.linspace(0, 1, 61)[:, None] * [1.0, 0.0, 0.0]
    assert speed_peaks(_speed(box)) <= 1
    assert speed_correlation(_speed(box)) == 0.0  # no variation at all: nothing to correlate
    assert speed_peaks(np.zeros(10)) == 0


def test_hold_travel_and_jitter_known_answers(humanoid) -> None:
    D = humanoid.dof_count
    P = np.zeros((40, D))
    j = humanoid.dof_names.index("elbow_r.rx")
    assert hold_travel(humanoid, P, FPS, 30) == 0.0
    P[30:, j] = -np.radians(np.arange(10))  # 1° a frame in the hold: 30°/s
    assert hold_travel(humanoid, P, FPS, 30) == pytest.approx(30.0)
    Q = np.zeros((40, D))
    Q[:, j] = -np.radians(1.0) - np.radians(2.5) * (-1.0) ** np.arange(40)  # chatter ±2.5° every frame
    amp, dof = jitter(humanoid, Q)
    assert amp == pytest.approx(2.5) and dof == "elbow_r.rx"
    R = np.zeros((40, D))
    R[:, j] = -np.radians(np.linspace(0, 90, 40))  # a steady turn does not jitter
    assert jitter(humanoid, R)[0] < 1e-9


def test_chatter_reads_the_zig_zag_alone(humanoid) -> None:
    """Known answers: a min-jerk elbow swing of 93° in 15 frames between holds (the high target's at 15 fps) reads
    0.05° of chatter (closed form inside the swing: 22.5 A/n⁴ = 0.041°) where jitter reads 0.59° (5.77 A/n²/4); the
    same swing with ±1° injected every frame from frame 10 reads 1° (± the swing's 0.05); ±a alone reads a; a joint
    stopping dead from 2° a frame reads 2/8 = 0.25° (jitter: 0.5°)."""
    D = humanoid.dof_count
    j = humanoid.dof_names.index("elbow_r.rx")
    f = np.arange(-5, 21)
    P = np.zeros((len(f), D))
    P[:, j] = -np.radians(93.0) * minimum_jerk(f / 15.0)
    smooth, dof = chatter(humanoid, P)
    assert smooth == pytest.approx(0.0495, abs=1e-3) and dof == "elbow_r.rx"
    assert jitter(humanoid, P)[0] == pytest.approx(0.587, abs=1e-3)
    Z = P.copy()
    Z[10:, j] += np.radians(1.0) * (-1.0) ** np.arange(len(f) - 10)
    assert chatter(humanoid, Z)[0] == pytest.approx(1.0, abs=0.05)
    A = np.zeros((30, D))
    A[:, j] = np.radians(0.7) * (-1.0) ** np.arange(30)
    assert chatter(humanoid, A)[0] == pytest.approx(0.7) and jitter(humanoid, A)[0] == pytest.approx(0.7)
    S = np.zeros((30, D))
    S[:, j] = -np.radians(2.0) * np.minimum(np.arange(30), 15)  # 2° a frame, then stopped dead at frame 15
    assert chatter(humanoid, S)[0] == pytest.approx(0.25) and jitter(humanoid, S)[0] == pytest.approx(0.5)
    assert chatter(humanoid, P[:4]) == (0.0, None)  # fewer than five frames: nothing to read


def test_head_roll_speed_and_free_arm_known_answers(humanoid) -> None:
    names = humanoid.dof_names
    n = 31
    P = np.tile(humanoid.rest_pose(), (n, 1))
    P[:, names.index("neck.ry")] = np.radians(90.0) * np.arange(n) / FPS  # yaw at 90°/s: no roll
    P[:, names.index("shoulder_l.rz")] = np.radians(30.0)  # the free arm swung out 30° from hanging
    m = reach_measures(humanoid, P, FPS, "hand_r", [0.0, 1.0, 1.0], n - 1)
    assert m.head_speed_deg_per_s == pytest.approx(90.0, rel=1e-6)
    assert m.head_roll_deg == pytest.approx(0.0, abs=1e-6)
    assert m.free_arm_start_deg == pytest.approx(30.0, abs=1e-6)
    assert m.free_arm_end_deg == pytest.approx(30.0, abs=1e-6)
    assert m.free_arm_deg is None  # the trunk never bends: the measure has no frame to read
    P[:, names.index("neck.ry")] = 0.0
    P[:, names.index("neck.rz")] = np.radians(20.0)  # ear to shoulder by 20°
    m = reach_measures(humanoid, P, FPS, "hand_r", [0.0, 1.0, 1.0], n - 1)
    assert m.head_roll_deg == pytest.approx(20.0, abs=1e-6)
    x = humanoid.world_positions(humanoid.rest_pose()[None])
    i, k = humanoid.node_names.index("shoulder_l"), humanoid.node_names.index("wrist_l")
    assert free_arm_angle(x, i, k, np.array([0.0, 1.0, 0.0]))[0] == pytest.approx(0.0, abs=1e-6)


def test_free_arm_is_read_where_the_trunk_bends(humanoid) -> None:
    """The spine flexes forward 0 → 30° about its side axis with the free arm hanging (0° at rest): the arm turns
    with the chest, so its angle from vertical is the spine's flexion exactly; its 40° swing out in the first two
    frames, the trunk still upright (its lean from the first frame under TRUNK_BENT), is not counted."""
    names = humanoid.dof_names
    n = 31
    P = np.tile(humanoid.rest_pose(), (n, 1))
    flex = np.radians(30.0) * np.arange(n) / (n - 1)
    P[:, names.index("spine.rx")] = flex
    P[:2, names.index("shoulder_l.rz")] = np.radians(40.0)
    m = reach_measures(humanoid, P, FPS, "hand_r", [0.0, 1.0, 1.0], n - 1)
    x = humanoid.world_positions(P)
    h, k = humanoid.node_names.index("hips"), humanoid.node_names.index("neck")
    lean = trunk_lean(x, h, k)
    bent = lean >= TRUNK_BENT
    assert not bent[:2].any() and bent[-1]
    assert m.free_arm_start_deg == pytest.approx(40.0, abs=1e-6)
    assert m.free_arm_deg == pytest.approx(30.0, abs=1e-6) and m.free_arm_end_deg == pytest.approx(30.0, abs=1e-6)
    d = x[:, k] - x[:, h]  # the lean against the cosine rule of its own triangle
    c = np.sum(d * d[0], axis=1) / (np.linalg.norm(d, axis=1) * np.linalg.norm(d[0]))
    assert lean == pytest.approx(np.degrees(np.arccos(np.clip(c, -1.0, 1.0))), abs=1e-5)


@pytest.mark.parametrize(("bends", "expected"), [
    ({"spine.rz": 20.0, "chest.rz": 10.0}, 30.0),  # side bends add up
    ({"spine.rx": 40.0, "chest.rx": 20.0}, 0.0),  # flexing forward is no side bend
    ({"spine.ry": 30.0}, 0.0),  # nor is turning
    ({"hips.rz": 15.0}, 0.0),  # the whole body tipped with its pelvis: the shoulders stay level with it
    ({"spine.rx": 40.0, "spine.rz": 20.0}, 20.0),  # forward and sideways: only the side bend counts
])
def test_trunk_side_bend_known_angles(humanoid, bends: dict[str, float], expected: float) -> None:
    names = humanoid.dof_names
    P = np.tile(humanoid.rest_pose(), (3, 1))
    for dof, deg in bends.items():
        P[1:, names.index(dof)] = np.radians(deg)
    m = reach_measures(humanoid, P, FPS, "hand_r", [0.0, 1.0, 1.0], 2)
    assert m.side_bend_deg == pytest.approx(expected, abs=1e-9)
    assert m.to_dict()["side_bend_deg"] == m.side_bend_deg  # in compare --json


def test_gaze_lead_known_timing(humanoid) -> None:
    """The head yaws 40° over 0.5 s (minimum jerk) toward a target at eye height; the hand moves 0.3–1.3 s."""
    names = humanoid.dof_names
    n = 46
    t = np.arange(n) / FPS
    P = np.tile(humanoid.rest_pose(), (n, 1))
    yaw = 40.0 * minimum_jerk(t / 0.5)
    P[:, names.index("neck.ry")] = np.radians(yaw)
    P[:, names.index("shoulder_r.rx")] = -np.radians(60.0) * minimum_jerk((t - 0.3) / 1.0)
    head = humanoid.world_positions(humanoid.rest_pose()[None])[0, humanoid.node_names.index("head")]
    a = math.radians(40.0)
    target = head + np.array([math.sin(a), 0.0, math.cos(a)])  # forward is +z; +ry turns z toward +x
    m = reach_measures(humanoid, P, FPS, "hand_r", target, n - 1)
    settled = int(np.flatnonzero(np.abs(40.0 - yaw) <= 5.0)[0])  # the gaze angle is 40° − yaw exactly
    assert m.head_settled_s == pytest.approx(settled / FPS)
    assert m.hand_peak_s == pytest.approx(0.8, abs=1.01 / FPS)
    assert m.gaze_lead_s == pytest.approx(m.hand_peak_s - settled / FPS)
    assert m.head_start_s < m.hand_start_s


def test_bend_shares_known_angles(humanoid) -> None:
    names = humanoid.dof_names
    P = np.tile(humanoid.rest_pose(), (2, 1))
    # the pelvis tips 20° forward over straight, vertical thighs (the hips compensate), the knees bend 40°
    P[1, names.index("hips.rx")] = np.radians(20.0)
    for s in "lr":
        P[1, names.index(f"hip_{s}.rx")] = -np.radians(20.0)
        P[1, names.index(f"knee_{s}.rx")] = np.radians(40.0)
    b = bend_shares(humanoid, P, 0, 1)
    assert (b.spine_deg, b.hip_deg, b.knee_deg) == pytest.approx((0.0, 20.0, 40.0), abs=1e-6)
    assert (b.spine, b.hip, b.knee) == pytest.approx((0.0, 1 / 3, 2 / 3))
    # the spine joint bends 30° (it sits 0.08 above the hips, the neck 0.44 above it): the hips-to-neck line turns
    # atan2(0.44 sin 30°, 0.08 + 0.44 cos 30°)
    Q = np.tile(humanoid.rest_pose(), (2, 1))
    Q[1, names.index("spine.rx")] = np.radians(30.0)
    c = bend_shares(humanoid, Q, 0, 1)
    r = math.radians(30.0)
    assert c.spine_deg == pytest.approx(math.degrees(math.atan2(0.44 * math.sin(r), 0.08 + 0.44 * math.cos(r))))
    assert (c.hip, c.knee) == (0.0, 0.0)


@pytest.fixture(scope="module")
def scoop():
    scene = load(DATA / "clips" / "cmu_02_06_bend_scoop_reach.bvh")
    clip = next(iter(scene.clips.values()))
    poses = clip.sample(np.arange(1, int(clip.duration * FPS)) / FPS)  # frame 0 is the cgspeed T-pose
    return scene.figure, poses


def test_cmu_02_06_bend_hinges_at_the_hips(scoop) -> None:
    """The recorded bend-scoop-reach: at the hand's lowest, hips and knees take most of the bend, the spine about a
    fifth (what the humanoid's whole-body reach is compared with)."""
    fig, P = scoop
    low = lowest_frame(fig, P, "RightHand")
    b = bend_shares(fig, P, 0, low)
    assert b.spine + b.hip + b.knee == pytest.approx(1.0)
    assert b.hip > b.spine and b.knee > b.spine and 0.15 < b.spine < 0.3
    assert b.hip_deg > 60.0  # a deep bend: the trunk pitches far over the thighs


# --- the main job's reaches (animkit compare humanoid) held to the goals -----------------------------------------

@pytest.fixture(scope="module")
def main_job():
    from animkit.motion.reach import compare

    scene = load(ROOT / "scenes" / "humanoid.toml")
    return {p.chain: p for p in compare(scene, quiet=True).panels}


def test_main_job_moves_in_minimum_jerk_and_holds_still(main_job) -> None:
    for label, p in main_job.items():
        m = p.measures
        assert m.min_jerk_r >= 0.97 and m.speed_peaks == 1, label  # one bell, no second wind
        assert m.hold_deg_per_s <= 2.0, label  # still once arrived
    # the arm alone is out of reach: it goes as far as it can and does not chatter there (jitter 0.23°, chatter
    # 0.12°; the goal is 1°). Its stroke ends stretched, a singularity: with the reach's λ shrinking with
    # its error (λ = ‖e‖) the frames' last steps along the arm flipped the elbow and wrist ±1° (jitter 0.41°,
    # chatter 0.25°); a bake's frames damp the reach by its full λ (natural._levels)
    arm = main_job["arm"]
    assert not arm.reached and arm.measures.jitter_deg <= 0.25 and arm.measures.chatter_deg <= 0.15
    assert np.ptp(arm.poses[int(2.0 * FPS):], axis=0).max() == 0.0


def test_main_job_gaze_leads_head_level_free_arm_hangs(main_job) -> None:
    for label in ("torso", "hips-up", "whole-body"):  # the torso's neck and free arm carry its posture (ride)
        m = main_job[label].measures
        assert m.head_start_s <= m.hand_start_s, label  # the eyes and head start first
        assert m.gaze_lead_s > 0, label  # and settle before the hand's peak speed
        assert m.head_roll_deg <= 15.0 and m.head_speed_deg_per_s <= 200.0, label
        assert m.free_arm_deg <= 45.0, label  # the free arm hangs while the chest bends
        assert m.jitter_deg <= 1.0, label
        assert main_job[label].gaze_deg < 5.0, label  # and the head still ends on the target


def test_main_job_stays_within_a_persons_range_and_does_not_jitter(main_job) -> None:
    """From the baked poses' world frames (reach_measures runs FK): the trunk bends sideways at most 35° (AAOS
    thoracolumbar lateral flexion) and turns at most 45° in every panel, the whole body keeps its pelvis within 5° of
    level and its knees over the feet, and no joint jitters more than 0.5° a frame."""
    for label, p in main_job.items():
        m = p.measures
        assert m.side_bend_deg <= 35.0 + 0.05 and m.twist_deg <= 45.0, label
        assert m.jitter_deg <= 0.5, label
    wb = main_job["whole-body"].measures
    assert wb.pelvis_roll_deg <= 5.05 and wb.knee_in_deg <= 5.05
    assert main_job["torso"].reached and main_job["hips-up"].reached and main_job["whole-body"].reached


def test_a_low_reach_hinges_at_the_hips_with_the_pelvis_level() -> None:
    """Another target, lower and nearer the feet: the whole body still reaches, within the same ranges; its jitter
    is 0.55° (1.17° before the ranges and the posture's acceleration cap)."""
    from animkit.motion.reach import compare

    scene = load(ROOT / "scenes" / "humanoid.toml")
    (p,) = compare(scene, target=[-0.3, 0.25, 0.45], chains=["whole-body"], quiet=True).panels
    m = p.measures
    assert p.reached and p.feet_drift < 1e-3
    assert m.side_bend_deg <= 35.05 and m.pelvis_roll_deg <= 5.05 and m.knee_in_deg <= 5.05
    assert m.bend.hip_deg > 20.0  # it hinges at the hips
    assert m.jitter_deg <= 0.6


def test_main_job_hips_hinge_like_cmu_02_06(main_job, scoop) -> None:
    fig, P = scoop
    ref = bend_shares(fig, P, 0, lowest_frame(fig, P, "RightHand"))
    got = main_job["whole-body"].measures.bend
    assert got.hip_deg > 20.0
    for part in ("spine", "hip", "knee"):
        assert abs(getattr(got, part) - getattr(ref, part)) <= 0.1, part


def test_gravity_lets_the_free_arm_hang() -> None:
    """hang = 0: the free arm keeps its pose in the chest's frame (it tips with the chest); hang > 0: it hangs."""
    import dataclasses

    from animkit.motion.reach import priors_from_scene

    scene = load(ROOT / "scenes" / "humanoid.toml")
    fig = scene.figure
    pri = priors_from_scene(scene)
    target = np.asarray(scene.reach.target)
    names = fig.node_names
    i, k = names.index("shoulder_l"), names.index("wrist_l")
    up = np.array([0.0, 1.0, 0.0])
    angles = []
    for hang in (0.0, 1.0):
        r = dataclasses.replace(pri, hang=hang).problem(fig, "hand_r", "hips-up").solve(target)
        assert r.converged
        angles.append(float(free_arm_angle(fig.world_positions(r.pose[None]), i, k, up)[0]))
    # (< 25°: the free arm's DOFs fade their weight near their limits, which leaves it 21° out where it was 18°)
    assert angles[0] > 45.0 and angles[1] < 25.0, angles


def test_plain_out_of_reach_bake_is_one_smooth_stroke(humanoid) -> None:
    """Without priors (plain LM) a target out of the arm's reach: the hand travels one minimum-jerk stroke to the
    nearest point it can reach, then holds still."""
    from animkit.motion.reach import bake_reach

    r = bake_reach(humanoid, "hand_r", [-0.3, 0.45, 0.5], chain="arm", duration=1.0, hold=0.5, quiet=True)
    assert not r.reached
    m = r.measures
    assert m.min_jerk_r >= 0.97 and m.speed_peaks == 1 and m.hold_deg_per_s == 0.0
    # it ends where the direct solve got (the nearest point the arm reaches), not short of it
    end = humanoid.world_positions(r.result.pose[None])[0, humanoid.node_names.index("hand_r")]
    assert np.linalg.norm(r.trail[-1] - end) < 1e-3


def test_bake_reach_takes_a_problem_and_a_timeline(humanoid) -> None:
    """bake_reach(IKProblem, Timeline, target) bakes exactly what the older keyword form bakes, and takes its
    target from the problem's Reach task when none is given."""
    from animkit.errors import IKError
    from animkit.ik import LM, IKProblem
    from animkit.ik.tasks import Reach
    from animkit.motion.reach import Timeline, bake_reach

    target = [-0.2, 0.9, 0.4]
    old = bake_reach(humanoid, "hand_r", target, chain="torso", duration=1.0, hold=0.3, fps=20, quiet=True)
    problem = IKProblem(humanoid, "hand_r", "torso", solver=LM(), tol=1e-4)
    new = bake_reach(problem, Timeline(duration=1.0, hold=0.3, fps=20), target, quiet=True)
    assert np.array_equal(old.poses, new.poses) and new.chain == "torso" and new.label == "torso"
    tasks = IKProblem(humanoid, "torso", [Reach(effector="hand_r", target=target)], tol=1e-4)
    assert np.allclose(bake_reach(tasks, Timeline(duration=1.0, hold=0.3, fps=20), quiet=True).poses, old.poses)
    with pytest.raises(IKError, match="duration"):
        Timeline(duration=0.0)
    with pytest.raises(IKError, match="path"):
        Timeline(path=([0.0, 1.0], [[0.0, 0.0, 0.0]]))
    with pytest.raises(IKError, match="belong to the problem"):
        bake_reach(problem, Timeline(), target, chain="arm")
    with pytest.raises(IKError, match="no target"):
        bake_reach(problem, Timeline())


def test_compare_puts_natural_beside_plain_solvers() -> None:
    """'natural' is one of compare's panel solvers: no fork between natural and plain comparisons."""
    from animkit.errors import IKError
    from animkit.motion.reach import compare, priors_from_scene

    scene = load(ROOT / "scenes" / "humanoid.toml")
    c = compare(scene, chains=["hips-up"], solvers=["natural", "lm"], duration=1.0, hold=0.2, fps=15, quiet=True)
    nat, lm = c.panels
    assert (nat.label, lm.label) == ("hips-up · natural", "hips-up · lm")
    assert nat.natural and not lm.natural and nat.reached and lm.reached
    # the natural reach keeps the head level and lets the free arm hang; plain LM does neither
    assert nat.measures.head_roll_deg <= 15.0 < lm.measures.head_roll_deg
    # (a 1 s reach at 15 fps: 40°, 45.4° before each frame's solve carried the last frames' velocity on: the free arm
    # fell behind the bending chest; the default 2 s reach at 30 fps: 6–15°)
    assert nat.measures.free_arm_deg <= 45.0 < lm.measures.free_arm_deg
    with pytest.raises(IKError, match="plain reaches"):
        compare(scene, chains=["arm"], solvers=["lm"], priors=priors_from_scene(scene), quiet=True)


@pytest.mark.parametrize(("bends", "twist", "roll"), [
    ({"spine.ry": 30.0}, 30.0, 0.0),  # turning the chest over the pelvis is twist
    ({"spine.ry": 20.0, "chest.ry": 15.0}, 35.0, 0.0),  # twists add up
    ({"spine.rx": 40.0}, 0.0, 0.0),  # flexing forward is neither
    ({"hips.ry": 40.0}, 0.0, 0.0),  # the whole body turned: the shoulders stay square to the pelvis, which stays level
    ({"hips.rz": 15.0}, 0.0, 15.0),  # the whole body tipped sideways: the pelvis rolls 15°
    ({"hips.rx": 30.0}, 0.0, 0.0),  # the pelvis pitched forward does not roll
])
def test_trunk_twist_and_pelvis_roll_known_angles(humanoid, bends: dict[str, float], twist: float, roll: float) -> None:
    names = humanoid.dof_names
    P = np.tile(humanoid.rest_pose(), (3, 1))
    for dof, deg in bends.items():
        P[1:, names.index(dof)] = np.radians(deg)
    m = reach_measures(humanoid, P, FPS, "hand_r", [0.0, 1.0, 1.0], 2)
    assert m.twist_deg == pytest.approx(twist, abs=1e-9)
    assert m.pelvis_roll_deg == pytest.approx(roll, abs=1e-9)
    d = m.to_dict()
    assert d["twist_deg"] == m.twist_deg and d["pelvis_roll_deg"] == m.pelvis_roll_deg  # in compare --json


def test_knee_in_known_angles(humanoid) -> None:
    """A shin tilted 12° inward of the foot's upright plane reads 12; outward −12; along the plane (flexed over the
    foot) 0. From FK: bent knees over the feet read 0; the whole body rolled α about its forward axis tips one
    straight shin in and one out, by asin(0.14 sin α / √(0.14² + (0.03 sin α)²)) (the foot's toe offset (0, −0.03,
    0.14) rolled too and laid level)."""
    up = np.array([0.0, 1.0, 0.0])
    ankle, toe, other = np.array([[0.1, 0.1, 0.0]]), np.array([[0.1, 0.05, 0.15]]), np.array([[-0.1, 0.1, 0.0]])
    a = np.radians(12.0)
    inward = ankle + 0.4 * np.array([[-math.sin(a), math.cos(a), 0.0]])  # toward the other ankle (−x)
    assert knee_in(inward, ankle, toe, other, up)[0] == pytest.approx(12.0)
    outward = ankle + 0.4 * np.array([[math.sin(a), math.cos(a), 0.0]])
    assert knee_in(outward, ankle, toe, other, up)[0] == pytest.approx(-12.0)
    forward = ankle + 0.4 * np.array([[0.0, math.cos(a), math.sin(a)]])
    assert knee_in(forward, ankle, toe, other, up)[0] == pytest.approx(0.0, abs=1e-12)
    names = humanoid.dof_names
    P = np.tile(humanoid.rest_pose(), (3, 1))
    for s in "lr":
        P[1:, names.index(f"hip_{s}.rx")] = np.radians(-50.0)
        P[1:, names.index(f"knee_{s}.rx")] = np.radians(80.0)
    assert reach_measures(humanoid, P, FPS, "hand_r", [0.0, 1.0, 1.0], 2).knee_in_deg == pytest.approx(0.0, abs=1e-9)
    P = np.tile(humanoid.rest_pose(), (3, 1))
    P[1:, names.index("hips.rz")] = np.radians(10.0)
    s = math.sin(math.radians(10.0))
    want = math.degrees(math.asin(0.14 * s / math.hypot(0.14, 0.03 * s)))
    assert reach_measures(humanoid, P, FPS, "hand_r", [0.0, 1.0, 1.0], 2).knee_in_deg == pytest.approx(want, abs=1e-9)


# --- the hold and the person's measures over durations, frame rates and targets ------------------------------------

GRID_TARGETS = {"default": (-0.30, 0.45, 0.50), "high": (-0.2, 1.6, 0.4), "side": (-0.7, 1.0, 0.1),
                "across": (0.35, 1.0, 0.35), "out of reach": (-0.3, 1.2, 1.4)}


@functools.cache
def _humanoid_figure():  # type: ignore[no-untyped-def]
    return load(ROOT / "scenes" / "humanoid.toml").figure


def _held_to_the_goals(p, fps: float, label: str) -> None:
    """One natural panel against issue 21's goals: still after arrival (≤ 2°/s summed travel, and an out-of-reach
    stretch frozen: no chatter), one minimum-jerk bell, the gaze leading with the head level and not too quick, the
    free arm hanging and the trunk within a person's ranges."""
    m = p.measures
    arrival = int(round((p.lead_s + p.duration_s) * fps))
    assert m.hold_deg_per_s <= 2.0, label
    if not p.reached:
        assert np.ptp(p.poses[arrival + 1:], axis=0).max() == 0.0, label
    assert m.min_jerk_r >= 0.97 and m.speed_peaks == 1, label
    assert m.head_start_s <= m.hand_start_s and m.gaze_lead_s > 0, label
    assert m.head_roll_deg <= 15.0 and m.head_speed_deg_per_s <= 200.0, label
    assert m.free_arm_deg is None or m.free_arm_deg <= 45.0, label  # while the trunk bends (None: it never does)
    fig = _humanoid_figure()  # and, its arms resting hanging, on every frame (shoulder to wrist from FK)
    x = fig.world_positions(p.poses)
    assert free_arm_angle(x, fig.node_names.index("shoulder_l"), fig.node_names.index("wrist_l"),
                          np.array([0.0, 1.0, 0.0])).max() <= 45.0, label
    assert m.side_bend_deg <= 35.05 and m.twist_deg <= 45.05, label
    assert m.pelvis_roll_deg <= 5.05 and m.knee_in_deg <= 5.05, label


QUICK_JITTER = {"default": 1.35, "high": 1.7, "side": 1.6, "across": 1.35, "out of reach": 2.7}
# (out of reach 1.53° while a lag early in the stroke cut it: the clip ended 6.5 cm short of the solve, 0.366 m off for
# 0.302; now it ends at the solve and the stretching shoulder reads 2.64° the frame before arrival with FRAME_STEP's
# bounded iterations (2.21° without), chatter 0.79° (0.65 before, under the goal's 1°): bakeend)
QUICK_CHATTER = {"default": 0.6, "high": 0.75, "side": 0.7, "across": 0.4, "out of reach": 0.95}
# degrees: what each reads now. jitter is max |Δ²θ|/4, any acceleration (a min-jerk swing of A over n frames reads
# up to 5.77 A/n²/4); chatter, max |Δ⁴θ|/16, the zig-zag alone (reach_measures; the goal: 1°). With the goals' DOFs'
# limits held as velocity dampers in a bake's frames (natural.LIMIT_DAMPER) chatter reads 0.52 / 2.94 / 0.65 / 0.30 /
# 0.60° (1.40 / 2.98 / 0.65 / 1.33 / 0.76° without: the reaching clavicle stopped dead at its limit and the elbow
# zig-zagged ±5°); jitter 1.30 / 4.25 / 1.55 / 1.28 / 1.53° (1.82 / 4.35 / 1.55 / 1.98 / 1.63°). The high target
# starts from the straight hanging arm, a singularity (its hand climbs 5-7 cm a frame along the arm): a frame's
# iterations bounded by natural.FRAME_STEP (0.1 rad, 0.3 before: the wrist took 17° in one iteration and the
# shoulder's twist 11° and back) read chatter 0.52 / 1.71 / 0.65 / 0.35 / 0.60° (0.52 / 2.94 / 0.65 / 0.30 / 0.60)
# and jitter 1.30 / 3.66 / 1.55 / 1.29 / 1.34° (1.30 / 4.25 / 1.55 / 1.28 / 1.53); the high target's 1.7° is over
# the goal (1°): its elbow must bend as √(height) off the straight arm. Dampers on every DOF (the free arm's too) let
# the torso's free arm out of reach at 1 s, 15 fps rise 45.7° (44.5° without). With the frames' warm starts leaning
# toward the direct solve's posture on the path timed by its hand's progress (reach_frames.planned: the elbow bends
# from the first frame) chatter reads 0.48 / 0.72 / 0.37 / 0.40 / 0.79° and jitter 1.02 / 1.63 / 1.07 / 0.99 /
# 2.64° (the out-of-reach stroke, eased into its solve's pose instead, unchanged).


@pytest.mark.parametrize("name", list(GRID_TARGETS))
def test_the_quickest_reach_holds_still_and_moves_like_a_person(name: str) -> None:
    """The grid's hardest corner (a 1 s reach at 15 fps: the biggest steps a frame) for each target, everything above
    the hips; the wider study (three sets × 1/2/3 s × 15/24/30 fps) is test_reach_grid_holds_still."""
    from animkit.motion.reach import compare

    scene = load(ROOT / "scenes" / "humanoid.toml")
    (p,) = compare(scene, target=GRID_TARGETS[name], chains=["hips-up"], duration=1.0, hold=0.5, fps=15,
                   quiet=True).panels
    _held_to_the_goals(p, 15.0, name)
    assert p.measures.jitter_deg <= QUICK_JITTER[name], name
    assert p.measures.chatter_deg <= QUICK_CHATTER[name], name


def test_the_quick_high_reach_is_one_smooth_stroke() -> None:
    """The quick high target (1 s at 15 fps from the straight, hanging arm): its hand meets every waypoint (within
    0.1 mm), the hold moves nothing, and no joint zig-zags more than 0.75° (the issue's goal: 1°), its first frames
    included. Before the frames leaned toward the planned posture it read 1.71° there (wrist_r.rz, frames 2-4): the
    least-change frame solve lifted the hand by the clavicle (0.6, 4.6, 12.7° in frames 1-3, at its limit by frame 7)
    and the wrist's deviation (0.7 -> 13.2° in frame 3) until the elbow had to bend at once (-6 -> -24° in frame 4),
    since the elbow lifts a straight arm's hand to second order only. Planned (reach_frames.planned), the elbow is
    bent 10° or more by the third frame of the stroke (5.9° before)."""
    from animkit.motion.reach import compare

    scene = load(ROOT / "scenes" / "humanoid.toml")
    (p,) = compare(scene, target=GRID_TARGETS["high"], chains=["hips-up"], duration=1.0, hold=0.5, fps=15,
                   quiet=True).panels
    assert p.reached and np.linalg.norm(p.trail - p.waypoints, axis=1).max() <= 1e-4
    start, arrival = int(round(p.lead_s * 15)), int(round((p.lead_s + p.duration_s) * 15))
    assert np.ptp(p.poses[arrival:], axis=0).max() <= 1e-12  # the hold: still
    assert chatter(scene.figure, p.poses)[0] <= 0.75
    assert chatter(scene.figure, p.poses[: start + 6])[0] <= 0.75  # the first frames (Δ⁴ centred on frames 2-3)
    elbow = scene.figure.dof_names.index("elbow_r.rx")
    assert math.degrees(p.poses[start + 3, elbow]) <= -10.0


def test_the_planned_path_keeps_pace_with_the_stroke() -> None:
    """reach_frames.planned against the closed form: the humanoid's right arm hangs straight down (shoulder, elbow,
    wrist and hand on one vertical line at rest), so the path to the elbow bent by φ = 90° alone lifts the hand by
    L(1 − cos uφ), and timed by its progress up the stroke, u_k = arccos(1 − s_k(1 − cos φ))/φ: √(2 s_k)/φ near the
    start (the second-order climb), not s_k. The path's ends are the two postures; a path that makes no progress
    along the stroke gives None."""
    from animkit.motion.reach_frames import planned

    fig = _humanoid_figure()
    names = fig.node_names
    rest = fig.rest_pose()
    x = fig.world_positions(rest)[0]
    arm = x[[names.index(n) for n in ("shoulder_r", "elbow_r", "wrist_r", "hand_r")]]
    assert np.ptp(arm[:, [0, 2]], axis=0).max() <= 1e-9  # one vertical line
    phi = math.radians(90.0)
    end = rest.copy()
    end[fig.dof_names.index("elbow_r.rx")] = -phi
    hand = names.index("hand_r")
    s = np.array([0.0, 1e-4, 0.01, 0.1, 0.5, 0.9, 1.0])
    stroke = np.stack([x[hand], x[hand] + np.array([0.0, 1.0, 0.0])])
    path = planned(fig, hand, rest, end, s, stroke)
    assert path is not None
    u = np.arccos(1.0 - s * (1.0 - math.cos(phi))) / phi
    assert np.allclose(path, rest + u[:, None] * (end - rest), atol=1e-4)  # interpolated between PLAN_SAMPLES in √g
    assert np.allclose(path[[0, -1]], [rest, end], atol=1e-12)
    assert u[1] == pytest.approx(math.sqrt(2e-4) / phi, rel=1e-3) and u[1] > 50 * s[1]
    down = np.stack([x[hand], x[hand] - np.array([0.0, 1.0, 0.0])])  # the bending elbow only lifts the hand
    assert planned(fig, hand, rest, end, s, down) is None


@pytest.mark.slow
@pytest.mark.parametrize("fps", [15.0, 24.0, 30.0])
@pytest.mark.parametrize("duration", [1.0, 2.0, 3.0])
def test_reach_grid_holds_still(duration: float, fps: float) -> None:
    """Every target × the torso, hips-up and whole-body sets at this duration and frame rate (the whole body out of
    reach apart: test_whole_body_out_of_reach_is_one_stroke)."""
    from animkit.motion.reach import compare

    scene = load(ROOT / "scenes" / "humanoid.toml")
    for name, target in GRID_TARGETS.items():
        chains = ["torso", "hips-up"] + ([] if name == "out of reach" else ["whole-body"])
        c = compare(scene, target=target, chains=chains, duration=duration, hold=0.5, fps=fps, quiet=True)
        for p in c.panels:
            _held_to_the_goals(p, fps, f"{name} {p.chain} {duration:g} s {fps:g} fps")


@pytest.mark.slow
def test_whole_body_out_of_reach_is_one_stroke() -> None:
    """The whole body toward a target 1.4 m ahead, out of its reach: one stroke as asked (it was stretched to 8-38 s,
    its frames jumping 11-12° a frame toward the direct solve's posture near the end, the free arm swung up 85-112°
    as a counterweight), ending within 5 cm as near the target as the direct solve does, no joint moving more than 6° a
    frame (the stretched shoulder swings 5.7° a frame in the last 8 frames as its arm straightens)."""
    from animkit.motion.reach import compare

    scene = load(ROOT / "scenes" / "humanoid.toml")
    (p,) = compare(scene, target=GRID_TARGETS["out of reach"], chains=["whole-body"], duration=2.0, hold=0.5,
                   fps=30, quiet=True).panels
    assert p.duration_s <= 2.0 * 1.2
    _held_to_the_goals(p, 30.0, "out of reach whole-body 2 s 30 fps")
    goal = np.asarray(GRID_TARGETS["out of reach"])
    hand = scene.figure.world_positions(p.poses[-1])[0, scene.figure.node_names.index("hand_r")]
    direct = scene.figure.world_positions(p.result.pose)[0, scene.figure.node_names.index("hand_r")]
    assert np.linalg.norm(hand - goal) <= np.linalg.norm(direct - goal) + 0.05
    assert np.degrees(np.abs(np.diff(p.poses, axis=0))).max() <= 6.0
