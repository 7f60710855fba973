"""A CMU walk retargeted onto a character whose file is Z-up, as another tool made it, measured by animkit.motion.

tests/data/fbx/mixamo_zup_77.fbx is Blender 4.2.0's FBX export (binary 7.7 records, **Z-up**, −Y front, metres) of a
Mixamo-named skinned character; mixamo_yup_cm.fbx is the same character from the same exporter written Y-up in
centimetres (tests/data/SOURCES.md). The reader takes the up axis and the unit from the file's GlobalSettings and
converts both to animkit's metres, Y-up (its notes say so), so the test reads the figure's up from the loaded scene,
never passing one. The walk (CMU 02_01, the MotionBuilder T-pose frame 0 dropped) is retargeted, its feet locked on
the source's contacts carried over (what ``animkit retarget`` does) and measured against issue 25 §1's goals: root
travel 0.85–1.15 of the source's (in hip heights), the skinned mesh's lowest point within 2 cm of the ground while a
foot is planted, skate ≤ 40 mm/s at a 0.9 m hip height, bone directions ≤ 5° median.

The second oracle is the Y-up twin: the same character from the same exporter in other axes and units measures the
same to 1e-6, joint speeds included. It found that the joint angular speeds read the centimetre file's 0.01-scaled
world blocks as rotations: every joint of the still-standing twin "turned" 10,800°/s (90° a frame at 120 fps).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.motion import legs_of, lock_feet
from animkit.motion.measures import (
    MotionReport,
    SourceMotion,
    angular_speeds,
    carry_contacts,
    height_contacts,
    measure_motion,
    standing_hip_height,
)
from animkit.motion.retarget import retarget_full

pytest.importorskip("ufbx")

DATA = Path(__file__).parent / "data"


def _walk_onto(name: str) -> tuple[animkit.Scene, animkit.Figure, np.ndarray, MotionReport, MotionReport]:
    """(target scene, retargeted figure, locked poses, measures as retargeted, as locked) of the walk onto ``name``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        src, tgt = animkit.load(DATA / "cmu_02_01_walk.bvh"), animkit.load(DATA / "fbx" / name)
    clip = src.clip()
    P_s = clip.sample(clip.frame_times())[1:]  # frame 0 is the MotionBuilder T-pose
    r = retarget_full(src, tgt)
    P, fps = r.poses[1:], clip.fps
    planted = carry_contacts(height_contacts(src.figure, P_s, fps, up=src.up), legs_of(src.figure),
                             legs_of(r.figure))
    locked = lock_feet(r.figure, P, fps, up=tgt.up, meshes=tgt.meshes, contacts=planted)
    source = SourceMotion(src.figure, P_s, src.up, r.bone_map, src.meshes)
    before = measure_motion(r.figure, P, fps, up=tgt.up, meshes=tgt.meshes, source=source)
    after = measure_motion(r.figure, locked.poses, fps, up=tgt.up, meshes=tgt.meshes, source=source)
    return tgt, r.figure, locked.poses, before, after


@pytest.fixture(scope="module")
def zup() -> tuple[animkit.Scene, animkit.Figure, np.ndarray, MotionReport, MotionReport]:
    return _walk_onto("mixamo_zup_77.fbx")


def test_the_file_is_z_up_and_made_by_blender(zup: tuple) -> None:
    tgt = zup[0]
    assert any("Blender" in n for n in tgt.notes)
    assert any(n.startswith("axes:") and "up +Z" in n for n in tgt.notes)  # the file's own up, read from it
    assert tgt.up == "y"  # converted: the loaded figure stands along +y
    W = tgt.figure.world_batch(tgt.figure.rest_pose()[None])[0]
    head = W[tgt.figure.node_names.index("mixamorig:Head"), :3, 3]
    assert head[1] > 1.4 and abs(head[2]) < 0.2  # the head is up, not forwards


