"""Characters as users bring them (issue 25 §3): framing from the surface, glTF → BVH, linear keys, humanoid limits,
quadrupeds."""

from __future__ import annotations

import dataclasses
import io
import json
import struct
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import animkit
from animkit.render.frames import render_clip

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

    written, source = mesh_nodes(doc), mesh_nodes(src_doc)
    if name == "Fox.glb":  # its mesh node sits at the identity: moved to the root, its name kept
        assert written == pytest.approx(source)
    else:  # under a turned node (COLLADA2GLTF's Z_UP): a new root node, named after it; materials kept
        assert written == pytest.approx({f"{n}_skinned": mr for n, mr in source.items()})
    back = animkit.load(out)
    assert [(m.metallic, m.roughness) for m in back.meshes] == [(m.metallic, m.roughness) for m in scene.meshes]
    if name == "Fox.glb":
        assert [m.node for m in back.meshes] == [m.node for m in scene.meshes]
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
    from animkit.apps.cli import main
    from animkit.examples import load, resolve

    walk = resolve("walk")
    out = tmp_path / "walk.glb"
    assert main(["convert", str(walk), str(out), "--keys", "linear"]) == 0
    assert interpolations(out) <= {"LINEAR", "STEP"}
    scene = load("walk")
    assert_plays_at_frames(scene, scene.clip(), out)
    assert main(["convert", str(walk), str(tmp_path / "w.toml"), "--keys", "linear"]) == 2  # glTF only
    # the batch's convert: each task's save gets the same option
    from animkit.apps.batch import COMMANDS

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


# --- human joint limits for IK --------------------------------------------------------------------------------

def joint_frame(fig, joint: str) -> np.ndarray:
    """The world rotation of a joint's frame before its turn at rest: W_parent · L (independent of
    animkit.model.anatomy)."""
    arc = fig.node(joint).parent_arc
    W = fig.world_batch(fig.rest_pose()[None])[0]
    return W[fig.node_names.index(arc.parent.name)][:3, :3] @ arc.L[:3, :3]


def joint_turn(fig, joint: str, pose: np.ndarray) -> np.ndarray:
    """R = A(θ) A_refᵀ of a limited joint at ``pose`` (its rotation DOFs' Euler turn against the cone's reference)."""
    from animkit.model.transforms import matrix_from_euler_intrinsic

    j = fig.joint(joint)
    cone = fig.rig.limits[joint]
    rot = [fig.dof_index(d.name) for d in j.dofs if d.kind == "revolute"]
    A = matrix_from_euler_intrinsic(pose[rot], j.order)
    return A @ np.asarray(cone.reference).T


def bone_swing_deg(fig, joint: str, pose: np.ndarray) -> float:
    """How far the bone below ``joint`` turned from rest in its parent's frame (world positions only), degrees."""
    names = fig.node_names
    i = names.index(joint)
    kids = [a.child.name for a in fig.node(joint).arcs()]
    k = names.index(kids[0])
    p = names.index(fig.parent_of(joint))
    W0, W = fig.world_batch(np.stack([fig.rest_pose(), pose]))
    d0 = np.linalg.solve(W0[p][:3, :3], W0[k][:3, 3] - W0[i][:3, 3])
    d1 = np.linalg.solve(W[p][:3, :3], W[k][:3, 3] - W[i][:3, 3])
    return float(np.degrees(np.arccos(np.clip(d0 @ d1 / np.linalg.norm(d0) / np.linalg.norm(d1), -1, 1))))


