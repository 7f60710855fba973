"""body_surface is built once per input, and an edited figure gets a new one (the cache keys what the surface reads)."""

from __future__ import annotations

import numpy as np

import animkit
from animkit.look.drawn import figure_mesh
from animkit.look.surface import body_surface

HUMANOID = "animkit/examples/humanoid.toml"


def test_the_same_figure_gets_the_same_surface() -> None:
    fig = animkit.load(HUMANOID).figure
    assert body_surface(fig) is body_surface(fig)


def test_an_edited_figure_gets_the_surface_it_draws() -> None:
    fig = animkit.load(HUMANOID).figure
    before = body_surface(fig)
    node = next(n for n in fig.nodes() if n.data is not None)
    node.T = node.T @ np.diag([2.0, 2.0, 2.0, 1.0])  # the shape drawn twice as large
    after = body_surface(fig)
    assert after is not before
    W = fig.world_batch(fig.rest_pose()[None])
    i = fig.node_names.index(node.name)
    fm = figure_mesh(fig)  # the oracle: the drawn mesh itself, placed by the world matrices
    want = fm.vertices[fm.owner == i] @ W[0, i, :3, :3].T + W[0, i, :3, 3]
    got = after.positions(W, [i])[0]
    assert np.allclose(np.sort(got, axis=0), np.sort(want, axis=0), atol=1e-12)
    assert not np.allclose(np.sort(before.positions(W, [i])[0], axis=0), np.sort(want, axis=0), atol=1e-6)
