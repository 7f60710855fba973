"""Writing glTF 2.0 (``.glb``, ``.gltf``): the figure as nodes, its drawn geometry skinned rigidly to its
bones, and clips as animations.

Nodes. Every figure node becomes one glTF node (names kept, the figure's traversal order). Its local
transform is the arc's ``L · A(θ)``: rigid for every joint kind, whatever its DOF axes, so one node's
translation and rotation hold it exactly, M_child = M_parent · L · A(θ). The node's static TRS is the
rest pose. A Z-up scene (``scene.up == "z"``) is wrapped in one extra root node that turns +z onto
glTF's +y (a rotation of −90° about x), so viewers show it upright.

Mesh. The figure's drawn triangles (:func:`~animkit.drawn.figure_mesh`: the node data, or capsule
bones for a bare skeleton) become ONE mesh, flat-shaded, each vertex weighted 1 to the node that draws
it. The skin's joints are all figure nodes, its inverse bind matrices the inverse rest world matrices,
so ``W_j(t) · IBM_j · v_bind = M_j(t) · v_node`` is exactly what animkit draws. The mesh node sits at the
scene root, untransformed (the validator's NODE_SKINNED_MESH_NON_ROOT does not arise).

Animations (one per clip, by its name). Per arc, a translation and a rotation channel, each with its
own sampler. A channel keeps the clip's key times when glTF's interpolation reproduces the clip
between keys exactly:

* STEP, when every DOF that moves the channel has step keys;
* LINEAR translation, when it is affine in linear-keyed prismatic DOFs (no revolute DOF that moves
  before a prismatic one in the joint);
* CUBICSPLINE translation for Catmull-Rom / Bézier / linear prismatic keys (all are cubic Hermite
  segments; the tangents are the segments' own slopes at the keys, in and out);
* LINEAR rotation for a hinge-like channel (one revolute DOF, linear keys: slerp of
  q_L q_C₁ q_a(θ) q_C₂ between two keys is the rotation at the linearly interpolated angle while
  |Δθ| < π, so longer segments are split) and for a ball joint's slerp :class:`RotationTrack`;
* CUBICSPLINE rotation for a ball joint's cubic (glTF-style) RotationTrack: P · R(q(t)) with P constant
  is normalise(q_P ⊗ h(t)), so keys and tangents are mapped by q_P;
* LINEAR / CUBICSPLINE scale for linear / Hermite keyed scale DOFs.

Every such candidate is then checked: glTF's interpolation of the keys (:func:`gltf_sample`) must equal
the clip at ¼, ½ and ¾ of every segment (to 1e-9), or the channel is resampled.

Anything else (eased segments, squad, several revolute DOFs keyed as Euler angles — BVH's frames —
blends and crossfades) is sampled at the clip's frame times (:meth:`Clip.frame_times`), LINEAR, and a
warning names those channels. Times are stored as float32, as glTF requires.

An animation is one pass of its clip over [0, duration], sampled with the clip's loop mode set to
"once" (a looping clip at t = duration shows its first pose again; glTF players do their own
looping); the loop mode is kept in the animation's ``extras``.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

import numpy as np
from numpy.typing import NDArray

from ..drawn import figure_mesh
from ..errors import AnimkitError, unknown_name
from ..keyframes import interpolate as ip
from ..keyframes.track import DenseTrackSet, Track
from ..transforms import matrix_from_quaternion, quaternion_conjugate, quaternion_from_matrix, quaternion_multiply
from .gltf_bytes import ARRAY_BUFFER, ELEMENT_ARRAY_BUFFER, BinaryBuilder, glb_bytes

if TYPE_CHECKING:
    from ..drawn import FigureMesh
    from ..figure import Figure
    from ..graph import Arc
    from ..keyframes import Clip
    from ..scene import Scene

__all__ = ["BufferMode", "Keys", "KEYS", "gltf_files", "gltf_document", "GltfChannel", "channels_from_clip",
           "gltf_sample"]

Array = NDArray[np.float64]
BufferMode = Literal["external", "embedded"]
GENERATOR: Final = "animkit"

# --- channels: one clip → exact or resampled glTF channels ----------------------------------------------

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
    at_frames = clip.sample(frames)
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
                channel = _keyed_channel(arc, node, path, kind, clip, movers, srcs, dofs, rest, duration)
                if channel is not None and not _reproduces(channel, arc, clip, dofs):
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


def _keyed_channel(arc: Arc, node: int, path: str, kind: Interp, clip: Clip, movers: list[int],
                   srcs: list[_Source], dofs: list[int], rest: Array, duration: float) -> GltfChannel | None:
    """The channel at the sources' own key times (with tangents for CUBICSPLINE), or None if it cannot be."""
    times = _key_times(srcs, duration)
    if kind == "LINEAR" and path == "rotation" and arc.joint.name not in clip.rotation_tracks:
        times = _split_long_turns(times, clip.sample(times)[:, movers[0]])
    values = _path_values(_local(arc, clip.sample(times)[:, dofs]), path)
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


