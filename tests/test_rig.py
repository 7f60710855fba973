"""The rig lives on the figure: loaders fill it, every call that takes a figure resolves its names."""

from __future__ import annotations

import io
import json
import pickle
import struct
import warnings
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.apps.cli import main
from animkit.errors import IKError, SceneError
from animkit.io.urdf import MissingMeshWarning
from animkit.model.chains import dof_indices
from animkit.model.figure import Figure
from animkit.model.joints import ball, hinge
from animkit.model.rig import Rig, humanoid_rig, leaf_rig
from animkit.model.transforms import matrix_from_euler_intrinsic

DATA = Path(__file__).resolve().parent / "data"
ROOT = DATA.parent.parent


def _urdf(name: str) -> animkit.Scene:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingMeshWarning)
        return animkit.load(DATA / name)


def _fk_target(fig: Figure, chain: str, effector: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A reachable target: the effector's position in a random pose of the chain's DOFs (and that pose)."""
    rng = np.random.default_rng(seed)
    idx = dof_indices(fig, chain)
    q = fig.rest_pose()
    lim = fig.dof_limits()[idx]
    lo, hi = np.maximum(lim[:, 0], -0.6), np.minimum(lim[:, 1], 0.6)
    q[idx] = rng.uniform(lo, hi)
    # well inside the rig's default (human) ranges, which IK keeps to (a projected solve can stall on an edge): the
    # random turn halved until every cone holds it made 1.5 times as large
    rest_q = fig.rest_pose()
    for _ in range(20):
        inside = True
        for joint, cone in fig.rig.limits.items():
            j = fig.joint(joint)
            rot = [fig.dof_index(d.name) for d in j.dofs if d.kind == "revolute"]
            if set(rot) <= set(idx.tolist()):
                ref = np.asarray(cone.reference) if cone.reference is not None else \
                    matrix_from_euler_intrinsic(rest_q[rot], j.order)
                wide = rest_q[rot] + 1.5 * (q[rot] - rest_q[rot])
                inside &= bool(cone.contains(matrix_from_euler_intrinsic(wide, j.order) @ ref.T))
        if inside:
            break
        q = rest_q + 0.5 * (q - rest_q)
    return fig.world(q)[fig.effector(effector)][:3, 3], q


def test_the_issue_example_works_on_the_humanoid() -> None:
    fig = animkit.load(ROOT / "scenes" / "humanoid.toml").figure
    target, _ = _fk_target(fig, "arm", "hand_r", 0)
    r = animkit.solve(fig, fig.rest_pose(), "hand_r", target, chain="arm")
    assert r.converged and np.linalg.norm(fig.world(r.pose)["hand_r"][:3, 3] - target) < 1e-4
    moved = np.flatnonzero(r.pose != fig.rest_pose())
    assert set(np.asarray(fig.dof_names)[moved]) <= {f"{j}.{a}" for j in fig.chain("arm") for a in
                                                    ("rx", "ry", "rz")}


@pytest.mark.parametrize(("file", "arm_r"), [
    ("cmu_02_01_walk.bvh", ("RightArm", "RightForeArm", "RightHand")),
    ("cmu_131_03_hop_3dsmax.bvh", ("RightShoulder", "RightElbow", "RightWrist")),
])
def test_bvh_humanoids_get_chains_and_effectors(file: str, arm_r: tuple[str, ...]) -> None:
    fig = animkit.load(DATA / file).figure
    rig = fig.rig
    assert list(rig.chains) == ["arm_l", "arm_r", "leg_l", "leg_r", "torso", "hips-up", "neck", "whole-body"]
    assert set(rig.effectors) == {"hand_l", "hand_r", "foot_l", "foot_r", "head"}
    assert rig.chain("arm_r") == arm_r and rig.effectors["hand_r"] == arm_r[-1]
    # every chain is a set of joints on the paths from the hips up to its effectors; the larger sets nest
    assert set(rig.chain("arm_r")) < set(rig.chain("torso")) < set(rig.chain("hips-up"))
    assert set(rig.chain("neck")) < set(rig.chain("hips-up"))
    assert not set(rig.chain("leg_l")) & set(rig.chain("hips-up"))
    for side in "lr":
        path = {a.joint.name for a in fig.path_to(rig.effectors[f"foot_{side}"])}
        assert set(rig.chain(f"leg_{side}")) <= path


@pytest.mark.parametrize(("chain", "effector"), [("arm_r", "hand_r"), ("leg_l", "foot_l"), ("neck", "head"),
                                                 ("torso", "hand_l")])
def test_bvh_chains_solve_by_name(chain: str, effector: str) -> None:
    """A target made by FK from a pose of the chain is met to 1e-4 m (the oracle is FK itself)."""
    fig = animkit.load(DATA / "cmu_02_01_walk.bvh").figure
    target, _ = _fk_target(fig, chain, effector, 3)
    r = animkit.solve(fig, fig.rest_pose(), effector, target, chain=chain)
    node = fig.effector(effector)
    assert np.linalg.norm(fig.world(r.pose)[node][:3, 3] - target) < 1e-4
    outside = np.setdiff1d(np.arange(fig.dof_count), dof_indices(fig, chain))
    np.testing.assert_array_equal(r.pose[outside], fig.rest_pose()[outside])


def test_an_unknown_chain_lists_the_chain_names_close_first() -> None:
    fig = animkit.load(DATA / "cmu_02_01_walk.bvh").figure
    listing = r"unknown chain.*'arm'.*did you mean 'arm_[lr]'.*expected one of: 'arm_[lr]', 'arm_[lr]', 'leg_l'"
    with pytest.raises(IKError, match=listing):
        animkit.solve(fig, fig.rest_pose(), "hand_r", (0.0, 1.0, 0.0), chain="arm")
    with pytest.raises(SceneError, match=r"did you mean 'torso'"):
        fig.chain("torsoo")
    with pytest.raises(IKError, match=r"did you mean 'hips-up'"):
        animkit.bake_reach(fig, "hand_r", (0.0, 1.0, 0.0), chain="hips_up")
    with pytest.raises(SceneError, match="no named chains"):
        Figure("a").chain("arm")


def test_chain_names_combine_with_joint_names() -> None:
    fig = animkit.load(ROOT / "scenes" / "humanoid.toml").figure
    both = dof_indices(fig, ["arm", "neck"])
    assert set(both) == set(dof_indices(fig, "arm")) | set(dof_indices(fig, "neck"))


def test_urdf_one_chain_per_leaf_duplicates_merged() -> None:
    for name, n_chains in (("ur5_robot.urdf", 1), ("kuka_iiwa.urdf", 1), ("franka_panda.urdf", 3)):
        fig = _urdf(name).figure
        chains = fig.rig.chains
        assert len(chains) == n_chains and list(chains)[0] == "arm"
        assert len(set(chains.values())) == len(chains)  # no two chains hold the same joints
        for leaf in fig.rig.effectors.values():  # each leaf's movable path is one of the chains
            path = tuple(a.joint.name for a in fig.path_to(leaf) if a.joint.dof_count)
            assert not path or path in chains.values()


def test_compare_on_a_six_axis_arm_draws_no_duplicates() -> None:
    sc = _urdf("ur5_robot.urdf")
    fig = sc.figure
    target, _ = _fk_target(fig, "arm", "ee_link", 1)
    c = animkit.compare(sc, effector="ee_link", target=target, duration=0.2, hold=0.0, fps=10, quiet=True)
    assert [p.chain for p in c.panels] == ["arm"]


def test_the_figure_checks_its_rig() -> None:
    fig = Figure("base")
    fig.add("upper", "base", offset=(0, 0, 1), joint=hinge("upper", "x"))
    fig.add("tip", "upper", offset=(0, 0, 1))
    fig.rig = Rig({"arm": ["upper"]}, {"hand": "tip"})
    assert fig.chain("arm") == ("upper",) and fig.effector("hand") == "tip" and fig.effector("upper") == "upper"
    with pytest.raises(SceneError, match=r"chain 'arm'.*unknown joint 'uper'.*did you mean 'upper'"):
        fig.rig = Rig({"arm": ["uper"]})
    with pytest.raises(SceneError, match=r"effector 'hand'.*unknown node 'tipp'"):
        fig.rig = Rig({}, {"hand": "tipp"})
    with pytest.raises(SceneError, match="shadow"):
        fig.rig = Rig({}, {"upper": "tip"})
    with pytest.raises(SceneError, match="list of joint names"):
        Rig({"arm": "upper"})
    with pytest.raises(SceneError, match="is empty"):
        Rig({"arm": []})
    with pytest.raises(SceneError, match="unknown effector 'hnd'"):
        fig.effector("hnd")
    assert fig.rig.chain("arm") == ("upper",)  # the failed assignments left the rig as it was
    again = pickle.loads(pickle.dumps(fig))
    assert again.rig == fig.rig and again.chain("arm") == ("upper",)
    assert Rig({"a": ("upper",)}).merged(Rig({"b": ("upper",)}, {"hand": "tip"})) == \
        Rig({"a": ("upper",), "b": ("upper",)}, {"hand": "tip"})


def test_a_gltf_sample_character_gets_the_humanoid_rig() -> None:
    """CesiumMan's node tree (names, parents, translations from the GLB's JSON chunk) as a figure of ball joints:
    the function the glTF reader calls finds its chains."""
    raw = (DATA / "CesiumMan.glb").read_bytes()
    length = struct.unpack("<I", raw[12:16])[0]
    nodes = json.loads(raw[20:20 + length])["nodes"]
    parent = {c: i for i, n in enumerate(nodes) for c in n.get("children", [])}
    fig = Figure(nodes[0]["name"])
    order = [0]
    for i in order:
        order += nodes[i].get("children", [])
    for i in order[1:]:
        fig.add(nodes[i]["name"], nodes[parent[i]]["name"], offset=nodes[i].get("translation", (0, 0, 0)),
                joint=ball(nodes[i]["name"]) if "joint" in nodes[i]["name"] else None)
    rig = humanoid_rig(fig)
    assert rig.chain("arm_l") == ("Skeleton_arm_joint_L__4_", "Skeleton_arm_joint_L__3_", "Skeleton_arm_joint_L__2_")
    assert rig.chain("leg_r") == ("leg_joint_R_1", "leg_joint_R_2", "leg_joint_R_3")
    assert rig.chain("neck") == ("Skeleton_neck_joint_1", "Skeleton_neck_joint_2")
    assert rig.effectors == {"hand_l": "Skeleton_arm_joint_L__2_", "hand_r": "Skeleton_arm_joint_R__3_",
                             "foot_l": "leg_joint_L_3", "foot_r": "leg_joint_R_3", "head": "Skeleton_neck_joint_2"}
    fig.rig = rig  # the figure accepts it


def test_leaf_rig_names_the_trunk() -> None:
    fig = Figure("base")
    fig.add("a", "base", joint=hinge("a", "z"))
    fig.add("b", "a", offset=(0, 0, 1), joint=hinge("b", "x"))
    fig.add("left", "b", offset=(0.1, 0, 0), joint=hinge("left", "y"))
    fig.add("right", "b", offset=(-0.1, 0, 0), joint=hinge("right", "y"))
    rig = leaf_rig(fig)
    assert dict(rig.chains) == {"to_left": ("a", "b", "left"), "to_right": ("a", "b", "right")}
    assert dict(rig.effectors) == {"left": "left", "right": "right"}


def test_info_lists_chains_and_effectors() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["info", str(DATA / "cmu_131_03_hop_3dsmax.bvh")]) == 0
    text = out.getvalue()
    assert "  arm_l: LeftShoulder, LeftElbow, LeftWrist" in text
    assert "effectors: hand_l -> LeftWrist, hand_r -> RightWrist, foot_l -> LeftAnkle" in text


def _bone_lengths(fig: Figure, pose: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every arc below the root: the child origin's distance from its parent's origin in the parent's own
    frame (|translation of W_parent⁻¹ W_child|, the length a rig keeps) and in world (|p_child − p_parent|)."""
    W = fig.world(pose)
    arcs = [a for a in fig.arcs() if a is not fig.root_arc]
    own = [np.linalg.norm(np.linalg.solve(W[a.parent.name], W[a.child.name])[:3, 3]) for a in arcs]
    world = [np.linalg.norm(W[a.child.name][:3, 3] - W[a.parent.name][:3, 3]) for a in arcs]
    return np.array(own), np.array(world)


