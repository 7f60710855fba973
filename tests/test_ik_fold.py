"""The natural reach as one IKProblem made of tasks (issue 26 §1): the plain reach unchanged, the weighted damped
least squares as the natural solver's one-task step (closed form), task weights and targets per solve, one result
type with each task's report, and a new task (Hang) as one class checked against central differences."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import animkit
from animkit.ik import IKProblem, IKResult, Reach
from animkit.ik.hang import Hang
from animkit.ik.natural import Natural
from animkit.ik.tasks import com_jacobian, configuration
from animkit.motion.reach import priors_from_scene

from .conftest import SCENES

SCENE = animkit.load(SCENES / "humanoid.toml")
FIG = SCENE.figure
PRIORS = priors_from_scene(SCENE)
TARGET = np.asarray(SCENE.reach.target)


def test_a_problem_of_one_reach_task_is_the_plain_problem() -> None:
    """IKProblem(figure, chain, tasks=[Reach]) gives the effector form's pose bit for bit."""
    t = np.array([-0.25, 1.05, 0.35])
    a = IKProblem(FIG, "hand_r", "torso").solve(t)
    b = IKProblem(FIG, "torso", tasks=[Reach(effector="hand_r", target=t)]).solve()
    np.testing.assert_array_equal(a.pose, b.pose)
    assert a.converged and b.converged


def test_the_natural_step_of_one_task_is_the_weighted_damped_least_squares() -> None:
    """Natural.step against Δθ = W⁻¹Jᵀ(JW⁻¹Jᵀ + λ²I)⁻¹V written out (W = diag(1/(1 − s)))."""
    from animkit.ik.solvers import Options, StepInput

    prob = IKProblem(FIG, "hand_r", "torso", solver=Natural(stiffness={"spine": 0.8, "chest": 0.5}))
    model = prob.model
    rng = np.random.default_rng(3)
    J = rng.normal(size=(1, 3, model.n))
    V = rng.normal(size=(1, 3)) * 0.01
    q = prob.pose[model.dofs][None]
    got = prob.solver.step(StepInput(model, Options(), J, V, q, np.zeros(1), model.frames(q), V, None))
    w = np.ones(model.n)
    for joint, s in (("spine", 0.8), ("chest", 0.5)):
        for d in FIG.joint_dofs[joint]:
            w[model.dofs == d] = 1.0 / (1.0 - s)
    lam = min(0.01, float(np.linalg.norm(V)))
    Wi = np.diag(1.0 / w)
    want = Wi @ J[0].T @ np.linalg.solve(J[0] @ Wi @ J[0].T + lam * lam * np.eye(3), V[0])
    np.testing.assert_allclose(got[0], want, rtol=1e-9, atol=1e-14)


def test_natural_reach_is_one_problem_and_one_result() -> None:
    prob = PRIORS.problem(FIG, "hand_r", "whole-body")  # the default tol, 1e-5
    assert type(prob) is IKProblem and isinstance(prob.solver, Natural)
    names = [t.name for t in prob.tasks]
    assert names[0] == "reach hand_r" and {"plant foot_l", "plant foot_r", "balance", "gaze", "spread",
                                            "hang clavicle_l", "posture"} <= set(names)
    r = prob.solve(TARGET)
    assert type(r) is IKResult and r.converged and r.solver == "natural"
    assert r.tasks is not None and r.tasks["reach hand_r"] < 1e-5 and r.tasks["gaze"] < 10.0
    assert r.tasks["balance"] >= 0.0 and max(r.tasks["plant foot_l"], r.tasks["plant foot_r"]) < 1e-3
    assert r.tasks == prob.retasked(TARGET, None, None).report(r.pose)


