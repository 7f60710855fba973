"""The readable look: right warm, left cool, trunk neutral; a nose where the figure faces; bones like a body."""

from __future__ import annotations

import numpy as np
import pytest

import animkit
from animkit.render.frames import FigureRenderer, Style, clip_cameras
from animkit.render.placed import (
    LEFT_HUE,
    NOSE_COLOR,
    RIGHT_HUE,
    figure_look,
    node_sides,
    place_vertices,
    prepare_look,
    prepared_look,
    sides_at_rest,
)

from .conftest import DATA, SCENES


def _named_side(name: str) -> str | None:
    """The oracle: the side the file's author wrote into the name."""
    for side, word, letter in (("r", "right", "R"), ("l", "left", "L")):
        if name.endswith("_" + side) or name.lower().startswith(word) or (name[:1] == letter and name[1:2].isupper()):
            return side
    return None


@pytest.mark.parametrize("path", [SCENES / "humanoid.toml", DATA / "cmu_02_01_walk.bvh",
                                  DATA / "cmu_131_03_hop_3dsmax.bvh", DATA / "cmu_09_01_run.bvh"])
def test_sides_from_geometry_agree_with_the_names(path) -> None:
    scene = animkit.load(path)
    fig = scene.figure
    sides = sides_at_rest(fig, scene.up)
    named = [_named_side(n) for n in fig.node_names]
    # every node with a side in its name gets that side, unless it sits on the midline (a collar's root, a hip
    # joint at the pelvis' centre), and nothing unnamed is sided except what hangs below a sided node
    P = fig.world_positions(fig.rest_pose()[None])[0]
    for n, s, want, p in zip(fig.node_names, sides, named, P, strict=True):
        if want is not None and abs(p[0] - P[0, 0]) > 0.04 * fig.size():
            assert s == want, n
        if s is not None and want is None:
            assert sides[fig.node_names.index(fig.parent_of(n))] == s, n
    assert sides.count("l") == sides.count("r") > 4


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_robot_arm_has_no_sides() -> None:
    for path in (SCENES / "six_axis_arm.toml", DATA / "franka_panda.urdf", DATA / "ur5_robot.urdf"):
        scene = animkit.load(path)
        assert node_sides(scene.figure, scene.up) == [None] * len(scene.figure.node_names)


def _hue_pixels(image: np.ndarray, hue) -> np.ndarray:
    """Pixels whose colour is a shade of ``hue`` (the same direction in RGB, within a few degrees)."""
    c = image.reshape(-1, 3).astype(float)
    h = np.asarray(hue) / np.linalg.norm(hue)
    n = np.linalg.norm(c, axis=1)
    cos = np.divide(c @ h, n, out=np.zeros_like(n), where=n > 0)
    return (cos > 0.995).reshape(image.shape[:2])


@pytest.mark.parametrize("path", [SCENES / "humanoid.toml", DATA / "cmu_02_01_walk.bvh"])
def test_from_the_front_the_right_side_is_warm_on_the_image_left(path) -> None:
    scene = animkit.load(path)
    fig = scene.figure
    spec = animkit.CameraSpec(azimuth_deg=0.0, elevation_deg=5.0, width=200, height=200)
    look = figure_look(fig, scene.up)
    cam = clip_cameras(spec, scene.up, fig, look, fig.rest_pose()[None])[0]
    img = FigureRenderer(fig, cam, up=scene.up, style=Style(grid=False), mesh=look).frame(
        fig.world_batch(fig.rest_pose()[None])[0])
    warm, cool = _hue_pixels(img, RIGHT_HUE), _hue_pixels(img, LEFT_HUE)
    cols = np.arange(img.shape[1])
    assert warm.sum() > 100 and cool.sum() > 100
    assert (warm * cols).sum() / warm.sum() < img.shape[1] / 2 < (cool * cols).sum() / cool.sum()


