"""FABRIK's compiled solve (animkit.ik.fabrik_jit) against its NumPy reference (animkit.ik.fabrik and the shared
loop): one step to 1e-9 on the humanoid's arm, a tree with a sub-base (both hands on the spine), free ball chains and
random hinge chains; whole solves with the same iterations, reasons and poses; Horn's turn against Kabsch's SVD."""

from __future__ import annotations

import numpy as np
import pytest

import animkit
from animkit import jit
from animkit.ik import FABRIK, IKProblem
from animkit.ik.fabrik import compiled_chain, fabrik_step
from animkit.ik.fabrik_jit import best_turn, step_one
from animkit.model.figure import Figure
from animkit.model.joints import ball, hinge

from .ik_helpers import SCENES, arm_targets

pytestmark = pytest.mark.skipif(not jit.enabled(), reason="numba is not importable (or ANIMKIT_JIT=0)")


def _hinges(rng: np.random.Generator, n: int) -> Figure:
    fig = Figure("base")
    parent = "base"
    for i in range(n):
        ax = rng.normal(size=3)
        fig.add(f"n{i}", parent, offset=rng.uniform(-0.5, 0.5, 3) if i else (0, 0, 0),
                joint=hinge(f"h{i}", ax / np.linalg.norm(ax), limits=(-2.5, 2.5)))
        parent = f"n{i}"
    fig.add("tip", parent, offset=rng.uniform(-0.5, 0.5, 3))
    return fig


def _balls() -> Figure:
    fig = Figure("base")
    parent = "base"
    for i, off in enumerate([(0, 0, 0), (0, 0.6, 0), (0.1, 0.5, 0)]):
        fig.add(f"b{i}", parent, offset=off, joint=ball(f"j{i}"))
        parent = f"b{i}"
    fig.add("tip", parent, offset=(0, 0.4, 0.1))
    return fig


def _problems() -> list[IKProblem]:
    hum = animkit.load(SCENES / "humanoid.toml").figure
    rng = np.random.default_rng(7)
    return [IKProblem(hum, "hand_r", "arm", solver=FABRIK()),
            IKProblem(hum, ["hand_r", "hand_l"], "hips-up", solver=FABRIK()),
            IKProblem(_balls(), "tip", solver=FABRIK()),
            *[IKProblem(_hinges(rng, n), "tip", solver=FABRIK()) for n in (3, 5)]]


@pytest.mark.parametrize("published", [True, False])
def test_one_compiled_step_is_the_numpy_step(published):
    rng = np.random.default_rng(1)
    for problem in _problems():
        model = problem.model
        ch = compiled_chain(model)
        assert ch is not None
        for _ in range(6):
            q = rng.uniform(np.maximum(model.lower, -2.0), np.minimum(model.upper, 2.0))
            P = model.frames(rng.uniform(np.maximum(model.lower, -2.0), np.minimum(model.upper, 2.0))[None]).p[0]
            P = P + rng.normal(scale=0.05, size=P.shape)
            ref = fabrik_step(model, q[None], model.frames(q[None]), P[None], published=published)[0]
            np.testing.assert_allclose(step_one(ch, q, P, published), ref, atol=1e-9, rtol=0)



@pytest.mark.parametrize("published", [True, False])
def test_a_step_with_the_wrist_at_its_limit_is_the_numpy_step(published):
    """The constrained backward pass at a universal joint's limits (:func:`animkit.ik.fabrik.limited_turn`), compiled
    and NumPy: the humanoid's arm with the wrist at each corner of its limits and targets whose free direction from
    the wrist it cannot give the hand (the backward pass turns it; the NumPy oracle says so on every case), one step
    equal to 1e-9."""
    from animkit.ik.fabrik import chain_tree, limited_turn

    hum = animkit.load(SCENES / "humanoid.toml")
    model = IKProblem(hum.figure, "hand_r", "arm", solver=FABRIK()).model
    ch = compiled_chain(model)
    start, targets = arm_targets(hum)
    hits = 0
    for sx, sy in ((0, 0), (0, 1), (1, 0), (1, 1)):
        q = start[model.dofs].copy()
        q[-2:] = [(model.lower, model.upper)[sx][-2], (model.lower, model.upper)[sy][-1]]
        fr = model.frames(q[None])
        for t in targets[:4]:
            bit = limited_turn(model, chain_tree(model), fr, q[None], 2, fr.p[:, 0], t[None])[1]
            if not bit[0]:
                continue
            ref = fabrik_step(model, q[None], fr, t[None, None], published=published)[0]
            np.testing.assert_allclose(step_one(ch, q, t[None], published), ref, atol=1e-9, rtol=0)
            hits += 1
    assert hits >= 4, hits