def test_task_weights_and_targets_are_settable_per_solve() -> None:
    """weights={"posture": 0} per solve equals a problem built with comfort 0; the gaze aims where targets= says."""
    prob = PRIORS.problem(FIG, "hand_r", "hips-up")
    a = prob.solve(TARGET, weights={"posture": 0.0})
    b = dataclasses.replace(PRIORS, comfort=0.0).problem(FIG, "hand_r", "hips-up").solve(TARGET)
    np.testing.assert_allclose(a.pose, b.pose, atol=1e-12)
    c = prob.solve(TARGET)
    assert np.max(np.abs(c.pose - a.pose)) > 1e-3  # the weight mattered
    look = TARGET + np.array([0.8, 0.4, 0.0])
    d = prob.solve(TARGET, targets={"gaze": look})
    assert d.tasks is not None and d.tasks["reach hand_r"] < 1e-4
    # the head turned toward its own point: nearer it than the reach that looks at the hand's target
    at_look = prob.retasked(TARGET, {"gaze": look}, None)
    assert d.tasks["gaze"] < at_look.report(c.pose)["gaze"] - 10.0
    assert d.tasks["gaze"] == pytest.approx(at_look.report(d.pose)["gaze"])


def test_hang_is_one_task_with_exact_derivatives() -> None:
    """Hang's Jacobian against central differences of its error; its gradient wJᵀe is gravity's, w uᵀ∂c/∂θ, on the
    arm's own DOFs (the arm's centre of mass from the segments below the clavicle)."""
    rng = np.random.default_rng(7)
    task = Hang(top="clavicle_l", weight=2.0)
    lim = FIG.dof_limits()
    pose = FIG.rest_pose()
    own = [d for j in ("clavicle_l", "shoulder_l", "elbow_l", "wrist_l") for d in FIG.joint_dofs[j]]
    pose[own] = rng.uniform(np.maximum(lim[own, 0], -1), np.minimum(lim[own, 1], 1))
    c = configuration(FIG, pose)
    e, J = task.compute(c)
    h = 1e-6
    for d in own:
        p1, p2 = pose.copy(), pose.copy()
        p1[d] += h
        p2[d] -= h
        fd = (task.error(configuration(FIG, p1))[0] - task.error(configuration(FIG, p2))[0]) / (2 * h)
        assert J[0, d] == pytest.approx(fd, rel=1e-5, abs=1e-8)
    others = np.setdiff1d(np.arange(FIG.dof_count), own)
    assert np.all(J[0, others] == 0.0)
    names = FIG.compiled.node_names
    arm = [names.index(n) for n in ("clavicle_l", "shoulder_l", "elbow_l", "wrist_l", "hand_l")]
    b = c.body
    seg = np.isin(b.node, arm)
    limb = dataclasses.replace(b, node=b.node[seg], mass=b.mass[seg], centroid=b.centroid[seg])
    _, Jc = com_jacobian(FIG, limb, c.state)
    np.testing.assert_allclose(task.gradient(c)[own], 2.0 * Jc[1, own], rtol=1e-9, atol=1e-12)


def test_the_torso_panel_carries_head_and_free_arm_as_posture() -> None:
    """A torso reach tips the head and the free arm: the neck (for the gaze) and the free arm (for gravity) join the
    natural set, the head stays level and leads, and the arm hangs; without ``ride`` they stay fixed to the chest."""
    dofs, added = PRIORS.movable(FIG, "hand_r", "torso")
    assert set(added) == {"neck", "head", "clavicle_l", "shoulder_l", "elbow_l", "wrist_l"}
    assert PRIORS.movable(FIG, "hand_r", "arm")[1] == () and PRIORS.movable(FIG, "hand_r", "hips-up")[1] == ()
    from animkit.motion.reach import bake_reach

    ride = bake_reach(FIG, "hand_r", TARGET, chain="torso", priors=PRIORS, duration=2.0, hold=0.5, quiet=True)
    fixed = bake_reach(FIG, "hand_r", TARGET, chain="torso", priors=dataclasses.replace(PRIORS, ride=False),
                       duration=2.0, hold=0.5, quiet=True)
    m, f = ride.measures, fixed.measures
    assert m is not None and f is not None
    assert m.head_roll_deg is not None and m.head_roll_deg < 15.0 < (f.head_roll_deg or 0.0)
    assert m.gaze_lead_s is not None and m.gaze_lead_s > 0.0
    assert m.free_arm_deg is not None and m.free_arm_deg < 45.0 < (f.free_arm_deg or 0.0)
    assert ride.clip_final_error < 1e-4
