"""Interpolants against independent oracles (np.interp, scipy splines/rotations, finite differences)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from animkit.keyframes import interpolate as ip

SETTINGS = settings(deadline=None, max_examples=100, derandomize=True)


def _keys(draw: st.DrawFn, min_keys: int = 2, max_keys: int = 8) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(min_keys, max_keys))
    gaps = draw(st.lists(st.floats(0.01, 10.0), min_size=n, max_size=n))
    vals = draw(st.lists(st.floats(-1e3, 1e3), min_size=n, max_size=n))
    start = draw(st.floats(-10.0, 10.0))
    return start + np.cumsum(gaps), np.array(vals)


keys = st.composite(_keys)


def _unit_quaternions(rng: np.random.Generator, n: int) -> np.ndarray:
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


T = np.array([0.0, 0.5, 1.7, 2.0, 3.5])
V = np.array([1.0, -2.0, 0.3, 0.3, 4.0])


@pytest.mark.parametrize("fn", [ip.step, ip.linear, ip.cubic_hermite, ip.bezier])
def test_scalar_interpolants_hit_keys_bitwise_and_hold_outside(fn):
    assert np.array_equal(fn(T, V, T), V)
    out = fn(T, V, np.array([-5.0, T[0], T[-1], 99.0]))
    assert np.array_equal(out, [V[0], V[0], V[-1], V[-1]])


@pytest.mark.parametrize("fn", [ip.slerp, ip.squad])
def test_quaternion_interpolants_hit_keys_bitwise(fn):
    q = _unit_quaternions(np.random.default_rng(1), 5)
    assert np.array_equal(fn(T, q, T), q)
    assert np.array_equal(fn(T, q, np.array([-1.0, 10.0])), q[[0, -1]])


@given(keys(), st.lists(st.floats(-20, 80), min_size=1, max_size=30))
@SETTINGS
def test_linear_equals_np_interp(kv, ts):
    t, v = kv
    q = np.array(ts)
    scale = np.abs(v).max() + 1.0
    np.testing.assert_allclose(ip.linear(t, v, q), np.interp(q, t, v), rtol=0, atol=1e-12 * scale)


def test_step_holds_left_key():
    q = np.array([0.0, 0.49, 0.5, 1.0, 1.69, 1.7, 3.4, 3.5, 4.0])
    oracle = np.array([V[np.max(np.flatnonzero(T <= x), initial=0)] for x in q])
    assert np.array_equal(ip.step(T, V, q), oracle)


def test_catmull_rom_slopes_match_definition():
    m = ip.catmull_rom_slopes(T, V)
    assert m[0] == (V[1] - V[0]) / (T[1] - T[0])
    assert m[-1] == (V[-1] - V[-2]) / (T[-1] - T[-2])
    for k in range(1, len(T) - 1):
        assert m[k] == pytest.approx((V[k + 1] - V[k - 1]) / (T[k + 1] - T[k - 1]))


def test_cubic_hermite_matches_scipy_hermite_spline():
    from scipy.interpolate import CubicHermiteSpline

    m = ip.catmull_rom_slopes(T, V)
    q = np.linspace(T[0], T[-1], 301)
    np.testing.assert_allclose(ip.cubic_hermite(T, V, q), CubicHermiteSpline(T, V, m)(q), atol=1e-12)


@pytest.mark.parametrize("fn", [ip.cubic_hermite, ip.bezier])
def test_cubic_is_c1_at_interior_keys(fn):
    h = 1e-6
    for tk in T[1:-1]:
        left = (fn(T, V, np.array([tk]))[0] - fn(T, V, np.array([tk - h]))[0]) / h
        right = (fn(T, V, np.array([tk + h]))[0] - fn(T, V, np.array([tk]))[0]) / h
        assert left == pytest.approx(right, abs=1e-4 * (1 + abs(left)))


def test_cubic_one_sided_derivative_is_the_catmull_rom_slope():
    m = ip.catmull_rom_slopes(T, V)
    h = 1e-7
    d = (ip.cubic_hermite(T, V, np.array([T[2] + h]))[0] - V[2]) / h
    assert d == pytest.approx(m[2], rel=1e-4, abs=1e-5)


def test_bezier_explicit_slopes_are_the_end_derivatives():
    t = np.array([0.0, 2.0])
    v = np.array([1.0, 3.0])
    m_out = np.array([5.0, 0.0])
    m_in = np.array([0.0, -4.0])
    h = 1e-7
    d0 = (ip.bezier(t, v, np.array([h]), m_in, m_out)[0] - 1.0) / h
    d1 = (3.0 - ip.bezier(t, v, np.array([2.0 - h]), m_in, m_out)[0]) / h
    assert d0 == pytest.approx(5.0, rel=1e-5)
    assert d1 == pytest.approx(-4.0, rel=1e-5)


def test_bezier_needs_both_slopes_or_neither():
    from animkit.errors import ClipError

    with pytest.raises(ClipError):
        ip.bezier(T, V, T, in_slopes=np.zeros(5))


@given(keys(min_keys=2, max_keys=10), st.integers(0, 2**31))
@SETTINGS
def test_auto_clamped_bezier_never_leaves_its_two_keys(kv, seed):
    t, v = kv
    rng = np.random.default_rng(seed)
    m = ip.auto_clamped_tangents(t, v)
    for k in range(len(t) - 1):
        q = np.concatenate([t[k] + (t[k + 1] - t[k]) * rng.random(64), np.linspace(t[k], t[k + 1], 65)])
        out = ip.bezier(t, v, q, m, m)
        lo, hi = min(v[k], v[k + 1]), max(v[k], v[k + 1])
        tol = 8 * np.finfo(float).eps * max(abs(lo), abs(hi), 1e-300)
        assert np.all(out >= lo - tol) and np.all(out <= hi + tol), (k, out.min(), out.max(), lo, hi)


def test_auto_clamped_is_flat_at_extrema_and_monotone_inside():
    t = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    v = np.array([0.0, 2.0, 1.0, 1.0, 3.0])
    m = ip.auto_clamped_tangents(t, v)
    assert m[1] == 0.0 and m[2] == 0.0 and m[3] == 0.0  # peak, then flat neighbours
    # the steep ramp 0 → 10 → 10.1: clamped to 3 × the smaller secant
    m2 = ip.auto_clamped_tangents(np.array([0.0, 1.0, 2.0]), np.array([0.0, 10.0, 10.1]))
    assert m2[1] == pytest.approx(0.3)


@given(st.lists(st.floats(0.0, 1.0), min_size=2, max_size=50))
@SETTINGS
def test_easings_map_ends_exactly_and_are_monotone(us):
    u = np.sort(np.array(us))
    for name, e in ip.EASINGS.items():
        assert e(np.array([0.0]))[0] == 0.0 and e(np.array([1.0]))[0] == 1.0, name
        out = e(u)
        assert np.all(np.diff(out) >= 0), name
        assert np.all((out >= 0) & (out <= 1)), name


def test_easing_per_segment_remaps_u():
    t = np.array([0.0, 1.0, 2.0])
    v = np.array([0.0, 1.0, 0.0])
    q = np.array([0.25, 1.25])
    out = ip.linear(t, v, q, easing=("ease_in", "ease_out"))
    assert out == pytest.approx([0.25**2, 1 - 0.25 * 1.75])


def _rotation_angle_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return 2 * np.arccos(np.clip(np.abs(np.sum(a * b, axis=-1)), 0, 1))


@given(st.integers(0, 2**31))
@SETTINGS
def test_slerp_is_unit_short_way_and_sign_blind(seed):
    rng = np.random.default_rng(seed)
    q = _unit_quaternions(rng, 2)
    t = np.array([0.0, 1.0])
    u = rng.random(20)
    out = ip.slerp(t, q, u)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), 1.0, atol=1e-12)
    total = _rotation_angle_between(q[0], q[1])  # rotation angle of q0⁻¹ q1, the short way (≤ π)
    to0 = _rotation_angle_between(out, q[0])
    to1 = _rotation_angle_between(out, q[1])
    np.testing.assert_allclose(to0, u * total, atol=1e-7)
    np.testing.assert_allclose(to1, (1 - u) * total, atol=1e-7)
    mid = ip.slerp(t, q, np.array([0.5]))
    assert _rotation_angle_between(mid, q[0])[0] <= total / 2 + 1e-9
    flipped = ip.slerp(t, np.stack([q[0], -q[1]]), u)
    np.testing.assert_allclose(Rotation.from_quat(flipped, scalar_first=True).as_matrix(),
                               Rotation.from_quat(out, scalar_first=True).as_matrix(), atol=1e-9)


def test_slerp_matches_scipy_slerp():
    from scipy.spatial.transform import Slerp

    q = _unit_quaternions(np.random.default_rng(7), 5)
    q[1:] *= np.sign(np.sum(q[1:] * q[:-1], axis=-1))[:, None]  # scipy needs no sign fixes for this check
    s = Slerp(T, Rotation.from_quat(q, scalar_first=True))
    u = np.linspace(T[0], T[-1], 97)
    ours = Rotation.from_quat(ip.slerp(T, q, u), scalar_first=True)
    np.testing.assert_allclose((ours * s(u).inv()).magnitude(), 0.0, atol=1e-7)


def test_squad_passes_through_keys_continuously_and_stays_unit():
    q = _unit_quaternions(np.random.default_rng(3), 5)
    t = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    u = np.linspace(-0.5, 4.5, 501)
    out = ip.squad(t, q, u)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), 1.0, atol=1e-12)
    for k in range(5):
        near = ip.squad(t, q, np.array([t[k] - 1e-7, t[k] + 1e-7]))
        assert np.all(_rotation_angle_between(near, q[k]) < 1e-5)


def test_squad_tangent_continuity_at_uniform_interior_keys():
    q = _unit_quaternions(np.random.default_rng(5), 4)
    t = np.arange(4.0)
    h = 1e-5
    for k in (1, 2):
        a, b, c = ip.squad(t, q, np.array([t[k] - h, t[k], t[k] + h]))
        b = b * np.sign(np.dot(a, b))
        c = c * np.sign(np.dot(b, c))
        np.testing.assert_allclose((b - a) / h, (c - b) / h, atol=1e-3)


def test_segment_index_and_fraction():
    k = ip.segment_index(T, np.array([-1.0, 0.0, 0.5, 1.0, 3.5, 9.0]))
    assert list(k) == [0, 0, 1, 1, 3, 3]
    u = ip.segment_fraction(T, np.array([-1.0, 0.25, 3.5]), ip.segment_index(T, np.array([-1.0, 0.25, 3.5])))
    assert list(u) == [0.0, 0.5, 1.0]


def test_vector_values_interpolate_columnwise():
    vv = np.stack([V, 2 * V, -V], axis=1)
    q = np.linspace(-1, 4, 41)
    for fn in (ip.step, ip.linear, ip.cubic_hermite, ip.bezier):
        out = fn(T, vv, q)
        for j in range(3):
            np.testing.assert_allclose(out[:, j], fn(T, vv[:, j], q), atol=1e-12)
