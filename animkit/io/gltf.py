"""glTF 2.0 characters in: ``.gltf`` (JSON with external or ``data:`` buffers) and ``.glb``.

The node hierarchy of a scene becomes the figure, below one added root node (``world``): each node's local
matrix L_node = T · R · S (or its ``matrix``) is split at the first channel any animation drives. The static
channels before it multiply into the arc's L; that channel and every one after it become DOFs of the arc's
joint, with the node's values as rest values:

    translation → ``<node>.tx/ty/tz`` (prismatic), rotation → ``<node>.rz/ry/rx`` (a ball, intrinsic Euler
    angles in the node's own order, below), scale → ``<node>.sx/sy/sz`` (scale DOFs)

so M_node = M_parent · L · A(θ) equals the glTF world matrix at every time. The rotation's order is chosen at rest
(:func:`~animkit.model.transforms.euler_order_away_from_lock`): :data:`EULER_ORDER` ("zyx") when the node's rest
rotation lies at least :data:`GIMBAL_MARGIN` (45°) from its lock, else the Tait–Bryan order whose middle angle lies
farthest from ±90° (always ≥ 45° away), so a small turn near rest never swings the other two angles (CesiumMan's
spine rested 8° from "zyx"'s lock). The rest values stay the node's rotation: clips, writers, retargeting and limits
read θ as before. Not the classic split (rest rotation in L, θ = 0 at rest): an animated translation comes before
the rotation (T(t) · R · S, the hips), so L could not hold the rest rotation without turning tx/ty/tz into the
rest-rotated axes, and every reader of θ would change (see ``docs/conventions.md``). Rotations are keyed and sampled as
quaternions (:class:`~animkit.keyframes.RotationTrack`) and only then read as the joint's Euler DOFs.

Every animation is a clip under its name, with the file's own key times: LINEAR → linear (slerp for
rotations), STEP → step, CUBICSPLINE → the cubic Hermite with the file's tangents (scaled by the key interval;
rotations normalised after it). Meshes become :class:`~animkit.look.mesh.Mesh` values (one per primitive); skinned
ones ignore their node's transform, as the specification says (see ``docs/conventions.md``).

Bad input is a :class:`~animkit.errors.ParseError` naming the file and the JSON pointer.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from animkit import limits
from animkit.errors import AnimkitError, ParseError
from animkit.io.gltf_bytes import GltfDocument, document_from_path, pointer
from animkit.io.gltf_meshes import MeshReading, decode_image
from animkit.keyframes import Clip, RotationTrack, Track
from animkit.limits import sample_count
from animkit.model.figure import Figure
from animkit.model.joints import DofKind, Joint, ball, custom, fixed
from animkit.model.rig import character_rig
from animkit.model.transforms import (
    euler_intrinsic_from_matrix,
    euler_order_away_from_lock,
    matrix_from_quaternion,
)
from animkit.scene import Scene

__all__ = ["read_gltf", "scene_from_document", "ROOT_NAME", "EULER_ORDER", "GIMBAL_MARGIN", "MAX_KEY_TIME", "STILL",
           "MorphTargetWarning", "frame_rate_from_keys", "arc_from_trs", "decode_image"]

Array = NDArray[np.float64]
ROOT_NAME = "world"
#: a rotation DOF's intrinsic Euler order: this one where the node's rest rotation lies at least GIMBAL_MARGIN from
#: its lock, else the Tait–Bryan order farthest from lock (always ≥ 45° away; see the module docstring)
EULER_ORDER = "zyx"
GIMBAL_MARGIN = float(np.radians(45.0))
_PATHS = ("translation", "rotation", "scale")
_INTERPOLATIONS = ("LINEAR", "STEP", "CUBICSPLINE")
#: a channel whose keys all lie this close to the node's own value (relative, at least 1) adds no DOF
STILL = 2e-7
#: the latest key time read (a day): later ones would make absurd clips
MAX_KEY_TIME = 86400.0


class MorphTargetWarning(UserWarning):
    """A glTF file has morph targets (``weights``), which animkit does not apply."""


def check_gltf_files(path: Path, files: Sequence[tuple[Path, bytes]]) -> None:
    """Read the bytes :func:`~animkit.io.gltf_write.gltf_files` made as :func:`read_gltf` would, in memory (a
    ``.gltf``'s ``.bin`` from the bytes about to be written, not from the disk): the registry's check."""
    import json

    from animkit.io.gltf_bytes import GltfDocument, document_from_bytes

    main = dict(files)[path]
    if path.suffix.lower() == ".glb":
        scene_from_document(document_from_bytes(main, str(path)))
        return
    doc = json.loads(main)
    binary = [data for target, data in files if target != path]
    if binary:
        del doc["buffers"][0]["uri"]  # the .bin's bytes as they will be
    scene_from_document(GltfDocument(str(path), doc, base=None, bin_chunk=binary[0] if binary else None))


def read_gltf(path: str | Path, *, scene: int | None = None) -> Scene:
    """A :class:`~animkit.scene.Scene` from a ``.gltf`` / ``.glb`` file: the figure of scene ``scene`` (default:
    the file's ``scene``, else 0), every animation as a clip, every mesh primitive as a mesh."""
    return scene_from_document(document_from_path(path), scene=scene)


def scene_from_document(doc: GltfDocument, *, scene: int | None = None) -> Scene:
    """The scene of a parsed document (see :func:`read_gltf`)."""
    try:
        return _Reader(doc).scene(scene)
    except ParseError:
        raise
    except AnimkitError as exc:  # a figure, clip or mesh the checks above let through: still name the file
        raise doc.error("/", str(exc)) from None


def _quaternion_wxyz(xyzw: Array) -> Array:
    return np.asarray(xyzw, dtype=float)[..., [3, 0, 1, 2]]


class _Reader(MeshReading):
    def __init__(self, doc: GltfDocument) -> None:
        self.doc = doc
        count = len(doc.items("nodes"))
        if count > limits.MAX_NODES:
            raise doc.error("/nodes", f"{count:,} nodes; the limit is {limits.MAX_NODES:,} (animkit.limits.MAX_NODES)")
        self.nodes: list[dict[str, Any]] = [doc.obj("nodes", i) for i in range(count)]
        self._pixels = 0  # decoded image pixels so far
        self.parent = self._parents()
        self.names = self._names()
        self.morph = False
        self._images: dict[int, NDArray[np.uint8]] = {}
        self._samplers: dict[tuple[int, int, int], tuple[Array, Array, str, tuple[Array, Array] | None]] = {}
        self.animated: dict[int, set[str]] = {}

    # --- structure ----------------------------------------------------------------------------------------

    def _parents(self) -> list[int]:
        """parent[i] (−1 for roots); a node with two parents, a cycle or a node deeper than
        :data:`~animkit.limits.MAX_DEPTH` is an error. Linear in the nodes: one walk down from the roots (every
        node has at most one parent, so a node it does not reach lies on or below a cycle)."""
        doc = self.doc
        parent = [-1] * len(self.nodes)
        for i, n in enumerate(self.nodes):
            kids = doc.field(n, "children", pointer("nodes", i), list, [])
            for k, c in enumerate(kids):
                at = pointer("nodes", i, "children", k)
                if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c < len(self.nodes):
                    raise doc.error(at, f"expected an index into nodes (0 to {len(self.nodes) - 1}), got {c!r}")
                if c == i:
                    raise doc.error(at, f"node {i} lists itself as a child: the node graph must be a tree")
                if parent[c] >= 0:
                    raise doc.error(at, f"node {c} has two parents (nodes {parent[c]} and {i}); "
                                        "a glTF node must have at most one parent")
                parent[c] = i
        depth = [0] * len(self.nodes)
        stack = [i for i, p in enumerate(parent) if p < 0]
        reached = len(stack)
        while stack:
            i = stack.pop()
            for c in self.nodes[i].get("children", ()):
                depth[c] = depth[i] + 1
                if depth[c] > limits.MAX_DEPTH:
                    raise doc.error(pointer("nodes", c), f"node {c} is nested {depth[c]:,} deep; the limit is "
                                                         f"{limits.MAX_DEPTH:,} (animkit.limits.MAX_DEPTH)")
                stack.append(c)
                reached += 1
        if reached < len(self.nodes):  # walk up from an unreached node until a node repeats: it is on the cycle
            j = next(i for i in range(len(self.nodes)) if depth[i] == 0 and parent[i] >= 0)
            seen = set()
            while j not in seen:
                seen.add(j)
                j = parent[j]
            raise doc.error(pointer("nodes", j, "children"),
                            f"the node graph has a cycle through node {j}; it must be a tree")
        return parent

    def _names(self) -> list[str]:
        """Node names as given (whitespace → '_'); unnamed nodes ``node<i>``; repeats get ``_<i>``."""
        taken = {ROOT_NAME}
        out = []
        for i, n in enumerate(self.nodes):
            raw = n.get("name")
            name = re.sub(r"\s+", "_", raw.strip()) if isinstance(raw, str) and raw.strip() else f"node{i}"
            if name in taken:
                name = f"{name}_{i}"
                while name in taken:
                    name += "_"
            taken.add(name)
            out.append(name)
        return out

    def _roots(self, scene: int | None) -> list[int]:
        doc = self.doc
        scenes = doc.items("scenes")
        if scene is None:
            scene = doc.field(doc.json, "scene", "", int, 0 if scenes else None)
            if scene is not None and not 0 <= scene < len(scenes):
                raise doc.error("/scene", f"{scene} is not an index into scenes (it has {len(scenes)})")
        elif not 0 <= scene < len(scenes):
            raise ParseError(doc.path, f"no scene {scene}: the file has {len(scenes)} scene(s)")
        if scene is None:  # no scenes: every root node
            return [i for i, p in enumerate(self.parent) if p < 0]
        s = doc.obj("scenes", scene)
        roots = doc.field(s, "nodes", pointer("scenes", scene), list, [])
        for k, r in enumerate(roots):
            at = pointer("scenes", scene, "nodes", k)
            if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < len(self.nodes):
                raise doc.error(at, f"expected an index into nodes, got {r!r}")
            if self.parent[r] >= 0:
                raise doc.error(at, f"node {r} is a child of node {self.parent[r]}; scene nodes must be roots")
        if len(set(roots)) != len(roots):
            raise doc.error(pointer("scenes", scene, "nodes"), "a root node is listed twice")
        return roots

    # --- the figure ---------------------------------------------------------------------------------------

    def _trs(self, i: int) -> tuple[Array, Array, Array, Array | None]:
        """(translation, rotation (w, x, y, z), scale, matrix or None) of node i."""
        doc, n, at = self.doc, self.nodes[i], pointer("nodes", i)
        t = doc.numbers(n, "translation", at, 3, np.zeros(3))
        q = doc.numbers(n, "rotation", at, 4, np.array([0.0, 0.0, 0.0, 1.0]))
        norm = float(np.linalg.norm(q))
        if abs(norm - 1.0) > 1e-3:
            raise doc.error(f"{at}/rotation", f"expected a unit quaternion (x, y, z, w), got norm {norm:.6g}")
        s = doc.numbers(n, "scale", at, 3, np.ones(3))
        if np.abs(s).max() > limits.MAX_SCALE:
            raise doc.error(f"{at}/scale", f"scale {s.tolist()}: the limit is ±{limits.MAX_SCALE:g} "
                                           "(animkit.limits.MAX_SCALE)")
        m = doc.numbers(n, "matrix", at, 16, None)
        if m is not None:
            M = m.reshape(4, 4).T  # column-major in the file
            if np.abs(M[3] - (0, 0, 0, 1)).max() > 1e-6 or abs(np.linalg.det(M[:3, :3])) < 1e-12:
                raise doc.error(f"{at}/matrix", "expected an invertible affine matrix (last row 0 0 0 1)")
            M[3] = (0.0, 0.0, 0.0, 1.0)
            return t, _quaternion_wxyz(q / norm), s, M
        return t, _quaternion_wxyz(q / norm), s, None

    def _animated(self) -> dict[int, set[str]]:
        """node → the paths (translation, rotation, scale) any animation drives."""
        doc = self.doc
        out: dict[int, set[str]] = {}
        for a, anim in enumerate(doc.items("animations")):
            at = pointer("animations", a)
            if not isinstance(anim, dict):
                raise doc.error(at, "expected an object")
            driven, last = 0, 0.0  # for the early sample budget: DOFs ≥ 3 per driven path, fps ≥ 10
            for c, ch in enumerate(doc.field(anim, "channels", at, list)):
                cat = f"{at}/channels/{c}"
                if not isinstance(ch, dict):
                    raise doc.error(cat, "expected an object")
                target = doc.field(ch, "target", cat, dict)
                path = doc.field(target, "path", f"{cat}/target", str)
                if path == "weights":
                    self.morph = True
                    continue
                if path not in _PATHS:
                    if path == "pointer" or path.startswith("KHR_"):
                        continue  # an extension's path; the extension is optional
                    raise doc.error(f"{cat}/target/path", f"unknown path {path!r}; expected translation, rotation, "
                                                          "scale or weights")
                node = doc.field(target, "node", f"{cat}/target", int, None)
                if node is None:
                    continue
                node = doc.index(target, "node", f"{cat}/target", "nodes")
                if "matrix" in self.nodes[node]:
                    raise doc.error(f"{cat}/target/node", f"node {node} has a matrix; animated nodes must use "
                                                          "translation/rotation/scale")
                samplers = doc.field(anim, "samplers", at, list)
                smp = doc.field(ch, "sampler", cat, int, check=range(len(samplers)).__contains__,
                                expected=f"an index into this animation's samplers (0 to {len(samplers) - 1})")
                if not self._holds_still(node, path, a, smp):
                    out.setdefault(node, set()).add(path)
                    driven += 3
                    last = max(last, float(self._sampler(a, smp, 4 if path == "rotation" else 3)[0][-1]))
            least = (int(last * 10.0) + 1) * driven
            if least > limits.MAX_SAMPLES:  # refused before the figure is built (the exact check is in clips)
                raise doc.error(at, f"{last:g} s on {driven} or more DOFs samples into at least {least:,} values; the "
                                    f"limit is {limits.MAX_SAMPLES:,} (animkit.limits.MAX_SAMPLES)")
        return out

    def _holds_still(self, node: int, path: str, a: int, s: int) -> bool:
        """True when sampler s of animation a holds node's own ``path`` value at every key (to :data:`STILL`, a few
        float32 steps; tangents zero): such a channel adds no DOF (exporters key every channel of every bone, most of
        them constant)."""
        times, values, _, tangents = self._sampler(a, s, 4 if path == "rotation" else 3)
        t, q, sc, _ = self._trs(node)
        if path == "rotation":
            q0 = q[[1, 2, 3, 0]]  # (x, y, z, w) as in the file
            off = np.minimum(np.abs(values - q0).max(axis=1), np.abs(values + q0).max(axis=1))
            tol = STILL
        else:
            v0 = t if path == "translation" else sc
            off = np.abs(values - v0).max(axis=1)
            tol = STILL * max(1.0, float(np.abs(v0).max()))
        still = bool(off.max() <= tol)
        if tangents is not None:
            still = still and max(float(np.abs(tangents[0]).max()), float(np.abs(tangents[1]).max())) <= tol
        return still

    def _arc(self, i: int, animated: set[str]) -> tuple[Array, Joint]:
        """(L, joint) of node i: static channels before the first animated one in L, the rest as DOFs."""
        t, q, s, M = self._trs(i)
        if M is not None:
            return M, fixed(self.names[i])
        return arc_from_trs(self.names[i], t, q, s, animated)

    def figure(self, roots: list[int]) -> tuple[Figure, list[int]]:
        """The figure below ``world`` and the nodes in it (file indices, depth-first)."""
        animated = self.animated = self._animated()
        fig = Figure(ROOT_NAME, name=Path(self.doc.path).stem or "gltf")
        order: list[int] = []
        # a skinned mesh's own node sits at the root (its transform is ignored): it does not make a second root
        carriers = [r for r in roots if self._mesh_carrier(r, animated)]
        others = [r for r in roots if r not in carriers]
        if len(others) == 1 and self._plain_world(others[0], animated):  # animkit's own root, written back: reuse it
            r = others[0]
            self.names[r] = ROOT_NAME
            order.append(r)
            roots = list(self.nodes[r].get("children", [])) + carriers
        stack = [(r, ROOT_NAME) for r in reversed(roots)]
        while stack:
            i, parent = stack.pop()
            L, joint = self._arc(i, animated.get(i, set()))
            try:
                fig.add(self.names[i], parent, L=L, joint=joint)
            except AnimkitError as exc:
                raise self.doc.error(pointer("nodes", i), str(exc)) from None
            order.append(i)
            kids = self.nodes[i].get("children", [])
            stack.extend((c, self.names[i]) for c in reversed(kids))
        return fig, order

    def _mesh_carrier(self, i: int, animated: dict[int, set[str]]) -> bool:
        """Whether node i only carries a skinned mesh (mesh and skin, no children, not animated): where animkit's
        writer puts a skinned mesh's own node, at the scene's root."""
        n = self.nodes[i]
        return "mesh" in n and "skin" in n and not n.get("children") and i not in animated

    def _plain_world(self, i: int, animated: dict[int, set[str]]) -> bool:
        """Whether node i is a root animkit adds on reading (named :data:`ROOT_NAME`, at the identity, nothing on
        it): a file animkit wrote holds it, and reading it back must not add a second one."""
        n = self.nodes[i]
        if n.get("name") != ROOT_NAME or i in animated or any(k in n for k in ("mesh", "skin", "camera", "weights")):
            return False
        t, q, s, M = self._trs(i)
        if M is not None:
            return bool(np.allclose(M, np.eye(4), rtol=0, atol=1e-12))
        return bool(np.allclose(t, 0, atol=1e-12) and np.allclose(q, (1, 0, 0, 0), atol=1e-12)
                    and np.allclose(s, 1, atol=1e-12))

    # --- clips --------------------------------------------------------------------------------------------

    def clips(self, fig: Figure, in_figure: set[int]) -> dict[str, Clip]:
        doc = self.doc
        out: dict[str, Clip] = {}
        for a, anim in enumerate(doc.items("animations")):
            at = pointer("animations", a)
            raw = anim.get("name")
            name = raw if isinstance(raw, str) and raw else f"animation{a}"
            if name in out:
                name = f"{name}_{a}"
            samplers = doc.field(anim, "samplers", at, list)
            tracks: list[Track | RotationTrack] = []
            seen: dict[tuple[int, str], int] = {}
            last = 0.0
            dts: list[float] = []
            keys: list[Array] = []
            n_keys = 0
            for c, ch in enumerate(anim["channels"]):
                cat = f"{at}/channels/{c}"
                target = ch["target"]
                path = target["path"]
                if path not in _PATHS or target.get("node") is None:
                    continue
                node = target["node"]
                if node not in in_figure or path not in self.animated.get(node, ()):
                    continue  # a node of another scene, or a channel that holds the node's own value
                if (node, path) in seen:
                    raise doc.error(cat, f"channel {seen[node, path]} already drives node {node}'s {path}")
                seen[node, path] = c
                s = doc.field(ch, "sampler", cat, int, check=range(len(samplers)).__contains__,
                              expected=f"an index into this animation's samplers (0 to {len(samplers) - 1})")
                times, values, kind, tangents = self._sampler(a, s, 4 if path == "rotation" else 3)
                n_keys += times.shape[0] * (1 if path == "rotation" else 3)
                if n_keys > limits.MAX_KEYS:
                    raise doc.error(cat, f"the animation's tracks hold more than {limits.MAX_KEYS:,} keys "
                                         "(animkit.limits.MAX_KEYS)")
                last = max(last, float(times[-1]))
                if times.shape[0] > 1:
                    dts.append(float(np.median(np.diff(times))))
                keys.append(times)
                tracks.extend(self._tracks(self.names[node], path, times, values, kind, tangents,
                                           f"{at}/samplers/{s}"))
            fps = frame_rate_from_keys(np.concatenate(keys) if keys else np.zeros(0), min(dts) if dts else None)
            try:
                sample_count(last, fps, fig.dof_count, f"animation {name!r}")
                out[name] = Clip.build(fig, tracks, name=name, duration=last, fps=fps)
            except AnimkitError as exc:
                raise doc.error(at, str(exc)) from None
        return out

    def _sampler(self, a: int, s: int, width: int) -> tuple[Array, Array, str, tuple[Array, Array] | None]:
        """(key times (K,), values (K, width), interpolation, (in, out) tangents for CUBICSPLINE)."""
        key = (a, s, width)
        if key not in self._samplers:
            self._samplers[key] = self._read_sampler(a, s, width)
        return self._samplers[key]

    def _read_sampler(self, a: int, s: int, width: int) -> tuple[Array, Array, str, tuple[Array, Array] | None]:
        doc = self.doc
        at = pointer("animations", a, "samplers", s)
        smp = doc.json["animations"][a]["samplers"][s]
        if not isinstance(smp, dict):
            raise doc.error(at, "expected an object")
        kind = doc.field(smp, "interpolation", at, str, "LINEAR", lambda v: v in _INTERPOLATIONS,
                         "LINEAR, STEP or CUBICSPLINE")
        ti = doc.index(smp, "input", at, "accessors")
        times = doc.accessor(ti, f"{at}/input")
        if times.shape[1:] != (1,) or times.dtype.kind != "f":
            raise doc.error(f"{at}/input", "expected a SCALAR float accessor of key times")
        times = times[:, 0]
        if np.any(np.diff(times) <= 0):
            k = int(np.flatnonzero(np.diff(times) <= 0)[0])
            raise doc.error(f"{at}/input", f"key times must increase strictly; key {k + 1} ({times[k + 1]}) "
                                           f"does not come after key {k} ({times[k]})")
        if times[0] < 0 or times[-1] > MAX_KEY_TIME:
            raise doc.error(f"{at}/input", f"key times must lie in [0, {MAX_KEY_TIME:g}] s, got "
                                           f"{times[0]:g} to {times[-1]:g}")
        oi = doc.index(smp, "output", at, "accessors")
        values = doc.accessor(oi, f"{at}/output")
        if values.ndim != 2 or values.shape[1] != width or values.dtype.kind != "f":
            raise doc.error(f"{at}/output", f"expected VEC{width} values (float or normalized), got "
                                            f"{values.shape[1:]} of {values.dtype}")
        K = times.shape[0]
        per = 3 if kind == "CUBICSPLINE" else 1
        if values.shape[0] != per * K:
            raise doc.error(f"{at}/output", f"{values.shape[0]} values for {K} key times; {kind} needs {per * K}")
        if kind == "CUBICSPLINE":
            v = values.reshape(K, 3, width)
            return times, v[:, 1], kind, (v[:, 0], v[:, 2])
        return times, values, kind, None

    def _tracks(self, joint: str, path: str, times: Array, values: Array, kind: str,
                tangents: tuple[Array, Array] | None, at: str) -> list[Track | RotationTrack]:
        if path == "rotation":
            q = _quaternion_wxyz(values)
            n = np.linalg.norm(q, axis=1)
            if np.any(n < 1e-6):
                raise self.doc.error(f"{at}/output", f"key {int(np.argmax(n < 1e-6))} is a zero quaternion")
            interp = {"LINEAR": "slerp", "STEP": "step", "CUBICSPLINE": "cubic"}[kind]
            tin = tout = None
            if tangents is not None:
                tin, tout = _quaternion_wxyz(tangents[0]), _quaternion_wxyz(tangents[1])
            return [RotationTrack(joint, times, q / n[:, None], interp,  # type: ignore[arg-type]
                                  in_tangents=tin, out_tangents=tout)]
        letter = "t" if path == "translation" else "s"
        out: list[Track | RotationTrack] = []
        for k, axis in enumerate("xyz"):
            dof = f"{joint}.{letter}{axis}"
            if tangents is None:
                out.append(Track(dof, times, values[:, k], "linear" if kind == "LINEAR" else "step"))
            else:
                out.append(Track(dof, times, values[:, k], "bezier", in_slopes=tangents[0][:, k],
                                 out_slopes=tangents[1][:, k]))
        return out

    # --- all of it ----------------------------------------------------------------------------------------

    def scene(self, scene: int | None) -> Scene:
        for s, sk in enumerate(self.doc.items("skins")):  # before the figure is built: a refusal comes at once
            joints = sk.get("joints") if isinstance(sk, dict) else None
            if isinstance(joints, list) and len(joints) > limits.MAX_SKIN_JOINTS:
                raise self.doc.error(pointer("skins", s, "joints"),
                                     f"{len(joints):,} joints; the limit for one skin is "
                                     f"{limits.MAX_SKIN_JOINTS:,} (animkit.limits.MAX_SKIN_JOINTS)")
        self._check_vertices()
        roots = self._roots(scene)
        fig, order = self.figure(roots)
        fig.rig = character_rig(fig)  # a humanoid's or a quadruped's chains, effectors (and a humanoid's limits)
        in_figure = set(order)
        clips = self.clips(fig, in_figure)
        meshes = self.meshes(fig, order)
        if self.morph:
            warnings.warn(f"{self.doc.path}: morph targets (weights) are not applied; meshes keep their base shape",
                          MorphTargetWarning, stacklevel=4)
        return Scene(fig, clips=clips, meshes=tuple(meshes), up="y", source=self.doc.path)


def frame_rate_from_keys(times: Array, dt: float | None) -> float:
    """fps of a clip whose keys are ``times`` (float32 in the file), densest per-sampler spacing ``dt``.

    The guess g = 1/dt, kept to 10–240 (else 30), is made exact from the keys: the whole number round(g) when every
    key time is a multiple of 1/round(g) to one float32 step (a file keyed at 30 fps), else n / t_last with
    n = round(g · t_last) when the keys sit on that grid (CMU BVH's 0.0083333 s frames are 120.0048 fps, and
    rounding to 120 would drop the last frame of a 120-per-second resampling), else round(g).
    """
    if dt is None or dt <= 0 or not 10.0 <= 1.0 / dt <= 240.0:
        return 30.0
    guess = 1.0 / dt
    t = np.unique(times.astype(np.float64))
    tol = 2.0 * np.spacing(np.abs(t).astype(np.float32)).astype(np.float64)  # two float32 steps at each key

    def on_grid(fps: float) -> bool:
        return bool(np.all(np.abs(t - np.round(t * fps) / fps) <= tol))

    whole = float(round(guess))
    if on_grid(whole) or t[-1] <= 0:
        return whole
    exact = round(guess * float(t[-1])) / float(t[-1])
    return float(exact) if 10.0 <= exact <= 240.0 and on_grid(exact) else whole



def arc_from_trs(name: str, t: Array, q: Array, s: Array, animated: set[str] | frozenset[str]) -> tuple[Array, Joint]:
    """(L, joint) of a node with local transform T(t) · R(q) · S(s) (q = w, x, y, z) whose ``animated`` channels
    (of translation, rotation, scale) some clip drives: L = the static channels before the first animated one, the
    rest DOFs with the node's values as rest values (see the module's docstring). The FBX reader shares it."""
    first = min((_PATHS.index(p) for p in animated), default=3)
    R = np.eye(3) if q[0] == 1.0 else matrix_from_quaternion(q)
    if first == 3:  # a still node (most of a big file): L = T · R · S in one step
        L = np.eye(4)
        L[:3, :3] = R * s
        L[:3, 3] = t
        return L, fixed(name)
    parts = [_translation_matrix(t), _rotation_matrix(R), np.diag([*s, 1.0])]
    L = np.eye(4)
    for P in parts[:first]:
        L = L @ P
    if first == 3:
        return L, fixed(name)
    channels: list[tuple[DofKind, str]] = []
    rest: list[float] = []
    if first == 0:
        channels += [("prismatic", "x"), ("prismatic", "y"), ("prismatic", "z")]
        rest += list(t)
    order = euler_order_away_from_lock(R, EULER_ORDER, GIMBAL_MARGIN) if first <= 1 else None
    if order is not None:
        channels += [("revolute", a) for a in order]
        rest += list(euler_intrinsic_from_matrix(R, order))
    drop_scale = "scale" not in animated and np.allclose(s, 1.0, rtol=0, atol=0)
    if not drop_scale:
        channels += [("scale", "x"), ("scale", "y"), ("scale", "z")]
        rest += list(s)
    if first == 1 and drop_scale:
        assert order is not None
        return L, ball(name, order, rest=rest)
    return L, custom(name, channels, rest=rest, order=order)


def _translation_matrix(t: Array) -> Array:
    M = np.eye(4)
    M[:3, 3] = t
    return M


def _rotation_matrix(R: Array) -> Array:
    M = np.eye(4)
    M[:3, :3] = R
    return M
