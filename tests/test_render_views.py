"""Camera options: named views, azimuth/elevation/distance, and a camera that follows the root."""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
import pytest

import animkit
from animkit.apps.cli import build_parser, camera_from_args, main
from animkit.errors import RenderError
from animkit.render.camera import VIEWS, follow_cameras, horizontal, orbit, view_angles
from animkit.render.frames import clip_cameras
from animkit.render.placed import figure_mesh

from .conftest import DATA, SCENES


def _args(*extra: str) -> argparse.Namespace:
    return build_parser().parse_args(["render", "x.toml", "-o", "x.gif", *extra])


def test_front_view_shows_the_right_hand_on_the_image_left() -> None:
    # the humanoid faces +z with its right side at -x: seen from the front, its right hand is on the image's left
    scene = animkit.load(SCENES / "humanoid.toml")
    fig = scene.figure
    spec = camera_from_args(scene.camera, _args("--view", "front"))
    cam = clip_cameras(spec, scene.up, fig, figure_mesh(fig), fig.rest_pose()[None])[0]
    W = fig.world_positions(fig.rest_pose()[None])[0]
    (xr, _), (xl, _) = cam.project(W[[fig.node_names.index("hand_r"), fig.node_names.index("hand_l")]])[0]
    assert xr < cam.width / 2 < xl
    # and from the side (azimuth 90, from +x) the left hand is nearer the camera than the right
    spec = camera_from_args(scene.camera, _args("--view", "side"))
    cam = clip_cameras(spec, scene.up, fig, figure_mesh(fig), fig.rest_pose()[None])[0]
    d = cam.project(W[[fig.node_names.index("hand_r"), fig.node_names.index("hand_l")]])[1]
    assert d[1] < d[0]


def test_camera_options_override_the_view_and_drop_a_fixed_eye() -> None:
    spec = animkit.CameraSpec(eye=(1.0, 2.0, 3.0), target=(0.0, 1.0, 0.0))
    out = camera_from_args(spec, _args("--view", "top", "--azimuth", "45", "--distance", "7", "--follow"))
    assert (out.azimuth_deg, out.elevation_deg) == (45.0, VIEWS["top"][1])
    assert out.eye is None and out.target is None and out.distance == 7.0 and out.follow
    # --fov alone keeps the scene's eye
    assert camera_from_args(spec, _args("--fov", "30")).eye == spec.eye
    with pytest.raises(RenderError, match="front"):
        view_angles("back")


def test_distance_places_the_eye_that_far_from_the_framed_centre() -> None:
    scene = animkit.load(SCENES / "humanoid.toml")
    fig = scene.figure
    spec = dataclasses.replace(scene.camera, distance=9.0, azimuth_deg=0.0, elevation_deg=0.0)
    cam = clip_cameras(spec, scene.up, fig, figure_mesh(fig), fig.rest_pose()[None])[0]
    np.testing.assert_allclose(np.linalg.norm(np.subtract(cam.eye, cam.target)), 9.0)
    np.testing.assert_allclose(np.subtract(cam.eye, cam.target), [0, 0, 9.0], atol=1e-9)  # azimuth 0: from +z


def test_a_following_camera_keeps_the_root_at_one_pixel_column() -> None:
    # oracle: a root walking across the ground projects (at a fixed height) to one and the same pixel
    scene = animkit.load(DATA / "cmu_02_01_walk.bvh")
    fig, clip = scene.figure, scene.clip()
    poses = clip.sample(np.arange(0, clip.duration, 0.25))
    spec = dataclasses.replace(scene.camera, follow=True)
    cams = clip_cameras(spec, scene.up, fig, figure_mesh(fig), poses)
    roots = fig.world_positions(poses)[:, 0]
    assert np.ptp(horizontal(roots), axis=0).max() > 1.0  # it really walks
    on_ground = horizontal(roots) + [0.0, 0.9 * roots[0, 1], 0.0]
    px = np.array([c.project(p[None])[0][0] for c, p in zip(cams, on_ground, strict=True)])
    np.testing.assert_allclose(px, np.broadcast_to(px[0], px.shape), atol=1e-6)
    # a fixed camera sees the same points move across the image
    fixed = clip_cameras(scene.camera, scene.up, fig, figure_mesh(fig), poses)
    assert all(c is fixed[0] for c in fixed)
    moved = np.array([fixed[0].project(p[None])[0][0] for p in on_ground])
    assert np.ptp(moved[:, 0]) > 50


def test_follow_cameras_shift_eye_and_target_by_the_ground_part_only() -> None:
    cam = orbit((0.0, 1.0, 0.0), 4.0, 30.0, 15.0, "z")
    roots = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 0.7]])
    c0, c1 = follow_cameras(cam, roots, "z")
    np.testing.assert_allclose(np.subtract(c1.eye, c0.eye), [1.0, 2.0, 0.0])
    np.testing.assert_allclose(np.subtract(c1.target, c0.target), [1.0, 2.0, 0.0])


def test_cli_render_with_camera_options(tmp_path) -> None:
    out = tmp_path / "f.png"
    assert main(["render", str(DATA / "cmu_02_01_walk.bvh"), "-o", str(out), "--fps", "2", "--size", "64x48",
                 "--follow", "--view", "side", "-q"]) == 0
    assert out.stat().st_size > 0
    assert main(["render", str(SCENES / "wave.toml"), "-o", str(tmp_path / "x.gif"), "--elevation", "95"]) == 2
