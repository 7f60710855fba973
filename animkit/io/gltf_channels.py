"""A clip as glTF animation channels (:func:`channels_from_clip`): per arc a translation, rotation and scale
channel that keeps the clip's key times where glTF's interpolation (:func:`gltf_sample`) reproduces the clip inside
every segment (STEP, LINEAR, CUBICSPLINE; checked at ¼, ½ and ¾ of each), else sampled at its frames, LINEAR.
:mod:`animkit.io.gltf_write` writes them into the document and re-exports these names.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

import numpy as np
from numpy.typing import NDArray

from animkit.errors import AnimkitError, unknown_name
from animkit.keyframes import interpolate as ip
from animkit.keyframes.track import DenseTrackSet, Track
from animkit.model.transforms import (
    matrix_from_quaternion,
    quaternion_conjugate,
    quaternion_from_matrix,
    quaternion_multiply,
)

if TYPE_CHECKING:
    from animkit.keyframes import Clip
    from animkit.model.figure import Figure
    from animkit.model.graph import Arc

__all__ = ["Keys", "KEYS", "GltfChannel", "channels_from_clip", "gltf_sample"]

Array = NDArray[np.float64]


Interp = Literal["LINEAR", "STEP", "CUBICSPLINE"]
#: how a clip's keys are written: ``auto`` (exact keys where glTF reproduces them, CUBICSPLINE included) or
#: ``linear`` (no CUBICSPLINE: such channels resampled at the clip's frames, LINEAR)
Keys = Literal["auto", "linear"]
KEYS: tuple[str, ...] = get_args(Keys)


@dataclass(frozen=True)
class GltfChannel:
    """One animation channel: ``node`` (figure node index), ``path``, key ``times`` (K,), ``values``
    (K, 3) translation or scale, (K, 4) rotation (w, x, y, z); for CUBICSPLINE also ``in_tangents`` and
    ``out_tangents`` of the values' shape, dvalue/dt. ``exact``: glTF's interpolation of these keys was
    checked to reproduce the clip inside every segment (False: sampled at the clip's frames, LINEAR)."""

    node: int
    path: Literal["translation", "rotation", "scale"]
    interpolation: Interp
    times: Array
    values: Array
    exact: bool
    in_tangents: Array | None = None
    out_tangents: Array | None = None


@dataclass(frozen=True)
class _Source:
    """What drives one DOF in a clip: key times, the kind of each segment, and whether any is eased."""

    times: Array
    kinds: tuple[str, ...]
    eased: bool
    track: Track | DenseTrackSet | None = None
    column: int = 0


def _sources(clip: Clip) -> dict[int, _Source] | None:
    """DOF index → its source; None for a mix (a blend or crossfade: everything is resampled)."""
    if clip.mix is not None:
        return None
    names = list(clip.layout.dof_names)
    index = {n: i for i, n in enumerate(names)}
    out: dict[int, _Source] = {}
    for dof, tr in clip.tracks.items():
        K = len(tr.times)
        kinds = (tr.interpolation,) * K if isinstance(tr.interpolation, str) else tuple(tr.interpolation)
        easing = (tr.easing,) if isinstance(tr.easing, str) else tuple(tr.easing)
        out[index[dof]] = _Source(tr.times, kinds[:-1], any(e != "linear" for e in easing), tr)
    for joint, rt in clip.rotation_tracks.items():
        for i in clip.layout.joint_dofs[joint]:
            if names[i].rsplit(".", 1)[-1].startswith("r"):
                out[i] = _Source(rt.times, (rt.interpolation,) * (len(rt.times) - 1), False, None)
    if clip.dense is not None:
        dn = clip.dense
        for c, dof in enumerate(dn.dofs):
            out[index[dof]] = _Source(dn.times, (dn.interpolation,) * (len(dn.times) - 1), False, dn, c)
    return out


def _stored_times(t: Array) -> NDArray[np.float32]:
    """Times as the file stores them: float32, the nearest (a player's float32 clock at a frame lands there too)."""
    out: NDArray[np.float32] = np.maximum(np.asarray(t, dtype=np.float64), 0.0).astype(np.float32)
    return out


def _float32_times(t: Array) -> Array:
    """Sorted key times (float64, evaluated there) whose stored float32 values strictly increase."""
    t = np.unique(np.asarray(t, dtype=np.float64))
    _, first = np.unique(_stored_times(t), return_index=True)
    out: Array = t[np.sort(first)]
    return out


def _local(arc: Arc, values: Array) -> Array:
    """L · A(θ) for every row of ``values`` (F, k) → (F, 4, 4)."""
    return arc.L @ arc.joint.matrix(values)


def _derivative(src: _Source, t: Array, side: Literal["left", "right"]) -> Array:
    """dθ/dt of one Hermite-representable source at ``t`` from the left or the right (0 outside its keys)."""
    kt = src.times
    tr = src.track
    values = tr.values if isinstance(tr, Track) else tr.values[:, src.column] if tr is not None else None
    assert values is not None
    out = np.zeros(t.shape)
    if len(kt) < 2:
        return out
    near = np.clip(np.searchsorted(kt, t), 1, len(kt) - 1)  # float32 key times sit a hair off the keys
    near = np.where(np.abs(t - kt[near - 1]) < np.abs(t - kt[near]), near - 1, near)
    t = np.where(np.abs(t - kt[near]) <= 1e-6 * np.maximum(1.0, np.abs(t)), kt[near], t)
    if side == "right":
        k = np.searchsorted(kt, t, side="right") - 1
        inside = (k >= 0) & (k <= len(kt) - 2)
        u = np.zeros(t.shape)
    else:
        k = np.searchsorted(kt, t, side="left") - 1
        inside = (k >= 0) & (k <= len(kt) - 2)
        u = np.ones(t.shape)
    kk = np.clip(k, 0, len(kt) - 2)
    dt = kt[kk + 1] - kt[kk]
    u = np.where(inside, np.clip((t - kt[kk]) / dt, 0.0, 1.0), u)
    v0, v1 = values[kk], values[kk + 1]
    kinds = np.array(src.kinds)[kk]
    slope = (v1 - v0) / dt
    res = slope.copy()
    cubic = kinds == "cubic"
    if cubic.any():
        m = ip.catmull_rom_slopes(kt, values)
        h00, h10, h01, h11 = 6 * u * u - 6 * u, 3 * u * u - 4 * u + 1, -6 * u * u + 6 * u, 3 * u * u - 2 * u
        d = (h00 * v0 + h10 * dt * m[kk] + h01 * v1 + h11 * dt * m[kk + 1]) / dt
        res = np.where(cubic, d, res)
    bez = kinds == "bezier"
    if bez.any():
        if isinstance(tr, Track) and tr.in_slopes is not None and tr.out_slopes is not None:
            m_in, m_out = tr.in_slopes, tr.out_slopes
        else:
            m_in = m_out = ip.auto_clamped_tangents(kt, values)
        p1 = v0 + dt * m_out[kk] / 3.0
        p2 = v1 - dt * m_in[kk + 1] / 3.0
        a = 1.0 - u
        d = 3.0 * (a * a * (p1 - v0) + 2.0 * u * a * (p2 - p1) + u * u * (v1 - p2)) / dt
        res = np.where(bez, d, res)
    out[inside] = res[inside]
    return out


def _channel_kind(srcs: list[_Source], path: str, ball_track: bool) -> Interp | None:
    """The glTF interpolation that may reproduce a channel driven by ``srcs`` exactly, or None (resample).

    A candidate only: :func:`_reproduces` checks it inside every segment before it is used."""
    kinds = {k for s in srcs for k in s.kinds}
    if any(s.eased for s in srcs):
        return None
    if kinds <= {"step"}:
        return "STEP"
    if "step" in kinds:
        return None
    if path == "rotation":
        if ball_track and kinds <= {"slerp"}:
            return "LINEAR"
        if ball_track and kinds <= {"cubic"}:
            return "CUBICSPLINE"
        if len(srcs) == 1 and kinds <= {"linear"}:
            return "LINEAR"
        return None
    if kinds <= {"linear"}:
        return "LINEAR"
    if kinds <= {"linear", "cubic", "bezier"}:
        return "CUBICSPLINE"
    return None


class _Samples:
    """``clip.sample(t)``, once for each distinct ``t``: a clip's channels mostly share their key times, and sampling
    the whole clip for each channel was nine tenths of a save (CesiumMan: 105 calls, 3 distinct). The arrays are
    shared: read them, do not write them."""

    def __init__(self, clip: Clip) -> None:
        self.clip = clip
        self._memo: dict[tuple[str, tuple[int, ...], bytes], Array] = {}

    def __call__(self, t: Array) -> Array:
        key = (t.dtype.str, t.shape, t.tobytes())
        if key not in self._memo:
            self._memo[key] = self.clip.sample(t)
        return self._memo[key]


def _key_times(srcs: list[_Source], duration: float) -> Array:
    t = np.concatenate([s.times for s in srcs] + [np.array([0.0, duration])])
    return _float32_times(t[(t >= 0.0) & (t <= duration)])


def _split_long_turns(times: Array, angle: Array) -> Array:
    """Key times with extra keys inside each linear segment whose turn |Δθ| ≥ π/2 (slerp must stay short)."""
    out = [times[:1]]
    for k in range(len(times) - 1):
        n = int(math.floor(abs(angle[k + 1] - angle[k]) / (0.5 * math.pi))) + 1
        out.append(np.linspace(times[k], times[k + 1], n + 1)[1:])
    return _float32_times(np.concatenate(out))


def channels_from_clip(figure: Figure, clip: Clip, keys: Keys = "auto") -> list[GltfChannel]:
    """The glTF channels that play ``clip`` on ``figure`` (see the module docstring for which are exact).

    ``keys="linear"``: no CUBICSPLINE sampler (for importers that mishandle it: Blender 5.0 differs from the
    specification by up to 5.7 cm on cubic translation keys): a channel that would be cubic is resampled at the
    clip's frames with LINEAR keys (STEP and LINEAR keyed channels stay as they are)."""
    if keys not in KEYS:
        raise AnimkitError(unknown_name("keys", str(keys), KEYS))
    sources = _sources(clip)
    if clip.loop != "once":  # one pass over [0, duration]; glTF players do the looping
        clip = dataclasses.replace(clip, loop="once")
    assert clip.duration is not None
    duration = float(clip.duration)
    frames = _float32_times(clip.frame_times())
    sample = _Samples(clip)
    at_frames = sample(frames)
    rest = figure.rest_pose()
    out: list[GltfChannel] = []
    start = 0
    for node, arc in enumerate(figure.arcs()):
        dofs = list(range(start, start + arc.joint.dof_count))
        start += arc.joint.dof_count
        driven = dofs if sources is None else [i for i in dofs if i in sources]
        if not driven:
            continue
        kinds = {i: arc.joint.dofs[i - dofs[0]].kind for i in dofs}
        revolute = [i for i in driven if kinds[i] == "revolute"]
        prismatic = [i for i in driven if kinds[i] == "prismatic"]
        scaling = [i for i in driven if kinds[i] == "scale"]
        # translation moves with a revolute DOF iff some prismatic DOF comes after it in the joint
        moves_t = prismatic + [i for i in revolute if any(kinds[j] == "prismatic" for j in dofs if j > i)]
        rest_local = _local(arc, rest[dofs][None])[0]
        _check_trs(_local(arc, at_frames[:, dofs]), arc, clip)
        ball = (arc.joint.name in clip.rotation_tracks
                and set(revolute) <= {i for i in dofs if kinds[i] == "revolute"})
        for path, movers in (("translation", moves_t), ("rotation", revolute), ("scale", scaling)):
            if not movers:
                continue
            srcs = None if sources is None else [sources[i] for i in movers]
            kind = None if srcs is None else _channel_kind(srcs, path, ball and path == "rotation")
            if keys == "linear" and kind == "CUBICSPLINE":
                kind = None  # resampled at the frames, LINEAR
            if path == "translation" and kind != "STEP" and any(kinds[i] == "revolute" for i in movers):
                kind = None  # the translation turns with the angle: not a polynomial in t
            channel = None
            if kind is not None and srcs is not None:
                channel = _keyed_channel(arc, node, path, kind, sample, movers, srcs, dofs, rest, duration)
                if channel is not None and not _reproduces(channel, arc, sample, dofs):
                    channel = None
            if channel is None:
                local = _local(arc, at_frames[:, dofs])
                values = _path_values(local, path)
                if sources is None and np.allclose(values, _path_values(rest_local[None], path)[0], rtol=0,
                                                   atol=1e-12):
                    continue  # a mix that leaves this channel at rest
                channel = GltfChannel(node, path, "LINEAR", frames, values, False)  # type: ignore[arg-type]
            out.append(channel)
    return out


def _path_values(local: Array, path: str) -> Array:
    """Translation (F, 3), rotation quaternions (F, 4) with q_k · q_{k+1} ≥ 0, or scale (F, 3) of local matrices."""
    t, R, S = _decompose(local)
    if path == "rotation":
        return ip._same_hemisphere(quaternion_from_matrix(R))
    return t if path == "translation" else S


def _keyed_channel(arc: Arc, node: int, path: str, kind: Interp, sample: _Samples, movers: list[int],
                   srcs: list[_Source], dofs: list[int], rest: Array, duration: float) -> GltfChannel | None:
    """The channel at the sources' own key times (with tangents for CUBICSPLINE), or None if it cannot be."""
    clip = sample.clip
    times = _key_times(srcs, duration)
    if kind == "LINEAR" and path == "rotation" and arc.joint.name not in clip.rotation_tracks:
        times = _split_long_turns(times, sample(times)[:, movers[0]])
    values = _path_values(_local(arc, sample(times)[:, dofs]), path)
    tin = tout = None
    if kind == "CUBICSPLINE" and path == "rotation":
        rt = clip.rotation_tracks[arc.joint.name]
        assert rt.in_tangents is not None and rt.out_tangents is not None
        inside = (times >= rt.times[0]) & (times <= rt.times[-1])
        k = np.searchsorted(rt.times, times[inside])
        if not np.array_equal(rt.times[np.minimum(k, len(rt.times) - 1)], times[inside]):
            return None  # the duration cuts a segment: a normalised cubic cut in two is not one
        # rotation = P · R(q(t)): P is constant, so q_P ⊗ normalise(h(t)) = normalise(q_P ⊗ h(t))
        q_track = rt.quaternions[k]
        q_p = quaternion_multiply(values[inside][0], quaternion_conjugate(q_track[0]))
        mapped = quaternion_multiply(q_p, q_track)
        values = values.copy()
        values[inside] = mapped
        tin, tout = np.zeros((len(times), 4)), np.zeros((len(times), 4))
        tin[inside] = quaternion_multiply(q_p, rt.in_tangents[k])
        tout[inside] = quaternion_multiply(q_p, rt.out_tangents[k])
        first, last = np.flatnonzero(inside)[[0, -1]]
        if first > 0:
            tin[first] = 0.0  # the added hold before the first key
        if last < len(times) - 1:
            tout[last] = 0.0
    elif kind == "CUBICSPLINE":
        base = rest[dofs]
        p0 = _path_values(_local(arc, base[None]), path)[0]
        tin, tout = np.zeros((len(times), 3)), np.zeros((len(times), 3))
        for i, src in zip(movers, srcs, strict=True):
            e = base.copy()
            e[i - dofs[0]] += 1.0
            c = _path_values(_local(arc, e[None]), path)[0] - p0  # ∂value/∂θ_i where it is affine in θ_i
            tin += _derivative(src, times, "left")[:, None] * c
            tout += _derivative(src, times, "right")[:, None] * c
    return GltfChannel(node, path, kind, times, values, True, tin, tout)  # type: ignore[arg-type]


def gltf_sample(channel: GltfChannel, t: Array) -> Array:
    """The channel at times ``t`` as glTF interpolates it (specification, Appendix C), by the keyframes
    interpolants: STEP holds, LINEAR is lerp (slerp for rotations, the short way), CUBICSPLINE is the cubic
    Hermite of the in/out tangents (normalised for rotations)."""
    times, v = channel.times, channel.values
    if channel.interpolation == "STEP":
        return ip.step(times, v, t)
    if channel.interpolation == "LINEAR":
        return ip.slerp(times, v, t) if channel.path == "rotation" else ip.linear(times, v, t)
    out = ip.bezier(times, v, t, channel.in_tangents, channel.out_tangents)
    if channel.path == "rotation":
        out = out / np.linalg.norm(out, axis=-1, keepdims=True)
    return out


def _reproduces(channel: GltfChannel, arc: Arc, sample: _Samples, dofs: list[int]) -> bool:
    """True when glTF's interpolation of the channel equals the clip at ¼, ½ and ¾ of every segment (1e-9)."""
    k = channel.times
    if len(k) < 2:
        return True
    t = (k[:-1, None] + np.array([0.25, 0.5, 0.75]) * np.diff(k)[:, None]).ravel()
    want = _path_values(_local(arc, sample(t)[:, dofs]), channel.path)
    got = gltf_sample(channel, t)
    if channel.path == "rotation":
        return bool(np.abs(matrix_from_quaternion(got) - matrix_from_quaternion(want)).max() <= 1e-9)
    return bool(np.abs(got - want).max() <= 1e-9 * max(1.0, float(np.abs(want).max())))


def _check_trs(local: Array, arc: Arc, clip: Clip) -> None:
    """AnimkitError when some frame's L·A has shear: no glTF node's T·R·S can hold it (a non-uniform scale in L
    followed by a joint that turns)."""
    _, R, _ = _decompose(local)
    off = np.abs(R @ np.swapaxes(R, -1, -2) - np.eye(3)).max(axis=(-2, -1))
    if off.max() > 1e-9:
        raise AnimkitError(f"node {arc.child.name!r}: clip {clip.name!r} turns its joint after a non-uniform scale in "
                           "its arc's L, which shears the node; a glTF node holds only T·R·S (move the scale to the "
                           "node's data or make it uniform)")


def _decompose(M: Array) -> tuple[Array, Array, Array]:
    """(translation (F, 3), rotation (F, 3, 3), scale (F, 3)) with M = T·R·S, for affine M without shear;
    a mirroring M (det < 0) gets a negative x scale, so R stays a rotation."""
    S = np.linalg.norm(M[..., :3, :3], axis=-2)
    R = M[..., :3, :3] / S[..., None, :]
    flip = np.linalg.det(R) < 0
    S[..., 0] = np.where(flip, -S[..., 0], S[..., 0])
    R[..., :, 0] = np.where(flip[..., None], -R[..., :, 0], R[..., :, 0])
    return M[..., :3, 3].copy(), R, S
