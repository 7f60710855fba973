"""Writing glTF 2.0 (``.glb``, ``.gltf``): the figure as nodes, its drawn geometry skinned rigidly to its
bones, and clips as animations.

Nodes. Every figure node becomes one glTF node (names kept, the figure's traversal order). Its local
transform is the arc's ``L · A(θ)``: rigid for every joint kind, whatever its DOF axes, so one node's
translation and rotation hold it exactly, M_child = M_parent · L · A(θ). The node's static TRS is the
rest pose. A Z-up scene (``scene.up == "z"``) is wrapped in one extra root node that turns +z onto
glTF's +y (a rotation of −90° about x), so viewers show it upright.

Mesh. The figure's drawn triangles (:func:`~animkit.look.drawn.figure_mesh`: the node data, or capsule
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
import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from animkit.errors import AnimkitError, unknown_name
from animkit.io.gltf_bytes import ARRAY_BUFFER, ELEMENT_ARRAY_BUFFER, BinaryBuilder, glb_bytes
from animkit.io.gltf_channels import (
    KEYS,
    GltfChannel,
    Keys,
    _decompose,
    _local,
    _stored_times,
    channels_from_clip,
    gltf_sample,
)
from animkit.look.drawn import figure_mesh
from animkit.model.transforms import quaternion_from_matrix

if TYPE_CHECKING:
    from animkit.keyframes import Clip
    from animkit.look.drawn import FigureMesh
    from animkit.model.figure import Figure
    from animkit.scene import Scene

__all__ = ["BufferMode", "Keys", "KEYS", "gltf_files", "gltf_document", "GltfChannel", "channels_from_clip",
           "gltf_sample"]

Array = NDArray[np.float64]
BufferMode = Literal["external", "embedded"]
GENERATOR: Final = "animkit"

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