@pytest.mark.slow  # 9-33 s alone: CI runs it after the fast set (.ci/run)
@pytest.mark.parametrize("name", ["CesiumMan.glb", "RiggedFigure.glb"])
def test_reach_on_a_gltf_character_keeps_spine_and_neck_in_human_range(name: str) -> None:
    from animkit.model.anatomy import HUMAN_RANGES
    from animkit.model.figure import Rig
    from animkit.model.humanoid import match_figure

    fig = animkit.load(DATA / name).figure
    bones = match_figure(fig)
    trunk = [a.child.name for a in fig.path_to(bones.node("head"))]
    trunk = [n for n in trunk[trunk.index(bones.node("spine")):] if n in fig.rig.limits]
    assert len(trunk) >= 3  # spine … chest and neck … head, all limited
    rest = fig.rest_pose()
    P = fig.world_positions(rest[None])[0]
    h = np.ptp(P, axis=0).max()
    hand = P[fig.node_names.index(fig.effector("hand_l"))]
    targets = [hand + np.array(v) * h for v in ([0.0, -0.9, 0.3], [-0.5, -0.6, 0.6], [0.3, 0.2, -0.6], [0, -0.5, 0])]
    worst_free = 0.0
    for target in targets:
        pose = animkit.solve(fig, rest, "hand_l", target, chain="hips-up").pose
        for joint in trunk:
            cone = fig.rig.limits[joint]
            assert cone.contains(joint_turn(fig, joint, pose), tol=1e-6), joint
            # the oracle from world positions alone: the bone swung no further than its largest range (the trunk's
            # rest is its reference); a head without a child bone is checked by its cone alone
            if any(True for _ in fig.node(joint).arcs()):
                assert bone_swing_deg(fig, joint, pose) <= np.degrees(cone.swing) + 1e-3, joint
        # without the profile (an empty rig's limits), the same reach bends the spine far past any person
        free = fig.rig
        fig.rig = Rig(free.chains, free.effectors)
        loose = animkit.solve(fig, rest, "hand_l", target, chain="hips-up").pose
        fig.rig = free
        worst_free = max(worst_free, max(bone_swing_deg(fig, j, loose) for j in trunk if any(fig.node(j).arcs())))
    assert worst_free > 90.0  # the defect the profile removes (a spine joint past 90°)
    assert max(HUMAN_RANGES["spine"].flexion, HUMAN_RANGES["neck"].flexion) < 90.0


def test_profile_directions_on_a_bvh_figure() -> None:
    """The ranges bend the right way: measured on CMU's skeleton with directions from its own geometry (up: hips →
    head; front: up × (left → right hip), checked against where the toes point), not from animkit.anatomy's."""
    from animkit.model.transforms import matrix_about_axis

    fig = animkit.load(DATA / "cmu_02_01_walk.bvh").figure
    P = fig.world_positions(fig.rest_pose()[None])[0]

    def at(n: str) -> np.ndarray:
        return P[fig.node_names.index(n)]

    up = at("Head") - at("Hips")
    up /= np.linalg.norm(up)
    across = at("RightUpLeg") - at("LeftUpLeg")
    front = np.cross(up, across - up * (across @ up))
    front /= np.linalg.norm(front)
    toes = at("LeftToeBase") - at("LeftFoot")
    assert front @ toes / np.linalg.norm(toes) > 0.9  # the toes point where this says the front is

    def allowed(joint: str, toward: np.ndarray, deg: float) -> bool:
        """Whether turning joint's bone by ``deg`` toward ``toward`` (world) keeps it in its cone."""
        J = joint_frame(fig, joint)
        kid = [a.child.name for a in fig.node(joint).arcs()][0]
        bone = at(kid) - at(joint) if joint not in ("Spine1",) else at("Neck") - at("Hips")
        axis = np.cross(bone, toward)
        axis /= np.linalg.norm(axis)
        Rw = matrix_about_axis(axis, np.radians(deg))
        Rj = J.T @ Rw @ J
        cone = fig.rig.limits[joint]
        from animkit.model.transforms import matrix_from_euler_intrinsic

        j = fig.joint(joint)
        A_rest = matrix_from_euler_intrinsic(np.array([d.rest for d in j.dofs if d.kind == "revolute"]), j.order)
        return bool(cone.contains(Rj @ A_rest @ np.asarray(cone.reference).T))

    # the trunk: flexion 80° over its joints, extension 25°
    n = sum(1 for j in ("LowerBack", "Spine", "Spine1") if j in fig.rig.limits)
    assert allowed("Spine", front, 70 / n) and not allowed("Spine", -front, 70 / n)
    assert allowed("Spine", -front, 20 / n)
    # the knee bends back 90°, not forward 30°
    assert allowed("LeftLeg", -front, 90) and not allowed("LeftLeg", front, 30)
    assert allowed("RightLeg", -front, 120) and not allowed("RightLeg", front, 30)
    # the hip flexes forward 100°, extends back only 30°
    assert allowed("LeftUpLeg", front, 100) and not allowed("LeftUpLeg", -front, 45)
    # the ankle: dorsiflexion 20°, plantarflexion 50°
    assert allowed("LeftFoot", up, 15) and not allowed("LeftFoot", up, 35) and allowed("LeftFoot", -up, 40)
    # the hip abducts (outward) 45°, adducts only 30°: left is outward for the left leg
    left = -across / np.linalg.norm(across)  # the figure's left: toward its left hip
    assert allowed("LeftUpLeg", left, 40) and not allowed("LeftUpLeg", -left, 40)
    assert allowed("RightUpLeg", -left, 40) and not allowed("RightUpLeg", left, 40)


