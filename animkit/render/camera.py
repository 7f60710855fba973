"""A pinhole camera: look-at view matrix, OpenGL-style perspective, pixel projection.

Conventions (column vectors, as in :mod:`animkit.model.transforms`):

* ``view_matrix()`` maps world to camera coordinates; the camera looks down its −z axis,
  +x is image right, +y is image up.
* ``projection_matrix()`` maps camera coordinates to clip space; after the divide by ``w``
  the visible volume is the NDC cube ``[−1, 1]³`` (OpenGL).
* Pixel coordinates: ``(0, 0)`` is the *centre* of the top-left pixel, x grows to the right,
  y grows downwards; pixel ``(i, j)`` covers ``[i − ½, i + ½] × [j − ½, j + ½]``, so the whole
  image spans ``[−½, W − ½] × [−½, H − ½]``.
* Depth is the view depth ``d = −z_cam`` (distance along the viewing axis), positive in front
  of the camera.

Scenes are Y-up (humanoids, BVH) or Z-up (URDF robots); every helper takes ``up="y"|"z"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import RenderError, unknown_name

__all__ = ["UpAxis", "ViewName", "VIEWS", "Camera", "look_at", "orbit", "orbit_offset", "fit_camera", "up_vector",
           "view_angles", "follow_cameras", "horizontal"]

Array = NDArray[np.float64]
UpAxis = Literal["y", "z"]
Vec3 = tuple[float, float, float]
_UP_AXES: tuple[UpAxis, ...] = ("y", "z")
ViewName = Literal["front", "side", "top", "three-quarter"]
# (azimuth, elevation) in degrees of the named views (see orbit_offset): azimuth 0 looks from +z (Y-up; −y when
# Z-up), where a humanoid facing +z shows its front; 90 from +x, its left side; top from just short of overhead.
VIEWS: dict[str, tuple[float, float]] = {"front": (0.0, 8.0), "side": (90.0, 8.0), "top": (0.0, 89.0),
                                         "three-quarter": (30.0, 15.0)}


def up_vector(up: UpAxis | ArrayLike) -> Array:
    """Unit up vector: ``"y"`` → (0, 1, 0), ``"z"`` → (0, 0, 1), or a normalised 3-vector."""
    if isinstance(up, str):
        if up not in _UP_AXES:
            raise RenderError(unknown_name("up axis", up, _UP_AXES))
        return np.array([0.0, 1.0, 0.0]) if up == "y" else np.array([0.0, 0.0, 1.0])
    v = _vec3("up", up)
    n = float(np.linalg.norm(v))
    if n < 1e-12:
        raise RenderError(f"up must be a non-zero 3-vector, got {up!r}")
    return v / n


def _vec3(name: str, value: ArrayLike) -> Array:
    v = np.asarray(value, dtype=float)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise RenderError(f"{name} must be 3 finite numbers, got {value!r}")
    return v


@dataclass(frozen=True)
class Camera:
    """A pinhole camera: ``x_pix = viewport(P · V · x_world)``.

    ``eye``, ``target`` and ``up`` are world-space 3-tuples; ``fov_y_deg`` is the full vertical
    field of view; ``width × height`` the image size in pixels; ``near < far`` the clip planes
    (view depths, scene units).
    """

    eye: Vec3
    target: Vec3
    up: Vec3
    fov_y_deg: float
    width: int
    height: int
    near: float
    far: float

    def __post_init__(self) -> None:
        eye, target, up = _vec3("eye", self.eye), _vec3("target", self.target), _vec3("up", self.up)
        object.__setattr__(self, "eye", tuple(float(x) for x in eye))
        object.__setattr__(self, "target", tuple(float(x) for x in target))
        object.__setattr__(self, "up", tuple(float(x) for x in up))
        if not (0.0 < float(self.fov_y_deg) < 180.0):
            raise RenderError(f"fov_y_deg must be in (0, 180), got {self.fov_y_deg!r}")
        if int(self.width) != self.width or int(self.height) != self.height or self.width < 1 \
                or self.height < 1:
            raise RenderError(f"image size must be positive integers, got {self.width!r}x{self.height!r}")
        object.__setattr__(self, "width", int(self.width))
        object.__setattr__(self, "height", int(self.height))
        if not (0.0 < self.near < self.far < math.inf):
            raise RenderError(f"need 0 < near < far < inf, got near={self.near!r}, far={self.far!r}")
        f = target - eye
        if np.linalg.norm(f) < 1e-12:
            raise RenderError("eye and target coincide; the viewing direction is undefined")
        if np.linalg.norm(np.cross(f, up)) < 1e-9 * np.linalg.norm(f) * np.linalg.norm(up):
            raise RenderError("the viewing direction is parallel to up; choose another up or elevation")

    @property
    def aspect(self) -> float:
        """Image aspect ratio ``W / H``."""
        return self.width / self.height

    def basis(self) -> tuple[Array, Array, Array]:
        """Camera axes in world coordinates: ``s = f̂ × û`` (right), ``u = s × f̂`` (up), ``f̂`` (forward)."""
        cached = self.__dict__.get("_axes")  # computed once (the camera is frozen), handed out as copies
        if cached is None:
            cached = self._basis()
            object.__setattr__(self, "_axes", cached)
        return cached[0].copy(), cached[1].copy(), cached[2].copy()

    def _basis(self) -> tuple[Array, Array, Array]:
        eye, target = np.asarray(self.eye), np.asarray(self.target)
        f = target - eye
        f = f / np.linalg.norm(f)
        s = np.cross(f, np.asarray(self.up))
        s = s / np.linalg.norm(s)
        u = np.cross(s, f)
        return s, u, f

    def view_matrix(self) -> Array:
        """V = [[s, −s·e], [u, −u·e], [−f, f·e], [0, 0, 0, 1]]: world → camera (looks down −z)."""
        cached = self.__dict__.get("_view")  # the camera is frozen: computed once, handed out as copies
        if cached is None:
            cached = self._view_matrix()
            object.__setattr__(self, "_view", cached)
        return cached.copy()

    def _view_matrix(self) -> Array:
        s, u, f = self.basis()
        eye = np.asarray(self.eye)
        V = np.eye(4)
        V[0, :3], V[1, :3], V[2, :3] = s, u, -f
        V[:3, 3] = -V[:3, :3] @ eye
        return V

    def projection_matrix(self) -> Array:
        """P = [[c/a, 0, 0, 0], [0, c, 0, 0], [0, 0, (f+n)/(n−f), 2fn/(n−f)], [0, 0, −1, 0]], c = cot(θ/2).

        θ is the vertical field of view, a = W / H; OpenGL clip space (NDC z in [−1, 1]).
        """
        c = 1.0 / math.tan(math.radians(self.fov_y_deg) / 2.0)
        n, f = self.near, self.far
        P = np.zeros((4, 4))
        P[0, 0] = c / self.aspect
        P[1, 1] = c
        P[2, 2] = (f + n) / (n - f)
        P[2, 3] = 2.0 * f * n / (n - f)
        P[3, 2] = -1.0
        return P

    def focal_px(self) -> float:
        """Focal length in pixels: ``f_px = (H / 2) · cot(fov_y / 2)``."""
        return 0.5 * self.height / math.tan(math.radians(self.fov_y_deg) / 2.0)

    def project(self, points: ArrayLike) -> tuple[Array, Array]:
        """x_pix = ((x_ndc + 1)/2) W − ½, y_pix = ((1 − y_ndc)/2) H − ½, depth = −z_cam.

        ``points`` has shape ``(..., 3)``; returns pixel coordinates ``(..., 2)`` (pixel (0, 0) is
        the centre of the top-left pixel) and view depth ``(...)``. Points behind the camera
        (depth ≤ 0) get non-finite or meaningless pixel coordinates; check ``depth``.
        """
        p = np.asarray(points, dtype=float)
        if p.shape[-1:] != (3,):
            raise RenderError(f"points must have shape (..., 3), got {p.shape}")
        V = self.view_matrix()
        pc = p @ V[:3, :3].T + V[:3, 3]
        depth = -pc[..., 2]
        fp = self.focal_px()
        with np.errstate(divide="ignore", invalid="ignore"):
            x = 0.5 * self.width - 0.5 + fp * pc[..., 0] / depth
            y = 0.5 * self.height - 0.5 - fp * pc[..., 1] / depth
        return np.stack([x, y], axis=-1), depth

    def with_size(self, width: int, height: int) -> Camera:
        """The same camera rendering a ``width × height`` image (same vertical field of view)."""
        return Camera(self.eye, self.target, self.up, self.fov_y_deg, width, height, self.near, self.far)


def look_at(eye: ArrayLike, target: ArrayLike, up: UpAxis | ArrayLike = "y", *, fov_y_deg: float = 40.0,
            width: int = 640, height: int = 480, near: float = 0.05, far: float = 1000.0) -> Camera:
    """Camera at ``eye`` looking at ``target`` with ``up`` (``"y"``, ``"z"`` or a vector) pointing up."""
    u = up_vector(up)
    return Camera(tuple(_vec3("eye", eye)), tuple(_vec3("target", target)), tuple(u), fov_y_deg,
                  width, height, near, far)


def orbit_offset(azimuth_deg: float, elevation_deg: float, up: UpAxis = "y") -> Array:
    """Unit eye direction from the target.

    Y-up: ``(cos e · sin a, sin e, cos e · cos a)`` (a = 0 looks from +z, a = 90° from +x).
    Z-up: ``(cos e · sin a, −cos e · cos a, sin e)`` (a = 0 looks from −y, a = 90° from +x).
    """
    a, e = math.radians(azimuth_deg), math.radians(elevation_deg)
    if up == "y":
        return np.array([math.cos(e) * math.sin(a), math.sin(e), math.cos(e) * math.cos(a)])
    if up == "z":
        return np.array([math.cos(e) * math.sin(a), -math.cos(e) * math.cos(a), math.sin(e)])
    raise RenderError(unknown_name("up axis", str(up), _UP_AXES))


def orbit(target: ArrayLike, distance: float, azimuth_deg: float = 30.0, elevation_deg: float = 15.0,
          up: UpAxis = "y", *, fov_y_deg: float = 40.0, width: int = 640, height: int = 480,
          near: float | None = None, far: float | None = None) -> Camera:
    """eye = target + distance · d(azimuth, elevation) (see :func:`orbit_offset`); |elevation| < 90°.

    ``near``/``far`` default to ``distance / 100`` and ``distance · 100``.
    """
    if not (distance > 0.0 and math.isfinite(distance)):
        raise RenderError(f"distance must be positive and finite, got {distance!r}")
    if not abs(elevation_deg) < 90.0:
        raise RenderError(f"elevation_deg must be in (-90, 90), got {elevation_deg!r}")
    t = _vec3("target", target)
    eye = t + distance * orbit_offset(azimuth_deg, elevation_deg, up)
    return look_at(eye, t, up, fov_y_deg=fov_y_deg, width=width, height=height,
                   near=distance / 100.0 if near is None else near,
                   far=distance * 100.0 if far is None else far)


def fit_camera(points: ArrayLike, up: UpAxis = "y", *, width: int = 640, height: int = 480,
               fov_y_deg: float = 40.0, azimuth_deg: float = 30.0, elevation_deg: float = 15.0,
               margin: float = 0.05, min_radius: float = 1e-3, distance: float | None = None) -> Camera:
    """distance = r (1 + margin) / sin θ, θ = min(fov_y, fov_x) / 2: frames the bounding sphere of ``points``.

    ``points`` is ``(P, 3)`` (or ``(..., 3)``): pass every point of the whole clip to get one
    camera for all frames (no jitter). The sphere is centred on the bounding-box centre; the
    cone of half-angle θ around the viewing axis lies inside the view frustum, so every point
    projects inside the image. A cloud smaller than ``min_radius`` is framed as a sphere of
    radius ``min_radius``.
    """
    p = np.asarray(points, dtype=float).reshape(-1, 3) if np.ndim(points) >= 1 else None
    if p is None or p.shape[0] == 0:
        raise RenderError("fit_camera needs at least one point, shaped (P, 3)")
    if not np.all(np.isfinite(p)):
        raise RenderError("fit_camera: points contain NaN or inf")
    if not margin >= 0.0:
        raise RenderError(f"margin must be >= 0, got {margin!r}")
    if int(width) < 1 or int(height) < 1:
        raise RenderError(f"image size must be positive, got {width!r}x{height!r}")
    centre = 0.5 * (p.min(axis=0) + p.max(axis=0))
    radius = max(float(np.max(np.linalg.norm(p - centre, axis=1))), min_radius)
    half_y = math.radians(fov_y_deg) / 2.0
    half_x = math.atan(math.tan(half_y) * width / height)
    r = radius * (1.0 + margin)
    if distance is None:
        distance = r / math.sin(min(half_x, half_y))
    elif not (distance > 0.0 and math.isfinite(distance)):
        raise RenderError(f"distance must be positive and finite, got {distance!r}")
    return orbit(centre, distance, azimuth_deg, elevation_deg, up, fov_y_deg=fov_y_deg, width=width,
                 height=height, near=max(distance - r, 0.01 * distance) * 0.5, far=(distance + r) * 2.0)


def view_angles(name: str) -> tuple[float, float]:
    """(azimuth, elevation) in degrees of a named view: front, side, top or three-quarter."""
    try:
        return VIEWS[name]
    except KeyError:
        raise RenderError(unknown_name("view", name, VIEWS)) from None


def horizontal(points: ArrayLike, up: UpAxis = "y") -> Array:
    """p − (p · û) û: the part of each point (..., 3) in the ground plane."""
    p = np.asarray(points, dtype=float)
    u = up_vector(up)
    return p - (p @ u)[..., None] * u


def follow_cameras(camera: Camera, roots: ArrayLike, up: UpAxis = "y") -> list[Camera]:
    """eyeₖ = eye + h(rₖ), targetₖ = target + h(rₖ), h = the ground-plane part: one camera per frame.

    ``camera`` frames the figure with its root's ground position at the origin; ``roots`` (F, 3) are the
    root's world positions per frame. The camera keeps its height and direction (no bobbing, no turning),
    so the ground grid slides past a walking figure.
    """
    r = np.asarray(roots, dtype=float)
    if r.ndim != 2 or r.shape[1] != 3 or not np.all(np.isfinite(r)):
        raise RenderError(f"roots must be finite, shaped (F, 3); got shape {r.shape}")
    shift = horizontal(r, up)
    eye, target = np.asarray(camera.eye), np.asarray(camera.target)
    return [Camera(tuple(eye + d), tuple(target + d), camera.up, camera.fov_y_deg, camera.width, camera.height,
                   camera.near, camera.far) for d in shift]