@pytest.mark.parametrize("path", [SCENES / "humanoid.toml", DATA / "cmu_02_01_walk.bvh"])
def test_the_nose_points_where_the_figure_faces_and_turns_with_it(path) -> None:
    scene = animkit.load(path)
    fig = scene.figure
    look = figure_look(fig, scene.up)
    nose = np.flatnonzero(np.all(np.isclose(look.face_colors, NOSE_COLOR), axis=1))
    assert len(nose)
    verts = np.unique(look.faces[nose])
    head = np.unique(look.owner[verts])
    assert len(head) == 1
    rest = fig.rest_pose()
    W = fig.world_batch(rest[None])[0]
    v = place_vertices(look, W)[verts]
    ahead = (v - W[head[0], :3, 3]) @ [0.0, 0.0, 1.0]  # both face +z at rest
    assert ahead.min() > 0
    # turn the whole body half round about the up axis: the nose now points to -z
    turned = rest.copy()
    turned[fig.dof_names.index(f"{fig.root.name}.ry")] = np.pi
    W2 = fig.world_batch(turned[None])[0]
    v2 = place_vertices(look, W2)[verts]
    assert ((v2 - W2[head[0], :3, 3]) @ [0.0, 0.0, 1.0]).max() < 0


def test_bvh_bones_are_as_thick_as_a_body() -> None:
    # the trunk's tubes are about a tenth of the height across, the limbs' about 6 %: not a wire
    scene = animkit.load(DATA / "cmu_02_01_walk.bvh")
    fig = scene.figure
    look = figure_look(fig, scene.up)
    P = fig.world_positions(fig.rest_pose()[None])[0]
    H = np.ptp(P[:, 1])
    i = fig.node_names.index("LeftUpLeg")
    v = place_vertices(look, fig.world_batch(fig.rest_pose()[None])[0])[look.owner == i]
    axis = P[fig.node_names.index("LeftLeg")] - P[i]
    axis /= np.linalg.norm(axis)
    radial = np.linalg.norm(np.cross(v - P[i], axis), axis=1)
    np.testing.assert_allclose(radial.max(), 0.032 * H, rtol=0.05)


@pytest.mark.parametrize("path", [SCENES / "humanoid.toml", DATA / "cmu_02_01_walk.bvh",
                                  DATA / "cmu_131_03_hop_3dsmax.bvh"])
def test_sides_by_name_and_by_geometry_agree_on_every_sided_node(path) -> None:
    # two independent routes: the humanoid name matcher, and mirrored pairs at rest
    scene = animkit.load(path)
    by_name, by_shape = node_sides(scene.figure, scene.up), sides_at_rest(scene.figure, scene.up)
    both = [(a, b) for a, b in zip(by_name, by_shape, strict=True) if a is not None and b is not None]
    assert len(both) > 10 and all(a == b for a, b in both)


def test_a_gltf_skeleton_is_drawn_from_its_rest_offsets_with_sides() -> None:
    # glTF nodes carry their offsets in the joints (TRS), not in L: bones come from the rest positions
    scene = animkit.load(DATA / "CesiumMan.glb")
    fig = scene.figure
    look = figure_look(fig, scene.up)
    sides = node_sides(fig, scene.up)
    for name, side in zip(fig.node_names, sides, strict=True):
        if "_L" in name or "_R" in name:
            assert side == ("l" if "_L" in name else "r"), name
    owners = {fig.node_names[i] for i in np.unique(look.owner)}
    assert "Skeleton_torso_joint_1" in owners and not owners & {"world", "Z_UP", "Armature"}
    # every drawn bone ends at its child's origin at rest: the left shin reaches the left ankle
    W = fig.world_batch(fig.rest_pose()[None])[0]
    v = place_vertices(look, W)
    knee, ankle = fig.node_names.index("leg_joint_L_2"), fig.node_names.index("leg_joint_L_3")
    assert np.linalg.norm(v[look.owner == knee] - W[ankle, :3, 3], axis=1).min() < 0.05


def _same_look(a, b) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("vertices", "owner", "faces", "face_colors",
                                                                        "radius"))


def test_a_prepared_look_is_the_figure_look_used_once_and_not_after_the_figure_changed() -> None:
    fig = animkit.load(SCENES / "humanoid.toml").figure
    want = figure_look(fig)
    prepare_look(fig)
    first = prepared_look(fig)
    assert _same_look(first, want)
    again = prepared_look(fig)  # used once: made anew, the same numbers
    assert again is not first and _same_look(again, want)
    prepare_look(fig)
    fig.add("extra", parent=fig.node_names[-1], offset=(0.0, 0.1, 0.0), joint=animkit.Joint("extra", "fixed"))
    changed = prepared_look(fig)  # the figure grew after it was prepared: not the stale look
    assert _same_look(changed, figure_look(fig)) and len(changed.radius) == len(want.radius) + 1
