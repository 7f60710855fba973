from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from animkit.ik import DLS, SOLVERS, Pseudoinverse, jacobian, solve, solve_batch, solver_from_name, two_bone_angles
from animkit.ik.solvers import StepInput, step_nullspace
from animkit.model.figure import Figure
from animkit.model.joints import hinge

from .ik_helpers import chain_dofs, load, natural_start, random_pose

ITERATIVE = [s for s in SOLVERS if s != "two-bone"]
ARMS = [("three_axis_arm", "tip", "arm"), ("six_axis_arm", "tool", "arm"), ("humanoid", "hand_r", "arm")]


def _opts(name: str, **options: object):
    """The named solver with some options changed."""
    return replace(solver_from_name(name), **options)


def _targets(scene, eff, chain, count, seed=0):
    fig = scene.figure
    idx = chain_dofs(scene, chain)
    rng = np.random.default_rng(seed)
    start = natural_start(scene)
    poses = [random_pose(fig, idx, rng, base=start) for _ in range(count)]
    return start, [fig.world(q)[eff] for q in poses]


@pytest.mark.parametrize("solver", ITERATIVE)
@pytest.mark.parametrize("scene_name, eff, chain", ARMS)
def test_every_solver_reaches_reachable_targets(solver, scene_name, eff, chain):
    _every_solver_reaches(solver, scene_name, eff, chain)


def _every_solver_reaches(solver, scene_name, eff, chain):
    sc = load(scene_name)
    start, targets = _targets(sc, eff, chain, 12)
    tol = 1e-4
    results = [solve(sc.figure, start, eff, W[:3, 3], chain=chain, solver=solver, tol=tol)
               for W in targets]
    ok = sum(r.converged for r in results)
    # every method here is local: a few random targets sit behind a joint limit seen from this start ...
    assert ok >= 9, [(r.reason, r.position_error) for r in results]
    for r, W in zip(results, targets, strict=True):
        assert r.solver == solver
        if not r.converged:  # ... and random restarts inside the limits find them
            r = solve(sc.figure, start, eff, W[:3, 3], chain=chain, solver=solver, tol=tol, restarts=40)
        assert r.converged and r.position_error <= tol and r.reachable is True and r.reason == "converged"


@pytest.mark.parametrize("scene_name, eff, chain", [("six_axis_arm", "tool", "arm"), ("humanoid", "hand_r", "torso")])
def test_default_solver_reaches_6d_targets(scene_name, eff, chain):
    sc = load(scene_name)
    start, targets = _targets(sc, eff, chain, 12, seed=4)
    res = [solve(sc.figure, start, eff, W, chain=chain) for W in targets]
    assert sum(r.converged for r in res) >= 10
    res = [r if r.converged else solve(sc.figure, start, eff, W, chain=chain, restarts=40)
           for r, W in zip(res, targets, strict=True)]
    assert all(r.converged for r in res)
    for r, W in zip(res, targets, strict=True):
        if r.converged:
            M = sc.figure.world(r.pose)[eff]
            assert np.linalg.norm(M[:3, 3] - W[:3, 3]) <= 1e-5
            assert r.orientation_error <= 1e-4


def test_two_bone_on_a_two_link_chain():
    sc = load("three_axis_arm")
    start, targets = _targets(sc, "tip", "elbow-wrist", 10, seed=1)
    for W in targets:
        r = solve(sc.figure, start, "tip", W[:3, 3], chain="elbow-wrist", solver="two-bone")
        assert r.converged, (r.reason, r.position_error)
        assert r.iterations <= 2


@pytest.mark.parametrize("six_d", [False, True])
def test_two_bone_shoulder_elbow_wrist(six_d):
    sc = load("humanoid")
    fig = sc.figure
    start, targets = _targets(sc, "hand_r", "arm", 12, seed=2)
    ok = 0
    for W in targets:
        r = solve(fig, start, "hand_r", W if six_d else W[:3, 3], chain="arm", solver="two-bone")
        ok += r.converged
        lim = fig.dof_limits()
        assert np.all(r.pose >= lim[:, 0] - 1e-12) and np.all(r.pose <= lim[:, 1] + 1e-12)
    assert ok >= 10


def _planar_two_link(l1=0.7, l2=0.4):
    fig = Figure("base")
    fig.add("upper", "base", joint=hinge("shoulder", "z"))
    fig.add("lower", "upper", offset=(l1, 0, 0), joint=hinge("elbow", "z"))
    fig.add("end", "lower", offset=(l2, 0, 0))
    return fig


