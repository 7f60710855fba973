from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from animkit.errors import RenderError
from animkit.render.camera import Camera, fit_camera, look_at, orbit


def by_hand(cam: Camera, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """pixel = viewport(P V p / w), the OpenGL pipeline written out."""
    h = np.concatenate([p, np.ones((len(p), 1))], axis=1)
    clip = (cam.projection_matrix() @ cam.view_matrix() @ h.T).T
    ndc = clip[:, :3] / clip[:, 3:]
    x = (ndc[:, 0] + 1) / 2 * cam.width - 0.5
    y = (1 - ndc[:, 1]) / 2 * cam.height - 0.5
    return np.stack([x, y], axis=1), ndc[:, 2]


def test_project_agrees_with_projection_matrix_by_hand() -> None:
    cam = look_at((3.0, 2.0, 5.0), (0.2, 0.5, -0.3), "y", fov_y_deg=50, width=320, height=200, near=0.1,
                  far=50)
    pts = np.random.default_rng(1).uniform(-2, 2, (50, 3))
    xy, depth = cam.project(pts)
    xy2, ndc_z = by_hand(cam, pts)
    np.testing.assert_allclose(xy, xy2, atol=1e-9)
    # NDC z is the OpenGL function of the view depth d: z = (f+n)/(f-n) - 2fn/((f-n) d)
    n, f = cam.near, cam.far
    np.testing.assert_allclose(ndc_z, (f + n) / (f - n) - 2 * f * n / ((f - n) * depth), atol=1e-9)
    # and the depth is the distance along the viewing axis
    s, u, fw = cam.basis()
    np.testing.assert_allclose(depth, (pts - np.array(cam.eye)) @ fw, atol=1e-9)


def test_view_matrix_is_rigid_and_looks_down_minus_z() -> None:
    cam = look_at((1.0, 2.0, 3.0), (0.0, 0.0, 0.0), "z")
    V = cam.view_matrix()
    np.testing.assert_allclose(V[:3, :3] @ V[:3, :3].T, np.eye(3), atol=1e-12)
    assert np.linalg.det(V[:3, :3]) == pytest.approx(1.0)
    np.testing.assert_allclose(V @ [1, 2, 3, 1], [0, 0, 0, 1], atol=1e-12)
    d = math.sqrt(14)
    np.testing.assert_allclose(V @ [0, 0, 0, 1], [0, 0, -d, 1], atol=1e-12)


@pytest.mark.parametrize("up", ["y", "z"])
@pytest.mark.parametrize("size", [(640, 480), (101, 333)])
def test_target_projects_to_image_centre_and_up_is_up(up: str, size: tuple[int, int]) -> None:
    cam = orbit((0.5, -1.0, 2.0), 4.0, 35.0, 20.0, up, width=size[0], height=size[1])  # type: ignore[arg-type]
    xy, depth = cam.project(np.array([cam.target]))
    np.testing.assert_allclose(xy[0], [(size[0] - 1) / 2, (size[1] - 1) / 2], atol=1e-9)
    assert depth[0] == pytest.approx(4.0)
    assert np.linalg.norm(np.subtract(cam.eye, cam.target)) == pytest.approx(4.0)
    above = np.array(cam.target) + 0.1 * (np.array([0, 1, 0]) if up == "y" else np.array([0, 0, 1]))
    xy_up, _ = cam.project(above[None])
    assert xy_up[0, 1] < xy[0, 1]  # image y grows downwards


def test_orbit_azimuth_convention() -> None:
    # y-up: azimuth 0 looks from +z, 90 from +x; z-up: azimuth 0 looks from -y, 90 from +x
    np.testing.assert_allclose(orbit((0, 0, 0), 2.0, 0.0, 0.0, "y").eye, (0, 0, 2), atol=1e-12)
    np.testing.assert_allclose(orbit((0, 0, 0), 2.0, 90.0, 0.0, "y").eye, (2, 0, 0), atol=1e-12)
    np.testing.assert_allclose(orbit((0, 0, 0), 2.0, 0.0, 0.0, "z").eye, (0, -2, 0), atol=1e-12)
    np.testing.assert_allclose(orbit((0, 0, 0), 2.0, 90.0, 0.0, "z").eye, (2, 0, 0), atol=1e-12)


clouds = arrays(np.float64, st.tuples(st.integers(1, 40), st.just(3)),
                elements=st.floats(-100, 100, allow_nan=False, allow_infinity=False))


@given(pts=clouds, az=st.floats(-180, 180), el=st.floats(-80, 80), up=st.sampled_from(["y", "z"]),
       w=st.integers(16, 800), h=st.integers(16, 800), fov=st.floats(10, 120),
       scale=st.sampled_from([1e-3, 1.0, 1e3]))
def test_fit_camera_keeps_every_point_in_view(pts: np.ndarray, az: float, el: float, up: str, w: int, h: int,
                                              fov: float, scale: float) -> None:
    pts = pts * scale
    cam = fit_camera(pts, up, width=w, height=h, fov_y_deg=fov, azimuth_deg=az,  # type: ignore[arg-type]
                     elevation_deg=el, margin=0.0)
    xy, depth = cam.project(pts)
    assert np.all(depth > cam.near) and np.all(depth < cam.far)
    tol = 1e-6 * max(w, h)
    assert np.all(xy[:, 0] >= -0.5 - tol) and np.all(xy[:, 0] <= w - 0.5 + tol)
    assert np.all(xy[:, 1] >= -0.5 - tol) and np.all(xy[:, 1] <= h - 0.5 + tol)


def test_fit_camera_is_tight_for_a_sphere() -> None:
    # points on a sphere: the extreme one touches the margin-free frame in the short direction
    rng = np.random.default_rng(0)
    p = rng.normal(size=(4000, 3))
    p /= np.linalg.norm(p, axis=1, keepdims=True)
    cam = fit_camera(p, "y", width=400, height=300, margin=0.0)
    xy, _ = cam.project(p)
    assert xy[:, 1].min() < 10 and xy[:, 1].max() > 289


def test_camera_errors() -> None:
    with pytest.raises(RenderError, match="expected one of: 'y', 'z'"):
        orbit((0, 0, 0), 1.0, up="x")  # type: ignore[arg-type]
    with pytest.raises(RenderError, match="coincide"):
        look_at((1, 1, 1), (1, 1, 1))
    with pytest.raises(RenderError, match="parallel"):
        look_at((0, 5, 0), (0, 0, 0), "y")
    with pytest.raises(RenderError, match="near"):
        look_at((0, 0, 5), (0, 0, 0), near=0.0)
    with pytest.raises(RenderError, match="at least one point"):
        fit_camera(np.zeros((0, 3)))
    with pytest.raises(RenderError, match="NaN"):
        fit_camera(np.array([[0.0, np.nan, 0.0]]))
    with pytest.raises(RenderError, match="elevation"):
        orbit((0, 0, 0), 1.0, 0.0, 90.0)


def test_camera_is_a_frozen_value() -> None:
    a = look_at(np.array([0.0, 1.0, 5.0]), np.zeros(3))
    b = look_at((0, 1, 5), (0, 0, 0))
    assert a == b and hash(a) == hash(b)
    with pytest.raises(AttributeError):
        a.width = 3  # type: ignore[misc]
