"""The seeds' classic step, faithfully: θ += α·J⁺e with the user's α and no hidden cap, seed 000's normalised step,
stretching toward a target out of reach, the null-space term's sign, unreachable decided from optimality, and
IKProblem reuse. Oracles: closed forms on a Cartesian (three-slider) chain, where J is constant."""

from __future__ import annotations

import math

import numpy as np
import pytest

import animkit
from animkit import IKError
from animkit.ik import LM, IKProblem, NullSpace, Pseudoinverse, solve
from animkit.model.figure import Figure
from animkit.model.joints import hinge, slider

from .ik_helpers import SCENES

BARE = dict(clamp=None, rcond=1e-6, max_step=None)  # the seed's update, nothing added


def _cartesian() -> Figure:
    """Three unlimited sliders x, y, z: J = I, so e_{k+1} = e_k − α J⁺ e_k = (1 − α) e_k exactly."""
    fig = Figure("base")
    fig.add("a", "base", joint=slider("x", "x", limits=(-100.0, 100.0)))
    fig.add("b", "a", joint=slider("y", "y", limits=(-100.0, 100.0)))
    fig.add("tip", "b", joint=slider("z", "z", limits=(-100.0, 100.0)))
    return fig


@pytest.mark.parametrize("alpha", [0.3, 1.0, 1.5, 2.5])
@pytest.mark.parametrize("method", ["svd", "lu"])
def test_user_alpha_gives_the_closed_form_error_sequence(alpha, method):
    fig = _cartesian()
    target = np.array([0.3, -0.4, 1.2])
    r = solve(fig, np.zeros(3), "tip", target, solver=Pseudoinverse(method=method, alpha=alpha, max_iter=6, **BARE),
              tol=1e-12)
    e0 = np.linalg.norm(target)
    expect = e0 * abs(1.0 - alpha) ** np.arange(len(r.errors))
    np.testing.assert_allclose(r.errors, expect, rtol=1e-9, atol=1e-12)
    if alpha > 2.0:  # too large a step overshoots and diverges: the user sees it (no hidden cap)
        assert r.errors[-1] > r.errors[0] and not r.converged


def test_normalised_step_moves_alpha_per_iteration():
    fig = _cartesian()
    target = np.array([0.6, 0.0, 0.8])  # 1.0 away
    r = solve(fig, np.zeros(3), "tip", target, solver=Pseudoinverse(alpha=0.1, normalised=True, max_iter=5, **BARE))
    np.testing.assert_allclose(r.errors, 1.0 - 0.1 * np.arange(6), atol=1e-12)  # seed 000: α·d/|d|


def test_normalised_step_is_taken_in_task_space():
    """Seed 000 on a bent arm (J not a multiple of an isometry): one normalised step moves the effector α toward the
    goal to first order: |Δe − α ê|/α → 0 as α → 0 (it was α·Δθ/|Δθ| in joint space: 0.64 α on the humanoid arm)."""
    fig, q0, _ = _humanoid()
    q0 = q0.copy()
    q0[fig.dof_index("elbow_r.rx")] = -0.8
    e0 = fig.world(q0)["hand_r"][:3, 3]
    target = e0 + np.array([0.2, 0.3, -0.25])
    d = (target - e0) / np.linalg.norm(target - e0)
    gaps = []
    for alpha in (1e-2, 1e-3, 1e-4):
        r = solve(fig, q0, "hand_r", target, chain="arm",
                  solver=Pseudoinverse(alpha=alpha, normalised=True, max_iter=1, **BARE))
        moved = fig.world(r.pose)["hand_r"][:3, 3] - e0
        gaps.append(np.linalg.norm(moved - alpha * d) / alpha)
    assert gaps[0] < 0.05 and gaps[2] < 1e-3 and gaps[2] < gaps[1] < gaps[0]  # first order: the gap shrinks with α


def test_no_hidden_step_cap():
    fig = Figure("base")
    fig.add("arm", "base", joint=hinge("j", "z"))
    fig.add("tip", "arm", offset=(1.0, 0.0, 0.0))
    target = np.array([math.cos(1.2), math.sin(1.2), 0.0])
    for solver in (Pseudoinverse(max_iter=1, **BARE), Pseudoinverse(method="lu", max_iter=1, **BARE)):
        r = solve(fig, np.zeros(1), "tip", target, solver=solver)
        assert abs(r.pose[0]) > 0.5  # the old code capped every step at 0.5 rad
    capped = solve(fig, np.zeros(1), "tip", target, solver=Pseudoinverse(max_iter=1, clamp=None, max_step=0.5))
    assert capped.pose[0] == pytest.approx(0.5)


def _humanoid():
    sc = animkit.load(SCENES / "humanoid.toml")
    # the humanoid scene's reach target before natural reaching lowered it: the numbers below were measured on it
    return sc.figure, sc.figure.rest_pose(), np.array([-0.25, 1.30, 0.80])


@pytest.mark.parametrize("solver", ["pinv", "dls-adaptive", "lm", "nullspace", "transpose", "ccd"])
def test_out_of_reach_arm_stretches_toward_the_target(solver):
    fig, q0, target = _humanoid()
    r = solve(fig, q0, "hand_r", target, chain="arm", solver=solver)
    # the closest the arm can come is 0.1627 m (lm, ccd and the transpose agree); the old pinv stopped at 0.332 m
    assert r.position_error < 0.1665 and r.reachable is False and r.reason == "unreachable"


def test_lu_and_dls_stretch_closer_than_before():
    fig, q0, target = _humanoid()
    for solver in ("pinv-lu", "dls"):
        r = solve(fig, q0, "hand_r", target, chain="arm", solver=solver)
        assert r.position_error < 0.25 and r.reachable is False  # 0.332 m before the error clamp