def test_own_limits_win_and_clips_play_unlimited(tmp_path: Path) -> None:
    import math

    from animkit.examples import load
    from animkit.model.figure import Rig
    from animkit.model.joints import Cone

    # a TOML figure whose joints all carry limits keeps them: no default on top
    assert dict(load("humanoid").figure.rig.limits) == {}
    # a TOML figure without limits gets the profile; a joint given limits in the file keeps its own
    bvh = animkit.load(DATA / "cmu_02_01_walk.bvh")
    plain = animkit.save(tmp_path / "cmu.toml", bvh.figure)
    assert "Spine" in animkit.load(plain).figure.rig.limits
    text = plain.read_text()
    spine = ('[nodes.Spine]\nparent = "LowerBack"\noffset = [0.01961, 2.0545, -0.14112]\n'
             'joint = { kind = "ball", order = "zyx" }')
    assert spine in text
    limited = tmp_path / "cmu_limited.toml"
    limited.write_text(text.replace(spine, spine.replace('"zyx" }', '"zyx", limits = [[-5, 5], [-5, 5], [-5, 5]] }')))
    own = animkit.load(limited).figure
    assert "Spine" not in own.rig.limits and "LowerBack" in own.rig.limits
    # per joint in code: a tighter range replaces the profile's
    fig = animkit.load(DATA / "CesiumMan.glb").figure
    from animkit.model.humanoid import match_figure

    spine = match_figure(fig).node("spine")  # its node's joint carries the node's name
    profile = fig.rig.limits[spine]  # the same bone axis and neutral, a narrower range
    fig.rig = fig.rig.merged(Rig(limits={spine: Cone(math.radians(5), (-0.1, 0.1), profile.axis,
                                                     reference=profile.reference)}))
    rest = fig.rest_pose()
    P = fig.world_positions(rest[None])[0]
    target = P[fig.node_names.index(fig.effector("hand_l"))] + np.array([0.0, -0.5, 0.3])
    pose = animkit.solve(fig, rest, "hand_l", target, chain="hips-up").pose
    assert fig.rig.limits[spine].contains(joint_turn(fig, spine, pose), tol=1e-6)
    assert bone_swing_deg(fig, spine, pose) <= 5.0 + 1e-3
    # clips are not limits' business: the profile is no DOF bound
    scene = animkit.load(DATA / "CesiumMan.glb")
    frames = scene.clip().sample(scene.clip().frame_times())
    np.testing.assert_array_equal(scene.figure.clip_to_limits(frames), frames)


# --- quadrupeds ------------------------------------------------------------------------------------------------