def _reproduces(channel: GltfChannel, arc: Arc, clip: Clip, dofs: list[int]) -> bool:
    """True when glTF's interpolation of the channel equals the clip at ¼, ½ and ¾ of every segment (1e-9)."""
    k = channel.times
    if len(k) < 2:
        return True
    t = (k[:-1, None] + np.array([0.25, 0.5, 0.75]) * np.diff(k)[:, None]).ravel()
    want = _path_values(_local(arc, clip.sample(t)[:, dofs]), channel.path)
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


# --- the document ---------------------------------------------------------------------------------------

Z_UP_TO_Y_UP: Final = np.array([[1.0, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]])  # R_x(−90°)


def _trs(M: Array) -> dict[str, list[float]]:
    """A node's translation/rotation (x, y, z, w)/scale from an affine matrix without shear (defaults left out)."""
    t, R, S = (a[0] for a in _decompose(M[None]))
    if not np.allclose(R @ R.T, np.eye(3), rtol=0, atol=1e-9):  # shear: no TRS holds it, glTF's matrix does
        return {"matrix": [float(x) for x in M.T.ravel()]}
    out: dict[str, list[float]] = {}
    if np.any(t != 0):
        out["translation"] = [float(x) for x in t]
    q = quaternion_from_matrix(R)
    if not np.allclose(q, (1.0, 0.0, 0.0, 0.0), rtol=0, atol=1e-15):
        out["rotation"] = [float(q[1]), float(q[2]), float(q[3]), float(q[0])]
    if not np.allclose(S, 1.0, rtol=0, atol=1e-12):
        out["scale"] = [float(x) for x in S]
    return out


def _linear_from_srgb(c: Array) -> Array:
    """sRGB display colour → linear (glTF's COLOR_0 and base colour factors are linear)."""
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _flat_mesh(figure: Figure, bind: Array, builder: BinaryBuilder, fm: FigureMesh | None = None
               ) -> dict[str, Any] | None:
    """The figure's drawn triangles (``fm``, default :func:`figure_mesh`), flat-shaded, in bind (rest world) space,
    one joint per vertex."""
    fm = fm if fm is not None else figure_mesh(figure)
    if fm.triangle_count == 0:
        return None
    tri = fm.faces
    owner = fm.owner[tri[:, 0]]
    local = fm.vertices[tri]  # (T, 3, 3) in the owner's frame
    W = bind[owner]
    pos = np.einsum("tij,tvj->tvi", W[:, :3, :3], local) + W[:, None, :3, 3]
    n = np.cross(pos[:, 1] - pos[:, 0], pos[:, 2] - pos[:, 0])
    area = np.linalg.norm(n, axis=1)
    keep = area > 1e-12 * max(float(np.abs(pos).max()), 1.0) ** 2
    pos, n, area, owner = pos[keep], n[keep], area[keep], owner[keep]
    colors = fm.face_colors[keep]
    T = len(pos)
    positions = pos.reshape(-1, 3).astype(np.float32)
    normals = np.repeat(n / area[:, None], 3, axis=0).astype(np.float32)
    color = np.repeat(_linear_from_srgb(colors), 3, axis=0).astype(np.float32)
    jtype = np.uint8 if len(bind) < 256 else np.uint16
    joints = np.zeros((3 * T, 4), dtype=jtype)
    joints[:, 0] = np.repeat(owner, 3)
    weights = np.zeros((3 * T, 4), dtype=np.float32)
    weights[:, 0] = 1.0
    attrs = {
        "POSITION": builder.accessor(positions, "VEC3", target=ARRAY_BUFFER, bounds=True),
        "NORMAL": builder.accessor(normals, "VEC3", target=ARRAY_BUFFER),
        "COLOR_0": builder.accessor(color, "VEC3", target=ARRAY_BUFFER),
        "JOINTS_0": builder.accessor(joints, "VEC4", target=ARRAY_BUFFER),
        "WEIGHTS_0": builder.accessor(weights, "VEC4", target=ARRAY_BUFFER),
    }
    return {"name": f"{figure.name}_drawn", "primitives": [{"attributes": attrs, "material": 0, "mode": 4}]}


