"""Characters as users bring them (issue 25 §3): framing from the surface, glTF → BVH, linear keys, humanoid limits,
quadrupeds."""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import animkit
from animkit.render.clip import render_clip

from .conftest import DATA


def glb_parts(data: bytes) -> tuple[dict, bytes]:
    """A .glb's JSON and its BIN chunk (GLB 2.0, section 4.4)."""
    (jlen,) = struct.unpack_from("<I", data, 12)
    doc = json.loads(data[20:20 + jlen])
    at = 20 + jlen
    (blen,) = struct.unpack_from("<I", data, at)
    return doc, data[at + 8:at + 8 + blen]


def glb_from(doc: dict, binary: bytes) -> bytes:
    j = json.dumps(doc).encode()
    j += b" " * (-len(j) % 4)
    b = bytes(binary) + b"\0" * (-len(binary) % 4)
    return (struct.pack("<III", 0x46546C67, 2, 28 + len(j) + len(b)) + struct.pack("<II", len(j), 0x4E4F534A) + j
            + struct.pack("<II", len(b), 0x004E4942) + b)


def with_camera_and_light(src: Path, out: Path) -> Path:
    """``src`` as a Blender export leaves it: a camera node and a light (an empty node) several metres away."""
    doc, binary = glb_parts(src.read_bytes())
    doc.setdefault("cameras", []).append({"type": "perspective", "perspective": {"yfov": 0.7, "znear": 0.1}})
    doc["nodes"].append({"name": "Camera", "camera": len(doc["cameras"]) - 1, "translation": [7.4, 5.3, 6.9],
                         "rotation": [-0.2, 0.4, 0.1, (1 - 0.21) ** 0.5]})
    doc["nodes"].append({"name": "Light", "translation": [-4.1, 5.9, -1.0]})
    n = len(doc["nodes"])
    doc["scenes"][doc.get("scene", 0)]["nodes"] += [n - 2, n - 1]
    out.write_bytes(glb_from(doc, binary))
    return out


def ink_box(image: np.ndarray) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) of the pixels that are neither the white background nor the grey grid: the
    character's coloured or shaded surface."""
    a = image.astype(int)
    ink = (a.max(axis=2) - a.min(axis=2) > 40) | (a.max(axis=2) < 120)
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    return int(rows[0]), int(rows[-1]), int(cols[0]), int(cols[-1])


# --- framing from the surface -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["CesiumMan.glb", "RiggedFigure.glb"])
def test_camera_and_light_nodes_do_not_shrink_the_character(name: str, tmp_path: Path) -> None:
    plain = animkit.load(DATA / name)
    blender = animkit.load(with_camera_and_light(DATA / name, tmp_path / name))
    assert {"Camera", "Light"} <= set(blender.figure.node_names)
    size = (320, 240)
    a = np.asarray(Image.open(io.BytesIO(animkit.still(plain, size=size)._repr_png_())))
    b = np.asarray(Image.open(io.BytesIO(animkit.still(blender, size=size)._repr_png_())))
    Image.fromarray(b).save(tmp_path / "still.png")
    top, bottom, left, right = ink_box(b)
    assert (bottom - top) > 0.6 * size[1], (top, bottom)  # the character fills the frame's height, not a sixth
    assert ink_box(a) == (top, bottom, left, right)  # framed exactly as without the extra nodes
    # the clip renderer frames the same way: over the whole clip, on the skinned surface only
    out = render_clip(blender, tmp_path / "clip.gif", size=size, fps=5, quiet=True)
    frames = Image.open(out.path)
    heights = []
    for k in range(frames.n_frames):
        frames.seek(k)
        t, btm, _, _ = ink_box(np.asarray(frames.convert("RGB")))
        heights.append(btm - t)
    assert max(heights) > 0.55 * size[1], heights


# --- glTF → BVH, glTF → glTF ------------------------------------------------------------------------------------

CHARACTERS = ["CesiumMan.glb", "RiggedFigure.glb", "Fox.glb"]


