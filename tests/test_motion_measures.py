"""Motion measures against answers built into the tests: a foot sliding at a known speed, a mesh sunk a known
depth under the floor with its joints above it, a walk on the spot, a neck turning at a known rate, a known limit
violation, a bone turned by a known angle, and a retarget onto the source's own figure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.look.mesh import Mesh, Skin
from animkit.look.surface import body_surface, descendants
from animkit.motion import in_place, legs_of
from animkit.motion.measures import (
    SourceMotion,
    carry_contacts,
    height_contacts,
    measure_motion,
)
from animkit.motion.retarget import bone_map, retarget_full

DATA = Path(__file__).parent / "data"
SCENES = Path(__file__).parent.parent / "scenes"
FPS = 30.0


@pytest.fixture(scope="module")
def humanoid() -> animkit.Scene:
    return animkit.load(SCENES / "humanoid.toml")


def _still(fig: animkit.Figure, frames: int = 31) -> np.ndarray:
    return np.repeat(fig.rest_pose()[None], frames, axis=0)


def test_a_foot_sliding_at_half_a_metre_per_second_scores_500_mm_per_s(humanoid: animkit.Scene) -> None:
    fig = humanoid.figure
    P = _still(fig)
    t = np.arange(len(P)) / FPS
    P[:, fig.dof_names.index("hips.tx")] = 0.5 * t  # the whole figure glides: both feet slide at 0.5 m/s
    r = measure_motion(fig, P, FPS)
    assert r.contacts == "height" and r.contact_frames == len(P)  # planted by height, however fast they move
    assert r.skate_mm_per_s == pytest.approx(500.0, rel=1e-9)
    assert all(v == pytest.approx(500.0, rel=1e-9) for v in r.skate_by_point_mm_per_s.values())
    # travel in standing hip heights: the hips above the lowest point of the feet's drawn surface at rest (not the
    # lowest joint, which a retarget scales by: the measure must not check the retarget against itself)
    W0 = fig.world_batch(fig.rest_pose()[None])
    hips = W0[0, fig.node_names.index("hips"), 1, 3]
    low = np.nanmin(body_surface(fig).lowest(W0, 1, [descendants(fig, leg.ankle) for leg in legs_of(fig)]))
    assert r.travel_hh == pytest.approx(0.5 * t[-1] / (hips - low), rel=1e-9)
    joints_low = W0[0, :, 1, 3].min()
    assert abs((hips - low) / (hips - joints_low) - 1.0) > 0.02  # the two heights differ here: the test can tell
    assert r.facing_change_deg == pytest.approx(0.0, abs=1e-9)
    # standing still: nothing slides
    assert measure_motion(fig, _still(fig), FPS).skate_mm_per_s == 0.0


def test_a_mesh_sunk_5_cm_scores_50_mm_while_its_joints_are_above_the_ground(humanoid: animkit.Scene) -> None:
    fig = humanoid.figure
    P = _still(fig)
    names = fig.node_names
    W0 = fig.world_batch(fig.rest_pose()[None])[0]
    assert W0[:, 1, 3].min() > 0.0  # every joint centre above the floor
    ia = names.index("ankle_l")
    # a sole plate skinned to the left ankle, 5 cm under the floor (its bind: the ankle's rest world matrix)
    plate = np.array([[0.05, -0.05, -0.05], [0.15, -0.05, -0.05], [0.15, -0.05, 0.15], [0.05, -0.05, 0.15]])
    skin = Skin("s", ("ankle_l",), np.linalg.inv(W0[ia])[None], np.array([ia]))
    mesh = Mesh("sole", "ankle_l", ia, np.array([[0, 1, 2], [0, 2, 3]]), plate, np.tile([0.0, 1.0, 0.0], (4, 1)),
                skin=skin, joints=np.zeros((4, 1), dtype=np.intp), weights=np.ones((4, 1)))
    np.testing.assert_allclose(mesh.positions(fig.world_batch(P))[:, :, 1], -0.05, atol=1e-12)
    r = measure_motion(fig, P, FPS, meshes=(mesh,))
    assert r.surface == "mesh"
    assert r.penetration_mm == pytest.approx(50.0, rel=1e-9)
    assert r.planted_height_median_mm == pytest.approx(-50.0, rel=1e-9)  # the planted left foot: 5 cm under
    # lifted 8 cm: the plate floats 3 cm while the foot is planted, nothing is under the floor
    P[:, fig.dof_names.index("hips.ty")] += 0.08
    up = measure_motion(fig, P, FPS, meshes=(mesh,))
    assert up.penetration_mm == 0.0
    assert up.float_mm == pytest.approx(30.0, rel=1e-9)
    # the drawn geometry of the figure (no mesh) at rest: its lowest point is the toes' boxes, above the floor
    drawn = body_surface(fig)
    assert drawn.kind == "drawn"
    low = drawn.lowest(fig.world_batch(fig.rest_pose()[None]), 1)[0, 0]
    assert measure_motion(fig, _still(fig), FPS).planted_height_median_mm == pytest.approx(1000 * low, rel=1e-9)


def test_a_walk_on_the_spot_travels_zero_hip_heights() -> None:
    scene = animkit.load(SCENES / "walk.toml")
    fig, clip = scene.figure, scene.clip()
    P = clip.sample_frames()
    walking = measure_motion(fig, P, clip.fps)
    assert walking.travel_hh is not None and walking.travel_hh > 1.0
    still, _ = in_place(fig, P)
    r = measure_motion(fig, still, clip.fps)
    assert r.travel_hh == pytest.approx(0.0, abs=1e-9)
    assert r.facing_change_deg == pytest.approx(0.0, abs=1e-6)


def test_a_neck_turning_at_360_deg_per_s_shows_360(humanoid: animkit.Scene) -> None:
    fig = humanoid.figure
    P = _still(fig, 11)
    P[:, fig.dof_names.index("neck.ry")] = np.radians(-60.0) + np.radians(360.0) * np.arange(11) / FPS
    r = measure_motion(fig, P, FPS)
    assert r.angular_speed_peak_joint == "neck"
    assert r.angular_speed_peak_deg_per_s == pytest.approx(360.0, rel=1e-9)
    assert r.angular_speed_by_joint_deg_per_s["head"] == pytest.approx(0.0, abs=1e-6)  # head still on the neck
    assert r.limit_violations == 0


def test_a_known_limit_violation_is_counted(humanoid: animkit.Scene) -> None:
    fig = humanoid.figure
    P = _still(fig)
    P[5:8, fig.dof_names.index("knee_l.rx")] = np.radians(-10.0)  # the knee bends 10° the wrong way, 3 frames
    r = measure_motion(fig, P, FPS)
    assert r.limit_violations == 3
    assert r.limit_excess_by_dof == {"knee_l.rx": pytest.approx(10.0, rel=1e-9)}


def test_bone_directions_agree_on_the_own_figure_and_show_a_turned_bone(humanoid: animkit.Scene) -> None:
    fig = humanoid.figure
    P = _still(fig)
    P[:, fig.dof_names.index("hip_l.rx")] = np.radians(20.0) * np.sin(np.arange(len(P)) / 5.0)
    same = measure_motion(fig, P, FPS, source=SourceMotion(fig, P))
    assert same.bone_direction_median_deg == pytest.approx(0.0, abs=1e-9)
    assert same.bone_direction_p90_deg == pytest.approx(0.0, abs=1e-9)
    assert same.travel_ratio is None  # standing: no travel to compare
    bent = P.copy()
    bent[:, fig.dof_names.index("knee_l.rx")] += np.radians(30.0)  # the shin turns 30° about the knee's hinge
    r = measure_motion(fig, bent, FPS, source=SourceMotion(fig, P, bones=bone_map(fig, fig)))
    med, p90 = r.bone_direction_by_bone_deg["knee_l>ankle_l"]
    assert med == pytest.approx(30.0, rel=1e-9) and p90 == pytest.approx(30.0, rel=1e-9)
    assert r.bone_direction_by_bone_deg["hip_l>knee_l"][0] == pytest.approx(0.0, abs=1e-9)


def test_a_walk_retargeted_onto_its_own_figure_agrees_and_travels_alike() -> None:
    walk = animkit.load(DATA / "cmu_02_01_walk.bvh")
    P = walk.clip().sample_frames()
    r = retarget_full(walk, walk.figure)
    m = measure_motion(walk.figure, r.poses, walk.clip().fps, source=SourceMotion(walk.figure, P, walk.up))
    assert m.contacts == "source"
    assert m.bone_direction_median_deg == pytest.approx(0.0, abs=1e-6)
    assert m.bone_direction_p90_deg == pytest.approx(0.0, abs=1e-6)
    assert m.travel_ratio == pytest.approx(1.0, rel=1e-9)
    assert m.facing_error_deg == pytest.approx(0.0, abs=1e-6)
    d = m.to_dict()
    assert d["bone_direction_by_bone_deg"] and d["skate_mm_per_s"] == m.skate_mm_per_s


def test_contacts_carried_from_the_source_onto_another_skeleton() -> None:
    walk = animkit.load(DATA / "cmu_02_01_walk.bvh")
    target = animkit.load(DATA / "CesiumMan.glb")
    P = walk.clip().sample_frames()
    src = height_contacts(walk.figure, P, walk.clip().fps)
    s_legs, t_legs = legs_of(walk.figure), legs_of(target.figure)
    carried = carry_contacts(src, s_legs, t_legs)
    for s, t in zip(s_legs, t_legs, strict=True):
        assert s.side == t.side
        np.testing.assert_array_equal(carried.mask[:, carried.points.index(t.ankle)],
                                      src.mask[:, src.points.index(s.ankle)])
        np.testing.assert_array_equal(carried.mask[:, carried.points.index(t.toe)],
                                      src.mask[:, src.points.index(s.toe)])
    r = retarget_full(walk, target)
    m = measure_motion(target.figure, r.poses, walk.clip().fps, up=target.up, meshes=target.meshes,
                       source=SourceMotion(walk.figure, P, walk.up, r.bone_map))
    assert m.contacts == "source" and m.surface == "mesh"
    assert m.contact_frames == int(src.mask.any(axis=1).sum())


def test_surface_heights_are_the_skinned_meshes_lowest_points() -> None:
    """BodySurface.lowest (one matrix product on the influence table) against Mesh.positions (the skinning kernel)
    on CesiumMan's walk frames: per foot group and over the whole body."""
    scene = animkit.load(DATA / "CesiumMan.glb")
    fig = scene.figure
    P = scene.clip().sample_frames()[::7]
    W = fig.world_batch(P)
    surface = body_surface(fig, scene.meshes)
    X = np.concatenate([m.positions(W) for m in scene.meshes], axis=1)
    np.testing.assert_allclose(surface.lowest(W, 1)[:, 0], X[..., 1].min(axis=1), atol=1e-12)
    legs = legs_of(fig)
    groups = [descendants(fig, leg.ankle) for leg in legs]
    low = surface.lowest(W, 1, groups)
    for j, g in enumerate(groups):
        own = np.isin(surface.owner, g)
        assert own.any()
        np.testing.assert_allclose(low[:, j], X[:, own, 1].min(axis=1), atol=1e-12)
        np.testing.assert_allclose(surface.positions(W, g), X[:, own], atol=1e-12)


