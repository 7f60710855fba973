"""Sine and cosine without the C library, for the lanes of :mod:`.lm_batch_jit`: straight-line code that LLVM can
vectorise (a library call per lane cannot be).

    x = k·π/2 + r,  k = ⌊2x/π + ½⌋,  r = (x − k·P₁) − k·P₂ − k·P₃ − k·P₄   (Cody–Waite, ΣP ≈ π/2 to 2⁻¹⁵⁰)
    sin r ≈ r + r³ (S₁ + r² S(r²)),  cos r ≈ 1 − r²/2 + r⁴ C(r²)          (|r| ≤ π/4, fdlibm's minimax kernels)
    (sin x, cos x) = ±(sin r, cos r) or ±(cos r, −sin r) by k mod 4

P₁, P₂, P₃ hold 33 bits each (fdlibm's ``pio2_1``, ``pio2_2``, ``pio2_3``), so k·P₁, k·P₂, k·P₃ are exact for
|k| < 2²⁰, x − k·P₁ is exact (Sterbenz), and the subtraction of k·P₂ is carried with its rounding error (two-sum):
r is within about half an ulp of x − k·π/2 even next to a multiple of π/2, where sin or cos is tiny (without the
two-sum those came out thousands of ulp off, though only ≈ 1e-29 absolute); the polynomials (fdlibm's
__kernel_sin and __kernel_cos, < 1 ulp on |r| ≤ π/4, r's tail dropped) add under one ulp more.
**Error bound: ≤ 2 ulp against the correctly rounded value for |x| ≤ 2¹⁹·π/2 ≈ 8.2·10⁵** (measured on 10⁶
points, edges at multiples of π/4 included, by tests/test_ik_poly_trig.py: the largest difference from NumPy's is
1 ulp); beyond that range the result is not claimed (joint angles never get there; a lane that diverges that far
is rejected by the residual anyway). NaN and ±inf give NaN, as the library does; sin(−0) gives +0 (the library:
−0).

:func:`wrap_sincos` is the same reduction used for the lanes' φ, which must stay in [−π/2, π/2]: it gives
asin(sin φ) (φ reflected into [−π/2, π/2]), its sine (= sin φ) and cosine (≥ 0), without asin or a second reduction.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from animkit.jit import kernel

__all__ = ["sincos", "wrap_sincos", "sincos_array", "wrap_sincos_array"]

Array = NDArray[np.float64]

_TWO_OVER_PI = 6.36619772367581382433e-01
_P1 = 1.57079632673412561417e+00  # the first 33 bits of π/2
_P2 = 6.07710050630396597660e-11  # the next 33 bits
_P3 = 2.02226624871116645580e-21  # the next 33 bits
_P4 = 8.47842766036889956997e-32  # the rest (to ≈ 1e-47)
_S1, _S2, _S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04
_S4, _S5, _S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
_C1, _C2, _C3 = 4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05
_C4, _C5, _C6 = -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11


def _reduce(x: float) -> tuple[float, float, float, float, bool, float]:
    """x = k·π/2 + r: (r, sin r, cos r, k, k odd, (−1)^⌊k/2⌋)."""
    k = np.floor(x * _TWO_OVER_PI + 0.5)
    t = x - k * _P1  # exact
    w = k * _P2  # exact
    r1 = t - w  # with its rounding error e1 (Knuth's two-sum): r = t − w − k·P₃ − k·P₄ to ≈ 0.5 ulp even where
    bb = r1 - t  # t − w cancels (x near a multiple of π/2)
    e1 = (t - (r1 - bb)) - (w + bb)
    r = r1 + (e1 - k * _P3 - k * _P4)
    z = r * r
    v = z * r
    sr = r + v * (_S1 + z * (_S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6)))))
    hz = 0.5 * z
    w = 1.0 - hz
    cr = w + (((1.0 - w) - hz) + z * z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * _C6))))))
    h = 0.5 * k
    fh = np.floor(h)
    odd = h != fh
    sgn = -1.0 if 0.5 * fh != np.floor(0.5 * fh) else 1.0
    return r, sr, cr, k, odd, sgn


_reduce = kernel(_reduce) or _reduce


def sincos(x: float) -> tuple[float, float]:
    """(sin x, cos x) by the reduction and polynomials above (≤ 2 ulp for |x| ≤ 2¹⁹·π/2)."""
    r, sr, cr, k, odd, sgn = _reduce(x)
    a = cr if odd else sr
    b = -sr if odd else cr
    return sgn * a, sgn * b


sincos = kernel(sincos, calls=(_reduce,)) or sincos


def wrap_sincos(x: float) -> tuple[float, float, float]:
    """(φ, sin φ, cos φ) for φ = asin(sin x), x reflected into [−π/2, π/2] (sin φ = sin x, cos φ = |cos x|):
    φ = ±r for even k, ±(π/2 − |r|) for odd k."""
    r, sr, cr, k, odd, sgn = _reduce(x)
    a = cr if odd else sr
    ar = -r if r < 0.0 else r  # |r| as a select: abs() kept LLVM from vectorising the lanes' calls
    asr = -sr if sr < 0.0 else sr
    c = asr if odd else cr
    p = ((_P1 - ar) + _P2) if odd else r
    return sgn * p, sgn * a, c


wrap_sincos = kernel(wrap_sincos, calls=(_reduce,)) or wrap_sincos


def _sincos_array(x: Array, s: Array, c: Array) -> None:
    for i in range(x.shape[0]):
        s[i], c[i] = sincos(x[i])


_sincos_array = kernel(_sincos_array, calls=(sincos,)) or _sincos_array


def _wrap_array(x: Array, p: Array, s: Array, c: Array) -> None:
    for i in range(x.shape[0]):
        p[i], s[i], c[i] = wrap_sincos(x[i])


_wrap_array = kernel(_wrap_array, calls=(wrap_sincos,)) or _wrap_array


def sincos_array(x: Array) -> tuple[Array, Array]:
    """:func:`sincos` over a 1-D array (compiled when numba is on): (sin x, cos x)."""
    x = np.ascontiguousarray(x, dtype=float)
    s, c = np.empty_like(x), np.empty_like(x)
    _sincos_array(x, s, c)
    return s, c


def wrap_sincos_array(x: Array) -> tuple[Array, Array, Array]:
    """:func:`wrap_sincos` over a 1-D array: (φ, sin φ, cos φ)."""
    x = np.ascontiguousarray(x, dtype=float)
    p, s, c = np.empty_like(x), np.empty_like(x), np.empty_like(x)
    _wrap_array(x, p, s, c)
    return p, s, c
