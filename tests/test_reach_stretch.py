"""Bones keep their length in a reach: the stretch measure (animkit.motion.reach_measures.bone_stretch) on cases with
known answers, and the natural reach on a glTF character whose nodes carry translation and scale DOFs.

CesiumMan's neck nodes have translation and scale DOFs (a glTF node's TRS). A torso reach lets the neck ride along for
the gaze; when those translation DOFs rode too, the solver slid the head 15 cm off the shoulders to aim it, and every
head measure (roll 0°, pitch, speed) called the clip fine. The stretch measure is what sees it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import animkit
from animkit.ik.natural import Priors
from animkit.motion.reach_measures import bone_stretch, reach_measures

DATA = Path(__file__).parent / "data"

# a chain root -> a -> b -> c, with a side branch a -> d
PARENT = np.array([-1, 0, 1, 2, 1])
REST = np.array([[0, 0, 0], [0, 1, 0], [0, 2, 0], [0, 3, 0], [1, 1, 0]], dtype=float)


def _rotation(v: np.ndarray) -> np.ndarray:
    """R = exp([v]×) (Rodrigues)."""
    a = float(np.linalg.norm(v))
    if a < 1e-12:
        return np.eye(3)
    k = v / a
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(a) * K + (1 - np.cos(a)) * K @ K


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.floats(-3, 3), st.floats(-3, 3), st.floats(-3, 3)), min_size=2, max_size=5),
       st.floats(-5, 5))
def test_rigid_frames_do_not_stretch(turns: list, shift: float) -> None:
    """Each frame a rigid motion of the rest skeleton (a turn and a shift): every bone keeps its length, s = 0."""
    x = np.stack([REST @ _rotation(np.array(t)).T + shift for t in turns])
    np.testing.assert_allclose(bone_stretch(PARENT, x), 0.0, atol=1e-12)


def test_a_lengthened_bone_measures_its_change() -> None:
    """Node c pushed 0.15 along its bone in frame 1 and the side bone d shortened by 0.04 in frame 2: s = (0, 0.15,
    0.04); the root's shift (root motion) counts only when the root is not the fixed-above node."""
    x = np.stack([REST, REST, REST])
    x[1, 3] += [0, 0.15, 0]
    x[2, 4] -= [0.04, 0, 0]
    np.testing.assert_allclose(bone_stretch(PARENT, x), [0.0, 0.15, 0.04], atol=1e-12)
    y = np.stack([REST, REST])
    y[1, 1:] += [0.0, 0.3, 0.0]  # the body above node 1 moved up 0.3: a bone 0 -> 1 grew, as root motion does
    np.testing.assert_allclose(bone_stretch(PARENT, y), [0.0, 0.3], atol=1e-12)
    np.testing.assert_allclose(bone_stretch(PARENT, y, fixed_above=1), [0.0, 0.0], atol=1e-12)


def test_natural_reach_turns_only_on_cesium_man() -> None:
    """The torso reach's movable set adds the neck (for the gaze) by its turning DOFs only, and its solved pose keeps
    every bone's length (the hips' translation is root motion, outside the measure)."""
    fig = animkit.load(DATA / "CesiumMan.glb").figure
    priors = Priors()
    dofs, added = priors.movable(fig, "Skeleton_arm_joint_R__3_", "torso")
    assert any(n.startswith("Skeleton_neck_joint") for n in added)
    assert fig.compiled.dof_revolute[dofs].all(), [fig.dof_names[d] for d in dofs if not fig.compiled.dof_revolute[d]]
    problem = priors.problem(fig, "Skeleton_arm_joint_R__3_", "torso", target=np.array([-0.3, 0.6, 0.4]))
    result = problem.solve(np.array([-0.3, 0.6, 0.4]))
    poses = np.stack([fig.rest_pose(), result.pose])
    m = reach_measures(fig, poses, 30.0, "Skeleton_arm_joint_R__3_", np.array([-0.3, 0.6, 0.4]), 1)
    assert m.stretch_mm < 1e-6
