"""The head's pitch and its lean seen from the front, on heads turned by known angles, and the Gaze task's pitch
limit (the head aims at the target's direction with its pitch softly clamped under ±φ_max, the eyes taking the
rest) on a closed-form aim point and a natural solve whose head then stops at the limit.

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
from animkit.ik.head_aim import pitch_clamped_aim, soft_limit
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


@settings(max_examples=60, deadline=None)
@given(st.floats(-170.0, 170.0), st.floats(-89.0, 89.0), st.floats(0.1, 3.0), st.floats(10.0, 60.0))
def test_the_aim_point_keeps_yaw_and_distance_and_clamps_pitch(yaw: float, pitch: float, rho: float,
                                                               limit: float) -> None:
    head = np.array([0.3, 1.6, -0.2])
    target = _spherical(head, rho, yaw, pitch)
    aim = pitch_clamped_aim(head, target, UP, FWD, math.radians(limit))
    knee = 10.0  # the head's pitch: the target's up to limit − 10°, then 10° short of the limit at e-fold per 10°
    soft = limit - knee * math.exp(-(abs(pitch) - (limit - knee)) / knee)
    want = target if abs(pitch) <= limit - knee else _spherical(head, rho, yaw, math.copysign(soft, pitch))
    assert np.allclose(aim, want, atol=1e-9)
    # never past the limit, continuous with slope 1 at the knee
    d = (aim - head) / rho
    assert abs(math.degrees(math.asin(d[1]))) < limit


def test_a_target_straight_below_is_aimed_along_the_heads_own_yaw() -> None:
    head = np.array([0.0, 1.6, 0.0])
    ahead = np.array([1.0, -0.3, 1.0])  # the head's forward axis: its ground direction (1, 0, 1)/√2
    aim = pitch_clamped_aim(head, head - [0.0, 0.8, 0.0], UP, ahead, math.radians(40.0))
    assert np.allclose(aim, _spherical(head, 0.8, 45.0, -(40.0 - 10.0 * math.exp(-6.0))), atol=1e-12)


def test_the_soft_limit_is_continuous_with_slope_one_at_its_knee() -> None:
    lim, w = math.radians(40.0), math.radians(10.0)
    k = lim - w
    for x in (k - 1e-7, k + 1e-7):
        assert soft_limit(x, lim) == pytest.approx(x, abs=1e-12)
    h = 1e-6
    assert (soft_limit(k + h, lim) - soft_limit(k, lim)) / h == pytest.approx(1.0, abs=1e-5)
    assert soft_limit(-math.radians(89.0), lim) == pytest.approx(-(lim - w * math.exp(-(math.radians(89) - k) / w)))


def test_a_natural_solve_pitches_the_head_to_its_limit_and_no_further() -> None:
    """The humanoid scene's natural hips-up reach to a point low in front: unlimited, the head looks straight at it
    (pitched 82° down, the trunk bent); with the builder's limit it stops within 3° of HEAD_PITCH (the soft limit's
    knee), aimed at its softly clamped point (the task's report ~0), the reach still met."""
    import dataclasses

    from animkit.ik import IKProblem
    from animkit.ik.natural import HEAD_PITCH
    from animkit.ik.tasks import Gaze
    from animkit.motion.reach import priors_from_scene

    from .conftest import SCENES

    scene = animkit.load(SCENES / "humanoid.toml")
    fig = scene.figure
    problem = priors_from_scene(scene).problem(fig, "hand_r", "hips-up")
    gaze = next(t for t in problem.tasks if isinstance(t, Gaze))
    assert gaze.pitch_limit == pytest.approx(HEAD_PITCH)
    # 61° below the head's level, to its right
    target = fig.world(fig.rest_pose())[gaze.head][:3, 3] + np.array([-0.25, -1.0, 0.45])
    fwd = np.asarray(gaze.forward, dtype=float)

    def pitch(pose: np.ndarray) -> float:
        return float(head_pitch(fig.world(pose)[gaze.head][None, :3, :3], fwd, UP)[0])

    free = IKProblem(fig, problem.chain, solver=problem.solver,
                     tasks=[dataclasses.replace(t, pitch_limit=None) if isinstance(t, Gaze) else t
                            for t in problem.tasks])
    r_free, r = free.solve(target), problem.solve(target)
    assert r.converged and r.position_error < 1e-4 and r_free.converged
    assert pitch(r_free.pose) < -50.0
    assert -math.degrees(HEAD_PITCH) < pitch(r.pose) < -math.degrees(HEAD_PITCH) + 3.0
    assert r.tasks is not None and r.tasks["gaze"] < 3.0
