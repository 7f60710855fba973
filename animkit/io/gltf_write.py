"""Writing glTF 2.0 (``.glb``, ``.gltf``): the figure as nodes, its drawn geometry skinned rigidly to its
bones, and clips as animations.

Nodes. Every figure node becomes one glTF node (names kept, the figure's traversal order). Its local
transform is the arc's ``L · A(θ)``: rigid for every joint kind, whatever its DOF axes, so one node's
translation and rotation hold it exactly, M_child = M_parent · L · A(θ). The node's static TRS is the
rest pose. A Z-up scene (``scene.up == "z"``) is wrapped in one extra root node that turns +z onto
glTF's +y (a rotation of −90° about x), so viewers show it upright.

Mesh. The figure's drawn triangles (:func:`~animkit.geometry.figure_mesh`: the node data, or capsule
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
  |Δθ| < π, so longer segments are split) and for a ball joint's slerp :class:`RotationTrack`.

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
import struct
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from ..errors import AnimkitError
from ..geometry import figure_mesh
from ..keyframes import interpolate as ip
from ..keyframes.track import DenseTrackSet, Track
from ..transforms import quaternion_from_matrix

if TYPE_CHECKING:
    from ..figure import Figure
    from ..graph import Arc
    from ..keyframes import Clip
    from ..scene import Scene

__all__ = ["BufferMode", "gltf_files", "glb_bytes", "GltfChannel", "channels_from_clip"]

Array = NDArray[np.float64]
BufferMode = Literal["external", "embedded"]
GENERATOR: Final = "animkit"

# --- container encoding: accessors, buffer views, the GLB container -------------------------------------

FLOAT: Final = 5126
UNSIGNED_BYTE: Final = 5121
UNSIGNED_SHORT: Final = 5123
UNSIGNED_INT: Final = 5125
ARRAY_BUFFER: Final = 34962
ELEMENT_ARRAY_BUFFER: Final = 34963
_COMPONENT: Final = {np.dtype(np.float32): FLOAT, np.dtype(np.uint8): UNSIGNED_BYTE,
                     np.dtype(np.uint16): UNSIGNED_SHORT, np.dtype(np.uint32): UNSIGNED_INT}
_TYPE: Final = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4", 16: "MAT4"}
GLB_MAGIC: Final = 0x46546C67  # "glTF"
GLB_JSON: Final = 0x4E4F534A  # "JSON"
GLB_BIN: Final = 0x004E4942  # "BIN\0"


class BinaryBuilder:
    """One binary buffer under construction: each array becomes a 4-byte-aligned buffer view and an accessor."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._length = 0
        self.buffer_views: list[dict[str, Any]] = []
        self.accessors: list[dict[str, Any]] = []

    def accessor(self, array: NDArray[Any], kind: str, *, target: int | None = None, bounds: bool = False,
                 name: str | None = None) -> int:
        """Append ``array`` (count, components) or (count, 4, 4) as one accessor of ``kind``; its index.

        Matrices are written column-major, as glTF stores MAT4. ``bounds`` writes min/max (required for
        POSITION and animation inputs).
        """
        a = np.asarray(array)
        if a.dtype not in _COMPONENT:
            raise AnimkitError(f"glTF accessor {name or ''}: unsupported dtype {a.dtype}")
        count = a.shape[0]
        flat = np.swapaxes(a, -1, -2).reshape(count, -1) if kind == "MAT4" else a.reshape(count, -1)
        data = np.ascontiguousarray(flat).astype(flat.dtype.newbyteorder("<"), copy=False).tobytes()
        view: dict[str, Any] = {"buffer": 0, "byteOffset": self._length, "byteLength": len(data)}
        if target is not None:
            view["target"] = target
        self._parts.append(data)
        self._length += len(data)
        pad = (-self._length) % 4
        if pad:
            self._parts.append(b"\0" * pad)
            self._length += pad
        self.buffer_views.append(view)
        acc: dict[str, Any] = {"bufferView": len(self.buffer_views) - 1, "componentType": _COMPONENT[a.dtype],
                               "count": int(count), "type": kind}
        if bounds:
            acc["min"] = [_number(x) for x in flat.min(axis=0)]
            acc["max"] = [_number(x) for x in flat.max(axis=0)]
        if name:
            acc["name"] = name
        self.accessors.append(acc)
        return len(self.accessors) - 1

    def data(self) -> bytes:
        return b"".join(self._parts)


def _number(x: Any) -> float | int:
    return int(x) if isinstance(x, (np.integer, int)) else float(x)


def glb_bytes(document: dict[str, Any], binary: bytes) -> bytes:
    """A GLB: 12-byte header (magic, version 2, length), the JSON chunk (space-padded to 4 bytes), the BIN
    chunk (zero-padded), each chunk as (length, type, data)."""
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((-len(text)) % 4)
    out = [struct.pack("<II", len(text), GLB_JSON), text]
    if binary:
        binary = binary + b"\0" * ((-len(binary)) % 4)
        out += [struct.pack("<II", len(binary), GLB_BIN), binary]
    body = b"".join(out)
    return struct.pack("<III", GLB_MAGIC, 2, 12 + len(body)) + body