@pytest.mark.parametrize("d", [0.35, 0.5, 0.8, 1.05])
def test_two_bone_matches_law_of_cosines(d):
    l1, l2 = 0.7, 0.4
    fig = _planar_two_link(l1, l2)
    target = np.array([d * math.cos(0.4), d * math.sin(0.4), 0.0])
    start = np.array([0.0, 0.3])  # bend counter-clockwise
    r = solve(fig, start, "end", target, solver="two-bone")
    assert r.converged
    alpha, beta = two_bone_angles(l1, l2, d)
    assert math.isclose(abs(r.pose[1]), math.pi - beta, abs_tol=1e-9)
    assert math.isclose(math.remainder(r.pose[0] - (0.4 - alpha), 2 * math.pi), 0.0, abs_tol=1e-9)
    assert math.isclose(math.cos(beta), (l1 * l1 + l2 * l2 - d * d) / (2 * l1 * l2))


def test_pole_picks_the_bend_plane():
    fig = _planar_two_link()
    target = np.array([0.8, 0.0, 0.0])
    for pole, sign in (((0.4, 1.0, 0.0), 1.0), ((0.4, -1.0, 0.0), -1.0)):
        for solver in ("two-bone", "lm", "dls"):
            r = solve(fig, np.array([0.0, 0.0]) if solver == "two-bone" else np.array([0.0, 0.2 * -sign]),
                      "end", target, solver=_opts(solver, pole=pole))
            elbow = fig.world(r.pose)["lower"][:3, 3]
            assert r.converged and np.sign(elbow[1]) == sign, (solver, pole, elbow)


def test_humanoid_pole_moves_the_elbow_toward_it():
    sc = load("humanoid")
    fig = sc.figure
    start = natural_start(sc)
    target = fig.world(start)["hand_r"][:3, 3] + np.array([0.0, 0.15, 0.1])
    base = fig.world(start)["shoulder_r"][:3, 3]
    for pole in (base + np.array([-0.5, -0.2, 0.0]), base + np.array([0.0, -0.2, -0.5])):
        for solver in ("two-bone", "lm"):
            r = solve(fig, start, "hand_r", target, chain="arm", solver=_opts(solver, pole=pole))
            assert r.converged
            elbow = fig.world(r.pose)["elbow_r"][:3, 3]
            u = (target - base) / np.linalg.norm(target - base)
            e = elbow - base - u * np.dot(elbow - base, u)
            h = pole - base - u * np.dot(pole - base, u)
            assert np.dot(e, h) / (np.linalg.norm(e) * np.linalg.norm(h)) > 0.9, solver


def test_nullspace_term_leaves_the_effector_still():
    sc = load("six_axis_arm")
    fig = sc.figure
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = random_pose(fig, np.arange(fig.dof_count), rng)
        J = jacobian(fig, q, "tool")  # 3 x 6: a 3-dimensional null space
        Jp = np.linalg.pinv(J)
        z = rng.normal(size=fig.dof_count)
        N = np.eye(fig.dof_count) - Jp @ J
        assert np.linalg.norm(J @ N @ z) < 1e-10 * np.linalg.norm(z)
        # the brief's (J⁺J − I)z' form with z' = −z is the same term
        np.testing.assert_allclose((Jp @ J - np.eye(fig.dof_count)) @ -z, N @ z, atol=1e-12)
    # and the step function moves toward θ_desired without moving the effector (V = 0)
    Jb = J[None]
    from animkit.ik.solvers import Options

    opts = Options(desired=np.zeros(6), gains=np.full(6, 0.25))  # α > 0: toward θc (the seeds: z = 2α(θc − θ))
    dq = step_nullspace(StepInput(None, opts, Jb, np.zeros((1, 3)), q[None], np.zeros(1), None, None, None))
    assert np.linalg.norm(J @ dq[0]) < 1e-10
    assert np.dot(dq[0], -q) > 0


@pytest.mark.parametrize("solver", SOLVERS)
def test_limits_hold_after_every_solve(solver):
    sc = load("humanoid")
    fig = sc.figure
    lim = fig.dof_limits()
    start = natural_start(sc)
    rng = np.random.default_rng(7)
    base = fig.world(start)["shoulder_r"][:3, 3]
    for _ in range(6):
        target = base + rng.normal(size=3) * 0.5  # some out of reach, some behind limits
        r = solve(fig, start, "hand_r", target, chain="arm", solver=_opts(solver, max_iter=60))
        assert np.all(r.pose >= lim[:, 0]) and np.all(r.pose <= lim[:, 1])
        assert np.all(np.isfinite(r.pose))


