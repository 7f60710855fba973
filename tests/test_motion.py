"""Contacts, foot locking and its measures, root motion, loops and aligned crossfades.

Oracles: the measures recomputed here from world positions; the goals of the issue on the CMU walk and run
(skate ≤ 2 mm per contact frame, penetration ≤ 1 mm, knee changes no larger than the clip's own); round trips
(in_place then with_root_motion gives the clip back); the looped walk compared with the clip's own cycle.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.keyframes import crossfade
from animkit.look.surface import body_surface, descendants
from animkit.motion import (
    Contacts,
    LockResult,
    MotionError,
    aligned_crossfade,
    detect_contacts,
    in_place,
    knee_angles,
    legs_of,
    lock_feet,
    loop_poses,
    with_root_motion,
)
from animkit.motion.measures import MotionReport, height_contacts, measure_motion
from animkit.motion.retarget import retarget
from animkit.motion.root_motion import root_motion  # the function (its name here is its module's)

DATA = Path(__file__).parent / "data"
SCENES = Path(__file__).parent.parent / "scenes"


@pytest.fixture(scope="module")
def walk() -> animkit.Scene:
    return animkit.load(DATA / "cmu_02_01_walk.bvh")


@pytest.fixture(scope="module")
def run() -> animkit.Scene:
    return animkit.load(DATA / "cmu_09_01_run.bvh")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_legs_are_found_by_humanoid_names(walk: animkit.Scene) -> None:
    legs = legs_of(walk.figure)
    assert [(leg.hip, leg.knee, leg.ankle, leg.toe, leg.tip) for leg in legs] == [
        ("LeftUpLeg", "LeftLeg", "LeftFoot", "LeftToeBase", "LeftToeBase_end"),
        ("RightUpLeg", "RightLeg", "RightFoot", "RightToeBase", "RightToeBase_end")]
    with pytest.raises(MotionError, match="no leg"):
        legs_of(animkit.load(DATA / "ur5_robot.urdf").figure)


def test_contacts_alternate_between_the_feet_of_a_walk(walk: animkit.Scene) -> None:
    clip = walk.clip()
    c = detect_contacts(walk.figure, clip.sample_frames(), clip.fps)
    heel_l, heel_r = (c.mask[:, c.points.index(n)] for n in ("LeftFoot", "RightFoot"))
    assert len(c.intervals("LeftFoot")) >= 2 and len(c.intervals("RightFoot")) >= 2
    # a walk is never airborne for long: some foot is down in most frames, and both are rarely up together
    down = (c.mask.any(axis=1)).mean()
    assert down > 0.7
    # during a contact the heel moves slower than the threshold (gaps of 2 frames are closed: those may not)
    pos = walk.figure.world_positions(clip.sample_frames())[:, walk.figure.node_names.index("LeftFoot")]
    v = np.linalg.norm(np.gradient(pos[:, [0, 2]], axis=0), axis=1) * clip.fps
    assert np.median(v[heel_l]) <= 0.5 * c.speed
    assert (v[heel_l] <= c.speed).mean() > 0.95
    assert heel_r.sum() > 0.2 * len(heel_r)


def _skate(fig: animkit.Figure, poses: np.ndarray, node: str, mask: np.ndarray, fps: float) -> float:
    """Horizontal travel per contact frame over 0.1 s windows within each contact (w = round(0.1 fps), at most the
    contact's length − 1), in figure units (recomputed here)."""
    p = fig.world_positions(poses)[:, fig.node_names.index(node)][:, [0, 2]]
    w0 = max(1, round(0.1 * fps))
    steps = []
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(int), [0]])))
    for s, e in zip(edges[::2], edges[1::2], strict=True):
        w = min(w0, e - s - 1)
        if w >= 1:
            steps += list(np.linalg.norm(p[s + w:e] - p[s:e - w], axis=1) / w)
    return float(np.mean(steps)) if steps else 0.0


@pytest.mark.parametrize("name", ["walk", "run"])
def test_locking_meets_the_goals_on_cmu_clips(name: str, request: pytest.FixtureRequest) -> None:
    scene = request.getfixturevalue(name)
    fig, clip = scene.figure, scene.clip()
    P = clip.sample_frames()
    r = lock_feet(fig, P, clip.fps)
    unit = r.after.metres_per_unit
    assert r.after.skate_mm <= 2.0
    assert r.after.skate_mm < r.before.skate_mm
    assert r.after.penetration_mm <= 1.0
    assert r.after.knee_pop_deg <= r.before.knee_pop_deg + 1e-9
    # the measure agrees with a recomputation from world positions
    j = r.contacts.points.index("LeftFoot")
    again = 1000 * unit * _skate(fig, r.poses, "LeftFoot", r.contacts.mask[:, j], clip.fps)
    assert r.after.skate_by_point["LeftFoot"] == pytest.approx(again, rel=1e-9, abs=1e-9)
    # bones keep their lengths (only rotations and the root changed)
    for leg in r.legs:
        for a, b in ((leg.hip, leg.knee), (leg.knee, leg.ankle)):
            ia, ib = fig.node_names.index(a), fig.node_names.index(b)
            before = np.linalg.norm(fig.world_positions(P)[:, ia] - fig.world_positions(P)[:, ib], axis=1)
            after = np.linalg.norm(fig.world_positions(r.poses)[:, ia] - fig.world_positions(r.poses)[:, ib], axis=1)
            np.testing.assert_allclose(after, before, rtol=1e-9)