def test_a_walk_onto_the_z_up_character_meets_the_goals(zup: tuple) -> None:
    tgt, fig, P, before, after = zup
    hip_m = standing_hip_height(fig, legs_of(fig)[0].hip, tgt.up) * after.metres_per_unit
    assert 0.85 <= hip_m <= 1.05  # a person-sized figure in metres
    assert after.travel_ratio is not None and 0.85 <= after.travel_ratio <= 1.15
    assert after.contacts == "source" and after.contact_frames > 200
    assert after.planted_height_median_mm is not None and after.planted_height_p5_mm is not None
    assert abs(after.planted_height_median_mm) <= 20.0 and after.planted_height_p5_mm >= -20.0
    assert after.penetration_mm <= 25.0
    assert after.skate_mm_per_s is not None and after.skate_mm_per_s * 0.9 / hip_m <= 40.0
    assert after.bone_direction_median_deg is not None and after.bone_direction_median_deg <= 5.0
    # locking made it no worse, and the retarget's own skate (87 mm/s) is what it fixed
    assert before.skate_mm_per_s is not None and before.skate_mm_per_s > 40.0
    assert after.knee_pop_deg is not None and before.knee_pop_deg is not None
    assert after.knee_pop_deg <= before.knee_pop_deg + 1e-9


def test_the_y_up_centimetre_twin_measures_the_same(zup: tuple) -> None:
    """The same character written Y-up in centimetres: every measure equal to the Z-up file's (1e-6 relative; the
    files' vertices and keys differ by float rounding), the joints' angular speed peaks included."""
    _, fig_z, P_z, _, a = zup
    _, fig_y, P_y, _, b = _walk_onto("mixamo_yup_cm.fbx")
    for name in ("travel_ratio", "skate_mm_per_s", "planted_height_median_mm", "planted_height_p5_mm",
                 "penetration_mm", "knee_pop_deg", "bone_direction_median_deg"):
        va, vb = getattr(a, name), getattr(b, name)
        assert vb == pytest.approx(va, rel=1e-5, abs=1e-3), name
    sz, sy = angular_speeds(fig_z, fig_z.world_batch(P_z), 120.0), angular_speeds(fig_y, fig_y.world_batch(P_y), 120.0)
    for joint in ("mixamorig:Hips", "mixamorig:Spine", "mixamorig:LeftUpLeg", "mixamorig:LeftLeg"):
        assert np.degrees(sy[joint]).max() == pytest.approx(np.degrees(sz[joint]).max(), rel=1e-4), joint


def test_angular_speeds_of_a_still_figure_under_a_scaled_node_are_zero() -> None:
    """A known answer: the Y-up centimetre character standing still (its 0.01-scaled armature) turns at 0°/s, and
    spun at 90°/s about up (the whole figure) every root-relative joint still turns at 0 and the root at 90°/s."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig = animkit.load(DATA / "fbx" / "mixamo_yup_cm.fbx").figure
    P = np.repeat(fig.rest_pose()[None], 5, axis=0)
    W = fig.world_batch(P)
    assert abs(np.linalg.norm(W[0, fig.node_names.index("mixamorig:Hips"), :3, 0]) - 1.0) > 0.5  # scaled blocks
    speeds = angular_speeds(fig, W, 30.0)
    assert max(float(v.max()) for v in speeds.values()) < 1e-9
    turn = np.radians(90.0) / 30.0 * np.arange(5)
    c, s = np.cos(turn), np.sin(turn)
    M = np.zeros((5, 4, 4))
    M[:, 0, 0], M[:, 0, 2], M[:, 2, 0], M[:, 2, 2], M[:, 1, 1], M[:, 3, 3] = c, s, -s, c, 1.0, 1.0
    spun = angular_speeds(fig, M[:, None] @ W, 30.0)
    roots = [a.child.name for a in fig.arcs() if a.parent is None and any(d.revolute for d in a.joint.dofs)]
    for name, v in spun.items():
        want = np.radians(90.0) if name in roots else 0.0
        assert np.allclose(v, want, atol=1e-9), name
