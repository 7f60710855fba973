"""The FBX reader (animkit.io.fbx) on the files tests/data/fbx/make_fbx.py made with Blender and Assimp: what it
reads (units, axes, names, clips, meshes, textures), the pipeline (convert to a validated .glb, render, batch), and
bad files (one ParseError naming the file). three.js's agreement is tests/test_fbx_threejs.py."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.apps.cli import main
from animkit.errors import AnimkitError, ParseError
from animkit.io import fbx
from animkit.model.chains import dof_indices

from .cli_helpers import run_cli

pytest.importorskip("ufbx", reason="ufbx (animkit[fbx]) is not installed")

DATA = Path(__file__).parent / "data" / "fbx"
CLIPS = ("Armature|walk_body", "Armature|wave_body")
ROOT = Path(__file__).parent.parent


def assert_valid(path: Path) -> None:
    """The Khronos glTF Validator (npm gltf-validator, run as tests/test_gltf_write.py does) finds no problem."""
    dirs = [Path(os.environ["ANIMKIT_GLTF_VALIDATOR"])] if os.environ.get("ANIMKIT_GLTF_VALIDATOR") else []
    dirs.append(ROOT / ".cache" / "npm" / "node_modules")
    found = [d for d in dirs if (d / "gltf-validator").is_dir()]
    if shutil.which("node") is None or not found:
        pytest.skip("node or the npm package gltf-validator (.cache/npm, as .ci/run installs it) is missing")
    out = subprocess.run(["node", str(ROOT / "tests" / "js" / "validate_gltf.mjs"), str(found[0]), str(path)],
                         capture_output=True, text=True, check=True, timeout=120)
    for report in json.loads(out.stdout):
        issues = report["issues"]
        bad = [f"{m['code']} at {m.get('pointer')}: {m['message']}" for m in issues["messages"] if m["severity"] < 2]
        assert issues["numErrors"] == 0 and issues["numWarnings"] == 0, bad


def _load(name: str) -> animkit.Scene:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return animkit.load(DATA / name)


@pytest.fixture(scope="module")
def cm() -> animkit.Scene:
    return _load("mixamo_yup_cm.fbx")


@pytest.fixture(scope="module")
def zup() -> animkit.Scene:
    return _load("mixamo_zup_77.fbx")


def test_units_and_axes_are_converted_and_said(cm, zup) -> None:
    # the same character written in centimetres Y-up and in metres Z-up stands the same in metres Y-up
    for s in (cm, zup):
        assert 1.3 < s.figure.size() < 1.8 and s.up == "y"
    W1 = cm.figure.world_batch(cm.figure.rest_pose()[None])[0]
    W2 = zup.figure.world_batch(zup.figure.rest_pose()[None])[0]
    i1, i2 = cm.figure.node_names.index("mixamorig:Head"), zup.figure.node_names.index("mixamorig:Head")
    np.testing.assert_allclose(W1[i1, :3, 3], W2[i2, :3, 3], atol=1e-5)
    assert W1[i1, 1, 3] > 1.3  # the head is up, in metres
    assert "units: centimetres (0.01 m), converted to metres" in cm.notes
    assert any("up +Z" in n for n in zup.notes) and any(n.startswith("FBX 7.7 binary") for n in zup.notes)
    assert any(n.startswith("FBX 7.4 binary") for n in cm.notes)


def test_clips_names_and_humanoid(cm) -> None:
    assert tuple(cm.clips) == CLIPS
    walk, wave = (cm.clip(c) for c in CLIPS)
    assert walk.fps == wave.fps == 30.0
    assert walk.duration == pytest.approx(1.1) and wave.duration == pytest.approx(3.0)
    assert cm.figure.rig.effectors["hand_r"] == "mixamorig:RightHand"
    assert cm.figure.rig.effectors["foot_l"] == "mixamorig:LeftFoot"


def test_skinned_mesh_texture_embedded_and_beside(cm, zup) -> None:
    for s in (cm, zup):
        (mesh,) = [m for m in s.meshes if m.skinned]
        assert mesh.texture is not None and mesh.texture.shape == (8, 8, 4)
        assert mesh.uvs is not None and mesh.weights is not None
        assert (mesh.weights > 0).sum(axis=1).max() == 5  # the pelvis ring's five influences
        np.testing.assert_allclose(mesh.weights.sum(axis=1), 1.0)
    a, b = (next(m for m in s.meshes if m.skinned).texture for s in (cm, zup))
    np.testing.assert_array_equal(a, b)


def test_ascii_file_reads_with_pre_rotations(tmp_path) -> None:
    with pytest.warns(UserWarning, match="diffuse texture"):  # Assimp's embedded image is one ufbx skips
        s = animkit.load(DATA / "prerot_ascii.fbx")
    assert tuple(s.clips) == ("walk", "wave")  # the third stack, 'empty', has no curves
    assert s.clip("walk").fps == 30.0 and s.clip("wave").duration == pytest.approx(3.0)
    assert "animation stack 'empty' has no animation curves: skipped" in s.notes
    assert any("ASCII" in n for n in s.notes)
    assert s.figure.rig.effectors["head"] == "mixamorig:Head"


def test_convert_to_glb_passes_the_validator_and_keeps_every_clip(tmp_path, cm) -> None:
    out = tmp_path / "x.glb"
    assert main(["convert", str(DATA / "mixamo_yup_cm.fbx"), str(out)]) == 0
    assert_valid(out)
    back = animkit.load(out)
    assert set(back.clips) == set(CLIPS)
    (mesh,) = [m for m in back.meshes if m.skinned]
    assert mesh.texture is not None
    t = np.linspace(0, 1.1, 5)
    W0 = cm.figure.world_batch(cm.clip(CLIPS[0]).sample(t))
    W1 = back.figure.world_batch(back.clip(CLIPS[0]).sample(t))
    for name in ("mixamorig:LeftHand", "mixamorig:RightFoot"):
        i0, i1 = cm.figure.node_names.index(name), back.figure.node_names.index(name)
        np.testing.assert_allclose(W0[:, i0, :3, 3], W1[:, i1, :3, 3], atol=1e-5)


def test_render_and_batch(tmp_path) -> None:
    png = tmp_path / "still.png"
    assert main(["render", str(DATA / "mixamo_zup_77.fbx"), "--animation", CLIPS[1], "-o", str(png)]) == 0
    assert png.stat().st_size > 1000
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(DATA / "mixamo_yup_cm.fbx", folder)
    assert main(["batch", "convert", str(folder), "-o", str(tmp_path / "out"), "--workers", "1"]) == 0
    assert (tmp_path / "out" / "mixamo_yup_cm.glb").is_file()


# --- bad files -------------------------------------------------------------------------------------------


def _bad(path: Path, match: str) -> ParseError:
    with pytest.raises(ParseError, match=match) as info:
        animkit.load(path)
    assert str(path) in str(info.value)
    return info.value


@pytest.mark.parametrize("cut", [0.02, 0.5, 0.97])
def test_truncated_file(tmp_path, cut) -> None:
    data = (DATA / "mixamo_yup_cm.fbx").read_bytes()
    f = tmp_path / "cut.fbx"
    f.write_bytes(data[: int(len(data) * cut)])
    _bad(f, "FBX")


def test_not_an_fbx_file(tmp_path) -> None:
    f = tmp_path / "text.fbx"
    f.write_bytes(b"hello, this is not an FBX file\n" * 10)
    _bad(f, "not a readable FBX file")


def test_absurd_count(tmp_path) -> None:
    # binary FBX: the first 'Vertices' array ('d', then its uint32 element count) claims 2^31 - 1 doubles
    data = bytearray((DATA / "mixamo_yup_cm.fbx").read_bytes())
    at = data.index(b"Vertices") + len(b"Vertices")
    assert data[at:at + 1] == b"d"
    data[at + 1:at + 5] = (2**31 - 1).to_bytes(4, "little")
    f = tmp_path / "absurd.fbx"
    f.write_bytes(bytes(data))
    _bad(f, "FBX")


def test_texture_outside_the_folder(tmp_path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    shutil.copy(DATA / "checker.png", tmp_path / "secret.png")
    text = (DATA / "prerot_ascii.fbx").read_text()
    text = text.replace('RelativeFilename: "*0"', 'RelativeFilename: "../secret.png"')
    text = text.replace('FileName: "*0"', 'FileName: "../secret.png"')
    f = inner / "outside.fbx"
    f.write_text(text)
    _bad(f, "leaves the file's folder")


def test_missing_ufbx_names_the_extra(monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ufbx" else real(name, *a))
    with pytest.raises(AnimkitError, match=r"animkit\[fbx\]"):
        animkit.load(DATA / "mixamo_yup_cm.fbx")
    assert fbx.EXTRA == "animkit[fbx]"


@pytest.mark.parametrize("name", ["mixamo_yup_cm.fbx", "mixamo_zup_77.fbx"])
def test_convert_to_bvh_keeps_every_joint_where_it_was(tmp_path, name) -> None:
    # the FBX figure has rotations (and Blender's armature a scale of 100) in static transforms, which BVH
    # cannot store: the writer re-expresses them (io.bvh.bvh_baked) and every node stays where it was
    out = tmp_path / "x.bvh"
    assert main(["convert", str(DATA / name), str(out), "--clip", CLIPS[1], "--no-meshes"]) == 0
    src = _load(name)
    back = animkit.load(out)
    clip = back.clip()
    t = clip.frame_times()
    assert len(t) == 91
    Wa = src.figure.world_batch(src.clip(CLIPS[1]).sample(t))
    Wb = back.figure.world_batch(clip.sample(t))
    common = [n for n in back.figure.node_names if n in src.figure.node_names]
    assert len(common) >= 24
    for n in common:
        a, b = src.figure.node_names.index(n), back.figure.node_names.index(n)
        np.testing.assert_allclose(Wb[:, b, :3, 3], Wa[:, a, :3, 3], atol=2e-6 * src.figure.size(), err_msg=n)


# --- FBX's transform features against the formula of the FBX SDK's documentation -----------------------------

_ORDERS = {0: "XYZ", 1: "XZY", 2: "YZX", 3: "YXZ", 4: "ZXY", 5: "ZYX"}


def _axis_rotation(axis: str, deg: float) -> np.ndarray:
    c, s = np.cos(np.radians(deg)), np.sin(np.radians(deg))
    i, j = {"X": (1, 2), "Y": (2, 0), "Z": (0, 1)}[axis]
    R = np.eye(4)
    R[i, i] = R[j, j] = c
    R[j, i], R[i, j] = s, -s
    return R


def _euler(deg, order: str = "XYZ") -> np.ndarray:
    """FBX's Euler rotation: the first axis of ``order`` turns first (XYZ: Rz · Ry · Rx)."""
    M = np.eye(4)
    for axis in order:
        M = _axis_rotation(axis, deg["XYZ".index(axis)]) @ M
    return M


