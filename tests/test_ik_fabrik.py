"""FABRIK (Aristidou & Lasenby 2011) mapped onto the DOFs: reaches, keeps hinge limits, drives both hands on a tree.
Oracles: FK of the answer against the target, the limits, the closest possible distance (lm agrees)."""

from __future__ import annotations

import numpy as np
import pytest

import animkit
from animkit import IKError
from animkit.ik import FABRIK, IKProblem, solve

from .ik_helpers import SCENES, chain_dofs, load, natural_start, random_pose, slider_figure


@pytest.fixture(scope="module")
def humanoid():
    return animkit.load(SCENES / "humanoid.toml")


@pytest.mark.parametrize("chain", ["arm", "torso", "hips-up"])
def test_fabrik_reaches_reachable_targets_inside_the_limits(humanoid, chain):
    fig = humanoid.figure
    start = natural_start(humanoid)
    lim = fig.dof_limits()
    rng = np.random.default_rng(3)
    ok = 0
    for _ in range(8):
        goal = random_pose(fig, chain_dofs(humanoid, chain), rng, base=start, margin=0.2)
        target = fig.world(goal)["hand_r"][:3, 3]  # FK of an in-limit pose: reachable
        r = solve(fig, start, "hand_r", target, chain=chain, solver="fabrik", tol=1e-4)
        assert np.all(r.pose >= lim[:, 0] - 1e-12) and np.all(r.pose <= lim[:, 1] + 1e-12)
        err = np.linalg.norm(fig.world(r.pose)["hand_r"][:3, 3] - target)
        assert err == pytest.approx(r.position_error, abs=1e-9)
        ok += r.converged
    assert ok >= 6  # a local method: a target behind a limit seen from this start may stay out of its way


def test_fabrik_moves_both_hands_on_a_tree(humanoid):
    fig = humanoid.figure
    start = natural_start(humanoid)
    start[fig.dof_index("elbow_l.rx")] = -0.6
    W = fig.world(start)
    targets = [W["hand_r"][:3, 3] + (0.1, 0.15, 0.15), W["hand_l"][:3, 3] + (-0.1, 0.15, 0.15)]
    r = solve(fig, start, ["hand_r", "hand_l"], targets, chain="hips-up", solver="fabrik", tol=1e-4)
    assert r.converged
    W2 = fig.world(r.pose)
    for name, t in zip(("hand_r", "hand_l"), targets, strict=True):
        assert np.linalg.norm(W2[name][:3, 3] - t) < 1e-4


def test_fabrik_stretches_toward_a_target_out_of_reach(humanoid):
    fig = humanoid.figure
    target = np.asarray(humanoid.reach.target[:3])
    r = solve(fig, fig.rest_pose(), "hand_r", target, chain="arm", solver=FABRIK())
    lm = solve(fig, fig.rest_pose(), "hand_r", target, chain="arm")
    assert r.reachable is False and r.position_error < lm.position_error + 1e-3


def test_fabrik_refuses_what_it_cannot_do():
    fig = slider_figure()
    with pytest.raises(IKError, match="prismatic"):
        IKProblem(fig, "tip", solver=FABRIK())
    sc = load("humanoid")
    with pytest.raises(IKError, match="6D"):
        IKProblem(sc.figure, "hand_r", "arm", orientation=True, solver=FABRIK())
