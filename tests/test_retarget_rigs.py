"""Retargeting onto rigs built the way real exporters build them (tests/retarget_rigs.py, written with animkit's own
glTF writer) and onto the sample characters, judged by measures written from their definitions: root travel against
the source's times the hip heights' ratio known by construction, the lowest mesh point while the source has a foot
planted, world bone directions against the source's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.apps.cli import main
from animkit.motion.retarget import (
    bind_world,
    bone_map,
    drivable,
    ground_plane,
    hip_height,
    lowest_surface,
    retarget_full,
    retarget_poses,
    with_rest,
)
from animkit.motion.retarget_rest import bind_pose, bind_rest, standing_target
from tests.retarget_rigs import (
    HIP_HEIGHT,
    NEVER_ANIMATED,
    RIGS,
    Measures,
    measure_retarget,
    standing_hip_height,
    write_rig,
)

DATA = Path(__file__).parent / "data"
EXAMPLES = Path(__file__).parent.parent / "animkit" / "examples"


@pytest.fixture(scope="module")
def walk() -> animkit.Scene:
    return animkit.load(DATA / "cmu_02_01_walk.bvh")


@pytest.fixture(scope="module")
def rigs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("rigs")
    with pytest.warns(UserWarning):  # the writer says it sampled the sway's Euler keys
        return {k: write_rig(k, folder).path for k in RIGS}


def assert_goals(m: Measures) -> None:
    assert 0.85 <= m.travel_ratio <= 1.15, m
    assert abs(m.low_median_m) <= 0.02 and m.low_p5_m >= -0.025, m
    assert m.dir_median_deg <= 5.0 and m.dir_p90_deg <= 20.0, m


@pytest.mark.parametrize("kind", RIGS)
def test_walk_onto_each_rig_meets_the_goals(kind: str, rigs: dict[str, Path], walk: animkit.Scene) -> None:
    target = animkit.load(rigs[kind])
    r = retarget_full(walk, target)
    m = measure_retarget(walk, target, r.figure, r.poses, dict(r.bone_map.pairs), standing_hip_height(walk),
                         HIP_HEIGHT)
    assert_goals(m)
    prefix = "mixamorig:" if kind.startswith("mixamo") else ""
    assert any(NEVER_ANIMATED in n and "rotation DOFs added" in n for n in r.notes)
    assert any("translation DOFs added to the hips" in n for n in r.notes) == (kind == "bind_differs")
    # the forearm its own file never turns follows its source: its elbow bends over the walk
    P = r.figure.world_positions(r.poses)
    names = r.figure.node_names
    fore = P[:, names.index(prefix + "LeftHand")] - P[:, names.index(prefix + "LeftForeArm")]
    upper = P[:, names.index(prefix + "LeftForeArm")] - P[:, names.index(prefix + "LeftArm")]
    bend = np.degrees(np.arccos(np.clip(np.einsum("fi,fi->f", fore, upper) /
                                        (np.linalg.norm(fore, axis=1) * np.linalg.norm(upper, axis=1)), -1, 1)))
    assert bend.max() - bend.min() > 5.0


def test_the_rigs_have_the_structures_they_claim(rigs: dict[str, Path]) -> None:
    for kind in ("mixamo_-90", "mixamo_+90"):
        doc = animkit.io.gltf_bytes.document_from_path(rigs[kind]).json
        arm = next(n for n in doc["nodes"] if n.get("name") == "Armature")
        np.testing.assert_allclose(arm["scale"], [0.01] * 3, rtol=1e-6)
        sign = 1.0 if kind.endswith("+90") else -1.0
        np.testing.assert_allclose(arm["rotation"], [sign * np.sin(np.pi / 4), 0, 0, np.cos(np.pi / 4)], atol=1e-6)
        hips = next(n for n in doc["nodes"] if n.get("name") == "mixamorig:Hips")
        assert np.linalg.norm(hips["translation"]) == pytest.approx(94.0, rel=1e-6)  # centimetres
        fig = animkit.load(rigs[kind]).figure
        hips_joint = fig.node("mixamorig:Hips").parent_arc.joint  # type: ignore[union-attr]
        assert [d.kind for d in hips_joint.dofs[:3]] == ["prismatic"] * 3  # its clip moves the hips (in cm)
        assert fig.node(f"mixamorig:{NEVER_ANIMATED}").parent_arc.joint.dof_count == 0  # type: ignore[union-attr]
    # bind_differs: the node pose is not the bind pose; bind_world recovers the T-pose the skin was bound in
    scene = animkit.load(rigs["bind_differs"])
    fig = scene.figure
    assert not any(d.kind == "prismatic" for d in fig.node("Hips").parent_arc.joint.dofs)  # type: ignore[union-attr]
    assert hip_height(fig, "Hips") < 0.8 * HIP_HEIGHT  # bent knees in the nodes
    W = bind_world(fig, scene.meshes)
    skin = scene.meshes[0].skin
    assert skin is not None
    np.testing.assert_allclose(W[skin.joint_index], np.linalg.inv(skin.inverse_bind), atol=1e-6)
    names = fig.node_names
    feet = [names.index(n) for n in ("LeftFoot", "LeftToeBase", "LeftToe_End")]
    assert W[names.index("Hips"), 1, 3] - W[feet, 1, 3].min() == pytest.approx(HIP_HEIGHT, abs=1e-6)


def test_a_wrong_result_measures_wrong(rigs: dict[str, Path], walk: animkit.Scene) -> None:
    """The node pose taken for the rest (the old way) on bind_differs, or the Mixamo root written as if the armature
    had no scale: the measures that pass above fail here."""
    target = animkit.load(rigs["bind_differs"])
    r = retarget_full(walk, target)
    assert hip_height(r.figure, "Hips") == pytest.approx(HIP_HEIGHT, abs=1e-6)  # handed back standing in its bind
    bm = bone_map(walk.figure, target.figure)
    P = walk.clip().sample(walk.clip().frame_times())
    node_rest, _ = drivable(target.figure, list(bm.pairs), ["Hips"])  # the DOFs, but the file's node pose at rest
    wrong, _, _ = retarget_poses(walk.figure, P, node_rest, bm, source_up=walk.up, target_up=target.up)
    m = measure_retarget(walk, target, node_rest, wrong, dict(bm.pairs), standing_hip_height(walk), HIP_HEIGHT)
    assert not 0.85 <= m.travel_ratio <= 1.15
    mixamo = animkit.load(rigs["mixamo_-90"])
    r = retarget_full(walk, mixamo)
    hips = r.figure.node_names.index("mixamorig:Hips")
    cols = [i for i, n in enumerate(r.figure.dof_names) if n.startswith("mixamorig:Hips.t")]
    unscaled = r.poses.copy()
    unscaled[:, cols] *= 0.01  # the translation in metres where the hips' parent counts centimetres
    m = measure_retarget(walk, mixamo, r.figure, unscaled, dict(r.bone_map.pairs), standing_hip_height(walk),
                         HIP_HEIGHT)
    assert m.travel_ratio < 0.05 and m.low_median_m < -0.5
    assert r.figure.world_positions(unscaled)[:, hips, 1].max() < 0.05  # the hips at the origin


@pytest.mark.parametrize("character", ["CesiumMan", "RiggedFigure", "humanoid"])
def test_walk_onto_the_sample_characters_meets_the_goals(character: str, walk: animkit.Scene) -> None:
    path = EXAMPLES / "humanoid.toml" if character == "humanoid" else DATA / f"{character}.glb"
    target = animkit.load(path)
    r = retarget_full(walk, target)
    m = measure_retarget(walk, target, r.figure, r.poses, dict(r.bone_map.pairs), standing_hip_height(walk),
                         standing_hip_height(target))
    assert_goals(m)
    if character == "RiggedFigure":  # the hips get a translation, the left elbow a rotation, and the log says so
        assert any("torso_joint_1" in n for n in r.notes)
        assert any("arm_joint_L_2" in n for n in r.notes)
        cols = [i for i, n in enumerate(r.figure.dof_names) if n.startswith("arm_joint_L_2.r")]
        assert len(cols) == 3 and np.ptp(r.poses[:, cols], axis=0).max() > 0.1


def test_drivable_keeps_the_rest_geometry_and_the_names() -> None:
    scene = animkit.load(DATA / "RiggedFigure.glb")
    fig = scene.figure
    wide, failed = drivable(fig, ["arm_joint_L_2", "arm_joint_L_3", "torso_joint_1"], ["torso_joint_1"])
    assert failed == () and wide.node_names == fig.node_names
    assert set(fig.dof_names) <= set(wide.dof_names)
    np.testing.assert_allclose(wide.world_batch(wide.rest_pose()[None]), fig.world_batch(fig.rest_pose()[None]),
                               atol=1e-12)
    assert [d.kind for d in wide.node("torso_joint_1").parent_arc.joint.dofs][:3] == ["prismatic"] * 3  # type: ignore
    assert drivable(fig, ["torso_joint_1"], []) == (fig, ())  # nothing to add: the same figure


def test_ground_plane_finds_a_sloping_floor(walk: animkit.Scene) -> None:
    """The walk with its root raised by 5 % of its forward travel: the fitted floor's slope along z grows by 0.05."""
    P = walk.clip().sample(walk.clip().frame_times())
    base = ground_plane(walk.figure, P)
    tilted = P.copy()
    iy, iz = walk.figure.dof_index("Hips.ty"), walk.figure.dof_index("Hips.tz")
    tilted[:, iy] += 0.05 * tilted[:, iz]
    got = ground_plane(walk.figure, tilted)
    assert got[3] - base[3] == pytest.approx(0.05, abs=0.004)
    assert got[2] == 0.0 and base[2] == 0.0  # nothing along up


