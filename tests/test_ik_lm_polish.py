"""lm's answers left short, finished in θ (animkit.ik.lm.polish, and lm_jit.polish_one inside the compiled packed
strategy and the lanes with restarts): the limit-bound two-hinge arm against its closed-form constrained optimum and
the KKT conditions by central differences of the figure's own FK, from several starts, on every path (the packed
single solve, the checked one, a batch, a batch with restarts; compiled and NumPy), each path held to the others."""

from __future__ import annotations

import math

import numpy as np
import pytest

import animkit
from animkit import jit
from animkit.ik import LM, IKProblem, solve
from animkit.ik.constants import STATIONARY

from .ik_helpers import SCENES, limit_bound_arm

STARTS = np.array([(0.0, 0.0), (0.0, 0.1), (1.0, 0.05), (-1.0, 0.15), (3.0, 0.2), (-2.5, 0.0)])
PATHS = ("packed", "checked", "batch", "batch-restarts")


def _optimum() -> tuple[float, float]:
    """The closed form: the end lies r(e) = ‖(0.7 + 0.4 cos e, 0.4 sin e)‖ from the base, decreasing in the elbow e
    on [0, 0.2], and the target lies 0.5 < r(0.2) from it: the best distance is r(0.2) − 0.5, the elbow on its upper
    limit and the end on the ray to the target (shoulder = π/2 − atan2(0.4 sin 0.2, 0.7 + 0.4 cos 0.2))."""
    ex, ey = 0.7 + 0.4 * math.cos(0.2), 0.4 * math.sin(0.2)
    return math.hypot(ex, ey) - 0.5, math.pi / 2 - math.atan2(ey, ex)


def _answers(path: str) -> list[tuple[np.ndarray, float, str, int]]:
    """(pose, position error, reason, iterations) of the limit-bound arm from every start, by ``path``."""
    fig, target, _ = limit_bound_arm()
    T = np.repeat(target[None], len(STARTS), 0)
    if path in ("batch", "batch-restarts"):
        b = IKProblem(fig, "end").solve_batch(T, STARTS, restarts=4 if path == "batch-restarts" else 0, quiet=True)
        return [(b.poses[i], float(b.position_error[i]), b.reason[i], int(b.iterations[i])) for i in range(len(T))]
    out = []
    for s in STARTS:  # packed: the problem's own pose, one compiled call; checked: the start given
        r = IKProblem(fig, "end", pose=s).solve(target) if path == "packed" else \
            IKProblem(fig, "end").solve(target, start=s)
        out.append((r.pose, r.position_error, r.reason, r.iterations))
    return out


def test_the_closed_form_is_the_grids_best():
    _, _, grid = limit_bound_arm()
    best, _ = _optimum()
    assert best <= grid <= best + 2e-6  # the 1441 × 21 grid's best lies just above the closed form


@pytest.mark.parametrize("path", PATHS)
def test_the_limit_bound_arm_ends_at_its_constrained_optimum(lm_path, path):
    """Every start, every path: the closed form's distance to 1 µm (the brief asks 0.1 mm), the elbow exactly on its
    limit, the shoulder (unlimited: modulo 2π) on the ray to the target to the optimality test's tolerance,
    "unreachable" (first-order optimal inside the reach). Before the polish: "stalled" 3.8 mm short with the elbow
    mid-range (0.101)."""
    best, shoulder = _optimum()
    for pose, err, why, _ in _answers(path):
        off = math.remainder(pose[0] - shoulder, 2 * math.pi)
        assert abs(err - best) <= 1e-6 and pose[1] == 0.2 and abs(off) <= 2e-3
        assert why == "unreachable"


def test_the_answer_meets_the_kkt_conditions_by_the_figures_own_fk():
    """At the answer, by central differences (h = 1e-6) of d(θ) = ‖FK_end(θ) − t‖ through Figure.world_positions:
    the elbow on its upper limit with ∂d/∂elbow < 0 (the descent direction points out of the range: held), and the
    free shoulder stationary as lm_rules.stationary defines it, |∂(½d²)/∂θ_s| ≤ STATIONARY · ‖∂FK/∂θ_s‖ · d."""
    fig, target, _ = limit_bound_arm()
    end = fig.node_names.index("end")
    h = 1e-6
    for s in STARTS:
        q = IKProblem(fig, "end", pose=s).solve(target).pose
        E = np.eye(2) * h
        P = fig.world_positions(np.concatenate([q + E, q - E]))[:, end]
        dist = np.linalg.norm(P - target, axis=1)
        grad = (dist[:2] - dist[2:]) / (2 * h)
        col = np.linalg.norm(P[:2] - P[2:], axis=1) / (2 * h)
        d = float(np.linalg.norm(fig.world_positions(q[None])[0, end] - target))
        assert q[1] == 0.2 and grad[1] < -0.01  # the limit holds the elbow; it would close the distance beyond it
        assert abs(d * grad[0]) <= STATIONARY * col[0] * d * 1.01