def test_knee_never_flips(walk: animkit.Scene) -> None:
    clip = walk.clip()
    P = clip.sample_frames()
    r = lock_feet(walk.figure, P, clip.fps)
    fig = walk.figure
    W = fig.world_batch(r.poses)
    for leg in r.legs:
        ih, ik, ia = (fig.node_names.index(n) for n in (leg.hip, leg.knee, leg.ankle))
        bend = np.cross(W[:, ik, :3, 3] - W[:, ih, :3, 3], W[:, ia, :3, 3] - W[:, ik, :3, 3])
        local = np.einsum("fji,fj->fi", W[:, ih, :3, :3], bend)
        big = np.linalg.norm(local, axis=1) > 1e-3 * np.linalg.norm(local, axis=1).max()
        mean = local[big].sum(axis=0)
        assert (local[big] @ mean > 0).all()  # every bent frame bends the same way in the thigh's frame
    assert np.isfinite(knee_angles(fig, r.poses, r.legs)).all()


def _never_worse(fig: animkit.Figure, P: np.ndarray, fps: float, up: str = "y", meshes: tuple = (),
                 within: float = 0.01, contacts: Contacts | None = None
                 ) -> tuple[LockResult, MotionReport, MotionReport]:
    """Lock the feet (on ``contacts``, else those found on the clip), then measure both clips by the surface measures
    on the same contacts (from height)."""
    r = lock_feet(fig, P, fps, up=up, meshes=meshes, contacts=contacts)  # type: ignore[arg-type]
    c = height_contacts(fig, P, fps, up=up)  # type: ignore[arg-type]
    before = measure_motion(fig, P, fps, up=up, meshes=meshes, contacts=c)  # type: ignore[arg-type]
    after = measure_motion(fig, r.poses, fps, up=up, meshes=meshes, contacts=c)  # type: ignore[arg-type]
    assert after.penetration_mm <= before.penetration_mm + 1e-6
    assert after.knee_pop_deg is not None and before.knee_pop_deg is not None
    assert after.knee_pop_deg <= before.knee_pop_deg + 1e-9
    assert r.after.penetration_mm <= r.before.penetration_mm + 1e-6
    assert r.after.knee_pop_deg <= r.before.knee_pop_deg + 1e-9
    # where a foot stayed locked at full weight, its lowest surface point is within 1 cm (``within``) of the ground
    if r.held is not None:
        W = fig.world_batch(r.poses)
        surface = body_surface(fig, meshes)
        nb = max(2, int(round(0.2 * fps)))
        k = 1 if up == "y" else 2
        for leg in r.legs:
            low = surface.lowest(W, k, [descendants(fig, leg.ankle)])[:, 0] * r.after.metres_per_unit
            for point in (leg.ankle, leg.toe):
                for s, e in _runs(r.held[:, r.contacts.points.index(point)]):
                    if e - s > nb:
                        assert np.abs(low[s + nb:e]).max() <= within, (leg.side, point, s, e)
    return r, before, after


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    m = np.concatenate([[0], mask.astype(np.int8), [0]])
    d = np.diff(m)
    return list(zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1), strict=True))


def test_walk_toml_locking_never_makes_it_worse() -> None:
    """The issue: locking made walk.toml's knee pops 9.9 → 16.0°; now the knees change no faster than the clip's
    own, the drawn toes (74 mm under the floor as keyframed; joint centres: 12 mm) come out of it, and the feet
    slide less."""
    scene = animkit.load(SCENES / "walk.toml")
    clip = scene.clip()
    # known shortfall: at the end of a stance (frames 6-14 right, 30-31 left) the keyframed hips are too high for
    # a leg never straighter than the clip's own to keep its foot down: the sole rises to 3.0 cm above the floor
    r, before, after = _never_worse(scene.figure, clip.sample_frames(), clip.fps, within=0.035)
    assert before.knee_pop_deg == pytest.approx(9.94, abs=0.01)
    assert before.penetration_mm > 50.0 and after.penetration_mm <= 1.0
    assert r.after.skate_mm < 0.5 * r.before.skate_mm
    assert after.skate_mm_per_s is not None and before.skate_mm_per_s is not None
    assert after.skate_mm_per_s < before.skate_mm_per_s