def _props(text: str, model: str) -> dict[str, list[float]]:
    block = text[text.index(f'"Model::{model}"'):]
    block = block[: block.index("}")]
    out = {}
    for name, values in re.findall(r'P: "([^"]+)", "[^"]*", "[^"]*", "[^"]*",\s*([-0-9.e, ]+)\n', block):
        out[name] = [float(v) for v in values.split(",")]
    return out


@pytest.mark.parametrize("bone", ["mixamorig:RightForeArm", "mixamorig:Spine1", "mixamorig:LeftShoulder"])
def test_pre_post_rotation_order_and_pivots_are_folded_exactly(bone) -> None:
    # L = T · Roff · Rp · Rpre · R(order) · Rpost⁻¹ · Rp⁻¹ · Soff · Sp · S · Sp⁻¹ (pre/post rotations in XYZ order),
    # from the ASCII file's own properties; the file is in centimetres (UnitScaleFactor 1), Y-up
    text = (DATA / "prerot_ascii.fbx").read_text()
    p = _props(text, bone)

    def move(key: str) -> np.ndarray:
        M = np.eye(4)
        M[:3, 3] = p.get(key, [0.0, 0.0, 0.0])
        return M

    zero = [0.0, 0.0, 0.0]
    order = _ORDERS[int(p.get("RotationOrder", [0])[0])]
    S = np.diag([*p.get("Lcl Scaling", [1.0, 1.0, 1.0]), 1.0])
    L = (move("Lcl Translation") @ move("RotationOffset") @ move("RotationPivot") @ _euler(p.get("PreRotation", zero))
         @ _euler(p.get("Lcl Rotation", zero), order) @ np.linalg.inv(_euler(p.get("PostRotation", zero)))
         @ np.linalg.inv(move("RotationPivot")) @ move("ScalingOffset") @ move("ScalingPivot") @ S
         @ np.linalg.inv(move("ScalingPivot")))
    L[:3, 3] *= 0.01  # centimetres → metres
    assert "PreRotation" in p
    s = _load("prerot_ascii.fbx")
    fig = s.figure
    W = fig.world_batch(fig.rest_pose()[None])[0]
    i, parent = fig.node_names.index(bone), fig.node_names.index(fig.parent_of(bone))
    np.testing.assert_allclose(np.linalg.inv(W[parent]) @ W[i], L, atol=1e-9)


