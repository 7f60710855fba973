"""Overlays drawn over a finished frame: anti-aliased markers (discs, crosses), the ground grid, and the sparse
:class:`Backdrop` a camera's frames are drawn over."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import RenderError, unknown_name
from animkit.jit import enabled as jit_enabled
from animkit.jit import kernel, read_only
from animkit.render.camera import Camera, UpAxis, up_vector
from animkit.render.image import Image, _camera_for, _check_depth, _check_image, rgb8, solid_image
from animkit.render.segments import _blended, _coverage_jit, _coverage_kernel, _walk, draw_segments, segment_coverage

MarkerShape = Literal["disc", "cross"]
_MARKER_SHAPES: tuple[MarkerShape, ...] = ("disc", "cross")

__all__ = ["MarkerShape", "draw_markers", "disc_coverage", "draw_grid", "grid_segments", "Backdrop", "grid_backdrop"]


def _stamp(img: Image, xy: NDArray[np.float64], d: NDArray[np.float64], radius: float,
           color: NDArray[np.uint8], depth: NDArray[np.float32] | None, bias: float, inplace: bool = False) -> Image:
    """α(p) = max_k clip(r + ½ − |p − x_k|, 0, 1) over discs at ``xy``; out = (1 − α) img + α c (into ``img`` when
    ``inplace``)."""
    out = img if inplace else img.copy()
    touched, cov = _disc_coverage(xy, d, radius, img.shape[:2], depth, bias)
    if len(touched):
        a = cov[:, None]
        o = out.reshape(-1, 3)
        o[touched] = np.round(o[touched] * (1.0 - a) + color.astype(np.float32) * a).astype(np.uint8)
    return out


def _disc_coverage(xy: NDArray[np.float64], d: NDArray[np.float64], radius: float, shape: tuple[int, ...],
                   depth: NDArray[np.float32] | None, bias: float) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """(flat pixels, α) of discs of ``radius`` at ``xy`` in an image of ``shape`` (H, W): each pixel once, with the
    largest coverage of the discs over it; with ``depth``, only where the disc's depth ``d`` is in front."""
    H, W = shape
    if len(xy) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    k = int(math.ceil(radius + 1.0))
    g = np.arange(-k, k + 1)
    gx = np.tile(g, len(g))
    gy = np.repeat(g, len(g))
    cx, cy = np.round(xy[:, 0]), np.round(xy[:, 1])
    px = (cx[:, None] + gx).astype(np.int64)
    py = (cy[:, None] + gy).astype(np.int64)
    dist = np.hypot(px - xy[:, 0, None], py - xy[:, 1, None])
    cov = np.clip(radius + 0.5 - dist, 0.0, 1.0)
    ok = (cov > 0) & (px >= 0) & (px < W) & (py >= 0) & (py < H)
    flat = py * W + px
    if depth is not None:
        zb = depth.ravel()[np.where(ok, flat, 0)]
        ok &= d[:, None] <= zb * (1.0 + bias)
    pix: NDArray[np.int64] = flat[ok]
    alpha: NDArray[np.float32] = cov[ok].astype(np.float32)
    if len(xy) > 1 and len(pix):  # discs may overlap: α = the largest coverage per pixel, each pixel once
        order = np.lexsort((-alpha, pix))
        pix, alpha = pix[order], alpha[order]
        first = np.r_[True, pix[1:] != pix[:-1]]
        pix, alpha = pix[first], alpha[first]
    return pix, alpha


def disc_coverage(camera: Camera, points: ArrayLike, radius_px: float = 5.0) -> tuple[NDArray[np.int64],
                                                                                      NDArray[np.float32]]:
    """(flat pixels, α) of the discs :func:`draw_markers` draws at ``points`` (no depth test): blending them
    (``blend``) draws the same pixels, so a caller drawing fixed markers on many frames covers them once."""
    if not radius_px > 0:
        raise RenderError(f"radius_px must be > 0, got {radius_px!r}")
    xy, d = camera.project(np.asarray(points, dtype=float).reshape(-1, 3))
    front = d >= camera.near
    return _disc_coverage(xy[front], d[front], radius_px, (camera.height, camera.width), None, 0.0)