@pytest.mark.parametrize(("source", "target"), [
    ("cmu_02_01_walk.bvh", "RiggedFigure.glb"), ("cmu_02_01_walk.bvh", "CesiumMan.glb"),
    # the hop's right-foot contact at frames 510-541 stood up to 22 mm above the floor, raised by the lift of the
    # swing after it (spread into the contact); without that lift the held sole dips 1.4 mm under the floor at the
    # contact's first frame (the humanoid's ankle has no twist DOF to take the lock's turn), so the never-worse
    # check leaves that contact unlocked
    ("cmu_131_03_hop_3dsmax.bvh", "humanoid.toml"),
    ("cmu_09_01_run.bvh", "humanoid.toml")])
def test_locking_a_retarget_never_makes_it_worse(source: str, target: str) -> None:
    """The issue's regressions (a held-out punch onto the humanoid, penetration 7.3 → 36.0 mm; knee pops 7.9 →
    17.8° on RiggedFigure) on the clips here: every lock is judged against the clip as retargeted."""
    from animkit.motion.retarget import retarget_full

    src = animkit.load(DATA / source)
    tgt = animkit.load((SCENES if target.endswith(".toml") else DATA) / target)
    rt = retarget_full(src, tgt)
    r, before, after = _never_worse(rt.figure, rt.poses[1:], rt.clip.fps, tgt.up, tgt.meshes)
    assert r.after.skate_mm <= r.before.skate_mm + 1e-6


@pytest.mark.parametrize("target", ["RiggedFigure.glb", "CesiumMan.glb", "humanoid.toml"])
def test_locking_a_retarget_on_the_source_contacts_keeps_held_feet_on_the_ground(target: str) -> None:
    """The CMU walk with the source's contacts carried (as the CLI locks a retarget): never worse, and every held foot
    within 1 cm of the ground. The lift that takes a swinging foot out of the ground just after a contact was spread
    (max then mean filter, 2 × 0.2 s) back into the held contact: the held left foot stood up to 26 mm above it.
    Every contact is held, and the planted feet stop sliding: the pelvis, shared by a trailing toe out of the leg's
    reach and a landing knee at the clip's bend, came down for the toe and bent the knee past the clip's (so the
    landing foot's whole contact was left unlocked: CesiumMan's right leg, frames 70-153, skate 54 mm/s); now it
    comes down only as far as the knee allows and shifts back towards the trailing foot (animkit.motion.pelvis),
    and on the humanoid, whose ankle cannot twist, the sole's height is corrected for the turn it could give."""
    from animkit.motion.measures import carry_contacts
    from animkit.motion.retarget import retarget_full

    src = animkit.load(DATA / "cmu_02_01_walk.bvh")
    tgt = animkit.load((SCENES if target.endswith(".toml") else DATA) / target)
    rt = retarget_full(src, tgt)
    P_s = src.clip().sample(rt.times)[1:]
    c = carry_contacts(height_contacts(src.figure, P_s, rt.clip.fps, up=src.up), legs_of(src.figure),
                       legs_of(rt.figure))
    r, _, _ = _never_worse(rt.figure, rt.poses[1:], rt.clip.fps, tgt.up, tgt.meshes, contacts=c)
    assert r.held is not None and r.held.any()
    assert r.unlocked == ()
    before = measure_motion(rt.figure, rt.poses[1:], rt.clip.fps, up=tgt.up, meshes=tgt.meshes, contacts=c)
    after = measure_motion(rt.figure, r.poses, rt.clip.fps, up=tgt.up, meshes=tgt.meshes, contacts=c)
    assert before.skate_mm_per_s is not None and after.skate_mm_per_s is not None
    assert after.skate_mm_per_s < 0.15 * before.skate_mm_per_s


def test_in_place_and_back_round_trip(walk: animkit.Scene) -> None:
    fig = walk.figure
    P = walk.clip().sample_frames()[::4]
    still, motion = in_place(fig, P)
    rm = root_motion(fig, still)
    assert np.abs(rm.positions - rm.positions[0]).max() < 1e-9 * fig.size()
    assert np.abs(rm.heading - rm.heading[0]).max() < 1e-9
    back = with_root_motion(fig, still, motion)
    assert np.abs(fig.world_positions(back) - fig.world_positions(P)).max() < 1e-9 * fig.size()
    # the walk goes somewhere and turns a little: root motion is not nothing
    assert np.linalg.norm(motion.positions[-1] - motion.positions[0]) > 0.5 * fig.size()


