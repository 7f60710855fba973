"""Back-face culling of closed solids: the oracle is the same scene drawn without culling (every face)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from animkit.look.drawn import closed_outward
from animkit.model.geometry import Box, Capsule, Sphere
from animkit.model.transforms import cross3
from animkit.render.camera import look_at
from animkit.render.raster import Surface, render_surfaces


def test_cross3_is_np_cross() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(50, 3)), rng.normal(size=(50, 3))
    assert np.array_equal(cross3(a, b), np.cross(a, b))
    assert np.array_equal(cross3(a, b[0]), np.cross(a, b[0]))


@pytest.mark.parametrize("shape", [Capsule(0.1, 0.5), Box((0.2, 0.3, 0.4)), Sphere(0.3)])
def test_closed_outward_on_shapes(shape: object) -> None:
    v, f = shape.triangles()  # type: ignore[attr-defined]
    assert closed_outward(v, f)
    assert not closed_outward(v, f[:, ::-1])  # inside out
    assert not closed_outward(v, f[1:])  # a hole


@settings(max_examples=15, deadline=None)
@given(st.floats(-3.0, 3.0), st.floats(-1.0, 1.0), st.floats(0.8, 3.0), st.floats(-3.0, 3.0))
def test_culling_draws_the_same_pixels(azimuth: float, height: float, dist: float, roll: float) -> None:
    """Two interpenetrating closed solids seen from outside: culling the faces turned away changes no pixel."""
    parts = []
    for shape, R, t in ((Capsule(0.1, 0.6), np.eye(3), np.zeros(3)),
                        (Box((0.3, 0.2, 0.25)), np.array([[np.cos(roll), -np.sin(roll), 0], [np.sin(roll),
                                                          np.cos(roll), 0], [0, 0, 1]]), np.array([0.05, 0, 0.3]))):
        v, f = shape.triangles()
        parts.append((v @ R.T + t, f))
    V = np.concatenate([parts[0][0], parts[1][0]])
    F = np.concatenate([parts[0][1], parts[1][1] + len(parts[0][0])]).astype(np.int64)
    colors = np.full((len(F), 3), 180, np.uint8)
    eye = np.array([dist * np.cos(azimuth), height, dist * np.sin(azimuth)]) + np.array([0, 0, 0.3])
    cam = look_at(eye, (0.0, 0.0, 0.3), "y", width=64, height=48)
    plain = render_surfaces(cam, [Surface(V, F, face_colors=colors)])
    culled = render_surfaces(cam, [Surface(V, F, face_colors=colors, closed=np.ones(len(F), bool))])
    assert np.array_equal(plain, culled)
