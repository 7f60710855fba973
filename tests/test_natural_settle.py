"""Strict settling (issue 21 §3): ``Natural(settle=True)`` goes on after the goals are met until no DOF moves 1e-3 in a
step. Each solve here must report that it settled (it stopped, converged, before ``max_iter``) within a stated
budget, and its answer must be a fixed point: one more step of the same solver, from the answer, moves no DOF 1e-3.

On the tree before (``animkit.ik.natural_settle``: the null-space gain adapts, the free arms' flat directions are
held by a share of the comfort pose) the humanoid's torso without ranges and its whole body ran to ``max_iter``
(200) unsettled (the former settled at iteration 705), and so did the CMU skeleton without limits. The CMU skeleton's
2-cycle (±0.02 rad in its free arm) and head creep come from its units: Hang's potential is a height in scene units,
15x stiffer on CMU's (15.3 per metre) than the posture's radians, and a plain null-space step overshoots it; with
gravity weighed in metres (``Priors(hang=metres_per_unit)``) the CMU skeleton with a person's ranges settled before
too (that case passes on the tree before), and the one without limits needs the change (it ran to 200)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import animkit
from animkit.ik import IKProblem
from animkit.ik.natural import Natural, Priors
from animkit.model.figure import Rig
from animkit.motion import metres_per_unit
from animkit.motion.legs import legs_of
from animkit.motion.reach import priors_from_scene
from animkit.motion.reach_measures import reach_measures

from .conftest import ROOT, SCENES

BUDGET = 175  # iterations (Natural's max_iter is 200): measured 104-147 on these four after the change
MAX_ITER = Natural().max_iter


def _humanoid(case: str) -> tuple[IKProblem, np.ndarray]:
    scene = animkit.load(SCENES / "humanoid.toml")
    fig, priors, target = scene.figure, priors_from_scene(scene), np.asarray(scene.reach.target)
    if case == "torso, no ranges":  # test_natural's "free" ranges case
        return dataclasses.replace(priors, ranges={}).problem(fig, "hand_r", "torso", pose=fig.rest_pose(),
                                                              tol=1e-4), target
    return priors.problem(fig, "hand_r", "whole-body"), target


def _cmu(case: str) -> tuple[IKProblem, np.ndarray]:
    fig = animkit.load(ROOT / "tests" / "data" / "cmu_02_01_walk.bvh").figure
    p0 = fig.rest_pose()
    target = fig.world(p0)[fig.effector("hand_r")][:3, 3] + np.array([0.0, 0.0, 5.0])  # test_natural's gaze target
    # gravity's weight in metres: Hang's potential is a height in scene units, 15x stiffer on CMU's units (15.3 per
    # metre) than on a figure in metres, and a plain null-space step overshoots it (the 2-cycle)
    u = metres_per_unit(fig, legs_of(fig))
    if case != "cmu, human ranges":
        fig.rig = Rig(fig.rig.chains, fig.rig.effectors)  # no joint limits at all (the gaze mechanics themselves)
    return Priors(hang=u).problem(fig, "hand_r", "hips-up", pose=p0), target


CASES = {"torso, no ranges": _humanoid, "whole body": _humanoid, "cmu, human ranges": _cmu, "cmu, no limits": _cmu}


@pytest.mark.parametrize("case", list(CASES))
def test_a_settling_solve_settles_within_its_budget_on_a_fixed_point(case: str) -> None:
    problem, target = CASES[case](case)
    assert isinstance(problem.solver, Natural) and problem.solver.settle
    r = problem.solve(target)
    assert r.converged and r.position_error < problem.tol
    assert r.iterations <= BUDGET < MAX_ITER, r.iterations  # stopped because it settled, not at max_iter
    # one more step of the same solver from the answer: no DOF moves 1e-3 (a fixed point, not a pause in a cycle)
    fig = problem.figure
    names = [fig.dof_names[d] for d in problem.model.dofs]
    one = IKProblem(fig, names, tasks=problem.tasks, pose=r.pose, tol=problem.tol,
                    solver=dataclasses.replace(problem.solver, max_iter=1))
    again = one.solve(target, start=r.pose)
    moved = np.abs(again.pose - r.pose)
    assert moved.max() < 1e-3, (names[int(np.argmax(moved[problem.model.dofs]))], moved.max())
    # and the answer is a reach a person's measures accept: the hand on the target, the free arm hanging
    P = np.stack([fig.rest_pose(), r.pose, r.pose])
    m = reach_measures(fig, P, 30.0, fig.effector("hand_r"), target, 1)
    assert m.free_arm_end_deg is not None and m.free_arm_end_deg <= 45.0, m.free_arm_end_deg


def test_the_null_space_gain_halves_on_a_reversal_and_grows_otherwise() -> None:
    """The bold driver's rule (natural_settle.adapted) on known steps: a reversal halves g and asks the step again, a
    step that keeps its way (or the first) grows it by NULL_GROW, never past NULL_GAIN_MAX."""
    from animkit.ik.natural_settle import NULL_GAIN_MAX, NULL_GROW, NULL_SHRINK, adapted

    v = np.array([0.3, -0.1, 0.0])
    assert adapted(1.0, v, None) == (pytest.approx(NULL_GROW), False)
    assert adapted(2.0, v, -0.5 * v) == (pytest.approx(2.0 * NULL_SHRINK), True)
    assert adapted(2.0, v, v + np.array([0.0, 0.0, 9.0])) == (pytest.approx(2.0 * NULL_GROW), False)  # v·last > 0
    assert adapted(NULL_GAIN_MAX, v, v) == (NULL_GAIN_MAX, False)
