"""``animkit.look.surface.lowest_about`` (a foot's sole below its ankle, the points point-major as a skinning table's
product leaves them): the C extension's ``lowest_about`` equals the NumPy path (the extension set aside) bit for bit,
NaN included, and both equal ``lowest_along`` of the points less their origin in the (F, V, 3) layout (the path the
foot lock took before) bit for bit; a per-frame loop of dot products is the independent oracle (to rounding); and
``BodySurface.points`` holds the same values as ``BodySurface.positions``, bit for bit, on a skinned character."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import animkit
from animkit import jit
from animkit.look.surface import body_surface, descendants, lowest_about, lowest_along
from animkit.motion import legs_of

NATIVE = jit.native_kernels()
DATA = Path(__file__).parent / "data"


def _numpy(points: np.ndarray, origin: np.ndarray, d: np.ndarray) -> np.ndarray:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(jit, "native_kernels", lambda: None)
        return lowest_about(points, origin, d)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 40), st.integers(1, 50), st.sampled_from(["plain", "scaled", "nan"]))
def test_lowest_about_native_is_numpy_and_lowest_along_bit_for_bit(seed: int, F: int, V: int, kind: str) -> None:
    rng = np.random.default_rng(seed)
    s = rng.uniform(1e-3, 1e3) if kind == "scaled" else 1.0
    points = rng.normal(size=(V, F, 3)) * s + rng.normal(size=3) * 10 * s  # far from the origin: the differences round
    origin = rng.normal(size=(F, 3)) * s
    d = rng.normal(size=(F, 3))
    if kind == "nan" and F:
        points[rng.integers(0, V), rng.integers(0, F), rng.integers(0, 3)] = np.nan
    got = lowest_about(points, origin, d)
    assert got.shape == (F,)
    np.testing.assert_array_equal(got, _numpy(points, origin, d))  # NaN where NaN, every other value to the bit
    rel = points.transpose(1, 0, 2) - origin[:, None, :]  # the (F, V, 3) differences, then along d
    np.testing.assert_array_equal(got, lowest_along(rel, d))
    oracle = np.array([np.min([float(np.dot(p - o, x)) for p in points[:, f]]) for f, (o, x) in
                       enumerate(zip(origin, d, strict=True))]) if F else np.zeros(0)
    ok = ~np.isnan(got)
    assert np.isnan(oracle[~ok]).all()
    scale = max(1.0, float(np.nanmax(np.abs(points), initial=1.0)))
    assert np.abs(got[ok] - oracle[ok]).max(initial=0.0) <= 1e-12 * scale * max(1.0, np.abs(d).max(initial=0))


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(250, 800), st.integers(1, 12), st.booleans())
def test_lowest_about_many_frames_bit_for_bit(seed: int, F: int, V: int, nan: bool) -> None:
    # more frames than the kernel takes at a time (256): every block and the last, short one
    rng = np.random.default_rng(seed)
    points, origin, d = rng.normal(size=(V, F, 3)) * 3.0, rng.normal(size=(F, 3)), rng.normal(size=(F, 3))
    if nan:
        points[rng.integers(0, V), rng.integers(0, F), rng.integers(0, 3)] = np.nan
    got = lowest_about(points, origin, d)
    np.testing.assert_array_equal(got, _numpy(points, origin, d))
    np.testing.assert_array_equal(got, lowest_along(points.transpose(1, 0, 2) - origin[:, None, :], d))


def test_lowest_about_known_answer() -> None:
    # a unit cube's corners about its centre: along +z the lowest is −0.5, along −z also −0.5, along x + z −1
    corners = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=float)
    points = np.ascontiguousarray(np.broadcast_to(corners[:, None, :], (8, 3, 3)))
    origin = np.full((3, 3), 0.5)
    d = np.array([[0, 0, 1.0], [0, 0, -1.0], [1.0, 0, 1.0]])
    assert np.array_equal(lowest_about(points, origin, d), [-0.5, -0.5, -1.0])
    assert np.array_equal(_numpy(points, origin, d), [-0.5, -0.5, -1.0])


@pytest.mark.skipif(NATIVE is None or not hasattr(NATIVE, "lowest_about"),
                    reason="the C extension animkit._native is off (ANIMKIT_JIT=0) or not built")
def test_lowest_about_kernel_refuses_a_wrong_size() -> None:
    with pytest.raises(ValueError, match="lowest_about"):
        NATIVE.lowest_about(np.zeros((2, 3, 3)), np.zeros((3, 3)), np.zeros((3, 3)), np.empty(3), 3, 4)


def test_points_are_positions_point_major_bit_for_bit() -> None:
    scene = animkit.load(DATA / "CesiumMan.glb")
    fig = scene.figure
    clip = scene.clip()
    W = fig.world_batch(clip.sample(clip.frame_times()[:40]))
    surface = body_surface(fig, scene.meshes)
    for leg in legs_of(fig):
        nodes = descendants(fig, leg.ankle)
        pts = surface.points(W, nodes)
        assert pts.flags.c_contiguous and pts.shape[0] > 0
        np.testing.assert_array_equal(pts.transpose(1, 0, 2), surface.positions(W, nodes))
