"""Retargeting: onto a copy it reproduces the motion, onto a scaled copy the scaled motion, and whatever the
rest pose of the target (T-pose, arms down) its bones point where the source's bones point."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import animkit
from animkit.model.figure import Figure
from animkit.model.humanoid import match_figure, side_of
from animkit.model.transforms import matrix_about_axis
from animkit.motion.retarget import RetargetError, bone_map, read_bone_map, retarget, retarget_full

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def walk() -> animkit.Scene:
    return animkit.load(DATA / "cmu_02_01_walk.bvh")


def rebuilt(fig: Figure, *, scale: float = 1.0, turn: dict[str, np.ndarray] | None = None) -> Figure:
    """A copy of ``fig`` with every offset scaled, and the rest offsets below each node in ``turn`` turned."""
    turn = turn or {}
    W = fig.world_batch(fig.rest_pose()[None])[0]
    names = fig.node_names
    R_world = {n: np.eye(3) for n in names}
    for n in names:  # a turn applies to the node's whole subtree's offsets
        p = fig.parent_of(n)
        R_world[n] = R_world[p] if p is not None else np.eye(3)
        if n in turn:
            R_world[n] = turn[n] @ R_world[n]
    del W
    root = fig.root_arc
    L = root.L.copy()
    L[:3, 3] *= scale
    out = Figure(fig.root.name, joint=root.joint, L=L, name=fig.name + "_copy")
    for arc in fig.arcs()[1:]:
        L = arc.L.copy()
        parent = arc.parent.name
        L[:3, 3] = R_world[parent] @ (scale * L[:3, 3])
        out.add(arc.child.name, parent, L=L, joint=arc.joint)
    return out


def positions(fig: Figure, poses: np.ndarray) -> np.ndarray:
    return fig.world_batch(poses)[..., :3, 3]


def test_onto_a_copy_reproduces_the_motion(walk: animkit.Scene) -> None:
    r = retarget_full(walk, rebuilt(walk.figure))
    src = positions(walk.figure, walk.clip().sample_frames())
    got = positions(r.clip.layout, r.poses)
    assert r.scale == pytest.approx(1.0, abs=1e-12)
    assert np.abs(got - src).max() <= 1e-9 * walk.figure.size()


def test_same_frames_as_the_source_no_off_by_one(walk: animkit.Scene) -> None:
    clip = walk.clip()
    out = retarget(walk, rebuilt(walk.figure))
    assert out.duration == clip.duration
    assert out.fps == clip.fps
    np.testing.assert_array_equal(out.frame_times(), clip.frame_times())
    # the last frame is the source's last frame, not the one before it
    src_last = positions(walk.figure, clip.sample(clip.frame_times()[-1:]))
    got_last = positions(out.layout, out.sample(out.frame_times()[-1:]))
    assert np.abs(got_last - src_last).max() <= 1e-9 * walk.figure.size()


@settings(max_examples=10, deadline=None)
@given(st.floats(0.05, 20.0))
def test_onto_a_scaled_copy_gives_the_scaled_motion(k: float) -> None:
    walk = animkit.load(DATA / "cmu_02_01_walk.bvh")
    r = retarget_full(walk, rebuilt(walk.figure, scale=k))
    src = positions(walk.figure, walk.clip().sample_frames()[::10])
    got = positions(r.clip.layout, r.poses[::10])
    assert r.scale == pytest.approx(k, rel=1e-12)
    assert np.abs(got - k * src).max() <= 1e-9 * k * walk.figure.size()


def bone_directions(fig: Figure, poses: np.ndarray, pairs: list[tuple[str, str]]) -> np.ndarray:
    p = positions(fig, poses)
    names = fig.node_names
    d = np.stack([p[:, names.index(b)] - p[:, names.index(a)] for a, b in pairs], axis=1)
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def test_arms_down_rest_gives_the_same_world_bone_directions(walk: animkit.Scene) -> None:
    fig = walk.figure
    t_pose = rebuilt(fig, scale=0.05)
    # arms hang down: turn each upper arm's rest offsets 80° about the forward axis (z), and the hand's twist
    down = rebuilt(fig, scale=0.05, turn={"LeftArm": matrix_about_axis([0, 0, 1.0], -1.35),
                                          "RightArm": matrix_about_axis([0, 0, 1.0], 1.35),
                                          "LeftShoulder": matrix_about_axis([0, 1.0, 0], 0.3)})
    a = retarget_full(walk, t_pose)
    b = retarget_full(walk, down)
    # the rest poses really differ
    rest_dirs = [bone_directions(f, f.rest_pose()[None], [("LeftArm", "LeftForeArm")])[0, 0] for f in (t_pose, down)]
    assert rest_dirs[0] @ rest_dirs[1] < 0.3
    bones = [(p, c) for p, c in (("LeftArm", "LeftForeArm"), ("LeftForeArm", "LeftHand"), ("RightArm", "RightForeArm"),
                                 ("RightForeArm", "RightHand"), ("LeftShoulder", "LeftArm"), ("LeftUpLeg", "LeftLeg"),
                                 ("Spine", "Spine1"), ("LeftFingerBase", "LeftHandIndex1"))]
    da = bone_directions(t_pose, a.poses, bones)
    db = bone_directions(down, b.poses, bones)
    assert np.abs(da - db).max() < 1e-9
    # and both point where the source's bones point
    ds = bone_directions(fig, walk.clip().sample_frames(), bones)
    assert np.abs(da - ds).max() < 1e-9


def test_side_of_names() -> None:
    assert [side_of(n) for n in ["LeftArm", "arm_l", "mixamorig:RightUpLeg", "LHipJoint", "Hips", "hip_r",
                                 "Neck", "thigh.L"]] == ["l", "l", "r", "l", None, "r", None, "l"]


def test_user_map_errors_name_the_bone(walk: animkit.Scene, tmp_path: Path) -> None:
    with pytest.raises(RetargetError, match="LeftArmm"):
        bone_map(walk.figure, walk.figure, {"LeftArmm": "LeftArm"})
    with pytest.raises(RetargetError, match="did you mean 'LeftArm'"):
        bone_map(walk.figure, walk.figure, {"LeftArm": "LeftAr"})
    p = tmp_path / "map.toml"
    p.write_text('[bones]\nLeftArm = "RightArm"\nRightArm = "LeftArm"\n', encoding="utf-8")
    assert read_bone_map(p) == {"LeftArm": "RightArm", "RightArm": "LeftArm"}
    m = bone_map(walk.figure, walk.figure, read_bone_map(p))
    assert m.pairs["LeftArm"] == "RightArm" and "user" in m.scheme


def test_a_source_without_a_limb_root_is_an_error_naming_it(walk: animkit.Scene) -> None:
    with pytest.raises(RetargetError, match="upper_leg_l"):
        bone_map(walk.figure, walk.figure, {"LeftUpLeg": "RightUpLeg"})


CANONICAL_BONES = [("upper_arm", "forearm"), ("forearm", "hand"), ("upper_leg", "lower_leg"),
                   ("lower_leg", "foot"), ("foot", "toe")]


def canonical_directions(fig: Figure, poses: np.ndarray) -> np.ndarray:
    h = match_figure(fig)
    pairs = [(h.node(f"{a}_{s}"), h.node(f"{b}_{s}")) for s in "lr" for a, b in CANONICAL_BONES]
    return bone_directions(fig, poses, pairs)


def test_walk_onto_the_3dsmax_skeleton_points_its_bones_like_the_source(walk: animkit.Scene) -> None:
    hop = animkit.load(DATA / "cmu_131_03_hop_3dsmax.bvh")
    r = retarget_full(walk, hop.figure)
    assert r.bone_map.scheme.startswith("humanoid")
    assert r.bone_map.pairs["LeftKnee"] == "LeftLeg" and r.bone_map.pairs["LeftShoulder"] == "LeftArm"
    ds = canonical_directions(walk.figure, walk.clip().sample_frames())
    dt = canonical_directions(hop.figure, r.poses)
    assert np.abs(ds - dt).max() < 1e-9
    # and the other way round, with hips scaled by the hip heights
    back = retarget_full(hop, walk.figure)
    assert back.scale == pytest.approx(1 / r.scale, rel=1e-12)


def test_a_target_placed_under_a_turned_offset_node_still_moves_in_world(walk: animkit.Scene) -> None:
    """three.js's retargetClip needed ``useTargetMatrix`` for a target not at the origin; here the world rules."""
    fig = walk.figure
    placed = Figure("placement", L=np.block([[matrix_about_axis([0, 1.0, 0], 1.2), np.array([[3.0], [0.5], [-2.0]])],
                                             [np.zeros((1, 3)), np.ones((1, 1))]]), name="placed")
    for arc in fig.arcs():
        placed.add(arc.child.name, arc.parent.name if arc.parent is not None else "placement", L=arc.L,
                   joint=arc.joint)
    r = retarget_full(walk, placed)
    src = positions(fig, walk.clip().sample_frames())
    got = positions(placed, r.poses)[:, 1:]
    assert np.abs(got - src).max() <= 1e-9 * fig.size()


