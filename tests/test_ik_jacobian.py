from __future__ import annotations

import numpy as np
import pytest

from animkit.ik import compile_chain, jacobian, rotation_error
from animkit.ik.jacobian import chain_jacobian
from animkit.model.transforms import matrix_from_rotation_vector

from .ik_helpers import load, random_pose, slider_figure


def fd_jacobian(fig, pose, effector, h=1e-6):
    """Central differences of FK: position (p(θ+h) − p(θ−h))/2h, orientation log(R(θ+h) R(θ−h)ᵀ)/2h."""
    D = fig.dof_count
    J = np.zeros((6, D))
    for j in range(D):
        qp, qm = pose.copy(), pose.copy()
        qp[j] += h
        qm[j] -= h
        Wp, Wm = fig.world(qp)[effector], fig.world(qm)[effector]
        J[:3, j] = (Wp[:3, 3] - Wm[:3, 3]) / (2 * h)
        J[3:, j] = rotation_error(Wp[:3, :3], Wm[:3, :3]) / (2 * h)
    return J


def test_jacobian_matches_finite_differences_revolute_and_prismatic():
    fig = slider_figure()
    rng = np.random.default_rng(3)
    kinds = {d.kind for d in fig.dofs}
    assert kinds == {"revolute", "prismatic"}
    for _ in range(5):
        q = rng.uniform(-1.0, 1.0, fig.dof_count)
        J = jacobian(fig, q, "tip", orientation=True)
        np.testing.assert_allclose(J, fd_jacobian(fig, q, "tip"), atol=1e-6)


@pytest.mark.parametrize("scene, eff", [("three_axis_arm", "tip"), ("six_axis_arm", "tool"), ("humanoid", "hand_r")])
def test_jacobian_matches_finite_differences_on_scenes(scene, eff):
    sc = load(scene)
    fig = sc.figure
    q = random_pose(fig, np.arange(fig.dof_count), np.random.default_rng(0))
    np.testing.assert_allclose(jacobian(fig, q, eff, orientation=True), fd_jacobian(fig, q, eff), atol=1e-6)


def test_compiled_chain_jacobian_equals_full_jacobian_columns():
    fig = slider_figure()
    rng = np.random.default_rng(5)
    q = rng.uniform(-1, 1, fig.dof_count)
    movable = np.array([fig.dof_index(n) for n in ("table.tx", "lift.t", "shoulder.rz", "shoulder.ry", "elbow.r")])
    model = compile_chain(fig, q, movable, ["tip"])
    fr = model.frames(q[model.dofs][None])
    Jc = chain_jacobian(model, fr, True)[0]
    Jf = jacobian(fig, q, "tip", dofs=[fig.dof_names[i] for i in movable], orientation=True)
    np.testing.assert_allclose(Jc, Jf[:, model.dofs], atol=1e-12)
    # the frozen DOFs have zero columns; the compiled chain puts the effector where FK does
    others = np.setdiff1d(np.arange(fig.dof_count), movable)
    assert np.all(Jf[:, others] == 0)
    W = fig.world(q)["tip"]
    np.testing.assert_allclose(fr.p[0, 0], W[:3, 3], atol=1e-12)
    np.testing.assert_allclose(fr.R[0, 0], W[:3, :3], atol=1e-12)


def test_several_effectors_stack_rows():
    sc = load("humanoid")
    fig = sc.figure
    q = random_pose(fig, np.arange(fig.dof_count), np.random.default_rng(1))
    J = jacobian(fig, q, ["hand_r", "hand_l"])
    np.testing.assert_allclose(J[:3], jacobian(fig, q, "hand_r"))
    np.testing.assert_allclose(J[3:], jacobian(fig, q, "hand_l"))


def test_rotation_error_is_a_rotation_vector_even_near_pi():
    rng = np.random.default_rng(2)
    for v in list(rng.normal(size=(20, 3))) + [np.array([np.pi, 0, 0]), np.array([0, 0, np.pi - 1e-9]),
                                                 np.zeros(3), np.array([1e-14, 0, 0])]:
        n = np.linalg.norm(v)
        if n > np.pi:
            v = v / n * (2 * np.pi - n) * -1
        R = matrix_from_rotation_vector(v)
        Rc = matrix_from_rotation_vector(rng.normal(size=3))
        w = rotation_error(R @ Rc, Rc)
        assert np.all(np.isfinite(w))
        np.testing.assert_allclose(matrix_from_rotation_vector(w), R, atol=1e-8)
