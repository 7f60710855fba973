"""A full body from a few effectors (animkit.pose_from_effectors) on motion-capture frames the prior never saw, fast.

Oracles: the recorded frames themselves (tests/data/cmu_02_heldout.bvh, cmu_08_heldout.bvh: CMU subjects 02 and 08,
whom the default prior was not fitted on), forward kinematics of the returned pose for the effectors' misses, and
geometry for targets out of reach (the best an arm can do is point at the target: the shoulder, the hand and the
target in a line). The slow tests in test_ik_prior.py run all 51 held-out frames; these run a few, every time.
Public names only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.ik import PosePrior
from animkit.ik.prior import bind_figure
from animkit.io import load

DATA = Path(__file__).parent / "data"
ALL5 = ("hand_l", "hand_r", "foot_l", "foot_r", "head")
VR = ("hand_l", "hand_r", "head")


@pytest.fixture(scope="module")
def frames():
    """Four held-out frames of each subject (evenly spaced through its file), each on its own skeleton."""
    out = []
    for name in ("cmu_02_heldout.bvh", "cmu_08_heldout.bvh"):
        scene = load(DATA / name)
        poses = next(iter(scene.clips.values())).sample_frames()
        for i in np.linspace(0, len(poses) - 1, 4).astype(int):
            out.append((scene.figure, poses[i]))
    return out


@pytest.fixture(scope="module")
def prior():
    return PosePrior.load()


def solve(fig, q, effectors, prior, **kw):
    """pose_from_effectors on a recorded frame (its effectors' positions, its hips' frame as the root): the result,
    the mean per-joint error over the humanoid joints and the largest effector miss, both scaled to a 1.7 m figure."""
    names = fig.compiled.node_names
    b = bind_figure(fig)
    W = fig.world_batch(q[None])[0]
    eff = {e: names.index(fig.rig.effectors[e]) for e in effectors}
    targets = {e: W[i, :3, 3].copy() for e, i in eff.items()}
    r = animkit.pose_from_effectors(fig, targets, root=W[names.index(fig.root_arc.child.name)], prior=prior, **kw)
    W2 = fig.world_batch(r.pose[None])[0]
    joints = np.array(sorted(set(b.node.tolist()) | {b.hips}))
    scale = 1.7 / b.height
    err = float(np.linalg.norm(W2[joints, :3, 3] - W[joints, :3, 3], axis=1).mean()) * scale
    miss = max(float(np.linalg.norm(W2[i, :3, 3] - targets[e])) for e, i in eff.items()) * scale
    return r, err, miss


@pytest.mark.parametrize("effectors, bound", [(ALL5, 0.030), (VR, 0.075)])
def test_held_out_frames_are_completed_and_effectors_met(frames, prior, effectors, bound):
    """Hands, feet and head: the issue's 3 cm per joint; hands and head: 7.5 cm on these 8 frames (the goal, 6 cm,
    is over all 51: test_ik_prior.py's slow test); every effector within 1 cm, every result converged and finite."""
    errs = []
    for fig, q in frames:
        r, err, miss = solve(fig, q, effectors, prior)
        assert r.converged and r.solver == "prior"
        assert np.all(np.isfinite(r.pose))
        assert miss <= 0.010
        assert r.position_error <= 0.01 / 1.7 * bind_figure(fig).height
        errs.append(err)
    assert float(np.mean(errs)) <= bound


def test_a_start_pose_changes_the_path_not_the_answer(frames, prior):
    """A start near the answer (the recorded frame itself) meets the effectors too, in no more LM steps than the
    rest pose's start, and ends near the rest start's pose."""
    fig, q = frames[5]
    from_rest, err_rest, _ = solve(fig, q, ALL5, prior)
    near, err_near, miss = solve(fig, q, ALL5, prior, start=q)
    assert near.converged and miss <= 0.010
    assert near.iterations <= from_rest.iterations
    assert abs(err_near - err_rest) <= 0.01


@pytest.mark.parametrize("reach", [1.5, 10.0, 1e4])
def test_targets_out_of_reach_point_the_arm_and_stay_finite(frames, prior, reach):
    """A hand target ``reach`` × the figure's height away (out of reach, even at 10⁴ heights): no NaN or inf, the
    result says it is out of reach (beyond the bones' length from the given root), the hand is nearer the target than
    the recorded frame's, and the arm points at it (the shoulder–hand and shoulder–target directions within 25°: the
    closest a hand can get). The other effectors are still met within 1 cm: the far one no longer drags the body
    after it (before: the other hand 21 cm and the head 6 cm off at 1.5 heights)."""
    fig, q = frames[0]
    names = fig.compiled.node_names
    b = bind_figure(fig)
    W = fig.world_batch(q[None])[0]
    hand, head = names.index(fig.rig.effectors["hand_r"]), names.index(fig.rig.effectors["head"])
    shoulder = int(fig.compiled.parent[int(fig.compiled.parent[hand])])  # the forearm's parent: the upper arm
    shoulder = int(fig.compiled.parent[shoulder])
    side = W[hand, :3, 3] - W[names.index(fig.root_arc.child.name), :3, 3]
    side /= np.linalg.norm(side)
    target = W[shoulder, :3, 3] + reach * b.height * side
    targets = {"hand_r": target, "head": W[head, :3, 3].copy(), "hand_l": W[names.index(fig.rig.effectors["hand_l"]),
                                                                                :3, 3].copy()}
    r = animkit.pose_from_effectors(fig, targets, root=W[names.index(fig.root_arc.child.name)], prior=prior)
    assert np.all(np.isfinite(r.pose)) and np.isfinite(r.position_error)
    assert not r.converged and r.reason == "unreachable" and r.reachable is False
    assert np.all(np.isfinite(r.errors))
    W2 = fig.world_batch(r.pose[None])[0]
    scale = 1.7 / b.height
    for name in ("head", "hand_l"):
        assert np.linalg.norm(W2[names.index(fig.rig.effectors[name]), :3, 3] - targets[name]) * scale <= 0.010
    arm = W2[hand, :3, 3] - W2[shoulder, :3, 3]
    to = target - W2[shoulder, :3, 3]
    assert arm @ to / (np.linalg.norm(arm) * np.linalg.norm(to)) >= np.cos(np.radians(25.0))
    assert np.linalg.norm(W2[hand, :3, 3] - target) < np.linalg.norm(W[hand, :3, 3] - target)


def test_pose_targets_are_met_in_position_and_orientation(frames, prior):
    """A 4×4 target for the head (its recorded frame: in its range): met within 1 cm and 0.02 rad."""
    fig, q = frames[6]
    names = fig.compiled.node_names
    W = fig.world_batch(q[None])[0]
    head = names.index(fig.rig.effectors["head"])
    targets = {"head": W[head], **{e: W[names.index(fig.rig.effectors[e]), :3, 3].copy() for e in ("hand_l", "hand_r")}}
    r = animkit.pose_from_effectors(fig, targets, root=W[names.index(fig.root_arc.child.name)], prior=prior)
    W2 = fig.world_batch(r.pose[None])[0]
    h = bind_figure(fig).height
    assert r.converged
    assert np.linalg.norm(W2[head, :3, 3] - W[head, :3, 3]) <= 0.01 / 1.7 * h
    R = W2[head, :3, :3].T @ W[head, :3, :3]
    assert np.arccos(np.clip((np.trace(R) - 1) / 2, -1, 1)) <= 0.02
