"""BFGS and nonlinear conjugate gradients (seed 001's quasi-Newton and conjugate-gradient methods). Oracles: the
quadratic case (three sliders, J = I: one full step from a unit Hessian lands on the target), the objective's
gradient against central differences, reachable targets made by FK, and the update formulas' defining
properties (the secant equation H y = s)."""

from __future__ import annotations

import numpy as np
import pytest

from animkit.ik import BFGS, CG, LM, IKProblem, Posture, Reach, solve
from animkit.ik.objective import chain_objective
from animkit.model.figure import Figure
from animkit.model.joints import slider

from .ik_helpers import assert_meets, limit_bound_arm, load, random_targets


def _cartesian() -> Figure:
    fig = Figure("base")
    fig.add("a", "base", joint=slider("x", "x", limits=(-100.0, 100.0)))
    fig.add("b", "a", joint=slider("y", "y", limits=(-100.0, 100.0)))
    fig.add("tip", "b", joint=slider("z", "z", limits=(-100.0, 100.0)))
    return fig


@pytest.mark.parametrize("solver", [BFGS(), CG()])
def test_a_quadratic_is_solved_by_the_first_full_step(solver):
    r = solve(_cartesian(), np.zeros(3), "tip", np.array([0.3, -0.4, 1.2]), solver=solver, tol=1e-12)
    assert r.converged and r.iterations == 1


def test_the_objectives_gradient_matches_central_differences():
    fig = load("humanoid").figure
    problem = IKProblem(fig, "hand_r", "torso", orientation=True)
    target = random_targets(fig, "hand_r", problem.model.dofs, fig.rest_pose(), 1, 3)[0]
    o = chain_objective(problem.model, target[None, :3, 3], target[None, :3, :3], problem.options)
    q = fig.rest_pose()[problem.model.dofs] + 0.1
    _, g, _, _ = o.value(q)
    h = 1e-6
    fd = np.array([(o.value(q + h * e)[0] - o.value(q - h * e)[0]) / (2 * h) for e in np.eye(len(q))])
    # exact for the position rows; the orientation rows use the geometric Jacobian (exact at a zero error)
    np.testing.assert_allclose(g, fd, atol=2e-2 * np.linalg.norm(fd))
    o = chain_objective(problem.model, target[None, :3, 3], None, IKProblem(fig, "hand_r", "torso").options)
    _, g, _, _ = o.value(q)
    fd = np.array([(o.value(q + h * e)[0] - o.value(q - h * e)[0]) / (2 * h) for e in np.eye(len(q))])
    np.testing.assert_allclose(g, fd, atol=1e-7)


@pytest.mark.parametrize("solver,least", [(BFGS(), 11), (CG(), 10)])
def test_reachable_targets_are_met(solver, least):
    fig = load("humanoid").figure
    start = fig.rest_pose()
    problem = IKProblem(fig, "hand_r", "torso", pose=start, solver=solver)
    targets = random_targets(fig, "hand_r", problem.model.dofs, start, 12, 0)
    met = 0
    for T in targets:
        r = problem.solve(T[:3, 3])
        if r.converged:
            assert_meets(fig, "hand_r", r.pose, np.vstack([np.hstack([fig.world(r.pose)["hand_r"][:3, :3],
                                                                      T[:3, 3:4]]), [0, 0, 0, 1]]), 1e-4, 1.0)
            met += 1
    assert met >= least


def test_a_problem_of_tasks_is_solved_by_bfgs_and_cg():
    fig = load("humanoid").figure
    target = np.asarray(load("humanoid").reach.target)
    for solver in (BFGS(), CG(), LM()):
        r = IKProblem(fig, "torso", [Reach(effector="hand_r", target=target), Posture(weight=1e-6)],
                      solver=solver).solve()
        assert r.position_error < 1e-3, solver


def test_compare_runs_bfgs_and_cg_beside_lm():
    from animkit.motion.reach import compare

    c = compare(load("three_axis_arm"), chains=["arm"], solvers=["lm", "bfgs", "cg"], duration=0.5, hold=0.1,
                fps=10, quiet=True)
    assert [p.solver for p in c.panels] == ["lm", "bfgs", "cg"] and all(p.reached for p in c.panels)


@pytest.mark.parametrize("solver", [BFGS(), CG()])
def test_at_a_limit_the_answer_is_the_constrained_optimum_and_unreachable(solver):
    """Two hinges (0.7 and 0.4), the elbow limited to [0, 0.2] rad, a target 0.5 from the base that only a folded
    elbow could reach: the best the arm can do (a 1441 × 21 grid's best) has the elbow on its limit. BFGS's direction
    on the free DOFs (−H_FF ∇f_F) reaches it; before, H's row of the pinned elbow turned d against the limit, the
    projected step stopped 2 mm short and the solve ended "stalled"."""
    fig, target, best = limit_bound_arm()
    r = solve(fig, np.array([0.0, 0.1]), "end", target, solver=solver)
    assert best - 1e-3 <= r.position_error <= best + 1e-6 and r.pose[1] == pytest.approx(0.2)
    assert r.reason == "unreachable" and r.reachable is False


@pytest.mark.parametrize("solver", ["bfgs", "cg", "fabrik"])
def test_a_fold_is_left_not_called_out_of_reach(solver):
    """The three-axis arm straight up, its target straight below inside its reach (a stationary point that is a
    maximum along the bend, 4.3 from the target): the solvers beside those of test_ik_seeds leave it and converge."""
    fig = load("three_axis_arm").figure
    r = solve(fig, fig.rest_pose(), "tip", np.array([0.0, 0.0, -2.0]), chain="arm", solver=solver)
    assert r.converged and r.reason == "converged" and r.position_error < 1e-4