@pytest.mark.parametrize("name", CHARACTERS)
def test_gltf_character_written_as_bvh_has_the_same_fk_on_every_frame(name: str, tmp_path: Path) -> None:
    """The baked BVH (rest rotations in the channels, OFFSETs only) read back by animkit's BVH reader places every
    node where the glTF figure places it, at every frame of every clip, to 1e-6 of the figure's height."""
    scene = animkit.load(DATA / name)
    fig = scene.figure
    for clip in scene.clips.values():
        out = animkit.save(tmp_path / f"{clip.name}.bvh", scene, clip)
        text = out.read_text()
        assert "OFFSET" in text and "CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation" in text
        back = animkit.load(out)
        n = int(np.floor(clip.duration * clip.fps + 1e-9)) + 1
        assert back.clip().fps == pytest.approx(clip.fps)
        frames = np.asarray(back.clips[next(iter(back.clips))].sample(np.arange(n) / clip.fps))
        assert len(back.figure.node_names) in (len(fig.node_names), len(fig.node_names) - 1)
        skip = len(fig.node_names) - len(back.figure.node_names)  # glTF's static ``world`` root, when left out
        P = fig.world_positions(clip.sample(np.arange(n) / clip.fps))[:, skip:]
        Q = back.figure.world_positions(frames)
        height = np.ptp(P.reshape(-1, 3), axis=0).max()
        assert np.abs(P - Q).max() <= 1e-6 * height
        # internal nodes keep their names (End Sites read back as <parent>_end)
        kept = [a.child.name for a in back.figure.arcs() if a.joint.dofs]
        assert set(kept) <= set(fig.node_names)


@pytest.mark.parametrize("name", CHARACTERS)
def test_gltf_round_trip_keeps_materials_and_mesh_node_names(name: str, tmp_path: Path) -> None:
    src_doc, _ = glb_parts((DATA / name).read_bytes())
    scene = animkit.load(DATA / name)
    out = animkit.save(tmp_path / name, scene)
    doc, _ = glb_parts(out.read_bytes())

    def mesh_nodes(d: dict) -> dict[str, tuple[float, float]]:
        out = {}
        for n in d["nodes"]:
            if "mesh" in n:
                mat = d["materials"][d["meshes"][n["mesh"]]["primitives"][0]["material"]]
                pbr = mat.get("pbrMetallicRoughness", {})
                out[n["name"]] = (pbr.get("metallicFactor", 1.0), pbr.get("roughnessFactor", 1.0))
        return out

    assert mesh_nodes(doc) == pytest.approx(mesh_nodes(src_doc))
    back = animkit.load(out)
    assert [(m.node, m.metallic, m.roughness) for m in back.meshes] == \
        [(m.node, m.metallic, m.roughness) for m in scene.meshes]
    # the skinned surface is unchanged by moving its node to the root (a skinned mesh's node transform counts for
    # nothing, glTF 2.0 §3.7.3.3)
    clip = scene.clip()
    t = np.linspace(0.0, clip.duration, 5)
    W0 = scene.figure.world_batch(clip.sample(t))
    W1 = back.figure.world_batch(back.clip().sample(t))
    v0 = scene.meshes[0].positions(W0)
    v1 = back.meshes[0].positions(W1)
    assert np.abs(v0 - v1).max() <= 1e-5 * scene.figure.size()


# --- --keys linear on every glTF writer --------------------------------------------------------------------------


def interpolations(path: Path) -> set[str]:
    doc = json.loads(path.read_text()) if path.suffix == ".gltf" else glb_parts(path.read_bytes())[0]
    return {s.get("interpolation", "LINEAR") for a in doc.get("animations", []) for s in a["samplers"]}


def assert_plays_at_frames(scene: animkit.Scene, clip: animkit.Clip, path: Path) -> None:
    """animkit reads ``path`` back to ``clip``'s world positions at its frames (float32 keys: 1e-5 of the size)."""
    back = animkit.load(path)
    t = clip.frame_times()
    P = scene.figure.world_positions(clip.sample(t))
    Q = back.figure.world_positions(back.clips[clip.name].sample(t))
    names = scene.figure.node_names
    idx = [back.figure.node_names.index(n) for n in names]
    assert np.abs(P - Q[:, idx]).max() <= 1e-5 * scene.figure.size()