def test_cli_compare_effector_hand_r_reaches_with_the_right_arm(tmp_path, cm) -> None:
    fig = cm.figure
    hand = fig.effector("hand_r")
    assert hand == "mixamorig:RightHand"
    k = fig.node_names.index(hand)
    start = fig.world_positions(fig.rest_pose())[0, k]
    wave = cm.clips["Armature|wave_body"]
    arm = dof_indices(fig, "arm_r")
    pose = fig.rest_pose()
    pose[arm] += 0.2 * (wave.sample(np.array([0.5 * wave.duration]))[0, arm] - pose[arm])  # toward the wave
    target = fig.world_positions(pose)[0, k]
    assert np.linalg.norm(target - start) > 0.1 * fig.size()
    js = tmp_path / "m.json"
    r = run_cli("compare", str(DATA / "mixamo_yup_cm.fbx"), "--effector", "hand_r", "--target",
                ",".join(f"{v:.6f}" for v in target), "--duration", "0.2", "--hold", "0", "--fps", "10", "--size",
                "64x64", "-o", str(tmp_path / "c.gif"), "--json", str(js), "-q")
    assert r.returncode == 0, r.stderr
    panels = json.loads(js.read_text())["panels"]
    # the rig's chains through the right hand (the whole body's with its feet planted)
    assert [p["chain"] for p in panels] == ["arm_r", "torso", "hips-up", "whole-body"]
    assert panels[0]["final_error"] < 0.25 * np.linalg.norm(target - start)  # the right hand goes to it


