"""Humanoid bone matching on other people's skeletons (CMU BVH in two forms, the glTF sample characters, Mixamo's
published names) and ours, with the expected maps written out by hand from the files' hierarchies."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import animkit
from animkit.errors import SceneError
from animkit.model.humanoid import BONES, HumanoidMap, match_figure, match_humanoid, node_map

DATA = Path(__file__).resolve().parent / "data"
ROOT = DATA.parent.parent


def _glb_skeleton(path: Path) -> tuple[list[str], list[int]]:
    """Node names and parent indices from a GLB's JSON chunk, read here with struct and json alone."""
    raw = path.read_bytes()
    length, kind = struct.unpack("<I4s", raw[12:20])
    assert kind == b"JSON"
    nodes = json.loads(raw[20:20 + length])["nodes"]
    parents = [-1] * len(nodes)
    for i, node in enumerate(nodes):
        for c in node.get("children", []):
            parents[c] = i
    return [n.get("name", f"node{i}") for i, n in enumerate(nodes)], parents


def _side(prefix_l: str, prefix_r: str, names: dict[str, str]) -> dict[str, str]:
    out = {}
    for bone, stem in names.items():
        out[f"{bone}_l"] = prefix_l + stem
        out[f"{bone}_r"] = prefix_r + stem
    return out


CMU_MB = {"hips": "Hips", "spine": "LowerBack", "chest": "Spine1", "neck": "Neck", "head": "Head",
          **_side("Left", "Right", {"clavicle": "Shoulder", "upper_arm": "Arm", "forearm": "ForeArm",
                                    "hand": "Hand", "upper_leg": "UpLeg", "lower_leg": "Leg", "foot": "Foot",
                                    "toe": "ToeBase"})}
CMU_MAX = {"hips": "Hips", "spine": "lowerback", "chest": "Chest2", "neck": "lowerneck", "head": "Head",
           **_side("Left", "Right", {"clavicle": "Collar", "upper_arm": "Shoulder", "forearm": "Elbow",
                                     "hand": "Wrist", "upper_leg": "Hip", "lower_leg": "Knee", "foot": "Ankle",
                                     "toe": "Toe"})}
OURS = {"hips": "hips", "spine": "spine", "chest": "chest", "neck": "neck", "head": "head",
        **{f"{b}_{s}": f"{n}_{s}" for s in "lr" for b, n in
           {"clavicle": "clavicle", "upper_arm": "shoulder", "forearm": "elbow", "hand": "wrist",
            "upper_leg": "hip", "lower_leg": "knee", "foot": "ankle", "toe": "toe"}.items()}}
CESIUM_MAN = {"hips": "Skeleton_torso_joint_1", "spine": "Skeleton_torso_joint_2", "chest": "torso_joint_3",
              "neck": "Skeleton_neck_joint_1", "head": "Skeleton_neck_joint_2",
              "upper_arm_l": "Skeleton_arm_joint_L__4_", "forearm_l": "Skeleton_arm_joint_L__3_",
              "hand_l": "Skeleton_arm_joint_L__2_", "upper_arm_r": "Skeleton_arm_joint_R",
              "forearm_r": "Skeleton_arm_joint_R__2_", "hand_r": "Skeleton_arm_joint_R__3_",
              **{f"{b}_{s}": f"leg_joint_{s.upper()}_{k}" for s in "lr"
                 for b, k in (("upper_leg", 1), ("lower_leg", 2), ("foot", 3), ("toe", 5))}}
RIGGED_FIGURE = {"hips": "torso_joint_1", "spine": "torso_joint_2", "chest": "torso_joint_3",
                 "neck": "neck_joint_1", "head": "neck_joint_2",
                 **{f"{b}_{s}": f"{g}_joint_{s.upper()}_{k}" for s in "lr"
                    for g, b, k in (("arm", "upper_arm", 1), ("arm", "forearm", 2), ("arm", "hand", 3),
                                    ("leg", "upper_leg", 1), ("leg", "lower_leg", 2), ("leg", "foot", 3),
                                    ("leg", "toe", 5))}}

# Mixamo's published skeleton (its auto-rigger's names; the hands keep only index and thumb here).
MIXAMO_TREE = [("Hips", None), ("Spine", "Hips"), ("Spine1", "Spine"), ("Spine2", "Spine1"), ("Neck", "Spine2"),
               ("Head", "Neck"), ("HeadTop_End", "Head")]
for _s in ("Left", "Right"):
    MIXAMO_TREE += [(f"{_s}Shoulder", "Spine2"), (f"{_s}Arm", f"{_s}Shoulder"), (f"{_s}ForeArm", f"{_s}Arm"),
                    (f"{_s}Hand", f"{_s}ForeArm"), (f"{_s}HandIndex1", f"{_s}Hand"),
                    (f"{_s}HandIndex2", f"{_s}HandIndex1"), (f"{_s}HandThumb1", f"{_s}Hand"),
                    (f"{_s}UpLeg", "Hips"), (f"{_s}Leg", f"{_s}UpLeg"), (f"{_s}Foot", f"{_s}Leg"),
                    (f"{_s}ToeBase", f"{_s}Foot"), (f"{_s}Toe_End", f"{_s}ToeBase")]