@pytest.mark.parametrize("solver", SOLVERS)
def test_unreachable_target_points_the_chain_at_it(solver):
    sc = load("three_axis_arm")
    fig = sc.figure
    chain = "elbow-wrist" if solver == "two-bone" else "arm"
    start = fig.rest_pose() + np.array([0.2, 0.3, -0.4])
    base = fig.world(start)["j2" if solver == "two-bone" else "j1"][:3, 3]
    # the x-y-x arm lies straight only in its y-z plane; the elbow-wrist chain (y, x) only in its x-z plane
    for direction in ((0.0, 0.5, 0.8), (0.0, -0.3, 1.0)) if solver != "two-bone" else ((1.0, 0.0, 1.0),):
        d = np.asarray(direction) / np.linalg.norm(direction)
        target = base + 5.0 * d
        r = solve(fig, start, "tip", target, chain=chain, solver=_opts(solver, max_iter=3000))
        assert r.reachable is False and r.reason == "unreachable" and not r.converged, (r.reason, r.reachable)
        tip = fig.world(r.pose)["tip"][:3, 3]
        cos = np.dot(tip - base, target - base) / (np.linalg.norm(tip - base) * np.linalg.norm(target - base))
        # Jᵀ's pull on a bend vanishes as the chain straightens (∝ sin of the bend): it creeps (derivations.md)
        assert cos > (0.95 if solver == "transpose" else 0.99), cos


@pytest.mark.parametrize("solver", SOLVERS)
def test_dofs_outside_the_set_never_move(solver):
    sc = load("humanoid")
    fig = sc.figure
    rng = np.random.default_rng(11)
    start = random_pose(fig, np.arange(fig.dof_count), rng, base=natural_start(sc))
    start[fig.dof_index("elbow_r.rx")] = -0.6
    idx = chain_dofs(sc, "arm")
    target = fig.world(start)["hand_r"][:3, 3] + np.array([0.05, 0.1, 0.05])
    r = solve(fig, start, "hand_r", target, chain="arm", solver=solver)
    others = np.setdiff1d(np.arange(fig.dof_count), idx)
    assert np.array_equal(r.pose[others], start[others])


def test_several_effectors_with_weights_and_priority():
    sc = load("humanoid")
    fig = sc.figure
    start = natural_start(sc)
    start[fig.dof_index("elbow_l.rx")] = -0.6
    rng = np.random.default_rng(2)
    goal = random_pose(fig, chain_dofs(sc, "hips-up"), rng, base=start, margin=0.3)
    goal = start + 0.3 * (goal - start)
    W = fig.world(goal)
    targets = [W["hand_r"][:3, 3], W["hand_l"][:3, 3]]
    r = solve(fig, start, ["hand_r", "hand_l"], targets, chain="hips-up", weights=[1.0, 2.0])
    assert r.converged
    # priority: the first effector is met exactly even when the second asks for something impossible
    far = [W["hand_r"][:3, 3], W["hand_l"][:3, 3] + np.array([2.0, 0.0, 0.0])]
    r = solve(fig, start, ["hand_r", "hand_l"], far, chain="hips-up", solver=DLS(priority=True))
    assert np.linalg.norm(fig.world(r.pose)["hand_r"][:3, 3] - far[0]) < 1e-3


def test_step_policies_and_max_step():
    sc = load("six_axis_arm")
    start, targets = _targets(sc, "tool", "arm", 4, seed=9)
    for W in targets:
        r = solve(sc.figure, start, "tool", W[:3, 3], chain="arm",
                  solver=Pseudoinverse(clamp=0.05, max_step=0.1, max_iter=500))
        assert r.converged
        steps = np.abs(np.diff(r.errors))
        assert np.all(steps <= 0.05 * 1.5 + 1e-9) or r.iterations > 5


def test_restarts_are_reported_and_off_by_default():
    sc = load("humanoid")
    fig = sc.figure
    start = fig.rest_pose()
    _, targets = _targets(sc, "hand_r", "arm", 30, seed=1)
    plain = [solve(fig, start, "hand_r", W[:3, 3], chain="arm") for W in targets]
    assert all(r.restarts_used == 0 for r in plain)
    failed = [W for W, r in zip(targets, plain, strict=True) if not r.converged]
    for W in failed:
        r = solve(fig, start, "hand_r", W[:3, 3], chain="arm", restarts=50, time_budget=1.0)
        assert r.converged and r.restarts_used >= 1


def test_batch_matches_single_solves():
    sc = load("six_axis_arm")
    fig = sc.figure
    start, targets = _targets(sc, "tool", "arm", 8, seed=3)
    T = np.stack(targets)
    batch = solve_batch(fig, start, "tool", T, chain="arm")
    for i, W in enumerate(targets):
        single = solve(fig, start, "tool", W, chain="arm")
        np.testing.assert_allclose(batch.poses[i], single.pose, atol=1e-9)
        assert batch.reason[i] == single.reason and batch.iterations[i] == single.iterations
    assert batch.result(0).pose.shape == (fig.dof_count,)
