"""The compiled lm loop (animkit.ik.lm_jit) piece by piece against independent NumPy computations, and whole runs
against the NumPy loop it mirrors (animkit.ik.lm), iteration by iteration."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import animkit
from animkit import jit
from animkit.ik import LM, IKProblem, compile_chain, rotation_error
from animkit.ik.constants import LAMBDA_DOWN, LAMBDA_MIN
from animkit.ik.jacobian import chain_jacobian
from animkit.ik.lm import run_lm, serial_chain
from animkit.ik.lm_jit import log_vee
from animkit.ik.solvers import Options
from animkit.io.urdf import MissingMeshWarning
from animkit.model.figure import Figure
from animkit.model.joints import hinge
from animkit.model.transforms import matrix_from_rotation_vector, rotation_vector_from_matrix

from .ik_helpers import random_targets

pytestmark = pytest.mark.skipif(not jit.enabled(), reason="numba is not importable (or ANIMKIT_JIT=0)")

ROOT = Path(__file__).resolve().parent.parent
PANDA = ROOT / "benchmarks" / "data" / "franka_panda.urdf"


def _panda_model():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingMeshWarning)
        sc = animkit.load(PANDA)
    fig = sc.figure
    lim = fig.dof_limits()
    start = np.clip(np.zeros(fig.dof_count), lim[:, 0], lim[:, 1])
    arm = np.array(sorted(fig.dof_index(j) for j in sc.figure.chain("arm")))
    return fig, lim, start, arm, compile_chain(fig, start, arm, ("panda_grasptarget",), "arm")


def _targets(fig, lim, start, arm, count, seed):
    return random_targets(fig, "panda_grasptarget", np.asarray(arm), start, count, seed)


def test_forward_matches_the_chain_model_frames():
    from animkit.ik.lm_jit import chain_forward

    fig, lim, start, arm, model = _panda_model()
    ch = serial_chain(model)
    rng = np.random.default_rng(0)
    for _ in range(10):
        q = rng.uniform(model.lower, model.upper)
        T, Te = np.empty((ch.n, 4, 5)), np.empty((4, 4))
        chain_forward(q, ch.Hs.reshape(ch.n, 3, 20), ch.eff_C[0], T, Te, np.empty(20))
        fr = model.frames(q[None])
        np.testing.assert_allclose(T[:, :, :4], fr.T[:, 0], atol=1e-12)
        np.testing.assert_allclose(T[:, :3, 4], fr.a[0], atol=1e-12)  # the world axis column
        np.testing.assert_allclose(Te[:3, 3], fr.p[0, 0], atol=1e-12)
        np.testing.assert_allclose(Te[:3, :3], fr.R[0, 0], atol=1e-12)
        # and the figure's own traversal
        full = start.copy()
        full[arm] = q
        np.testing.assert_allclose(Te, fig.world(full)["panda_grasptarget"], atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3), st.floats(0.0, np.pi),
       st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3), st.floats(-1e-7, 1e-7))
def test_residual_matches_rotation_error_also_near_pi(axis, angle, other, wobble):
    from animkit.ik.lm_jit import chain_residual

    a = np.asarray(axis)
    if np.linalg.norm(a) < 1e-3:
        a = np.array([0.0, 0.0, 1.0])
    a /= np.linalg.norm(a)
    Rc = matrix_from_rotation_vector(np.asarray(other))
    Rt = matrix_from_rotation_vector(a * min(angle + wobble, np.pi)) @ Rc  # up to π (and a hair either side)
    Te = np.eye(4)
    Te[:3, :3], Te[:3, 3] = Rc, (0.1, 0.2, 0.3)
    p = np.array([0.5, -0.2, 0.7])
    w = np.array([1.0, 2.0, 1.0, 0.5, 1.0, 3.0])
    V = np.empty(6)
    pos, ori, e = chain_residual(Te, p, Rt, True, w, V, np.empty((3, 3)))
    omega = rotation_error(Rt, Rc)
    ref = np.concatenate([p - Te[:3, 3], omega])
    assert pos == pytest.approx(np.linalg.norm(p - Te[:3, 3]), abs=1e-12)
    assert ori == pytest.approx(np.linalg.norm(omega), abs=1e-9)
    # at exactly π, ω and −ω are the same rotation: compare the rotation they make
    np.testing.assert_allclose(matrix_from_rotation_vector(V[3:] / w[3:]), matrix_from_rotation_vector(omega),
                               atol=1e-6)
    if angle < 3.0:
        np.testing.assert_allclose(V, ref * w, atol=1e-9)
    assert e == pytest.approx(np.linalg.norm(V), rel=1e-12)


def test_cholesky_solve_against_numpy_and_refuses_an_indefinite_matrix():
    from animkit.ik.lm_jit import solve_spd

    rng = np.random.default_rng(1)
    for n in (1, 3, 7, 12):
        M = rng.normal(size=(n, n + 2))
        A = M @ M.T + 1e-3 * np.eye(n)
        b = rng.normal(size=n)
        x = np.empty(n)
        assert solve_spd(A.copy(), b, x)
        np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-9, atol=1e-12)
    x = np.empty(2)
    assert not solve_spd(np.array([[1.0, 2.0], [2.0, 1.0]]), np.ones(2), x)


@pytest.mark.parametrize("m", [3, 6])
def test_normal_equations_against_numpy_and_the_loops_sums(m):
    """lm_jit.lm_normal_equations (its sums over the 3 or 6 rows written out) against NumPy's J Jᵀ + diag(λ(1 + κ) +
    μD + jitter), J V − μDφ, and bit for bit against the loop it replaced (each sum from 0.0, t = 0, 1, …)."""
    from animkit.ik.lm_jit import lm_normal_equations

    rng = np.random.default_rng(m)
    for n in (1, 4, 7, 9):
        J, V, phi, kappa = rng.normal(size=(n, m)), rng.normal(size=m), rng.normal(size=n), rng.uniform(0, 2, n)
        limited = (rng.random(n) < 0.5).astype(float)
        lam, mu, jitter = 0.3, 0.7, 1e-9
        A, rhs = np.empty((n, n)), np.empty(n)
        trace = lm_normal_equations(J, V, lam, mu, limited, phi, jitter, kappa, A, rhs)
        diag = lam * (1.0 + kappa) + mu * limited + jitter
        np.testing.assert_allclose(A, J @ J.T + np.diag(diag), rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(rhs, J @ V - mu * limited * phi, rtol=1e-13, atol=1e-13)
        assert trace == pytest.approx(float(np.trace(A)), rel=1e-14)
        loops = np.array([[sum((J[i, t] * J[j, t] for t in range(m)), 0.0) for j in range(n)] for i in range(n)])
        for i in range(n):
            loops[i, i] += lam * (1.0 + kappa[i]) + (mu if limited[i] else 0.0) + jitter
        g = np.array([sum((J[i, t] * V[t] for t in range(m)), 0.0) for i in range(n)])
        assert np.array_equal(A, loops) and np.array_equal(rhs, g - np.where(limited != 0.0, mu, 0.0) * phi)


def test_theta_keeps_the_sines_it_takes():
    """lm_jit.theta_of: θ = clip(m + h sin φ) where limited (φ elsewhere), and sin φ left in sphi for the accepted φ's
    wrap, asin(sin φ), which reads it instead of taking the sine again."""
    from animkit.ik.lm_jit import theta_of

    rng = np.random.default_rng(3)
    phi, mid, half = rng.uniform(-3, 3, 8), rng.uniform(-1, 1, 8), rng.uniform(0.1, 2, 8)
    limited = np.array([1, 0, 1, 1, 0, 1, 0, 1], dtype=float)
    lo, hi = mid - half + 0.05, mid + half - 0.05
    q, sphi = np.empty(8), np.full(8, np.nan)
    theta_of(phi, mid, half, limited, lo, hi, q, sphi)
    on = limited != 0.0
    sines = np.array([math.sin(x) for x in phi])  # the C library's sine, as the kernel's (NumPy's may differ by an ulp)
    assert np.array_equal(sphi[on], sines[on])
    np.testing.assert_allclose(q, np.clip(np.where(on, mid + half * sines, phi), lo, hi), rtol=0, atol=1e-15)


@pytest.mark.parametrize("six", [False, True])
def test_compiled_runs_follow_the_numpy_loop_iteration_by_iteration(monkeypatch, six):
    fig, lim, start, arm, model = _panda_model()
    T = _targets(fig, lim, start, arm, 24, seed=3)
    P, R = T[:, None, :3, 3], (T[:, None, :3, :3] if six else None)
    opts = Options(damping=1.0, max_step=0.5, row_weights=np.ones(6 if six else 3), max_iter=6)
    q0 = np.repeat(start[arm][None], len(T), 0)
    fast = run_lm(model, q0, P, R, opts)
    monkeypatch.setattr(jit, "ENABLED", False)
    slow = run_lm(model, q0, P, R, opts)
    # six iterations of the same equations: only the order of floating-point sums differs
    np.testing.assert_allclose(fast.q, slow.q, atol=1e-9)
    np.testing.assert_allclose(fast.errors, slow.errors, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(fast.iterations, slow.iterations)
    assert fast.reason == slow.reason
    np.testing.assert_allclose(fast.position_error, slow.position_error, rtol=1e-9, atol=1e-12)


def _random_chain(axes, lengths, limits, tilts):
    fig = Figure("base")
    parent = "base"
    for k, (axis, length, lim, tilt) in enumerate(zip(axes, lengths, limits, tilts, strict=True)):
        fig.add(f"l{k}", parent, offset=(length, tilt, 0.03 * k),
                joint=hinge(f"j{k}", axis, limits=None if lim is None else (-lim, 0.6 * lim)))
        parent = f"l{k}"
    fig.add("tip", parent, offset=(0.12, 0.04, -0.02))
    return fig


_axis = st.sampled_from(["x", "y", "z", (0.0, 0.6, 0.8), (0.48, 0.6, 0.64), (-0.36, 0.48, 0.8)])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 9).flatmap(lambda n: st.tuples(
    st.lists(_axis, min_size=n, max_size=n), st.lists(st.floats(0.05, 0.4), min_size=n, max_size=n),
    st.lists(st.one_of(st.none(), st.floats(0.4, 3.0)), min_size=n, max_size=n),
    st.lists(st.floats(-0.1, 0.1), min_size=n, max_size=n))),
    st.booleans(), st.floats(0.01, 2.0), st.one_of(st.none(), st.floats(0.05, 1.0)), st.integers(0, 2**16))
@example(([(0.0, 0.6, 0.8), "x", "z", "x", (-0.36, 0.48, 0.8), (-0.36, 0.48, 0.8), (0.48, 0.6, 0.64), "y"],
          [0.3858799166995876, 0.17402419865049018, 0.07749718016648459, 0.2484122198501436, 0.1629240281747225,
           0.16622656132548003, 0.29495248438400645, 0.3263459545663577],
          [None, 2.8878472994405078, None, None, 0.9949821005957276, 1.3575374113878527, None, None],
          [-0.03476504130588702, -0.04831711791527696, -0.059573068116112585, 0.09940217562280343,
           -0.08336901883007203, -0.05315788280026068, -0.021813218929229536, -0.010410242091817554]),
         False, 0.03054877449153276, 0.6091962963238866, 43058)  # 8 DOFs, 3 rows, λ → 3e-7: κ 2.9e7, q 1.4e-10 apart
def test_compiled_kernel_follows_the_numpy_reference_on_random_chains(shape, orient, damping, max_step, seed):
    """The compiled one-problem kernel (lm_jit, fed its records) and the NumPy reference (run_lm with numba off):
    the same iterates, iteration by iteration, on random serial chains, targets, starts, damping and step caps
    (a few iterations: the sums' order differs, so rounding may grow along a long path). The poses agree to
    max(1e-10, ε κ) rad, κ the condition number of the last normal matrix JᵀW²J + λI (λ as small as the run can have
    made it): the two paths' steps solve the same system with sums in another order, so their difference is a
    relative ε perturbation amplified by at most κ (with more DOFs than rows λ alone bounds the smallest eigenvalue;
    in 200 such draws the difference stayed under 0.03 ε κ)."""
    fig = _random_chain(*shape)
    dofs = np.arange(fig.dof_count)
    model = compile_chain(fig, fig.rest_pose(), dofs, ("tip",), "chain")
    rng = np.random.default_rng(seed)
    T = random_targets(fig, "tip", dofs, fig.rest_pose(), 1, seed)
    q0 = rng.uniform(-1.0, 1.0, size=(1, model.n))
    w = rng.uniform(0.5, 2.0, size=6 if orient else 3)
    opts = Options(damping=damping, max_step=max_step, row_weights=w, max_iter=5, tol=1e-12,
                   orientation_tol=1e-12)
    P, R = T[:, None, :3, 3], (T[:, None, :3, :3] if orient else None)
    fast = run_lm(model, q0, P, R, opts)  # one problem: lm_jit's kernel
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jit, "ENABLED", False)
        slow = run_lm(model, q0, P, R, opts)
    np.testing.assert_array_equal(fast.iterations, slow.iterations)
    assert fast.reason == slow.reason
    J = chain_jacobian(model, model.frames(slow.q), orient)[0] * w[:, None]
    lam = max(damping * LAMBDA_DOWN ** int(slow.iterations[0]), LAMBDA_MIN)
    ev = np.linalg.eigvalsh(J.T @ J)
    kappa = (ev.max() + lam) / (ev.min() + lam)
    tol = max(1e-10, np.finfo(float).eps * kappa)
    np.testing.assert_allclose(fast.errors, slow.errors, rtol=tol, atol=1e-12)
    np.testing.assert_allclose(fast.q, slow.q, rtol=0, atol=tol)
    np.testing.assert_allclose(fast.position_error, slow.position_error, rtol=tol, atol=1e-12)


def test_compiled_and_numpy_loops_solve_the_same_targets(monkeypatch):
    fig, lim, start, arm, model = _panda_model()
    T = _targets(fig, lim, start, arm, 40, seed=4)
    opts = Options(damping=1.0, max_step=0.5, row_weights=np.ones(6))
    q0 = np.repeat(start[arm][None], len(T), 0)
    fast = run_lm(model, q0, T[:, None, :3, 3], T[:, None, :3, :3], opts)
    monkeypatch.setattr(jit, "ENABLED", False)
    slow = run_lm(model, q0, T[:, None, :3, 3], T[:, None, :3, :3], opts)
    conv_f = np.array(fast.reason) == "converged"
    conv_s = np.array(slow.reason) == "converged"
    assert conv_f.mean() >= 0.85 and abs(int(conv_f.sum()) - int(conv_s.sum())) <= 1
    for i in np.flatnonzero(conv_f & conv_s):  # a converged pose really reaches its target, inside the limits
        assert fast.position_error[i] <= 1e-5 and fast.orientation_error[i] <= 1e-4
        assert np.all(fast.q[i] >= model.lower) and np.all(fast.q[i] <= model.upper)
        full = start.copy()
        full[arm] = fast.q[i]
        np.testing.assert_allclose(fig.world(full)["panda_grasptarget"][:3, 3], T[i, :3, 3], atol=1e-5)


def test_first_success_stops_at_the_first_converged_problem():
    fig, lim, start, arm, model = _panda_model()
    T = _targets(fig, lim, start, arm, 1, seed=5)[0]
    rng = np.random.default_rng(6)
    starts = rng.uniform(model.lower, model.upper, size=(16, model.n))
    opts = Options(damping=1.0, max_step=0.5, row_weights=np.ones(6), stall_window=8, stall_ratio=0.7)
    out = run_lm(model, starts, np.repeat(T[None, None, :3, 3], 16, 0), np.repeat(T[None, None, :3, :3], 16, 0),
                 opts, first_success=True)
    conv = [i for i, r in enumerate(out.reason) if r == "converged"]
    assert conv, "one of 16 random starts converges on this target"
    first = conv[0]
    assert conv == [first]  # nothing after it ran
    assert np.all(np.isinf(out.errors[:, first + 1:])) and np.all(out.iterations[first + 1:] == 0)
    assert np.all(np.isfinite(out.errors[:, :first + 1]))


def test_animkit_jit_0_runs_the_numpy_loop():
    code = ("import numpy as np, animkit; from animkit import jit; from animkit.ik import solve\n"
            "sc = animkit.load('scenes/three_axis_arm.toml'); fig = sc.figure\n"
            "eff = list(sc.figure.rig.effectors)[0] if sc.figure.rig.effectors else fig.node_names[-1]\n"
            "T = fig.world(fig.rest_pose() + 0.3)[eff][:3, 3]\n"
            "r = solve(fig, fig.rest_pose(), eff, T)\n"
            "print(jit.enabled(), r.converged)\n")
    env = dict(os.environ, ANIMKIT_JIT="0")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def _ur5_problem(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingMeshWarning)
        fig = animkit.load(ROOT / "tests" / "data" / "ur5_robot.urdf").figure
    s = fig.rest_pose()
    for name, v in zip(("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
                        "wrist_3_joint"), (0.0, -np.pi / 2, np.pi / 2, -np.pi / 2, -np.pi / 2, 0.0), strict=True):
        s[fig.dof_index(name)] = v
    return fig, "ee_link", IKProblem(fig, "ee_link", "arm", pose=s, **kw)


def _panda_problem(**kw):
    fig, lim, start, arm, _ = _panda_model()
    start[arm] = (0.0, -0.3, 0.0, -2.2, 0.0, 2.0, np.pi / 4)  # the toolbox's qr
    return fig, "panda_grasptarget", IKProblem(fig, "panda_grasptarget", "arm", pose=start, **kw)


def _humanoid_problem(chain, **kw):
    fig = animkit.load(ROOT / "scenes" / "humanoid.toml").figure
    s = fig.rest_pose()
    s[fig.dof_index("elbow_r.rx")] = -0.6
    s[fig.dof_index("shoulder_r.rx")] = -0.3
    return fig, "hand_r", IKProblem(fig, "hand_r", chain, pose=s, **kw)


def _random_targets(fig, eff, problem, count, seed, orientation=True):
    T = random_targets(fig, eff, problem.model.dofs, problem.pose, count, seed)
    return T if orientation else T[:, :3, 3].copy()


@pytest.mark.parametrize("case", ["panda", "ur5", "arm", "panda-position", "panda-norelax", "panda-stiff",
                                  "panda-far"])
def test_packed_solve_is_the_python_orchestrated_strategy(case):
    """IKProblem.solve from the problem's own pose runs lm's whole strategy (first run, relaxed-limits retries,
    position first, reachability) in one compiled call; the same problem given its start pose explicitly runs the
    same strategy orchestrated in Python (each run compiled, the retries and the tests in NumPy): the same
    answers, iterations, residual histories and reasons, failures and retries included."""
    orientation = case != "panda-position"
    kw: dict = {"orientation": orientation}
    if case == "panda-norelax":
        kw["solver"] = LM(relax=False)
    if case == "panda-stiff":
        kw["solver"] = LM(stiffness={"panda_joint1": 0.5, "panda_joint4": 0.2})
    if case in ("ur5",):
        fig, eff, problem = _ur5_problem(**kw)
    elif case == "arm":
        fig, eff, problem = _humanoid_problem("arm", **kw)
    else:
        fig, eff, problem = _panda_problem(**kw)
    T = _random_targets(fig, eff, problem, 40, seed=11, orientation=orientation)
    if case == "panda-far":  # out of reach: the reachability test decides
        T[:, :3, 3] *= 3.0
    retried = 0
    for t in T:
        fast = problem.solve(t)
        slow = problem.solve(t, start=problem.pose)
        assert fast.reason == slow.reason and fast.reachable == slow.reachable
        assert fast.iterations == slow.iterations
        np.testing.assert_allclose(fast.pose, slow.pose, atol=1e-9)
        # (the same equations; sums in another order where the Python path batches its retries: last digits)
        np.testing.assert_allclose(fast.errors, slow.errors, rtol=1e-6, atol=1e-11)
        assert fast.position_error == pytest.approx(slow.position_error, rel=1e-6, abs=1e-11)
        assert fast.orientation_error == pytest.approx(slow.orientation_error, rel=1e-6, abs=1e-11)
        if fast.converged:  # an independent check of the answer: the figure's own FK, inside the limits
            W = fig.world(fast.pose)[eff]
            p = W[:3, 3] if t.shape == (3,) else None
            assert np.linalg.norm((t if p is not None else t[:3, 3]) - W[:3, 3]) <= 1e-5
            if p is None:
                assert np.linalg.norm(rotation_error(t[:3, :3], W[:3, :3])) <= 1e-4
            lim = fig.dof_limits()
            assert np.all(fast.pose >= lim[:, 0] - 1e-12) and np.all(fast.pose <= lim[:, 1] + 1e-12)
        retried += fast.iterations > problem.solver.max_iter
    if case in ("panda", "ur5", "arm"):
        assert retried > 0, "some targets need the retries: the test covers them"
    if case == "panda-far":
        far = [problem.solve(t) for t in T]
        assert sum(r.reachable is False for r in far) >= 30  # shown out of reach, by distance or optimality


def test_packed_solve_checks_the_target_like_the_checked_path():
    from animkit.errors import IKError

    fig, eff, problem = _panda_problem(orientation=True)
    good = _random_targets(fig, eff, problem, 1, seed=2)[0]
    bad = [good * np.array([1.0, 1.0, 1.0, 1.0])[:, None] + np.diag([0.01, 0, 0, 0]),  # not orthonormal
           np.where(np.eye(4, dtype=bool), np.nan, good), good[:3, 3].copy(),
           np.diag([1.0, 1.0, -1.0, 1.0])]  # a reflection
    for t in bad:
        with pytest.raises(IKError) as fast:
            problem.solve(t)
        with pytest.raises(IKError) as slow:
            problem.solve(t, start=problem.pose)
        assert str(fast.value) == str(slow.value)
    # a non-contiguous or integer target is the same target
    r = problem.solve(np.asfortranarray(good))
    assert r.converged == problem.solve(good).converged
    np.testing.assert_array_equal(r.pose, problem.solve(good).pose)


def test_a_batch_accepts_the_targets_a_single_solve_accepts():
    """One rule for a rigid 4×4 target: a batch accepts or refuses each of these as a single solve (through its
    full check) does."""
    from animkit.errors import IKError

    fig, eff, problem = _panda_problem(orientation=True)
    good = _random_targets(fig, eff, problem, 1, seed=2)[0]
    def scaled(f):
        t = good.copy()
        t[:3, :3] *= f
        return t

    cases = {"as is": good, "rotation scaled 1 + 2e-6": scaled(1 + 2e-6), "rotation scaled 1 + 2e-5": scaled(1 + 2e-5),
             "last row 1 + 5e-6": good + np.diag([0, 0, 0, 5e-6]), "last row 1 + 5e-5": good + np.diag([0, 0, 0, 5e-5]),
             "reflection": good @ np.diag([1.0, 1.0, -1.0, 1.0])}
    for name, t in cases.items():
        try:
            problem.solve(t, start=problem.pose)
            single = True
        except IKError:
            single = False
        try:
            problem.solve_batch(np.stack([good, t]), quiet=True)
            batch = True
        except IKError:
            batch = False
        assert single == batch, name
        assert single == (name in ("as is", "rotation scaled 1 + 2e-6", "last row 1 + 5e-6")), name


@pytest.mark.parametrize("case", ["panda", "ur5"])
def test_numpy_fallback_solves_what_the_packed_loop_solves(monkeypatch, case):
    """The same reused problem with the compiled loops turned off (ANIMKIT_JIT=0's path: NumPy's one-problem loop,
    the same strategies orchestrated in Python): first runs follow the same equations, so the converged targets
    agree (±1 where a long run's floating-point order tips a stall) and each answer meets its target on the
    figure's own FK."""
    fig, eff, problem = _panda_problem(orientation=True) if case == "panda" else _ur5_problem(orientation=True)
    T = _random_targets(fig, eff, problem, 30, seed=5)
    fast = [problem.solve(t) for t in T]
    monkeypatch.setattr(jit, "ENABLED", False)
    slow = [problem.solve(t) for t in T]
    cf = np.array([r.converged for r in fast])
    cs = np.array([r.converged for r in slow])
    assert abs(int(cf.sum()) - int(cs.sum())) <= 1 and cf.mean() >= 0.9
    for r, s, t in zip(fast, slow, T, strict=True):
        if r.iterations <= problem.solver.max_iter and r.converged:  # first runs: the same path, the same answer
            np.testing.assert_allclose(r.pose, s.pose, atol=1e-6)
            assert r.iterations == s.iterations
        for x in (r, s):
            if x.converged:
                W = fig.world(x.pose)[eff]
                assert np.linalg.norm(W[:3, 3] - t[:3, 3]) <= 1e-5
                assert np.linalg.norm(rotation_error(t[:3, :3], W[:3, :3])) <= 1e-4


def test_log_vee_against_numpy_including_near_a_half_turn():
    """The compiled loops' rotation log against transforms.rotation_vector_from_matrix (NumPy) on random rotations,
    tiny angles and angles within 1e-9 of π (the branch that reads the axis off the symmetric part); at π itself ω
    and −ω are the same rotation: exp(ω) must give D back. Also on a strided (3, 3) view, as the lanes pass it."""
    rng = np.random.default_rng(4)
    axes = rng.normal(size=(300, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    angles = np.r_[rng.uniform(0.0, np.pi, 100), rng.uniform(0.0, 1e-7, 50), np.pi - rng.uniform(0.0, 1e-9, 100),
                   np.full(50, np.pi)]
    for a, t in zip(axes, angles, strict=True):
        D = matrix_from_rotation_vector(a * t)
        w = np.array(log_vee(np.ascontiguousarray(D)))
        assert np.linalg.norm(matrix_from_rotation_vector(w) - D) < 1e-12
        assert abs(np.linalg.norm(w) - t) < 1e-9
        if t < np.pi - 1e-6:
            np.testing.assert_allclose(w, rotation_vector_from_matrix(D), rtol=0, atol=1e-12)
        lanes = np.zeros((3, 3, 8))
        lanes[:, :, 5] = D
        assert log_vee(lanes[:, :, 5]) == log_vee(np.ascontiguousarray(D))