def test_onto_hinge_elbows_and_knees_the_limbs_still_point_like_the_source(walk: animkit.Scene) -> None:
    """humanoid.toml's elbows and knees are hinges: the upper bone's twist puts the hinge's axis across the bend."""
    target = animkit.load(Path(__file__).parent.parent / "scenes" / "humanoid.toml")
    r = retarget_full(walk, target)
    h_s, h_t = match_figure(walk.figure), match_figure(target.figure)
    bones = [(a, b) for a, b in CANONICAL_BONES if a != "foot"]  # the ankle's limits stop the foot at times
    pairs_s = [(h_s.node(f"{a}_{s}"), h_s.node(f"{b}_{s}")) for s in "lr" for a, b in bones]
    pairs_t = [(h_t.node(f"{a}_{s}"), h_t.node(f"{b}_{s}")) for s in "lr" for a, b in bones]
    ds = bone_directions(walk.figure, walk.clip().sample_frames(), pairs_s)
    dt = bone_directions(target.figure, r.poses, pairs_t)
    angle = np.degrees(np.arccos(np.clip((ds * dt).sum(-1), -1.0, 1.0)))
    assert angle.max() < 3.0
    assert np.median(angle) < 0.1


def test_an_fbx_source_in_centimetres_drives_the_target_by_its_turns_not_its_scale() -> None:
    """The Mixamo-style FBX walk (an armature whose joints' world matrices carry a scale of 100, and whose node pose
    differs from its skin's bind pose by up to 28°) onto CesiumMan: the bones point where the source's do (the
    source's turn D = R_s(f) R_s(rest)ᵀ on rotation parts; a scaled D tipped the trunk 67° forward and the feet
    slid at 1.4 m/s), the travel matches, nothing overflows. Measured by animkit.motion_measures against the
    source (its mesh as its surface)."""
    import dataclasses
    import warnings

    from animkit.motion.measures import SourceMotion, measure_motion

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        src = animkit.load(DATA / "fbx" / "mixamo_yup_cm.fbx")
    cm = animkit.load(DATA / "CesiumMan.glb")
    clip = src.clips["Armature|walk_body"]
    W = src.figure.world_batch(clip.sample_frames())
    assert np.abs(np.linalg.det(W[:, src.figure.node_names.index("mixamorig:Spine"), :3, :3]) - 1e6).max() < 10
    walk = dataclasses.replace(src, clips={"walk": clip})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        r = retarget_full(walk, cm)
    m = measure_motion(r.figure, r.poses, clip.fps, meshes=cm.meshes,
                       source=SourceMotion(src.figure, clip.sample(r.times), src.up, r.bone_map, src.meshes))
    assert m.bone_direction_median_deg is not None and m.bone_direction_median_deg < 1.0
    assert m.bone_direction_p90_deg is not None and m.bone_direction_p90_deg < 5.0
    assert m.travel_ratio is not None and 0.97 < m.travel_ratio < 1.03
    source_alone = measure_motion(src.figure, clip.sample(r.times), clip.fps, meshes=src.meshes)
    assert m.skate_mm_per_s is not None and source_alone.skate_mm_per_s is not None
    assert m.skate_mm_per_s < source_alone.skate_mm_per_s  # no worse than the (sliding) source itself


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_rotation_part_is_the_polar_factor(seed: int) -> None:
    """rotation_part (det^(1/3), Newton–Schulz, SVD where those fail) equals the SVD's polar rotation U Vᵀ (det +1)
    on turns times a uniform scale, the same rounded to float32 (glTF's matrices), non-uniform scales and mirrors."""
    from animkit.motion.retarget import rotation_part

    rng = np.random.default_rng(seed)
    axes = rng.normal(size=(64, 3))
    R = np.array([matrix_about_axis(a / np.linalg.norm(a), t) for a, t in zip(axes, rng.uniform(-np.pi, np.pi, 64),
                                                                              strict=True)])
    cases = [R * rng.uniform(0.001, 100.0), (R * 0.01).astype(np.float32).astype(float),
             R @ np.diag(rng.uniform(0.5, 2.0, 3)), R @ np.diag([1.0, 1.0, -1.0])]
    for A in cases:
        U, _, Vt = np.linalg.svd(A)
        flip = np.linalg.det(U @ Vt) < 0
        U[flip, :, 2] *= -1.0
        want = U @ Vt
        got = rotation_part(A)
        assert np.abs(got - want).max() < 1e-9
        assert np.abs(rotation_part(A[0]) - want[0]).max() < 1e-9