def test_loops_walk_on_without_a_jump() -> None:
    scene = animkit.load(SCENES / "walk.toml")
    fig, clip = scene.figure, scene.clip()
    P = clip.sample(clip.frame_times())
    L = loop_poses(fig, P, 3)
    assert L.shape[0] == 3 * (P.shape[0] - 1) + 1
    hips = fig.world_positions(L)[:, fig.node_names.index("hips")]
    step = np.linalg.norm(np.diff(hips, axis=0), axis=1)
    assert step.max() < 2.0 * np.median(step)  # no jump back at the seams
    assert hips[-1, 2] - hips[0, 2] == pytest.approx(3 * 1.4, abs=1e-9)  # three strides forward
    # each cycle is the first one carried forward
    n = P.shape[0] - 1
    first = fig.world_positions(P[:-1])
    for k in range(3):
        moved = fig.world_positions(L[k * n:(k + 1) * n])
        np.testing.assert_allclose(moved - [0, 0, 1.4 * k], first, atol=1e-9)


def test_loops_accumulate_heading_on_a_turning_cycle(walk: animkit.Scene) -> None:
    fig = walk.figure
    P = walk.clip().sample_frames()[120:241]  # one second of the walk, which turns a little
    L = loop_poses(fig, P, 4)
    rm = root_motion(fig, L)
    one = root_motion(fig, P)
    turn = one.heading[-1] - one.heading[0]
    n = P.shape[0] - 1
    for k in range(4):
        assert rm.heading[k * n] - rm.heading[0] == pytest.approx(k * turn, abs=1e-9)


def test_crossfade_of_two_skeletons_aligns_the_root(walk: animkit.Scene, run: animkit.Scene) -> None:
    fig, a = walk.figure, walk.clip()
    start, length = 2.0, 0.5
    plain = crossfade(a, retarget(run, fig), start, length)
    aligned = aligned_crossfade(fig, a, run.clip(), start, length, b_figure=run.figure)
    t = np.arange(start, start + length + 1e-9, 1 / 120)
    base = root_motion(fig, a.sample(np.array([start])))
    psi = base.heading[0]
    side = np.array([np.cos(psi), 0.0, -np.sin(psi)])
    lateral = {}
    for name, clip in (("plain", plain), ("aligned", aligned)):
        rm = root_motion(fig, clip.sample(t))
        lateral[name] = np.abs((rm.positions - base.positions[0]) @ side).max()
    assert lateral["plain"] > 5.0  # the unaligned run starts metres away (in CMU units)
    assert lateral["aligned"] < 0.5  # under 3 cm: the hips' own sway
    # at the blend start the aligned run starts where and facing where the walk is
    b0 = root_motion(fig, aligned.sample(np.array([start + 1e-9])))
    np.testing.assert_allclose(b0.positions[0], base.positions[0], atol=0.2)


@pytest.mark.parametrize("character", ["CesiumMan", "RiggedFigure"])
def test_walk_retargeted_onto_gltf_characters_meets_the_goals(character: str, walk: animkit.Scene) -> None:
    from animkit.motion.retarget import retarget_full

    target = animkit.load(DATA / f"{character}.glb")
    r = retarget_full(walk, target)
    locked = lock_feet(r.figure, r.poses, r.clip.fps, up=target.up, meshes=target.meshes)
    assert locked.before.skate_mm > 0.5  # the retargeted walk slides a little, as its source does
    assert locked.after.skate_mm <= 2.0
    # the retarget stands the planted feet on the ground (their surface's 5th percentile on it), so a few frames
    # dip; the lock never makes that worse, and nothing goes under the bound (-2.5 cm)
    assert locked.after.penetration_mm <= min(25.0, locked.before.penetration_mm + 1e-6)
    assert locked.after.knee_pop_deg <= locked.before.knee_pop_deg + 1e-9
    assert locked.after.metres_per_unit == 1.0  # the characters are in metres


def test_locks_the_leg_cannot_hold_end_early_on_a_limited_target(walk: animkit.Scene) -> None:
    """humanoid.toml's hips stop at 30° back: a lock held to the end would leave the trailing foot under the floor."""
    from animkit.motion.retarget import retarget_full

    target = animkit.load(SCENES / "humanoid.toml")
    r = retarget_full(walk, target)
    locked = lock_feet(r.figure, r.poses, r.clip.fps)
    assert locked.after.penetration_mm <= locked.before.penetration_mm + 1e-6
    assert locked.after.skate_mm <= locked.before.skate_mm
    assert locked.after.knee_pop_deg <= locked.before.knee_pop_deg