# --- channels: one clip → exact or resampled glTF channels ----------------------------------------------

Interp = Literal["LINEAR", "STEP", "CUBICSPLINE"]


@dataclass(frozen=True)
class GltfChannel:
    """One animation channel: ``node`` (figure node index), ``path``, key ``times`` (K,), ``values``
    (K, 3) translation or (K, 4) rotation (w, x, y, z); for CUBICSPLINE also ``in_tangents`` and
    ``out_tangents`` (K, 3), dvalue/dt. ``exact`` says whether glTF's interpolation of these keys
    reproduces the clip at every time (False: sampled at the clip's frames)."""

    node: int
    path: Literal["translation", "rotation"]
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


def _channel_kind(srcs: list[_Source], rotation: bool, ball_track: bool) -> Interp | None:
    """The exact glTF interpolation for a channel driven by ``srcs``, or None (resample)."""
    kinds = {k for s in srcs for k in s.kinds}
    if any(s.eased for s in srcs):
        return None
    if kinds <= {"step"}:
        return "STEP"
    if "step" in kinds:
        return None
    if rotation:
        if ball_track and kinds <= {"slerp"}:
            return "LINEAR"
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


def channels_from_clip(figure: Figure, clip: Clip) -> list[GltfChannel]:
    """The glTF channels that play ``clip`` on ``figure`` (see the module docstring for which are exact)."""
    sources = _sources(clip)
    if clip.loop != "once":  # one pass over [0, duration]; glTF players do the looping
        clip = dataclasses.replace(clip, loop="once")
    assert clip.duration is not None
    duration = float(clip.duration)
    frames = _float32_times(clip.frame_times())
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
        # translation moves with a revolute DOF iff some prismatic DOF comes after it in the joint
        moves_t = prismatic + [i for i in revolute if any(kinds[j] == "prismatic" for j in dofs if j > i)]
        rest_local = _local(arc, rest[dofs][None])[0]
        ball = (arc.joint.name in clip.rotation_tracks
                and set(revolute) <= {i for i in dofs if kinds[i] == "revolute"})
        for path, movers in (("translation", moves_t), ("rotation", revolute)):
            if not movers:
                continue
            rotation = path == "rotation"
            srcs = None if sources is None else [sources[i] for i in movers]
            kind = None if srcs is None else _channel_kind(srcs, rotation, ball and rotation)
            if not rotation and kind != "STEP" and any(kinds[i] == "revolute" for i in movers):
                kind = None  # the translation turns with the angle: not a polynomial in t
            times = frames if kind is None or srcs is None else _key_times(srcs, duration)
            if kind == "LINEAR" and rotation and not ball:
                angle = clip.sample(times)[:, movers[0]]
                times = _split_long_turns(times, angle)
            local = _local(arc, clip.sample(times)[:, dofs])
            if rotation:
                values = _continuous(quaternion_from_matrix(local))
                same = np.allclose(local[:, :3, :3], rest_local[:3, :3], rtol=0, atol=1e-12)
            else:
                values = local[:, :3, 3].copy()
                same = np.allclose(values, rest_local[:3, 3], rtol=0, atol=1e-12)
            if same and sources is None:
                continue  # a mix that leaves this channel at rest
            tin = tout = None
            if kind == "CUBICSPLINE" and srcs is not None:
                base = rest[dofs]
                p0 = _local(arc, base[None])[0, :3, 3]
                tin, tout = np.zeros((len(times), 3)), np.zeros((len(times), 3))
                for i, s in zip(movers, srcs, strict=True):
                    e = base.copy()
                    e[i - dofs[0]] += 1.0
                    c = _local(arc, e[None])[0, :3, 3] - p0  # ∂p/∂θ_i: p is affine in θ_i
                    tin += _derivative(s, times, "left")[:, None] * c
                    tout += _derivative(s, times, "right")[:, None] * c
            out.append(GltfChannel(node, path, kind or "LINEAR", times, values,  # type: ignore[arg-type]
                                   kind is not None, tin, tout))
    return out


def _continuous(q: Array) -> Array:
    """Flip quaternion signs along the keys so that consecutive keys have q_k · q_{k+1} ≥ 0 (same rotations)."""
    if len(q) < 2:
        return q
    dots = np.sum(q[:-1] * q[1:], axis=-1)
    signs = np.concatenate([[1.0], np.cumprod(np.where(dots < 0, -1.0, 1.0))])
    return q * signs[:, None]


# --- the document ---------------------------------------------------------------------------------------

Z_UP_TO_Y_UP: Final = np.array([[1.0, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]])  # R_x(−90°)


