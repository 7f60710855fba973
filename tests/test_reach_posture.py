"""Issue 21 §3: the free arm hangs, within 45° of vertical, when the trunk bends, on characters the natural reach
was not shaped around.

CesiumMan and RiggedFigure (Khronos samples; tests/data/SOURCES.md) rest in an A-pose with the arms 61° and 62° out
from hanging, so a reach's first frame, the trunk still upright, holds the free arm there: the whole clip's largest
angle was 61–62° although the arm had dropped within 13° of hanging before the trunk started to bend. What is held
here is the issue's own statement, read from the world positions of the free shoulder and wrist joints and of the
hips and neck (nodes named from each file, not through the humanoid bone map the measures use): on every frame whose
trunk line hips → neck has turned TRUNK_BENT or more from the first frame's, the shoulder-to-wrist direction is
within 45° of straight down, the trunk does bend (a low reach: at least 15° by its end), and the clip ends with the
arm hanging; `compare`'s free-arm measure reads the same angle.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from animkit import load
from animkit.motion.reach import compare
from animkit.motion.reach_measures import TRUNK_BENT

DATA = Path(__file__).parent / "data"
HANG_DEG = 45.0  # issue 21 §3: the free arm within 45° of vertical when the trunk bends

# file, the reach (compare's own defaults: 2 s, 0.5 s hold, 30 fps), the left (free) arm's shoulder and wrist nodes
# and the hips and neck nodes, named as each file names them
CASES = {
    "CesiumMan": ("CesiumMan.glb", (-0.3, 0.6, 0.4), "Skeleton_arm_joint_L__4_", "Skeleton_arm_joint_L__2_",
                  "Skeleton_torso_joint_1", "Skeleton_neck_joint_1"),
    "RiggedFigure": ("RiggedFigure.glb", (-0.25, 0.45, 0.35), "arm_joint_L_1", "arm_joint_L_3", "torso_joint_1",
                     "neck_joint_1"),
}


def _down_angle(d: np.ndarray) -> np.ndarray:
    """Degrees between each row of ``d`` and straight down (−y), by the cosine of the angle."""
    c = -d[:, 1] / np.linalg.norm(d, axis=1)
    return np.degrees(np.arccos(np.clip(c, -1.0, 1.0)))


@pytest.fixture(scope="module", params=sorted(CASES))
def torso_reach(request):  # type: ignore[no-untyped-def]
    """The natural torso reach of the right hand, its world joint positions and the case's node names."""
    file, target, shoulder, wrist, hips, neck = CASES[request.param]
    scene = load(DATA / file)
    panel = compare(scene, effector="hand_r", target=target, chains=["torso"], solvers=["natural"], quiet=True
                    ).panels[0]
    fig = scene.figure
    x = fig.world_positions(panel.poses)
    ix = {n: fig.node_names.index(n) for n in (shoulder, wrist, hips, neck)}
    return request.param, panel, x, ix, (shoulder, wrist, hips, neck)


@pytest.mark.slow
def test_the_free_arm_hangs_while_the_trunk_bends(torso_reach) -> None:  # type: ignore[no-untyped-def]
    name, panel, x, ix, (shoulder, wrist, hips, neck) = torso_reach
    arm = _down_angle(x[:, ix[wrist]] - x[:, ix[shoulder]])
    trunk = x[:, ix[neck]] - x[:, ix[hips]]
    cos = trunk @ trunk[0] / (np.linalg.norm(trunk, axis=1) * np.linalg.norm(trunk[0]))
    lean = np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))
    bent = lean >= TRUNK_BENT
    assert arm[0] > 60.0, name  # the rig's A-pose: the first frame, nothing bent yet
    assert lean[-1] >= 15.0 and bent.sum() >= 20, name  # the trunk does bend, over many frames
    assert arm[bent].max() <= HANG_DEG, name  # measured: CesiumMan 12.4°, RiggedFigure 8.6°
    assert arm[-1] <= HANG_DEG, name
    m = panel.measures
    assert m is not None and m.free_arm_deg is not None
    assert m.free_arm_deg == pytest.approx(arm[bent].max(), abs=1e-6), name
    assert m.free_arm_start_deg == pytest.approx(arm[0], abs=1e-6), name
    assert m.free_arm_end_deg == pytest.approx(arm[-1], abs=1e-6), name
