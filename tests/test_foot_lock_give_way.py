"""A held paw whose sole cannot reach the ground in the middle of a contact gives way there (issue 25), on a case
built with a known answer.

The clip: the Khronos Fox (tests/data/Fox.glb) in its rest pose for 60 frames, its left hind paw (the leg's toe) in
contact over all of them, the body carried forward 0.2 % of the hip height a frame (the paw slides: skate for the
lock to take out) and lifted over frames 22-32 by a smooth bump of 3 % of the hip height. The legs never change their
pose in the clip, so the lock's leg reaches no further than the clip's own (the IK's reach is the clip's longest
hip–ankle distance), and a four-legged body is kept as given: wherever the bump lifts the paw's sole more than the
lock's tolerance, (SOLE_CLEARANCE + LIFT_MISS) of the hip height, above the ground, the sole cannot reach the ground.
Known answer: exactly those frames are given up; every other frame of the contact stays held, at one point (the
contact is still one contact), its sole within the tolerance of the ground; and the paw passes the frames given up
without a jump. Before this, those frames stayed held with the leg stretched and the sole in the air (only a
contact's first and last frames were given up), and the lock's judge then left the whole contact unlocked.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.look.surface import body_surface, descendants
from animkit.motion import Contacts, LockResult, legs_of, lock_feet
from animkit.motion.foot_lock import LIFT_MISS, SOLE_CLEARANCE
from animkit.motion.retarget import hip_height

DATA = Path(__file__).parent / "data"
FRAMES, FPS = 60, 30.0
SLIDE = 0.002  # of the hip height a frame
BUMP = 0.03  # of the hip height


@pytest.fixture(scope="module")
def lifted() -> tuple[animkit.Scene, np.ndarray, np.ndarray, float, LockResult]:
    """(the Fox, the clip (F, D), the bump (F,) in units, the hip height, the lock of the left hind paw)."""
    fox = animkit.load(DATA / "Fox.glb")
    fig = fox.figure
    leg = next(leg for leg in legs_of(fig) if leg.side == "hl")
    P = np.repeat(fig.rest_pose()[None], FRAMES, axis=0)
    hips = fig.node(leg.hip)
    while hips.parent_arc is not None and not any(d.kind == "prismatic" for d in hips.parent_arc.joint.dofs):
        hips = hips.parent_arc.parent  # the node whose joint translates: the body's root
    arc = hips.parent_arc
    assert arc is not None
    W0 = fig.world_batch(P[:1])[0]
    B = arc.L if arc.parent is None else W0[fig.node_names.index(arc.parent.name)] @ arc.L
    cols = [c for c, d in zip(fig.joint_dofs[arc.joint.name], arc.joint.dofs, strict=True) if d.kind == "prismatic"]
    axes = np.array([d.axis for d in arc.joint.dofs if d.kind == "prismatic"])  # (3, 3), rows: the DOFs' axes
    low = body_surface(fig, fox.meshes).lowest(W0[None], 1, [descendants(fig, leg.ankle)])[0, 0]
    hip = hip_height(fig, legs_of(fig)[0].hip, "y")
    f = np.arange(FRAMES)
    x = np.clip(np.minimum(f - 21, 33 - f) / 4.0, 0.0, 1.0)
    bump = BUMP * hip * x * x * (3 - 2 * x)
    world = np.stack([SLIDE * hip * f, bump - low, np.zeros(FRAMES)], axis=1)  # the body's move in the world
    P[:, cols] += np.linalg.solve(axes.T, np.linalg.solve(B[:3, :3], world.T)).T  # in the root's DOFs
    mask = np.zeros((FRAMES, 2), dtype=bool)
    mask[:, 1] = True  # the paw (the leg's toe) down throughout
    contacts = Contacts((leg.ankle, leg.toe), mask, 0.0, False, 0.04, 0.5)
    return fox, P, bump, hip, lock_feet(fig, P, FPS, contacts=contacts, meshes=fox.meshes, legs=(leg,))


def test_the_clip_is_what_it_was_built_as(lifted: tuple) -> None:
    fox, P, bump, hip, _ = lifted
    fig = fox.figure
    leg = next(leg for leg in legs_of(fig) if leg.side == "hl")
    W = fig.world_batch(P)
    sole = body_surface(fig, fox.meshes).lowest(W, 1, [descendants(fig, leg.ankle)])[:, 0]
    np.testing.assert_allclose(sole, bump, atol=1e-9 * hip)
    paw = W[:, fig.node_names.index(leg.toe), :3, 3]
    np.testing.assert_allclose(np.diff(paw[:, 0]), SLIDE * hip, rtol=1e-9)
    np.testing.assert_allclose(np.diff(paw[:, 2]), 0.0, atol=1e-9 * hip)


def test_the_frames_the_sole_cannot_reach_give_way_and_no_others(lifted: tuple) -> None:
    _, _, bump, hip, r = lifted
    top = (SOLE_CLEARANCE + LIFT_MISS) * hip
    out_of_reach = bump > top
    assert 5 <= out_of_reach.sum() < FRAMES - 10 and not out_of_reach[[0, -1]].any()  # in the middle
    assert r.unlocked == ()
    assert r.held is not None
    assert not r.held[:, 0].any()  # the hock was never in contact
    np.testing.assert_array_equal(r.held[:, 1], ~out_of_reach)
    assert r.after.skate_mm < 0.1 * r.before.skate_mm  # the paw slid in the clip; held, it no longer does


def test_the_held_frames_stand_at_one_point_on_the_ground(lifted: tuple) -> None:
    fox, _, bump, hip, r = lifted
    fig = fox.figure
    leg = next(leg for leg in legs_of(fig) if leg.side == "hl")
    W = fig.world_batch(r.poses)
    held = r.held[:, 1]
    paw = W[:, fig.node_names.index(leg.toe), :3, 3][:, [0, 2]]
    # one point for the whole contact, both sides of the frames given up (the clip's paw slides 0.118 hip heights)
    assert np.linalg.norm(paw[held] - paw[held].mean(axis=0), axis=1).max() < 1e-3 * hip
    sole = body_surface(fig, fox.meshes).lowest(W, 1, [descendants(fig, leg.ankle)])[:, 0]
    top = (SOLE_CLEARANCE + LIFT_MISS) * hip
    assert sole[held].min() >= -1e-9 * hip and sole[held].max() <= top
    # given up, the sole rises with the body as far as the leg cannot reach (the leg at the clip's own length)
    np.testing.assert_allclose(sole[~held], bump[~held], atol=0.1 * BUMP * hip)


def test_the_paw_passes_the_frames_given_up_without_a_jump(lifted: tuple) -> None:
    fox, _, bump, hip, r = lifted
    fig = fox.figure
    leg = next(leg for leg in legs_of(fig) if leg.side == "hl")
    paw = fig.world_batch(r.poses)[:, fig.node_names.index(leg.toe), :3, 3]
    step = np.linalg.norm(np.diff(paw[:, [0, 2]], axis=0), axis=1)
    # along the ground: slower than the clip's own slide (the leg at its reach pulls the paw by up to 0.1 % of the
    # hip height a frame; two lock points, one each side, moved it 8 times the slide in a frame)
    assert step.max() < SLIDE * hip
    # along up: no faster than the clip's own bump rises and falls (plus the ease into and out of the ground)
    assert np.abs(np.diff(paw[:, 1])).max() <= np.abs(np.diff(bump)).max() + SOLE_CLEARANCE * hip


# A biped (issue 25): CesiumMan (tests/data/CesiumMan.glb) in its rest pose for 60 frames on both toes, carried and
# lifted as the Fox above. Its rest legs are straight, so a planted knee can bend no further than the clip's (not at
# all) and the pelvis cannot come down for the bump: the left foot's sole cannot reach the ground where the bump lifts
# it more than the lock's tolerance, and there, inside the contact, it gives way (before, those frames stayed "held"
# with the sole up to 21 mm in the air, over issue 25's 1 cm). Its right foot pivots on its toe (the heel lifts)
# and so keeps its toe down throughout.


@pytest.fixture(scope="module")
def biped() -> tuple[animkit.Scene, np.ndarray, np.ndarray, float, LockResult]:
    """(CesiumMan, the clip (F, D), the bump (F,) in units, the hip height, the lock of both feet)."""
    man = animkit.load(DATA / "CesiumMan.glb")
    fig = man.figure
    legs = tuple(legs_of(fig))
    P = np.repeat(fig.rest_pose()[None], FRAMES, axis=0)
    hips = fig.node(legs[0].hip)
    while hips.parent_arc is not None and not any(d.kind == "prismatic" for d in hips.parent_arc.joint.dofs):
        hips = hips.parent_arc.parent
    arc = hips.parent_arc
    assert arc is not None
    W0 = fig.world_batch(P[:1])[0]
    B = arc.L if arc.parent is None else W0[fig.node_names.index(arc.parent.name)] @ arc.L
    cols = [c for c, d in zip(fig.joint_dofs[arc.joint.name], arc.joint.dofs, strict=True) if d.kind == "prismatic"]
    axes = np.array([d.axis for d in arc.joint.dofs if d.kind == "prismatic"])
    k = "xyz".index(fig.up)
    low = body_surface(fig, man.meshes).lowest(W0[None], k, [descendants(fig, leg.ankle) for leg in legs])[0].min()
    hip = hip_height(fig, legs[0].hip, fig.up)
    f = np.arange(FRAMES)
    x = np.clip(np.minimum(f - 21, 33 - f) / 4.0, 0.0, 1.0)
    bump = BUMP * hip * x * x * (3 - 2 * x)
    world = np.zeros((FRAMES, 3))
    world[:, 0], world[:, k] = SLIDE * hip * f, bump - low
    P[:, cols] += np.linalg.solve(axes.T, np.linalg.solve(B[:3, :3], world.T)).T
    points = tuple(p for leg in legs for p in (leg.ankle, leg.toe))
    mask = np.zeros((FRAMES, 4), dtype=bool)
    mask[:, [1, 3]] = True  # both toes down throughout
    contacts = Contacts(points, mask, 0.0, False, 0.04, 0.5)
    return man, P, bump, hip, lock_feet(fig, P, FPS, contacts=contacts, meshes=man.meshes, legs=legs)


def test_a_biped_gives_way_where_its_sole_cannot_reach_and_nowhere_else(biped: tuple) -> None:
    man, P, bump, hip, r = biped
    fig = man.figure
    k = "xyz".index(fig.up)
    out_of_reach = bump > (SOLE_CLEARANCE + LIFT_MISS) * hip
    assert r.unlocked == () and r.held is not None
    np.testing.assert_array_equal(r.held[:, 1], ~out_of_reach)  # the left toe: exactly the frames it cannot reach
    assert r.held[:, 3].all()  # the right toe: held throughout (on its toe)
    W = fig.world_batch(r.poses)
    top = (SOLE_CLEARANCE + LIFT_MISS) * hip
    for j, leg in enumerate(r.legs):  # every frame held has its sole within the tolerance (issue 25: 1 cm)
        sole = body_surface(fig, man.meshes).lowest(W, k, [descendants(fig, leg.ankle)])[:, 0]
        held = r.held[:, 2 * j + 1]
        assert sole[held].min() >= -1e-9 * hip and sole[held].max() <= top
    # the left paw's sole passes the frames given up along the ground without a jump, held at one point either side
    toe = W[:, fig.node_names.index(r.legs[0].toe), :3, 3]
    ground = [i for i in range(3) if i != k]
    assert np.linalg.norm(np.diff(toe[:, ground], axis=0), axis=1).max() < SLIDE * hip
    held = r.held[:, 1]
    assert np.linalg.norm(toe[held][:, ground] - toe[held][:, ground].mean(axis=0), axis=1).max() < 1e-3 * hip
    # the pelvis is not moved by the give-way: over every frame it is where the clip has it plus one constant raise
    # (the soles' clearance), the bump's frames included
    ih = fig.node_names.index(r.legs[0].hip)
    rise = W[:, ih, k, 3] - fig.world_batch(P)[:, ih, k, 3]
    assert np.abs(rise - np.median(rise)).max() < 0.001 * hip
    assert r.after.skate_mm < 0.1 * r.before.skate_mm


def test_frames_given_up_are_held_again_for_the_pelvis_within_their_own_contact() -> None:
    from animkit.motion.foot_lock import rejoined_masks

    heel = np.array([1, 1, 0, 0, 1, 1, 0, 0, 0, 0], dtype=bool)
    toe = np.array([0, 1, 0, 0, 1, 1, 1, 0, 0, 1], dtype=bool)
    gave = np.array([0, 0, 1, 1, 0, 0, 0, 1, 0, 0], dtype=bool)
    h, t = rejoined_masks((heel, toe), gave)
    np.testing.assert_array_equal(h, [1, 1, 1, 1, 1, 1, 0, 0, 0, 0])  # frame 7 is no heel contact's
    np.testing.assert_array_equal(t, [0, 1, 1, 1, 1, 1, 1, 1, 0, 1])
    assert not heel[2] and not toe[2]  # the masks given are left as they were
