"""Out of reach, a baked clip ends where its direct solve ends. The direct solve chooses the end posture (the hand as
far toward the target as the body goes); the frames, each warm-started from the last, follow a straight minimum-jerk
stroke there and are eased into that posture on the stroke's own timing
(:func:`animkit.motion.reach_frames.eased_into`). Oracles: a straight arm's closed form (a two-hinge arm's nearest
point to a far target is its base plus its full length toward the target), the easing's own formula at known frames,
frames held back by max_speed that fall short, and RiggedFigure's torso reach (a rig the bake was not shaped around)
baked on both the compiled and the NumPy kernels: it ended 0.20 m or 0.505 m off depending on which.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.ik import LM, IKProblem
from animkit.ik.natural import Priors
from animkit.model.figure import Figure
from animkit.model.joints import hinge
from animkit.motion.reach import BAKE_TOL, Timeline, bake_reach
from animkit.motion.reach_frames import eased_into
from animkit.motion.reach_measures import minimum_jerk

DATA = Path(__file__).resolve().parent / "data"


def _two_hinges() -> Figure:
    """A planar arm of 0.6 + 0.4 m about z, its elbow bent 60° at rest (no limits)."""
    fig = Figure("base")
    fig.add("upper", "base", joint=hinge("shoulder", "z"))
    fig.add("lower", "upper", offset=(0.6, 0, 0), joint=hinge("elbow", "z"))
    fig.add("hand", "lower", offset=(0.4, 0, 0))
    return fig


def test_eased_into_known_frames() -> None:
    """θ'_k = θ_k + s(τ_k)(θ* − θ_F): unchanged at the start, half the difference at mid-stroke (s(½) = ½), θ* from
    arrival on (the hold moved whole), within the limits."""
    tl = Timeline(duration=1.0, hold=0.5, fps=10.0, lead=0.2)
    n = len(tl.times)
    poses = np.linspace(0.0, 1.0, n)[:, None] * np.array([[0.5, -0.2, 0.1]])
    settle = np.array([0.8, 0.3, 2.0])
    lim = np.array([[-1.0, 1.0], [-1.0, 1.0], [-1.0, 1.5]])
    out = eased_into(poses, tl, settle, lim)
    diff = settle - poses[-1]
    lead = round(0.2 * 10)
    np.testing.assert_allclose(out[: lead + 1], np.clip(poses[: lead + 1], lim[:, 0], lim[:, 1]))
    mid = lead + 5  # τ = ½
    np.testing.assert_allclose(out[mid], np.clip(poses[mid] + 0.5 * diff, lim[:, 0], lim[:, 1]))
    np.testing.assert_allclose(out[-1], np.clip(settle, lim[:, 0], lim[:, 1]))
    assert minimum_jerk(0.5) == pytest.approx(0.5)
    assert np.all(out >= lim[:, 0]) and np.all(out <= lim[:, 1])
    part = eased_into(poses, tl, settle, np.array([[-9.0, 9.0]] * 3), 0.25)  # a quarter of the difference
    np.testing.assert_allclose(part[-1], poses[-1] + 0.25 * diff)
    np.testing.assert_allclose(part[mid], poses[mid] + 0.125 * diff)


@pytest.mark.parametrize("start", [(0.3, 1.0), (-0.4, -1.2)])
def test_straight_arm_out_of_reach_ends_on_the_closed_form(start: tuple[float, float]) -> None:
    """Two hinges (0.6 + 0.4 m) toward a target 1.5 m away: the nearest the hand gets is the base plus 1.0 m toward
    the target, the arm straight (closed form); the clip's last frame is there and where the direct solve ends."""
    fig = _two_hinges()
    target = np.array([0.9, 1.2, 0.0])  # 1.5 m from the base
    best = target / np.linalg.norm(target) * 1.0
    problem = IKProblem(fig, "hand", None, pose=np.array(start), solver=LM(), tol=BAKE_TOL)
    done = bake_reach(problem, Timeline(duration=1.0, hold=0.3, fps=30.0), target, quiet=True)
    hand = fig.node_names.index("hand")
    assert not done.reached
    direct = fig.world_positions(done.result.pose)[0, hand]
    np.testing.assert_allclose(direct, best, atol=1e-3)
    np.testing.assert_allclose(done.trail[-1], best, atol=1e-3)
    assert done.clip_final_error == pytest.approx(0.5, abs=1e-3)
    last = fig.world_positions(done.clip.sample_frames()[-1:])[0, hand]
    np.testing.assert_allclose(last, direct, atol=1e-3)
    assert np.degrees(np.abs(np.diff(done.poses, axis=0))).max() < 12.0  # no pop on the way


@pytest.mark.parametrize("max_speed", [0.6, 1.0])
def test_frames_held_back_still_end_on_the_closed_form(max_speed: float) -> None:
    """The same arm with its joints held to max_speed rad/s (the elbow's stroke asks 1.9 rad/s at its peak): the
    frames fall 12-18 cm short of the nearest point, and the clip is eased into the direct solve's straight arm on
    the stroke's timing: it ends on the closed form, in one speed peak, no joint over 4° a frame."""
    fig = _two_hinges()
    target = np.array([0.9, 1.2, 0.0])
    best = target / np.linalg.norm(target) * 1.0
    problem = IKProblem(fig, "hand", None, pose=np.array([0.3, 1.0]), solver=LM(), tol=BAKE_TOL)
    done = bake_reach(problem, Timeline(duration=1.0, hold=0.3, fps=30.0, max_speed=max_speed), target, quiet=True)
    np.testing.assert_allclose(done.trail[-1], best, atol=1e-3)
    assert done.measures is not None and done.measures.speed_peaks == 1 and done.measures.min_jerk_r >= 0.97
    assert np.degrees(np.abs(np.diff(done.poses, axis=0))).max() < 4.0


def _torso_reach() -> tuple[float, float]:
    """RiggedFigure's right hand, the torso moving, toward a low target out of its reach (2 s, 0.5 s hold, 30 fps):
    the clip's last frame's distance from the direct solve's hand, and the direct solve's error."""
    fig = animkit.load(DATA / "RiggedFigure.glb").figure
    problem = Priors().problem(fig, "arm_joint_R_3", "torso", tol=BAKE_TOL, pose=fig.rest_pose())
    done = bake_reach(problem, Timeline(duration=2.0, hold=0.5, fps=30.0), (-0.25, 0.45, 0.35), quiet=True)
    hand = fig.node_names.index("arm_joint_R_3")
    last = fig.world_positions(done.clip.sample_frames()[-1:])[0, hand]
    direct = fig.world_positions(done.result.pose)[0, hand]
    return float(np.linalg.norm(last - direct)), float(done.result.position_error)


@pytest.mark.slow
def test_rigged_figure_torso_reach_ends_at_its_solve(lm_path: str) -> None:
    """On the compiled and the NumPy kernels alike the clip ends within 1 cm of the direct solve's hand (0.1997 m
    from the target on bakeend's branch, 0.1609 m since the merge with still's frame steps and gaze's eyes): on
    NumPy's it ended 0.505 m off, a lag early in the stroke that the frames made up read as a lost stroke and the
    stroke cut 4 cm from its start."""
    gap, error = _torso_reach()
    assert error <= 0.1997 + 2e-3  # the direct solve itself: out of reach, no farther than before
    assert gap <= 0.01, (lm_path, gap)
