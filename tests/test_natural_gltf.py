"""Natural reaching on a glTF character whose spine and neck rest far from any one Euler order's lock.

CesiumMan (Khronos sample; tests/data/SOURCES.md): in the glTF reader's former fixed intrinsic "zyx" order its
spine and first neck joint rested 7–13° from gimbal lock (the middle angle near ±90°), where a small turn of the
joint moves its first and last angles by up to 1/cos β times as much: each bake's frames were slowed by those
joints' angle rates (not by the hand's speed), the bake was stretched and run again up to eight times, and the
hips-up hand moved in three strokes (min-jerk r 0.936). The reader now gives each joint the Euler order that keeps
its rest ≥ 45° from lock (tests/test_gltf_rest_frames.py), and the hips-up hand moves in one stroke.

What holds here, from the counts the bake reports (not wall time): the stretched bakes last at most STRETCH_TOTAL
times the asked duration, the IK iterations over every frame of every bake stay within
NATURAL_FRAME_ITERATIONS per frame per bake, the clip ends on the target or the panel says it is out of reach, and
no pose is NaN; and, where the trunk and neck move, issue 21 §3's measures that the reach meets: the hold is
still (≤ 2°/s of summed joint travel after arrival), the head's ear-to-ear axis within 15° of level and its turn
≤ 200°/s, the free arm hanging (within 45° of vertical at the end; it starts in CesiumMan's A-pose, 61° out).
The compiled cone projection is held to the NumPy one (the same angles, to 1e-9 rad).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from animkit import jit, load
from animkit.ik import LM, IKProblem
from animkit.model.transforms import matrix_from_euler_intrinsic
from animkit.motion.reach import NATURAL_DIRECT_ITERATIONS, NATURAL_FRAME_ITERATIONS, compare
from animkit.motion.reach_frames import STRETCH_ROUNDS, STRETCH_TOTAL

DATA = Path(__file__).parent / "data"
TARGET = (-0.3, 0.6, 0.4)
DURATION, HOLD, FPS = 2.0, 0.5, 30.0  # compare's defaults: the reach `animkit compare` bakes


@pytest.fixture(scope="module")
def cesium():  # type: ignore[no-untyped-def]
    return load(DATA / "CesiumMan.glb")


@pytest.fixture(scope="module")
def panels(cesium):  # type: ignore[no-untyped-def]
    """The natural reach baked on every movable set that moves the right hand (arm, torso, hips-up)."""
    out = compare(cesium, effector="hand_r", target=TARGET, solvers=["natural"], duration=DURATION, hold=HOLD,
                  fps=FPS, quiet=True)
    return {p.chain: p for p in out.panels}


@pytest.mark.slow
def test_every_set_that_moves_the_hand_is_baked(panels) -> None:  # type: ignore[no-untyped-def]
    assert {"arm_r", "torso", "hips-up"} <= set(panels)


@pytest.mark.slow
@pytest.mark.parametrize("chain", ["arm_r", "torso", "hips-up"])
def test_bounded_work(panels, chain: str) -> None:  # type: ignore[no-untyped-def]
    p = panels[chain]
    assert p.duration_s is not None and p.duration_s <= STRETCH_TOTAL * DURATION + 1e-9
    frames = len(p.times)  # the last bake is the longest (a stretch only lengthens the movement; lead ≤ its own)
    bound = NATURAL_FRAME_ITERATIONS * (STRETCH_ROUNDS + 1) * frames
    assert 0 < p.frame_iterations <= bound
    assert p.result.iterations <= NATURAL_DIRECT_ITERATIONS


@pytest.mark.slow
@pytest.mark.parametrize("chain", ["arm_r", "torso", "hips-up"])
def test_ends_on_target_or_says_out_of_reach(panels, cesium, chain: str) -> None:  # type: ignore[no-untyped-def]
    p = panels[chain]
    assert np.all(np.isfinite(p.poses)) and np.all(np.isfinite(p.trail))
    end = float(np.linalg.norm(p.trail[-1] - np.asarray(TARGET)))
    if p.result.converged:
        assert end <= 0.01
    else:  # out of reach (LM stops 62 mm short on the trunk's sets, 23 cm on the arm's): it says so
        assert p.result.reason in ("stalled", "unreachable")
        assert p.result.position_error >= 0.05 and end >= 0.05
    lim = cesium.figure.dof_limits()
    assert np.all(p.poses >= lim[:, 0] - 1e-9) and np.all(p.poses <= lim[:, 1] + 1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("chain", ["torso", "hips-up"])
def test_the_reach_moves_like_a_person(panels, chain: str) -> None:  # type: ignore[no-untyped-def]
    m = panels[chain].measures
    assert m is not None
    assert m.hold_deg_per_s <= 2.0
    assert m.head_roll_deg is not None and m.head_roll_deg <= 15.0
    assert m.head_speed_deg_per_s is not None and m.head_speed_deg_per_s <= 200.0
    assert m.free_arm_end_deg is not None and m.free_arm_end_deg <= 45.0


@pytest.mark.slow
@pytest.mark.parametrize("chain", ["torso", "hips-up"])
def test_the_hand_moves_in_one_stroke(panels, chain: str) -> None:  # type: ignore[no-untyped-def]
    m = panels[chain].measures
    assert m is not None
    assert m.speed_peaks <= 3 and m.min_jerk_r >= 0.95
    if chain == "hips-up":  # issue 21's goal (0.97, one peak): met since the joints rest far from gimbal lock
        assert m.min_jerk_r >= 0.97  # measured: r 0.999 (was 0.936-0.971, 3 peaks)
        # one peak since the eyes take their share along the gaze shift (head_aim.shift_shared_aim): with the pitch
        # alone theirs, the neck thrashed on its cones' rims and one frame lagged (2 peaks, frames 49-52)
        assert m.speed_peaks == 1


@pytest.mark.slow
def test_the_neck_moves_smoothly(panels, cesium) -> None:  # type: ignore[no-untyped-def]
    """The hips-up reach's neck (the gaze's DOFs): no joint angle steps more in a frame than the head may turn
    (HEAD_SPEED / fps, 6.3°), and its jitter |θ(f+1) − 2θ(f) + θ(f−1)| / 4 stays under 1°. With the eyes' share
    on the pitch alone, the head was aimed 56° to the side of the trunk, beyond the neck's 2 × 30° twist; both neck
    joints pressed on their cones' rims 31.6° off the aim, where its error is flat along the rims, and the neck
    wandered there: steps up to 12° a frame (the frame step's cap), jitter 2.55°, 23 sign reversals."""
    from animkit.ik.natural import Priors
    from animkit.ik.tasks import Gaze
    from animkit.model.chains import dof_indices
    from animkit.motion.reach_frames import HEAD_SPEED

    fig = cesium.figure
    dofs = list(np.asarray(fig.dof_names)[dof_indices(fig, "hips-up", effector="hand_r")])
    gaze = next(t for t in Priors().problem(fig, "hand_r", dofs).tasks if isinstance(t, Gaze))
    assert gaze.dofs is not None
    neck = list(gaze.dofs)
    assert {fig.dof_names[d].split(".")[0] for d in neck} == {"Skeleton_neck_joint_1", "Skeleton_neck_joint_2"}
    q = panels["hips-up"].poses[:, neck]
    step = float(np.degrees(np.abs(np.diff(q, axis=0))).max())
    jitter = float(np.degrees(np.abs(q[2:] - 2 * q[1:-1] + q[:-2]) / 4).max())
    assert step <= math.degrees(HEAD_SPEED) / FPS, step  # measured 5.5° (was 12.0°)
    assert jitter <= 1.0, jitter  # measured 0.48° (was 2.55°)


@pytest.mark.slow
@pytest.mark.parametrize("chain", ["torso", "hips-up"])
def test_the_natural_reach_goes_as_far_as_plain_lm(panels, cesium, chain: str) -> None:  # type: ignore[no-untyped-def]
    """The target is out of reach: the natural solver may give up a little for posture, not centimetres. Plain LM
    on the same movable set from rest ends 10.0 cm short (its best of twelve random starts 6.95 cm); the natural
    reach, direct solve and baked clip alike, ends no farther than LM's + 1 cm (measured: 5.8 cm torso, 6.1 cm
    hips-up; before the cones were held as rows, hips-up ended 15.1 cm short, its neck and spine frozen on their
    cones' edges)."""
    fig = cesium.figure
    was = (jit.ENABLED, jit.ALWAYS)
    try:  # LM's NumPy loop, which projects the cones each step (the compiled strategy left them 0.44 rad out here)
        jit.ENABLED, jit.ALWAYS = False, False
        prob = IKProblem(fig, "hand_r", chain, solver=LM(max_iter=200), tol=1e-4)
        lm = prob.solve(np.asarray(TARGET))
    finally:
        jit.ENABLED, jit.ALWAYS = was
    q = lm.pose[prob.model.dofs]
    assert np.abs(prob.model.project_cones(q[None])[0] - q).max() <= 1e-9  # LM's answer keeps the ranges too
    p = panels[chain]
    end = float(np.linalg.norm(p.trail[-1] - np.asarray(TARGET)))
    assert p.result.position_error <= lm.position_error + 0.01
    assert end <= lm.position_error + 0.01


def test_compiled_cone_projection_is_the_numpy_one(cesium) -> None:  # type: ignore[no-untyped-def]
    """Random poses about rest (σ 0.6 rad: some reach near their order's gimbal lock): both paths give the same
    turn and the same angles (the Euler branch and whole turns nearest the input)."""
    fig = cesium.figure
    model = IKProblem(fig, "hand_r", "hips-up", pose=fig.rest_pose()).model
    rng = np.random.default_rng(7)
    q = np.clip(fig.rest_pose()[model.dofs] + rng.normal(0.0, 0.6, (120, model.n)), model.lower, model.upper)
    was = (jit.ENABLED, jit.ALWAYS)
    try:
        jit.ENABLED, jit.ALWAYS = False, False
        ref = model.project_cones(q)
        jit.ENABLED, jit.ALWAYS = was[0], True
        if not jit.enabled():
            pytest.skip("numba is not available here: the compiled projection does not run")
        got = model.project_cones(q)
    finally:
        jit.ENABLED, jit.ALWAYS = was
    assert np.abs(got - ref).max() <= 1e-9
    for cl in model.cones:
        idx = list(cl.links)
        assert cl.joint.order is not None
        assert np.allclose(matrix_from_euler_intrinsic(got[:, idx], cl.joint.order),
                           matrix_from_euler_intrinsic(ref[:, idx], cl.joint.order), atol=1e-9)
    assert (ref != q).any()  # some poses were outside a cone: the projection was exercised


def test_the_neck_turns_the_head_never_slides_it(cesium) -> None:  # type: ignore[no-untyped-def]
    """CesiumMan's neck joints carry translation DOFs (glTF nodes its file may animate): the gaze's DOFs, and the
    neck's that the torso panel adds for it, are its turns only (they rode along: the torso panel's head slid 45 cm
    down to look at the target, and up to 2 m up once the eyes took their share)."""
    from animkit.ik.natural import Priors
    from animkit.ik.tasks import Gaze

    fig = cesium.figure
    for chain in ("torso", "hips-up"):
        problem = Priors().problem(fig, "hand_r", chain)
        gaze = next(t for t in problem.tasks if isinstance(t, Gaze))
        names = [fig.dof_names[d] for d in gaze.dofs]
        assert names and all("neck" in n and n.rsplit(".", 1)[1] in ("rx", "ry", "rz") for n in names)
        assert all(fig.dof_names[d].rsplit(".", 1)[1] in ("rx", "ry", "rz") for d in problem.model.dofs)


@pytest.mark.slow
@pytest.mark.parametrize("chain", ["torso", "hips-up"])
def test_the_gaze_leads_the_hand(panels, chain: str) -> None:  # type: ignore[no-untyped-def]
    """Issue 21 §3's gaze lead, measured with the eyes (the gaze is on the target once the eyes, 30° at most, can
    take what the head leaves: tests/test_head_pitch.py holds that measure to a closed form): the head starts before
    the hand and the gaze settles before the hand's peak speed (head alone: lead −0.6/−0.8 s). The eyes take their
    share of the whole gaze shift (yaw too: head_aim.shift_shared_aim), 30° at the end, plus what the head leaves of
    its own aim (a bake frame's gaze is met within TRACK_TOL; measured 30.25°: the main job's test allows the same
    0.5°). With the pitch alone theirs, the head was asked 56° aside, past the neck's twist, and ended 31.6° off its
    aim with the neck thrashing on its cones' rims (:func:`test_the_neck_moves_smoothly`)."""
    m = panels[chain].measures
    assert m is not None and m.head_start_s is not None and m.hand_start_s is not None
    assert m.head_start_s <= m.hand_start_s and m.gaze_lead_s is not None and m.gaze_lead_s > 0.0
    assert m.eyes_deg is not None and m.eyes_deg <= 30.0 + 0.5