def test_the_fox_is_matched_as_a_quadruped_with_chains_and_effectors() -> None:
    from animkit.model.quadruped import match_quadruped_figure
    from animkit.motion import legs_of

    scene = animkit.load(DATA / "Fox.glb")
    fig = scene.figure
    q = match_quadruped_figure(fig)
    assert q.is_quadruped
    assert q.bones["hips"] == "b_Hip_01" and q.bones["chest"] == "b_Spine02_03"
    assert q.leg("fl") == ("b_LeftUpperArm_09", "b_LeftForeArm_010", "b_LeftHand_011")
    assert q.leg("hr") == ("b_RightLeg01_019", "b_RightLeg02_020", "b_RightFoot01_021", "b_RightFoot02_022")
    assert (q.bones["neck"], q.bones["head"]) == ("b_Neck_04", "b_Head_05")
    assert q.tail == ("b_Tail01_012", "b_Tail02_013", "b_Tail03_014")
    rig = fig.rig
    assert set(rig.chains) == {"leg_fl", "leg_fr", "leg_hl", "leg_hr", "spine", "neck", "tail"}
    assert dict(rig.effectors) == {"foot_fl": "b_LeftHand_011", "foot_fr": "b_RightHand_08",
                                   "foot_hl": "b_LeftFoot02_018", "foot_hr": "b_RightFoot02_022",
                                   "head": "b_Head_05", "tail": "b_Tail03_014"}
    assert [leg.side for leg in legs_of(fig)] == ["fl", "fr", "hl", "hr"]
    # the chains move their effectors: a paw lifted 10 % of the body's size by its leg alone
    rest = fig.rest_pose()
    P = fig.world_positions(rest[None])[0]
    paw = P[fig.node_names.index("b_LeftHand_011")]
    target = paw + np.array([0.0, 0.1, 0.05]) * fig.size()
    r = animkit.solve(fig, rest, "foot_fl", target, chain="leg_fl")
    assert r.converged
    moved = np.flatnonzero(r.pose != rest)
    assert {fig.dof_names[i].split(".")[0] for i in moved} <= set(rig.chain("leg_fl"))


def test_a_quadruped_by_topology_alone() -> None:
    """Generic names (only sides in them): front and hind legs from where they hang, neck and tail from structure."""
    from animkit.model.quadruped import match_quadruped

    names = ["pelvis", "back1", "back2", "neck1", "skull", "tail1", "tail2",
             "L_a1", "L_a2", "L_a3", "R_a1", "R_a2", "R_a3",  # hang from back2: the front legs
             "L_b1", "L_b2", "L_b3", "L_b4", "R_b1", "R_b2", "R_b3", "R_b4"]  # from the pelvis: hind
    parent_of = {"back1": "pelvis", "back2": "back1", "neck1": "back2", "skull": "neck1", "tail1": "pelvis",
                 "tail2": "tail1", "L_a1": "back2", "L_a2": "L_a1", "L_a3": "L_a2", "R_a1": "back2", "R_a2": "R_a1",
                 "R_a3": "R_a2", "L_b1": "pelvis", "L_b2": "L_b1", "L_b3": "L_b2", "L_b4": "L_b3",
                 "R_b1": "pelvis", "R_b2": "R_b1", "R_b3": "R_b2", "R_b4": "R_b3"}
    parents = [names.index(parent_of[n]) if n in parent_of else -1 for n in names]
    q = match_quadruped(names, parents)
    assert q.is_quadruped
    assert (q.bones["hips"], q.bones["chest"], q.bones["neck"], q.bones["head"]) == ("pelvis", "back2", "neck1",
                                                                                       "skull")
    assert q.leg("fl") == ("L_a1", "L_a2", "L_a3") and q.leg("hr") == ("R_b1", "R_b2", "R_b3", "R_b4")
    assert q.tail == ("tail1", "tail2") and q.spine == ("back1", "back2")
    assert not match_quadruped(names[:10], parents[:10]).is_quadruped  # two legs are not four