MIXAMO = {"hips": "Hips", "spine": "Spine", "chest": "Spine2", "neck": "Neck", "head": "Head",
          **{k: v for k, v in CMU_MB.items() if k[-2:] in ("_l", "_r")}}


def _tree(pairs: list[tuple[str, str | None]], prefix: str = "") -> tuple[list[str], list[int]]:
    names = [prefix + n for n, _ in pairs]
    index = {n: i for i, (n, _) in enumerate(pairs)}
    return names, [-1 if p is None else index[p] for _, p in pairs]


@pytest.mark.parametrize(("path", "expected"), [
    (DATA / "cmu_02_01_walk.bvh", CMU_MB),
    (DATA / "cmu_09_01_run.bvh", CMU_MB),
    (DATA / "cmu_131_03_hop_3dsmax.bvh", CMU_MAX),
    (ROOT / "scenes" / "humanoid.toml", OURS),
])
def test_figures_match_by_hand_written_maps(path: Path, expected: dict[str, str]) -> None:
    m = match_figure(animkit.load(path).figure)
    assert dict(m.bones) == expected
    assert m.is_humanoid and m.missing == ()
    assert list(m.bones) == [b for b in BONES if b in m.bones]  # canonical order


@pytest.mark.parametrize(("name", "expected"), [("CesiumMan", CESIUM_MAN), ("RiggedFigure", RIGGED_FIGURE)])
def test_gltf_sample_characters(name: str, expected: dict[str, str]) -> None:
    m = match_humanoid(*_glb_skeleton(DATA / f"{name}.glb"))
    assert dict(m.bones) == expected
    assert m.is_humanoid
    assert set(m.missing) == {"clavicle_l", "clavicle_r"}  # these rigs have none


def test_a_two_bone_cylinder_is_no_humanoid() -> None:
    m = match_humanoid(*_glb_skeleton(DATA / "RiggedSimple.glb"))
    assert not m.is_humanoid and dict(m.bones) == {} and m.missing == BONES
    assert "Bone" in m.unused and "no" in m.report().splitlines()[0]


@pytest.mark.parametrize("prefix", ["", "mixamorig:", "mixamorig1:", "Armature|"])
def test_mixamo_with_and_without_namespace(prefix: str) -> None:
    m = match_humanoid(*_tree(MIXAMO_TREE, prefix))
    assert dict(m.bones) == {k: prefix + v for k, v in MIXAMO.items()}
    assert prefix + "Spine1" in m.unused and prefix + "LeftHandIndex1" in m.unused


def test_mb_and_max_sides_mirror_each_other_at_rest() -> None:
    """Names say left/right; the rest pose agrees: each left bone is the mirror of its right twin."""
    for path in (DATA / "cmu_02_01_walk.bvh", DATA / "cmu_131_03_hop_3dsmax.bvh"):
        fig = animkit.load(path).figure
        m = match_figure(fig)
        P = dict(zip(fig.node_names, fig.world_positions(fig.rest_pose()[None])[0], strict=True))
        hips = P[m.node("hips")]
        for bone in ("hand", "foot", "forearm", "lower_leg"):
            left, right = P[m.node(f"{bone}_l")] - hips, P[m.node(f"{bone}_r")] - hips
            assert left[0] * right[0] < 0  # opposite sides of the sagittal plane (x)
            assert abs(abs(left[0]) - abs(right[0])) < 0.25 * abs(left[0])


def test_unsided_limbs_take_the_side_they_lie_on() -> None:
    """Strip every side from our humanoid's names (Blender's '.001' keeps them unique); its rest pose (right side
    at −x) puts them back."""
    fig = animkit.load(ROOT / "scenes" / "humanoid.toml").figure
    names = fig.node_names
    stripped = [n[:-2] + ("" if n.endswith("_l") else ".001") if n[-2:] in ("_l", "_r") else n for n in names]
    index = {n: i for i, n in enumerate(names)}
    parents = [-1 if fig.parent_of(n) is None else index[fig.parent_of(n)] for n in names]  # type: ignore[index]
    P = fig.world_positions(fig.rest_pose()[None])[0]
    assert not match_humanoid(stripped, parents).is_humanoid
    m = match_humanoid(stripped, parents, positions=P, right=(-1.0, 0.0, 0.0))
    back = {b: names[stripped.index(n)] for b, n in m.bones.items()}
    assert back == OURS
    m2 = match_figure(fig, right=(-1.0, 0.0, 0.0))
    assert dict(m2.bones) == OURS