def draw_markers(image: ArrayLike, camera: Camera, points: ArrayLike, color: ArrayLike = (0.85, 0.1, 0.1),
                 radius_px: float = 5.0, shape: MarkerShape = "disc", depth: ArrayLike | None = None, *,
                 width_px: float = 2.0, depth_bias: float = 5e-3, inplace: bool = False) -> Image:
    """A disc of radius r, or a "+" cross of arm r and stroke ``width_px``, centred on each projected point.

    Points behind the near plane are skipped; with ``depth`` a marker is hidden where its
    centre's view depth is behind the buffer. Returns a new image (``inplace``: draws into ``image``).
    """
    img = _check_image(image)
    zb = _check_depth(depth, img)
    if shape not in _MARKER_SHAPES:
        raise RenderError(unknown_name("marker shape", str(shape), _MARKER_SHAPES))
    if not radius_px > 0:
        raise RenderError(f"radius_px must be > 0, got {radius_px!r}")
    p = np.asarray(points, dtype=float).reshape(-1, 3)
    cam = _camera_for(camera, img)
    xy, d = cam.project(p)
    front = d >= cam.near
    xy, d = xy[front], d[front]
    if shape == "disc":
        return _stamp(img, xy, d, radius_px, rgb8(color), zb, depth_bias, inplace)
    n = int(math.ceil(2.0 * radius_px / 0.5)) + 1
    t = np.linspace(-radius_px, radius_px, n)
    horiz = np.stack([xy[:, None, 0] + t, np.broadcast_to(xy[:, None, 1], (len(xy), n))], axis=-1)
    vert = np.stack([np.broadcast_to(xy[:, None, 0], (len(xy), n)), xy[:, None, 1] + t], axis=-1)
    pts = np.concatenate([horiz, vert], axis=1).reshape(-1, 2)
    return _stamp(img, pts, np.repeat(d, 2 * n), 0.5 * width_px, rgb8(color), zb, depth_bias, inplace)


def draw_grid(image: ArrayLike, camera: Camera, up: UpAxis = "y", *, spacing: float = 1.0,
              extent: float = 5.0, color: ArrayLike = (0.75, 0.75, 0.75), width_px: float = 1.0,
              depth: ArrayLike | None = None, depth_bias: float = 5e-3,
              center: ArrayLike = (0.0, 0.0, 0.0), jit: bool = False) -> Image:
    """Lines u = k·spacing and v = k·spacing, |u − c_u|, |v − c_v| ≤ extent, in the plane through the origin ⟂ up.

    Y-up: the xz plane; Z-up: the xy plane. ``center`` (its in-plane part, snapped to the spacing) moves the
    patch of grid, not the lines: they stay on multiples of ``spacing``. Returns a new image.
    """
    starts, ends = grid_segments(up, spacing, extent, center)
    return draw_segments(image, camera, starts, ends, color, width_px, depth, depth_bias=depth_bias, jit=jit)


