"""``animkit.look.surface.lowest_along`` (the foot lock's sole below its ankle): the C extension's ``lowest_along``
equals the NumPy path (the extension set aside) bit for bit, NaN included, over random points and directions; both
equal a per-frame loop of dot products (the independent oracle) to rounding."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from animkit import jit
from animkit.look.surface import lowest_along

NATIVE = jit.native_kernels()


def _numpy(points: np.ndarray, d: np.ndarray) -> np.ndarray:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(jit, "native_kernels", lambda: None)
        return lowest_along(points, d)


def _oracle(points: np.ndarray, d: np.ndarray) -> np.ndarray:
    return np.array([np.min([float(np.dot(p, x)) for p in P]) for P, x in zip(points, d, strict=True)])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 40), st.integers(1, 50), st.sampled_from(["plain", "scaled", "nan"]))
def test_lowest_along_native_is_numpy_bit_for_bit(seed: int, F: int, V: int, kind: str) -> None:
    rng = np.random.default_rng(seed)
    points = rng.normal(size=(F, V, 3)) * (rng.uniform(1e-3, 1e3) if kind == "scaled" else 1.0)
    d = rng.normal(size=(F, 3))
    if kind == "nan" and F:
        points[rng.integers(0, F), rng.integers(0, V), rng.integers(0, 3)] = np.nan
    got = lowest_along(points, d)
    want = _numpy(points, d)
    assert got.shape == (F,)
    np.testing.assert_array_equal(got, want)  # NaN where NaN, every other value to the bit
    ok = ~np.isnan(want)
    scale = max(1.0, float(np.nanmax(np.abs(points), initial=1.0)))
    oracle = _oracle(points, d)
    assert np.abs(want[ok] - oracle[ok]).max(initial=0.0) <= 1e-12 * scale * max(1.0, np.abs(d).max(initial=0))
    assert np.isnan(oracle[~ok]).all()  # NaN where a frame's points hold one, as the loop of dot products has it


def test_lowest_along_takes_strided_rows_and_known_answer() -> None:
    # a unit cube's corners: along +z the lowest is 0, along −z it is −1; along a row of a turn taken as a strided view
    corners = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=float)
    points = np.broadcast_to(corners, (2, 8, 3))
    R = np.stack([np.eye(3), -np.eye(3)])
    assert np.array_equal(lowest_along(points, R[:, 2]), [0.0, -1.0])
    assert np.array_equal(_numpy(points, R[:, 2]), [0.0, -1.0])


@pytest.mark.skipif(NATIVE is None or not hasattr(NATIVE, "lowest_along"),
                    reason="the C extension animkit._native is off (ANIMKIT_JIT=0) or not built")
def test_lowest_along_kernel_refuses_a_wrong_size() -> None:
    with pytest.raises(ValueError, match="lowest_along"):
        NATIVE.lowest_along(np.zeros((2, 3, 3)), np.zeros((2, 3)), np.empty(2), 2, 4)