def fox_walking(fig, clip, cycles: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """The Fox's in-place Walk repeated, carried forward at the speed its planted hind toe slides back at (so planted
    feet stand still), and (F, K) contacts of its foot points by height alone: within 8 % of the hip height of each
    point's lowest."""
    t = clip.frame_times()[:-1]
    P = np.concatenate([clip.sample(t)] * cycles)
    t = np.arange(len(P)) / clip.fps
    W = fig.world_batch(P)
    names = fig.node_names
    toe = names.index("b_LeftFoot02_018")
    y = W[:, toe, 1, 3]
    v = np.median((np.gradient(W[:, toe, :3, 3], axis=0) * clip.fps)[y <= np.percentile(y, 40)], axis=0)
    v[1] = 0.0
    Rp = W[0, names.index(fig.parent_of("b_Hip_01")), :3, :3]
    moves = [fig.dof_index(d.name) for d in fig.joint("b_Hip_01").dofs if d.kind == "prismatic"]
    P[:, moves] += (np.linalg.solve(Rp, -v))[None, :] * t[:, None]
    return P, t


def test_four_feet_contacts_and_locking_on_the_fox() -> None:
    """Four paws locked, each leg by its own joints: no DOF outside the legs' hips, knees and ankles moves, and
    every held paw stays put (its slide a tenth of the clip's or less)."""
    from animkit.motion import detect_contacts, legs_of, lock_feet
    from animkit.motion.retarget import hip_height

    scene = animkit.load(DATA / "Fox.glb")
    fig, clip = scene.figure, scene.clips["Walk"]
    P, _ = fox_walking(fig, clip)
    legs = legs_of(fig)
    assert [leg.side for leg in legs] == ["fl", "fr", "hl", "hr"]
    # contacts on every paw, by height and a generous speed limit (0.7 hip heights per second: the Fox's right paws
    # slide in this clip, slower than that; by height alone a paw swinging low would count as planted)
    contacts = detect_contacts(fig, P, clip.fps, height=0.05, speed=0.7)
    assert set(contacts.points) == {p for leg in legs for p in (leg.ankle, leg.toe)}
    for leg in legs:
        assert contacts.mask[:, contacts.points.index(leg.toe)].sum() >= 5, leg.side
    locked = lock_feet(fig, P, clip.fps, contacts=contacts)
    assert [leg.side for leg in locked.legs] == ["fl", "fr", "hl", "hr"]
    own = {leg.side: [fig.dof_index(d.name) for n in (leg.hip, leg.knee, leg.ankle)
                      for d in fig.node(n).parent_arc.joint.dofs] for leg in legs}
    others = sorted(set(range(P.shape[1])) - {i for v in own.values() for i in v})
    np.testing.assert_array_equal(locked.poses[:, others], P[:, others])  # the spine, hips, head, tail: as given
    before = {leg.side: locked.before.skate_by_point[leg.toe] for leg in legs}
    after = {leg.side: locked.after.skate_by_point[leg.toe] for leg in legs}
    assert locked.held is not None
    held = {leg.side: bool(locked.held[:, contacts.points.index(leg.toe)].any()) for leg in legs}
    # every paw is held (the front-left one too, since each lock holds its paw at the point of its path the leg
    # reaches best rather than where it landed, which needed 1.19x the leg's length); measured: fl 36->0.7,
    # fr 37->0, hl 27->0, hr 40->0 mm per frame
    for side in ("fl", "fr", "hl", "hr"):
        assert held[side], side
        assert after[side] <= 0.1 * before[side], (side, before, after)
    assert locked.after.penetration_mm <= locked.before.penetration_mm + 1e-9
    assert locked.after.knee_pop_deg <= locked.before.knee_pop_deg + 1e-9
    # within each held contact a planted paw drifts no further than before
    X, Y = fig.world_positions(P), fig.world_positions(locked.poses)
    H = hip_height(fig, legs[0].hip)
    for leg in legs:
        j = fig.node_names.index(leg.toe)
        for s0, e0 in contacts.intervals(leg.toe):
            span = slice(s0, e0)
            was = np.linalg.norm(X[span, j][:, [0, 2]] - X[s0, j, [0, 2]], axis=1).max()
            now = np.linalg.norm(Y[span, j][:, [0, 2]] - Y[s0, j, [0, 2]], axis=1).max()
            assert now <= was + 0.002 * H, (leg.side, s0, e0, was, now)


def reproportioned_fox(tmp_path: Path) -> Path:
    """The Fox's skeleton with legs 1.3× and the spine 0.8× as long, every node renamed ``t_…``, written by animkit's
    glTF writer (its drawn bones as the mesh, the Fox's Survey as its clip)."""
    from animkit.model.figure import Figure
    from animkit.model.quadruped import match_quadruped_figure
    from animkit.scene import Scene

    src = animkit.load(DATA / "Fox.glb").figure
    q = match_quadruped_figure(src)
    legs = {n for leg in ("fl", "fr", "hl", "hr") for n in q.leg(leg)[1:]}
    spine = set(q.spine) | {q.bones["neck"]}
    fig = Figure(src.root.name, joint=src.root_arc.joint, L=src.root_arc.L, name="fox_long_legs")
    for arc in src.arcs()[1:]:
        L = arc.L.copy()
        n = arc.child.name
        L[:3, 3] *= 1.3 if n in legs else 0.8 if n in spine else 1.0
        fig.add(n, arc.parent.name, L=L, joint=arc.joint)
    # with a clip, so its nodes turn (a file that animates nothing reads back with fixed joints)
    out = animkit.save(tmp_path / "fox_long.glb", Scene(fig), animkit.load(DATA / "Fox.glb").clips["Survey"])
    doc, binary = glb_parts(out.read_bytes())
    for node in doc["nodes"]:
        node["name"] = "t_" + node["name"]
    out.write_bytes(glb_from(doc, binary))
    return out


def test_retarget_between_quadrupeds_of_different_proportions(tmp_path: Path) -> None:
    from animkit.model.quadruped import match_quadruped_figure, quadruped_node_map
    from animkit.motion.retarget import hip_height, retarget_full

    source = animkit.load(DATA / "Fox.glb")
    target = animkit.load(reproportioned_fox(tmp_path))
    ts, tt = match_quadruped_figure(source.figure), match_quadruped_figure(target.figure)
    assert tt.is_quadruped and tt.bones["hips"] == "t_b_Hip_01"
    mapping = quadruped_node_map(ts, tt)
    assert mapping["t_b_LeftFoot01_017"] == "b_LeftFoot01_017" and mapping["t_b_Tail02_013"] == "b_Tail02_013"
    clip = source.clips["Walk"]
    r = retarget_full(dataclasses.replace(source, clips={"Walk": clip}), target, mapping)
    t = r.times
    Ws = source.figure.world_batch(clip.sample(t))
    Wt = r.figure.world_batch(r.poses)  # the target with the DOFs its file never keyed (retarget_full adds them)
    sn, tn = source.figure.node_names, target.figure.node_names
    worst = 0.0
    for tnode, snode in mapping.items():
        kids = [a.child.name for a in target.figure.node(tnode).arcs() if a.child.name[2:] in sn]
        if not kids or kids[0] not in mapping:
            continue
        a, b = sn.index(snode), sn.index(mapping[kids[0]])
        c, d = tn.index(tnode), tn.index(kids[0])
        u = Ws[:, b, :3, 3] - Ws[:, a, :3, 3]
        w = Wt[:, d, :3, 3] - Wt[:, c, :3, 3]
        cos = np.sum(u * w, axis=1) / np.linalg.norm(u, axis=1) / np.linalg.norm(w, axis=1)
        worst = max(worst, float(np.degrees(np.arccos(np.clip(cos, -1, 1))).max()))
    assert worst < 0.5  # every mapped bone points where the source's does, at every frame
    # the hips travel as the source's scaled by the hip heights
    s = hip_height(target.figure, "t_b_Hip_01") / hip_height(source.figure, "b_Hip_01")
    assert s > 1.1 and r.scale == pytest.approx(s, rel=1e-6)
    hs = Ws[:, sn.index("b_Hip_01"), :3, 3]
    ht = Wt[:, tn.index("t_b_Hip_01"), :3, 3]
    np.testing.assert_allclose(ht - ht[0], s * (hs - hs[0]), atol=1e-6 * target.figure.size())
