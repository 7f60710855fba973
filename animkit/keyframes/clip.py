"""Clips: tracks by DOF name, sampled into poses ``(F, D)`` in a figure's DOF order, with loop modes,
root motion, blending and crossfades.

A clip's content is exactly one of: keyed tracks (:class:`Track` per DOF, :class:`RotationTrack` per
ball joint), one :class:`DenseTrackSet` of baked frames (:meth:`Clip.from_poses`), or a mix of two
clips (:class:`Blend`, :class:`Crossfade`). DOFs without content hold the layout's rest value.

Time: a clip plays over [0, duration]. ``loop`` maps any query time t to clip time τ:
``"once"`` clamps, τ = clip(t, 0, d); ``"loop"`` wraps, τ = t − n d with n = ⌊t / d⌋ (so τ ∈ [0, d)
and t = d plays τ = 0 again); ``"ping-pong"`` reflects, τ = d − |(t mod 2d) − d|. With d = 0 every
time maps to τ = 0 (no division).

Root motion: ``root_motion`` names the joint whose translation DOFs (``.tx``/``.ty``/``.tz``) carry the
character through the world. In ``"loop"`` mode those DOFs accumulate the per-cycle displacement
Δ = P(d) − P(0): the pose at t is P(τ) + n Δ, so a walk cycle walks on instead of snapping back to
its start each cycle (continuous across cycle boundaries). In ``"once"`` the root holds its last value
after the end; in ``"ping-pong"`` it retraces its path. Rotations are never accumulated.

Limit policy: every key must lie within its DOF's limits (``layout.dof_limits()``, bounds inclusive).
A key outside them raises :class:`~animkit.errors.ClipError` when the clip is built, naming the clip,
the DOF, the key time, the value and the limit. Rotation-track keys are checked after conversion to
the joint's Euler DOF values (the same decomposition sampling produces), with 1e-9 rad of slack for
the round trip; dense frames are checked frame by frame. Sampling never clamps: linear, step and
auto-clamped Bézier segments cannot leave the range of their keys, so they stay within limits, but
``"cubic"`` (Catmull-Rom) and ``"squad"`` segments may overshoot between keys by design.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal, Protocol, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit import limits
from animkit.display import html_for, png_for
from animkit.errors import AnimkitError, ClipError, unknown_name
from animkit.keyframes.track import DenseTrackSet, Interpolation, RotationTrack, Track
from animkit.limits import frame_count, sample_count
from animkit.model.transforms import (
    euler_intrinsic_from_matrix,
    matrix_from_euler_intrinsic,
    matrix_from_quaternion,
    quaternion_from_matrix,
    quaternion_slerp,
)

__all__ = ["PoseLayout", "LoopMode", "LOOP_MODES", "Clip", "Blend", "Crossfade", "blend", "crossfade"]

Array = NDArray[np.float64]
LoopMode = Literal["once", "loop", "ping-pong"]
LOOP_MODES: Final[tuple[str, ...]] = get_args(LoopMode)
_TRANSLATION: Final = ("tx", "ty", "tz")
_ROTATION_SLACK: Final = 1e-9


class PoseLayout(Protocol):
    """What a clip needs from a figure: its DOF order, rest pose, limits and joint → DOF map.

    ``joint_dofs[j]`` lists the pose indices of joint j's DOFs; ``joint_orders[j]`` (ball joints only)
    is their intrinsic Euler order, e.g. ``"zyx"``: A = R_z(θ_rz) R_y(θ_ry) R_x(θ_rx), and the joint's
    rotation DOFs (names ``<joint>.r?``) appear in ``joint_dofs[j]`` in that order.
    """

    @property
    def dof_names(self) -> Sequence[str]: ...

    @property
    def joint_dofs(self) -> Mapping[str, Sequence[int]]: ...

    @property
    def joint_orders(self) -> Mapping[str, str]: ...

    def rest_pose(self) -> NDArray[np.float64]: ...

    def dof_limits(self) -> NDArray[np.float64]: ...


def _suffix(dof: str) -> str:
    return dof.rsplit(".", 1)[-1]


def _ball_dofs(names: Sequence[str], joint_dofs: Mapping[str, Sequence[int]], joint: str) -> NDArray[np.intp]:
    """The three rotation DOF indices of a ball joint, in its Euler order (names and joint_dofs: the layout's,
    computed once by the caller: a figure recomputes them on every call)."""
    idx = [i for i in joint_dofs[joint] if _suffix(names[i]).startswith("r")]
    if len(idx) != 3:
        raise ClipError(f"ball joint {joint!r} should have 3 rotation DOFs in the layout, got "
                        f"{[names[i] for i in idx]}")
    return np.array(idx, dtype=np.intp)


def _same_layout(a: PoseLayout, b: PoseLayout) -> bool:
    return a is b or (list(a.dof_names) == list(b.dof_names) and dict(a.joint_orders) == dict(b.joint_orders))


@dataclass(frozen=True, eq=False)
class Blend:
    """Content of ``blend(a, b, weight)``: (1 − w) a + w b per DOF, ball joints by slerp."""

    a: Clip
    b: Clip
    weight: float


@dataclass(frozen=True, eq=False)
class Crossfade:
    """Content of ``crossfade(a, b, start, length)``: a, then a → b over [start, start + length], then b.

    b is shifted to begin as the fade begins: at clip time τ it plays b(τ − start).
    """

    a: Clip
    b: Clip
    start: float
    length: float


@dataclass(frozen=True, eq=False)
class Clip:
    """A named animation over one :class:`PoseLayout`; :meth:`sample` gives poses (F, D).

    Build keyed clips with :meth:`build`, baked ones with :meth:`from_poses`, mixes with
    :func:`blend` / :func:`crossfade`. ``duration`` defaults to the last key time (of the mix's
    sources for mixes; 0 for a clip without keys) and is a float after construction.
    """

    name: str
    layout: PoseLayout
    tracks: Mapping[str, Track] = field(default_factory=dict)
    rotation_tracks: Mapping[str, RotationTrack] = field(default_factory=dict)
    dense: DenseTrackSet | None = None
    mix: Blend | Crossfade | None = None
    duration: float | None = None
    fps: float = 30.0
    loop: LoopMode = "once"
    root_motion: str | None = None
    _span: float = field(init=False, repr=False, default=0.0)
    _rest: Array = field(init=False, repr=False, default_factory=lambda: np.zeros(0))
    _track_index: tuple[tuple[int, Track], ...] = field(init=False, repr=False, default=())
    _rotation_index: tuple[tuple[NDArray[np.intp], str, RotationTrack], ...] = field(
        init=False, repr=False, default=())
    _dense_index: NDArray[np.intp] | None = field(init=False, repr=False, default=None)
    _balls: tuple[tuple[NDArray[np.intp], str], ...] = field(init=False, repr=False, default=())
    _root_index: NDArray[np.intp] = field(init=False, repr=False,
                                          default_factory=lambda: np.zeros(0, dtype=np.intp))

    def __repr__(self) -> str:
        """One line: name, DOFs, frames, duration, fps, loop mode."""
        d = float(self.duration or 0.0)
        frames = int(round(d * self.fps)) + 1
        return (f"Clip({self.name!r}, {len(self.layout.dof_names)} DOFs, {frames} frames, {d:.3g} s at "
                f"{self.fps:g} fps, loop={self.loop})")

    def _repr_html_(self) -> str | None:
        """In Jupyter: the clip playing on its figure (a video with controls); None for one frame or a layout that
        is not a Figure."""
        return html_for(self)

    def _repr_png_(self) -> bytes | None:
        """In Jupyter: a clip of one frame as a PNG of that pose; None otherwise."""
        return png_for(self)

    # --- construction ------------------------------------------------------------------------------

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        owner = f"clip {self.name!r}"
        names = list(self.layout.dof_names)
        index = {n: i for i, n in enumerate(names)}
        D = len(names)
        rest = np.array(self.layout.rest_pose(), dtype=float)
        bounds = np.array(self.layout.dof_limits(), dtype=float)
        if rest.shape != (D,) or bounds.shape != (D, 2):
            raise ClipError(f"{owner}: layout gives rest pose {rest.shape} and limits {bounds.shape}; "
                            f"expected ({D},) and ({D}, 2) for its {D} DOFs")
        rest.flags.writeable = False
        set_(self, "_rest", rest)
        if self.loop not in LOOP_MODES:
            raise ClipError(f"{owner}: " + unknown_name("loop mode", self.loop, LOOP_MODES))
        if not (np.isfinite(self.fps) and 0 < self.fps <= limits.MAX_FPS):
            raise ClipError(f"{owner}: fps must be a positive number up to {limits.MAX_FPS:g} "
                            f"(animkit.limits.MAX_FPS), got {self.fps}")
        kinds = [bool(self.tracks or self.rotation_tracks), self.dense is not None, self.mix is not None]
        if sum(kinds) > 1:
            raise ClipError(f"{owner}: a clip holds keyed tracks, dense frames or a mix of clips, "
                            "not more than one of them")
        joint_dofs = self.layout.joint_dofs
        joint_orders = self.layout.joint_orders
        balls = tuple((_ball_dofs(names, joint_dofs, j), o) for j, o in joint_orders.items())
        set_(self, "_balls", balls)

        last = self._index_tracks(owner, names, index, bounds)
        last = max(last, self._index_rotations(owner, names, bounds))
        if self.dense is not None:
            last = self._index_dense(owner, names, index, bounds)
        if self.mix is not None:
            last = self._mix_span(owner)
        span = last if self.duration is None else float(self.duration)
        if not (np.isfinite(span) and span >= 0):
            raise ClipError(f"{owner}: duration must be a finite number ≥ 0, got {span}")
        try:
            frame_count(span, float(self.fps), owner)
        except AnimkitError as exc:
            raise ClipError(str(exc)) from None
        set_(self, "duration", span)
        set_(self, "_span", span)
        if self.root_motion is not None:
            self._index_root_motion(owner, names)

    def _index_tracks(self, owner: str, names: list[str], index: dict[str, int], bounds: Array) -> float:
        """Check the keyed tracks (their DOFs exist, keys within limits) and index them; their last key time."""
        last = 0.0
        tracks: dict[str, Track] = {}
        track_index = []
        for key, tr in self.tracks.items():
            if key != tr.dof:
                raise ClipError(f"{owner}: track stored under {key!r} animates DOF {tr.dof!r}")
            if tr.dof not in index:
                raise ClipError(f"{owner}: " + unknown_name("DOF", tr.dof, names))
            i = index[tr.dof]
            _check_limits(owner, [tr.dof], tr.times, tr.values[:, None], bounds[[i]], 0.0)
            tracks[key] = tr
            track_index.append((i, tr))
            last = max(last, float(tr.times[-1]))
        object.__setattr__(self, "tracks", MappingProxyType(tracks))
        object.__setattr__(self, "_track_index", tuple(track_index))
        return last

    def _index_rotations(self, owner: str, names: list[str], bounds: Array) -> float:
        """Check the rotation tracks (ball joints, no DOF also keyed alone, Euler angles within limits) and index
        them; their last key time (0 for none)."""
        last = 0.0
        joint_dofs, joint_orders = self.layout.joint_dofs, self.layout.joint_orders
        rotations: dict[str, RotationTrack] = {}
        rotation_index = []
        for key, rt in self.rotation_tracks.items():
            if key != rt.joint:
                raise ClipError(f"{owner}: rotation track stored under {key!r} animates joint {rt.joint!r}")
            if rt.joint not in joint_orders:
                raise ClipError(f"{owner}: " + unknown_name("ball joint", rt.joint, joint_orders))
            order = joint_orders[rt.joint]
            idx = _ball_dofs(names, joint_dofs, rt.joint)
            clash = [names[i] for i in idx if names[i] in self.tracks]
            if clash:
                raise ClipError(f"{owner}: DOF {clash[0]!r} has a track and is also driven by the rotation "
                                f"track of joint {rt.joint!r}; keep one")
            euler = euler_intrinsic_from_matrix(matrix_from_quaternion(rt.quaternions), order)
            _check_limits(owner, [names[i] for i in idx], rt.times, euler, bounds[idx], _ROTATION_SLACK)
            rotations[key] = rt
            rotation_index.append((idx, order, rt))
            last = max(last, float(rt.times[-1]))
        object.__setattr__(self, "rotation_tracks", MappingProxyType(rotations))
        object.__setattr__(self, "_rotation_index", tuple(rotation_index))
        return last

    def _index_dense(self, owner: str, names: list[str], index: dict[str, int], bounds: Array) -> float:
        """Check the dense frames (their DOFs exist, values within limits) and index them; their last time."""
        assert self.dense is not None
        missing = [d for d in self.dense.dofs if d not in index]
        if missing:
            raise ClipError(f"{owner}: " + unknown_name("DOF", missing[0], names))
        didx = np.array([index[d] for d in self.dense.dofs], dtype=np.intp)
        _check_limits(owner, list(self.dense.dofs), self.dense.times, self.dense.values, bounds[didx], 0.0)
        object.__setattr__(self, "_dense_index", didx)
        return float(self.dense.times[-1])

    def _mix_span(self, owner: str) -> float:
        """A blend's or crossfade's span (its sources on this clip's layout): the longer source, or the second
        source's end after the crossfade's start."""
        assert self.mix is not None
        for src in (self.mix.a, self.mix.b):
            if not _same_layout(src.layout, self.layout):
                raise ClipError(f"{owner}: source clip {src.name!r} is on a different layout "
                                "(DOF names or ball joints differ)")
        if isinstance(self.mix, Blend):
            return max(self.mix.a._span, self.mix.b._span)
        return max(self.mix.a._span, self.mix.start + self.mix.b._span)

    def _index_root_motion(self, owner: str, names: list[str]) -> None:
        """The root-motion joint's translation DOFs (.tx/.ty/.tz), which carry the root from loop to loop."""
        joint_dofs = self.layout.joint_dofs
        assert self.root_motion is not None
        if self.root_motion not in joint_dofs:
            raise ClipError(f"{owner}: root_motion: " + unknown_name("joint", self.root_motion, joint_dofs))
        ridx = [i for i in joint_dofs[self.root_motion] if _suffix(names[i]) in _TRANSLATION]
        if not ridx:
            raise ClipError(f"{owner}: root_motion joint {self.root_motion!r} has no translation DOFs "
                            f"(.tx/.ty/.tz) to carry root motion")
        object.__setattr__(self, "_root_index", np.array(ridx, dtype=np.intp))

    @classmethod
    def build(cls, layout: PoseLayout, tracks: Iterable[Track | RotationTrack] = (), *, name: str = "clip",
              duration: float | None = None, fps: float = 30.0, loop: LoopMode = "once",
              root_motion: str | None = None) -> Clip:
        """A keyed clip from Tracks (one per DOF) and RotationTracks (one per ball joint)."""
        scalar: dict[str, Track] = {}
        rotation: dict[str, RotationTrack] = {}
        for tr in tracks:
            if isinstance(tr, Track):
                if tr.dof in scalar:
                    raise ClipError(f"clip {name!r}: two tracks for DOF {tr.dof!r}")
                scalar[tr.dof] = tr
            elif isinstance(tr, RotationTrack):
                if tr.joint in rotation:
                    raise ClipError(f"clip {name!r}: two rotation tracks for joint {tr.joint!r}")
                rotation[tr.joint] = tr
            else:
                raise ClipError(f"clip {name!r}: expected Track or RotationTrack, got {type(tr).__name__}")
        return cls(name=name, layout=layout, tracks=scalar, rotation_tracks=rotation, duration=duration,
                   fps=fps, loop=loop, root_motion=root_motion)

    @classmethod
    def from_poses(cls, layout: PoseLayout, times: ArrayLike, poses: ArrayLike, *, name: str = "baked",
                   fps: float = 30.0, interpolation: Interpolation = "linear", duration: float | None = None,
                   loop: LoopMode = "once", root_motion: str | None = None) -> Clip:
        """A clip from baked poses (F, D) at ``times`` (F,): one :class:`DenseTrackSet` over all DOFs.

        Reproduces every frame exactly at its time. Ball-joint DOFs are interpolated per Euler angle
        between frames (fine for densely sampled data such as BVH or baked IK).
        """
        names = tuple(layout.dof_names)
        p = np.asarray(poses, dtype=float)
        t = np.asarray(times, dtype=float)
        if p.ndim != 2 or p.shape[1] != len(names) or p.shape[0] != t.shape[0]:
            raise ClipError(f"clip {name!r}: expected poses of shape ({t.shape[0]}, {len(names)}) "
                            f"(one row per time, one column per DOF of the layout), got {p.shape}")
        dense = DenseTrackSet(names, t, p, interpolation)
        return cls(name=name, layout=layout, dense=dense, duration=duration, fps=fps, loop=loop,
                   root_motion=root_motion)

    # --- time ---------------------------------------------------------------------------------------

    def local_time(self, t: ArrayLike) -> tuple[Array, Array]:
        """(τ, n): clip time after the loop mode, and the whole cycles n (for "loop"; 0 otherwise)."""
        t = np.asarray(t, dtype=float)
        d = self._span
        zeros = np.zeros(t.shape)
        if d == 0:
            return zeros, zeros
        if self.loop == "once":
            return np.clip(t, 0.0, d), zeros
        if self.loop == "loop":
            n = np.floor(t / d)
            tau = t - n * d
            # rounding can put τ a hair outside [0, d); wrap it back into the cycle
            over = tau >= d
            n = np.where(over, n + 1, n)
            tau = np.where(over, tau - d, tau)
            return np.clip(tau, 0.0, d), n
        s = np.mod(t, 2.0 * d)
        return np.clip(d - np.abs(s - d), 0.0, d), zeros

    def frame_times(self) -> Array:
        """k / fps for k = 0, 1, ... up to the duration, plus the duration if it falls between frames."""
        d = self._span
        n = frame_count(d, self.fps, f"clip {self.name!r}")
        t = np.arange(n) / self.fps
        if d - t[-1] > 1e-9 * max(1.0, d):
            t = np.append(t, d)
        return t

    # --- sampling -----------------------------------------------------------------------------------

    def sample(self, times: ArrayLike) -> Array:
        """Poses (F, D) in ``layout.dof_names`` order at all ``times`` (F,) at once."""
        t = np.asarray(times, dtype=float)
        if t.ndim != 1:
            raise ClipError(f"clip {self.name!r}: sample times must be a 1-D array, got shape {t.shape}")
        if not np.all(np.isfinite(t)):
            raise ClipError(f"clip {self.name!r}: sample times must be finite")
        tau, n = self.local_time(t)
        poses = self._sample_clip_time(tau)
        if self.loop == "loop" and self._root_index.size and self._span > 0:
            ends = self._sample_clip_time(np.array([0.0, self._span]))
            step = ends[1, self._root_index] - ends[0, self._root_index]
            poses[:, self._root_index] += n[:, None] * step
        return poses

    def sample_frames(self) -> Array:
        """``sample(frame_times())``, after checking frames × DOFs against :data:`animkit.limits.MAX_SAMPLES`
        (before anything is allocated)."""
        try:
            sample_count(self._span, self.fps, self._rest.shape[0], f"clip {self.name!r}")
        except AnimkitError as exc:
            raise ClipError(str(exc)) from None
        return self.sample(self.frame_times())

    def _sample_clip_time(self, tau: Array) -> Array:
        """Poses at clip times τ ∈ [0, d] (already through the loop mode)."""
        if self.mix is not None:
            return self._sample_mix(self.mix, tau)
        poses = np.repeat(self._rest[None, :], tau.shape[0], axis=0)  # a writable copy (np.tile of 0 DOFs: a view)
        if self.dense is not None and self._dense_index is not None:
            poses[:, self._dense_index] = self.dense.sample(tau)
            return poses
        for i, tr in self._track_index:
            poses[:, i] = tr.sample(tau)
        for idx, order, rt in self._rotation_index:
            poses[:, idx] = rt.sample_euler(tau, order)
        return poses

    def _sample_mix(self, mix: Blend | Crossfade, tau: Array) -> Array:
        if isinstance(mix, Blend):
            w = np.full(tau.shape, float(mix.weight))
            return self._mix_poses(mix.a.sample(tau), mix.b.sample(tau), w)
        if mix.length > 0:
            w = np.clip((tau - mix.start) / mix.length, 0.0, 1.0)
        else:
            w = (tau >= mix.start).astype(float)
        return self._mix_poses(mix.a.sample(tau), mix.b.sample(tau - mix.start), w)

    def _mix_poses(self, pa: Array, pb: Array, w: Array) -> Array:
        """(1 − w) a + w b per DOF; ball joints R = slerp(R_a, R_b; w) re-read in their Euler order.

        Exactly a where w = 0 and exactly b where w = 1.
        """
        wc = w[:, None]
        out = (1.0 - wc) * pa + wc * pb
        inside = (w > 0) & (w < 1)
        if inside.any():
            for idx, order in self._balls:
                qa = quaternion_from_matrix(matrix_from_euler_intrinsic(pa[inside][:, idx], order))
                qb = quaternion_from_matrix(matrix_from_euler_intrinsic(pb[inside][:, idx], order))
                q = quaternion_slerp(qa, qb, w[inside])
                out[np.ix_(inside, idx)] = euler_intrinsic_from_matrix(matrix_from_quaternion(q), order)
        return out


def _check_limits(owner: str, dofs: Sequence[str], times: Array, values: Array, limits: Array, slack: float
                  ) -> None:
    """Raise ClipError for the first key (row) of ``values`` (K, n) outside ``limits`` (n, 2)."""
    lo, hi = limits[:, 0] - slack, limits[:, 1] + slack
    below = values < lo
    above = values > hi
    if below.any() or above.any():
        bad = np.argwhere(below | above)
        k, j = (int(x) for x in bad[0])
        side, bound = ("below the lower", limits[j, 0]) if below[k, j] else ("above the upper", limits[j, 1])
        raise ClipError(f"{owner}: DOF {dofs[j]!r} has a key at t={times[k]:g} with value "
                        f"{values[k, j]:.6g}, "
                        f"{side} limit {bound:.6g}; keys must lie within the DOF's limits")


def _weight(owner: str, value: float, what: str) -> float:
    v = float(value)
    if not np.isfinite(v):
        raise ClipError(f"{owner}: {what} must be finite, got {value}")
    return v


def blend(a: Clip, b: Clip, weight: float, *, name: str | None = None, duration: float | None = None,
          fps: float | None = None, loop: LoopMode = "once") -> Clip:
    """A clip sampling to (1 − w) a(t) + w b(t) per DOF, ball joints by slerp of their rotations.

    ``weight`` w ∈ [0, 1]; w = 0 gives a exactly, w = 1 gives b. Each source applies its own loop
    mode; the blend's duration defaults to the longer source.
    """
    name = f"blend({a.name}, {b.name})" if name is None else name
    w = _weight(f"clip {name!r}", weight, "weight")
    if not 0.0 <= w <= 1.0:
        raise ClipError(f"clip {name!r}: blend weight must lie in [0, 1], got {weight}")
    return Clip(name=name, layout=a.layout, mix=Blend(a, b, w), duration=duration,
                fps=a.fps if fps is None else fps, loop=loop)


def crossfade(a: Clip, b: Clip, start: float, length: float, *, name: str | None = None,
              duration: float | None = None, fps: float | None = None, loop: LoopMode = "once") -> Clip:
    """a until ``start``, then a fade (weight w = (τ − start)/length) to b, then b; b starts at ``start``.

    At clip time τ: a(τ) before the window, b(τ − start) after it. The duration defaults to
    max(a.duration, start + b.duration); ``length`` 0 is a cut at ``start``.
    """
    name = f"crossfade({a.name}, {b.name})" if name is None else name
    owner = f"clip {name!r}"
    s = _weight(owner, start, "start")
    n = _weight(owner, length, "length")
    if n < 0:
        raise ClipError(f"{owner}: crossfade length must be ≥ 0, got {length}")
    return Clip(name=name, layout=a.layout, mix=Crossfade(a, b, s, n), duration=duration,
                fps=a.fps if fps is None else fps, loop=loop)
