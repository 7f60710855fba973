"""glTF writing, checked by independent readers: the file is decoded with pygltflib, sampled by the glTF
specification's interpolation formulas written out here (not animkit's), composed into world matrices
and compared with animkit's FK at every frame (to 1e-6 of the figure's size) and, for channels written
as exact, between frames too; every file also goes through the Khronos glTF Validator under Node."""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import animkit
from animkit import Clip, Figure, RotationTrack, Track
from animkit.look.drawn import figure_mesh
from animkit.model.geometry import Box
from animkit.model.joints import ball, custom, free, hinge, slider
from animkit.model.transforms import matrix_from_quaternion, quaternion_from_axis_angle
from animkit.scene import Scene

from .cli_helpers import run_cli
from .conftest import DATA, ROOT, SCENES

pygltflib = pytest.importorskip("pygltflib")

# --- an independent reader: pygltflib for the container, the specification for sampling ---------------

_DTYPE = {5126: np.float32, 5121: np.uint8, 5123: np.uint16, 5125: np.uint32, 5120: np.int8, 5122: np.int16}
_WIDTH = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}


class Decoded:
    def __init__(self, path: Path) -> None:
        self.gltf = pygltflib.GLTF2().load(str(path))
        uri = self.gltf.buffers[0].uri
        if uri is None:
            self.blob = self.gltf.binary_blob()
        elif uri.startswith("data:"):
            self.blob = base64.b64decode(uri.split(",", 1)[1])
        else:
            self.blob = (path.parent / uri).read_bytes()
        self.names = [n.name for n in self.gltf.nodes]
        self.parent = {c: i for i, n in enumerate(self.gltf.nodes) for c in (n.children or [])}

    def accessor(self, index: int) -> np.ndarray:
        acc = self.gltf.accessors[index]
        view = self.gltf.bufferViews[acc.bufferView]
        dt = np.dtype(_DTYPE[acc.componentType]).newbyteorder("<")
        width = _WIDTH[acc.type]
        start = (view.byteOffset or 0) + (acc.byteOffset or 0)
        stride = view.byteStride or width * dt.itemsize
        rows = [np.frombuffer(self.blob, dt, width, start + i * stride) for i in range(acc.count)]
        out = np.array(rows, dtype=float)
        return out.reshape(-1, 4, 4).transpose(0, 2, 1) if acc.type == "MAT4" else out

    def static_local(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        n = self.gltf.nodes[i]
        t = np.array(n.translation if n.translation else [0.0, 0, 0])
        r = np.array(n.rotation if n.rotation else [0.0, 0, 0, 1])
        return t, r

    def local(self, animation: int | None, times: np.ndarray) -> np.ndarray:
        """(F, N, 4, 4): every node's local matrix T·R at ``times`` (the animation's channels over the rest)."""
        N = len(self.gltf.nodes)
        T = np.zeros((len(times), N, 3))
        R = np.zeros((len(times), N, 4))
        S = np.ones((len(times), N, 3))
        for i in range(N):
            T[:, i], R[:, i] = self.static_local(i)
            if self.gltf.nodes[i].scale:
                S[:, i] = self.gltf.nodes[i].scale
            assert not self.gltf.nodes[i].matrix
        if animation is not None:
            anim = self.gltf.animations[animation]
            for ch in anim.channels:
                s = anim.samplers[ch.sampler]
                value = spec_sample(self.accessor(s.input)[:, 0], self.accessor(s.output), s.interpolation,
                                    ch.target.path, times)
                {"translation": T, "rotation": R, "scale": S}[ch.target.path][:, ch.target.node] = value
        M = np.zeros((len(times), N, 4, 4))
        x, y, z, w = np.moveaxis(R / np.linalg.norm(R, axis=-1, keepdims=True), -1, 0)
        M[..., :3, :3] = np.stack([
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)
        M[..., :3, :3] *= S[..., None, :]  # T · R · S
        M[..., :3, 3] = T
        M[..., 3, 3] = 1.0
        return M

    def world(self, animation: int | None, times: np.ndarray) -> np.ndarray:
        local = self.local(animation, times)
        out = np.zeros_like(local)
        done: dict[int, bool] = {}

        def visit(i: int) -> None:
            if i in done:
                return
            p = self.parent.get(i)
            if p is None:
                out[:, i] = local[:, i]
            else:
                visit(p)
                out[:, i] = out[:, p] @ local[:, i]
            done[i] = True

        for i in range(len(self.gltf.nodes)):
            visit(i)
        return out

    def animation_index(self, name: str) -> int:
        return [a.name for a in self.gltf.animations].index(name)


def spec_sample(times: np.ndarray, output: np.ndarray, interpolation: str, path: str, t: np.ndarray) -> np.ndarray:
    """glTF 2.0 specification, Appendix C (animation sampler interpolation), written out."""
    K = len(times)
    out = np.zeros((len(t), output.shape[1]))
    cubic = interpolation == "CUBICSPLINE"
    vals = output[1::3] if cubic else output
    for n, tc in enumerate(t):
        if tc <= times[0]:
            out[n] = vals[0]
            continue
        if tc >= times[-1]:
            out[n] = vals[-1]
            continue
        k = int(np.searchsorted(times, tc, side="right") - 1)
        td = times[k + 1] - times[k]
        u = (tc - times[k]) / td
        if interpolation == "STEP":
            out[n] = vals[k]
        elif interpolation == "LINEAR" and path == "rotation":
            a, b = vals[k], vals[k + 1]
            d = float(np.dot(a, b))
            s = 1.0 if d >= 0 else -1.0
            ang = math.acos(min(abs(d), 1.0))
            if ang < 1e-9:
                out[n] = (1 - u) * a + u * s * b
            else:
                out[n] = math.sin(ang * (1 - u)) / math.sin(ang) * a + s * math.sin(ang * u) / math.sin(ang) * b
        elif interpolation == "LINEAR":
            out[n] = (1 - u) * vals[k] + u * vals[k + 1]
        else:
            vk, bk = output[3 * k + 1], output[3 * k + 2]
            vk1, ak1 = output[3 * (k + 1) + 1], output[3 * (k + 1)]
            out[n] = ((2 * u ** 3 - 3 * u ** 2 + 1) * vk + td * (u ** 3 - 2 * u ** 2 + u) * bk
                      + (-2 * u ** 3 + 3 * u ** 2) * vk1 + td * (u ** 3 - u ** 2) * ak1)
    assert K >= 1
    return out


def figure_world_in_file(dec: Decoded, scene: Scene, W_fig: np.ndarray, W_file: np.ndarray) -> np.ndarray:
    """The file's world matrices of the figure's nodes, with the z-up wrapper (if any) taken off."""
    fig = scene.figure
    idx = [dec.names.index(n) for n in fig.node_names]
    W = W_file[:, idx]
    root = dec.parent.get(idx[0])
    if scene.up == "z":
        assert root is not None and dec.names[root] == f"{fig.name}_z_up"
        C = W_file[:, root]
        np.testing.assert_allclose(C[0] @ [0, 0, 1, 0], [0, 1, 0, 0], atol=1e-7)  # +z goes to glTF's +y
        W = np.linalg.inv(C)[:, None] @ W
    else:
        assert root is None
    return W


def check_against_figure(path: Path, scene: Scene, clips: list[Clip]) -> Decoded:
    """Every clip's world matrices in the file equal animkit's at every frame (1e-6 of the figure's size)."""
    dec = Decoded(path)
    fig = scene.figure
    size = fig.size()
    assert dec.names[: fig.dof_count * 0 + len(fig.node_names)] == fig.node_names  # names kept, in order
    rest = figure_world_in_file(dec, scene, fig.world_batch(fig.rest_pose()[None]),
                                dec.world(None, np.zeros(1)))
    np.testing.assert_allclose(rest, fig.world_batch(fig.rest_pose()[None]), atol=1e-6 * size, rtol=0)
    assert [a.name for a in dec.gltf.animations] == [c.name for c in clips]
    for a, clip in enumerate(clips):
        t = clip.frame_times()
        once = dataclasses.replace(clip, loop="once")  # the file holds one pass over [0, duration]
        W_fig = fig.world_batch(once.sample(t))
        # the file is sampled as a player would, on a float32 clock (glTF times are float32)
        W = figure_world_in_file(dec, scene, W_fig, dec.world(a, t.astype(np.float32).astype(float)))
        err = np.abs(W[..., :3, 3] - W_fig[..., :3, 3]).max() / size
        rot = np.abs(W[..., :3, :3] - W_fig[..., :3, :3]).max()
        # node origins to 1e-6 of the figure's size; frame axes to 4e-6: glTF stores float32 quaternions
        # (about 6e-8 each) and a BVH chain composes a dozen of them
        assert err <= 1e-6 and rot <= 4e-6, (clip.name, err, rot)
    if not scene.meshes:
        check_skin(dec, scene)
    return dec


def check_skin(dec: Decoded, scene: Scene) -> None:
    """The skinned mesh at rest, Σ w W_j IBM_j v, lies where animkit draws the figure (its bounding box)."""
    gl = dec.gltf
    if not gl.meshes:
        assert figure_mesh(scene.figure).triangle_count == 0
        return
    skin = gl.skins[0]
    mesh_node = next(i for i, n in enumerate(gl.nodes) if n.mesh is not None)
    assert mesh_node not in dec.parent and gl.nodes[mesh_node].skin == 0  # at the root, untransformed
    prim = gl.meshes[0].primitives[0]
    v = dec.accessor(prim.attributes.POSITION)
    j = dec.accessor(prim.attributes.JOINTS_0).astype(int)
    w = dec.accessor(prim.attributes.WEIGHTS_0)
    ibm = dec.accessor(skin.inverseBindMatrices)
    Wj = dec.world(None, np.zeros(1))[0][skin.joints]
    skinned = np.zeros_like(v)
    for slot in range(4):
        M = Wj[j[:, slot]] @ ibm[j[:, slot]]
        skinned += w[:, slot, None] * (np.einsum("vij,vj->vi", M[:, :3, :3], v) + M[:, :3, 3])
    np.testing.assert_allclose(skinned, v, atol=1e-5 * scene.figure.size())  # bind pose = rest pose
    fm = figure_mesh(scene.figure)
    W = scene.figure.world_batch(scene.figure.rest_pose()[None])[0]
    placed = np.einsum("vij,vj->vi", W[fm.owner][:, :3, :3], fm.vertices) + W[fm.owner][:, :3, 3]
    if scene.up == "z":
        placed = placed[:, [0, 2, 1]] * [1, 1, -1]
    tol = 1e-5 * scene.figure.size()
    np.testing.assert_allclose(skinned.min(0), placed.min(0), atol=tol)
    np.testing.assert_allclose(skinned.max(0), placed.max(0), atol=tol)
    n = dec.accessor(prim.attributes.NORMAL)
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-6)


# --- the Khronos validator under Node -----------------------------------------------------------------

VALIDATOR_DIRS = [Path(os.environ["ANIMKIT_GLTF_VALIDATOR"])] if os.environ.get("ANIMKIT_GLTF_VALIDATOR") else []
VALIDATOR_DIRS.append(ROOT / ".cache" / "npm" / "node_modules")
SCRIPT = Path(__file__).parent / "js" / "validate_gltf.mjs"


def validator_dir() -> Path:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node is not installed: the Khronos glTF Validator (npm gltf-validator) runs under Node")
    for d in VALIDATOR_DIRS:
        if (d / "gltf-validator").is_dir():
            return d
    pytest.skip("npm package gltf-validator not found in .cache/npm (run `npm install --prefix .cache/npm "
                "gltf-validator`, as .ci/run does) or $ANIMKIT_GLTF_VALIDATOR")


def validate(*paths: Path) -> list[dict]:
    d = validator_dir()
    out = subprocess.run(["node", str(SCRIPT), str(d), *map(str, paths)], capture_output=True, text=True,
                         check=True, timeout=120)
    return json.loads(out.stdout)


def assert_valid(*paths: Path) -> None:
    for report in validate(*paths):
        issues = report["issues"]
        bad = [f"{m['code']} at {m.get('pointer')}: {m['message']}" for m in issues["messages"]
               if m["severity"] in (0, 1)]  # 0 error, 1 warning (2 info, 3 hint are fine)
        assert issues["numErrors"] == 0 and issues["numWarnings"] == 0, (report["file"], bad)


# --- the files ------------------------------------------------------------------------------------------


def _save(path: Path, scene: Scene, clip=None, **options) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return animkit.save(path, scene, clip, **options)


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[str, tuple[Path, Scene, list[Clip]]]:
    out = tmp_path_factory.mktemp("gltf")
    files: dict[str, tuple[Path, Scene, list[Clip]]] = {}
    for name in ("humanoid", "wave", "walk", "six_axis_arm"):
        sc = animkit.load(SCENES / f"{name}.toml")
        files[name] = (_save(out / f"{name}.glb", sc), sc, list(sc.clips.values()))
    bvh = animkit.load(DATA / "cmu_02_01_walk.bvh")
    files["bvh"] = (_save(out / "walk_bvh.glb", bvh), bvh, list(bvh.clips.values()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        panda = animkit.load(DATA / "franka_panda.urdf")
    files["urdf"] = (_save(out / "panda.gltf", panda), panda, [])
    files["urdf_embedded"] = (_save(out / "panda_embedded.gltf", panda, buffers="embedded"), panda, [])
    human = animkit.load(SCENES / "humanoid.toml")
    reach = animkit.bake_reach(human.figure, "hand_r", human.reach.target, chain="arm",
                               duration=0.5, hold=0.1, quiet=True)
    files["reach"] = (_save(out / "reach.glb", human, reach.clip), human, [reach.clip])
    for name, data in (("cesium", "CesiumMan.glb"), ("rigged_figure", "RiggedFigure.glb"),
                       ("rigged_simple", "RiggedSimple.glb")):
        character = animkit.load(DATA / data)
        files[name] = (_save(out / f"{name}.glb", character), character, list(character.clips.values()))
    return files


FILES = ["humanoid", "wave", "walk", "six_axis_arm", "bvh", "urdf", "urdf_embedded", "reach", "cesium",
         "rigged_figure", "rigged_simple"]


@pytest.mark.parametrize("name", FILES)
def test_read_back_by_animkit(written, name) -> None:
    """animkit.load of the written file: the same world matrices for every node, clip and frame (1e-6 of the
    figure's size), and the same meshes where the figure had its own (a loaded character)."""
    path, scene, clips = written[name]
    back = animkit.load(path)
    fig, fig2 = scene.figure, back.figure
    names2 = set(fig2.node_names)
    # the file's own root "world" is reused as the root when it is the only one; else it reads as "world_0"
    rows = [fig2.node_names.index(n if n in names2 and (n != fig2.root.name or f"{n}_0" not in names2) else f"{n}_0")
            for n in fig.node_names]
    size = fig.size()
    C = np.eye(4)
    if scene.up == "z":
        C = fig2.world_batch(fig2.rest_pose()[None])[0, fig2.node_names.index(f"{fig.name}_z_up")]
    assert sorted(back.clips) == sorted(c.name for c in clips)
    for clip in clips or [None]:
        t = clip.frame_times() if clip is not None else np.zeros(1)
        poses = dataclasses.replace(clip, loop="once").sample(t) if clip is not None else fig.rest_pose()[None]
        poses2 = back.clips[clip.name].sample(t) if clip is not None else fig2.rest_pose()[None]
        W = C @ fig.world_batch(poses)
        W2 = fig2.world_batch(poses2)[:, rows]
        assert np.abs(W2[..., :3, 3] - W[..., :3, 3]).max() <= 1e-6 * size
        assert np.abs(W2[..., :3, :3] - W[..., :3, :3]).max() <= 4e-6
    if scene.meshes:
        assert [m.name for m in back.meshes] == [m.name for m in scene.meshes]
        for m, m2 in zip(scene.meshes, back.meshes, strict=True):
            np.testing.assert_array_equal(m2.faces, m.faces)
            np.testing.assert_allclose(m2.rest_positions, m.rest_positions, atol=1e-6 * size)
            assert (m2.uvs is None) == (m.uvs is None) and (m2.texture is None) == (m.texture is None)
            if m.uvs is not None:
                np.testing.assert_allclose(m2.uvs, m.uvs, atol=1e-7)
            if m.texture is not None:
                np.testing.assert_array_equal(m2.texture, m.texture)  # PNG is lossless
            np.testing.assert_allclose(m2.base_color, m.base_color)
            np.testing.assert_allclose(m2.weights, m.weights, atol=1e-7)
            np.testing.assert_allclose(m2.skin.inverse_bind, m.skin.inverse_bind, atol=1e-6)
            clip = clips[0]
            t = clip.frame_times()
            P = m.positions(fig.world_batch(clip.sample(t)))
            P2 = m2.positions(fig2.world_batch(back.clips[clip.name].sample(t)))
            assert np.abs(P2 - P).max() <= 1e-5 * size
    else:
        assert len(back.meshes) == 1 and back.meshes[0].skinned  # the drawn geometry, skinned to the bones


@pytest.mark.parametrize("name", FILES)
def test_world_transforms_match_at_every_frame(written, name) -> None:
    path, scene, clips = written[name]
    check_against_figure(path, scene, clips)


def test_every_written_file_passes_the_khronos_validator(written) -> None:
    assert_valid(*(written[n][0] for n in FILES))


def test_the_validator_is_not_vacuous(tmp_path, written) -> None:
    """A file with a broken accessor is reported: the validator really runs and reads what we give it."""
    doc = json.loads(written["urdf"][0].read_text())
    doc["accessors"][0]["count"] += 10 ** 6
    bad = tmp_path / "bad.gltf"
    shutil.copy(written["urdf"][0].with_suffix(".bin"), tmp_path / "panda.bin")
    bad.write_text(json.dumps(doc))
    assert validate(bad)[0]["issues"]["numErrors"] > 0


def test_glb_container_layout(written) -> None:
    """GLB: magic, version 2, total length; a JSON chunk then a BIN chunk, each 4-byte aligned."""
    data = written["humanoid"][0].read_bytes()
    magic, version, length = np.frombuffer(data[:12], "<u4")
    assert (magic, version, length) == (0x46546C67, 2, len(data))
    jlen, jtype = np.frombuffer(data[12:20], "<u4")
    assert jtype == 0x4E4F534A and jlen % 4 == 0
    json.loads(data[20:20 + jlen])
    blen, btype = np.frombuffer(data[20 + jlen:28 + jlen], "<u4")
    assert btype == 0x004E4942 and blen % 4 == 0 and 28 + jlen + blen == len(data)


def test_gltf_external_bin_and_embedded_hold_the_same(written) -> None:
    ext, emb = Decoded(written["urdf"][0]), Decoded(written["urdf_embedded"][0])
    assert ext.gltf.buffers[0].uri == "panda.bin" and emb.gltf.buffers[0].uri.startswith("data:")
    assert ext.blob == emb.blob


# --- exactness: channels kept at the clip's keys reproduce it between keys too --------------------------


def _rich_figure() -> Figure:
    tilt = matrix_from_quaternion(quaternion_from_axis_angle([1.0, 2.0, 0.5], 0.7))
    fig = Figure("base", joint=free("root"), data=Box((0.3, 0.2, 0.3)), name="rich")
    fig.add("hinge", "base", offset=(0, 0.4, 0), rotation=tilt, joint=hinge("hinge", [0.3, -1.0, 2.0]),
            data=Box((0.1, 0.3, 0.1)))
    fig.add("slide", "hinge", offset=(0.1, 0.3, 0), joint=slider("slide", [1.0, 1.0, 0.0]), data=Box((0.1, 0.1, 0.2)))
    fig.add("ball", "slide", offset=(0, 0.2, 0.1), rotation=tilt.T, joint=ball("ball", "zxy"),
            data=Box((0.2, 0.1, 0.1)))
    fig.add("squad", "ball", offset=(0, 0.2, 0), joint=ball("squad", "xyz"), data=Box((0.1, 0.2, 0.1)))
    fig.add("turn_slide", "squad", offset=(0, 0.2, 0),
            joint=custom("turn_slide", [("revolute", "z"), ("prismatic", "x")]), data=Box((0.1, 0.1, 0.1)))
    fig.add("steps", "turn_slide", offset=(0.2, 0, 0), joint=custom("steps", [("revolute", "x"), ("revolute", "y")]),
            data=Box((0.1, 0.1, 0.1)))
    fig.add("eased", "steps", offset=(0.2, 0, 0), joint=slider("eased", "y"), data=Box((0.1, 0.1, 0.1)))
    fig.add("spin", "eased", offset=(0, 0.2, 0), rotation=tilt, joint=ball("spin", "yxz"), data=Box((0.1, 0.1, 0.1)))
    fig.add("grow", "spin", offset=(0, 0.2, 0), rotation=tilt,
            joint=custom("grow", [("scale", "x"), ("scale", "z")]), data=Box((0.1, 0.1, 0.1)))
    return fig


def _q(axis, angle):
    return quaternion_from_axis_angle(np.asarray(axis, float) / np.linalg.norm(axis), angle)


def _rich_clip(fig: Figure) -> Clip:
    t = [0.0, 0.4, 1.1, 1.5]
    tracks = [
        Track("root.tx", t, [0.0, 0.3, -0.2, 0.5], "cubic"),
        Track("root.tz", [0.2, 0.9], [0.1, -0.4], "linear"),
        Track("hinge.r", t, [0.0, 4.0, -1.0, 2.5], "linear"),  # a 4 rad turn: split so slerp stays short
        Track("slide.t", t, [0.0, 0.2, -0.1, 0.3], ("bezier", "linear", "cubic", "linear"),
              in_slopes=[0.1, -0.3, 0.4, 0.0], out_slopes=[0.5, 0.2, -0.6, 0.0]),
        RotationTrack("ball", t, [_q([0, 0, 1], 0), _q([1, 1, 0], 2.0), _q([0, 1, 1], -1.5), _q([1, 0, 0], 0.3)]),
        RotationTrack("squad", t, [_q([0, 0, 1], 0), _q([1, 1, 0], 1.0), _q([0, 1, 1], -1.0), _q([1, 0, 0], 0.3)],
                      "squad"),
        Track("turn_slide.rz", t, [0.0, 0.5, 1.0, 0.2], "linear"),
        Track("turn_slide.tx", t, [0.1, 0.2, 0.0, 0.1], "linear"),
        Track("steps.rx", t, [0.0, 0.5, 1.0, 0.2], "step"),
        Track("steps.ry", [0.3, 1.2], [0.4, -0.2], "step"),
        Track("eased.ty", t, [0.0, 0.5, 1.0, 0.2], "linear", easing="ease_in_out"),
        RotationTrack("spin", t, [_q([0, 0, 1], 0), _q([1, 1, 0], 1.0), _q([0, 1, 1], -1.0), _q([1, 0, 0], 0.3)],
                      "cubic", in_tangents=[[0.0, 0.1, 0.2, 0.0], [0.3, -0.2, 0.1, 0.4], [0.0, 0.5, -0.5, 0.1],
                                            [0.1, 0.0, 0.0, 0.2]],
                      out_tangents=[[0.2, -0.1, 0.0, 0.3], [0.1, 0.2, 0.3, 0.0], [-0.4, 0.0, 0.2, 0.1],
                                    [0.0, 0.0, 0.0, 0.0]]),
        Track("grow.sx", t, [1.0, 1.5, 0.5, 2.0], "linear"),
        Track("grow.sz", [0.1, 1.0], [1.0, 3.0], "linear"),
    ]
    return Clip.build(fig, tracks, name="rich", duration=1.6, fps=10.0)


def test_interpolations_map_exactly_where_glTF_has_them(tmp_path) -> None:
    fig = _rich_figure()
    clip = _rich_clip(fig)
    scene = Scene(fig)
    with pytest.warns(UserWarning, match=r"clip 'rich': 3 channel\(s\) sampled at the clip's 10 fps") as rec:
        path = animkit.save(tmp_path / "rich.glb", scene, clip)
    message = str(rec[0].message)
    dec = check_against_figure(path, scene, [clip])
    anim = dec.gltf.animations[0]
    kind = {(dec.names[c.target.node], c.target.path): anim.samplers[c.sampler].interpolation for c in anim.channels}
    assert kind == {("base", "translation"): "CUBICSPLINE", ("hinge", "rotation"): "LINEAR",
                    ("slide", "translation"): "CUBICSPLINE", ("ball", "rotation"): "LINEAR",
                    ("squad", "rotation"): "LINEAR", ("turn_slide", "translation"): "LINEAR",
                    ("turn_slide", "rotation"): "LINEAR", ("steps", "rotation"): "STEP",
                    ("eased", "translation"): "LINEAR", ("spin", "rotation"): "CUBICSPLINE",
                    ("grow", "scale"): "LINEAR"}
    assert "turn_slide.translation" in message and "eased.translation" in message
    assert "squad.rotation" in message and "steps.rotation" not in message and "turn_slide.rotation" not in message
    # between the frames: the exact channels still match, node by node (local L·A)
    t = np.linspace(0.0, 1.6, 397)
    poses = clip.sample(t)
    local = dec.local(0, t.astype(np.float32).astype(float))  # a player's float32 clock
    exact = {"base", "hinge", "slide", "ball", "steps", "spin", "grow"}
    start = 0
    for arc in fig.arcs():
        k = arc.joint.dof_count
        ref = arc.L @ arc.joint.matrix(poses[:, start:start + k])
        start += k
        if arc.child.name in exact:
            got = local[:, dec.names.index(arc.child.name)]
            np.testing.assert_allclose(got, ref, atol=2e-6, err_msg=arc.child.name)
    # two readers, one file: animkit's reader and the spec sampler above agree at every time, channel by channel
    back = animkit.load(path)
    W_back = back.figure.world_batch(back.clip("rich").sample(t))
    W_spec = dec.world(0, t)
    for name in fig.node_names:
        np.testing.assert_allclose(W_back[:, back.figure.node_names.index(name)], W_spec[:, dec.names.index(name)],
                                   atol=2e-6, err_msg=name)
    assert_valid(path)


@settings(max_examples=15)
@example(values=[0.0, 0.0, 0.0], kinds=["linear"] * 6, angles=[0.0, 0.0, 0.0, 0.0, 3.0, -6.0],
         gaps=[0.5, 0.5, 0.75, 0.25, 0.125, 1.0])  # a 9 rad/s turn late in the clip: float32 key times show
@given(st.lists(st.floats(-2.0, 2.0), min_size=3, max_size=6),
       st.lists(st.sampled_from(["linear", "cubic", "bezier"]), min_size=6, max_size=6),
       st.lists(st.floats(-6.0, 6.0), min_size=3, max_size=6),
       st.lists(st.floats(0.05, 1.0), min_size=6, max_size=6))
def test_slider_and_hinge_keys_are_exact_between_keys(tmp_path_factory, values, kinds, angles, gaps) -> None:
    """Random keys: a Hermite slider (CUBICSPLINE) and a linear hinge (LINEAR, long turns split) match
    animkit at 50 times per second, not only at the keys."""
    fig = Figure("base", name="pair")
    fig.add("a", "base", offset=(0, 0.5, 0), joint=slider("s", [0.0, 1.0, 1.0]), data=Box((0.1, 0.1, 0.1)))
    fig.add("b", "a", offset=(0.3, 0, 0), rotation=matrix_from_quaternion(_q([1, 0, 1], 0.4)),
            joint=hinge("h", [1.0, 2.0, 3.0]), data=Box((0.1, 0.1, 0.1)))
    ts = np.cumsum([0.0] + gaps)[: len(values)]
    th = np.cumsum([0.0] + gaps)[: len(angles)]
    clip = Clip.build(fig, [Track("s.t", ts, values, tuple(kinds[: len(values)])),
                            Track("h.r", th, angles, "linear")], name="keys", fps=24.0)
    path = tmp_path_factory.mktemp("hyp") / "pair.glb"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing here may be resampled
        animkit.save(path, Scene(fig), clip)
    dec = Decoded(path)
    t = np.linspace(0.0, clip.duration, int(clip.duration * 50) + 2)
    W_fig = fig.world_batch(clip.sample(t))
    W = dec.world(0, t.astype(np.float32).astype(float))[:, [dec.names.index(n) for n in fig.node_names]]
    # glTF stores key times as float32: a time off by one float32 step (2⁻²³·t) turns the hinge by ω·2⁻²³·t
    omega = float(np.max(np.abs(np.diff(angles[: len(th)]) / np.diff(th)))) if len(th) > 1 else 0.0
    np.testing.assert_allclose(W, W_fig, atol=1e-5 + omega * 2.0**-23 * clip.duration)


# --- the command line -----------------------------------------------------------------------------------


def test_convert_toml_and_bvh_to_gltf(tmp_path) -> None:
    out = tmp_path / "walk.glb"
    r = run_cli("convert", str(SCENES / "walk.toml"), str(out))
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout
    sc = animkit.load(SCENES / "walk.toml")
    check_against_figure(out, sc, list(sc.clips.values()))
    out2 = tmp_path / "walk.gltf"
    r = run_cli("convert", str(DATA / "cmu_02_01_walk.bvh"), str(out2), "--buffers", "embedded")
    assert r.returncode == 0, r.stderr
    assert "sampled at the clip's 120 fps frames" in r.stderr  # BVH's Euler frames: said, not hidden
    assert not (tmp_path / "walk.bin").exists()
    assert_valid(out, out2)


def test_convert_refuses_what_the_target_cannot_hold(tmp_path) -> None:
    r = run_cli("convert", str(SCENES / "humanoid.toml"), str(tmp_path / "x.obj"))
    assert r.returncode == 2 and "output file type" in r.stderr and len(r.stderr.splitlines()) == 1
    wave = animkit.load(SCENES / "wave.toml")
    two = tmp_path / "two.toml"
    animkit.save(two, wave, dataclasses.replace(wave.clip(), name="again"))
    r = run_cli("convert", str(two), str(tmp_path / "two.bvh"))
    assert r.returncode == 2 and "BVH file holds one: pick one with --clip" in r.stderr, r.stderr
    r = run_cli("convert", str(two), str(tmp_path / "two.bvh"), "--clip", "again")
    assert r.returncode == 0, r.stderr
    r = run_cli("convert", str(DATA / "franka_panda.urdf"), str(tmp_path / "panda.bvh"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) <= 2, r.stderr  # a warning + one error line
    assert not (tmp_path / "panda.bvh").exists()
    for target in ("cesium.bvh", "cesium.toml"):  # a character's skinned mesh has no place in BVH or TOML
        r = run_cli("convert", str(DATA / "CesiumMan.glb"), str(tmp_path / target))
        assert r.returncode == 2 and "holds no meshes; convert it to .glb or .gltf" in r.stderr, r.stderr
        assert not (tmp_path / target).exists()


def test_bvh_to_glb_to_bvh_keeps_the_motion(tmp_path) -> None:
    """BVH → .glb → BVH (the skeleton only): the frame count, the frame time (CMU's 0.0083333 s, 120.0048 fps, not
    rounded to 120), every channel's value at every frame and every joint's world position survive."""
    glb, bvh = tmp_path / "walk.glb", tmp_path / "walk.bvh"
    assert run_cli("convert", str(DATA / "cmu_02_01_walk.bvh"), str(glb)).returncode == 0
    r = run_cli("convert", str(glb), str(bvh))
    assert r.returncode == 2 and "--no-meshes" in r.stderr  # the drawn mesh came along: said, not dropped
    r = run_cli("convert", str(glb), str(bvh), "--no-meshes")
    assert r.returncode == 0, r.stderr
    text = bvh.read_text()
    assert "\nFrames: 344\n" in text  # as in the source file
    assert abs(float(text.split("Frame Time:")[1].split()[0]) / 0.0083333 - 1) < 1e-7  # float32 key times
    a, b = animkit.load(DATA / "cmu_02_01_walk.bvh"), animkit.load(bvh)
    ta, tb = a.clip().frame_times(), b.clip().frame_times()
    assert len(tb) == len(ta) == 344
    Qa, Qb = a.clip().sample(ta), b.clip().sample(tb)  # each file's own frames, k · frame time
    na, nb = a.figure.dof_names, b.figure.dof_names
    d = Qb - Qa[:, [na.index(n) for n in nb]]
    assert np.abs((d + np.pi) % (2 * np.pi) - np.pi).max() < 1e-5  # radians; float32 quaternions in between
    gone = [na.index(n) for n in set(na) - set(nb)]  # channels the file keys at a constant 0 are fixed joints now
    np.testing.assert_array_equal(Qa[:, gone], np.broadcast_to(a.figure.rest_pose()[gone], (len(ta), len(gone))))
    Pa = a.figure.world_positions(Qa)
    Pb = b.figure.world_positions(Qb)[:, [b.figure.node_names.index(n) for n in a.figure.node_names]]
    assert np.abs(Pb - Pa).max() <= 1e-4 * a.figure.size()  # BVH text keeps 6 decimals of each angle


@pytest.mark.parametrize("name", ["CesiumMan.glb", "RiggedFigure.glb", "RiggedSimple.glb"])
def test_glb_to_toml_keeps_the_figure_and_its_clips(tmp_path, name) -> None:
    """`animkit convert X.glb X.toml --no-meshes`: the reader's custom joints (translation, a ZYX ball, scale) go
    to TOML as `kind = "custom"` joints; read back, every node's world matrix equals the glTF's to 1e-9 of the
    figure's size at every frame of every clip and between frames, and the rig (rotation-DOF chains) survives."""
    out = tmp_path / "x.toml"
    r = run_cli("convert", str(DATA / name), str(out), "--no-meshes")
    assert r.returncode == 0, r.stderr
    a, b = animkit.load(DATA / name), animkit.load(out)
    customs = [j for j in a.figure.joint_names if a.figure.joint(j).kind == "custom"]
    assert (name == "RiggedSimple.glb") == (not customs)  # its file keys rotation only: ball joints
    assert out.read_text().count('kind = "custom", channels = [') == len(customs)
    assert b.figure.dof_names == a.figure.dof_names
    ra, rb = a.figure.rig, b.figure.rig  # the human ranges are found again from the written rest (to its rounding)
    assert (rb.chains, rb.effectors, set(rb.limits)) == (ra.chains, ra.effectors, set(ra.limits))
    for j, cone in ra.limits.items():
        np.testing.assert_allclose(np.asarray(rb.limits[j].reference), np.asarray(cone.reference), atol=1e-6)
    order = [b.figure.node_names.index(n) for n in a.figure.node_names]
    assert set(b.clips) == set(a.clips)
    for cname, ca in a.clips.items():
        cb = b.clips[cname]
        assert cb.fps == ca.fps and cb.duration == pytest.approx(ca.duration, abs=1e-12)
        t = np.union1d(ca.frame_times(), np.linspace(0.0, ca.duration, 101))
        Wa, Wb = a.figure.world_batch(ca.sample(t)), b.figure.world_batch(cb.sample(t))[:, order]
        assert np.abs(Wb - Wa).max() <= 1e-9 * a.figure.size()


def test_reach_and_compare_save_gltf(tmp_path) -> None:
    glb = tmp_path / "reach.glb"
    r = run_cli("reach", str(SCENES / "humanoid.toml"), "--chain", "arm", "--duration", "0.3", "--hold", "0",
             "-o", str(tmp_path / "reach.gif"), "--size", "48x36", "-q", "--save", str(glb))
    assert r.returncode == 0, r.stderr
    dec = Decoded(glb)
    assert [a.name for a in dec.gltf.animations] == ["reach"]
    cmp = tmp_path / "compare.glb"
    r = run_cli("compare", str(SCENES / "humanoid.toml"), "--chains", "arm,torso", "--duration", "0.3", "--hold", "0",
             "-o", str(tmp_path / "cmp.gif"), "--size", "48x36", "-q", "--save", str(cmp))
    assert r.returncode == 0, r.stderr
    assert [a.name for a in Decoded(cmp).gltf.animations] == ["arm", "torso"]
    assert_valid(glb, cmp)


def test_save_options_are_checked(tmp_path) -> None:
    sc = animkit.load(SCENES / "humanoid.toml")
    with pytest.raises(animkit.AnimkitError, match="save option"):
        animkit.save(tmp_path / "x.glb", sc, buffers="embedded")
    with pytest.raises(animkit.AnimkitError, match="'external' or 'embedded'"):
        animkit.save(tmp_path / "x.gltf", sc, buffers="inline")
    assert not list(tmp_path.iterdir())  # nothing half-written


# --- three.js's GLTFLoader as a second independent reader (its own interpolants and CPU skinning) --------

THREE_DIR = Path(__file__).parent / "node"


def threejs(mode: str, path: Path, times: np.ndarray) -> dict:
    if shutil.which("node") is None:
        pytest.skip("Node is not installed: three.js's GLTFLoader runs under Node")
    if not (THREE_DIR / "node_modules" / "three").is_dir():
        pytest.skip("three.js not installed: npm install --prefix tests/node")
    out = subprocess.run(["node", str(THREE_DIR / "threejs_oracle.mjs"), mode, str(path),
                          json.dumps([float(x) for x in times])], capture_output=True, text=True, check=True,
                         timeout=300)
    return json.loads(out.stdout)


@pytest.mark.parametrize("name", ["wave", "six_axis_arm", "bvh", "rich"])
def test_threejs_plays_and_skins_what_animkit_wrote(tmp_path, name) -> None:
    """three.js (AnimationMixer, LoopOnce) gives every node's world matrix and every skinned vertex as
    animkit would: W_file = C · W_figure (C the z-up wrapper or I), v(t) = C W_j(t) (C W_j(rest))⁻¹ v_bind."""
    if name == "bvh":
        scene = animkit.load(DATA / "cmu_02_01_walk.bvh")
    elif name == "rich":
        scene = Scene(_rich_figure())
        scene = dataclasses.replace(scene, clips={"rich": _rich_clip(scene.figure)})
    else:
        scene = animkit.load(SCENES / f"{name}.toml")
    clip = scene.clip()
    path = _save(tmp_path / f"{name}.gltf", scene, buffers="embedded")
    fig = scene.figure
    frames = clip.frame_times()
    t = frames[:: max(1, len(frames) // 20)].astype(np.float32).astype(float)
    once = dataclasses.replace(clip, loop="once")
    W = fig.world_batch(once.sample(t))
    C = Z_UP if scene.up == "z" else np.eye(4)
    N = len(fig.node_names)

    def worlds(times: np.ndarray) -> np.ndarray:
        got = threejs("world", path, times)[clip.name]
        return np.array([[np.array(frame[str(i)]).reshape(4, 4).T for i in range(N)] for frame in got])

    W3 = worlds(t)
    size = fig.size()
    assert np.abs(W3[..., :3, 3] - (C @ W)[..., :3, 3]).max() <= 1e-5 * size  # three.js computes in float32
    assert np.abs(W3[..., :3, :3] - (C @ W)[..., :3, :3]).max() <= 1e-5
    if name == "rich":  # between frames: each exactly written node's local L·A, from three.js's world matrices
        tt = np.linspace(0.0, clip.duration, 41).astype(np.float32).astype(float)
        W3 = worlds(tt)
        poses = clip.sample(tt)
        start = 0
        for i, arc in enumerate(fig.arcs()):
            k = arc.joint.dof_count
            ref = arc.L @ arc.joint.matrix(poses[:, start:start + k])
            start += k
            if arc.child.name in ("base", "hinge", "slide", "ball", "steps", "spin", "grow"):
                parent = np.eye(4) if arc.parent is None else W3[:, fig.node_names.index(arc.parent.name)]
                np.testing.assert_allclose(np.linalg.inv(parent) @ W3[:, i], ref, atol=2e-5, err_msg=arc.child.name)
    skins = threejs("skin", path, t)[clip.name]
    dec = Decoded(path)
    prim = dec.gltf.meshes[0].primitives[0]
    v = dec.accessor(prim.attributes.POSITION)
    joint = dec.accessor(prim.attributes.JOINTS_0)[:, 0].astype(int)
    rest = C @ fig.world_batch(fig.rest_pose()[None])[0]
    for f, frame in enumerate(skins):
        M = (C @ W[f]) @ np.linalg.inv(rest)
        want = np.einsum("vij,vj->vi", M[joint][:, :3, :3], v) + M[joint][:, :3, 3]
        np.testing.assert_allclose(np.array(frame[0]["positions"]).reshape(-1, 3), want, atol=1e-5 * size)


Z_UP = np.array([[1.0, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]])


def test_static_scale_and_mirror_in_L_are_kept(tmp_path) -> None:
    """An affine L (glTF's static scale, a mirror among them) is written as TRS with a signed scale; a
    non-uniform one followed by a turning joint would shear the node, which glTF cannot hold: a clear error."""
    def figure(diag) -> Figure:
        fig = Figure("base", name="scaled")
        L = np.eye(4)
        L[:3, :3] = matrix_from_quaternion(_q([1, 2, 3], 0.8)) @ np.diag(diag)
        L[:3, 3] = (0.1, 0.2, 0.3)
        fig.add("child", "base", L=L, joint=hinge("h", "y"), data=Box((0.1, 0.2, 0.3)))
        return fig

    fig = figure([-2.0, 2.0, 2.0])
    clip = Clip.build(fig, [Track("h.ry", [0.0, 1.0], [0.0, 1.0])], name="turn")
    path = _save(tmp_path / "scaled.glb", Scene(fig), clip)
    dec = check_against_figure(path, Scene(fig), [clip])
    assert dec.gltf.nodes[1].scale is not None and dec.gltf.nodes[1].scale[0] < 0
    assert_valid(path)
    fig = figure([-2.0, 0.5, 3.0])
    clip = Clip.build(fig, [Track("h.ry", [0.0, 1.0], [0.0, 1.0])], name="turn")
    with pytest.raises(animkit.AnimkitError, match="node 'child': clip 'turn' turns its joint after a non-uniform"):
        animkit.save(tmp_path / "sheared.glb", Scene(fig), clip)
    assert not (tmp_path / "sheared.glb").exists()


def test_rigid_character_meshes_ride_their_nodes(tmp_path) -> None:
    """A loaded character's static (non-skinned) meshes hang on their nodes: read back, they are placed
    by the same world matrices (W[node] · v) at every frame; a second mesh on one node gets a child node."""
    from animkit.look.mesh import Mesh

    fig = Figure("base", name="rigid")
    fig.add("arm", "base", offset=(0, 0.5, 0), joint=hinge("h", [1.0, 1.0, 0.0]))
    tri = np.array([[0, 1, 2], [0, 2, 3]])
    quad = np.array([[0.0, 0, 0], [0.3, 0, 0], [0.3, 0.2, 0], [0, 0.2, 0]])
    normals = np.tile([0.0, 0.0, 1.0], (4, 1))
    meshes = tuple(Mesh(f"plate{i}", "arm", 1, tri, quad + 0.1 * i, normals,
                        base_color=np.array([0.2 * i, 0.5, 0.7, 1.0])) for i in range(2))
    clip = Clip.build(fig, [Track("h.r", [0.0, 1.0], [0.0, 2.0])], name="swing")
    scene = Scene(fig, clips={"swing": clip}, meshes=meshes)
    path = _save(tmp_path / "rigid.glb", scene)
    assert_valid(path)
    back = animkit.load(path)
    t = clip.frame_times()
    W = fig.world_batch(clip.sample(t))
    W2 = back.figure.world_batch(back.clip("swing").sample(t))
    by_name = {m.name: m for m in back.meshes}
    for m in meshes:
        np.testing.assert_allclose(by_name[m.name].positions(W2), m.positions(W), atol=1e-6)
        np.testing.assert_allclose(by_name[m.name].base_color, m.base_color, atol=1e-7)
