"""Frames as pixels: RGB colours as uint8 (:func:`rgb8`), plain images, and the checks on images, depth buffers
and frame buffers that every drawing function shares."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import RenderError
from animkit.render.camera import Camera

Image = NDArray[np.uint8]
Depth = NDArray[np.float32]

__all__ = ["Image", "Depth", "rgb8", "solid_image", "check_frame_buffer"]


def rgb8(color: ArrayLike, name: str = "color") -> NDArray[np.uint8]:
    """c₈ = round(255 c) for floats in [0, 1]; integers in [0, 255] are taken as they are.

    Works on one colour ``(3,)`` or many ``(N, 3)``.
    """
    c = np.asarray(color)
    if c.shape[-1:] != (3,):
        raise RenderError(f"{name} must be RGB triples (shape (..., 3)), got shape {c.shape}")
    if np.issubdtype(c.dtype, np.integer):
        if c.size and (c.min() < 0 or c.max() > 255):
            raise RenderError(f"integer {name} must be in [0, 255]")
        return c.astype(np.uint8)
    c = c.astype(float)
    if not np.all(np.isfinite(c)) or (c.size and (c.min() < 0.0 or c.max() > 1.0)):
        raise RenderError(f"float {name} must be in [0, 1] (use integers for 0..255)")
    return np.round(c * 255.0).astype(np.uint8)


def solid_image(height: int, width: int, color: ArrayLike, out: Image | None = None) -> Image:
    """An (H, W, 3) uint8 image of one colour (into ``out`` when given), filled as rows of W·3 bytes (broadcasting
    the (3,) colour over every pixel is ~50× slower at 1080p)."""
    img = np.empty((height, width, 3), np.uint8) if out is None else out
    img.reshape(height, width * 3)[:] = np.tile(rgb8(color, "background"), width)
    return img


def check_frame_buffer(out: object, camera: Camera) -> Image:
    """``out`` itself when it can take a frame of ``camera``: a writeable C-contiguous uint8 (H, W, 3) array."""
    shape = (camera.height, camera.width, 3)
    if not isinstance(out, np.ndarray) or out.shape != shape or out.dtype != np.uint8 or \
            not out.flags.c_contiguous or not out.flags.writeable:
        got = (getattr(out, "shape", None), getattr(out, "dtype", type(out).__name__))
        raise RenderError(f"out= must be a writeable C-contiguous uint8 array of shape {shape}; "
                          f"got shape {got[0]}, dtype {got[1]}")
    return out


def _check_image(image: ArrayLike) -> Image:
    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
        raise RenderError(f"image must be uint8 (H, W, 3), got {img.dtype} {img.shape}")
    return img


def _check_depth(depth: ArrayLike | None, img: Image) -> NDArray[np.float32] | None:
    if depth is None:
        return None
    d = np.asarray(depth, dtype=np.float32)
    if d.shape != img.shape[:2]:
        raise RenderError(f"depth buffer shape {d.shape} does not match the image {img.shape[:2]}")
    return d


def _camera_for(camera: Camera, img: Image) -> Camera:
    H, W = img.shape[:2]
    if (camera.width, camera.height) != (W, H):
        raise RenderError(f"camera is {camera.width}x{camera.height} but the image is {W}x{H}")
    return camera
