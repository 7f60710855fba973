"""What the rasteriser draws: :class:`Surface`, triangles in world space and how they are coloured (flat per face, or
smooth with vertex normals and a texture), and :func:`surface`, which checks one."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import RenderError
from animkit.render.image import rgb8

__all__ = ["Surface", "surface"]


@dataclass(frozen=True, eq=False)
class Surface:
    """Triangles to draw in one frame: world ``vertices`` (V, 3), ``faces`` (T, 3), and how they are coloured.

    Flat (one colour per face, Lambert per face): ``face_colors`` (T, 3) uint8. Smooth: ``normals`` (V, 3) per
    vertex, interpolated perspective-correctly and renormalised per pixel, times ``color`` (3,) uint8 and, with
    ``uvs`` (V, 2) and ``texture`` (h, w, 3 or 4) uint8, the texture sampled bilinearly at the perspective-correct
    UV (u, v) ∈ [0, 1]², (0, 0) at the texture's top-left corner, repeating outside. Build it with :func:`surface`.
    ``closed`` (T,) marks faces that bound a closed solid wound outward (:func:`animkit.look.drawn.closed_outward`) with
    the camera outside it: those facing away from the eye are hidden by the solid's own front and are not drawn.
    """

    vertices: NDArray[np.float64]
    faces: NDArray[np.int64]
    face_colors: NDArray[np.uint8] | None = None
    color: NDArray[np.uint8] = field(default_factory=lambda: np.full(3, 255, np.uint8))
    normals: NDArray[np.float64] | None = None
    uvs: NDArray[np.float64] | None = None
    texture: NDArray[np.uint8] | None = None
    closed: NDArray[np.bool_] | None = None  # (T,) faces of closed, outward-wound solids (culled facing away)


def surface(vertices: ArrayLike, faces: ArrayLike, *, face_colors: ArrayLike | None = None,
            color: ArrayLike = (1.0, 1.0, 1.0), normals: ArrayLike | None = None, uvs: ArrayLike | None = None,
            texture: ArrayLike | None = None) -> Surface:
    """A checked :class:`Surface` (colours as floats in [0, 1] or uint8; see :func:`rgb8`)."""
    V = np.asarray(vertices, dtype=float)
    if V.ndim != 2 or V.shape[1] != 3 or not np.all(np.isfinite(V)):
        raise RenderError(f"vertices must be finite, shaped (V, 3); got shape {V.shape}")
    Fc = np.asarray(faces)
    if Fc.size == 0:
        Fc = Fc.reshape(0, 3).astype(np.int64)
    if Fc.ndim != 2 or Fc.shape[1] != 3 or not np.issubdtype(Fc.dtype, np.integer):
        raise RenderError(f"faces must be integers shaped (F, 3); got {Fc.dtype} {Fc.shape}")
    if Fc.size and (Fc.min() < 0 or Fc.max() >= len(V)):
        raise RenderError(f"faces index vertices out of range [0, {len(V)})")
    fc = None
    if face_colors is not None:
        fc = rgb8(face_colors, "face_colors")
        if fc.ndim == 1:
            fc = np.broadcast_to(fc, (len(Fc), 3))
        if fc.shape != (len(Fc), 3):
            raise RenderError(f"face_colors must be (3,) or (F, 3) with F={len(Fc)}, got {fc.shape}")
    N = None
    if normals is not None:
        N = np.asarray(normals, dtype=float)
        if N.shape != V.shape or not np.all(np.isfinite(N)):
            raise RenderError(f"normals must be finite, shaped like the vertices {V.shape}; got {N.shape}")
    UV = T = None
    if texture is not None:
        T = np.asarray(texture)
        if T.dtype != np.uint8 or T.ndim != 3 or T.shape[2] not in (3, 4) or T.shape[0] < 1 or T.shape[1] < 1:
            raise RenderError(f"texture must be uint8 (h, w, 3 or 4), got {T.dtype} {T.shape}")
        if uvs is None:
            raise RenderError("a texture needs uvs (V, 2)")
        UV = np.asarray(uvs, dtype=float)
        if UV.shape != (len(V), 2) or not np.all(np.isfinite(UV)):
            raise RenderError(f"uvs must be finite, shaped ({len(V)}, 2); got {UV.shape}")
        if N is None:
            raise RenderError("a textured surface needs vertex normals")
    return Surface(V, Fc.astype(np.int64, copy=False), fc, rgb8(color, "color"), N, UV, T)
