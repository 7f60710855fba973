"""The default solver's own loop (animkit.ik.lm): limits built into the unknowns, the fading mid-range pull,
the compiled-chain cache; the numba-compiled loop (animkit.ik.lm_jit) against its NumPy twin."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import animkit
from animkit.ik import LM, IKProblem, compile_chain, solve, solve_batch
from animkit.io.urdf import MissingMeshWarning
from animkit.model.chains import dof_indices
from animkit.model.joints import hinge

from .ik_helpers import assert_meets, load, natural_start, random_targets

PANDA = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "franka_panda.urdf"


def _panda():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingMeshWarning)
        return animkit.load(PANDA)


def test_panda_6d_from_the_zero_pose_at_its_limits(lm_path):
    sc = _panda()
    fig = sc.figure
    lim = fig.dof_limits()
    start = np.clip(np.zeros(fig.dof_count), lim[:, 0], lim[:, 1])  # joint 4 sits on its upper limit
    rng = np.random.default_rng(5)
    arm = [fig.dof_index(j) for j in sc.figure.chain("arm")]
    poses = np.repeat(start[None], 20, 0)
    poses[:, arm] = rng.uniform(lim[arm, 0], lim[arm, 1], size=(20, len(arm)))
    targets = [fig.world(q)["panda_grasptarget"] for q in poses]
    res = [solve(fig, start, "panda_grasptarget", T, chain="arm") for T in targets]
    assert sum(r.converged for r in res) >= 17  # the clamped LM reached about half
    for r, T in zip(res, targets, strict=True):
        assert np.all(r.pose >= lim[:, 0]) and np.all(r.pose <= lim[:, 1])
        assert r.errors[-1] <= r.errors[0]
        if r.converged:  # the pull toward mid-range fades with the residual: no bias in the answer
            W = fig.world(r.pose)["panda_grasptarget"]
            assert np.linalg.norm(W[:3, 3] - T[:3, 3]) <= 1e-5 and r.orientation_error <= 1e-4


def test_lm_with_fixed_steps_runs_in_the_shared_loop():
    sc = load("six_axis_arm")
    fig = sc.figure
    start = fig.rest_pose()
    target = fig.world(start)["tool"][:3, 3] + np.array([0.05, -0.03, 0.04])
    r = solve(fig, start, "tool", target, chain="arm", solver=LM(max_iter=300))
    assert r.converged and r.solver == "lm"


def test_problem_keeps_its_compiled_chain_and_recompiles_when_frozen_values_change():
    sc = load("humanoid")
    fig = sc.figure
    pose = natural_start(sc)
    problem = IKProblem(fig, "hand_r", "arm", pose=pose)
    model = problem.model
    target = fig.world(pose)["hand_r"][:3, 3] + np.array([0.0, 0.05, 0.05])
    r1 = problem.solve(target)
    r2 = problem.solve(target, pose.copy())
    assert problem.model is model and r1.converged and np.array_equal(r1.pose, r2.pose)
    other = pose.copy()
    other[fig.dof_index("spine.rx")] += 0.3  # a frozen DOF folded into the constants
    r3 = problem.solve(fig.world(other)["hand_r"][:3, 3] + np.array([0.0, 0.05, 0.05]), other)
    assert problem.model is not model and r3.converged
    assert r3.pose[fig.dof_index("spine.rx")] == other[fig.dof_index("spine.rx")]
    fig.add("finger", "hand_r", offset=(0.0, -0.1, 0.0), joint=hinge("finger", "x"))  # an edit: a new problem
    pose2 = fig.rest_pose()
    target = fig.world(pose2)["finger"][:3, 3] + np.array([0.0, 0.02, 0.02])
    r = solve(fig, pose2, "finger", target, chain=["shoulder_r", "elbow_r", "finger"])
    assert r.converged


def test_batch_drops_finished_problems_and_matches_single_solves(lm_path):
    sc = load("humanoid")
    fig = sc.figure
    start = natural_start(sc)
    base = fig.world(start)["hand_r"][:3, 3]
    T = base + np.array([[0.05, 0.0, 0.02], [0.0, -0.05, 0.05], [3.0, 0.0, 0.0]])  # the last is out of reach
    b = solve_batch(fig, start, "hand_r", T, chain="arm")
    assert b.converged[0] and b.iterations[0] < b.iterations.max()
    assert b.reachable[2] is False
    for i in range(3):
        s = solve(fig, start, "hand_r", T[i], chain="arm")
        np.testing.assert_allclose(b.poses[i], s.pose, atol=1e-9)
        assert s.iterations == b.iterations[i]


def test_stall_test_stops_a_run_early(lm_path):
    from dataclasses import replace as _replace

    from animkit.ik.lm import STALL_MIN_ITER, lm_single, run_lm
    from animkit.ik.solvers import Options

    sc = _panda()
    fig = sc.figure
    lim = fig.dof_limits()
    start = np.clip(np.zeros(fig.dof_count), lim[:, 0], lim[:, 1])
    arm = np.array(sorted(fig.dof_index(j) for j in sc.figure.chain("arm")))
    model = compile_chain(fig, start, arm, ("panda_grasptarget",), "arm")
    opts = Options(damping=1.0, max_step=0.5, row_weights=np.ones(6))
    assert lm_single(model, opts) == (lm_path == "numpy")  # NumPy runs restarts one at a time
    rng = np.random.default_rng(5)
    for _ in range(20):  # a target that needs more than the stall test's minimum of iterations
        q = start.copy()
        q[arm] = rng.uniform(lim[arm, 0], lim[arm, 1])
        T = fig.world(q)["panda_grasptarget"]
        args = (model, start[arm][None], T[None, None, :3, 3], T[None, None, :3, :3])
        free = run_lm(*args, opts)
        if free.iterations[0] > STALL_MIN_ITER:
            break
    assert free.iterations[0] > STALL_MIN_ITER
    cut = run_lm(*args, _replace(opts, stall_window=8, stall_ratio=0.0))  # any residual left counts as a stall
    assert cut.reason == ["stalled"] and cut.iterations[0] == STALL_MIN_ITER
    assert cut.errors[-1, 0] <= cut.errors[0, 0]


# --- the second strategy: through the relaxed limits ---------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.floats(-50.0, 50.0), st.floats(-3.1, 0.0), st.floats(0.05, 6.2))
def test_wrap_into_limits_keeps_the_angle_or_takes_the_nearer_limit(theta, lo, width):
    from animkit.ik.lm import wrap_into_limits

    hi = lo + width
    w = float(wrap_into_limits(np.array([theta]), np.array([lo]), np.array([hi]), np.array([True]))[0])
    assert lo <= w <= hi
    d = (theta - w) / (2 * np.pi)
    if abs(d - round(d)) < 1e-9:
        return  # the same angle
    # θ lies in the gap: w is the limit nearer to θ along the circle
    def circ(a, b):
        return abs((a - b + np.pi) % (2 * np.pi) - np.pi)

    assert w in (lo, hi)
    assert circ(theta, w) <= circ(theta, hi if w == lo else lo) + 1e-9
    # prismatic (or unlimited) DOFs are only clipped
    v = wrap_into_limits(np.array([theta]), np.array([lo]), np.array([hi]), np.array([False]))[0]
    assert v == min(max(theta, lo), hi)


def _panda_targets(count, seed):
    sc = _panda()
    fig = sc.figure
    lim = fig.dof_limits()
    start = np.clip(np.zeros(fig.dof_count), lim[:, 0], lim[:, 1])
    arm = np.array([fig.dof_index(j) for j in sc.figure.chain("arm")])
    return sc, fig, lim, start, random_targets(fig, "panda_grasptarget", arm, start, count, seed)


@pytest.mark.slow  # 9-33 s alone: CI runs it after the fast set (.ci/run)
def test_relaxed_limits_solve_what_the_first_run_left_in_a_local_minimum(lm_path):
    sc, fig, lim, start, T = _panda_targets(120, seed=0)
    plain = solve_batch(fig, start, "panda_grasptarget", T, chain="arm", solver=LM(relax=False))
    relaxed = solve_batch(fig, start, "panda_grasptarget", T, chain="arm")
    stuck = np.flatnonzero(~plain.converged)
    assert stuck.size >= 3  # the fixed start leaves some targets in local minima (a joint pressed on a limit)
    rescued = stuck[relaxed.converged[stuck]]
    assert rescued.size >= 0.5 * stuck.size
    np.testing.assert_array_equal(relaxed.poses[plain.converged], plain.poses[plain.converged])  # untouched
    for i in rescued:
        q = relaxed.poses[i]
        assert np.all(q >= lim[:, 0]) and np.all(q <= lim[:, 1])
        W = fig.world(q)["panda_grasptarget"]
        assert np.linalg.norm(W[:3, 3] - T[i, :3, 3]) <= 1e-5 and relaxed.orientation_error[i] <= 1e-4
        assert relaxed.iterations[i] > plain.iterations[i]  # the strategies' iterations add up
    for i in stuck:  # never worse than the first run; the history never rises and ends at the answer
        e = relaxed.errors[: relaxed.iterations[i] + 1, i]
        assert np.all(np.diff(e) <= 1e-15) and e[-1] <= plain.errors[plain.iterations[i], i] + 1e-15
        one = solve(fig, start, "panda_grasptarget", T[i], chain="arm")  # a single solve agrees
        assert one.converged == bool(relaxed.converged[i])


def test_beyond_reach_only_the_relaxed_limits_from_the_start_are_tried():
    """A target beyond reach whose answer is not at the bound |t − base| − reach runs one retry, through the relaxed
    limits from the start (a first run held on a limit may end farther than the stretched chain:
    tests/test_ik_lm_out_of_reach.py); the other stages (from where it stopped, the continuations) are skipped: at
    most two runs of max_iter (relaxed, then back inside the limits) more than without the retries, and never a
    worse answer."""
    sc, fig, lim, start, _ = _panda_targets(1, seed=0)
    far = np.eye(4)
    far[:3, 3] = (3.0, 0.0, 0.5)  # the Panda reaches about 0.9 m
    a = solve(fig, start, "panda_grasptarget", far, chain="arm")
    b = solve(fig, start, "panda_grasptarget", far, chain="arm", solver=LM(relax=False))
    assert a.reachable is False and b.iterations < a.iterations <= b.iterations + 2 * (LM().max_iter + 1)
    assert a.position_error <= b.position_error + 1e-9


# --- the third strategy: position first, then the full task ------------------------------------------------


def _arm_targets(count, seed):
    sc = load("humanoid")
    fig = sc.figure
    start = natural_start(sc)
    arm = dof_indices(fig, "arm")
    lim = fig.dof_limits()
    return fig, start, lim, random_targets(fig, "hand_r", np.asarray(arm), start, count, seed)


@pytest.mark.slow  # 9-33 s alone: CI runs it after the fast set (.ci/run)
def test_position_first_reaches_6d_targets_the_other_strategies_leave(monkeypatch):
    """On a fixed seeded set of the humanoid arm's own reachable 6D targets (FK of in-limit poses), the
    continuation converges on targets LM with the relaxed-limits retries alone misses; checked by FK."""
    import animkit.ik.strategy as strategy

    fig, start, lim, T = _arm_targets(120, seed=3)
    problem = IKProblem(fig, "hand_r", "arm", pose=start, orientation=True)
    full = problem.solve_batch(T, quiet=True)
    with monkeypatch.context() as m:  # the continuations off: LM with the relaxed-limits retries alone
        for name in ("retry_position_first", "retry_orientation_first", "retry_orientation_continuation"):
            m.setattr(strategy, name, lambda model, q0, P, R, opts, out, fail: out)
        before = problem.solve_batch(T, quiet=True)
    stuck = np.flatnonzero(~before.converged)
    assert stuck.size >= 4  # the fixed start leaves some in local minima (shoulder and elbow on their limits)
    rescued = stuck[full.converged[stuck]]
    assert rescued.size >= 0.4 * stuck.size
    np.testing.assert_array_equal(full.poses[before.converged], before.poses[before.converged])  # untouched
    for i in rescued:
        assert_meets(fig, "hand_r", full.poses[i], T[i], 1e-5, 1e-4)
        assert full.iterations[i] > before.iterations[i]  # the strategies' iterations add up
    for i in stuck:  # never worse than without it (to where the last polish stops: both answers end at the same
        # minimum, and since the polish got its own steps (lmstatus) the plain run's lands 3e-7 nearer on one target,
        # 0.4346943 against 0.4346946); the history never rises and ends at the answer
        e = full.errors[: full.iterations[i] + 1, i]
        assert np.all(np.diff(e) <= 1e-15) and e[-1] <= before.errors[before.iterations[i], i] * (1 + 1e-6)
    for i in rescued[:3]:  # a single solve takes the same strategies
        assert problem.solve(T[i]).converged


def test_position_first_is_not_tried_without_an_orientation_target(monkeypatch):
    import animkit.ik.strategy as strategy

    fig, start, lim, T = _arm_targets(40, seed=3)
    calls = []
    real = strategy.retry_position_first
    monkeypatch.setattr(strategy, "retry_position_first", lambda *a: calls.append(1) or real(*a))
    IKProblem(fig, "hand_r", "arm", pose=start).solve_batch(T[:, :3, 3], quiet=True)
    assert not calls


def test_orientation_strategies_reach_ur5_targets_position_first_leaves(monkeypatch):
    """UR5 6D targets near the edge of its reach (FK of in-limit poses), from the elbow-up home: those LM, its
    relaxed-limits retries and position first leave (the elbow stretched at 0 between two branches) are reached by
    orientation first or the orientation continuation; checked by FK, inside the limits, the history never rising."""
    import animkit.ik.strategy as strategy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingMeshWarning)
        fig = animkit.load(Path(__file__).parent / "data" / "ur5_robot.urdf").figure
    start = fig.rest_pose()
    for name, v in zip(("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
                        "wrist_3_joint"), (0.0, -np.pi / 2, np.pi / 2, -np.pi / 2, -np.pi / 2, 0.0), strict=True):
        start[fig.dof_index(name)] = v
    lim = fig.dof_limits()
    rng = np.random.default_rng(0)
    poses = rng.uniform(lim[:, 0], lim[:, 1], size=(300, fig.dof_count))
    T = np.array([fig.world(q)["ee_link"] for q in poses])
    problem = IKProblem(fig, "ee_link", "arm", pose=start, orientation=True)
    full = problem.solve_batch(T, quiet=True)
    with monkeypatch.context() as m:
        for name in ("retry_orientation_first", "retry_orientation_continuation"):
            m.setattr(strategy, name, lambda model, q0, P, R, opts, out, fail: out)
        before = problem.solve_batch(T, quiet=True)
    stuck = np.flatnonzero(~before.converged)
    rescued = stuck[full.converged[stuck]]
    assert stuck.size >= 8 and rescued.size >= 0.3 * stuck.size
    np.testing.assert_array_equal(full.poses[before.converged], before.poses[before.converged])  # untouched
    for i in rescued:
        assert_meets(fig, "ee_link", full.poses[i], T[i], 1e-5, 1e-4)
        assert full.iterations[i] > before.iterations[i]
    for i in stuck:
        e = full.errors[: full.iterations[i] + 1, i]
        assert np.all(np.diff(e) <= 1e-15) and e[-1] <= before.errors[before.iterations[i], i] + 1e-15
    for i in rescued[:3]:  # a single solve (the compiled strategy) takes the same strategies
        assert problem.solve(T[i]).converged


def test_strategy_rules_against_closed_forms():
    """lm_rules, the decisions both strategies call: the continuation's targets are the geodesic exp(t ω) R_s of
    the library's own rotation-vector exponential; limit coordinates map φ = ±π/2 onto the limits; the position
    first task keeps each effector's position rows; a retry runs only for an undecided problem."""
    from animkit.ik.lm_rules import (
        ORIENTATION_FIRST,
        POSITION_FIRST,
        RELAXED_FROM_START,
        RELAXED_FROM_STOP,
        continuation_target,
        easier_task,
        limit_coordinates,
        retried,
        stretched,
    )
    from animkit.model.transforms import matrix_from_rotation_vector

    rng = np.random.default_rng(4)
    omega = rng.normal(size=(6, 3)) * 1.3
    omega[0] = 0.0
    Rs = matrix_from_rotation_vector(rng.normal(size=(6, 3)))
    for t in (0.25, 0.5, 1.0):
        np.testing.assert_allclose(continuation_target(omega, t, Rs), matrix_from_rotation_vector(omega * t) @ Rs,
                                   atol=1e-12)
    lo, hi = np.array([-1.0, 0.5, -np.inf, 2.0]), np.array([2.0, 0.5, 1.0, np.inf])
    lim, m, h = limit_coordinates(lo, hi)
    assert lim.tolist() == [True, False, False, False]
    assert (m[0] + h[0], m[0] - h[0]) == (2.0, -1.0) and (m[1:] == 0.0).all() and (h[1:] == 1.0).all()
    w = np.arange(1.0, 13.0)  # two effectors
    wp, orient, tol, otol = easier_task(w, POSITION_FIRST, 1e-4, 1e-3)
    assert wp.tolist() == [1.0, 2.0, 3.0, 7.0, 8.0, 9.0] and not orient and tol == 1e-4 and otol == np.inf
    wo, orient, tol, otol = easier_task(w, ORIENTATION_FIRST, 1e-4, 1e-3)
    np.testing.assert_allclose(wo, np.where(np.arange(12) % 6 < 3, 1e-3 * w, w))
    assert orient and tol == np.inf and otol == 1e-3
    conv, far, minimum = np.array([True, False, False, False]), np.array([False, True, False, False]), \
        np.array([False, False, True, False])
    assert retried(RELAXED_FROM_START, conv, far, minimum, far).tolist() == [False, False, True, True]
    # beyond reach but not at the bound (settled False): the relaxed limits from the start still run, no other stage
    unsettled = np.zeros(4, dtype=bool)
    assert retried(RELAXED_FROM_START, conv, far, minimum, unsettled).tolist() == [False, True, True, True]
    assert retried(POSITION_FIRST, conv, far, minimum, unsettled).tolist() == [False, False, True, True]
    assert retried(RELAXED_FROM_STOP, conv, far, minimum, far).tolist() == [False, False, False, True]
    assert retried(RELAXED_FROM_STOP, False, False, False, False) and \
        not retried(RELAXED_FROM_STOP, False, False, True, False)
    assert stretched(2.0, 0.65, 1.35, 1e-4) and not stretched(2.0, 0.65, 1.379, 1e-4)  # at |t − b| − R, or not
    assert not stretched(0.5, 0.65, 0.0, 1e-4)  # within reach: never
