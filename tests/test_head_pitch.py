"""The head's pitch and its lean seen from the front, on heads turned by known angles, and the Gaze task's pitch
eye range (the head aims at the target's direction with up to E of its pitch left to the eyes) on a closed-form
aim point and a natural solve whose head then takes only its share.

Oracles: rotations built from their angles (yaw about +y, pitch about the ear axis +x, roll about the forward axis
+z, forward +z), the crown's front-view lean of yaw ψ then pitch φ in closed form, atan(tan φ sin ψ), and the aim
point from spherical coordinates about the head."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import animkit
from animkit.ik.head_aim import head_pitch_share, pitch_shared_aim, shift_shared_aim
from animkit.motion.reach_measures import head_lean, head_pitch

UP = np.array([0.0, 1.0, 0.0])
RIGHT = np.array([-1.0, 0.0, 0.0])  # forward +z, up +y: the head's left-to-right axis, as seen from its front
FWD = np.array([0.0, 0.0, 1.0])


def _rot(axis: str, a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    i, j = {"x": (1, 2), "y": (2, 0), "z": (0, 1)}[axis]
    R = np.eye(3)
    R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    return R


def _head(yaw: float = 0.0, pitch_down: float = 0.0, roll: float = 0.0) -> np.ndarray:
    """World rotation of a head at rest looking +z: roll about its forward axis, pitch down about its ear axis, then
    yaw about the world up (degrees)."""
    return (_rot("y", math.radians(yaw)) @ _rot("x", math.radians(pitch_down)) @ _rot("z", math.radians(roll)))[None]


def test_a_head_pitched_30_degrees_reads_30_down() -> None:
    assert head_pitch(_head(pitch_down=30.0), FWD, UP)[0] == pytest.approx(-30.0, abs=1e-9)
    assert head_pitch(_head(pitch_down=-30.0), FWD, UP)[0] == pytest.approx(30.0, abs=1e-9)
    assert head_pitch(_head(yaw=70.0, pitch_down=30.0), FWD, UP)[0] == pytest.approx(-30.0, abs=1e-9)
    assert head_pitch(_head(roll=25.0), FWD, UP)[0] == pytest.approx(0.0, abs=1e-9)


def test_lean_from_the_front_roll_reads_roll_yaw_or_pitch_alone_read_zero() -> None:
    assert head_lean(_head(roll=20.0), UP, RIGHT, UP)[0] == pytest.approx(20.0, abs=1e-9)
    assert head_lean(_head(roll=-20.0), UP, RIGHT, UP)[0] == pytest.approx(20.0, abs=1e-9)
    for yaw in (-80.0, -35.0, 10.0, 60.0):
        assert head_lean(_head(yaw=yaw), UP, RIGHT, UP)[0] == pytest.approx(0.0, abs=1e-9)
    assert head_lean(_head(pitch_down=60.0), UP, RIGHT, UP)[0] == pytest.approx(0.0, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.floats(-80.0, 80.0), st.floats(-70.0, 70.0))
def test_pitch_after_yaw_leans_the_crown_as_the_closed_form(yaw: float, pitch: float) -> None:
    """A level head (ears level) yawed ψ then pitched φ down: its crown seen from the front leans atan(tan φ sin ψ)
    (the case CesiumMan showed: 63° down and turned to the hand, the crown 38–40° over with the ears level)."""
    want = abs(math.degrees(math.atan(math.tan(math.radians(pitch)) * math.sin(math.radians(yaw)))))
    R = _head(yaw=yaw, pitch_down=pitch)
    assert head_lean(R, UP, RIGHT, UP)[0] == pytest.approx(want, abs=1e-7)
    assert head_pitch(R, FWD, UP)[0] == pytest.approx(-pitch, abs=1e-7)


def _spherical(head: np.ndarray, rho: float, yaw: float, pitch: float) -> np.ndarray:
    y, p = math.radians(yaw), math.radians(pitch)
    return head + rho * np.array([math.cos(p) * math.sin(y), math.sin(p), math.cos(p) * math.cos(y)])


def _smoothstep(t: float) -> float:
    t = min(1.0, max(0.0, t))
    return t * t * (3.0 - 2.0 * t)


@settings(max_examples=60, deadline=None)
@given(st.floats(-170.0, 170.0), st.floats(-89.0, 89.0), st.floats(0.1, 3.0), st.floats(10.0, 40.0))
def test_the_aim_point_keeps_yaw_and_distance_and_leaves_part_of_the_pitch_to_the_eyes(
        yaw: float, pitch: float, rho: float, eyes: float) -> None:
    head = np.array([0.3, 1.6, -0.2])
    target = _spherical(head, rho, yaw, pitch)
    aim = pitch_shared_aim(head, target, UP, FWD, math.radians(eyes))
    share = eyes * _smoothstep((abs(pitch) - 5.0 * eyes / 6.0) / (1.5 * eyes))  # the eyes' part, degrees
    want = _spherical(head, rho, yaw, math.copysign(abs(pitch) - share, pitch))
    assert np.allclose(aim, want, atol=1e-9)
    d = (aim - head) / rho  # the eyes never take more than their range, nor the head turn past the target
    assert -1e-9 <= abs(pitch) - abs(math.degrees(math.asin(d[1]))) <= eyes + 1e-9


def test_the_eyes_share_on_known_pitches() -> None:
    """E = 30°: the head alone to 25°, then 32.5° of a 47.5° pitch (half the eyes' range), 40° of 70°, 60° of 90°;
    continuous, never falling."""
    E = math.radians(30.0)
    for phi, head in ((20.0, 20.0), (25.0, 25.0), (47.5, 32.5), (70.0, 40.0), (90.0, 60.0), (-47.5, -32.5)):
        assert math.degrees(head_pitch_share(math.radians(phi), E)) == pytest.approx(head, abs=1e-9)
    x = np.radians(np.linspace(0.0, 90.0, 9001))
    y = np.array([head_pitch_share(float(v), E) for v in x])
    assert np.all(np.diff(y) >= -1e-12) and np.max(np.abs(np.diff(y, 2))) < 1e-6  # monotone, no kink


def test_a_target_straight_below_is_aimed_along_the_heads_own_yaw() -> None:
    head = np.array([0.0, 1.6, 0.0])
    ahead = np.array([1.0, -0.3, 1.0])  # the head's forward axis: its ground direction (1, 0, 1)/√2
    aim = pitch_shared_aim(head, head - [0.0, 0.8, 0.0], UP, ahead, math.radians(30.0))
    assert np.allclose(aim, _spherical(head, 0.8, 45.0, -60.0), atol=1e-12)


def _turned(s: np.ndarray, v: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues: the unit ``s`` turned by ``angle`` (rad) about s × v toward the unit ``v``."""
    k = np.cross(s, v)
    k = k / np.linalg.norm(k)
    return s * math.cos(angle) + np.cross(k, s) * math.sin(angle) + k * float(k @ s) * (1.0 - math.cos(angle))


@settings(max_examples=60, deadline=None)
@given(st.floats(-170.0, 170.0), st.floats(-85.0, 85.0), st.floats(-60.0, 60.0), st.floats(0.1, 3.0),
       st.floats(10.0, 40.0))
def test_the_shift_shared_aim_turns_the_start_toward_the_target_by_the_heads_share(
        yaw: float, pitch: float, start_yaw: float, rho: float, eyes: float) -> None:
    """The aim point is ρ from the head along the body's start forward ŝ turned toward the target's direction v̂ (about
    ŝ × v̂, Rodrigues) by φ_h = head_pitch_share(φ, E) of their angle φ: the eyes take the rest, at most E."""
    head = np.array([0.3, 1.6, -0.2])
    target = _spherical(head, rho, yaw, pitch)
    s = _spherical(np.zeros(3), 1.0, start_yaw, 0.0)
    v = (target - head) / rho
    phi = math.acos(float(np.clip(s @ v, -1.0, 1.0)))
    aim = shift_shared_aim(head, target, 2.0 * s, math.radians(eyes))
    if phi <= 5.0 * math.radians(eyes) / 6.0 or math.sin(phi) < 1e-6:
        assert np.allclose(aim, target, atol=1e-12)
        return
    want = head + rho * _turned(s, v, head_pitch_share(phi, math.radians(eyes)))
    assert np.allclose(aim, want, atol=1e-9)
    d = (aim - head) / rho
    left = math.degrees(math.acos(float(np.clip(d @ v, -1.0, 1.0))))  # what the eyes take
    assert -1e-7 <= left <= eyes + 1e-7


def test_straight_ahead_the_shift_share_is_the_pitch_share() -> None:
    """A target straight ahead and below (or above) the body's level forward: the gaze shift is a pitch, and both
    shares give the same aim point (E = 30°: 70° below is aimed at 40° below)."""
    head = np.array([0.0, 1.6, 0.0])
    for pitch in (-89.0, -70.0, -47.5, -20.0, 35.0, 60.0):
        target = _spherical(head, 0.9, 0.0, pitch)
        a = shift_shared_aim(head, target, FWD, math.radians(30.0))
        assert np.allclose(a, pitch_shared_aim(head, target, UP, FWD, math.radians(30.0)), atol=1e-12)
    assert np.allclose(shift_shared_aim(head, _spherical(head, 0.9, 0.0, -70.0), FWD, math.radians(30.0)),
                       _spherical(head, 0.9, 0.0, -40.0), atol=1e-12)


def test_a_natural_solve_pitches_the_head_by_its_share_only() -> None:
    """The humanoid scene's natural hips-up reach to a point low in front: unlimited (``eye_range`` None), the head
    looks straight at it (pitched 82° down, the trunk bent); with the eyes' share (``Priors``' default,
    ``eyes=EYE_RANGE``) the head looks, within 2.5° (the solve's EYE_TOL, 2°, and its tolerance), at the aim point
    reckoned in closed form from where its neck's base ended (the body's start forward turned toward the target by
    head_pitch_share of their angle, at the target's distance), the eyes take at most their 30° (+ 2.5°) and the
    reach is still met."""
    import dataclasses

    from animkit.ik import IKProblem
    from animkit.ik.natural import EYE_RANGE
    from animkit.ik.tasks import Gaze
    from animkit.motion.reach import priors_from_scene

    from .conftest import SCENES

    scene = animkit.load(SCENES / "humanoid.toml")
    fig = scene.figure
    problem = priors_from_scene(scene).problem(fig, "hand_r", "hips-up")
    gaze = next(t for t in problem.tasks if isinstance(t, Gaze))
    assert gaze.eye_range == pytest.approx(EYE_RANGE)
    # 61° below the head's level, to its right
    target = fig.world(fig.rest_pose())[gaze.head][:3, 3] + np.array([-0.25, -1.0, 0.45])
    fwd = np.asarray(gaze.forward, dtype=float)

    def pitch(pose: np.ndarray) -> float:
        return float(head_pitch(fig.world(pose)[gaze.head][None, :3, :3], fwd, UP)[0])

    free = IKProblem(fig, problem.chain, solver=problem.solver,
                     tasks=[dataclasses.replace(t, eye_range=None) if isinstance(t, Gaze) else t
                            for t in problem.tasks])
    r_free, r = free.solve(target), problem.solve(target)
    assert r.converged and r.position_error < 1e-4 and r_free.converged
    assert pitch(r_free.pose) < -50.0
    base = fig.world(r.pose)["neck"][:3, 3]  # the neck's base: the topmost joint of the gaze's DOFs
    v = target - base
    s = np.asarray(gaze.start, dtype=float)  # the body's level forward at the start: the gaze shift's origin
    assert abs(float(s @ UP)) < 1e-12
    vh = v / np.linalg.norm(v)
    aim = base + float(np.linalg.norm(v)) * _turned(s, vh, head_pitch_share(math.acos(float(s @ vh)), EYE_RANGE))
    W = fig.world(r.pose)[gaze.head]
    f = W[:3, :3] @ fwd

    def angle(d: np.ndarray) -> float:
        return math.degrees(math.acos(float(f @ d) / float(np.linalg.norm(d))))

    assert angle(aim - W[:3, 3]) < 2.5 and angle(target - W[:3, 3]) <= 30.0 + 2.5
    assert pitch(r.pose) > pitch(r_free.pose) + 20.0
    assert r.tasks is not None and r.tasks["gaze"] < 2.5


def test_a_head_whose_eyes_take_the_pitch_settles_on_its_aim() -> None:
    """The humanoid's head yaws 40° over 0.5 s (minimum jerk) toward a target 40° aside and 60° below; given where it
    aims (the target's yaw, level: the eyes take the pitch), it settles when its own angle to that point, 40° − yaw
    exactly, is within 5° of the end; it yaws 40° and pitches 0."""
    from animkit.motion.reach_measures import reach_measures

    fig, fps, n, yaw, P, head = _yawing_head()
    target = _spherical(head, 1.0, 40.0, -60.0)  # forward +z; +ry turns z toward +x
    aim = _spherical(head, 1.0, 40.0, 0.0)
    m = reach_measures(fig, P, fps, "hand_r", target, n - 1, aims=np.tile(aim, (n, 1)))
    settled = int(np.flatnonzero(np.abs(40.0 - yaw) <= 5.0)[0])
    assert m.head_settled_s == pytest.approx(settled / fps)
    assert m.gaze_lead_s == pytest.approx(m.hand_peak_s - settled / fps)
    assert m.head_pitch_deg == pytest.approx(0.0, abs=1e-9) and m.head_lean_deg == pytest.approx(0.0, abs=1e-9)


def test_the_gaze_settles_once_the_eyes_can_reach_the_target() -> None:
    """The same head yawing 40° toward a target 40° aside and 60° below, measured with the eyes' range E = 30° (the
    gaze is on the target once the eyes can take what is left, max(0, ∠ − E)): the angle from a level head yawed ψ
    is acos(cos 60° cos(40° − ψ)), ending at 60°, so the gaze's error ends at 30° and is within 5° of it from
    ∠ ≤ 65°, i.e. ψ ≥ 40° − acos(cos 65° / cos 60°) (7.69°): it settles at the first frame past that yaw. A target
    20° aside and 20° below is within the eyes' range all along (∠ ≤ acos(cos² 20°) = 28°): settled at frame 0."""
    from animkit.motion.reach_measures import reach_measures

    fig, fps, n, yaw, P, head = _yawing_head()
    target = _spherical(head, 1.0, 40.0, -60.0)
    m = reach_measures(fig, P, fps, "hand_r", target, n - 1, eye_range=math.radians(30.0))
    edge = 40.0 - math.degrees(math.acos(math.cos(math.radians(65.0)) / math.cos(math.radians(60.0))))
    assert edge == pytest.approx(7.69, abs=0.01)
    settled = int(np.flatnonzero(yaw >= edge)[0])
    assert m.head_settled_s == pytest.approx(settled / fps)
    assert m.eyes_deg == pytest.approx(60.0, abs=1e-6)  # the last frame: level, yawed onto the target's yaw
    # a target the eyes take from the start (28° off: within 30°) is seen at once: settled at frame 0
    near = _spherical(head, 1.0, 20.0, -20.0)
    assert math.degrees(math.acos(math.cos(math.radians(20.0)) ** 2)) < 30.0
    assert reach_measures(fig, P, fps, "hand_r", near, n - 1, eye_range=math.radians(30.0)).head_settled_s == 0.0
    assert reach_measures(fig, P, fps, "hand_r", near, n - 1).head_settled_s > 0.0  # the head alone: not at once


def _main_job(chain: str, eyes: float | None = None):  # type: ignore[no-untyped-def]
    """The README's main job's ``chain`` panel (the humanoid scene's own priors; ``eyes``: their eye range
    replaced) and its measures."""
    import dataclasses

    from animkit.motion.reach import compare, priors_from_scene

    from .conftest import SCENES

    scene = animkit.load(SCENES / "humanoid.toml")
    pri = priors_from_scene(scene) if eyes is None else dataclasses.replace(priors_from_scene(scene), eyes=eyes)
    return compare(scene, chains=[chain], priors=pri, quiet=True).panels[0].measures


def test_the_main_jobs_head_pitches_like_a_persons() -> None:
    """The README's main job, hips-up panel (the humanoid scene's reach to (−0.30, 0.45, 0.50), ~80° below the
    eyes once the trunk has bent over it): with the eyes' share (the default) the head ends pitched 45–55° down
    and the eyes carry at most their 30° (the neck's flexion is ~45–50°, AAOS; the eyes the rest); the head alone
    (``eyes=0``) looks straight at the floor, 80° down. Both keep the ears level and the head under 200°/s."""
    m, free = _main_job("hips-up"), _main_job("hips-up", eyes=0.0)
    assert -55.0 <= m.head_pitch_deg <= -45.0 and m.eyes_deg <= 30.0 + 0.5
    assert free.head_pitch_deg < -75.0 and free.eyes_deg < 1.0
    for x in (m, free):
        assert x.head_roll_deg <= 15.0 and x.head_speed_deg_per_s <= 200.0 and x.gaze_lead_s > 0


def test_the_main_jobs_whole_body_head_pitches_like_a_persons() -> None:
    """The same on the main job's whole-body panel: the knees and hips take their share of the bend, so the head
    ends lower and the target less steeply below it, and the head pitches 45–55° down with the eyes carrying at
    most their 30° (measured −53.8°, the eyes 29°; before, with the comfort pose's knees at 40°: −55.8°, the eyes
    at their 30° and the head past the band), its ears level, under 200°/s, the gaze leading."""
    m = _main_job("whole-body")
    assert -55.0 <= m.head_pitch_deg <= -45.0 and m.eyes_deg <= 30.0 + 0.5
    assert m.head_roll_deg <= 15.0 and m.head_speed_deg_per_s <= 200.0 and m.gaze_lead_s > 0


def _yawing_head():  # type: ignore[no-untyped-def]
    """The humanoid's head yawing 40° on a 0.5 s minimum-jerk turn while the right arm lifts 60° from 0.3 s to 1.3 s
    (30 fps, 46 frames): (figure, fps, frames, the yaw per frame (°), the poses, the head's rest position)."""
    from animkit.motion.reach_measures import minimum_jerk

    from .conftest import SCENES

    fig = animkit.load(SCENES / "humanoid.toml").figure
    fps, n = 30.0, 46
    t = np.arange(n) / fps
    P = np.tile(fig.rest_pose(), (n, 1))
    yaw = 40.0 * minimum_jerk(t / 0.5)
    P[:, fig.dof_names.index("neck.ry")] = np.radians(yaw)
    P[:, fig.dof_names.index("shoulder_r.rx")] = -np.radians(60.0) * minimum_jerk((t - 0.3) / 1.0)
    head = fig.world_positions(fig.rest_pose()[None])[0, fig.node_names.index("head")]
    return fig, fps, n, yaw, P, head
