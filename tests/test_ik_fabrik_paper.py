"""FABRIK as published (Aristidou & Lasenby 2011): one iteration on unconstrained chains and trees equals the
paper's position passes, written here independently of animkit (the oracle), to 1e-9."""

from __future__ import annotations

import numpy as np
import pytest

from animkit.ik import FABRIK, IKProblem
from animkit.ik.fabrik import fabrik_iteration
from animkit.model.figure import Figure
from animkit.model.joints import ball, hinge
from animkit.model.transforms import swing_twist_from_matrix


def _paper(points: list[np.ndarray], parent: list[int], targets: dict[int, np.ndarray]) -> list[np.ndarray]:
    """The paper's passes on joint positions: backward (each end effector on its target; a joint placed at distance
    d from its child's new position, toward its own old position; a sub-base at the centroid of its branches'
    placements), then forward from the fixed root (each child at distance d from its parent's new position, toward
    its own backward position)."""
    n = len(points)
    kids = [[c for c in range(n) if parent[c] == i] for i in range(n)]
    d = [0.0 if parent[i] < 0 else float(np.linalg.norm(points[i] - points[parent[i]])) for i in range(n)]

    def toward(a, b, length):
        v = b - a
        nv = np.linalg.norm(v)
        return a if nv == 0 else a + length * v / nv

    back: list[np.ndarray] = [p.copy() for p in points]
    for i in reversed(range(n)):  # children after parents in this numbering
        if i in targets:
            back[i] = targets[i]
        elif kids[i] and parent[i] >= 0:
            back[i] = np.mean([toward(back[c], points[i], d[c]) for c in kids[i]], axis=0)
    fwd: list[np.ndarray] = [p.copy() for p in points]
    for i in range(n):
        if parent[i] >= 0:
            fwd[i] = toward(fwd[parent[i]], back[i], d[i])
    return fwd


def _chain() -> tuple[Figure, list[str]]:
    fig = Figure("base")
    fig.add("a", "base", joint=ball("j0"))
    fig.add("b", "a", offset=(0, 0.9, 0), joint=ball("j1"))
    fig.add("c", "b", offset=(0, 0.7, 0.1), joint=ball("j2"))
    fig.add("tip", "c", offset=(0.1, 0.5, 0))
    return fig, ["a", "b", "c", "tip"]


def _tree() -> tuple[Figure, list[str]]:
    """A spine (two ball joints) to a sub-base s where two branches start, each on its own ball joint at s."""
    fig = Figure("base")
    fig.add("a", "base", joint=ball("j0"))
    fig.add("s", "a", offset=(0, 0.8, 0), joint=ball("js"))
    fig.add("l", "s", joint=ball("jl"))
    fig.add("r", "s", joint=ball("jr"))
    fig.add("l2", "l", offset=(-0.5, 0.2, 0), joint=ball("jl2"))
    fig.add("r2", "r", offset=(0.5, 0.2, 0), joint=ball("jr2"))
    fig.add("tip_l", "l2", offset=(-0.4, 0.0, 0.1))
    fig.add("tip_r", "r2", offset=(0.4, 0.0, 0.1))
    return fig, ["a", "s", "l", "r", "l2", "r2", "tip_l", "tip_r"]