def test_marker_jitter_is_not_skate_and_a_steady_slide_is_its_speed_at_any_frame_rate(
        humanoid: animkit.Scene) -> None:
    """A figure standing still with 0.3 mm of noise per axis on its hips (120 fps): frame to frame its feet move
    0.5 mm a frame, 64 mm/s, but nothing slides; over 0.1 s windows it scores under 10 mm/s. A steady slide at
    0.3 m/s scores 300 mm/s at 30 and at 120 fps."""
    fig = humanoid.figure
    rng = np.random.default_rng(7)
    P = _still(fig, 240)
    cols = [fig.dof_names.index(f"hips.t{a}") for a in "xyz"]
    P[:, cols] += rng.normal(0.0, 0.0003, (len(P), 3))
    r = measure_motion(fig, P, 120.0)
    assert r.contact_frames == len(P)
    assert r.skate_mm_per_s is not None and r.skate_mm_per_s < 10.0
    for fps in (30.0, 120.0):
        Q = _still(fig, int(fps))
        Q[:, cols[0]] = 0.3 * np.arange(len(Q)) / fps
        assert measure_motion(fig, Q, fps).skate_mm_per_s == pytest.approx(300.0, rel=1e-9)


def test_a_swinging_foot_near_the_floor_is_not_planted(humanoid: animkit.Scene) -> None:
    """The left leg swings its foot through the bottom of its arc at over 2 m/s, within 4 % of the hip height of
    its own low for most frames (as CMU's heels pass the floor): by height alone it is planted and "skates" at its
    swing speed; with the speed limit it is not planted and adds no skate; the right foot stands still."""
    fig = humanoid.figure
    fps = 120.0
    P = _still(fig, 31)
    P[:, fig.dof_names.index("hip_l.rx")] = np.radians(np.linspace(-25.0, 25.0, len(P)))
    W = fig.world_batch(P)
    toe = W[:, fig.node_names.index("toe_l"), :3, 3]
    assert (np.linalg.norm(np.diff(toe[:, [0, 2]], axis=0), axis=1) * fps).min() > 2.0
    by_height = measure_motion(fig, P, fps, contacts=height_contacts(fig, P, fps, speed=np.inf))
    assert by_height.skate_by_point_mm_per_s["toe_l"] > 2000.0
    r = measure_motion(fig, P, fps)
    assert r.skate_by_point_mm_per_s["toe_l"] == 0.0 and r.skate_by_point_mm_per_s["ankle_l"] == 0.0
    assert r.skate_mm_per_s == pytest.approx(0.0, abs=1e-9)


