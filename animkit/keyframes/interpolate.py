"""Interpolants: pure, vectorised functions on key arrays.

Shapes: key times ``(K,)`` strictly increasing; values ``(K,)``, ``(K, C)`` (any trailing shape) or,
for the quaternion interpolants, ``(K, 4)`` unit quaternions ``(w, x, y, z)``; query times ``t`` of
shape ``(F,)``. Results have shape ``(F,) + values.shape[1:]``. These functions trust their inputs:
validation happens once, where keys enter (:mod:`animkit.keyframes.track`).

Segment ``k`` runs from key ``k`` to key ``k+1``; inside it ``u = (t − t_k) / (t_{k+1} − t_k) ∈ [0, 1]``.
Before the first key the first value holds; after the last key the last value holds. Sampling exactly at
a key time returns that key's value bitwise (exact hits are pinned explicitly, see :func:`_pin_keys`).

Tangents are always *slopes* ``dv/dt`` (value units per second), never handle positions.
Easing remaps ``u`` inside each segment before the interpolant is evaluated; an eased cubic is no
longer C1 at its keys (that is the point of easing).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import ClipError, unknown_name
from animkit.model.transforms import (
    axis_angle_from_quaternion,
    quaternion_conjugate,
    quaternion_from_axis_angle,
    quaternion_multiply,
    quaternion_slerp,
)

__all__ = [
    "Easing",
    "EASINGS",
    "ease_linear",
    "ease_in",
    "ease_out",
    "ease_in_out",
    "segment_index",
    "segment_fraction",
    "step",
    "linear",
    "catmull_rom_slopes",
    "cubic_hermite",
    "auto_clamped_tangents",
    "bezier",
    "slerp",
    "squad",
]

Array = NDArray[np.float64]
Easing = Literal["linear", "ease_in", "ease_out", "ease_in_out"]

# --- easing: u ∈ [0, 1] → [0, 1], e(0) = 0 and e(1) = 1 exactly, monotone ------------------------------


def ease_linear(u: ArrayLike) -> Array:
    """e(u) = u."""
    return np.asarray(u, dtype=float)


def ease_in(u: ArrayLike) -> Array:
    """e(u) = u²: starts at rest, arrives at speed."""
    u = np.asarray(u, dtype=float)
    return u * u


def ease_out(u: ArrayLike) -> Array:
    """e(u) = u (2 − u) = 1 − (1 − u)²: leaves at speed, arrives at rest."""
    u = np.asarray(u, dtype=float)
    return u * (2.0 - u)


def ease_in_out(u: ArrayLike) -> Array:
    """e(u) = u² (3 − 2u) (smoothstep): at rest at both ends."""
    u = np.asarray(u, dtype=float)
    return u * u * (3.0 - 2.0 * u)


EASINGS: Final[dict[str, Callable[[ArrayLike], Array]]] = {
    "linear": ease_linear,
    "ease_in": ease_in,
    "ease_out": ease_out,
    "ease_in_out": ease_in_out,
}


def _easing_codes(easing: Easing | Sequence[Easing], segments: int) -> NDArray[np.intp] | str:
    """A single easing name, or one integer code (index into EASINGS) per segment."""
    names = list(EASINGS)
    if isinstance(easing, str):
        if easing not in EASINGS:
            raise ClipError(unknown_name("easing", easing, names))
        return easing
    easing = tuple(easing)
    if len(easing) != segments:
        raise ClipError(f"expected one easing per segment ({segments}), got {len(easing)}")
    for e in easing:
        if e not in EASINGS:
            raise ClipError(unknown_name("easing", e, names))
    return np.array([names.index(e) for e in easing], dtype=np.intp)


def _apply_easing(easing: Easing | Sequence[Easing], k: NDArray[np.intp], u: Array, segments: int) -> Array:
    codes = _easing_codes(easing, segments)
    if isinstance(codes, str):
        return u if codes == "linear" else EASINGS[codes](u)
    per_query = codes[k]
    out = u.copy()
    names = list(EASINGS)
    for code in np.unique(per_query):
        if names[code] == "linear":
            continue
        m = per_query == code
        out[m] = EASINGS[names[code]](u[m])
    return out


# --- locating queries in segments ---------------------------------------------------------------------


def segment_index(key_times: ArrayLike, t: ArrayLike) -> NDArray[np.intp]:
    """k(t) = max{k : t_k ≤ t}, clipped to [0, K − 2] (to 0 when K = 1).

    Queries before the first key fall in segment 0, after the last key in segment K − 2.
    """
    kt = np.asarray(key_times, dtype=float)
    k = np.searchsorted(kt, np.asarray(t, dtype=float), side="right") - 1
    return np.clip(k, 0, max(kt.shape[0] - 2, 0)).astype(np.intp)


def segment_fraction(key_times: ArrayLike, t: ArrayLike, index: ArrayLike) -> Array:
    """u = (t − t_k) / (t_{k+1} − t_k), clipped to [0, 1]; exactly 0 at t = t_k (zeros when K = 1)."""
    kt = np.asarray(key_times, dtype=float)
    t = np.asarray(t, dtype=float)
    k = np.asarray(index, dtype=np.intp)
    if kt.shape[0] < 2:
        return np.zeros(t.shape)
    t0 = kt[k]
    return np.clip((t - t0) / (kt[k + 1] - t0), 0.0, 1.0)


def _locate(key_times: Array, t: Array, easing: Easing | Sequence[Easing]) -> tuple[NDArray[np.intp], Array]:
    k = segment_index(key_times, t)
    u = segment_fraction(key_times, t, k)
    return k, _apply_easing(easing, k, u, key_times.shape[0] - 1)


def _column(x: Array, ndim: int) -> Array:
    """(F,) → (F, 1, ..., 1) so that it broadcasts against values of ``ndim`` dimensions."""
    return x.reshape(x.shape + (1,) * (ndim - 1))


def _pin_keys(key_times: Array, values: Array, t: Array, out: Array) -> Array:
    """out[t = t_j] = v_j, out[t < t_0] = v_0, out[t > t_{K−1}] = v_{K−1}, bitwise, in place."""
    K = key_times.shape[0]
    j = np.minimum(np.searchsorted(key_times, t, side="left"), K - 1)
    hit = key_times[j] == t
    if hit.any():
        out[hit] = values[j[hit]]
    before = t < key_times[0]
    if before.any():
        out[before] = values[0]
    after = t > key_times[-1]
    if after.any():
        out[after] = values[-1]
    return out


def _constant(values: Array, t: Array) -> Array:
    return np.broadcast_to(values[0], t.shape + values.shape[1:]).copy()


# --- scalar (and vector) interpolants -----------------------------------------------------------------


def step(key_times: ArrayLike, values: ArrayLike, t: ArrayLike) -> Array:
    """v(t) = v_k for t_k ≤ t < t_{k+1}: holds the left key (v_0 before the first key)."""
    kt = np.asarray(key_times, dtype=float)
    v = np.asarray(values, dtype=float)
    j = np.searchsorted(kt, np.asarray(t, dtype=float), side="right") - 1
    return v[np.clip(j, 0, kt.shape[0] - 1)]


def linear(key_times: ArrayLike, values: ArrayLike, t: ArrayLike, easing: Easing | Sequence[Easing] = "linear"
           ) -> Array:
    """v(t) = v_k + e(u) (v_{k+1} − v_k): piecewise linear (``np.interp`` when the easing is linear)."""
    kt = np.asarray(key_times, dtype=float)
    v = np.asarray(values, dtype=float)
    t = np.asarray(t, dtype=float)
    if kt.shape[0] == 1:
        return _constant(v, t)
    k, u = _locate(kt, t, easing)
    v0 = v[k]
    out = v0 + _column(u, v.ndim) * (v[k + 1] - v0)
    return _pin_keys(kt, v, t, out)


def catmull_rom_slopes(key_times: ArrayLike, values: ArrayLike) -> Array:
    """m_k = (v_{k+1} − v_{k−1}) / (t_{k+1} − t_{k−1}) inside; one-sided differences at the two ends.

    For non-uniform keys this is the secant over the two neighbouring keys (the "finite
    difference" Catmull-Rom form); m_0 = (v_1 − v_0)/(t_1 − t_0), m_{K−1} likewise. Zeros when K = 1.
    """
    kt = np.asarray(key_times, dtype=float)
    v = np.asarray(values, dtype=float)
    m = np.zeros_like(v)
    if kt.shape[0] < 2:
        return m
    m[0] = (v[1] - v[0]) / (kt[1] - kt[0])
    m[-1] = (v[-1] - v[-2]) / (kt[-1] - kt[-2])
    if kt.shape[0] > 2:
        m[1:-1] = (v[2:] - v[:-2]) / _column(kt[2:] - kt[:-2], v.ndim)
    return m


def cubic_hermite(key_times: ArrayLike, values: ArrayLike, t: ArrayLike, slopes: ArrayLike | None = None,
                  easing: Easing | Sequence[Easing] = "linear") -> Array:
    """p(u) = h00 v_k + h10 Δt m_k + h01 v_{k+1} + h11 Δt m_{k+1}, u = e((t − t_k)/Δt), Δt = t_{k+1} − t_k.

    h00 = (1 + 2u)(1 − u)², h10 = u (1 − u)², h01 = u² (3 − 2u), h11 = u² (u − 1).
    ``slopes`` m (dv/dt per key, shape of ``values``) default to :func:`catmull_rom_slopes`, which makes
    the curve C1 at interior keys (with linear easing).
    """
    kt = np.asarray(key_times, dtype=float)
    v = np.asarray(values, dtype=float)
    t = np.asarray(t, dtype=float)
    if kt.shape[0] == 1:
        return _constant(v, t)
    m = catmull_rom_slopes(kt, v) if slopes is None else np.asarray(slopes, dtype=float)
    k, u = _locate(kt, t, easing)
    dt = _column(kt[k + 1] - kt[k], v.ndim)
    u = _column(u, v.ndim)
    a = 1.0 - u
    out = (1.0 + 2.0 * u) * a * a * v[k] + u * a * a * dt * m[k] + u * u * (3.0 - 2.0 * u) * v[k + 1] \
        + u * u * (u - 1.0) * dt * m[k + 1]
    return _pin_keys(kt, v, t, out)


def auto_clamped_tangents(key_times: ArrayLike, values: ArrayLike) -> Array:
    """m_k = clip(CR_k, −3 min(|d_{k−1}|, |d_k|), +3 min(|d_{k−1}|, |d_k|)) if d_{k−1} d_k > 0, else 0.

    d_k = (v_{k+1} − v_k)/(t_{k+1} − t_k) are the secants, CR_k the Catmull-Rom slope (a weighted mean
    of d_{k−1} and d_k, so of their sign); the ends take m_0 = d_0, m_{K−1} = d_{K−2}.

    Guarantee (used as :func:`bezier` slopes, one per key for both sides): the curve never leaves
    [min(v_k, v_{k+1}), max(v_k, v_{k+1})] on segment k. Proof: the Bézier control values are
    P1 = v_k + Δt m_k / 3 and P2 = v_{k+1} − Δt m_{k+1} / 3. Every slope used on segment k has the sign
    of d_k (or is 0) and magnitude ≤ 3 |d_k|, so P1 and P2 lie in [v_k, v_{k+1}] (ordered either way);
    a Bézier curve stays in the convex hull of its control values. At a local extremum (or flat
    neighbour) the slope is 0: Blender's "Auto Clamped". Up to floating-point rounding (a few ulps).
    """
    kt = np.asarray(key_times, dtype=float)
    v = np.asarray(values, dtype=float)
    m = np.zeros_like(v)
    if kt.shape[0] < 2:
        return m
    d = np.diff(v, axis=0) / _column(np.diff(kt), v.ndim)
    m[0] = d[0]
    m[-1] = d[-1]
    if kt.shape[0] > 2:
        dl, dr = d[:-1], d[1:]
        cr = (v[2:] - v[:-2]) / _column(kt[2:] - kt[:-2], v.ndim)
        bound = 3.0 * np.minimum(np.abs(dl), np.abs(dr))
        m[1:-1] = np.where(((dl > 0) & (dr > 0)) | ((dl < 0) & (dr < 0)), np.clip(cr, -bound, bound), 0.0)
    return m


def bezier(key_times: ArrayLike, values: ArrayLike, t: ArrayLike, in_slopes: ArrayLike | None = None,
           out_slopes: ArrayLike | None = None, easing: Easing | Sequence[Easing] = "linear") -> Array:
    """B(u) = (1−u)³ P0 + 3u(1−u)² P1 + 3u²(1−u) P2 + u³ P3, u = e((t − t_k)/Δt).

    P0 = v_k, P1 = v_k + Δt·out_k / 3, P2 = v_{k+1} − Δt·in_{k+1} / 3, P3 = v_{k+1}: the handles sit at
    one third of the segment in time, so the curve is a function of t (no solve for the time axis) and
    its slope leaving key k is ``out_slopes[k]``, arriving at key k+1 ``in_slopes[k+1]``. Tangents are
    *slopes* dv/dt, not handle positions. With both left out, both are :func:`auto_clamped_tangents`
    (no overshoot between any two keys); give both or neither.
    """
    kt = np.asarray(key_times, dtype=float)
    v = np.asarray(values, dtype=float)
    t = np.asarray(t, dtype=float)
    if (in_slopes is None) != (out_slopes is None):
        raise ClipError("bezier needs both in_slopes and out_slopes, or neither (auto-clamped)")
    if kt.shape[0] == 1:
        return _constant(v, t)
    if in_slopes is None or out_slopes is None:
        m_in = m_out = auto_clamped_tangents(kt, v)
    else:
        m_in = np.asarray(in_slopes, dtype=float)
        m_out = np.asarray(out_slopes, dtype=float)
    k, u = _locate(kt, t, easing)
    dt = _column(kt[k + 1] - kt[k], v.ndim)
    u = _column(u, v.ndim)
    a = 1.0 - u
    p0, p3 = v[k], v[k + 1]
    p1 = p0 + dt * m_out[k] / 3.0
    p2 = p3 - dt * m_in[k + 1] / 3.0
    out = a * a * a * p0 + 3.0 * u * a * a * p1 + 3.0 * u * u * a * p2 + u * u * u * p3
    return _pin_keys(kt, v, t, out)


# --- quaternion interpolants --------------------------------------------------------------------------


def slerp(key_times: ArrayLike, quaternions: ArrayLike, t: ArrayLike,
          easing: Easing | Sequence[Easing] = "linear") -> Array:
    """q(t) = q_k (q_k⁻¹ q_{k+1})^{e(u)}: per-segment slerp, the short way round, unit norm."""
    kt = np.asarray(key_times, dtype=float)
    q = np.asarray(quaternions, dtype=float)
    t = np.asarray(t, dtype=float)
    if kt.shape[0] == 1:
        return _constant(q, t)
    k, u = _locate(kt, t, easing)
    return _pin_keys(kt, q, t, quaternion_slerp(q[k], q[k + 1], u))


def _same_hemisphere(q: Array) -> Array:
    """Flip signs along the sequence so that q_k · q_{k+1} ≥ 0 (same rotations)."""
    dots = np.sum(q[:-1] * q[1:], axis=-1)
    signs = np.concatenate([[1.0], np.cumprod(np.where(dots < 0, -1.0, 1.0))])
    return q * signs[:, None]


def _quaternion_log(q: Array) -> Array:
    """log q = (θ/2) a for q = (cos θ/2, a sin θ/2) (taken with w ≥ 0)."""
    axis, angle = axis_angle_from_quaternion(q)
    return axis * (angle / 2.0)[..., None]


def _quaternion_exp(v: Array) -> Array:
    """exp v = (cos |v|, v̂ sin |v|)."""
    n = np.linalg.norm(v, axis=-1)
    small = n < 1e-300
    axis = np.where(small[..., None], np.array([1.0, 0.0, 0.0]), v / np.where(small, 1.0, n)[..., None])
    return quaternion_from_axis_angle(axis, 2.0 * n)


def _squad_controls(q: Array) -> Array:
    """s_k = q_k exp(−(log(q_k⁻¹ q_{k+1}) + log(q_k⁻¹ q_{k−1})) / 4); s_0 = q_0, s_{K−1} = q_{K−1}."""
    s = q.copy()
    if q.shape[0] > 2:
        inv = quaternion_conjugate(q[1:-1])
        to_next = _quaternion_log(quaternion_multiply(inv, q[2:]))
        to_prev = _quaternion_log(quaternion_multiply(inv, q[:-2]))
        s[1:-1] = quaternion_multiply(q[1:-1], _quaternion_exp(-(to_next + to_prev) / 4.0))
    return s


def squad(key_times: ArrayLike, quaternions: ArrayLike, t: ArrayLike,
          easing: Easing | Sequence[Easing] = "linear") -> Array:
    """squad(u) = slerp(slerp(q_k, q_{k+1}; u), slerp(s_k, s_{k+1}; u); 2u(1 − u)) (Shoemake).

    s_k = q_k exp(−(log(q_k⁻¹ q_{k+1}) + log(q_k⁻¹ q_{k−1}))/4) are the inner control quaternions
    (s = q at the two end keys). Passes through every key; tangent-continuous across keys when the
    keys are evenly spaced in time (C1-ish otherwise). Keys are first put on one hemisphere.
    """
    kt = np.asarray(key_times, dtype=float)
    q0 = np.asarray(quaternions, dtype=float)
    t = np.asarray(t, dtype=float)
    if kt.shape[0] == 1:
        return _constant(q0, t)
    q = _same_hemisphere(q0)
    s = _squad_controls(q)
    k, u = _locate(kt, t, easing)
    outer = quaternion_slerp(q[k], q[k + 1], u)
    inner = quaternion_slerp(s[k], s[k + 1], u)
    return _pin_keys(kt, q0, t, quaternion_slerp(outer, inner, 2.0 * u * (1.0 - u)))
