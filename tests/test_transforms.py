"""Transforms against closed forms, finite differences and round trips."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from animkit.errors import AnimkitError
from animkit.model import transforms as tf

angles = st.floats(-10.0, 10.0, allow_nan=False)
RNG = np.random.default_rng(7)


def test_rotations_match_textbook_matrices() -> None:
    t = 0.3
    c, s = np.cos(t), np.sin(t)
    np.testing.assert_allclose(tf.rotation_x(t)[:3, :3], [[1, 0, 0], [0, c, -s], [0, s, c]])
    np.testing.assert_allclose(tf.rotation_y(t)[:3, :3], [[c, 0, s], [0, 1, 0], [-s, 0, c]])
    np.testing.assert_allclose(tf.rotation_z(t)[:3, :3], [[c, -s, 0], [s, c, 0], [0, 0, 1]])
    np.testing.assert_allclose(tf.translation([1, 2, 3]) @ [0, 0, 0, 1], [1, 2, 3, 1])


@pytest.mark.parametrize("fn", [tf.rotation_x, tf.rotation_y, tf.rotation_z])
def test_every_rotation_is_orthonormal_with_det_one(fn) -> None:
    theta = RNG.uniform(-20, 20, size=(4, 50))
    R = fn(theta)[..., :3, :3]
    assert R.shape == (4, 50, 3, 3)
    np.testing.assert_allclose(np.swapaxes(R, -1, -2) @ R, np.broadcast_to(np.eye(3), R.shape), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=1e-12)


@given(arrays(float, 3, elements=st.floats(-1, 1)).filter(lambda v: np.linalg.norm(v) > 1e-3), angles)
def test_axis_rotation_orthonormal_and_agrees_with_coordinate_axes(axis, theta) -> None:
    a = axis / np.linalg.norm(axis)
    R = tf.rotation_about_axis(a, theta)
    assert tf.is_rigid(R, 1e-10)
    np.testing.assert_allclose(R[:3, :3] @ a, a, atol=1e-12)  # the axis is fixed
    for letter, fn in (("x", tf.rotation_x), ("y", tf.rotation_y), ("z", tf.rotation_z)):
        np.testing.assert_allclose(tf.rotation_about_axis(tf.AXES[letter], theta), fn(theta), atol=1e-12)


@pytest.mark.parametrize(
    "R, dR",
    [
        (tf.rotation_x, tf.drotation_x),
        (tf.rotation_y, tf.drotation_y),
        (tf.rotation_z, tf.drotation_z),
        (lambda t: tf.rotation_about_axis(np.array([0.48, -0.6, 0.64]), t),
         lambda t: tf.drotation_about_axis(np.array([0.48, -0.6, 0.64]), t)),
    ],
)
def test_derivative_against_central_differences(R, dR) -> None:
    h = 1e-6
    for theta in RNG.uniform(-4, 4, 20):
        numeric = (R(theta + h) - R(theta - h)) / (2 * h)
        np.testing.assert_allclose(dR(theta), numeric, atol=1e-8)


@pytest.mark.parametrize("order", tf.EULER_ORDERS)
def test_euler_round_trips_in_every_order(order) -> None:
    a = RNG.uniform(-np.pi, np.pi, (500, 3))
    for mat, inv in ((tf.matrix_from_euler_intrinsic, tf.euler_intrinsic_from_matrix),
                     (tf.matrix_from_euler_extrinsic, tf.euler_extrinsic_from_matrix)):
        R = mat(a, order)
        b = inv(R, order)
        np.testing.assert_allclose(mat(b, order), R, atol=1e-10)
        # away from gimbal lock the angles themselves come back
        if order[0] != order[2]:
            ok = np.abs(np.abs(a[:, 1]) - np.pi / 2) > 0.1
            a_ok = a[ok].copy()
            a_ok[:, 1] = np.clip(a_ok[:, 1], -np.pi / 2, np.pi / 2)
            inside = np.abs(a[ok][:, 1]) < np.pi / 2
            np.testing.assert_allclose(inv(mat(a[ok][inside], order), order), a[ok][inside], atol=1e-9)


@pytest.mark.parametrize("order", tf.EULER_ORDERS)
def test_euler_at_gimbal_lock(order) -> None:
    beta = [0.0, np.pi] if order[0] == order[2] else [np.pi / 2, -np.pi / 2]
    for b in beta:
        a = np.array([0.4, b, -1.1])
        R = tf.matrix_from_euler_intrinsic(a, order)
        np.testing.assert_allclose(tf.matrix_from_euler_intrinsic(tf.euler_intrinsic_from_matrix(R, order), order),
                                   R, atol=1e-10)


def test_intrinsic_is_extrinsic_reversed() -> None:
    a = RNG.uniform(-3, 3, (50, 3))
    np.testing.assert_allclose(tf.matrix_from_euler_intrinsic(a, "zyx"),
                               tf.matrix_from_euler_extrinsic(a[:, ::-1], "xyz"), atol=1e-12)
    # intrinsic "zyx" is R_z R_y R_x, written out
    z, y, x = a[0]
    np.testing.assert_allclose(tf.matrix_from_euler_intrinsic(a[0], "zyx"),
                               (tf.rotation_z(z) @ tf.rotation_y(y) @ tf.rotation_x(x))[:3, :3], atol=1e-12)


def test_quaternion_round_trips_and_matches_euler() -> None:
    q = RNG.normal(size=(1000, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    R = tf.matrix_from_quaternion(q)
    q2 = tf.quaternion_from_matrix(R)
    np.testing.assert_allclose(np.abs(np.sum(q * q2, axis=1)), 1.0, atol=1e-12)  # q and -q are the same turn
    # product of quaternions is product of matrices
    a, b = q[:500], q[500:]
    np.testing.assert_allclose(tf.matrix_from_quaternion(tf.quaternion_multiply(a, b)),
                               tf.matrix_from_quaternion(a) @ tf.matrix_from_quaternion(b), atol=1e-12)
    # quaternion of a rotation about z by t is (cos t/2, 0, 0, sin t/2)
    np.testing.assert_allclose(tf.quaternion_from_matrix(tf.rotation_z(0.8)), [np.cos(0.4), 0, 0, np.sin(0.4)],
                               atol=1e-12)


def test_axis_angle_and_rotation_vector_round_trip_including_pi() -> None:
    axis = RNG.normal(size=(300, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    angle = np.concatenate([RNG.uniform(0, np.pi, 297), [0.0, 1e-9, np.pi]])
    R = tf.matrix_from_axis_angle(axis, angle)
    a2, t2 = tf.axis_angle_from_matrix(R)
    np.testing.assert_allclose(tf.matrix_from_axis_angle(a2, t2), R, atol=1e-9)
    v = tf.rotation_vector_from_matrix(R)
    np.testing.assert_allclose(tf.matrix_from_rotation_vector(v), R, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), angle, atol=1e-8)
    np.testing.assert_allclose(tf.matrix_from_rotation_vector(np.zeros(3)), np.eye(3))


def test_slerp_unit_norm_short_way_and_endpoints() -> None:
    q0 = tf.quaternion_from_axis_angle([0, 0, 1], 0.2)
    q1 = -tf.quaternion_from_axis_angle([0, 0, 1], 1.0)  # the same turn, far hemisphere
    t = np.linspace(0, 1, 11)
    q = tf.quaternion_slerp(q0, q1, t)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-12)
    _, ang = tf.axis_angle_from_quaternion(q)
    np.testing.assert_allclose(ang, 0.2 + 0.8 * t, atol=1e-12)  # the short way, uniform speed


def test_rigid_inverse_and_check() -> None:
    M = tf.rotation_about_axis(np.array([0.0, 0.6, 0.8]), 1.3) @ tf.translation([1.0, -2.0, 0.5])
    np.testing.assert_allclose(tf.invert_rigid(M) @ M, np.eye(4), atol=1e-12)
    assert tf.is_rigid(M)
    S = M.copy()
    S[:3, :3] *= 2
    assert not tf.is_rigid(S)
    assert not tf.is_rigid(np.diag([1.0, 1.0, -1.0, 1.0]))  # a reflection


def test_aligning_z() -> None:
    for d in [[1, 0, 0], [0, -1, 0], [0, 0, -2], [0.3, 0.4, 0.5], [0, 0, 1]]:
        R = tf.matrix_aligning_z_to(d)
        np.testing.assert_allclose(R @ [0, 0, 1], np.asarray(d) / np.linalg.norm(d), atol=1e-12)
        np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-12)


def test_bad_axes_and_orders_are_clear_errors() -> None:
    with pytest.raises(AnimkitError, match="non-zero"):
        tf.axis_vector([0, 0, 0])
    with pytest.raises(AnimkitError, match="unknown axis 'w'"):
        tf.axis_vector("w")
    with pytest.raises(AnimkitError, match="zyx"):
        tf.matrix_from_euler_intrinsic([0, 0, 0], "zyy")


def test_rotation_vector_matches_scipy_including_zero_and_pi() -> None:
    """The one SO(3) log map against scipy's Rotation.as_rotvec (an independent implementation)."""
    from scipy.spatial.transform import Rotation

    axis = RNG.normal(size=(400, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    angle = np.concatenate([RNG.uniform(0, np.pi, 390), [0.0, 1e-13, 1e-7, 1e-3, np.pi - 1e-3, np.pi - 1e-7,
                                                         np.pi - 1e-10, np.pi, np.pi, np.pi]])
    R = tf.matrix_from_axis_angle(axis, angle)
    v = tf.rotation_vector_from_matrix(R)
    ref = Rotation.from_matrix(R).as_rotvec()
    far = angle < np.pi - 1e-6  # at π, v and −v are the same rotation
    np.testing.assert_allclose(v[far], ref[far], atol=1e-9)
    np.testing.assert_allclose(np.abs(np.sum(v[~far] * ref[~far], 1)), angle[~far] ** 2, atol=1e-6)
    np.testing.assert_allclose(tf.matrix_from_rotation_vector(v), R, atol=1e-9)
    assert tf.rotation_vector_from_matrix(R[0]).shape == (3,)


@given(st.lists(st.floats(-4, 4), min_size=3, max_size=3), st.lists(st.floats(-4, 4), min_size=3, max_size=3))
def test_rotation_error_turns_the_current_frame_onto_the_target(a, b) -> None:
    """exp(ω) · R_current = R_target, with ω = rotation_error(R_target, R_current); |ω| ≤ π."""
    Rt, Rc = tf.matrix_from_rotation_vector(a), tf.matrix_from_rotation_vector(b)
    w = tf.rotation_error(Rt, Rc)
    assert np.linalg.norm(w) <= np.pi + 1e-12
    np.testing.assert_allclose(tf.matrix_from_rotation_vector(w) @ Rc, Rt, atol=1e-8)


@given(arrays(np.float64, st.sampled_from([(3,), (6,), (1,), (0,), (2, 3)]),
              elements=st.floats(-1e150, 1e150, allow_nan=False)))
def test_vector_norm_is_numpys_norm_bit_for_bit(v: np.ndarray) -> None:
    """vector_norm(v) == np.linalg.norm(v) exactly (the oracle: NumPy's own), on contiguous arrays and strided views."""
    for x in (v, v[::-1], v.T):
        assert tf.vector_norm(x) == float(np.linalg.norm(x))


def test_identity3_is_eye_and_read_only() -> None:
    assert np.array_equal(tf.IDENTITY3, np.eye(3))
    with pytest.raises(ValueError):
        tf.IDENTITY3[0, 0] = 2.0