def test_linear_keys_replace_cubic_splines_in_save(tmp_path: Path) -> None:
    from animkit.examples import load

    scene = load("walk")
    clip = scene.clip()
    auto = animkit.save(tmp_path / "auto.glb", scene)
    assert "CUBICSPLINE" in interpolations(auto)  # the walk's Catmull-Rom keys are cubic: the option has work to do
    for name in ("linear.glb", "linear.gltf"):
        out = animkit.save(tmp_path / name, scene, keys="linear")
        assert interpolations(out) <= {"LINEAR", "STEP"}
        assert_plays_at_frames(scene, clip, out)
    with pytest.raises(animkit.AnimkitError, match="cubic"):
        animkit.save(tmp_path / "x.glb", scene, keys="cubic")
    with pytest.raises(animkit.AnimkitError, match="keys"):
        animkit.save(tmp_path / "x.bvh", scene, keys="linear")


def test_linear_keys_on_the_command_line(tmp_path: Path) -> None:
    from animkit.cli import main
    from animkit.examples import load, resolve

    walk = resolve("walk")
    out = tmp_path / "walk.glb"
    assert main(["convert", str(walk), str(out), "--keys", "linear"]) == 0
    assert interpolations(out) <= {"LINEAR", "STEP"}
    scene = load("walk")
    assert_plays_at_frames(scene, scene.clip(), out)
    assert main(["convert", str(walk), str(tmp_path / "w.toml"), "--keys", "linear"]) == 2  # glTF only
    # the batch's convert: each task's save gets the same option
    from animkit.batch import COMMANDS

    batch_out = tmp_path / "batch.glb"
    COMMANDS["convert"].run(scene, walk, batch_out, {"suffix": ".glb", "keys": "linear"})
    assert interpolations(batch_out) <= {"LINEAR", "STEP"}
    # retarget -o x.glb: the target's own mesh animated, its keys linear
    out = tmp_path / "on_cesium.glb"
    assert main(["retarget", str(resolve("walk")), str(DATA / "CesiumMan.glb"), "-o", str(out), "--keys",
                 "linear", "--no-lock", "-q"]) == 0
    assert interpolations(out) <= {"LINEAR", "STEP"}
    auto = tmp_path / "on_cesium_auto.glb"
    assert main(["retarget", str(resolve("walk")), str(DATA / "CesiumMan.glb"), "-o", str(auto), "--no-lock",
                 "-q"]) == 0
    a, b = animkit.load(auto), animkit.load(out)
    t = a.clip().frame_times()
    Pa = a.figure.world_positions(a.clip().sample(t))
    Pb = b.figure.world_positions(b.clip().sample(t))
    assert np.abs(Pa - Pb).max() <= 1e-5 * a.figure.size()


@pytest.mark.skipif(not (Path(__file__).parent / "node" / "node_modules" / "three").is_dir(),
                    reason="npm package three missing: npm install --prefix tests/node")
def test_linear_keys_play_in_threejs_as_the_clip(tmp_path: Path) -> None:
    """three.js's GLTFLoader + AnimationMixer on the linear-keyed file gives every node's world matrix as animkit's
    clip at its frames."""
    import shutil

    from animkit.examples import load

    from .gltf_builder import gltf_text_from_glb
    from .test_gltf_threejs import _compare_worlds, three

    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    scene = load("walk")
    out = animkit.save(tmp_path / "walk.glb", scene, keys="linear")
    text = gltf_text_from_glb(out.read_bytes())
    times = scene.clip().frame_times()[::3]
    back = animkit.load(out)
    assert_plays_at_frames(scene, scene.clip(), out)
    _compare_worlds(back, json.loads(text), three("world", text, times, tmp_path), times)
