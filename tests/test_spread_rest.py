"""Spread measured from rest, in one frame: a spine whose joints rest at other turns and in other Euler orders (as a
glTF character's do) gets the same error, measured in the world, as one resting at the identity; its Jacobian against
central differences; closed forms for two joints bent about one axis; and a natural reach of the two spines bends
them the same."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from animkit.ik.natural import Priors
from animkit.ik.spread import Spread, relative_turn
from animkit.ik.tasks import configuration
from animkit.model.figure import Figure
from animkit.model.joints import ball, euler_angles_near, free
from animkit.model.transforms import matrix_from_euler_intrinsic

ORDERS = ("zxy", "xzy", "yxz")  # the spine, chest, neck of the "rested" figure
REST = (np.array([0.3, 1.43, -0.2]), np.array([-1.34, 0.25, 0.6]), np.array([0.1, -0.4, 0.9]))  # rad


def _spine(rested: bool) -> Figure:
    """A hips–spine–chest–neck–head column with two arms and two legs (what the humanoid matcher needs); ``rested``:
    the spine, chest and neck rest at the turns REST in the orders ORDERS, their L turned back so that the rest
    pose's world frames are the plain figure's (whose joints rest at the identity in "zxy")."""
    f = Figure("root")
    f.add("hips", "root", offset=(0, 1.0, 0), joint=free("hips", "zxy"))
    parts = (("spine", "hips", 0.12), ("chest", "spine", 0.15), ("neck", "chest", 0.2))
    for (name, parent, h), order, rest in zip(parts, ORDERS, REST, strict=True):
        if rested:
            back = matrix_from_euler_intrinsic(rest, order).T
            f.add(name, parent, offset=(0, h, 0), rotation=back, joint=ball(name, order, rest=list(rest)))
        else:
            f.add(name, parent, offset=(0, h, 0), joint=ball(name, "zxy"))
    f.add("head", "neck", offset=(0, 0.1, 0))
    for side, x in (("l", 1.0), ("r", -1.0)):
        f.add(f"upper_arm_{side}", "chest", offset=(0.18 * x, 0.12, 0), joint=ball(f"shoulder_{side}", "zxy"))
        f.add(f"lower_arm_{side}", f"upper_arm_{side}", offset=(0.3 * x, 0, 0), joint=ball(f"elbow_{side}", "zxy"))
        f.add(f"hand_{side}", f"lower_arm_{side}", offset=(0.25 * x, 0, 0))
        f.add(f"upper_leg_{side}", "hips", offset=(0.1 * x, -0.05, 0), joint=ball(f"hip_{side}", "zxy"))
        f.add(f"lower_leg_{side}", f"upper_leg_{side}", offset=(0, -0.45, 0), joint=ball(f"knee_{side}", "zxy"))
        f.add(f"foot_{side}", f"lower_leg_{side}", offset=(0, -0.45, 0))
    return f


PLAIN, RESTED = _spine(False), _spine(True)
GROUP = (("spine", "chest", "neck"),)


def _rested_pose(pose: np.ndarray) -> np.ndarray:
    """The rested figure's pose with the plain one's world frames: A_B(θ_B) = A_B(rest) A_A(θ_A) per spine joint."""
    out = pose.copy()
    for name, order, rest in zip(("spine", "chest", "neck"), ORDERS, REST, strict=True):
        idx = PLAIN.joint_dofs[name]
        want = matrix_from_euler_intrinsic(rest, order) @ matrix_from_euler_intrinsic(pose[idx], "zxy")
        out[idx] = euler_angles_near(want, rest, order)
    return out


def _random_pose(rng: np.random.Generator, scale: float = 0.5) -> np.ndarray:
    p = rng.uniform(-scale, scale, PLAIN.dof_count)
    p[:3] *= 0.2
    return p


def test_rested_figure_has_the_plain_figures_frames() -> None:
    """The construction the other tests lean on: the same world frames at the rest pose and at a mapped pose."""
    rng = np.random.default_rng(1)
    for pose in (PLAIN.rest_pose(), _random_pose(rng)):
        a, b = PLAIN.world(pose), RESTED.world(pose if not pose.any() else _rested_pose(pose))
        if not pose.any():
            b = RESTED.world(RESTED.rest_pose())
        for name in a:
            np.testing.assert_allclose(a[name], b[name], atol=1e-9)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2 ** 31 - 1))
def test_spread_is_the_same_on_a_spine_resting_at_other_turns_and_orders(seed) -> None:
    """e(θ_A) on the plain figure = e(θ_B) on the rested one at the pose with the same world frames: the bend is
    measured from rest in the world, not from the DOF values (which differ by up to 82° here)."""
    pose = _random_pose(np.random.default_rng(seed))
    task = Spread(joints=GROUP)
    ea = task.error(configuration(PLAIN, pose))
    eb = task.error(configuration(RESTED, _rested_pose(pose)))
    np.testing.assert_allclose(ea, eb, atol=1e-9)
    assert np.abs(task.error(configuration(RESTED, RESTED.rest_pose()))).max() < 1e-12  # at rest: nothing to share


def test_the_absolute_angles_are_not_rig_independent() -> None:
    """The known failure this replaces: the DOF values themselves (θ, not θ − θ_rest) grouped by axis letter give a
    large error on the rested figure at its rest pose, where nothing is bent."""
    d = RESTED.rest_pose()
    by_letter = [[RESTED.joint_dofs[n][k] for n in ("spine", "chest", "neck")] for k in range(3)]
    spread = max(float(np.ptp(d[g])) for g in by_letter)
    assert spread > 1.0  # rad: what the old Spread would have pulled on
    assert np.abs(Spread(groups=tuple(tuple(g) for g in by_letter)).error(
        configuration(RESTED, d))).max() < 1e-12  # the DOF form now measures from rest too


@pytest.mark.parametrize("figure", [PLAIN, RESTED], ids=["identity rest", "rested"])
def test_spread_jacobian_matches_central_differences(figure) -> None:
    rng = np.random.default_rng(7)
    task = Spread(joints=GROUP)
    for _ in range(3):
        pose = _random_pose(rng, 1.0)
        if figure is RESTED:
            pose = _rested_pose(pose)
        c = configuration(figure, pose)
        e, J = task.compute(c)
        h = 1e-6
        cols = []
        for j in range(figure.dof_count):
            a, b = pose.copy(), pose.copy()
            a[j] += h
            b[j] -= h
            cols.append((task.error(configuration(figure, a, c.body)) - task.error(configuration(figure, b, c.body)))
                        / (2 * h))
        np.testing.assert_allclose(J, np.stack(cols, axis=1), atol=1e-6)


def test_two_joints_bent_about_one_axis_closed_form() -> None:
    """Spine bent α, chest β about the world x axis (hips still): r = (α, β)·x, e = ±(α − β)/2 x; the same on the
    rested figure."""
    alpha, beta = 0.5, 0.1
    pose = PLAIN.rest_pose()
    pose[PLAIN.dof_index("spine.rx")] = alpha
    pose[PLAIN.dof_index("chest.rx")] = beta
    for fig, p in ((PLAIN, pose), (RESTED, _rested_pose(pose))):
        c = configuration(fig, p)
        np.testing.assert_allclose(relative_turn(c, c.node("spine"))[0], [alpha, 0, 0], atol=1e-12)
        np.testing.assert_allclose(relative_turn(c, c.node("chest"))[0], [beta, 0, 0], atol=1e-12)
        e = Spread(joints=(("spine", "chest"),)).error(c)
        half = (alpha - beta) / 2
        np.testing.assert_allclose(e, [half, 0, 0, -half, 0, 0], atol=1e-12)


def test_natural_reach_shares_the_bend_on_a_rested_spine_as_on_a_plain_one() -> None:
    """The natural torso reach on both figures (the same world target): on each, the spine and chest end turned the
    same from rest in the world (within 1.5°), as the spread asks, and the hand reaches; without the spread the two
    turns differ by more than 5° (so the spread is what shares them)."""
    target = np.array([-0.35, 1.25, 0.45])

    def turns(fig: Figure, spread: float) -> np.ndarray:
        priors = Priors(gaze=False, planted=(), hang=0.0, comfort=0.0, ranges={}, balance=False, spread=spread)
        r = priors.problem(fig, "hand_r", ["spine", "chest", "shoulder_r", "elbow_r"]).solve(target)
        np.testing.assert_allclose(fig.world(r.pose)["hand_r"][:3, 3], target, atol=1e-3)
        c = configuration(fig, r.pose)
        return np.array([relative_turn(c, c.node(n))[0] for n in ("spine", "chest")])

    for fig in (PLAIN, RESTED):
        t = turns(fig, 1.0)
        assert np.linalg.norm(t, axis=1).min() > math.radians(5)  # the spine did bend
        assert np.linalg.norm(t[0] - t[1]) < math.radians(1.5)
        t0 = turns(fig, 0.0)
        assert np.linalg.norm(t0[0] - t0[1]) > math.radians(5)