@pytest.mark.parametrize("seed", range(5))
def test_one_iteration_on_a_free_chain_is_the_papers_passes(seed):
    fig, names = _chain()
    rng = np.random.default_rng(seed)
    pose = rng.uniform(-0.8, 0.8, fig.dof_count)
    target = rng.uniform(-1.2, 1.2, 3) + [0, 1, 0]
    model = IKProblem(fig, "tip", solver=FABRIK()).model
    it = fabrik_iteration(model, pose[model.dofs][None], target[None, None])
    W = fig.world(pose)
    expect = _paper([W[n][:3, 3] for n in names], [-1, 0, 1, 2], {3: target})
    got = np.vstack([it.groups[0], it.effectors[0]])
    np.testing.assert_allclose(got, np.array(expect), atol=1e-9)
    full = pose.copy()
    full[model.dofs] = it.q[0]  # the joint rotations from the new positions: FK puts the joints there
    np.testing.assert_allclose([fig.world(full)[n][:3, 3] for n in names], expect, atol=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_one_iteration_on_a_tree_with_a_sub_base_is_the_papers_passes(seed):
    fig, names = _tree()
    rng = np.random.default_rng(seed)
    pose = rng.uniform(-0.6, 0.6, fig.dof_count)
    tl, tr = rng.uniform(-1, 1, 3) + [-0.5, 1, 0], rng.uniform(-1, 1, 3) + [0.5, 1, 0]
    model = IKProblem(fig, ["tip_l", "tip_r"], solver=FABRIK()).model
    it = fabrik_iteration(model, pose[model.dofs][None], np.array([[tl, tr]]))
    W = fig.world(pose)
    expect = _paper([W[n][:3, 3] for n in names], [-1, 0, 1, 1, 2, 3, 4, 5], {6: tl, 7: tr})
    full = pose.copy()
    full[model.dofs] = it.q[0]
    np.testing.assert_allclose([fig.world(full)[n][:3, 3] for n in names], expect, atol=1e-9)


# --- the default solver is the published one ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_the_default_fabrik_solve_takes_the_papers_passes(seed):
    """``FABRIK()`` with one iteration lands on the paper's forward-pass positions where that step brings the tip
    nearer than the subtree fit would (seeds 0–3); elsewhere (seed 4) it never moves the tip away."""
    fig, names = _chain()
    rng = np.random.default_rng(seed)
    pose = rng.uniform(-0.8, 0.8, fig.dof_count)
    target = rng.uniform(-1.2, 1.2, 3) + [0, 1, 0]
    W = fig.world(pose)
    expect = _paper([W[n][:3, 3] for n in names], [-1, 0, 1, 2], {3: target})
    problem = IKProblem(fig, "tip", solver=FABRIK(max_iter=1))
    model = problem.model
    sub = fabrik_iteration(model, pose[model.dofs][None], target[None, None], subtree=True).effectors[0, 0]
    paper_better = np.linalg.norm(expect[-1] - target) < np.linalg.norm(sub - target)
    assert paper_better == (seed != 4)
    r = problem.solve(target, pose)
    assert FABRIK().published and r.iterations == 1
    if paper_better:
        np.testing.assert_allclose([fig.world(r.pose)[n][:3, 3] for n in names], expect, atol=1e-9)
    else:  # the paper's step moves the tip away here: halved (or replaced by the subtree fit), it never does
        assert np.linalg.norm(fig.world(r.pose)["tip"][:3, 3] - target) <= np.linalg.norm(W["tip"][:3, 3] - target)


@pytest.mark.parametrize("seed", range(5))
def test_each_bone_turns_the_shortest_way_no_spin_about_itself(seed):
    """On a free ball chain every joint's own turn in one iteration (the bone's new world rotation against where its
    parent's turn carried it) is a pure swing: written as swing·twist about the carried bone direction
    (``swing_twist_from_matrix``), its twist is 0."""
    fig, names = _chain()
    rng = np.random.default_rng(seed)
    pose = rng.uniform(-0.8, 0.8, fig.dof_count)
    target = rng.uniform(-1.2, 1.2, 3) + [0, 1, 0]
    model = IKProblem(fig, "tip", solver=FABRIK()).model
    it = fabrik_iteration(model, pose[model.dofs][None], target[None, None])
    full = pose.copy()
    full[model.dofs] = it.q[0]
    W0, W1 = fig.world(pose), fig.world(full)
    for parent, bone, child in zip(["base", *names[:-2]], names[:-1], names[1:], strict=True):
        carry = W1[parent][:3, :3] @ W0[parent][:3, :3].T  # the parent's turn (the base: none)
        d = carry @ (W0[child][:3, 3] - W0[bone][:3, 3])
        own = W1[bone][:3, :3] @ (carry @ W0[bone][:3, :3]).T  # the joint's own turn, in the world
        _, tau = swing_twist_from_matrix(own, d)
        assert abs(float(tau)) < 1e-9
        assert np.degrees(np.arccos(np.clip(np.trace(own) / 2 - 0.5, -1, 1))) > 0.1  # it did turn


def _hinge_chain(rng: np.random.Generator, n: int) -> Figure:
    fig = Figure("base")
    parent = "base"
    for i in range(n):
        ax = rng.normal(size=3)
        fig.add(f"n{i}", parent, offset=rng.uniform(-0.5, 0.5, 3) if i else (0, 0, 0),
                joint=hinge(f"h{i}", ax / np.linalg.norm(ax), limits=(-2.5, 2.5)))
        parent = f"n{i}"
    fig.add("tip", parent, offset=rng.uniform(-0.5, 0.5, 3))
    return fig


def test_fabrik_reaches_reachable_targets_on_random_hinge_chains():
    """Chains of 3–5 hinges with random axes, offsets and limits; each target the tip's FK at a pose inside the
    limits (so reachable). The answer's FK meets it (a local method: a few random restarts)."""
    rng = np.random.default_rng(0)
    reached = total = 0
    for _ in range(8):
        n = int(rng.integers(3, 6))
        fig = _hinge_chain(rng, n)
        for _ in range(2):
            target = fig.world(rng.uniform(-2.4, 2.4, n))["tip"][:3, 3]
            r = IKProblem(fig, "tip", solver=FABRIK(), tol=1e-4).solve(target, fig.rest_pose(), restarts=5)
            err = np.linalg.norm(fig.world(r.pose)["tip"][:3, 3] - target)
            assert err == pytest.approx(r.position_error, abs=1e-9)
            lim = fig.dof_limits()
            assert np.all(r.pose >= lim[:, 0] - 1e-12) and np.all(r.pose <= lim[:, 1] + 1e-12)
            reached += err <= 1e-4
            total += 1
    assert reached >= 13, f"{reached} of {total}"
