"""IK task objects: each task's Jacobian against central differences of its own error, on random poses of the
humanoid (hypothesis), and the tasks' errors against what they measure (closed forms)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import animkit
from animkit.errors import IKError
from animkit.ik.spread import Spread
from animkit.ik.tasks import (
    Balance,
    Cost,
    Gaze,
    Plant,
    Posture,
    Reach,
    configuration,
    ground_basis,
    left_jacobian_inverse,
    polygon_margin,
    support_from_feet,
)
from animkit.model.transforms import matrix_from_rotation_vector, rotation_vector_from_matrix

from .conftest import SCENES
from .ik_helpers import whole_pose

SCENE = animkit.load(SCENES / "humanoid.toml")
FIG = SCENE.figure
UP = np.array([0.0, 1.0, 0.0])


def _fd_check(task, pose: np.ndarray, h: float = 1e-6, atol: float = 1e-6) -> None:
    c = configuration(FIG, pose)
    e, J = task.compute(c)
    assert J.shape == (len(e), FIG.dof_count)
    cols = []
    for j in range(len(pose)):
        a, b = pose.copy(), pose.copy()
        a[j] += h
        b[j] -= h
        cols.append((task.error(configuration(FIG, a, c.body)) - task.error(configuration(FIG, b, c.body))) / (2 * h))
    np.testing.assert_allclose(J, np.stack(cols, axis=1), atol=atol)


def _pose_matrix(rv, p) -> np.ndarray:
    M = np.eye(4)
    M[:3, :3] = matrix_from_rotation_vector(np.asarray(rv, dtype=float))
    M[:3, 3] = p
    return M


@settings(max_examples=3)
@given(st.integers(0, 2 ** 31 - 1))
def test_reach_and_plant_jacobians_match_central_differences(seed) -> None:
    rng = np.random.default_rng(seed)
    pose = whole_pose(FIG, rng)
    target = _pose_matrix(rng.normal(size=3), rng.normal(size=3))  # orientation errors far from zero
    _fd_check(Reach(effector="hand_r", target=target[:3, 3]), pose)
    _fd_check(Reach(effector="hand_r", target=target), pose)
    _fd_check(Plant(node="foot_l", frame=target), pose)


@settings(max_examples=3)
@given(st.integers(0, 2 ** 31 - 1))
def test_gaze_posture_spread_cost_jacobians_match_central_differences(seed) -> None:
    rng = np.random.default_rng(seed)
    pose = whole_pose(FIG, rng)
    _fd_check(Gaze(head="head", forward=(0.2, 0.1, 1.0), target=rng.normal(size=3) + [0, 1.5, 1]), pose)
    _fd_check(Posture(pose=rng.normal(size=FIG.dof_count)), pose)
    _fd_check(Spread(groups=((3, 6, 9), (4, 7))), pose)
    A = rng.normal(size=(FIG.dof_count, FIG.dof_count))
    Q = A @ A.T + np.eye(FIG.dof_count)
    _fd_check(Cost(function=lambda q: (0.5 * q @ Q @ q + 1.0, Q @ q)), pose, atol=1e-5)


def test_balance_jacobian_matches_central_differences_where_active() -> None:
    rest = FIG.rest_pose()
    hull = support_from_feet(FIG, ["foot_l", "foot_r"], rest, UP)
    assert hull is not None
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(40):
        if checked == 12:  # twelve active poses each checked column by column (up to 40 made it ~3x slower)
            break
        pose = rest + rng.normal(scale=0.25, size=FIG.dof_count)
        task = Balance(support=hull, basis=ground_basis(UP), margin=0.3)  # a wide margin: active almost everywhere
        c = configuration(FIG, pose)
        if task.error(c)[0] <= 1e-3:
            continue
        _fd_check(task, pose, atol=1e-5)
        checked += 1
    assert checked >= 10


def test_balance_error_is_the_missing_margin() -> None:
    rest = FIG.rest_pose()
    hull = support_from_feet(FIG, ["foot_l", "foot_r"], rest, UP)
    c = configuration(FIG, rest)
    from animkit.ik.tasks import com_jacobian

    m = polygon_margin(hull, ground_basis(UP) @ com_jacobian(FIG, c.body, c.state)[0])
    assert Balance(support=hull, basis=ground_basis(UP), margin=m + 0.05).error(c)[0] == pytest.approx(0.05)
    assert Balance(support=hull, basis=ground_basis(UP), margin=m - 0.05).error(c)[0] == 0.0


def test_balance_bound_is_the_margin_and_its_differences() -> None:
    """Balance as an inequality: its row is −∂m/∂θ (central differences of the margin m of the ground-projected
    centre of mass), its room m − margin, none farther than BALANCE_BAND inside; the DOFs left out of ``dofs`` (a
    free arm) get zero columns, the others the same ones."""
    from animkit.ik.tasks import BALANCE_BAND, com_jacobian

    rest = FIG.rest_pose()
    hull = support_from_feet(FIG, ["foot_l", "foot_r"], rest, UP)
    B = ground_basis(UP)

    def margin(pose: np.ndarray) -> float:
        c = configuration(FIG, pose)
        return polygon_margin(hull, B @ com_jacobian(FIG, c.body, c.state)[0])

    pose = rest.copy()
    pose[FIG.dof_names.index("hips.rx")] = 0.4  # leaning forward: the centre of mass near the toes' edge
    m = margin(pose)
    task = Balance(support=hull, basis=B, margin=m - 0.01)
    J, room = task.bounds(configuration(FIG, pose))
    assert room == pytest.approx([0.01])
    h = 1e-6
    fd = np.array([(margin(pose + h * e) - margin(pose - h * e)) / (2 * h) for e in np.eye(FIG.dof_count)])
    np.testing.assert_allclose(J[0], -fd, atol=1e-6)
    assert np.abs(fd).max() > 0.05
    assert Balance(support=hull, basis=B, margin=m - BALANCE_BAND - 0.01).bounds(configuration(FIG, pose)) is None
    arm = [FIG.dof_names.index(n) for n in ("shoulder_l.rx", "shoulder_l.rz", "elbow_l.rx")]
    kept = tuple(d for d in range(FIG.dof_count) if d not in arm)
    Jk, _ = Balance(support=hull, basis=B, margin=m - 0.01, dofs=kept).bounds(configuration(FIG, pose))
    assert np.all(Jk[0, arm] == 0) and np.abs(J[0, arm]).max() > 1e-3
    np.testing.assert_array_equal(Jk[0, list(kept)], J[0, list(kept)])


def test_reach_error_is_the_distance_and_the_angle() -> None:
    rest = FIG.rest_pose()
    c = configuration(FIG, rest)
    i = c.node("hand_r")
    p, R = c.state.p[i], c.state.R[i]
    turn = matrix_from_rotation_vector([0.0, 0.0, 0.7])
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = turn @ R, p + [0.3, 0.4, 0.0]
    e = Reach(effector="hand_r", target=T).error(c)
    assert np.linalg.norm(e[:3]) == pytest.approx(0.5)
    assert np.linalg.norm(e[3:]) == pytest.approx(0.7)
    assert Plant(node="hand_r").resolved(c).error(c) == pytest.approx(np.zeros(6), abs=1e-12)


def test_left_jacobian_inverse_is_the_log_maps_derivative() -> None:
    rng = np.random.default_rng(0)
    for phi in [rng.normal(size=3), np.array([1e-6, 0, 0]), np.array([0.0, 2.5, 1.0])]:
        R = matrix_from_rotation_vector(phi)
        J = np.stack([(rotation_vector_from_matrix(matrix_from_rotation_vector(h * np.eye(3)[k]) @ R) -
                       rotation_vector_from_matrix(matrix_from_rotation_vector(-h * np.eye(3)[k]) @ R)) / (2 * h)
                      for k in range(3) for h in [1e-6]], axis=1)
        np.testing.assert_allclose(left_jacobian_inverse(phi), J, atol=1e-6)


def test_bad_tasks_raise() -> None:
    with pytest.raises(IKError, match="weight"):
        Reach(effector="hand_r", weight=-1.0)
    with pytest.raises(IKError, match="target"):
        Reach(effector="hand_r", target=[0, 1])
    with pytest.raises(IKError, match="no target"):
        Reach(effector="hand_r").error(configuration(FIG, FIG.rest_pose()))
    with pytest.raises(IKError, match="hand_x"):
        Reach(effector="hand_x", target=[0, 1, 0]).error(configuration(FIG, FIG.rest_pose()))
    assert math.isfinite(Reach(effector="hand_r", target=[0, 1, 0]).with_weight(2.0).weight)


def test_a_problem_of_reaches_is_the_effector_problem() -> None:
    from animkit.ik import IKProblem

    target = np.asarray(SCENE.reach.target)
    old = IKProblem(FIG, "hand_r", "torso").solve(target)
    new = IKProblem(FIG, "torso", [Reach(effector="hand_r", target=target)]).solve()
    assert new.converged and np.array_equal(old.pose, new.pose)
    other = IKProblem(FIG, "torso", [Reach(effector="hand_r")])
    moved = other.solve(targets={"reach hand_r": target + [0.05, 0.0, 0.0]})
    assert moved.converged
    assert np.linalg.norm(FIG.world(moved.pose)["hand_r"][:3, 3] - target - [0.05, 0, 0]) < 1e-4
    two = IKProblem(FIG, "hips-up", [Reach(effector="hand_r", target=target),
                                     Reach(effector="hand_l", target=target + [0.4, 0.0, 0.0])])
    heavy = two.solve(weights={"reach hand_l": 4.0})
    assert two.solve().converged and heavy.converged
    with pytest.raises(IKError, match="reach hand_r"):
        two.solve(targets={"reach hand_x": target})


def test_a_problem_with_plant_gaze_and_posture_meets_its_goals() -> None:
    from animkit.ik import LM, IKProblem

    target = np.asarray(SCENE.reach.target)
    tasks = [Reach(effector="hand_r", target=target), Plant(node="foot_l"), Plant(node="foot_r"),
             Gaze(head="head", forward=(0.0, 0.0, 1.0), target=target, weight=1e-3),
             Posture(weight=1e-4)]
    problem = IKProblem(FIG, "whole-body", tasks, solver=LM(max_iter=300))
    r = problem.solve()
    assert r.converged and r.position_error < 1e-5
    start = FIG.world(FIG.rest_pose())
    end = FIG.world(r.pose)
    for foot in ("foot_l", "foot_r"):  # planted: the frames held to the tolerance
        node = FIG.effector(foot)
        assert np.linalg.norm(end[node][:3, 3] - start[node][:3, 3]) < 1e-4
    c0 = configuration(FIG, FIG.rest_pose())
    c1 = configuration(FIG, r.pose)
    gaze = problem.task("gaze")
    assert np.linalg.norm(gaze.error(c1)) < np.linalg.norm(gaze.error(c0))  # the head turned toward the target
    with pytest.raises(IKError, match="reach tasks only"):
        IKProblem(FIG, "whole-body", tasks, solver="ccd").solve()