def test_fork_server_reads_each_file_in_a_process_of_its_own(tmp_path) -> None:
    """``fbx_child.py --serve`` (what ``animkit.load`` reads FBX through): a reader that hangs (a FIFO nobody writes)
    and then crashes (SIGSEGV sent to it) ends alone, is reported as −11, and the next request reads a file as the
    one-file form does, byte for byte."""
    fifo = tmp_path / "stuck.fbx"
    os.mkfifo(fifo)
    child = Path(fbx.__file__).with_name("fbx_child.py")
    server = subprocess.Popen([sys.executable, "-P", str(child), "--serve"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    try:
        assert json.loads(server.stdout.readline()) == {"ready": True}

        def ask(path: Path, k: int) -> tuple[int, dict, Path, Path]:
            out, err = tmp_path / f"out{k}", tmp_path / f"err{k}"
            server.stdin.write(json.dumps({"path": str(path), "out": str(out), "err": str(err)}).encode() + b"\n")
            server.stdin.flush()
            return json.loads(server.stdout.readline())["pid"], out, err

        pid, _, _ = ask(fifo, 0)
        os.kill(pid, signal.SIGSEGV)
        assert json.loads(server.stdout.readline()) == {"status": -signal.SIGSEGV}
        pid, out, err = ask(DATA / "prerot_ascii.fbx", 1)
        assert json.loads(server.stdout.readline()) == {"status": 0} and err.read_bytes() == b""
        one = subprocess.run([sys.executable, "-P", str(child), str(DATA / "prerot_ascii.fbx")], capture_output=True,
                             check=True)
        assert out.read_bytes() == one.stdout
        pid, out, err = ask(tmp_path / "missing.fbx", 2)
        assert json.loads(server.stdout.readline()) == {"status": 3} and err.read_text().startswith("error: ")
    finally:
        server.stdin.close()
        assert server.wait(timeout=30) == 0  # the server leaves when its input closes


@pytest.mark.parametrize(("ascii_name", "binary_name", "header"), [
    ("mixamo_yup_cm_ascii74.fbx", "mixamo_yup_cm.fbx", "FBX 7.4 ASCII"),
    ("mixamo_zup_ascii77.fbx", "mixamo_zup_77.fbx", "FBX 7.7 ASCII")])
def test_ascii_74_and_77_read_as_their_binaries(ascii_name, binary_name, header) -> None:
    """tests/data/fbx/fbx_to_ascii.py's text copies of the two Blender files: the same figure, clips (every frame)
    and meshes as the binaries (three.js agrees on both too: tests/test_fbx_threejs.py)."""
    a, b = _load(ascii_name), _load(binary_name)
    assert a.notes[0].startswith(header) and a.notes[1:3] == b.notes[1:3]
    assert a.figure.node_names == b.figure.node_names and list(a.clips) == list(b.clips)
    for name, clip in b.clips.items():
        times = clip.frame_times()
        Wa, Wb = a.figure.world_batch(a.clips[name].sample(times)), b.figure.world_batch(clip.sample(times))
        assert np.abs(Wa - Wb).max() <= 1e-9 * b.figure.size()
    assert len(a.meshes) == len(b.meshes)
    for ma, mb in zip(a.meshes, b.meshes, strict=True):
        assert np.array_equal(ma.faces, mb.faces) and np.abs(ma.rest_positions - mb.rest_positions).max() <= 1e-12
        assert (ma.texture is None) == (mb.texture is None)
        if mb.texture is not None:
            assert np.array_equal(ma.texture, mb.texture)  # embedded (base64 in the text) or beside the file


def test_the_77_binary_has_the_64_bit_record_layout() -> None:
    """FBX ≥ 7.5 binaries store node records with 64-bit offsets: the 7.7 file's first record reads only that way
    (Blender's encoder switches layout on the version it writes), the 7.4 file's only the 32-bit way."""
    import struct

    for name, version, wide in (("mixamo_zup_77.fbx", 7700, True), ("mixamo_yup_cm.fbx", 7400, False)):
        data = (DATA / name).read_bytes()
        assert struct.unpack_from("<I", data, 23)[0] == version
        at = 27 + (24 if wide else 12)
        assert data[at + 1:at + 1 + data[at]] == b"FBXHeaderExtension"
        other = 27 + (12 if wide else 24)
        assert data[other + 1:other + 1 + data[other]] != b"FBXHeaderExtension"


def test_every_skin_deformer_of_a_mesh_is_applied(tmp_path) -> None:
    """The ASCII copy with a second Skin deformer bound to the same mesh, holding a copy of the hips' cluster (same
    bone, same bind matrix, same weights): the skins are summed, so with h the hips' weight of a vertex in the one-skin
    file (its weights sum to 1) the hips get 2h / (1 + h) and every other joint w / (1 + h); a note says so."""
    text = (DATA / "mixamo_yup_cm_ascii74.fbx").read_text()
    skin = re.search(r'\tDeformer: (\d+), "Deformer::Armature", "Skin" \{\n.*?\n\t\}\n', text, re.S)
    cluster = re.search(r'\tDeformer: (\d+), "SubDeformer::mixamorig:Hips", "Cluster" \{\n.*?\n\t\}\n', text, re.S)
    geometry = re.search(rf'\tC: "OO",{skin.group(1)},(\d+)\n', text).group(1)
    hips = re.search(rf'\tC: "OO",(\d+),{cluster.group(1)}\n', text).group(1)
    extra = (skin.group(0).replace(skin.group(1), "900000001").replace("Deformer::Armature", "Deformer::Second")
             + cluster.group(0).replace(cluster.group(1), "900000002"))
    text = text.replace(skin.group(0), skin.group(0) + extra, 1)
    text = text.replace("Connections:  {\n", "Connections:  {\n" + f'\tC: "OO",900000001,{geometry}\n'
                        f'\tC: "OO",900000002,900000001\n\tC: "OO",{hips},900000002\n', 1)
    path = tmp_path / "two_skins.fbx"
    path.write_text(text)
    two, one = _load(path), _load("mixamo_yup_cm_ascii74.fbx")
    assert any("its 2 skin deformers are applied together" in n for n in two.notes)
    (m2,), (m1,) = [m for m in two.meshes if m.skinned], [m for m in one.meshes if m.skinned]
    assert sorted(m2.skin.joints) == sorted(m1.skin.joints)  # the hips once, not twice

    def dense(mesh) -> np.ndarray:
        out = np.zeros((mesh.vertex_count, len(mesh.skin.joints)))
        np.add.at(out, (np.arange(mesh.vertex_count)[:, None], mesh.joints), mesh.weights)
        return out[:, np.argsort(mesh.skin.joints)]

    d1, d2 = dense(m1), dense(m2)
    h = d1[:, sorted(m1.skin.joints).index("mixamorig:Hips")]
    want = d1 / (1 + h)[:, None]
    want[:, sorted(m1.skin.joints).index("mixamorig:Hips")] = 2 * h / (1 + h)
    assert (h > 0).sum() >= 16 and np.abs(d2 - want).max() <= 1e-6


def test_real_blender_279_skinned_mesh_matches_blenders_importer() -> None:
    """huesitos.fbx (Blender 2.79's exporter; Assimp's test model) against Blender 4.2's FBX importer, its evaluated
    skinned vertices at 4 frames (tests/data/fbx/huesitos_blender.json, from make_fbx.py's blender-reference step):
    the two vertex sets (animkit splits corners, Blender keeps control points) within 1e-4 of the figure's height
    both ways. three.js's FBXLoader is off there by metres once the clip moves (tests/test_fbx_threejs.py)."""
    ref = json.loads((DATA / "huesitos_blender.json").read_text())
    scene = _load("huesitos.fbx")
    (clip,) = scene.clips.values()
    (mesh,) = scene.meshes
    assert clip.fps == ref["fps"] and mesh.skinned
    height = scene.figure.size()
    moved = []
    for frame, meshes in ref["frames"].items():
        t = (int(frame) - ref["frame_start"]) / ref["fps"]
        ours = mesh.positions(scene.figure.world_batch(clip.sample(np.array([t]))))[0]
        B = np.asarray(meshes["Cylinder"])
        theirs = np.column_stack([B[:, 0], B[:, 2], -B[:, 1]])  # Blender's Z-up → Y-up
        gap = np.linalg.norm(ours[:, None, :] - theirs[None, :, :], axis=2)
        d = max(gap.min(axis=0).max(), gap.min(axis=1).max())
        assert d <= 1e-4 * height, f"frame {frame} (t = {t:.2f} s): off Blender's by {d:.3g} m"
        moved.append(theirs)
    assert max(np.abs(m - moved[0]).max() for m in moved) > 0.05 * height  # the clip does move the mesh


def test_fbx_61_ascii_against_its_closed_form() -> None:
    """swing_61_ascii.fbx (FBX 6.1 ASCII, written by hand: make_fbx.py hand-61): a root at (0, 1, 0) m with a 30°
    pre-rotation about Z, an arm 0.5 m along it turning about Z from 0° to 90° in 1 s (linear keys), a hand 0.4 m
    further. World positions at every frame: arm = root + Rz(30°)·(0.5, 0, 0), hand = arm + Rz(30° + θ)·(0.4, 0, 0),
    θ = 90° · t."""
    scene = _load("swing_61_ascii.fbx")
    assert scene.notes[0].startswith("FBX 6.1 ASCII")
    assert "units: centimetres (0.01 m), converted to metres" in scene.notes
    (clip,) = scene.clips.values()
    assert clip.name == "Swing" and clip.fps == 30.0 and abs(clip.duration - 1.0) < 1e-12
    t = clip.frame_times()
    W = scene.figure.world_batch(clip.sample(t))
    at = {n: W[:, k, :3, 3] for k, n in enumerate(scene.figure.node_names)}

    def rz(a: np.ndarray) -> np.ndarray:  # (F,) radians → the rotated x axis, (F, 3)
        return np.stack([np.cos(a), np.sin(a), np.zeros_like(a)], axis=1)

    root = np.array([0.0, 1.0, 0.0])
    arm = root + 0.5 * rz(np.full_like(t, np.radians(30)))
    hand = arm + 0.4 * rz(np.radians(30 + 90 * t))
    assert np.abs(at["Root"] - root).max() < 1e-12
    assert np.abs(at["Arm"] - arm).max() < 1e-9 and np.abs(at["Hand"] - hand).max() < 1e-9


def test_retarget_an_fbx_clip_onto_a_gltf_character(tmp_path, cm) -> None:
    """`animkit retarget clip.fbx character.glb`: the Mixamo-named FBX walk onto CesiumMan, every source frame kept;
    the character's hips travel as the source's do (scaled by the hip heights, as retarget reports)."""
    out = tmp_path / "walk.glb"
    assert main(["retarget", str(DATA / "mixamo_yup_cm.fbx"), str(ROOT / "tests" / "data" / "CesiumMan.glb"), "-o",
                 str(out), "--clip", CLIPS[0], "-q"]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = animkit.load(out)
    (clip,) = back.clips.values()
    src = cm.clip(CLIPS[0])
    assert abs(clip.duration - src.duration) < 1e-6  # glTF keeps times as float32
    hips = "Skeleton_torso_joint_1"  # CesiumMan's hips (retarget's report: mixamorig:Hips -> it)
    t = src.frame_times()
    path = back.figure.world_batch(clip.sample(t))[:, back.figure.node_names.index(hips), :3, 3]
    source = cm.figure.world_batch(src.sample(t))[:, cm.figure.node_names.index("mixamorig:Hips"), :3, 3]
    travel = np.linalg.norm(path[-1] - path[0])
    assert travel > 0.05 and abs(travel - 0.713 * np.linalg.norm(source[-1] - source[0])) < 0.05 * travel + 0.01
