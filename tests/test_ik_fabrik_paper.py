"""FABRIK as published (Aristidou & Lasenby 2011): one iteration on unconstrained chains and trees equals the
paper's position passes, written here independently of animkit (the oracle), to 1e-9."""

from __future__ import annotations

import numpy as np
import pytest

from animkit.figure import Figure
from animkit.ik import FABRIK, IKProblem
from animkit.ik.fabrik import fabrik_iteration
from animkit.joints import ball


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