def grid_segments(up: UpAxis, spacing: float, extent: float, center: ArrayLike
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The grid's lines as segments (starts, ends), (2 (2k + 1), 3) each: what :func:`draw_grid` draws."""
    if not (spacing > 0 and extent > 0):
        raise RenderError(f"spacing and extent must be > 0, got {spacing!r}, {extent!r}")
    axis = up_vector(up)
    ua, va = (np.array([1.0, 0, 0]), np.array([0, 0, 1.0])) if axis[1] else \
        (np.array([1.0, 0, 0]), np.array([0, 1.0, 0]))
    k = int(math.floor(extent / spacing + 1e-9))
    if 2 * k + 1 > 10_000:
        raise RenderError(f"grid of {2 * k + 1} lines per direction: increase spacing")
    cen = np.asarray(center, dtype=float)
    cu = round(float(cen @ ua) / spacing) * spacing
    cv = round(float(cen @ va) / spacing) * spacing
    o = cu * ua + cv * va
    c = np.arange(-k, k + 1) * spacing
    s1 = o + c[:, None] * ua - extent * va
    e1 = o + c[:, None] * ua + extent * va
    s2 = o + c[:, None] * va - extent * ua
    e2 = o + c[:, None] * va + extent * ua
    return np.concatenate([s1, s2]), np.concatenate([e1, e2])


_RGB = np.dtype((np.void, 3))  # one pixel of an (..., 3) uint8 image


@dataclass(frozen=True, eq=False)
class Backdrop:
    """What frames are drawn over, kept sparse: the image is ``background`` everywhere but at the flat ``pixels``
    (N,), which hold ``colors`` (N, 3) uint8. The ground grid touches a tenth of a frame's pixels, so a camera's
    backdrop costs no image of its own: each frame fills its background and writes these pixels
    (:meth:`paint`), the same bytes as copying the full image. Build it with :func:`grid_backdrop`.
    """

    height: int
    width: int
    background: NDArray[np.uint8]  # (3,)
    pixels: NDArray[np.integer]
    colors: NDArray[np.uint8]

    def paint(self, flat: NDArray[np.uint8], jit: bool = False) -> None:
        """Write the backdrop into ``flat`` (H·W, 3), already filled with the background (:func:`solid_image`)."""
        if jit and _scatter_jit is not None and jit_enabled():
            _scatter_jit(flat, read_only(self.pixels), read_only(self.colors))  # one signature
        else:  # whole pixels as 3-byte items: 4x faster than assigning rows of three
            np.put(flat.view(_RGB).reshape(-1), self.pixels, np.ascontiguousarray(self.colors).view(_RGB).reshape(-1))

    def image(self) -> Image:
        """The full (H, W, 3) image."""
        img = solid_image(self.height, self.width, self.background)
        self.paint(img.reshape(-1, 3))
        return img


def _scatter_loop(flat: NDArray[np.uint8], pixels: NDArray[np.integer], colors: NDArray[np.uint8]
                  ) -> None:  # pragma: no cover - compiled; flat[pixels] = colors is its oracle
    """flat[pixels[j]] = colors[j]."""
    for j in range(len(pixels)):
        p = pixels[j]
        flat[p, 0] = colors[j, 0]
        flat[p, 1] = colors[j, 1]
        flat[p, 2] = colors[j, 2]


_scatter_jit = kernel(_scatter_loop)


def grid_backdrop(camera: Camera, up: UpAxis = "y", *, background: ArrayLike = (1.0, 1.0, 1.0),
                  spacing: float = 1.0, extent: float = 5.0, color: ArrayLike = (0.75, 0.75, 0.75),
                  width_px: float = 1.0, center: ArrayLike = (0.0, 0.0, 0.0), jit: bool = False) -> Backdrop:
    """:func:`draw_grid` on a plain ``background``, as a :class:`Backdrop`: c_p = round((1 − α_p) b + α_p c) at the
    pixels of coverage α_p > 0 (:func:`segment_coverage`; ``jit``: its compiled kernel), :func:`blend`'s float32
    arithmetic, so ``.image()`` is byte for byte ``draw_grid(solid_image(…), …)``.
    """
    starts, ends = grid_segments(up, spacing, extent, center)
    bg = rgb8(background, "background")
    wk = _walk(camera, starts, ends, width_px)
    if wk is not None and jit and _coverage_jit is not None and jit_enabled():
        # bands of rows: each pixel once, nearly in order, its colour blended as the band is flushed
        pix, _, colors = _coverage_kernel(camera, wk, None, 0.0, shade=(bg, rgb8(color)))
        return Backdrop(camera.height, camera.width, bg, pix, colors)
    pix64, alpha = segment_coverage(camera, starts, ends, width_px) if wk is not None else \
        (np.zeros(0, np.int64), np.zeros(0, np.float32))
    return Backdrop(camera.height, camera.width, bg, pix64, _blended(bg, alpha, color))
