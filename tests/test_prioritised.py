"""One step of the natural solver (animkit.ik.natural) against the module docstring's prioritised step written out
in full: every level's update from P₀ = I and Δφ₀ = 0, every projector formed (the last one too), the null-space
term −½ P W^−½ ∇H bounded by its step, W^−½ scaling and MAX_STEP. The solver skips work that cannot change the
numbers (the first level's product with I, the last projector where ∇H = 0); the two agree to 1e-12, with the
null-space terms on (∇H ≠ 0) and off (a bake frame's later iterations), over one, two and three levels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import animkit
from animkit.ik.natural import MAX_STEP, NULL_PRIORITY, NULL_STEP, Natural, Priors
from animkit.ik.stack import TaskStack, aimed_tasks, stack_tasks
from animkit.ik.tasks import body_from_figure, configuration

from .conftest import SCENES

SCENE = animkit.load(SCENES / "humanoid.toml")
FIG = SCENE.figure


def _textbook_step(stack: TaskStack, q: np.ndarray, sc: np.ndarray, null: float) -> np.ndarray:
    """Δθ = W^−½ (Σ_k Δφ_k − ½ P W^−½ ∇H), each level in the null space of those before, the projector updated
    after every level."""
    c = stack.config(q)
    by: dict[int, list] = {}
    grad = np.zeros(len(stack.dofs))
    for t in stack.tasks:
        if t.weight == 0:
            continue
        assert not t.inequality
        if t.priority >= NULL_PRIORITY:
            if null > 0:
                grad += t.gradient(c)[stack.dofs]
            continue
        J, V, lam = t.velocity(c)
        if len(V):
            by.setdefault(t.priority, []).append((J[:, stack.dofs], V, lam))
    n = len(sc)
    dphi, P = np.zeros(n), np.eye(n)
    for _, parts in sorted(by.items()):
        J = np.vstack([j for j, _, _ in parts]) * sc
        V = np.concatenate([v for _, v, _ in parts])
        lam = max(la for _, _, la in parts)
        JP = J @ P
        dphi = dphi + JP.T @ np.linalg.solve(JP @ JP.T + lam * lam * np.eye(len(V)), V - J @ dphi)
        P = P - JP.T @ np.linalg.solve(JP @ JP.T + 1e-8 * np.eye(len(V)), JP)
    dz = 0.5 * P @ (sc * grad)
    big = float(np.max(np.abs(dz), initial=0.0))
    if big > null:
        dz *= null / big
    return sc * (dphi - dz)


def _mid_pose() -> np.ndarray:
    """Each limited DOF in the middle of its limits, the others 0."""
    lim = FIG.dof_limits()
    finite = np.isfinite(lim).all(axis=1)
    return np.where(finite, np.where(finite[:, None], lim, 0.0).mean(axis=1), 0.0)


def _stack(chain: str, p0: np.ndarray) -> TaskStack:
    prob = Priors(ranges={}, stiffness={"spine": 0.3, "neck": 0.5}).problem(FIG, "hand_r", chain, pose=p0)
    body = body_from_figure(FIG)
    return TaskStack(FIG, body, prob.model, p0, tuple(stack_tasks(prob.tasks, configuration(FIG, p0, body))),
                     prob.tol, prob.orientation_tol)


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2 ** 31 - 1), st.sampled_from(["arm", "torso", "whole-body"]), st.sampled_from([None, 0, 4]))
def test_one_step_equals_the_textbook_prioritised_step(seed, chain, null_steps) -> None:
    """A one-iteration solve from a pose in the middle of the limits (no DOF near a limit, no bound) lands on
    clamp(q + Δθ) with Δθ the textbook step, to 1e-12; the levels are there (a gaze, planted feet and balance
    where the set moves them)."""
    rng = np.random.default_rng(seed)
    p0 = _mid_pose() + rng.uniform(-0.02, 0.02, FIG.dof_count) * np.isfinite(FIG.dof_limits()).all(axis=1)
    stack = _stack(chain, p0)
    target = configuration(FIG, p0).state.p[FIG.node_names.index("hand_r")] + rng.uniform(-0.05, 0.05, 3)
    stack = TaskStack(stack.figure, stack.body, stack.model, stack.pose,
                      tuple(aimed_tasks(stack.tasks, target, None, None)), stack.tol, stack.orientation_tol)
    solver = Natural(stiffness={"spine": 0.3, "neck": 0.5}, max_iter=1, null_steps=null_steps, settle=False)
    q0 = stack.clamp(p0[stack.dofs])
    sc = solver.scale(FIG, stack.dofs)
    null = NULL_STEP if null_steps is None else NULL_STEP * null_steps
    dq = _textbook_step(stack, q0, sc, null)
    m = stack.model
    band = np.minimum(0.2, 0.25 * (m.upper - m.lower))
    assume(np.all(np.where(dq > 0, m.upper - q0, q0 - m.lower) > np.maximum(band, np.abs(dq))))  # no limit near
    want = stack.clamp(q0 + dq * min(1.0, MAX_STEP / float(np.max(np.abs(dq)))))
    got = solver.solve_stack(stack, q0).q[0]
    assert not np.array_equal(got, q0)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("chain", ["torso", "whole-body"])
def test_the_stacks_here_have_levels_and_null_terms(chain) -> None:
    """The cases above are the ones the fast path changes: two or more levels and null-space terms."""
    stack = _stack(chain, _mid_pose())
    levels = {t.priority for t in stack.tasks if t.weight > 0 and t.priority < NULL_PRIORITY}
    assert len(levels) >= 2 and any(t.priority >= NULL_PRIORITY and t.weight > 0 for t in stack.tasks)


def test_solve_pair_is_numpys_solve_and_restores_the_error_state() -> None:
    """The step's solves: np.linalg.solve's numbers bit for bit (the oracle), a singular matrix its LinAlgError, and
    NumPy's error state afterwards as it was before (raised or not)."""
    from animkit.ik.prioritised import solve_pair

    rng = np.random.default_rng(3)
    A, b, C = rng.normal(size=(4, 4)), rng.normal(size=4), rng.normal(size=(4, 6))
    before = np.geterr()
    x, Y = solve_pair(A, b, (A + np.eye(4), C))
    assert np.array_equal(x, np.linalg.solve(A, b)) and np.array_equal(Y, np.linalg.solve(A + np.eye(4), C))
    assert np.geterr() == before
    with pytest.raises(np.linalg.LinAlgError):
        solve_pair(np.zeros((2, 2)), np.ones(2), None)
    assert np.geterr() == before
    with np.errstate(all="raise"):  # a caller's own state comes back too
        solve_pair(A, b, None)
        assert np.geterr()["over"] == "raise"
