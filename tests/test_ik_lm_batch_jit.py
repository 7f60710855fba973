"""The compiled lanes (animkit.ik.lm_batch_jit) against the one-problem compiled loop (animkit.ik.lm_jit) they mirror:
with the C library's sines and cosines (poly=False) bit for bit, on the Panda and on random chains (hypothesis); with
the polynomial ones (the default) the same converged set and the same answers to within the stopping tolerance,
and the same success rate on 500 Panda targets; their pieces against NumPy; whole batches through
IKProblem.solve_batch (retries included) against a loop of IKProblem.solve, and the NumPy loop."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from animkit import jit
from animkit.ik import IKProblem, compile_chain
from animkit.ik.lm import (
    loop_chain,
    loop_settings,
    run_lm,
    serial_chain,
)
from animkit.ik.solvers import Options
from animkit.model.figure import Figure
from animkit.model.joints import hinge

from .ik_helpers import panda_ready, random_targets

pytestmark = pytest.mark.skipif(not jit.enabled(), reason="numba is not importable (or ANIMKIT_JIT=0)")

ROOT = Path(__file__).resolve().parent.parent


def _both(model, q0, P, R, opts, poly=False):
    """lm_jit.lm_serial and lm_batch_jit.lm_lanes (the library's trig unless ``poly``) on the same problems: their
    six outputs."""
    from animkit.ik.lm_batch_jit import lm_lanes
    from animkit.ik.lm_jit import lm_serial

    ch = serial_chain(model)
    assert ch.lanes
    args = (loop_chain(ch, opts), loop_settings(opts), q0, P, R, opts.row_weights)
    return lm_serial(*args), lm_lanes(*args, poly=poly)


def _same_bits(a, b):
    for x, y, name in zip(a, b, ("q", "iterations", "reason", "position", "orientation", "history"), strict=True):
        assert x.shape == y.shape, name
        np.testing.assert_array_equal(x, y, err_msg=name)


@pytest.mark.parametrize("case", ["6d", "3d", "capped+stall", "stiff", "few"])
def _same_answers(serial, lanes, model, opts, fig=None, eff=None, P=None, most=1):
    """The polynomial lanes against lm_serial: converged sets differ in at most ``most`` problems; where both
    converge, both are within tolerance and their poses agree to 1e-6 rad (each run stops at its first iterate
    inside the tolerance: rounding moves that point along the same path, by ~1e-7 on the Panda)."""
    cs, cl = serial[2] == 0, lanes[2] == 0
    assert int((cs != cl).sum()) <= most
    both = cs & cl
    assert np.all(lanes[3][cl] <= opts.tol) and np.all(lanes[4][cl] <= opts.orientation_tol)
    np.testing.assert_allclose(lanes[0][both], serial[0][both], atol=1e-6, rtol=0)
    q = lanes[0]
    assert np.all(np.isfinite(q)) and np.all(q >= model.lower) and np.all(q <= model.upper)
    if fig is not None:  # converged means within tolerance, by the figure's own FK
        for i in np.flatnonzero(cl)[:4]:
            pose = fig.rest_pose()
            pose[model.dofs] = q[i]
            np.testing.assert_allclose(fig.world(pose)[eff][:3, 3], P[i], atol=2 * opts.tol)


@pytest.mark.parametrize("case", ["6d", "3d", "capped+stall", "stiff", "few"])
def test_lanes_give_the_one_problem_loop_bit_for_bit_on_the_panda(case):
    fig, start = panda_ready()
    problem = IKProblem(fig, "panda_grasptarget", "arm", pose=start, orientation=True)
    model = problem.model
    B = {"few": 3}.get(case, 45)  # not a multiple of the lane count; fewer problems than lanes
    T = random_targets(fig, "panda_grasptarget", model.dofs, start, B, seed=7)
    T[::9, :3, 3] += 3.0  # some beyond reach
    opts = problem.options
    R = T[:, :3, :3].copy()
    if case == "3d":
        opts = replace(opts, row_weights=np.ones(3))
        R = None
    elif case == "capped+stall":
        opts = replace(opts, max_step=0.2, stall_window=8, stall_ratio=0.7, max_iter=60)
    elif case == "stiff":
        opts = replace(opts, stiffness=np.linspace(0.0, 0.05, model.n), row_weights=np.array([1, 2, 1, .5, 1, 3.0]))
    q0 = np.repeat(start[model.dofs][None], B, 0)
    q0[1::2] += np.random.default_rng(1).uniform(-0.3, 0.3, size=q0[1::2].shape)  # starts differ per problem
    P = np.ascontiguousarray(T[:, :3, 3])
    serial, lanes = _both(model, q0, P, R, opts)
    _same_bits(serial, lanes)
    assert (serial[2] == 0).sum() >= B // 2  # most converge: the comparison covers real runs, not early exits
    assert np.all(np.isfinite(lanes[0])) and np.all(lanes[0] >= model.lower) and np.all(lanes[0] <= model.upper)
    _same_answers(serial, _both(model, q0, P, R, opts, poly=True)[1], model, opts, fig, "panda_grasptarget", P)


def test_polynomial_lanes_keep_the_success_rate_on_500_panda_targets():
    fig, start = panda_ready()
    problem = IKProblem(fig, "panda_grasptarget", "arm", pose=start, orientation=True)
    model = problem.model
    T = random_targets(fig, "panda_grasptarget", model.dofs, start, 500, seed=11)
    q0 = np.repeat(start[model.dofs][None], 500, 0)
    serial, lanes = _both(model, q0, np.ascontiguousarray(T[:, :3, 3]), T[:, :3, :3].copy(), problem.options,
                          poly=True)
    assert abs(int((serial[2] == 0).sum()) - int((lanes[2] == 0).sum())) <= 1  # within 0.2 %
    _same_answers(serial, lanes, model, problem.options, most=2)


def _chain(axes, lengths, limits):
    fig = Figure("base")
    parent = "base"
    for k, (axis, length, lim) in enumerate(zip(axes, lengths, limits, strict=True)):
        fig.add(f"l{k}", parent, offset=(length, 0.0, 0.02 * k),
                joint=hinge(f"j{k}", axis, limits=None if lim is None else (-lim, 0.5 * lim)))
        parent = f"l{k}"
    fig.add("tip", parent, offset=(0.1, 0.05, 0.0))
    return fig


_axis = st.sampled_from(["x", "y", "z", (0.0, 0.6, 0.8), (0.48, 0.6, 0.64)])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.lists(_axis, min_size=n, max_size=n), st.lists(st.floats(0.05, 0.4), min_size=n, max_size=n),
    st.lists(st.one_of(st.none(), st.floats(0.5, 3.0)), min_size=n, max_size=n))),
    st.integers(1, 20), st.booleans(), st.integers(0, 2**16))
@pytest.mark.slow  # 9-33 s alone: CI runs it after the fast set (.ci/run)
def test_lanes_match_the_one_problem_loop_on_random_chains(shape, B, orient, seed):
    axes, lengths, limits = shape
    fig = _chain(axes, lengths, limits)
    dofs = np.arange(fig.dof_count)
    model = compile_chain(fig, fig.rest_pose(), dofs, ("tip",), "chain")
    ch = serial_chain(model)
    assert ch.lanes
    T = random_targets(fig, "tip", dofs, fig.rest_pose(), B, seed)
    rng = np.random.default_rng(seed)
    T[rng.random(B) < 0.25, :3, 3] *= 5.0  # some out of reach
    opts = Options(damping=0.05, row_weights=np.ones(6 if orient else 3), max_iter=80)
    q0 = rng.uniform(-1.0, 1.0, size=(B, model.n))
    P, R = np.ascontiguousarray(T[:, :3, 3]), T[:, :3, :3].copy() if orient else None
    serial, lanes = _both(model, q0, P, R, opts)
    _same_bits(serial, lanes)
    serial_p, poly = _both(model, q0, P, R, opts, poly=True)
    assert np.all(np.isfinite(poly[0])) and np.all(poly[0] >= model.lower) and np.all(poly[0] <= model.upper)
    assert np.all(poly[3][poly[2] == 0] <= opts.tol)
    q = lanes[0]
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(lanes[3])) and np.all(np.isfinite(lanes[5]))
    assert np.all(q >= model.lower) and np.all(q <= model.upper)
    conv = lanes[2] == 0
    assert np.all(lanes[3][conv] <= opts.tol)  # converged means within tolerance, checked by the figure's FK too
    for i in np.flatnonzero(conv)[:3]:
        np.testing.assert_allclose(fig.world(q[i])["tip"][:3, 3], T[i, :3, 3], atol=2 * opts.tol)


def test_lane_cholesky_against_numpy_and_its_indefinite_flag():
    from animkit.ik.lm_batch_jit import LANES, solve_spd_lanes

    rng = np.random.default_rng(2)
    for n in (1, 2, 7, 13):
        M = rng.normal(size=(LANES, n, n + 2))
        S = M @ np.swapaxes(M, 1, 2) + 1e-3 * np.eye(n)
        S[3] = np.diag(np.r_[-1.0, np.ones(n - 1)])  # lane 3: not positive definite
        b = rng.normal(size=(LANES, n))
        A = S.transpose(1, 2, 0).copy()  # (a view for n = 1 would let the solve overwrite S)
        x, bad = np.empty((n, LANES)), np.empty(LANES)
        solve_spd_lanes(A, np.ascontiguousarray(b.T), x, bad)
        assert bad.tolist() == [1.0 if k == 3 else 0.0 for k in range(LANES)]
        for k in range(LANES):
            if k != 3:
                np.testing.assert_allclose(x[:, k], np.linalg.solve(S[k], b[k]), rtol=1e-9, atol=1e-12)
                np.testing.assert_allclose(np.tril(A[:, :, k]), np.linalg.cholesky(S[k]), rtol=1e-12, atol=1e-12)


def test_lane_forward_against_the_chain_model():
    from animkit.ik.lm_batch_jit import LANES, forward_lanes

    fig, start = panda_ready()
    problem = IKProblem(fig, "panda_grasptarget", "arm", pose=start, orientation=True)
    model = problem.model
    ch = serial_chain(model)
    q = np.random.default_rng(3).uniform(model.lower, model.upper, size=(LANES, model.n))
    T, Te = np.empty((model.n, 3, 5, LANES)), np.empty((3, 4, LANES))
    forward_lanes(np.ascontiguousarray(q.T), ch.kHs, ch.kCe, T, Te, np.empty((15, LANES)), np.empty(LANES),
             np.empty(LANES), np.ones(LANES, dtype=np.bool_), True)
    fr = model.frames(q)
    np.testing.assert_allclose(T[:, :, :4].transpose(3, 0, 1, 2), fr.T[:, :, :3].transpose(1, 0, 2, 3), atol=1e-12)
    np.testing.assert_allclose(T[:, :, 4].transpose(2, 0, 1), fr.a, atol=1e-12)  # the world axis column
    np.testing.assert_allclose(Te[:, 3].T, fr.p[:, 0], atol=1e-12)
    np.testing.assert_allclose(Te[:, :3].transpose(2, 0, 1), fr.R[:, 0], atol=1e-12)


def test_solve_batch_gives_the_single_solves_answers_retries_included():
    """IKProblem.solve_batch (the lanes, and lm's retries and position-first continuation run as batches) against a
    loop of IKProblem.solve (the one-problem loop, the library's trig): the same reasons and reachability but for
    at most one problem, the same poses to 1e-6 where both converge (the lanes' polynomial sines move where a run
    stops inside the tolerance)."""
    fig, start = panda_ready()
    problem = IKProblem(fig, "panda_grasptarget", "arm", pose=start, orientation=True)
    T = random_targets(fig, "panda_grasptarget", problem.model.dofs, start, 120, seed=0)
    T[5, :3, 3] += 2.0  # beyond reach
    T[17, :3, 3] *= 1.6
    batch = problem.solve_batch(T, quiet=True)
    singles = [problem.solve(t) for t in T]
    assert not batch.converged.all(), "a batch with failures exercises the retries"
    assert batch.converged.mean() >= 0.9
    differ = 0
    for i, r in enumerate(singles):
        if batch.reason[i] != r.reason or batch.reachable[i] != r.reachable:
            differ += 1
        elif r.reason == "converged":
            np.testing.assert_allclose(batch.poses[i], r.pose, atol=1e-6, rtol=0)
    assert differ <= 1
    assert batch.reachable[5] is False and np.all(np.isfinite(batch.poses))
    lim = fig.dof_limits()
    assert np.all(batch.poses >= lim[:, 0] - 1e-12) and np.all(batch.poses <= lim[:, 1] + 1e-12)


def test_lanes_and_numpy_loops_solve_the_same_targets(monkeypatch):
    fig, start = panda_ready()
    problem = IKProblem(fig, "panda_grasptarget", "arm", pose=start, orientation=True)
    model = problem.model
    T = random_targets(fig, "panda_grasptarget", model.dofs, start, 40, seed=4)
    opts = problem.options
    q0 = np.repeat(start[model.dofs][None], len(T), 0)
    monkeypatch.setattr(jit, "ALWAYS", True)
    fast = run_lm(model, q0, T[:, None, :3, 3], T[:, None, :3, :3], opts)
    monkeypatch.setattr(jit, "ENABLED", False)
    slow = run_lm(model, q0, T[:, None, :3, 3], T[:, None, :3, :3], opts)
    conv_f = np.array(fast.reason) == "converged"
    conv_s = np.array(slow.reason) == "converged"
    # the same equations; only the order of floating-point sums differs (NumPy's matmul): the same converged set
    # up to a chaotic run or two, and the same answers where both converge
    assert conv_f.mean() >= 0.75 and int((conv_f != conv_s).sum()) <= 2
    both = conv_f & conv_s
    np.testing.assert_allclose(fast.q[both], slow.q[both], atol=1e-6)


def test_solve_batch_runs_without_numba():
    code = ("import numpy as np, animkit; from animkit import jit; from animkit.ik import IKProblem\n"
            "sc = animkit.load('scenes/three_axis_arm.toml'); fig = sc.figure\n"
            "eff = list(sc.figure.rig.effectors)[0] if sc.figure.rig.effectors else fig.node_names[-1]\n"
            "T = np.array([fig.world(fig.rest_pose() + d)[eff][:3, 3] for d in (0.2, 0.3, -0.2)])\n"
            "T[2] += 50.0\n"
            "b = IKProblem(fig, eff).solve_batch(T, quiet=True)\n"
            "print(jit.enabled(), b.converged.tolist(), b.reachable, bool(np.isfinite(b.poses).all()))\n")
    env = dict(os.environ, ANIMKIT_JIT="0")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[0] == "False [True, True, False] (True, True, False) True"