def _trs(M: Array) -> dict[str, list[float]]:
    """A node's translation/rotation (x, y, z, w)/scale from an affine matrix without shear."""
    out: dict[str, list[float]] = {}
    p = M[:3, 3]
    S = np.linalg.norm(M[:3, :3], axis=0)
    R = M[:3, :3] / S
    if np.any(p != 0):
        out["translation"] = [float(x) for x in p]
    q = quaternion_from_matrix(R)
    if not np.allclose(q, (1.0, 0.0, 0.0, 0.0), rtol=0, atol=1e-15):
        out["rotation"] = [float(q[1]), float(q[2]), float(q[3]), float(q[0])]
    if not np.allclose(S, 1.0, rtol=0, atol=1e-12):
        out["scale"] = [float(s) for s in S]
    return out


def _linear_from_srgb(c: Array) -> Array:
    """sRGB display colour → linear (glTF's COLOR_0 and base colour factors are linear)."""
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _flat_mesh(figure: Figure, bind: Array, builder: BinaryBuilder) -> dict[str, Any] | None:
    """The figure's drawn triangles, flat-shaded, in bind (rest world) space, one joint per vertex."""
    fm = figure_mesh(figure)
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


def _animation(figure: Figure, clip: Clip, builder: BinaryBuilder, inputs: dict[bytes, int],
               source: str) -> dict[str, Any]:
    channels = channels_from_clip(figure, clip)
    names = figure.node_names
    samplers: list[dict[str, Any]] = []
    targets: list[dict[str, Any]] = []
    for ch in channels:
        t32 = _stored_times(ch.times)
        key = t32.tobytes()
        if key not in inputs:
            inputs[key] = builder.accessor(t32[:, None], "SCALAR", bounds=True)
        if ch.path == "rotation":
            v = ch.values[:, [1, 2, 3, 0]]
        else:
            v = ch.values
        if ch.interpolation == "CUBICSPLINE":
            assert ch.in_tangents is not None and ch.out_tangents is not None
            v = np.stack([ch.in_tangents, v, ch.out_tangents], axis=1).reshape(-1, v.shape[1])
        kind = "VEC4" if ch.path == "rotation" else "VEC3"
        output = builder.accessor(v.astype(np.float32), kind)
        samplers.append({"input": inputs[key], "output": output, "interpolation": ch.interpolation})
        targets.append({"sampler": len(samplers) - 1, "target": {"node": ch.node, "path": ch.path}})
    loose = [f"{names[c.node]}.{c.path}" for c in channels if not c.exact]
    if loose:
        why = "it is a mix of clips" if clip.mix is not None else "glTF has no exact equivalent of its interpolation"
        shown = ", ".join(loose[:6]) + (f", … ({len(loose)} in all)" if len(loose) > 6 else "")
        warnings.warn(f"{source}: clip {clip.name!r}: {len(loose)} channel(s) sampled at the clip's "
                      f"{clip.fps:g} fps frames ({why}): {shown}", stacklevel=4)
    anim: dict[str, Any] = {"name": clip.name, "channels": targets, "samplers": samplers}
    if clip.loop != "once":
        anim["extras"] = {"loop": clip.loop}
    return anim


def gltf_document(scene: Scene, clips: Sequence[Clip], source: str = "glTF") -> tuple[dict[str, Any], bytes]:
    """The glTF JSON document and its one binary buffer for ``scene``'s figure and ``clips``."""
    figure = scene.figure
    builder = BinaryBuilder()
    arcs = figure.arcs()
    rest = figure.rest_pose()
    nodes: list[dict[str, Any]] = []
    start = 0
    for arc in arcs:
        k = arc.joint.dof_count
        node: dict[str, Any] = {"name": arc.child.name}
        node.update(_trs(_local(arc, rest[start:start + k][None])[0]))
        start += k
        children = [figure.node_names.index(a.child.name) for a in arc.child.arcs()]
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
    mesh = _flat_mesh(figure, bind, builder)
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
    animations = [_animation(figure, c, builder, inputs, source) for c in clips]
    if animations:
        doc["animations"] = animations
    doc["accessors"] = builder.accessors
    doc["bufferViews"] = builder.buffer_views
    data = builder.data()
    doc["buffers"] = [{"byteLength": len(data)}]
    return doc, data


def gltf_files(path: Path, scene: Scene, clips: Sequence[Clip], *, buffers: BufferMode = "external"
               ) -> list[tuple[Path, bytes]]:
    """The files that make ``path`` (``.glb``: one; ``.gltf``: the JSON and, with ``buffers="external"``, a
    ``.bin`` beside it named after it), as (path, bytes), dependencies first."""
    if buffers not in ("external", "embedded"):
        raise AnimkitError(f"buffers={buffers!r}: expected 'external' or 'embedded'")
    doc, data = gltf_document(scene, clips, str(path))
    if path.suffix.lower() == ".glb":
        return [(path, glb_bytes(doc, data))]
    files: list[tuple[Path, bytes]] = []
    if buffers == "external":
        bin_path = path.with_suffix(".bin")
        doc["buffers"][0]["uri"] = bin_path.name
        files.append((bin_path, data))
    else:
        doc["buffers"][0]["uri"] = "data:application/octet-stream;base64," + base64.b64encode(data).decode("ascii")
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    files.append((path, text.encode("utf-8")))
    return files
