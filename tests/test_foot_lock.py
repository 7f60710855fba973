"""Foot locking against clips whose answers are known by construction.

The clip: the TOML humanoid (scenes/humanoid.toml) standing on both feet, knees swaying smoothly between 10° and
40° (hips and ankles turned by half as much, so the feet stay flat under the hips), its hips carried forward at a
known speed and held a known depth too low. Both feet are planted over the whole clip (the contacts are given), so

* as given, the planted feet slide at exactly that speed, and their lowest surface point is that depth under the
  ground: the measures (:func:`animkit.motion.measures.measure_motion`) must say so;
* locked, the feet must stay put (skate near 0), their soles on the ground (within 1 cm), with no knee changing
  between frames faster than the clip's own knees do (the clip has no pops: its knees sway as a sine).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.look.surface import body_surface, descendants
from animkit.motion import Contacts, detect_contacts, knee_angles, legs_of, lock_feet
from animkit.motion.measures import measure_motion
from animkit.motion.retarget import hip_height

SCENES = Path(__file__).parent.parent / "scenes"
FPS = 30.0


@pytest.fixture(scope="module")
def humanoid() -> animkit.Scene:
    return animkit.load(SCENES / "humanoid.toml")


def swaying_stance(fig: animkit.Figure, speed: float, sunk: float, seconds: float = 1.5) -> np.ndarray:
    """Poses (F, D): knees θ(t) = 25° + 15°·sin(2πt / 1.5 s), hips and ankles −θ/2, the hips carried forward (+z)
    at ``speed`` m/s and lowered so the feet's lowest surface point is ``sunk`` m under the ground at every frame."""
    names = fig.dof_names
    t = np.arange(int(round(seconds * FPS)) + 1) / FPS
    theta = np.radians(25.0 + 15.0 * np.sin(2 * np.pi * t / 1.5))
    P = np.repeat(fig.rest_pose()[None], t.size, axis=0)
    for s in ("l", "r"):
        P[:, names.index(f"knee_{s}.rx")] = theta
        P[:, names.index(f"hip_{s}.rx")] = -theta / 2
        P[:, names.index(f"ankle_{s}.rx")] = -theta / 2
    P[:, names.index("hips.tz")] += speed * t
    surface = body_surface(fig)
    feet = [descendants(fig, leg.ankle) for leg in legs_of(fig)]
    low = surface.lowest(fig.world_batch(P), 1, feet).min(axis=1)
    P[:, names.index("hips.ty")] -= low + sunk
    return P


def planted_everywhere(fig: animkit.Figure, frames: int) -> Contacts:
    points = tuple(p for leg in legs_of(fig) for p in (leg.ankle, leg.toe))
    return Contacts(points, np.ones((frames, len(points)), dtype=bool), 0.0, False, 0.04, 0.5)


def test_the_clip_measures_what_it_was_built_with(humanoid: animkit.Scene) -> None:
    fig = humanoid.figure
    P = swaying_stance(fig, speed=0.08, sunk=0.03)
    m = measure_motion(fig, P, FPS, contacts=planted_everywhere(fig, len(P)))
    assert m.skate_mm_per_s == pytest.approx(80.0, rel=0.02)  # the feet slide with the hips
    assert m.penetration_mm == pytest.approx(30.0, abs=0.5)


def test_a_sliding_sunk_stance_is_held_on_the_ground(humanoid: animkit.Scene) -> None:
    fig = humanoid.figure
    P = swaying_stance(fig, speed=0.08, sunk=0.03)
    c = planted_everywhere(fig, len(P))
    r = lock_feet(fig, P, FPS, contacts=c)
    assert r.unlocked == ()
    before = measure_motion(fig, P, FPS, contacts=c)
    after = measure_motion(fig, r.poses, FPS, contacts=c)
    assert before.skate_mm_per_s is not None and after.skate_mm_per_s is not None
    assert after.skate_mm_per_s < 5.0  # from 80 mm/s: the feet stay where they stand
    # the sunk feet come out of the ground: every frame's sole within 1 cm of it, none under it (but the clip's
    # first 0.1 s, where the knee, turning no faster than the clip's, trails its goal: 11 mm at frame 0)
    W = fig.world_batch(r.poses)
    lows = body_surface(fig).lowest(W, 1, [descendants(fig, leg.ankle) for leg in legs_of(fig)])
    assert lows.min() >= -1e-4 and lows[3:].max() <= 0.01 and lows.max() <= 0.015
    assert after.penetration_mm <= 0.1
    # the knees sway as smoothly as the clip's: no change between frames larger than the clip's own largest
    pops = np.abs(np.diff(knee_angles(fig, r.poses, legs_of(fig)), axis=0)).max()
    assert pops <= np.abs(np.diff(knee_angles(fig, P, legs_of(fig)), axis=0)).max() + 1e-9
    # the bend stays within the clip's own range of bend (10-40°), soft stops included
    bend = np.degrees(knee_angles(fig, r.poses, legs_of(fig)))
    assert bend.min() >= 10.0 - 1e-6 and bend.max() <= 40.0 + 1e-6


