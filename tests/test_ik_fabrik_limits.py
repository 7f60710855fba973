"""FABRIK's constrained backward pass at a universal joint's limits (the humanoid's 2-DOF wrist, ±70° × ±30°): where
the hand cannot point from the wrist at the target, the wrist's backward point is placed along the reachable
direction nearest the free one (the paper's constrained pass, the joint's reachable directions in the cone's place).
Oracles: the directions the wrist can give the hand, found by FK over a grid of its two values inside the limits;
the solve's step counts on the benchmark's 12 arm targets."""

from __future__ import annotations

import numpy as np
import pytest

import animkit
from animkit.ik import FABRIK, IKProblem
from animkit.ik.fabrik import fabrik_iteration

from .ik_helpers import SCENES, arm_targets, natural_start

WRIST = 2  # the arm's groups: shoulder (ball), elbow (hinge), wrist (universal: two DOFs, the chain's last two)


@pytest.fixture(scope="module")
def humanoid():
    return animkit.load(SCENES / "humanoid.toml")


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _reachable(model, q: np.ndarray, steps: int = 241) -> np.ndarray:
    """Unit directions from the wrist to the hand (k, 3) for the wrist's two values on a grid over their limits, the
    rest of the arm at q (its forearm's frame is the wrist's parent frame: it does not depend on the wrist's
    values)."""
    lo, hi = model.lower[-2:], model.upper[-2:]
    a, b = np.meshgrid(np.linspace(lo[0], hi[0], steps), np.linspace(lo[1], hi[1], steps // 2 + 1))
    qs = np.repeat(q[None], a.size, axis=0)
    qs[:, -2], qs[:, -1] = a.ravel(), b.ravel()
    fr = model.frames(qs)
    return _unit(fr.p[:, 0] - fr.r[:, -2])


def test_at_its_limit_the_wrist_s_backward_point_lies_along_the_nearest_reachable_direction(humanoid):
    """Target 0 of the benchmark with the arm at the bent start and the wrist at its limits: the hand cannot point
    from the wrist at the target (its free direction is ≥ 0.05 rad from every reachable one). The backward pass
    puts the wrist's point at the hand's length from the target along a direction the wrist can give the hand
    (within the grid's spacing of a grid direction) and at least as near the free direction as every grid
    direction. Before, it was the free direction itself, which the wrist cannot give (the passes fought the
    limit: 13–17 steps on such targets)."""
    fig = humanoid.figure
    start, targets = arm_targets(humanoid)
    model = IKProblem(fig, "hand_r", "arm", solver=FABRIK()).model
    q = start[model.dofs].copy()
    q[-2:] = model.lower[-2:]
    t = targets[0]
    fr = model.frames(q[None])
    wrist, hand = fr.r[0, -2], fr.p[0, 0]
    free = _unit(t - wrist)
    grid = _reachable(model, q)
    assert np.arccos(np.clip(grid @ free, -1, 1)).min() > 0.05  # the free direction is out of the wrist's reach
    back = fabrik_iteration(model, q[None], t[None, None]).backward[0, WRIST]
    assert np.linalg.norm(t - back) == pytest.approx(np.linalg.norm(hand - wrist), abs=1e-12)
    used = _unit(t - back)
    assert np.arccos(np.clip(grid @ used, -1, 1)).min() <= 0.01  # reachable (grid spacing ≈ 0.01 rad)
    assert used @ free >= (grid @ free).max() - 1e-9  # and no grid direction is nearer the free one


def test_inside_its_limits_the_wrist_s_backward_point_is_the_paper_s(humanoid):
    """Where the hand can point at the target (a target just beside the hand, the wrist mid-range), the backward
    pass is the paper's: the wrist's point at the hand's length from the target, toward its current point."""
    fig = humanoid.figure
    model = IKProblem(fig, "hand_r", "arm", solver=FABRIK()).model
    q = natural_start(humanoid)[model.dofs]
    fr = model.frames(q[None])
    wrist, hand = fr.r[0, -2], fr.p[0, 0]
    t = hand + np.array([0.01, -0.005, 0.01])
    back = fabrik_iteration(model, q[None], t[None, None]).backward[0, WRIST]
    expect = t - np.linalg.norm(hand - wrist) * _unit(t - wrist)
    np.testing.assert_allclose(back, expect, atol=1e-12)


def test_a_wrist_at_its_limit_no_longer_slows_the_reach(humanoid):
    """The benchmark's 12 reachable arm targets (benchmarks/bench_fabrik.py) from its bent start: every one
    converges within 8 steps, 70 in all (66 now; before: 93, the three targets that end with the wrist at its
    limits took 16, 17 and 13, now 8, 4 and 7), each answer inside the limits and on its target."""
    fig = humanoid.figure
    start, targets = arm_targets(humanoid)
    problem = IKProblem(fig, "hand_r", "arm", solver=FABRIK(), tol=1e-4)
    lim = fig.dof_limits()[problem.model.dofs]
    steps = []
    for t in targets:
        r = problem.solve(t, start)
        assert r.converged and np.linalg.norm(fig.world(r.pose)["hand_r"][:3, 3] - t) <= 1e-4
        arm = r.pose[problem.model.dofs]
        assert np.all(arm >= lim[:, 0]) and np.all(arm <= lim[:, 1])
        steps.append(r.iterations)
    assert max(steps) <= 8 and sum(steps) <= 70, steps
