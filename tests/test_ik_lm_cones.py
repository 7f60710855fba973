"""LM on a chain with cones (a glTF character's human ranges): every path keeps the joints inside their cones.

The compiled loops know only per-DOF limits, so a coned chain runs NumPy's loop, which projects the cones each
step. Before, CesiumMan's hand sent to an out-of-reach target through the compiled strategy came back "converged",
0.0 m off, with a joint 0.444 rad outside its cone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit import jit
from animkit.ik import LM, IKProblem

DATA = Path(__file__).parent / "data"
TARGET = np.array([-0.3, 0.6, 0.4])  # in front of and above CesiumMan's right shoulder, beyond the arm and trunk


@pytest.fixture(scope="module")
def cesium():  # type: ignore[no-untyped-def]
    return animkit.load(DATA / "CesiumMan.glb").figure


@pytest.mark.parametrize("chain", ["torso", "hips-up"])
def test_lm_keeps_the_cones_on_every_path(cesium, chain: str) -> None:  # type: ignore[no-untyped-def]
    was = (jit.ENABLED, jit.ALWAYS)
    try:
        jit.ALWAYS = True  # the compiled paths wherever they apply, from the first solve
        prob = IKProblem(cesium, "hand_r", chain, solver=LM(max_iter=200), tol=1e-4)
        assert prob.model.cones
        one = prob.solve(TARGET)
        many = prob.solve_batch(np.stack([TARGET, TARGET + 0.01]))
        jit.ENABLED, jit.ALWAYS = False, False  # NumPy's loop alone: the reference
        ref = IKProblem(cesium, "hand_r", chain, solver=LM(max_iter=200), tol=1e-4).solve(TARGET)
    finally:
        jit.ENABLED, jit.ALWAYS = was
    for pose in (one.pose, *many.poses, ref.pose):
        q = pose[prob.model.dofs]
        assert np.abs(prob.model.project_cones(q[None])[0] - q).max() <= 1e-9
    assert not one.converged and one.position_error > 0.05  # out of reach, and not called met
    np.testing.assert_allclose(one.pose, ref.pose, atol=1e-9)


def _worst_feasible_slope(model, q, f, h: float = 1e-5, draws: int = 400) -> float:  # type: ignore[no-untyped-def]
    """min over random unit directions v (and ±e_k) of (f(P(q + h v)) − f(q)) / h, P the cones' projection: the
    fastest first-order descent a feasible move finds from q (≥ 0 at a constrained optimum)."""
    rng = np.random.default_rng(7)
    V = np.concatenate([rng.normal(size=(draws, model.n)), np.eye(model.n), -np.eye(model.n)])
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    moved = model.project_cones(q[None] + h * V)
    return float(np.min((f(moved) - f(q[None])) / h))


def test_an_out_of_reach_target_on_a_coned_chain_is_shown_unreachable_at_its_best_pose(cesium) -> None:  # type: ignore[no-untyped-def]
    """CesiumMan's torso and right arm (five coned ball joints) toward TARGET, within the bones' length but beyond
    what the cones allow. Before: lm stalled 0.100 m away on a cone's edge (the radial projection undid each step
    along the edge) and said "stalled". Now the answer slides along the edges to a constrained optimum and is shown
    "unreachable". Oracle: no feasible move (random directions through the cones' projection) lowers ½‖p − t‖²
    to first order, while from the answer lm stopped at before some move did."""
    prob = IKProblem(cesium, "hand_r", "torso", solver=LM(max_iter=200), tol=1e-4)
    m = prob.model

    def f(Q):  # type: ignore[no-untyped-def]
        return 0.5 * np.sum((m.frames(Q).p[:, 0] - TARGET) ** 2, axis=1)

    res = prob.solve(TARGET)
    assert res.reason == "unreachable" and res.reachable is False
    q = res.pose[m.dofs]
    grad = np.linalg.norm(np.array([(f(q[None] + 1e-6 * e) - f(q[None] - 1e-6 * e))[0] / 2e-6
                                    for e in np.eye(m.n)]))  # ‖∇f‖ by central differences
    assert _worst_feasible_slope(m, q, f) > -0.01 * grad  # measured -0.0034 (the stationarity test's 1e-3 of ‖J‖‖V‖)
    # the answer lm stopped at before (0.100 m away): a feasible move descends there at a rate of ‖∇f‖'s order
    from animkit.ik import strategy  # the slide off: what the strategy returned before
    was = strategy.slide
    try:
        strategy.slide = lambda model, P, R, opts, out: out
        before = IKProblem(cesium, "hand_r", "torso", solver=LM(max_iter=200), tol=1e-4).solve(TARGET)
    finally:
        strategy.slide = was
    qb = before.pose[m.dofs]
    assert before.position_error > res.position_error + 0.02
    assert _worst_feasible_slope(m, qb, f) < -0.5 * grad  # measured -1.005


def test_a_target_beyond_the_bones_length_is_unreachable_with_cones(cesium) -> None:  # type: ignore[no-untyped-def]
    """A target farther from the chain's base than the sum of its bones (a closed form: no pose reaches it) comes
    back "unreachable" on the coned arm and torso."""
    far = np.array([0.0, 5.0, 0.0])
    for chain in ("arm_r", "torso"):
        prob = IKProblem(cesium, "hand_r", chain, solver=LM(max_iter=200), tol=1e-4)
        m = prob.model
        fr = m.frames(cesium.rest_pose()[m.dofs][None])
        joints = [*fr.r[0], fr.p[0, 0]]  # each DOF's origin, then the hand: the bones' length is fixed by the pose
        length = sum(float(np.linalg.norm(b - a)) for a, b in zip(joints[:-1], joints[1:], strict=True))
        assert np.linalg.norm(far - fr.r[0, m.base_link[0]]) > length + 1.0
        res = prob.solve(far)
        assert res.reason == "unreachable" and res.reachable is False