def test_the_paths_agree(monkeypatch):
    """The packed compiled strategy against the checked path orchestrated in Python (its polish in NumPy), and the
    lanes with restarts against NumPy's rounds: the same reasons and iterations, the same poses to 1e-9 rad."""
    if not jit.enabled():
        pytest.skip("numba is not importable (or ANIMKIT_JIT=0)")
    packed, checked = _answers("packed"), _answers("checked")
    lanes = _answers("batch-restarts")
    monkeypatch.setattr(jit, "ENABLED", False)
    rounds = _answers("batch-restarts")
    for a, b in ((packed, checked), (lanes, rounds)):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_allclose(x[0], y[0], atol=1e-9)
            assert x[2:] == y[2:] and x[1] == pytest.approx(y[1], rel=1e-9)


def test_the_polish_stays_within_max_iter_and_lm_only():
    """A run stopped by its own cap stays unfinished (LM(max_iter=1): the polish never runs past max_iter counted
    iterations), and the other solvers are not polished (their answers are their own)."""
    fig, target, _ = limit_bound_arm()
    best, _ = _optimum()
    r = solve(fig, np.array([0.0, 0.1]), "end", target, solver=LM(max_iter=1))
    assert r.pose[1] != 0.2 and r.position_error > best + 1e-3 and r.reason != "unreachable"
    r = solve(fig, np.array([0.0, 0.1]), "end", target, solver=LM(max_iter=1000))
    assert abs(r.position_error - best) <= 1e-6 and r.iterations <= 1000
    assert IKProblem(fig, "end", solver="dls").options.polish == 0 and IKProblem(fig, "end").options.polish > 0


def test_a_fold_from_the_reused_problem_is_left():
    """The three-axis arm straight up, the target straight below (a fold: stationary, a maximum along the bend):
    the packed compiled strategy tells it from a minimum (its Hessian over the free DOFs is indefinite) and hands it
    to the checked path, which leaves it and converges; never "unreachable"."""
    fig = animkit.load(SCENES / "three_axis_arm.toml").figure
    problem = IKProblem(fig, "tip", "arm")
    for _ in range(2):  # the second solve runs the compiled entry itself
        r = problem.solve(np.array([0.0, 0.0, -2.0]))
        assert r.converged and r.reason == "converged" and r.position_error < 1e-4


def test_the_compiled_fold_test_knows_a_fold_from_a_minimum():
    """lm_strategy_jit.fold_mask (the batches' fold test on a serial chain, compiled) on points whose answer is
    known: the three-axis arm straight up with its target straight below (stationary, a maximum along the bend: a
    fold), the limit-bound arm at its closed-form optimum (a minimum on a limit: not a fold), and both arms at a point
    that is not stationary (not a fold)."""
    if not jit.enabled():
        pytest.skip("numba is not importable (or ANIMKIT_JIT=0)")
    from animkit.ik.lm import loop_chain, serial_chain
    from animkit.ik.lm_strategy_jit import fold_mask

    arm = animkit.load(SCENES / "three_axis_arm.toml").figure
    up = IKProblem(arm, "tip", "arm")
    fig, target, _ = limit_bound_arm()
    bound = IKProblem(fig, "end")
    _, shoulder = _optimum()
    for problem, q, t, want in ((up, up.pose[up.model.dofs], np.array([0.0, 0.0, -2.0]), [True, False]),
                                (bound, np.array([shoulder, 0.2]), target, [False, False])):
        ch = serial_chain(problem.model)
        Q = np.stack([q, q + 0.3])
        got = fold_mask(loop_chain(ch, problem.options), Q, np.repeat(t[None], 2, 0), None,
                        problem.options.row_weights)
        assert got.tolist() == want
