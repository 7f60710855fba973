"""animkit.ik.poly_trig against NumPy's sin and cos (the C library's, correctly rounded or within an ulp) on 10⁶
points: random arguments over the documented range, every multiple of π/4 up to ±3141 and its neighbours (the
reduction's hard cases, where sin or cos is tiny), tiny and signed zero arguments; the wrap against asin(sin x)."""

from __future__ import annotations

import math

import numpy as np

from animkit.ik.poly_trig import sincos, sincos_array, wrap_sincos, wrap_sincos_array


def _ulps(got, want):
    return np.abs(got - want) / np.spacing(np.abs(want))


def _points():
    rng = np.random.default_rng(0)
    edges = np.arange(-4000, 4001) * (math.pi / 4)
    x = np.r_[rng.uniform(-4.0, 4.0, 400_000), rng.uniform(-2e5, 2e5, 200_000), edges, np.nextafter(edges, np.inf),
              np.nextafter(edges, -np.inf), rng.uniform(-1e-8, 1e-8, 50_000), 0.0, -0.0, 5e-324, 1e-300,
              2.0**19 * math.pi / 2]
    return np.r_[x, rng.uniform(-8.2e5, 8.2e5, 1_000_000 - len(x))]


def test_sin_cos_within_two_ulp_of_numpy_on_a_million_points():
    x = _points()
    s, c = sincos_array(x)
    assert _ulps(s, np.sin(x)).max() <= 2.0
    assert _ulps(c, np.cos(x)).max() <= 2.0
    a, b = sincos_array(np.array([0.5]))
    assert tuple(sincos(0.5)) == (a[0], b[0])  # the scalar function the lanes call is the array's


def test_nan_and_infinity_give_nan():
    s, c = sincos_array(np.array([np.nan, np.inf, -np.inf]))
    assert np.isnan(s).all() and np.isnan(c).all()


def test_wrap_is_asin_of_sin_with_its_sine_and_nonnegative_cosine():
    rng = np.random.default_rng(1)
    x = np.r_[rng.uniform(-40.0, 40.0, 200_000), np.arange(-50, 51) * (math.pi / 2)]
    p, s, c = wrap_sincos_array(x)
    assert np.all(np.abs(p) <= math.pi / 2)
    assert _ulps(s, np.sin(x)).max() <= 2.0
    np.testing.assert_allclose(c, np.abs(np.cos(x)), rtol=0, atol=2.3e-16)
    # φ against asin(sin x), which is itself ill-conditioned near ±π/2 (asin's slope): compare sines and cosines
    # of φ there, and φ itself away from ±π/2
    away = np.abs(np.sin(x)) < 0.99
    np.testing.assert_allclose(p[away], np.arcsin(np.sin(x[away])), rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.sin(p), np.sin(x), rtol=0, atol=4e-16)
    np.testing.assert_allclose(np.cos(p), c, rtol=0, atol=4e-16)
    assert wrap_sincos(3.0)[0] == wrap_sincos_array(np.array([3.0]))[0][0]