@given(st.randoms(use_true_random=False))
def test_node_order_does_not_matter(rnd) -> None:
    names, parents = _tree(MIXAMO_TREE, "mixamorig:")
    perm = list(range(len(names)))
    rnd.shuffle(perm)
    where = {old: new for new, old in enumerate(perm)}
    shuffled = [names[i] for i in perm]
    sparents = [-1 if parents[i] < 0 else where[parents[i]] for i in perm]
    assert dict(match_humanoid(shuffled, sparents).bones) == dict(match_humanoid(names, parents).bones)


def test_node_map_pairs_bones_both_skeletons_have() -> None:
    mb = match_figure(animkit.load(DATA / "cmu_02_01_walk.bvh").figure)
    cesium = match_humanoid(*_glb_skeleton(DATA / "CesiumMan.glb"))
    pairs = node_map(mb, cesium)
    assert pairs["LeftForeArm"] == "Skeleton_arm_joint_L__3_"
    assert "LeftShoulder" not in pairs  # CesiumMan has no clavicle
    assert len(pairs) == 19
    assert cesium.bone_of("leg_joint_R_5") == "toe_r" and cesium.bone_of("Z_UP") is None


def test_errors_name_what_is_there() -> None:
    m = match_humanoid(*_glb_skeleton(DATA / "CesiumMan.glb"))
    with pytest.raises(SceneError, match="no 'clavicle_l'"):
        m.node("clavicle_l")
    with pytest.raises(SceneError, match="did you mean 'forearm_l'"):
        m.node("forearm_lx")
    with pytest.raises(SceneError, match="2 names but 1 parents"):
        match_humanoid(["a", "b"], [-1])
    with pytest.raises(SceneError, match="cycle"):
        match_humanoid(["a", "b"], [1, 0])
    assert m.get("clavicle_l") is None
    assert isinstance(m, HumanoidMap)


def test_a_leftover_limb_below_the_wrong_parent_is_dropped() -> None:
    """A 'LeftForeArm' that does not hang below 'LeftArm' is not taken as the forearm."""
    names, parents = _tree(MIXAMO_TREE)
    i = names.index("LeftForeArm")
    parents[i] = names.index("Hips")
    parents[names.index("LeftHand")] = names.index("LeftArm")
    m = match_humanoid(names, parents)
    assert "forearm_l" not in m.bones and m.bones["hand_l"] == "LeftHand"
    assert "LeftForeArm" in m.unused


def _limbs(side: str, names: dict[str, str], fmt: str, trunk: str, hips: str) -> list[tuple[str, str | None]]:
    arm = ["clavicle", "upper_arm", "forearm", "hand"]
    leg = ["upper_leg", "lower_leg", "foot", "toe"]
    out: list[tuple[str, str | None]] = []
    for chain, top in ((arm, trunk), (leg, hips)):
        parent = top
        for bone in chain:
            node = fmt.format(names[bone], side)
            out.append((node, parent))
            parent = node
    return out


@pytest.mark.parametrize(("trunk", "fmt", "limb_names", "sides"), [
    # Unreal's mannequin: pelvis, spine_01..03, neck_01, head; clavicle_l, upperarm_l, lowerarm_l, hand_l, ...
    ([("pelvis", None), ("spine_01", "pelvis"), ("spine_02", "spine_01"), ("spine_03", "spine_02"),
      ("neck_01", "spine_03"), ("head", "neck_01")], "{}_{}",
     {"clavicle": "clavicle", "upper_arm": "upperarm", "forearm": "lowerarm", "hand": "hand",
      "upper_leg": "thigh", "lower_leg": "calf", "foot": "foot", "toe": "ball"}, ("l", "r")),
    # Blender's Rigify metarig: shoulder.L is the clavicle (upper_arm.L follows it); thigh, shin, foot, toe
    ([("spine", None), ("spine.001", "spine"), ("spine.002", "spine.001"), ("spine.003", "spine.002"),
      ("spine.004", "spine.003"), ("spine.005", "spine.004"), ("spine.006", "spine.005")], "{}.{}",
     {"clavicle": "shoulder", "upper_arm": "upper_arm", "forearm": "forearm", "hand": "hand",
      "upper_leg": "thigh", "lower_leg": "shin", "foot": "foot", "toe": "toe"}, ("L", "R")),
])
def test_game_engine_and_blender_conventions(trunk, fmt, limb_names, sides) -> None:
    chest, hips = trunk[3][0], trunk[0][0]
    tree = list(trunk)
    for s in sides:
        tree += _limbs(s, limb_names, fmt, chest, hips)
    m = match_humanoid(*_tree(tree))
    assert m.is_humanoid and m.missing == ()
    assert (m.bones["hips"], m.bones["chest"], m.bones["head"]) == (hips, chest, trunk[-1][0])
    for s, side in zip(sides, "lr", strict=True):
        for bone, stem in limb_names.items():
            assert m.bones[f"{bone}_{side}"] == fmt.format(stem, s)