def test_nullspace_sign_follows_alpha():
    fig, q0, _ = _humanoid()
    q0 = q0.copy()
    q0[fig.dof_index("elbow_r.rx")] = -0.6
    target = fig.world(q0)["hand_r"][:3, 3] + np.array([0.05, 0.05, 0.05])
    problem = IKProblem(fig, "hand_r", "torso", pose=q0)
    comfort = q0.copy()
    dofs = problem.model.dofs
    dist = {}
    for a in (-0.1, 0.0, 0.1):
        r = problem.using(NullSpace(alpha=a, comfort=comfort, max_iter=300)).solve(target)
        assert np.linalg.norm(fig.world(r.pose)["hand_r"][:3, 3] - target) < 1e-4
        dist[a] = float(np.linalg.norm(r.pose[dofs] - comfort[dofs]))
    # the seeds' sign, z = 2α(θc − θ): α > 0 descends the distance to θc, α < 0 climbs it
    assert dist[0.1] < dist[0.0] < dist[-0.1]


def test_unreachable_from_optimality_not_distance():
    fig = Figure("base")
    fig.add("upper", "base", joint=hinge("shoulder", "z"))
    fig.add("lower", "upper", offset=(0.7, 0, 0), joint=hinge("elbow", "z", limits=(0.0, 0.2)))
    fig.add("end", "lower", offset=(0.4, 0, 0))
    target = np.array([0.0, 0.5, 0.0])  # 0.5 from the base, inside the 1.1 reach, but the elbow cannot fold
    grid = np.stack(np.meshgrid(np.linspace(-math.pi, math.pi, 1441), np.linspace(0.0, 0.2, 21), indexing="ij"),
                    axis=-1).reshape(-1, 2)  # the same grid's poses, through the figure's batched FK at once
    best = np.linalg.norm(fig.world_positions(grid)[:, fig.node_names.index("end")] - target, axis=1).min()
    for solver in ("dls", "ccd", "transpose", LM(max_iter=300, relax=False, stall=None)):
        r = solve(fig, np.array([0.0, 0.1]), "end", target, solver=solver)
        assert not r.converged and r.reachable is False and r.reason == "unreachable", solver
        # the answer is the optimum (a brute-force grid's best): the arm points at the target, the elbow at a limit
        assert best - 1e-3 <= r.position_error <= best + 1e-6 and r.pose[1] == pytest.approx(0.2)


def test_solver_options_belong_to_their_solver():
    with pytest.raises(TypeError):
        Pseudoinverse(damping=0.1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        LM(comfort=None)  # type: ignore[call-arg]
    with pytest.raises(IKError):
        Pseudoinverse(method="qr")  # type: ignore[arg-type]
    with pytest.raises(IKError):
        LM(max_iter=0)


def test_problem_batch_and_bake_agree_with_single_solves():
    fig, q0, _ = _humanoid()
    q0 = q0.copy()
    q0[fig.dof_index("elbow_r.rx")] = -0.6
    base = fig.world(q0)["hand_r"][:3, 3]
    targets = base + np.linspace(0.0, 1.0, 6)[:, None] * np.array([0.1, 0.1, 0.05])
    problem = IKProblem(fig, "hand_r", "arm", pose=q0, solver=LM(relax=False))
    batch = problem.solve_batch(targets)
    for i, t in enumerate(targets):
        one = problem.solve(t)
        np.testing.assert_allclose(batch.poses[i], one.pose, atol=1e-9)
        assert batch.reachable[i] is one.reachable
    bake = problem.bake(targets)
    assert all(bake.converged)
    for k in range(1, len(targets)):  # each frame starts from the one before: small steps
        assert np.max(np.abs(bake.poses[k] - bake.poses[k - 1])) < 0.5
    with pytest.raises(IKError):
        problem.solve(np.eye(4))  # a position problem gets a pose


def test_stiffness_weighs_joints_without_stopping_a_reachable_reach():
    sc = animkit.load(SCENES / "humanoid.toml")
    fig = sc.figure
    for target in (np.asarray(sc.reach.target), np.array([-0.25, 1.3, 0.8]), np.array([-0.2, 0.7, 0.5])):
        for chain in ("torso", "hips-up"):
            plain = solve(fig, fig.rest_pose(), "hand_r", target, chain=chain)
            stiff = solve(fig, fig.rest_pose(), "hand_r", target, chain=chain,
                          solver=LM(stiffness={"spine": 0.9, "chest": 0.9}))
            assert plain.converged and stiff.converged, (target, chain, stiff.position_error)


def test_a_fold_is_not_out_of_reach():
    """The three-axis arm straight up with the target straight below (inside its reach): J has rank 2 and JᵀV = 0,
    a stationary point that is a maximum of the error along the bend, not an optimum. Every solver leaves it along
    the Hessian's negative curvature, and none calls the target unreachable."""
    fig = animkit.load(SCENES / "three_axis_arm.toml").figure
    target = np.array([0.0, 0.0, -2.0])
    for solver in ("pinv", "pinv-lu", "lm", "dls", "transpose", "nullspace", "ccd"):
        r = solve(fig, fig.rest_pose(), "tip", target, chain="arm", solver=solver)
        assert r.reason != "unreachable" and r.reachable is not False, solver
        assert r.position_error < 4.3 - 0.5, solver  # it left the fold (4.3 from the target)
        assert r.converged, solver  # pinv-lu too: its re-solve without the DOF held at a limit is not singular