def _png(texture: NDArray[np.uint8]) -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(texture), "RGBA").save(out, format="PNG")
    return out.getvalue()


def _padded(a: NDArray[Any], width: int) -> NDArray[Any]:
    """(V, K) → (V, width) with zeros after the K columns."""
    out = np.zeros((a.shape[0], width), dtype=a.dtype)
    out[:, : a.shape[1]] = a
    return out


def _mesh_carriers(scene: Scene, bind: Array) -> set[int]:
    """Nodes that only carry a skinned mesh: a leaf below the figure's root with a fixed joint, no drawn data, no
    skin's joint, carrying one skinned mesh and nothing else, on a path of fixed joints, at the identity in the
    world (``bind``: the written nodes' rest world matrices). The writer moves each to the scene's root with the
    mesh on it, so the mesh keeps its node's name and the node its world matrix. (One under a turned node stays
    where it is: at the root it would need a local transform, which the validator flags on a skinned mesh's node.)"""
    figure = scene.figure
    joints = {j for m in scene.meshes if m.skin is not None for j in m.skin.joints}
    joints |= {m.skin.skeleton for m in scene.meshes if m.skin is not None and m.skin.skeleton is not None}
    count: dict[int, int] = {}
    for m in scene.meshes:
        count[m.node_index] = count.get(m.node_index, 0) + 1
    out = set()
    for m in scene.meshes:
        arc = figure.node(m.node).parent_arc
        if (m.skin is not None and arc is not None and arc.parent is not None and count[m.node_index] == 1
                and arc.child.first_arc is None and arc.child.data is None and m.node not in joints
                and not any(a.joint.dofs for a in figure.path_to(m.node))
                and np.allclose(bind[m.node_index], np.eye(4), rtol=0, atol=1e-9)):
            out.add(m.node_index)
    return out