@pytest.mark.parametrize("file", ["CesiumMan.glb", "RiggedFigure.glb"])
def test_a_reach_on_a_loaded_gltf_character_turns_joints_and_keeps_bone_lengths(file: str) -> None:
    """COLLADA2GLTF keys translation and scale on every node, so each joint has tx/ty/tz and sx/sy/sz DOFs;
    the humanoid chains name rotation DOFs only: a reach meets an FK-made target to 1e-4 m, every bone length
    (parent → child origin distance in world) stays that of the start pose to 1e-9, and clips keep every DOF."""
    scene = animkit.load(DATA / file)
    fig = scene.figure
    idx = dof_indices(fig, "arm_r")
    kinds = {fig.dofs[i].kind for i in idx}
    assert kinds == {"revolute"}
    assert any(d.kind == "prismatic" for a in fig.arcs() for d in a.joint.dofs)  # the file keys translation
    target, _ = _fk_target(fig, "arm_r", "hand_r", 7)
    q0 = fig.rest_pose()
    r = animkit.solve(fig, q0, "hand_r", target, chain="arm_r")
    assert np.linalg.norm(fig.world(r.pose)[fig.effector("hand_r")][:3, 3] - target) < 1e-4
    (own, world), (own0, world0) = _bone_lengths(fig, r.pose), _bone_lengths(fig, q0)
    np.testing.assert_allclose(own, own0, rtol=0, atol=1e-9)
    # in world too, up to the files' own scales (float32 1 ± 5e-7, not exactly uniform): a stretch would be mm
    np.testing.assert_allclose(world, world0, rtol=1e-6, atol=1e-9)
    moved = np.flatnonzero(r.pose != q0)
    assert moved.size and set(moved) <= set(idx)
    clip = next(iter(scene.clips.values()))  # clips still key the translation DOFs of the arm's joints
    arm = {fig.dofs[i].name.split(".")[0] for i in idx}
    assert {f"{j}.{c}" for j in arm for c in ("tx", "ty", "tz")} & set(clip.tracks)
