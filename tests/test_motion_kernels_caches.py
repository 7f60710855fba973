"""What retarget + lock keeps per figure instead of rebuilding per call, held to what it stands for.

- ``Figure``'s names, DOFs, rest values, limits and joint spans (found once per arc order) equal the values read from
  the arcs' joints directly, follow an ``add``, and hand out arrays and lists a caller may edit without touching the
  next call's;
- ``check_pose``'s one-sum finite test still names the DOF holding NaN or ±inf;
- ``hip_height`` (kept per compiled figure, hips, up, pose and feet) equals the height read from FK for each pose;
- ``lowest_surface`` of drawn geometry (its points kept per drawn surface) equals min_v (W_f[owner_v] · v)_up summed
  as written, and follows a node given other geometry;
- the pelvis's shift search on the clashing frames only (``shift_needs`` on rows) equals the all-frames bounds at those
  rows, bit for bit.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.errors import PoseError
from animkit.look.drawn import figure_mesh
from animkit.model.figure import Figure
from animkit.model.geometry import Box
from animkit.model.joints import ball, hinge, slider
from animkit.motion import legs_of
from animkit.motion.leg_ik import HeldLeg
from animkit.motion.pelvis import shift_needs
from animkit.motion.retarget import hip_height, lowest_surface

EXAMPLES = Path(animkit.__file__).parent / "examples"


def _chain() -> Figure:
    fig = Figure("base", joint=slider("lift", "y", limits=(-1.0, 2.0)))
    fig.add("upper", "base", offset=(0, 1, 0), joint=hinge("knee", "x", limits=(-0.5, 1.5)))
    return fig


def test_a_figure_s_structure_read_once_equals_its_joints_and_follows_an_add() -> None:
    fig = _chain()
    assert fig.node_names == ["base", "upper"]
    first = fig.rest_pose()
    lim = fig.dof_limits()
    names = fig.node_names
    first[:] = 99.0  # a caller's edits stay its own
    lim[:] = 0.0
    names.append("x")
    fig.joint_dofs["knee"].append(7)
    fig.add("tip", "upper", offset=(0, 1, 0), joint=ball("wrist", limits=(-1.0, 1.0)))
    dofs = [d for a in fig.arcs() for d in a.joint.dofs]
    assert fig.node_names == ["base", "upper", "tip"]
    assert fig.dof_names == [d.name for d in dofs] and fig.dof_count == len(dofs) == 5
    np.testing.assert_array_equal(fig.rest_pose(), [d.rest for d in dofs])
    np.testing.assert_array_equal(fig.dof_limits(), [(d.lower, d.upper) for d in dofs])
    assert fig.joint_dofs == {"lift": [0], "knee": [1], "wrist": [2, 3, 4]}
    assert fig.dofs == dofs


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_check_pose_names_the_dof_holding_nan_or_inf(bad: float) -> None:
    fig = _chain()
    P = np.zeros((4, 2))
    P[2, 1] = bad
    with pytest.raises(PoseError, match="'knee.rx'"):
        fig.check_pose(P)
    big = np.full((3, 2), 1e308)  # finite values whose sum overflows: still a pose
    np.testing.assert_array_equal(fig.check_pose(big), big)


def test_hip_height_kept_per_pose_equals_fk() -> None:
    fig = animkit.load(EXAMPLES / "humanoid.toml").figure
    legs = legs_of(fig)
    rng = np.random.default_rng(3)
    names = fig.node_names
    feet = [n for leg in legs for n in dict.fromkeys((leg.ankle, leg.toe, leg.tip))]
    for _ in range(3):
        P = fig.rest_pose() + rng.normal(0.0, 0.2, fig.dof_count)
        W = fig.world_batch(P[None])[0]
        want = W[names.index(legs[0].hip), 1, 3] - W[[names.index(n) for n in feet], 1, 3].min()
        assert hip_height(fig, legs[0].hip, "y", P, feet) == want
        assert hip_height(fig, legs[0].hip, "y", P, feet) == want  # asked again: the same
    with pytest.raises(PoseError):
        hip_height(fig, legs[0].hip, "y", np.full(fig.dof_count, np.nan), feet)


def test_lowest_surface_of_drawn_geometry_equals_its_points_and_follows_new_geometry() -> None:
    fig = animkit.load(EXAMPLES / "humanoid.toml").figure
    rng = np.random.default_rng(5)
    W = fig.world_batch(fig.rest_pose() + rng.normal(0.0, 0.3, (40, fig.dof_count)))

    def direct() -> np.ndarray:
        fm = figure_mesh(fig, bones=False)
        M = W[:, fm.owner]
        return (np.einsum("fvj,vj->fv", M[:, :, 1, :3], fm.vertices) + M[:, :, 1, 3]).min(axis=1)

    low = lowest_surface(fig, (), "y")
    assert low is not None
    np.testing.assert_array_equal(low(W), direct())
    foot = legs_of(fig)[0].ankle
    fig.node(foot).data = Box((0.3, 0.4, 0.5))  # other geometry on a foot: the surface follows it
    again = lowest_surface(fig, (), "y")
    assert again is not None
    np.testing.assert_array_equal(again(W), direct())


def test_the_pelvis_bounds_on_some_frames_equal_the_all_frames_bounds_there() -> None:
    fig = animkit.load(EXAMPLES / "humanoid.toml").figure
    rng = np.random.default_rng(7)
    F = 30
    W = fig.world_batch(fig.rest_pose() + rng.normal(0.0, 0.2, (F, fig.dof_count)))
    names = fig.node_names
    feet = []
    for leg in legs_of(fig):
        ankle = W[:, names.index(leg.ankle), :3, 3]
        feet.append(HeldLeg(leg, ankle + rng.normal(0.0, 0.1, (F, 3)), rng.random(F) < 0.7,
                            np.broadcast_to(np.eye(3), (F, 3, 3)), 0.8, 0.3, rng.random(F) * 1.2,
                            rng.random(F) + 0.2))
    rows = np.flatnonzero(rng.random(F) < 0.4)
    shifts = np.linspace(0.0, 0.1, 5)[:, None, None] * rng.normal(size=(len(rows), 3))[None]
    every = shift_needs(feet, W, names, 1, np.broadcast_to(np.zeros(3), (5, F, 3)).copy())
    some = shift_needs(feet, W, names, 1, shifts, rows)
    full = np.zeros((5, F, 3))
    full[:, rows] = shifts
    at_rows = shift_needs(feet, W, names, 1, full)
    for a, b, c in zip(some, at_rows, every, strict=True):
        np.testing.assert_array_equal(a, b[:, rows])
        assert a.shape == (5, len(rows)) and c.shape == (5, F)