def test_cli_retarget_onto_a_mixamo_rig_walks_on_the_floor(rigs: dict[str, Path], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "walk.glb"
    assert main(["retarget", str(DATA / "cmu_02_01_walk.bvh"), str(rigs["mixamo_-90"]), "-o", str(out),
                 "--no-lock"]) == 0
    text = capsys.readouterr().out
    assert "LeftForeArm" in text
    back = animkit.load(out)
    P = back.clip().sample_frames()
    X = back.figure.world_positions(P)
    hips = X[:, back.figure.node_names.index("mixamorig:Hips")]
    assert np.linalg.norm((hips[-1] - hips[0])[[0, 2]]) > 2.5  # metres: the walk covers ground
    low = np.min([m.positions(back.figure.world_batch(P))[..., 1].min(axis=1) for m in back.meshes], axis=0)
    assert np.median(low) == pytest.approx(0.0, abs=0.02)


def test_standing_target_is_built_once_and_anew_for_an_edited_figure(rigs: dict[str, Path]) -> None:
    """The cached target (bind pose, added DOFs) equals the one built step by step; the same figure gets the same
    one back, an edited figure (or an edited result) a new one that holds the edit (or drops it)."""
    target = animkit.load(rigs["bind_differs"])
    fig, meshes = target.figure, target.meshes
    mapped = [n for n in fig.node_names if n != "Hips"][:6] + ["Hips"]
    made, failed, turned = standing_target(fig, meshes, mapped, "Hips")
    W_bind = bind_world(fig, meshes)
    by_hand, failed_h = drivable(fig, [n for n in fig.node_names if n in mapped or n in turned], ["Hips"])
    by_hand = with_rest(by_hand, bind_pose(by_hand, W_bind))
    assert turned and failed == failed_h and made.dof_names == by_hand.dof_names
    np.testing.assert_array_equal(made.rest_pose(), by_hand.rest_pose())
    np.testing.assert_array_equal(made.world_batch(made.rest_pose()[None]),
                                  by_hand.world_batch(by_hand.rest_pose()[None]))
    assert standing_target(fig, meshes, mapped, "Hips")[0] is made  # built once
    made.add("edited_out", "Hips", offset=[0.0, 0.1, 0.0])  # a caller edits what it got: the next call rebuilds
    again = standing_target(fig, meshes, mapped, "Hips")[0]
    assert again is not made and "edited_out" not in again.node_names
    fig.add("edited_in", "Hips", offset=[0.0, 0.1, 0.0])  # the figure itself edited: a new target holding the edit
    edited = standing_target(fig, meshes, mapped, "Hips")[0]
    assert edited is not again and "edited_in" in edited.node_names and "edited_in" not in again.node_names


@pytest.mark.parametrize("character", ["CesiumMan", "Fox", "bind_differs"])
def test_lowest_surface_equals_the_whole_skinned_mesh(character: str, rigs: dict[str, Path]) -> None:
    """lowest_surface skins only the vertices that can be lowest: its minimum per frame is the whole mesh's
    (every vertex skinned), number for number, on poses far from the rest along both up axes."""
    scene = animkit.load(rigs[character] if character in rigs else DATA / f"{character}.glb")
    fig = scene.figure
    rng = np.random.default_rng(3)
    W = fig.world_batch(fig.rest_pose()[None] + rng.normal(0.0, 0.5, (40, len(fig.dof_names))))
    for up, k in (("y", 1), ("z", 2)):
        lowest = lowest_surface(fig, scene.meshes, up)  # type: ignore[arg-type]
        assert lowest is not None
        whole = np.min([m.positions(W)[..., k].min(axis=1) for m in scene.meshes], axis=0)
        np.testing.assert_array_equal(lowest(W), whole)


def test_bind_rest_is_the_bind_pose_built_once(rigs: dict[str, Path]) -> None:
    """bind_differs's skin binds it otherwise than its nodes stand: bind_rest is bind_pose of bind_world, the same
    read-only array on a second call; the Fox (bound as its nodes stand) and a skinless figure have none."""
    rig = animkit.load(rigs["bind_differs"])
    rest = bind_rest(rig.figure, rig.meshes)
    assert rest is not None and not rest.flags.writeable
    np.testing.assert_array_equal(rest, bind_pose(rig.figure, bind_world(rig.figure, rig.meshes)))
    assert bind_rest(rig.figure, rig.meshes) is rest
    assert bind_rest(rig.figure, ()) is None
    fox = animkit.load(DATA / "Fox.glb")
    assert bind_rest(fox.figure, fox.meshes) is None