def test_fixed_offsets_measure_the_retarget_not_the_rigs() -> None:
    """scenes/walk.toml onto a copy of its figure whose hip joints sit 40 % closer to the hips (the pelvis's fixed
    offsets point elsewhere at rest): the hips' side vector and every bone agree (a right retarget measures right);
    the same poses on that figure turned 30° about the vertical show on the side vector the closed form
    cos θ = 1 − (1 − cos 30°)(1 − (v̂·up)²) of the source's side vector v (a wrong one measures wrong)."""
    from animkit.model.figure import Figure

    walk = animkit.load(SCENES / "walk.toml")
    src = walk.figure

    def narrow(yaw: float) -> Figure:
        Y = np.eye(4)
        c, s_ = np.cos(np.radians(yaw)), np.sin(np.radians(yaw))
        Y[[0, 0, 2, 2], [0, 2, 0, 2]] = [c, s_, -s_, c]
        fig = Figure(src.root.name, joint=src.root_arc.joint, L=Y @ src.root_arc.L, name="narrow_hips")
        for arc in src.arcs()[1:]:
            L = arc.L.copy()
            if arc.child.name in ("hip_l", "hip_r"):
                L[:3, 3] *= 0.6
            fig.add(arc.child.name, arc.parent.name, L=L, joint=arc.joint)
        return fig

    fig = narrow(0.0)
    clip = walk.clip()
    P = clip.sample_frames()
    r = retarget_full(walk, fig)
    source = SourceMotion(src, P, walk.up, r.bone_map)
    m = measure_motion(fig, r.poses, clip.fps, source=source)
    assert "hips>side" in m.bone_direction_by_bone_deg
    assert "hips>hip_l" not in m.bone_direction_by_bone_deg and "hips>hip_r" not in m.bone_direction_by_bone_deg
    assert m.bone_direction_p90_deg is not None and m.bone_direction_p90_deg < 1.0
    turned = measure_motion(narrow(30.0), r.poses, clip.fps, source=source)
    X = src.world_positions(P)
    v = X[:, src.node_names.index("hip_l")] - X[:, src.node_names.index("hip_r")]
    e = (v / np.linalg.norm(v, axis=1, keepdims=True))[:, 1]
    want = np.degrees(np.arccos(1.0 - (1.0 - np.cos(np.radians(30.0))) * (1.0 - e * e)))
    med, p90 = turned.bone_direction_by_bone_deg["hips>side"]
    assert med == pytest.approx(float(np.median(want)), abs=1e-6)
    assert p90 == pytest.approx(float(np.percentile(want, 90.0)), abs=1e-6)