def _character_meshes(scene: Scene, builder: BinaryBuilder, doc: dict[str, Any], nodes: list[dict[str, Any]],
                      roots: list[int], images: list[bytes], bind: Array) -> None:
    """A loaded character's own meshes: positions, normals, UVs, base colour and texture, skins with their
    inverse bind matrices and up to 8 influences (JOINTS_0/1, WEIGHTS_0/1). Skinned meshes hang on new
    root nodes (untransformed); rigid ones on their node."""
    index = {n: i for i, n in enumerate(scene.figure.node_names)}
    meshes: list[dict[str, Any]] = []
    materials: list[dict[str, Any]] = []
    skins: list[dict[str, Any]] = []
    textures: list[dict[str, Any]] = []
    skin_of: dict[int, int] = {}
    taken = set(scene.figure.node_names)
    carriers = _mesh_carriers(scene, bind)
    for m in scene.meshes:
        V = m.vertex_count
        attrs = {"POSITION": builder.accessor(m.rest_positions.astype(np.float32), "VEC3", target=ARRAY_BUFFER,
                                              bounds=True)}
        n = m.rest_normals / np.maximum(np.linalg.norm(m.rest_normals, axis=1, keepdims=True), 1e-300)
        attrs["NORMAL"] = builder.accessor(n.astype(np.float32), "VEC3", target=ARRAY_BUFFER)
        if m.uvs is not None:
            attrs["TEXCOORD_0"] = builder.accessor(m.uvs.astype(np.float32), "VEC2", target=ARRAY_BUFFER)
        material: dict[str, Any] = {"name": f"{m.name}_material", "pbrMetallicRoughness": {
            "baseColorFactor": [float(c) for c in m.base_color], "metallicFactor": float(m.metallic),
            "roughnessFactor": float(m.roughness)}}
        if m.texture is not None and m.uvs is not None:
            images.append(_png(m.texture))
            textures.append({"source": len(images) - 1, "sampler": 0})
            material["pbrMetallicRoughness"]["baseColorTexture"] = {"index": len(textures) - 1}
        if m.skin is not None and m.joints is not None and m.weights is not None:
            K = 4 if m.joints.shape[1] <= 4 else 8
            jt = np.uint8 if len(m.skin.joints) < 256 else np.uint16
            J = _padded(m.joints.astype(jt), K)
            W = _padded(m.weights.astype(np.float32), K)
            J[W == 0] = 0
            for set_ in range(K // 4):
                cols = slice(4 * set_, 4 * set_ + 4)
                attrs[f"JOINTS_{set_}"] = builder.accessor(J[:, cols], "VEC4", target=ARRAY_BUFFER)
                attrs[f"WEIGHTS_{set_}"] = builder.accessor(W[:, cols], "VEC4", target=ARRAY_BUFFER)
            if id(m.skin) not in skin_of:
                skin: dict[str, Any] = {"name": m.skin.name, "joints": [index[j] for j in m.skin.joints],
                                        "inverseBindMatrices": builder.accessor(
                                            m.skin.inverse_bind.astype(np.float32), "MAT4")}
                if m.skin.skeleton is not None:
                    skin["skeleton"] = index[m.skin.skeleton]
                skins.append(skin)
                skin_of[id(m.skin)] = len(skins) - 1
        itype = np.uint16 if V < 65535 else np.uint32
        prim = {"attributes": attrs, "indices": builder.accessor(m.faces.reshape(-1, 1).astype(itype), "SCALAR",
                                                                 target=ELEMENT_ARRAY_BUFFER),
                "material": len(materials), "mode": 4}
        materials.append(material)
        meshes.append({"name": m.name, "primitives": [prim]})
        if m.skin is not None and m.node_index in carriers:  # its own node, moved to the root (its name kept)
            carrier = nodes[m.node_index]
            for key in ("translation", "rotation", "scale", "matrix"):
                carrier.pop(key, None)
            carrier.update({"mesh": len(meshes) - 1, "skin": skin_of[id(m.skin)]})
            for other in nodes:
                if m.node_index in other.get("children", ()):
                    other["children"].remove(m.node_index)
                    if not other["children"]:
                        del other["children"]
            roots.append(m.node_index)
            carriers.discard(m.node_index)
        elif m.skin is not None:
            name = m.name if m.name not in taken else f"{m.name}_skinned"
            taken.add(name)
            nodes.append({"name": name, "mesh": len(meshes) - 1, "skin": skin_of[id(m.skin)]})
            roots.append(len(nodes) - 1)
        elif "mesh" not in nodes[m.node_index]:
            nodes[m.node_index]["mesh"] = len(meshes) - 1
        else:
            nodes.append({"name": f"{m.name}_mesh", "mesh": len(meshes) - 1})
            nodes[m.node_index].setdefault("children", []).append(len(nodes) - 1)
    doc["meshes"], doc["materials"] = meshes, materials
    if skins:
        doc["skins"] = skins
    if textures:
        doc["textures"] = textures
        doc["samplers"] = [{"magFilter": 9729, "minFilter": 9987, "wrapS": 10497, "wrapT": 10497}]


def _animation(figure: Figure, clip: Clip, builder: BinaryBuilder, inputs: dict[bytes, int],
               source: str, keys: Keys = "auto") -> dict[str, Any]:
    channels = channels_from_clip(figure, clip, keys)
    names = figure.node_names
    samplers: list[dict[str, Any]] = []
    targets: list[dict[str, Any]] = []
    for ch in channels:
        t32 = _stored_times(ch.times)
        key = t32.tobytes()
        if key not in inputs:
            inputs[key] = builder.accessor(t32[:, None], "SCALAR", bounds=True)
        v = ch.values
        if ch.interpolation == "CUBICSPLINE":  # per key: in-tangent, value, out-tangent
            assert ch.in_tangents is not None and ch.out_tangents is not None
            v = np.stack([ch.in_tangents, v, ch.out_tangents], axis=1).reshape(-1, v.shape[1])
        if ch.path == "rotation":
            v = v[:, [1, 2, 3, 0]]  # glTF stores quaternions (x, y, z, w)
        kind = "VEC4" if ch.path == "rotation" else "VEC3"
        output = builder.accessor(v.astype(np.float32), kind)
        samplers.append({"input": inputs[key], "output": output, "interpolation": ch.interpolation})
        targets.append({"sampler": len(samplers) - 1, "target": {"node": ch.node, "path": ch.path}})
    loose = [f"{names[c.node]}.{c.path}" for c in channels if not c.exact]
    if loose and keys == "auto":  # keys="linear" asked for frames
        why = "it is a mix of clips" if clip.mix is not None else "glTF has no exact equivalent of its interpolation"
        shown = ", ".join(loose[:6]) + (f", … ({len(loose)} in all)" if len(loose) > 6 else "")
        warnings.warn(f"{source}: clip {clip.name!r}: {len(loose)} channel(s) sampled at the clip's "
                      f"{clip.fps:g} fps frames ({why}): {shown}", stacklevel=4)
    anim: dict[str, Any] = {"name": clip.name, "channels": targets, "samplers": samplers}
    if clip.loop != "once":
        anim["extras"] = {"loop": clip.loop}
    return anim


def gltf_document(scene: Scene, clips: Sequence[Clip], source: str = "glTF", keys: Keys = "auto", *,
                  drawn: FigureMesh | None = None) -> tuple[dict[str, Any], bytes]:
    """The glTF JSON document and its one binary buffer for ``scene``'s figure and ``clips`` (``keys``: see
    :func:`channels_from_clip`); ``drawn``: the triangles drawn for a figure without meshes (default
    :func:`figure_mesh`; the HTML viewer passes the renderer's look, so the page shows what the GIFs show)."""
    if keys not in KEYS:
        raise AnimkitError(unknown_name("keys", str(keys), KEYS))
    figure = scene.figure
    builder = BinaryBuilder()
    arcs = figure.arcs()
    rest = figure.rest_pose()
    nodes: list[dict[str, Any]] = []
    start = 0
    position = {n: k for k, n in enumerate(figure.node_names)}
    for arc in arcs:
        k = arc.joint.dof_count
        node: dict[str, Any] = {"name": arc.child.name}
        node.update(_trs(_local(arc, rest[start:start + k][None])[0]))
        start += k
        children = [position[a.child.name] for a in arc.child.arcs()]
        if children:
            node["children"] = children
        nodes.append(node)
    roots = [0]
    wrap = np.eye(4)
    if scene.up == "z":
        wrap = Z_UP_TO_Y_UP
        nodes.append({"name": f"{figure.name}_z_up", "children": [0], **_trs(wrap)})
        roots = [len(nodes) - 1]
    bind = wrap @ figure.world_batch(rest[None])[0]
    doc: dict[str, Any] = {"asset": {"version": "2.0", "generator": GENERATOR}, "scene": 0}
    images: list[bytes] = []
    if scene.meshes:
        _character_meshes(scene, builder, doc, nodes, roots, images, bind)
    mesh = None if scene.meshes else _flat_mesh(figure, bind, builder, drawn)
    if mesh is not None:
        ibm = np.linalg.inv(bind).astype(np.float32)
        ibm[:, 3] = (0.0, 0.0, 0.0, 1.0)
        doc["skins"] = [{"name": f"{figure.name}_skin", "joints": list(range(len(arcs))), "skeleton": roots[0],
                         "inverseBindMatrices": builder.accessor(ibm, "MAT4")}]
        doc["meshes"] = [mesh]
        doc["materials"] = [{"name": "animkit_drawn", "pbrMetallicRoughness": {
            "baseColorFactor": [1.0, 1.0, 1.0, 1.0], "metallicFactor": 0.0, "roughnessFactor": 0.8}}]
        nodes.append({"name": f"{figure.name}_mesh", "mesh": 0, "skin": 0})
        roots.append(len(nodes) - 1)
    doc["nodes"] = nodes
    doc["scenes"] = [{"name": figure.name, "nodes": roots}]
    inputs: dict[bytes, int] = {}
    animations = [_animation(figure, c, builder, inputs, source, keys) for c in clips]
    if animations:
        doc["animations"] = animations
    if images:
        doc["images"] = [{"bufferView": builder.view(png), "mimeType": "image/png"} for png in images]
    doc["accessors"] = builder.accessors
    doc["bufferViews"] = builder.buffer_views
    data = builder.data()
    doc["buffers"] = [{"byteLength": len(data)}]
    return doc, data


def gltf_files(path: Path, scene: Scene, clips: Sequence[Clip], *, buffers: BufferMode = "external",
               keys: Keys = "auto", bin_name: str | None = None) -> list[tuple[Path, bytes]]:
    """The files that make ``path`` (``.glb``: one; ``.gltf``: the JSON and, with ``buffers="external"``, a
    ``.bin`` beside it, ``bin_name`` or named after it), as (path, bytes), dependencies first; ``keys``: see
    :func:`channels_from_clip`. ``clips``: the animations to write, or (none given) the scene's."""
    clips = list(clips) or list(scene.clips.values())
    if buffers not in ("external", "embedded"):
        raise AnimkitError(f"buffers={buffers!r}: expected 'external' or 'embedded'")
    doc, data = gltf_document(scene, clips, str(path), keys)
    if path.suffix.lower() == ".glb":
        return [(path, glb_bytes(doc, data))]
    files: list[tuple[Path, bytes]] = []
    if buffers == "external":
        bin_path = path.parent / bin_name if bin_name else path.with_suffix(".bin")
        doc["buffers"][0]["uri"] = bin_path.name
        files.append((bin_path, data))
    else:
        doc["buffers"][0]["uri"] = "data:application/octet-stream;base64," + base64.b64encode(data).decode("ascii")
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    files.append((path, text.encode("utf-8")))
    return files
