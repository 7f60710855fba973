"""Ball-joint cones: the swing–twist split and the projection into a cone, against closed forms.

Oracles: R = exp([s]×) R_t(τ) built from a known (s ⊥ t, τ) splits back into (s, τ); the projected direction lies in
the cone and no direction in the cone (a dense sample of its boundary, or the direction itself) is nearer; the
projection is idempotent and leaves a turn inside the cone unchanged; Euler angles re-expressed in the cone give the
projected matrix."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from animkit.errors import SceneError
from animkit.model.joints import Cone, Joint, ball, hinge
from animkit.model.transforms import (
    matrix_about_axis,
    matrix_from_rotation_vector,
    matrix_from_swing_twist,
    swing_twist_from_matrix,
)

unit = st.tuples(*[st.floats(-1, 1)] * 3).map(np.array).filter(lambda v: np.linalg.norm(v) > 0.1).map(
    lambda v: v / np.linalg.norm(v))
angle = st.floats(-math.pi + 1e-3, math.pi - 1e-3)


def _perp(t: np.ndarray, v: np.ndarray) -> np.ndarray:
    """A unit vector ⊥ t: v's part ⊥ t, or t × e for a coordinate axis e when v is (nearly) along t."""
    p = v - t * (t @ v)
    if np.linalg.norm(p) < 1e-6:
        p = np.cross(t, [1.0, 0, 0] if abs(t[0]) < 0.9 else [0, 1.0, 0])
    return p / np.linalg.norm(p)


@given(unit, unit, st.floats(0.0, math.pi - 1e-3), angle)
def test_swing_twist_splits_a_known_product(t, v, sigma, tau):
    n = _perp(t, v)
    R = matrix_about_axis(n, sigma) @ matrix_about_axis(t, tau)  # swing about n ⊥ t after a twist about t
    s, tau2 = swing_twist_from_matrix(R, t)
    assert s @ t == pytest.approx(0.0, abs=1e-9)
    np.testing.assert_allclose(s, n * sigma, atol=1e-7)
    assert tau2 == pytest.approx(tau, abs=1e-7)
    # the swing angle is the angle between t and R t
    assert np.linalg.norm(s) == pytest.approx(math.acos(np.clip(t @ R @ t, -1, 1)), abs=1e-6)


@given(unit, unit, st.floats(0, math.pi))
def test_swing_twist_composes_back_to_any_rotation(t, w, theta):
    R = matrix_about_axis(w, theta)
    s, tau = swing_twist_from_matrix(R, t)
    np.testing.assert_allclose(matrix_from_swing_twist(s, tau, t), R, atol=1e-9)


def test_swing_twist_of_a_half_swing():
    t = np.array([0.0, 1.0, 0.0])
    R = matrix_about_axis(np.array([1.0, 0, 0]), math.pi) @ matrix_about_axis(t, 0.4)  # R t = −t
    s, tau = swing_twist_from_matrix(R, t)
    assert np.linalg.norm(s) == pytest.approx(math.pi) and s @ t == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(matrix_from_swing_twist(s, tau, t), R, atol=1e-9)


def _cone_boundary(t: np.ndarray, half: float, k: int = 720) -> np.ndarray:
    a = _perp(t, np.array([0.3, 0.5, 0.7]))
    b = np.cross(t, a)
    phi = np.linspace(0, 2 * math.pi, k, endpoint=False)[:, None]
    return math.cos(half) * t + math.sin(half) * (np.cos(phi) * a + np.sin(phi) * b)


@given(unit, st.tuples(*[st.floats(-3, 3)] * 3).map(np.array), st.floats(0.05, 3.0),
       st.tuples(st.floats(-3, 0), st.floats(0, 3)))
def test_cone_projection_is_the_nearest_turn_inside(t, rv, half, twist):
    cone = Cone(half, twist, tuple(t))
    R = matrix_from_rotation_vector(rv)
    P = cone.project(R)
    assert bool(cone.contains(P, 1e-9))
    np.testing.assert_allclose(P @ P.T, np.eye(3), atol=1e-9)
    np.testing.assert_allclose(cone.project(P), P, atol=1e-9)  # idempotent
    d, dp = R @ t, P @ t
    ang = math.acos(np.clip(d @ dp, -1, 1))
    inside = math.acos(np.clip(d @ t, -1, 1)) <= half
    if inside:
        assert ang == pytest.approx(0.0, abs=1e-6)  # a swing inside the cone is kept
    else:
        assert math.acos(np.clip(dp @ t, -1, 1)) == pytest.approx(half, abs=1e-7)  # on the cone's rim
        rim = np.arccos(np.clip(_cone_boundary(t, half) @ d, -1, 1)).min()
        assert ang <= rim + 1e-9  # no direction on the rim is nearer
    _, tau = swing_twist_from_matrix(R, t)
    _, tau_p = swing_twist_from_matrix(P, t)
    assert tau_p == pytest.approx(min(max(tau, twist[0]), twist[1]), abs=1e-7)


@given(st.tuples(*[st.floats(-2.5, 2.5)] * 3).map(np.array), st.sampled_from(["zxy", "xyz", "zyx", "yzx"]),
       st.tuples(*[st.floats(-0.5, 0.5)] * 3))
def test_a_ball_joint_projects_its_euler_angles_into_its_cone(q, order, rest):
    j = ball("shoulder", order, rest=list(rest), cone=Cone(math.radians(40), (-0.5, 0.3), (0.0, -1.0, 0.0)))
    Ar = j.rest_rotation()
    q2 = j.project_to_cone(q)
    A, A2 = j.matrix(q)[:3, :3], j.matrix(q2)[:3, :3]
    assert bool(j.cone.contains(A2 @ Ar.T, 1e-8))
    np.testing.assert_allclose(A2 @ Ar.T, j.cone.project(A @ Ar.T), atol=1e-8)
    np.testing.assert_allclose(j.project_to_cone(q2), q2, atol=1e-9)


def test_cone_declarations_are_checked():
    with pytest.raises(SceneError, match="only a ball joint"):
        Joint("k", "hinge", hinge("k", "x").dofs, cone=Cone(0.5))
    with pytest.raises(SceneError, match="not both"):
        ball("s", limits=(-1.0, 1.0), cone=Cone(0.5))
    with pytest.raises(SceneError, match=r"\[0, 180\]"):
        Cone(4.0)
    with pytest.raises(SceneError, match="twist"):
        Cone(0.5, (0.5, -0.5))
    with pytest.raises(SceneError, match="axis is not set"):
        Cone(0.5).project(np.eye(3))