def test_whole_solves_match_the_numpy_loop(monkeypatch):
    rng = np.random.default_rng(2)
    for problem in _problems()[:3]:
        model = problem.model
        fig = problem.figure
        start = fig.rest_pose()
        targets = []
        for _ in range(4):
            q = start.copy()
            q[model.dofs] = rng.uniform(np.maximum(model.lower, -2.0), np.minimum(model.upper, 2.0))
            W = fig.world(q)
            targets.append(np.array([W[e][:3, 3] for e in model.effectors]))
        fast = [problem.solve(t if len(t) > 1 else t[0], start) for t in targets]
        monkeypatch.setattr(jit, "ENABLED", False)
        slow = [problem.solve(t if len(t) > 1 else t[0], start) for t in targets]
        monkeypatch.setattr(jit, "ENABLED", True)
        for a, b in zip(fast, slow, strict=True):
            assert (a.iterations, a.reason, a.converged) == (b.iterations, b.reason, b.converged)
            # from the rest pose (both arms straight: each shoulder's subtree points nearly on one line, the twist of
            # their best turn set by its ε tr R term) Horn's quaternion and the SVD differ by up to 5e-8 in a subtree
            # fit, which the tree's solve carries to 1.5e-7 (1e-7 before the wrist's limits entered the backward pass)
            np.testing.assert_allclose(a.pose, b.pose, atol=1e-6)
            np.testing.assert_allclose(a.errors, b.errors, atol=1e-7)


def test_the_packed_single_solve_is_the_numpy_loop(monkeypatch):
    """IKProblem.solve(t) on a problem posed at its start runs FABRIK's packed compiled call
    (fabrik_loop_jit.solve_packed: the chain packed once, one call a solve); its answers are the NumPy loop's (the same
    iterations, reasons, poses and error histories), and so are those of the checked path (the start given)."""
    from animkit.ik import fabrik_loop_jit

    hum = animkit.load(SCENES / "humanoid.toml").figure
    rng = np.random.default_rng(3)
    start = hum.rest_pose()
    for published in (True, False):
        posed = IKProblem(hum, "hand_r", "arm", solver=FABRIK(published=published), tol=1e-4, pose=start)
        model = posed.model
        targets = []
        for _ in range(5):
            q = start.copy()
            q[model.dofs] = rng.uniform(model.lower + 0.2, model.upper - 0.2)
            targets.append(hum.world(q)["hand_r"][:3, 3])
        packed = [posed.solve(t) for t in targets]
        assert isinstance(fabrik_loop_jit.solve_packed, jit.Kernel) and fabrik_loop_jit.solve_packed.ready
        checked = [posed.solve(t, start) for t in targets]
        monkeypatch.setattr(jit, "ENABLED", False)
        slow = [posed.solve(t) for t in targets]
        monkeypatch.setattr(jit, "ENABLED", True)
        assert sum(r.converged for r in packed) >= 4
        for a, b, c in zip(packed, checked, slow, strict=True):
            assert (a.iterations, a.reason, a.converged, a.reachable) == (b.iterations, b.reason, b.converged,
                                                                          b.reachable)
            np.testing.assert_array_equal(a.pose, b.pose)  # the same kernel: the same bits
            np.testing.assert_array_equal(a.errors, b.errors)
            assert (a.iterations, a.reason, a.converged) == (c.iterations, c.reason, c.converged)
            # the kernel against NumPy over a whole solve: each step agrees to 1e-9 (above); over up to 47 steps the
            # differences (Horn's quaternion against the SVD) grow to 2e-8 (the paper's passes) and 3e-7 (the subtree
            # fit), the same to every digit as with the kernel before the packed path
            np.testing.assert_allclose(a.pose, c.pose, atol=1e-7 if published else 1e-6)
            np.testing.assert_allclose(a.errors, c.errors, atol=1e-7 if published else 1e-6)


def test_horns_turn_is_kabschs():
    """The best turn of several points (Horn's quaternion, compiled) against the SVD (Kabsch) and a known rotation."""
    from scipy.spatial.transform import Rotation

    from animkit.ik.fabrik import best_turn as kabsch

    rng = np.random.default_rng(0)
    for k in (1, 2, 3, 5):
        for _ in range(50):
            U, V = rng.normal(size=(k, 3)), rng.normal(size=(k, 3))
            np.testing.assert_allclose(best_turn(U, V, k), kabsch(U[None], V[None])[0], atol=1e-12)
    R = Rotation.random(random_state=1).as_matrix()
    U = rng.normal(size=(4, 3))
    np.testing.assert_allclose(best_turn(U, U @ R.T, 4), R, atol=1e-8)  # ε tr R leans 1e-9 toward I
