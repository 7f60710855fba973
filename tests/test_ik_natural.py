"""Natural reaching: per-joint stiffness (Blender's ik_stiffness) in the default solver. Oracle: the share of the
rotation each joint takes, measured on the answer, and the task still met."""

from __future__ import annotations

import numpy as np
import pytest

import animkit
from animkit import IKError
from animkit.ik import LM, IKProblem

from .ik_helpers import SCENES


def _share(fig, problem, start, pose, joint):
    d = np.abs(pose - start)
    return float(d[fig.joint_dofs[joint]].sum() / d[problem.model.dofs].sum())


@pytest.mark.parametrize("offset", [(-0.2, 0.15, 0.2), (0.1, 0.25, 0.15), (-0.1, -0.2, 0.25)])
def test_raising_a_joints_stiffness_lowers_its_share_of_the_rotation(lm_path, offset):
    fig = animkit.load(SCENES / "humanoid.toml").figure
    start = fig.rest_pose()
    start[fig.dof_index("elbow_r.rx")] = -0.6
    target = fig.world(start)["hand_r"][:3, 3] + np.asarray(offset)
    problem = IKProblem(fig, "hand_r", "torso", pose=start)
    shares = []
    for s in (0.0, 0.5, 0.9):
        r = problem.using(LM(stiffness={"spine": s})).solve(target)
        assert r.converged and np.linalg.norm(fig.world(r.pose)["hand_r"][:3, 3] - target) < 1e-4
        shares.append(_share(fig, problem, start, r.pose, "spine"))
    assert shares[0] > shares[1] > shares[2], shares


def test_stiffness_is_checked():
    with pytest.raises(IKError):
        LM(stiffness={"spine": 1.0})
    fig = animkit.load(SCENES / "humanoid.toml").figure
    with pytest.raises(IKError, match="spine"):
        IKProblem(fig, "hand_r", "torso", solver=LM(stiffness={"spline": 0.5}))