def test_a_foot_held_still_already_is_left_where_it_stands(humanoid: animkit.Scene) -> None:
    """No slide and the soles at the lock's clearance: the lock has nothing to do, and moves the feet by < 1 mm."""
    fig = humanoid.figure
    P = swaying_stance(fig, speed=0.0, sunk=-0.005 * hip_height(fig, "hip_l", "y"))
    r = lock_feet(fig, P, FPS, contacts=planted_everywhere(fig, len(P)))
    names = fig.node_names
    ankles = [names.index(leg.ankle) for leg in legs_of(fig)]
    moved = np.linalg.norm(fig.world_positions(r.poses)[:, ankles] - fig.world_positions(P)[:, ankles], axis=-1)
    assert moved.max() < 1e-3


@pytest.mark.parametrize("rig", ["mixamo_-90", "mixamo_0"])
def test_a_walk_locks_on_a_scaled_mixamo_armature(rig: str, tmp_path: Path) -> None:
    """The CMU walk onto a rig under a 0.01-scaled (and turned) armature node, written by animkit's glTF writer: with
    the source's contacts carried, the planted feet hold (the retarget slides them at about 110 mm/s; before the leg
    IK took the turn out of the scaled world blocks, the lock did not engage at all)."""
    from animkit.motion.measures import SourceMotion, carry_contacts, height_contacts
    from animkit.motion.retarget import retarget_full
    from tests.retarget_rigs import write_rig

    src = animkit.load(Path(__file__).parent / "data" / "cmu_02_01_walk.bvh")
    tgt = animkit.load(write_rig(rig, tmp_path).path)
    r = retarget_full(src, tgt)
    P_s = src.clip().sample(r.times)
    c = carry_contacts(height_contacts(src.figure, P_s, r.clip.fps, up=src.up), legs_of(src.figure),
                       legs_of(r.figure))
    locked = lock_feet(r.figure, r.poses, r.clip.fps, up=tgt.up, meshes=tgt.meshes, contacts=c)
    source = SourceMotion(src.figure, P_s, src.up, r.bone_map)
    before = measure_motion(r.figure, r.poses, r.clip.fps, up=tgt.up, meshes=tgt.meshes, source=source)
    after = measure_motion(r.figure, locked.poses, r.clip.fps, up=tgt.up, meshes=tgt.meshes, source=source)
    assert before.skate_mm_per_s is not None and after.skate_mm_per_s is not None
    assert before.skate_mm_per_s > 80.0 and after.skate_mm_per_s < 10.0
    assert after.penetration_mm <= before.penetration_mm + 1e-6
    assert after.knee_pop_deg is not None and before.knee_pop_deg is not None
    assert after.knee_pop_deg <= before.knee_pop_deg + 1e-9


def test_a_quadruped_hock_in_contact_alone_is_held() -> None:
    """A quadruped's paw is held where it is down; where only its hock is (a running fox's hind leg, as the source's
    contacts carried to a target say), the hock is held: the Fox's walk, its hind-right paw's contact frames given to
    its hock alone, locked: the hock stays put there (its slide a tenth of the clip's or less)."""
    from tests.test_characters import fox_walking

    scene = animkit.load(Path(__file__).parent / "data" / "Fox.glb")
    fig, clip = scene.figure, scene.clips["Walk"]
    P, _ = fox_walking(fig, clip)
    legs = legs_of(fig)
    hr = next(leg for leg in legs if leg.side == "hr")
    assert hr.ankle != hr.toe
    found = detect_contacts(fig, P, clip.fps, height=0.05, speed=0.7)
    mask = np.zeros_like(found.mask)  # no contact anywhere but the hind-right hock's
    mask[:, found.points.index(hr.ankle)] = found.mask[:, found.points.index(hr.toe)]
    assert mask.sum() >= 5
    c = Contacts(found.points, mask, 0.0, False, found.height, found.speed)
    r = lock_feet(fig, P, clip.fps, contacts=c)
    assert r.unlocked == ()
    assert r.before.skate_by_point[hr.ankle] > 1.0  # mm a frame: the hock moves as the paw rolls
    assert r.after.skate_by_point[hr.ankle] <= 0.1 * r.before.skate_by_point[hr.ankle]
