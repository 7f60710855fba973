"""Keys of one DOF (:class:`Track`), of one ball joint (:class:`RotationTrack`), and dense baked frames
of many DOFs at shared times (:class:`DenseTrackSet`).

All three validate once, at construction (times strictly increasing and finite, values finite, lengths
that match), raising :class:`~animkit.errors.ClipError` that names the DOF or joint and what was wrong;
their arrays are then read-only and sampling trusts them. Before the first key the first value holds,
after the last key the last value holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit import limits
from animkit.errors import ClipError, unknown_name
from animkit.keyframes import interpolate as ip
from animkit.keyframes.interpolate import Easing
from animkit.model.transforms import euler_intrinsic_from_matrix, matrix_from_quaternion

__all__ = [
    "Interpolation",
    "RotationInterpolation",
    "INTERPOLATIONS",
    "ROTATION_INTERPOLATIONS",
    "Track",
    "RotationTrack",
    "DenseTrackSet",
]

Array = NDArray[np.float64]
Interpolation = Literal["step", "linear", "cubic", "bezier"]
RotationInterpolation = Literal["slerp", "squad", "step", "cubic"]
INTERPOLATIONS: Final[tuple[str, ...]] = get_args(Interpolation)
ROTATION_INTERPOLATIONS: Final[tuple[str, ...]] = get_args(RotationInterpolation)


def _frozen(a: Array) -> Array:
    a.flags.writeable = False
    return a


def _key_times(owner: str, times: ArrayLike) -> Array:
    """Validated key times: 1-D, non-empty, finite, strictly increasing (a read-only copy)."""
    t = np.array(times, dtype=float)
    if t.ndim != 1 or t.shape[0] == 0:
        raise ClipError(f"{owner}: key times must be a non-empty 1-D array, got shape {t.shape}")
    bad = np.flatnonzero(~np.isfinite(t))
    if bad.size:
        raise ClipError(f"{owner}: key time #{bad[0]} is {t[bad[0]]}; key times must be finite")
    far = np.flatnonzero(np.abs(t) > limits.MAX_TIME)
    if far.size:
        raise ClipError(f"{owner}: key time #{far[0]} is {t[far[0]]:g} s; key times lie within ±{limits.MAX_TIME:g} s "
                        f"(animkit.limits.MAX_TIME)")
    back = np.flatnonzero(np.diff(t) <= 0)
    if back.size:
        i = int(back[0])
        raise ClipError(f"{owner}: key times must be strictly increasing, but key #{i + 1} "
                        f"(t={t[i + 1]}) does not come after key #{i} (t={t[i]})")
    return _frozen(t)


def _finite_values(owner: str, values: ArrayLike, times: Array, what: str, trailing: tuple[int, ...] = ()
                   ) -> Array:
    v = np.array(values, dtype=float)
    expected = times.shape + trailing
    if v.shape != expected:
        raise ClipError(f"{owner}: expected {what} of shape {expected} (one per key time), got {v.shape}")
    bad = np.argwhere(~np.isfinite(v))
    if bad.size:
        i = int(bad[0][0])
        raise ClipError(f"{owner}: {what} at key #{i} (t={times[i]}) is not finite ({v[i]})")
    return _frozen(v)


def _per_key(owner: str, value: str | Sequence[str], count: int, valid: tuple[str, ...], what: str
             ) -> tuple[str, ...]:
    items = (value,) * count if isinstance(value, str) else tuple(value)
    if len(items) != count:
        raise ClipError(f"{owner}: expected one {what} or {count} of them, got {len(items)}")
    for item in items:
        if item not in valid:
            raise ClipError(f"{owner}: " + unknown_name(what, item, valid))
    return items


@dataclass(frozen=True, eq=False)
class Track:
    """Keys of one scalar DOF: ``v(t)`` built segment by segment.

    ``interpolation`` is one kind for all keys or one per key; the kind of key k governs segment k
    (from key k to key k+1), so the last key's kind is never used (as in Blender's F-curves).
    ``"cubic"`` segments are cubic Hermite with Catmull-Rom slopes over all the keys; ``"bezier"``
    segments use ``in_slopes``/``out_slopes`` (dv/dt per key, both or neither) or, when left out,
    :func:`~animkit.keyframes.interpolate.auto_clamped_tangents` (never overshoots between two keys).
    ``easing`` is one easing for all segments or one per segment (K − 1), remapping u in each segment.
    """

    dof: str
    times: Array
    values: Array
    interpolation: Interpolation | tuple[Interpolation, ...] = "linear"
    easing: Easing | tuple[Easing, ...] = "linear"
    in_slopes: Array | None = None
    out_slopes: Array | None = None
    _kinds: NDArray[np.intp] = field(init=False, repr=False)
    _cubic_slopes: Array = field(init=False, repr=False)
    _bezier_in: Array = field(init=False, repr=False)
    _bezier_out: Array = field(init=False, repr=False)

    def __post_init__(self) -> None:
        owner = f"track {self.dof!r}"
        times = _key_times(owner, self.times)
        values = _finite_values(owner, self.values, times, "values")
        K = times.shape[0]
        kinds = _per_key(owner, self.interpolation, K, INTERPOLATIONS, "interpolation")
        easing = _per_key(owner, self.easing, max(K - 1, 0), tuple(ip.EASINGS), "easing")
        set_ = object.__setattr__
        set_(self, "times", times)
        set_(self, "values", values)
        set_(self, "interpolation", self.interpolation if isinstance(self.interpolation, str) else kinds)
        set_(self, "easing", self.easing if isinstance(self.easing, str) else easing)
        set_(self, "_kinds", np.array([INTERPOLATIONS.index(k) for k in kinds], dtype=np.intp))
        set_(self, "_cubic_slopes", _frozen(ip.catmull_rom_slopes(times, values)))
        if (self.in_slopes is None) != (self.out_slopes is None):
            raise ClipError(f"{owner}: give both in_slopes and out_slopes, or neither (auto-clamped)")
        if self.in_slopes is not None and self.out_slopes is not None:
            if "bezier" not in kinds[:-1]:
                raise ClipError(f"{owner}: in/out slopes were given but no segment uses 'bezier' "
                                f"interpolation (interpolation={self.interpolation!r})")
            m_in = _finite_values(owner, self.in_slopes, times, "in_slopes")
            m_out = _finite_values(owner, self.out_slopes, times, "out_slopes")
            set_(self, "in_slopes", m_in)
            set_(self, "out_slopes", m_out)
        else:
            m_in = m_out = _frozen(ip.auto_clamped_tangents(times, values))
        set_(self, "_bezier_in", m_in)
        set_(self, "_bezier_out", m_out)

    def sample(self, t: ArrayLike) -> Array:
        """v(t) for all query times at once, shape (F,); holds the first/last key outside the keys."""
        t = np.asarray(t, dtype=float)
        times, values = self.times, self.values
        if times.shape[0] == 1:
            return np.full(t.shape, values[0])
        per_query = self._kinds[ip.segment_index(times, t)]
        out = np.empty(t.shape)
        for code in np.unique(per_query):
            m = per_query == code
            out[m] = self._sample_kind(INTERPOLATIONS[code], t[m])
        return out

    def _sample_kind(self, kind: str, t: Array) -> Array:
        times, values, easing = self.times, self.values, self.easing
        if kind == "step":
            return ip.step(times, values, t)
        if kind == "linear":
            return ip.linear(times, values, t, easing)
        if kind == "cubic":
            return ip.cubic_hermite(times, values, t, self._cubic_slopes, easing)
        return ip.bezier(times, values, t, self._bezier_in, self._bezier_out, easing)


@dataclass(frozen=True, eq=False)
class RotationTrack:
    """Keys of one ball joint as unit quaternions ``(w, x, y, z)``, shape (K, 4).

    Sampled as quaternions, then turned into the joint's intrinsic Euler DOF values by
    :meth:`sample_euler` when a clip samples a pose. ``interpolation``: ``"slerp"`` per segment (the short
    way), ``"squad"``, ``"step"`` (holds the left key), or ``"cubic"``: glTF's CUBICSPLINE, the cubic
    Hermite of each component with ``in_tangents``/``out_tangents`` (K, 4) in units per second, then
    normalised,

        q(t) = normalise((2u³ − 3u² + 1) q_k + (u³ − 2u² + u) Δt b_k + (−2u³ + 3u²) q_{k+1} + (u³ − u²) Δt a_{k+1})

    with b the out-tangents, a the in-tangents, Δt = t_{k+1} − t_k. Key quaternions must have unit norm
    to within 1e-6 (they are then normalised exactly).
    """

    joint: str
    times: Array
    quaternions: Array
    interpolation: RotationInterpolation = "slerp"
    in_tangents: Array | None = None
    out_tangents: Array | None = None

    def __post_init__(self) -> None:
        owner = f"rotation track {self.joint!r}"
        times = _key_times(owner, self.times)
        q = np.array(_finite_values(owner, self.quaternions, times, "quaternions", (4,)))
        norms = np.linalg.norm(q, axis=-1)
        off = np.flatnonzero(np.abs(norms - 1.0) > 1e-6)
        if off.size:
            i = int(off[0])
            raise ClipError(f"{owner}: quaternion at key #{i} (t={times[i]}) has norm {norms[i]:.6g}; "
                            "expected a unit quaternion (w, x, y, z)")
        if self.interpolation not in ROTATION_INTERPOLATIONS:
            raise ClipError(f"{owner}: " + unknown_name("rotation interpolation", self.interpolation,
                                                         ROTATION_INTERPOLATIONS))
        cubic = self.interpolation == "cubic"
        if cubic != (self.in_tangents is not None) or (self.in_tangents is None) != (self.out_tangents is None):
            raise ClipError(f"{owner}: in/out tangents go with 'cubic' interpolation, both of them, and only there")
        if self.in_tangents is not None and self.out_tangents is not None:
            object.__setattr__(self, "in_tangents", _finite_values(owner, self.in_tangents, times, "in_tangents", (4,)))
            object.__setattr__(self, "out_tangents",
                               _finite_values(owner, self.out_tangents, times, "out_tangents", (4,)))
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "quaternions", _frozen(q / norms[:, None]))

    def sample(self, t: ArrayLike) -> Array:
        """q(t), shape (F, 4), unit norm; holds the first/last key outside the keys."""
        t = np.asarray(t, dtype=float)
        if self.interpolation == "step":
            return ip.step(self.times, self.quaternions, t)
        if self.interpolation == "cubic":
            q = ip.bezier(self.times, self.quaternions, t, self.in_tangents, self.out_tangents)
            n = np.linalg.norm(q, axis=-1, keepdims=True)
            left = ip.step(self.times, self.quaternions, t)
            return np.where(n > 1e-12, q / np.where(n > 1e-12, n, 1.0), left)
        fn = ip.slerp if self.interpolation == "slerp" else ip.squad
        return fn(self.times, self.quaternions, t)

    def sample_euler(self, t: ArrayLike, order: str) -> Array:
        """(α, β, γ) with R(q(t)) = R_a(α) R_b(β) R_c(γ) for intrinsic ``order`` "abc", shape (F, 3)."""
        return euler_intrinsic_from_matrix(matrix_from_quaternion(self.sample(t)), order)


@dataclass(frozen=True, eq=False)
class DenseTrackSet:
    """Baked frames of several DOFs at shared times: one (F, D) array, sampled in one vectorised pass.

    ``v(t) = interp(times, values[:, j], t)`` for every column j at once (one segment search for all
    DOFs). This is how BVH frames and baked IK reaches are stored: 10,000 frames × 96 DOFs is one
    array, not 96 tracks. ``interpolation`` is one kind for all DOFs and frames.
    """

    dofs: tuple[str, ...]
    times: Array
    values: Array
    interpolation: Interpolation = "linear"
    _cubic_slopes: Array | None = field(init=False, repr=False, default=None)
    _bezier_slopes: Array | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        dofs = tuple(self.dofs)
        owner = "dense frames"
        times = _key_times(owner, self.times)
        v = np.array(self.values, dtype=float)
        if v.shape != (times.shape[0], len(dofs)):
            raise ClipError(f"{owner}: expected values of shape {(times.shape[0], len(dofs))} "
                            f"(frames × DOFs), got {v.shape}")
        if len(set(dofs)) != len(dofs):
            dup = next(d for d in dofs if dofs.count(d) > 1)
            raise ClipError(f"{owner}: DOF {dup!r} appears more than once")
        bad = np.argwhere(~np.isfinite(v))
        if bad.size:
            i, j = (int(x) for x in bad[0])
            raise ClipError(f"{owner}: DOF {dofs[j]!r} at frame #{i} (t={times[i]}) is not finite "
                            f"({v[i, j]})")
        if self.interpolation not in INTERPOLATIONS:
            raise ClipError(f"{owner}: " + unknown_name("interpolation", self.interpolation, INTERPOLATIONS))
        set_ = object.__setattr__
        set_(self, "dofs", dofs)
        set_(self, "times", times)
        set_(self, "values", _frozen(v))
        if self.interpolation == "cubic":
            set_(self, "_cubic_slopes", _frozen(ip.catmull_rom_slopes(times, v)))
        if self.interpolation == "bezier":
            set_(self, "_bezier_slopes", _frozen(ip.auto_clamped_tangents(times, v)))

    def sample(self, t: ArrayLike) -> Array:
        """All DOFs at all query times, shape (F, D)."""
        t = np.asarray(t, dtype=float)
        kind = self.interpolation
        if kind == "step":
            return ip.step(self.times, self.values, t)
        if kind == "linear":
            return ip.linear(self.times, self.values, t)
        if kind == "cubic":
            return ip.cubic_hermite(self.times, self.values, t, self._cubic_slopes)
        return ip.bezier(self.times, self.values, t, self._bezier_slopes, self._bezier_slopes)
