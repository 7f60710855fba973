"""The default headless renderer: triangles with a z-buffer, flat or smooth shading, textures; NumPy or numba.

Deterministic, no display, no GPU. Each triangle's pixel centres are found row by row: the run of x where all
three barycentric edge functions are ≥ 0 (:func:`_row_spans`). Visibility is resolved first, per pixel, with the
largest inverse depth ``1/d`` (affine in screen space, so the depth test is exact under perspective), ties to the
lower face; then every visible pixel is shaded once (deferred shading). The visibility pass runs either as NumPy
(one scatter-max of a packed depth-and-face key) or as a compiled kernel: the same arithmetic, the same pixels.
Anti-aliasing is supersampling followed by a box downsample.

Overlays (:func:`draw_polyline`, :func:`draw_markers`, :func:`draw_grid`) draw on a finished
frame and return a new image; given the depth buffer from ``render_triangles(...,
depth_out=True)`` they are hidden behind nearer geometry.

Colours are RGB triples: floats in ``[0, 1]`` or integers in ``[0, 255]`` (see :func:`rgb8`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import jit as jit_module
from ..errors import RenderError, unknown_name
from ..jit import enabled as jit_enabled
from ..jit import kernel
from ..jit import pays as jit_pays
from ..transforms import cross3
from .camera import Camera, UpAxis, up_vector

__all__ = [
    "MarkerShape",
    "rgb8",
    "solid_image",
    "face_shading",
    "Surface",
    "surface",
    "render_triangles",
    "render_surfaces",
    "check_frame_buffer",
    "compiled_pays",
    "sample_bilinear",
    "draw_polyline",
    "segment_coverage",
    "blend",
    "draw_segments",
    "draw_markers",
    "draw_grid",
    "Backdrop",
    "grid_backdrop",
    "grid_segments",
    "BAND_BYTES",
]

Image = NDArray[np.uint8]
Depth = NDArray[np.float32]
MarkerShape = Literal["disc", "cross"]
_MARKER_SHAPES: tuple[MarkerShape, ...] = ("disc", "cross")

_MAX_SIDE = 1 << 15  # samples a side


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


def _default_light(camera: Camera) -> NDArray[np.float64]:
    s, u, f = camera.basis()
    light = -s + u - f  # from the camera's upper left, slightly behind it
    return light / np.linalg.norm(light)


def face_shading(camera: Camera, tri: NDArray[np.float64], light_dir: ArrayLike | None,
                 ambient: float) -> NDArray[np.float64]:
    """I = a + (1 − a) · max(0, n̂ · l̂), n̂ turned to face the camera (double-sided faces).

    ``tri`` is ``(F, 3, 3)`` world vertices; ``light_dir`` points from the surface towards the
    light (world); ``None`` puts the light at the camera's upper left. Degenerate faces get ``a``.
    """
    e1, e2 = tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
    n = np.stack([e1[:, 1] * e2[:, 2] - e1[:, 2] * e2[:, 1], e1[:, 2] * e2[:, 0] - e1[:, 0] * e2[:, 2],
                  e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]], axis=1)
    norm = np.sqrt(np.einsum("ij,ij->i", n, n))
    n = np.divide(n, norm[:, None], out=np.zeros_like(n), where=norm[:, None] > 0)
    to_eye = np.asarray(camera.eye) - tri[:, 0]
    n = np.where((np.einsum("ij,ij->i", n, to_eye) < 0)[:, None], -n, n)
    if light_dir is None:
        light = _default_light(camera)
    else:
        light = np.asarray(light_dir, dtype=float)
        if light.shape != (3,) or not np.all(np.isfinite(light)) or np.linalg.norm(light) == 0:
            raise RenderError(f"light_dir must be a non-zero finite 3-vector, got {light_dir!r}")
        light = light / np.linalg.norm(light)
    return ambient + (1.0 - ambient) * np.clip(n @ light, 0.0, 1.0)


@dataclass(frozen=True, eq=False)
class Surface:
    """Triangles to draw in one frame: world ``vertices`` (V, 3), ``faces`` (T, 3), and how they are coloured.

    Flat (one colour per face, Lambert per face): ``face_colors`` (T, 3) uint8. Smooth: ``normals`` (V, 3) per
    vertex, interpolated perspective-correctly and renormalised per pixel, times ``color`` (3,) uint8 and, with
    ``uvs`` (V, 2) and ``texture`` (h, w, 3 or 4) uint8, the texture sampled bilinearly at the perspective-correct
    UV (u, v) ∈ [0, 1]², (0, 0) at the texture's top-left corner, repeating outside. Build it with :func:`surface`.
    ``closed`` (T,) marks faces that bound a closed solid wound outward (:func:`animkit.drawn.closed_outward`) with
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


@overload
def render_triangles(camera: Camera, vertices: ArrayLike, faces: ArrayLike, face_colors: ArrayLike, *,
                     light_dir: ArrayLike | None = ..., ambient: float = ..., background: ArrayLike = ...,
                     supersample: int = ..., depth_out: Literal[False] = ..., jit: bool | None = ...) -> Image: ...
@overload
def render_triangles(camera: Camera, vertices: ArrayLike, faces: ArrayLike, face_colors: ArrayLike, *,
                     light_dir: ArrayLike | None = ..., ambient: float = ..., background: ArrayLike = ...,
                     supersample: int = ..., depth_out: Literal[True], jit: bool | None = ...
                     ) -> tuple[Image, Depth]: ...
def render_triangles(camera: Camera, vertices: ArrayLike, faces: ArrayLike, face_colors: ArrayLike, *,
                     light_dir: ArrayLike | None = None, ambient: float = 0.35,
                     background: ArrayLike = (1.0, 1.0, 1.0), supersample: int = 1,
                     depth_out: bool = False, jit: bool | None = None) -> Image | tuple[Image, Depth]:
    """pixel = c_f · I_f for the face f with the largest 1/d at the pixel centre (z-buffer), else background.

    ``vertices`` ``(V, 3)`` world; ``faces`` ``(F, 3)`` vertex indices; ``face_colors`` ``(F, 3)`` or
    one ``(3,)`` colour (floats 0..1 or uint8). Shading ``I_f`` is flat Lambert + ambient
    (:func:`face_shading`). One flat :class:`Surface` drawn by :func:`render_surfaces` (see there for
    ``jit``, clipping and the depth buffer).
    """
    s = surface(vertices, faces, face_colors=face_colors)
    return render_surfaces(camera, [s], light_dir=light_dir, ambient=ambient, background=background,
                           supersample=supersample, depth_out=depth_out, jit=jit)  # type: ignore[call-overload]


@overload
def render_surfaces(camera: Camera, surfaces: Sequence[Surface], *, light_dir: ArrayLike | None = ...,
                    ambient: float = ..., background: ArrayLike = ..., backdrop: Image | Backdrop | None = ...,
                    supersample: int = ..., depth_out: Literal[False] = ..., jit: bool | None = ...,
                    out: Image | None = ...) -> Image: ...
@overload
def render_surfaces(camera: Camera, surfaces: Sequence[Surface], *, light_dir: ArrayLike | None = ...,
                    ambient: float = ..., background: ArrayLike = ..., backdrop: Image | Backdrop | None = ...,
                    supersample: int = ..., depth_out: Literal[True], jit: bool | None = ...,
                    out: Image | None = ...) -> tuple[Image, Depth]: ...
def render_surfaces(camera: Camera, surfaces: Sequence[Surface], *, light_dir: ArrayLike | None = None,
                    ambient: float = 0.35, background: ArrayLike = (1.0, 1.0, 1.0),
                    backdrop: Image | Backdrop | None = None,
                    supersample: int = 1, depth_out: bool = False, jit: bool | None = None,
                    out: Image | None = None) -> Image | tuple[Image, Depth]:
    """pixel = shade(f, p) for the face f with the largest 1/d at the pixel centre p (z-buffer), else backdrop.

    All surfaces share one z-buffer. Visibility is resolved first (a face index and 1/d per sample; equal 1/d:
    the lower face index wins), then each covered sample is shaded once (deferred shading): flat faces by
    :func:`face_shading`, smooth ones per pixel with I = a + (1 − a) max(0, n̂ · l̂), n̂ the renormalised
    perspective-correct interpolation of the vertex normals (turned to the camera on back faces).
    Triangles with a vertex nearer than ``camera.near`` are dropped (not clipped); triangles wholly
    beyond ``camera.far`` too. ``backdrop`` (an (H, W, 3) uint8 image or a :class:`Backdrop`) replaces the plain
    ``background`` where nothing is drawn. Returns a ``(H, W, 3)`` uint8 image, and with ``depth_out=True`` also
    the ``(H, W)`` float32 view depth (``inf`` where empty; the nearest sample of each supersampled block).

    ``jit``: resolve visibility with the compiled kernel (True), with NumPy (False) or decide (None: by
    :func:`compiled_pays` for this one image). Both give the same pixels. ``out``: a C-contiguous (H, W, 3) uint8
    array the image is drawn into and returned as (no image allocated per frame; :func:`check_frame_buffer`).
    """
    if supersample not in (1, 2, 3, 4):
        raise RenderError(f"supersample must be 1, 2, 3 or 4, got {supersample!r}")
    if not 0.0 <= ambient <= 1.0:
        raise RenderError(f"ambient must be in [0, 1], got {ambient!r}")
    s = supersample
    W, H = camera.width * s, camera.height * s
    if max(W, H) > _MAX_SIDE:
        raise RenderError(f"image too large: {W}x{H} samples (at most {_MAX_SIDE} a side)")
    if backdrop is not None:
        bh, bw = (backdrop.height, backdrop.width) if isinstance(backdrop, Backdrop) else \
            _check_image(backdrop).shape[:2]
        if (bh, bw) != (camera.height, camera.width):
            raise RenderError(f"backdrop is {bw}x{bh} but the camera is {camera.width}x{camera.height}")
    if out is not None:
        check_frame_buffer(out, camera)
    light = _light(camera, light_dir)
    if len(surfaces) == 1:
        V, Fc = surfaces[0].vertices, surfaces[0].faces
        first = np.zeros(1, np.int64)
    else:
        counts_v = [len(x.vertices) for x in surfaces]
        counts_f = [len(x.faces) for x in surfaces]
        off_v = np.cumsum([0, *counts_v[:-1]])
        V = np.concatenate([x.vertices for x in surfaces]) if surfaces else np.zeros((0, 3))
        Fc = np.concatenate([x.faces + o for x, o in zip(surfaces, off_v, strict=True)]) if surfaces else \
            np.zeros((0, 3), np.int64)
        first = np.cumsum([0, *counts_f[:-1]]).astype(np.int64)

    view = camera.view_matrix()
    pc = V @ view[:3, :3].T + view[:3, 3]
    depth = -pc[:, 2]
    fd = depth[Fc]  # (F, 3)
    dmin = _min3(fd)
    visible = (dmin >= camera.near) & (dmin <= camera.far)
    if any(x.closed is not None for x in surfaces):  # back faces of closed solids: (v₁ − v₀) × (v₂ − v₀) · v₀ ≥ 0
        closed = np.concatenate([x.closed if x.closed is not None else np.zeros(len(x.faces), bool)
                                 for x in surfaces])
        c = pc[Fc[closed]]
        away = np.einsum("fi,fi->f", cross3(c[:, 1] - c[:, 0], c[:, 2] - c[:, 0]), c[:, 0]) > 0.0
        visible[np.flatnonzero(closed)[away]] = False
    keep = np.flatnonzero(visible)
    fp = camera.focal_px() * s
    with np.errstate(divide="ignore", invalid="ignore"):
        xs = 0.5 * W - 0.5 + fp * pc[:, 0] / depth
        ys = 0.5 * H - 0.5 - fp * pc[:, 1] / depth
    tri = Fc[keep]
    setup = _setup(xs[tri], ys[tri], 1.0 / fd[keep], W, H)
    face_of = keep[setup.index]  # setup row → face of the concatenation
    use_kernel = compiled_pays(W * H) if jit is None else (jit and _raster_jit is not None and jit_enabled())
    # visibility runs compiled whenever the ahead-of-time kernel is built (no start-up to repay); ``jit`` decides
    # numba's kernels (smooth shading here)
    visible_compiled = use_kernel or jit_module.native_kernels() is not None
    into = out if s == 1 else None  # supersampled: drawn at full size, then filtered into out
    if backdrop is None:
        flat = solid_image(H, W, background, into).reshape(-1, 3)
    elif isinstance(backdrop, Backdrop) and s == 1:
        flat = solid_image(H, W, backdrop.background, into).reshape(-1, 3)
        backdrop.paint(flat, use_kernel)
    else:
        full = backdrop.image() if isinstance(backdrop, Backdrop) else backdrop
        if s == 1:
            flat = full.reshape(-1, 3).copy() if into is None else into.reshape(-1, 3)
            if into is not None:
                np.copyto(into, full)
        else:
            flat = np.repeat(np.repeat(full, s, axis=0), s, axis=1).reshape(-1, 3)
    zbuf: NDArray[np.float32] | None = None
    pix, zvis = np.zeros(0, np.int64), np.zeros(0, np.float32)
    if visible_compiled and all(x.normals is None for x in surfaces):  # flat faces: colour while resolving depth
        colors = np.zeros((len(face_of), 3), np.uint8)  # the drawn faces only (about half are culled)
        which = np.searchsorted(first, face_of, side="right") - 1
        for i, srf in enumerate(surfaces):
            sel = np.flatnonzero(which == i) if len(surfaces) > 1 else slice(None)
            colors[sel] = _flat_colors(camera, srf, light, ambient, face_of[sel] - first[i])
        zbuf = _paint_kernel(setup, W, H, colors, flat, depth_out)
    else:
        pix, k, zvis = (_visible_kernel if visible_compiled else _visible_numpy)(setup, W, H)
        if len(pix):
            face = face_of[k]
            which = np.searchsorted(first, face, side="right") - 1 if len(surfaces) > 1 else \
                np.zeros(len(k), np.int64)
            for i, srf in enumerate(surfaces):
                sel = np.flatnonzero(which == i) if len(surfaces) > 1 else slice(None)
                if len(surfaces) > 1 and len(sel) == 0:  # type: ignore[arg-type]
                    continue
                flat[pix[sel]] = _shade(camera, srf, face[sel] - first[i], setup, k[sel], pix[sel], W, light,
                                        ambient, use_kernel)
    img = flat.reshape(H, W, 3) if into is None else into
    if s > 1:
        acc = np.zeros((camera.height, camera.width, 3), dtype=np.uint16)
        for dy in range(s):
            for dx in range(s):
                acc += img[dy::s, dx::s]
        img = ((acc + (s * s) // 2) // (s * s)).astype(np.uint8)  # box filter, rounded
        if out is not None:
            np.copyto(out, img)
            img = out
    if not depth_out:
        return img
    if zbuf is None:
        zbuf = np.zeros(W * H, np.float32)
        zbuf[pix] = zvis
    zb = zbuf.reshape(H, W)
    if s > 1:
        zb = np.max([zb[dy::s, dx::s] for dy in range(s) for dx in range(s)], axis=0)
    with np.errstate(divide="ignore"):
        dbuf = (1.0 / zb).astype(np.float32)
    return img, dbuf


def _light(camera: Camera, light_dir: ArrayLike | None) -> NDArray[np.float64]:
    if light_dir is None:
        return _default_light(camera)
    light = np.asarray(light_dir, dtype=float)
    if light.shape != (3,) or not np.all(np.isfinite(light)) or np.linalg.norm(light) == 0:
        raise RenderError(f"light_dir must be a non-zero finite 3-vector, got {light_dir!r}")
    return light / np.linalg.norm(light)


def _min3(a: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.minimum(np.minimum(a[:, 0], a[:, 1]), a[:, 2])


def _max3(a: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.maximum(np.maximum(a[:, 0], a[:, 1]), a[:, 2])


def _sum3(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """(a₀ + a₁) + a₂ per row: ``a.sum(axis=1)``'s order for three columns, without its slow small-axis reduction."""
    return (a[:, 0] + a[:, 1]) + a[:, 2]


@dataclass(frozen=True)
class _Setup:
    """Per drawable triangle: its face row (``index``), pixel box [x0, x1] × [y0, y1], edge functions and 1/d.

    Barycentric b_i(x, y) = (B_i r_y + C_i) + A_i r_x, (r_x, r_y) = (x − x0, y − y0), is the edge function of the
    edge opposite corner i over twice the signed area; 1/d = (W_C + W_A r_x) + W_B r_y is affine in (x, y).
    """

    index: NDArray[np.int64]
    x0: NDArray[np.int64]
    y0: NDArray[np.int64]
    x1: NDArray[np.int64]
    y1: NDArray[np.int64]
    A: NDArray[np.float64]
    B: NDArray[np.float64]
    C: NDArray[np.float64]
    WA: NDArray[np.float64]
    WB: NDArray[np.float64]
    WC: NDArray[np.float64]
    IZ: NDArray[np.float64]


def _setup(X: NDArray[np.float64], Y: NDArray[np.float64], IZ: NDArray[np.float64], W: int, H: int) -> _Setup:
    """``X, Y, IZ`` are ``(T, 3)`` screen coordinates and inverse depths of triangle corners."""
    with np.errstate(invalid="ignore"):
        x0 = np.clip(np.ceil(_min3(X)), 0, W) if len(X) else np.zeros(0)
        x1 = np.clip(np.floor(_max3(X)), -1, W - 1) if len(X) else np.zeros(0)
        y0 = np.clip(np.ceil(_min3(Y)), 0, H) if len(X) else np.zeros(0)
        y1 = np.clip(np.floor(_max3(Y)), -1, H - 1) if len(X) else np.zeros(0)
    area2 = (X[:, 1] - X[:, 0]) * (Y[:, 2] - Y[:, 0]) - (X[:, 2] - X[:, 0]) * (Y[:, 1] - Y[:, 0])
    ok = (x0 <= x1) & (y0 <= y1) & (np.abs(area2) > 1e-12) & np.isfinite(area2)
    idx = np.flatnonzero(ok)
    X, Y, IZ, area2 = X[idx], Y[idx], IZ[idx], area2[idx]
    x0, x1, y0, y1 = x0[idx], x1[idx], y0[idx], y1[idx]
    nxt, prv = [1, 2, 0], [2, 0, 1]
    inv = (1.0 / area2)[:, None]
    A = (Y[:, nxt] - Y[:, prv]) * inv
    B = (X[:, prv] - X[:, nxt]) * inv
    C = A * (x0[:, None] - X[:, nxt]) + B * (y0[:, None] - Y[:, nxt])  # value at the box origin (x0, y0)
    WA, WB, WC = (_sum3(A * IZ), _sum3(B * IZ), _sum3(C * IZ))
    return _Setup(idx, x0.astype(np.int64), y0.astype(np.int64), x1.astype(np.int64), y1.astype(np.int64),
                  np.ascontiguousarray(A), np.ascontiguousarray(B), np.ascontiguousarray(C), WA, WB, WC,
                  np.ascontiguousarray(IZ))


_MASK32 = np.uint64(0xFFFFFFFF)


def _row_spans(st: _Setup) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Per row r_y of every triangle's box: the run [l, h] of r_x with all b_i = (B_i r_y + C_i) + A_i r_x ≥ 0.

    Edge i bounds r_x from below by ⌈−(B_i r_y + C_i) / A_i⌉ when A_i > 0, from above by ⌊…⌋ when A_i < 0, and
    empties the row when A_i = 0 and B_i r_y + C_i < 0. Returns (triangle row t, r_y, l, h) of the non-empty runs;
    :func:`_raster_loop` computes the same runs with the same arithmetic.
    """
    bh = st.y1 - st.y0 + 1
    t = np.repeat(np.arange(len(bh)), bh)
    ry = np.arange(len(t)) - np.repeat(np.cumsum(bh) - bh, bh)
    fy = ry.astype(np.float64)
    A, B, C = np.repeat(st.A, bh, axis=0), np.repeat(st.B, bh, axis=0), np.repeat(st.C, bh, axis=0)
    lo = np.zeros(len(t))
    hi = (st.x1 - st.x0)[t].astype(np.float64)
    for i in range(3):
        a = A[:, i]
        r = B[:, i] * fy + C[:, i]
        with np.errstate(divide="ignore", invalid="ignore"):
            q = -r / a
        np.maximum(lo, np.where(a > 0, np.ceil(q), 0.0), out=lo)
        np.minimum(hi, np.where(a < 0, np.floor(q), np.inf), out=hi)
        hi[(a == 0) & (r < 0)] = -1.0
    ok = lo <= hi
    return t[ok], ry[ok], lo[ok].astype(np.int64), hi[ok].astype(np.int64)


def _visible_numpy(st: _Setup, W: int, H: int) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]:
    """For every covered pixel p (sorted): the lowest triangle row t among those with the largest float32 1/d at p,
    and that 1/d.

    Fragments are the pixels of each row's run (:func:`_row_spans`), 1/d = (W_C + W_B r_y) + W_A r_x. The depth
    test is one scatter-max of the key (bits(float32 1/d) << 32) | (2³² − 1 − t): float32 bits of positive numbers
    order like the numbers, and on equal depth the lower row t wins.
    """
    if not len(st.index):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    t, ry, lo, hi = _row_spans(st)
    n = hi - lo + 1
    start = np.cumsum(n) - n
    ft = np.repeat(t, n)
    rx = np.arange(len(ft)) - np.repeat(start - lo, n)
    w = (np.repeat(st.WC[t] + st.WB[t] * ry, n) + st.WA[ft] * rx).astype(np.float32)
    zx, zy = int(st.x0.min()), int(st.y0.min())  # the keys cover the triangles' box, not the image
    zw, zh = int(st.x1.max()) - zx + 1, int(st.y1.max()) - zy + 1
    pix = np.repeat((st.y0[t] + ry - zy) * zw + st.x0[t] - zx, n) + rx
    pos = w > 0
    key = (w[pos].view(np.uint32).astype(np.uint64) << np.uint64(32)) | (_MASK32 - ft[pos].astype(np.uint64))
    keys = np.zeros(zw * zh, dtype=np.uint64)
    np.maximum.at(keys, pix[pos], key)
    hit = np.flatnonzero(keys)
    kk = keys[hit]
    hy, hx = np.divmod(hit, zw)
    return (hy + zy) * W + hx + zx, (_MASK32 - (kk & _MASK32)).astype(np.int64), \
        (kk >> np.uint64(32)).astype(np.uint32).view(np.float32)


def _raster_loop(x0: NDArray[np.int64], y0: NDArray[np.int64], x1: NDArray[np.int64], y1: NDArray[np.int64],
                 A: NDArray[np.float64], B: NDArray[np.float64], C: NDArray[np.float64], WA: NDArray[np.float64],
                 WB: NDArray[np.float64], WC: NDArray[np.float64], W: int, zbuf: NDArray[np.float32],
                 fbuf: NDArray[np.int32], colors: NDArray[np.uint8], flat: NDArray[np.uint8],
                 paint: bool, zx: int, zy: int, zw: int) -> None:  # pragma: no cover - compiled; see _visible_numpy
    """The same runs (:func:`_row_spans`) and depth test as :func:`_visible_numpy`, triangle by triangle.

    Each fragment that passes the test records its triangle row in ``fbuf`` or, with ``paint``, writes that row's
    colour ``colors[t]`` into ``flat`` (H·W, 3): the last write is the visible triangle's, the same pixel as
    shading it afterwards, without a face buffer or a pass over every pixel. ``zbuf`` (and ``fbuf``) cover the box
    of ``zw``-wide rows from pixel (``zx``, ``zy``).
    """
    for t in range(len(x0)):
        wa, wb, wc = WA[t], WB[t], WC[t]
        bw = float(x1[t] - x0[t])
        for ry in range(y1[t] - y0[t] + 1):
            fy = float(ry)
            lo = 0.0
            hi = bw
            for i in range(3):
                a = A[t, i]
                r = B[t, i] * fy + C[t, i]
                if a > 0:
                    lo = max(lo, np.ceil(-r / a))
                elif a < 0:
                    hi = min(hi, np.floor(-r / a))
                elif r < 0:
                    hi = -1.0
            if lo > hi:
                continue
            row = (y0[t] + ry) * W + x0[t]
            zrow = (y0[t] + ry - zy) * zw + x0[t] - zx
            w0 = wc + wb * fy
            for rx in range(int(lo), int(hi) + 1):
                w = np.float32(w0 + wa * rx)
                z = zrow + rx
                if w > zbuf[z] and w > 0:
                    zbuf[z] = w
                    if paint:
                        p = row + rx
                        flat[p, 0] = colors[t, 0]
                        flat[p, 1] = colors[t, 1]
                        flat[p, 2] = colors[t, 2]
                    else:
                        fbuf[z] = t


_raster_jit = kernel(_raster_loop)

# A frame of the humanoid's capsules costs about 7 ms with NumPy visibility and 2.4 ms with the kernel at 360x360
# (37 ns a sample saved); numba's start-up and loading the cached kernel cost about 0.4 s a process, compiling it on an
# empty cache about 2 s more. Warm, the kernel pays from ~11 M samples; cold, from ~60 M. Below 40 M samples (pixels ×
# frames × supersample²; the README's compare draws 30 M) a job uses NumPy, so a first run stays near a warm one.
RASTER_JIT_MIN = 40e6


def compiled_pays(samples: float) -> bool:
    """Whether a job drawing ``samples`` pixels in all should resolve visibility with the compiled kernel
    (:func:`animkit.jit.pays` with :data:`RASTER_JIT_MIN`)."""
    return jit_pays(_raster_jit, samples, RASTER_JIT_MIN)


def _raster(*args: Any) -> None:
    """:func:`_raster_loop`, compiled: ahead of time (``animkit._native.raster_loop``, a port held to the same
    pixels) where it is built, else by numba."""
    native = jit_module.native_kernels()
    if native is not None:
        native.raster_loop(*args)
        return
    assert _raster_jit is not None
    _raster_jit(*args)


def _visible_kernel(st: _Setup, W: int, H: int) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]:
    """:func:`_visible_numpy` by the compiled :func:`_raster_loop`."""
    zbuf = np.zeros(W * H, dtype=np.float32)
    fbuf = np.full(W * H, -1, dtype=np.int32)
    if len(st.index):
        _raster(st.x0, st.y0, st.x1, st.y1, st.A, st.B, st.C, st.WA, st.WB, st.WC, W, zbuf, fbuf,
                np.zeros((0, 3), np.uint8), np.zeros((0, 3), np.uint8), False, 0, 0, W)
    hit = np.flatnonzero(fbuf >= 0)
    return hit, fbuf[hit].astype(np.int64), zbuf[hit]


def _paint_kernel(st: _Setup, W: int, H: int, colors: NDArray[np.uint8], flat: NDArray[np.uint8], depth: bool
                  ) -> NDArray[np.float32] | None:
    """Flat surfaces in one pass: ``flat`` (H·W, 3) gets each visible triangle row's colour ``colors`` (T, 3)
    where it wins the depth test of :func:`_visible_numpy`; with ``depth`` returns the (H·W,) float32 1/d buffer
    (0 where empty). The kernel's z-buffer covers only the box of the triangles' pixels (a figure is a small part
    of a frame), so a frame does not clear a buffer of the image's size.
    """
    zbuf = np.zeros(W * H, dtype=np.float32) if depth else None
    if len(st.index):
        zx, zy = int(st.x0.min()), int(st.y0.min())
        zw, zh = int(st.x1.max()) - zx + 1, int(st.y1.max()) - zy + 1
        box = np.zeros(zw * zh, np.float32)
        _raster(st.x0, st.y0, st.x1, st.y1, st.A, st.B, st.C, st.WA, st.WB, st.WC, W, box,
                np.zeros(0, np.int32), colors, flat, True, zx, zy, zw)
        if zbuf is not None:
            zbuf.reshape(H, W)[zy:zy + zh, zx:zx + zw] = box.reshape(zh, zw)
    return zbuf


def _flat_colors(camera: Camera, srf: Surface, light: NDArray[np.float64], ambient: float,
                 faces: NDArray[np.int64] | None = None) -> NDArray[np.uint8]:
    """c_f = round(c · I_f) for the faces ``faces`` (default: every face) of a flat surface (I_f:
    :func:`face_shading`, row by row, so a face's colour does not depend on which others are shaded), (F, 3) uint8."""
    if faces is None:
        fc = srf.face_colors if srf.face_colors is not None else np.broadcast_to(srf.color, (len(srf.faces), 3))
        tri = srf.vertices[srf.faces]
    else:
        fc = srf.face_colors[faces] if srf.face_colors is not None else np.broadcast_to(srf.color, (len(faces), 3))
        tri = srf.vertices[srf.faces[faces]]
    shade = face_shading(camera, tri, light, ambient)
    return np.round(fc.astype(np.float64) * shade[:, None]).astype(np.uint8)


def _shade(camera: Camera, srf: Surface, face: NDArray[np.int64], st: _Setup, k: NDArray[np.int64],
           pix: NDArray[np.int64], W: int, light: NDArray[np.float64], ambient: float,
           jit: bool = False) -> NDArray[np.uint8]:
    """Colours (P, 3) of the covered samples ``pix`` of one surface (``face`` its own face rows, ``k`` setup rows).

    Smooth: b_i = (B_i r_y + C_i) + A_i r_x, q_i = b_i / d_i / Σ_j b_j / d_j (perspective-correct), n = Σ q_i n_i,
    I = a + (1 − a) clip(s (n · l) / |n|, 0, 1) with s = ±1 turning back faces to the camera; colour = rint(c · t / 255
    · I) with t the bilinear texel at Σ q_i uv_i. The compiled :func:`_shade_loop` does the same arithmetic.
    """
    if srf.normals is None:
        return _flat_colors(camera, srf, light, ambient)[face]
    # back faces: turn the normals to the camera (faces whose geometric side seen disagrees with their normals)
    tri = srf.vertices[srf.faces]
    g = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    seen = np.einsum("ij,ij->i", g, np.asarray(camera.eye) - tri[:, 0]) >= 0
    agree = np.einsum("ij,ij->i", g, srf.normals[srf.faces].sum(axis=1)) >= 0
    sign = np.where(seen == agree, 1.0, -1.0)[face]
    color = srf.color.astype(np.float64)
    textured = srf.texture is not None and srf.uvs is not None
    if jit and _shade_jit is not None and jit_enabled():
        out = np.empty((len(pix), 3), np.uint8)
        tex = np.zeros((1, 1, 3), np.uint8)
        if srf.texture is not None:
            tex = srf.texture if srf.texture.shape[2] == 3 and srf.texture.flags.c_contiguous else \
                np.ascontiguousarray(srf.texture[..., :3])
        uvs = srf.uvs if textured else np.zeros((1, 2))
        _shade_jit(pix, k, face, W, st.x0, st.y0, st.A, st.B, st.C, st.IZ, srf.faces, srf.normals, sign, light,
                   ambient, color, textured, uvs, tex, out)
        return out
    py, px = np.divmod(pix, W)
    rx = (px - st.x0[k]).astype(np.float64)
    ry = (py - st.y0[k]).astype(np.float64)
    q = [((st.B[k, i] * ry + st.C[k, i]) + st.A[k, i] * rx) * st.IZ[k, i] for i in range(3)]
    s = (q[0] + q[1]) + q[2]
    q = [qi / s for qi in q]
    fv = srf.faces[face]  # (P, 3)
    N = [srf.normals[fv[:, i]] for i in range(3)]
    n = (q[0][:, None] * N[0] + q[1][:, None] * N[1]) + q[2][:, None] * N[2]
    norm = np.sqrt((n[:, 0] * n[:, 0] + n[:, 1] * n[:, 1]) + n[:, 2] * n[:, 2])
    dot = (n[:, 0] * light[0] + n[:, 1] * light[1]) + n[:, 2] * light[2]
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(norm > 0, dot / norm, 0.0) * sign
    intensity = ambient + (1.0 - ambient) * np.clip(lam, 0.0, 1.0)
    if textured:
        assert srf.uvs is not None and srf.texture is not None
        U = [srf.uvs[fv[:, i]] for i in range(3)]
        uv = (q[0][:, None] * U[0] + q[1][:, None] * U[1]) + q[2][:, None] * U[2]
        col = color * (sample_bilinear(srf.texture, uv) / 255.0)
    else:
        col = np.broadcast_to(color, (len(pix), 3))
    return np.clip(np.rint(col * intensity[:, None]), 0, 255).astype(np.uint8)


def _shade_loop(pix: NDArray[np.int64], k: NDArray[np.int64], face: NDArray[np.int64], W: int,
                x0: NDArray[np.int64], y0: NDArray[np.int64], A: NDArray[np.float64], B: NDArray[np.float64],
                C: NDArray[np.float64], IZ: NDArray[np.float64], faces: NDArray[np.int64],
                normals: NDArray[np.float64], sign: NDArray[np.float64], light: NDArray[np.float64], ambient: float,
                color: NDArray[np.float64], textured: bool, uvs: NDArray[np.float64], tex: NDArray[np.uint8],
                out: NDArray[np.uint8]) -> None:  # pragma: no cover - compiled; _shade's NumPy path is its oracle
    """:func:`_shade`'s smooth path, pixel by pixel, with the same arithmetic."""
    th, tw = tex.shape[0], tex.shape[1]
    for j in range(len(pix)):
        t = k[j]
        py = pix[j] // W
        px = pix[j] - py * W
        rx = float(px - x0[t])
        ry = float(py - y0[t])
        q0 = ((B[t, 0] * ry + C[t, 0]) + A[t, 0] * rx) * IZ[t, 0]
        q1 = ((B[t, 1] * ry + C[t, 1]) + A[t, 1] * rx) * IZ[t, 1]
        q2 = ((B[t, 2] * ry + C[t, 2]) + A[t, 2] * rx) * IZ[t, 2]
        s = (q0 + q1) + q2
        q0, q1, q2 = q0 / s, q1 / s, q2 / s
        f = face[j]
        v0, v1, v2 = faces[f, 0], faces[f, 1], faces[f, 2]
        nx = (q0 * normals[v0, 0] + q1 * normals[v1, 0]) + q2 * normals[v2, 0]
        ny = (q0 * normals[v0, 1] + q1 * normals[v1, 1]) + q2 * normals[v2, 1]
        nz = (q0 * normals[v0, 2] + q1 * normals[v1, 2]) + q2 * normals[v2, 2]
        norm = np.sqrt((nx * nx + ny * ny) + nz * nz)
        dot = (nx * light[0] + ny * light[1]) + nz * light[2]
        lam = (dot / norm if norm > 0 else 0.0) * sign[j]
        inten = ambient + (1.0 - ambient) * min(max(lam, 0.0), 1.0)
        if textured:
            u = (q0 * uvs[v0, 0] + q1 * uvs[v1, 0]) + q2 * uvs[v2, 0]
            v = (q0 * uvs[v0, 1] + q1 * uvs[v1, 1]) + q2 * uvs[v2, 1]
            x = u * tw - 0.5
            y = v * th - 0.5
            xf, yf = np.floor(x), np.floor(y)
            fx, fy = x - xf, y - yf
            xi, yi = int(xf) % tw, int(yf) % th
            xj, yj = (xi + 1) % tw, (yi + 1) % th
            for c in range(3):
                top = tex[yi, xi, c] * (1.0 - fx) + tex[yi, xj, c] * fx
                bottom = tex[yj, xi, c] * (1.0 - fx) + tex[yj, xj, c] * fx
                val = np.rint(color[c] * ((top * (1.0 - fy) + bottom * fy) / 255.0) * inten)
                out[j, c] = np.uint8(min(max(val, 0.0), 255.0))
        else:
            for c in range(3):
                out[j, c] = np.uint8(min(max(np.rint(color[c] * inten), 0.0), 255.0))


_shade_jit = kernel(_shade_loop)


def sample_bilinear(texture: NDArray[np.uint8], uv: NDArray[np.float64]) -> NDArray[np.float64]:
    """c(u, v) = Σ bilinear weights · texels around (u w − ½, v h − ½), wrapping (glTF's REPEAT); RGB (P, 3).

    (0, 0) is the top-left corner of the texture's first texel, (1, 1) the bottom-right corner of its last.
    """
    h, w = texture.shape[:2]
    x = uv[:, 0] * w - 0.5
    y = uv[:, 1] * h - 0.5
    xf, yf = np.floor(x), np.floor(y)
    fx, fy = (x - xf)[:, None], (y - yf)[:, None]
    xi, yi = xf.astype(np.int64) % w, yf.astype(np.int64) % h
    xj, yj = (xi + 1) % w, (yi + 1) % h
    t = texture[..., :3]
    top = t[yi, xi] * (1.0 - fx) + t[yi, xj] * fx
    bottom = t[yj, xi] * (1.0 - fx) + t[yj, xj] * fx
    return top * (1.0 - fy) + bottom * fy


# ----------------------------------------------------------------------------------------------
# overlays


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


def _stamp(img: Image, xy: NDArray[np.float64], d: NDArray[np.float64], radius: float,
           color: NDArray[np.uint8], depth: NDArray[np.float32] | None, bias: float, inplace: bool = False) -> Image:
    """α(p) = max_k clip(r + ½ − |p − x_k|, 0, 1) over discs at ``xy``; out = (1 − α) img + α c (into ``img`` when
    ``inplace``)."""
    H, W = img.shape[:2]
    out = img if inplace else img.copy()
    if len(xy) == 0:
        return out
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
    flat, cov = flat[ok], cov[ok].astype(np.float32)
    alpha = np.zeros(H * W, dtype=np.float32)
    np.maximum.at(alpha, flat, cov)
    touched = np.unique(flat)
    a = alpha[touched, None]
    o = out.reshape(-1, 3)
    o[touched] = np.round(o[touched] * (1.0 - a) + color.astype(np.float32) * a).astype(np.uint8)
    return out


def _clip_near(camera: Camera, a: NDArray[np.float64], b: NDArray[np.float64]
               ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Segments clipped to view depth ≥ near: x(t) = a + t (b − a) at d(t) = near."""
    view = camera.view_matrix()
    da = -(a @ view[2, :3] + view[2, 3])
    db = -(b @ view[2, :3] + view[2, 3])
    n = camera.near
    keep = (da >= n) | (db >= n)
    a, b, da, db = a[keep], b[keep], da[keep], db[keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        ta = ((n - da) / (db - da))[:, None]  # only used where da < n <= db
        tb = ((n - db) / (da - db))[:, None]  # only used where db < n <= da
        a_new = np.where((da < n)[:, None], a + ta * (b - a), a)
        b_new = np.where((db < n)[:, None], b + tb * (a - b), b)
    return a_new, b_new


def _segment_normals(qa: NDArray[np.float64], qb: NDArray[np.float64]
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per screen segment a→b, e = b − a: (1/|e|², n̂) with n̂ = (−e_y, e_x)/|e| (zeros for a point): the distance
    of p to the segment's line is |(p − a) · n̂|, its parameter (p − a) · e / |e|²."""
    ex, ey = qb[:, 0] - qa[:, 0], qb[:, 1] - qa[:, 1]
    ll = ex * ex + ey * ey
    pos = ll > 0
    ill = np.divide(1.0, ll, out=np.zeros_like(ll), where=pos)
    il = np.sqrt(ill)
    return ill, -ey * il, ex * il


@dataclass(frozen=True)
class _Walk:
    """Per screen segment, clipped to the near plane and to the image grown by r + 1: ends ``qa``, ``qb`` (S, 2),
    1/d at them ``iza``, ``izb``, whether y is its major axis (``steep``), the major-axis pixels ``lo`` …
    ``lo + count − 1`` walked, its start (``ua``, ``va``) in (major, minor) and ``slope`` dv/du; half-width
    ``r`` (px) and the ``half`` candidates taken to each side of the walked pixel."""

    qa: NDArray[np.float64]
    qb: NDArray[np.float64]
    iza: NDArray[np.float64]
    izb: NDArray[np.float64]
    steep: NDArray[np.bool_]
    lo: NDArray[np.int64]
    count: NDArray[np.int64]
    ua: NDArray[np.float64]
    va: NDArray[np.float64]
    slope: NDArray[np.float64]
    r: float
    half: int


def _walk(camera: Camera, starts: ArrayLike, ends: ArrayLike, width_px: float) -> _Walk | None:
    """:func:`segment_coverage`'s set-up (checked input, near-plane and Liang–Barsky clipping); None: nothing drawn."""
    W, H = camera.width, camera.height
    a = np.asarray(starts, dtype=float).reshape(-1, 3)
    b = np.asarray(ends, dtype=float).reshape(-1, 3)
    if a.shape != b.shape or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise RenderError("segment starts and ends must be finite and shaped alike (S, 3)")
    if not width_px > 0:
        raise RenderError(f"width_px must be > 0, got {width_px!r}")
    a, b = _clip_near(camera, a, b)
    if len(a) == 0:
        return None
    pa, da = camera.project(a)
    pb, db = camera.project(b)
    r = 0.5 * width_px
    m = r + 1.0
    # Liang–Barsky: keep t ∈ [t0, t1] of a + t (b − a) inside the image grown by m: the four edges at once,
    # t0 = max(0, entering t), t1 = min(1, leaving t), none where parallel to an edge and outside it
    d = pb - pa
    P = np.stack([-d[:, 0], d[:, 0], -d[:, 1], d[:, 1]], axis=1)
    Q = np.stack([pa[:, 0] + m, (W - 1 + m) - pa[:, 0], pa[:, 1] + m, (H - 1 + m) - pa[:, 1]], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        T = Q / P
    t0 = np.max(np.where(P < 0, T, 0.0), axis=1)
    t1 = np.min(np.where(P > 0, T, 1.0), axis=1)
    ok = (t0 <= t1) & ~np.any((P == 0) & (Q < 0), axis=1)
    if not ok.any():
        return None
    ia, ib = 1.0 / da[ok], 1.0 / db[ok]
    t0, t1, pa, d = t0[ok], t1[ok], pa[ok], d[ok]
    qa, qb = pa + t0[:, None] * d, pa + t1[:, None] * d
    iza, izb = ia + t0 * (ib - ia), ia + t1 * (ib - ia)
    steep = np.abs(d[:, 1]) > np.abs(d[:, 0])
    major = steep.astype(np.int64)
    minor = 1 - major
    rows = np.arange(len(qa))
    ua, ub = qa[rows, major], qb[rows, major]
    va, vb = qa[rows, minor], qb[rows, minor]
    lo = np.floor(np.minimum(ua, ub) - m).astype(np.int64)
    count = np.ceil(np.maximum(ua, ub) + m).astype(np.int64) - lo + 1
    du = ub - ua
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(du != 0, (vb - va) / du, 0.0)
    half = int(math.ceil((r + 0.5) * math.sqrt(2.0) + 0.5))
    return _Walk(qa, qb, iza, izb, steep, lo, count, ua, va, slope, r, half)


def _coverage_kernel(camera: Camera, wk: _Walk, depth: NDArray[np.float32] | None, depth_bias: float,
                     shade: tuple[NDArray[np.uint8], NDArray[np.uint8]] | None = None
                     ) -> tuple[NDArray[np.int32], NDArray[np.float32], NDArray[np.uint8]]:
    """:func:`segment_coverage` by the compiled :func:`_coverage_loop`: (pixels with α > 0 in no order, α, and with
    ``shade`` = (plain background, line colour) uint8 their colours round((1 − α) b + α c) and no α, else none)."""
    assert _coverage_jit is not None
    W, H = camera.width, camera.height
    zb = np.zeros(0, np.float32) if depth is None else depth.ravel()
    cap = min(W * H, int(wk.count.sum()) * (2 * wk.half + 1))
    pix, alpha = np.empty(cap, np.int32), np.empty(cap if shade is None else 0, np.float32)
    colors = np.empty((cap if shade is not None else 0, 3), np.uint8)
    base, color = (shade[0].astype(np.float32), shade[1].astype(np.float32)) if shade is not None else \
        (np.zeros(3, np.float32), np.zeros(3, np.float32))
    n = _coverage_jit(wk.qa, wk.qb, wk.steep, wk.lo, wk.count, wk.ua, wk.va, wk.slope, wk.r, wk.half, W, H, wk.iza,
                      wk.izb, zb, depth_bias, depth is not None, *_segment_normals(wk.qa, wk.qb),
                      max(1, BAND_BYTES // (4 * W)), pix, alpha, shade is not None, colors, base, color)
    return pix[:n], alpha[:n], colors[:n]


def segment_coverage(camera: Camera, starts: ArrayLike, ends: ArrayLike, width_px: float = 2.0,
                     depth: NDArray[np.float32] | None = None, depth_bias: float = 5e-3, *, jit: bool = False
                     ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """α(p) = max over segments of clip(w/2 + ½ − dist(p, a'b'), 0, 1), a'b' the projected segment (anti-aliased).

    Returns the flat pixel indices (sorted, unique) with α > 0 and their α. Segments are clipped to the near plane
    and to the image; candidate pixels are walked along each segment's major axis, a few to each side, so the work
    is proportional to the length drawn. Beside a segment (its parameter s = (p − a') · e / |e|² in [0, 1]) dist is
    the affine |(p − a') · n̂| (:func:`_segment_normals`), past its ends the distance to the nearer end.
    With ``depth`` (H, W), a pixel counts only where the segment's view depth
    there (1/d interpolated along the segment, as it is affine on screen) ≤ buffer · (1 + depth_bias). ``jit``: the
    candidates are evaluated by a compiled kernel with the same arithmetic (for jobs that compile anyway).
    """
    W, H = camera.width, camera.height
    none = (np.zeros(0, np.int64), np.zeros(0, np.float32))
    wk = _walk(camera, starts, ends, width_px)
    if wk is None:
        return none
    if jit and _coverage_jit is not None and jit_enabled():
        pix32, alpha, _ = _coverage_kernel(camera, wk, depth, depth_bias)
        order = np.argsort(pix32)
        return pix32[order].astype(np.int64), alpha[order]
    qa, qb, iza, izb, steep, lo, count = wk.qa, wk.qb, wk.iza, wk.izb, wk.steep, wk.lo, wk.count
    ua, va, slope, r, half = wk.ua, wk.va, wk.slope, wk.r, wk.half
    ub = np.where(steep, qb[:, 1], qb[:, 0])
    rows = np.arange(len(qa))
    seg = np.repeat(rows, count)
    u = (np.arange(len(seg)) - np.repeat(np.cumsum(count) - count, count) + lo[seg]).astype(np.float64)
    uc = np.clip(u, np.minimum(ua, ub)[seg], np.maximum(ua, ub)[seg])
    vc = np.floor(va[seg] + (uc - ua[seg]) * slope[seg] + 0.5)
    off = np.arange(-half, half + 1, dtype=np.float64)
    U = np.repeat(u, len(off))
    Vv = (vc[:, None] + off).ravel()
    S = np.repeat(seg, len(off))
    X = np.where(steep[S], Vv, U)
    Y = np.where(steep[S], U, Vv)
    inside = (X >= 0) & (X < W) & (Y >= 0) & (Y < H)
    X, Y, S = X[inside], Y[inside], S[inside]
    ill, nx, ny = _segment_normals(qa, qb)
    ex, ey = qb[S, 0] - qa[S, 0], qb[S, 1] - qa[S, 1]
    rx, ry = X - qa[S, 0], Y - qa[S, 1]
    s = (rx * ex + ry * ey) * ill[S]
    along = (ill[S] > 0) & (s >= 0.0) & (s <= 1.0)  # beside the segment: the distance to its line, affine
    t = np.minimum(np.maximum(s, 0.0), 1.0)
    ux, uy = rx - t * ex, ry - t * ey
    dist = np.where(along, np.abs(rx * nx[S] + ry * ny[S]), np.sqrt(ux * ux + uy * uy))
    cov = np.minimum(np.maximum(r + 0.5 - dist, 0.0), 1.0)
    flat = Y.astype(np.int64) * W + X.astype(np.int64)
    keep = cov > 0
    if depth is not None:
        with np.errstate(divide="ignore"):
            dd = 1.0 / (iza[S] + t * (izb[S] - iza[S]))
        keep &= dd <= depth.ravel()[flat].astype(np.float64) * (1.0 + depth_bias)
    flat, cov = flat[keep], cov[keep].astype(np.float32)
    if len(qa) > 1 and len(flat) > (W * H) // 64:  # many segments: the max per pixel through a dense buffer
        dense = np.zeros(W * H, np.float32)
        np.maximum.at(dense, flat, cov)
        pix = np.flatnonzero(dense)
        return pix, dense[pix]
    if len(qa) > 1 and len(flat):
        order = np.lexsort((-cov, flat))  # per pixel, the largest coverage first
        flat, cov = flat[order], cov[order]
        first = np.r_[True, flat[1:] != flat[:-1]]
        return flat[first], cov[first]
    order = np.argsort(flat)
    return flat[order], cov[order]


#: The bytes of α the compiled coverage keeps at once: a band of rows this large (in cache), not the whole image.
BAND_BYTES = 1 << 18


# complexity: a numba kernel: the anti-aliased segment loop, flat
def _coverage_loop(qa: NDArray[np.float64], qb: NDArray[np.float64], steep: NDArray[np.bool_],  # noqa: C901
                   lo: NDArray[np.int64], count: NDArray[np.int64], ua: NDArray[np.float64],
                   va: NDArray[np.float64], slope: NDArray[np.float64], r: float, half: int, W: int, H: int,
                   iza: NDArray[np.float64], izb: NDArray[np.float64], depth: NDArray[np.float32], bias: float,
                   use_depth: bool, ill: NDArray[np.float64], nxs: NDArray[np.float64], nys: NDArray[np.float64],
                   band: int, pix: NDArray[np.int32], alpha: NDArray[np.float32], shade: bool,
                   colors: NDArray[np.uint8], base: NDArray[np.float32], color: NDArray[np.float32]
                   ) -> int:  # pragma: no cover - compiled; segment_coverage's NumPy path and _blended are its oracles
    """:func:`segment_coverage`'s candidates and coverage with the same arithmetic, a band of ``band`` rows at a
    time: α = max over segments is kept for the band only, then each pixel of α > 0 is appended to ``pix`` and
    either ``alpha`` or, with ``shade``, its colour round((1 − α) b + α c) over the plain ``base`` b to ``colors``
    (:func:`_blended`'s float32 arithmetic); returns how many there were.

    A segment's walked pixels u whose candidates can fall in the band [b₀, b₁): for y major, u ∈ [b₀, b₁); for
    x major those with v(clamp(u)) = v_a + (clamp(u) − u_a) slope within half + 2 rows of it (the candidates lie
    within half + ½ of it). Of the candidates v ∈ [v_c − half, v_c + half] only those within R √(1 + slope²) of
    the segment's line are evaluated (R = r + ½, plus 10⁻³ px): a pixel of α > 0 lies within R of the segment.

    Without a depth test, the interior of a segment (walked pixels ≥ half + 2 from both ends, where every
    candidate's t is in [0, 1], so dist = |(p − a) · n̂|) goes by rows instead: on row y the pixels with
    |y − v(x)| ≤ R √(1 + slope²) + 10⁻³ (x major) or |x − v(y)| ≤ … (y major), a run of consecutive pixels, α
    max-ed in place without a branch; the band's runs are flushed as its walked pixels are. Those are exactly
    the walk's candidates of α > 0 there when R √2 + ½ < half (v_c ± half holds every pixel within R of the
    line), and dist and α have the same arithmetic, so the same α, pixel for pixel (the order differs).
    """
    buf = np.zeros(band * W, np.float32)
    hits = np.empty(band * W, np.int32)
    runs = np.empty((band * len(lo), 2), np.int64)  # per band: a run's first and last pixel
    n = 0
    reach = r + 0.5
    one = np.float32(1.0)
    margin = half + 2.0
    # the interior of a segment (major pixels ≥ margin from both ends: t surely in [0, 1]) by rows, when every
    # pixel of α > 0 there is a candidate of the walk (R √2 + ½ < half): the same pixels, the same arithmetic
    by_rows = not use_depth and reach * np.sqrt(2.0) + 0.5 + 1e-3 < half
    grey = shade and base[0] == base[1] and base[1] == base[2] and color[0] == color[1] and color[1] == color[2]
    for b0 in range(0, H, band):
        b1 = min(b0 + band, H)
        nh = 0
        nr = 0
        for s in range(len(lo)):
            st = steep[s]
            ub = qb[s, 1] if st else qb[s, 0]
            umin, umax = min(ua[s], ub), max(ua[s], ub)
            sl = slope[s]
            los = lo[s]
            uas, vas = ua[s], va[s]
            ax, ay = qa[s, 0], qa[s, 1]
            ex, ey = qb[s, 0] - ax, qb[s, 1] - ay
            il, nx, ny = ill[s], nxs[s], nys[s]
            rv = reach * np.sqrt(1.0 + sl * sl) + 1e-3
            i0, i1 = count[s], count[s] - 1  # interior walked pixels: none
            if by_rows and il > 0:
                i0 = max(0, int(np.ceil(umin + margin)) - los)
                i1 = min(count[s] - 1, int(np.floor(umax - margin)) - los)
            if i0 <= i1:
                cu0, cu1 = los + i0, los + i1  # interior major pixels
                if st:
                    y0, y1 = max(cu0, b0), min(cu1, b1 - 1)
                else:
                    cu0, cu1 = max(cu0, 0), min(cu1, W - 1)
                    isl = 1.0 / sl if sl != 0.0 else 0.0
                    w0, w1 = vas + (cu0 - uas) * sl, vas + (cu1 - uas) * sl
                    y0 = max(int(np.ceil(min(w0, w1) - rv)), b0)
                    y1 = min(int(np.floor(max(w0, w1) + rv)), b1 - 1)
                for y in range(y0, y1 + 1):
                    fy = float(y)
                    if st:
                        vl = vas + (fy - uas) * sl
                        x0 = max(int(np.ceil(vl - rv)), 0)
                        x1 = min(int(np.floor(vl + rv)), W - 1)
                    elif sl == 0.0:
                        if abs(fy - vas) > rv:
                            continue
                        x0, x1 = cu0, cu1
                    else:  # x of v(x) = y ∓ rv (× 1/slope: a rounding off, well within the 10⁻³ px kept)
                        c0, c1 = uas + (fy - vas - rv) * isl, uas + (fy - vas + rv) * isl
                        x0 = max(int(np.ceil(min(c0, c1))), cu0)
                        x1 = min(int(np.floor(max(c0, c1))), cu1)
                    if x0 > x1:
                        continue
                    ryn = (fy - ay) * ny
                    q0 = (y - b0) * W
                    for x in range(x0, x1 + 1):
                        dist = abs((float(x) - ax) * nx + ryn)
                        c = np.float32(min(max(reach - dist, 0.0), 1.0))
                        q = q0 + x
                        buf[q] = max(buf[q], c)
                    runs[nr, 0] = q0 + x0
                    runs[nr, 1] = q0 + x1
                    nr += 1
            j0, j1 = 0, count[s] - 1
            if st:
                j0, j1 = max(j0, b0 - los), min(j1, b1 - 1 - los)
                vmin, vmax = 0, W - 1
            else:
                j0, j1 = max(j0, -los), min(j1, W - 1 - los)
                vmin, vmax = b0, b1 - 1
                v0, v1 = b0 - half - 2.0, b1 - 1 + half + 2.0
                if sl == 0.0:
                    if vas < v0 or vas > v1:
                        continue
                else:
                    c0, c1 = uas + (v0 - vas) / sl, uas + (v1 - vas) / sl
                    p0, p1 = max(min(c0, c1), umin), min(max(c0, c1), umax)
                    if p0 > p1:
                        continue
                    if p0 > umin:
                        j0 = max(j0, int(np.floor(p0)) - 1 - los)
                    if p1 < umax:
                        j1 = min(j1, int(np.ceil(p1)) + 1 - los)
            for part in range(2):  # the walked pixels before the interior, then after it
                ja, jb = (j0, min(j1, i0 - 1)) if part == 0 else (max(j0, i1 + 1), j1)
                if i0 > i1:
                    if part == 1:
                        break
                    ja, jb = j0, j1
                for j in range(ja, jb + 1):
                    iu = los + j
                    u = float(iu)
                    uc = min(max(u, umin), umax)
                    vc = np.floor(vas + (uc - uas) * sl + 0.5)
                    vl = vas + (u - uas) * sl
                    ivc = int(vc)
                    o0 = max(-half, int(np.ceil(vl - rv - vc)), vmin - ivc)
                    o1 = min(half, int(np.floor(vl + rv - vc)), vmax - ivc)
                    for o in range(o0, o1 + 1):
                        iv = ivc + o
                        v = float(iv)
                        if st:
                            rx, ry = v - ax, u - ay
                            q = (iu - b0) * W + iv
                        else:
                            rx, ry = u - ax, v - ay
                            q = (iv - b0) * W + iu
                        t = (rx * ex + ry * ey) * il
                        if il > 0 and t >= 0.0 and t <= 1.0:
                            dist = abs(rx * nx + ry * ny)
                        else:
                            t = min(max(t, 0.0), 1.0)
                            ux, uy = rx - t * ex, ry - t * ey
                            dist = np.sqrt(ux * ux + uy * uy)
                        cov = min(max(r + 0.5 - dist, 0.0), 1.0)
                        if cov <= 0:
                            continue
                        if use_depth and not 1.0 / (iza[s] + t * (izb[s] - iza[s])) <= \
                                float(depth[q + b0 * W]) * (1.0 + bias):
                            continue
                        c = np.float32(cov)
                        if c > buf[q]:
                            if buf[q] == 0:
                                hits[nh] = q
                                nh += 1
                            buf[q] = c
        for i in range(nh + nr):
            if i < nh:
                qs = qe = hits[i]
            else:
                qs, qe = runs[i - nh, 0], runs[i - nh, 1]
            for q in range(qs, qe + 1):
                a = buf[q]
                if a > 0:
                    buf[q] = 0
                    pix[n] = b0 * W + q
                    if grey:  # the three channels' arithmetic is the same
                        g = np.uint8(np.rint(base[0] * (one - a) + color[0] * a))
                        colors[n, 0], colors[n, 1], colors[n, 2] = g, g, g
                    elif shade:
                        for k in range(3):
                            colors[n, k] = np.uint8(np.rint(base[k] * (one - a) + color[k] * a))
                    else:
                        alpha[n] = a
                    n += 1
    return n


_coverage_jit = kernel(_coverage_loop)


def _blend_loop(flat: NDArray[np.uint8], pix: NDArray[np.int32], alpha: NDArray[np.float32],
                color: NDArray[np.float32]) -> None:  # pragma: no cover - compiled; blend is its oracle
    """:func:`blend` in place (float32 arithmetic, rounding half to even, as NumPy's); a kernel of its own: inside
    :func:`_coverage_loop` it slowed the walk down by half."""
    one = np.float32(1.0)
    for j in range(len(pix)):
        p = pix[j]
        a = alpha[j]
        for c in range(3):
            flat[p, c] = np.uint8(np.rint(np.float32(flat[p, c]) * (one - a) + color[c] * a))


_blend_jit = kernel(_blend_loop)


def blend(image: Image, pixels: NDArray[np.int64], alpha: NDArray[np.float32], color: ArrayLike, *,
          inplace: bool = False) -> Image:
    """out = round((1 − α) img + α c) at the flat ``pixels``; a new image (``inplace``: ``image`` itself)."""
    out = image if inplace else image.copy()
    if len(pixels):
        o = out.reshape(-1, 3)
        o[pixels] = _blended(o[pixels], alpha, color)
    return out


def _blended(base: NDArray[np.uint8], alpha: NDArray[np.float32], color: ArrayLike) -> NDArray[np.uint8]:
    """round((1 − α) b + α c) in float32, rounding half to even, for colours ``base`` (N, 3) or one (3,) and α (N,):
    a channel at a time (an (N, 3) array's rows of three cost NumPy ten times as much)."""
    c = rgb8(color).astype(np.float32)
    out = np.empty((len(alpha), 3), np.uint8)
    keep = 1.0 - alpha
    for k in range(3):
        b = base[k] if base.ndim == 1 else base[:, k]
        out[:, k] = np.round(b * keep + c[k] * alpha)
    return out


def draw_segments(image: ArrayLike, camera: Camera, starts: ArrayLike, ends: ArrayLike,
                  color: ArrayLike = (0.1, 0.1, 0.1), width_px: float = 2.0,
                  depth: ArrayLike | None = None, *, depth_bias: float = 5e-3, jit: bool = False,
                  inplace: bool = False) -> Image:
    """Each segment a→b drawn with coverage clip(w/2 + ½ − distance, 0, 1) (:func:`segment_coverage`).

    ``starts``/``ends`` are ``(S, 3)`` world points; segments are clipped to the near plane.
    With ``depth`` (the ``(H, W)`` buffer of :func:`render_triangles`), a pixel is drawn only
    where the segment's view depth ≤ buffer · (1 + depth_bias). Returns a new image (``inplace``: draws into
    ``image``, a uint8 (H, W, 3) array, and returns it).
    """
    img = _check_image(image)
    zb = _check_depth(depth, img)
    cam = _camera_for(camera, img)
    if jit and _coverage_jit is not None and _blend_jit is not None and jit_enabled():  # α by bands of rows
        out = img if inplace else img.copy()
        wk = _walk(cam, starts, ends, width_px)
        if wk is not None:
            hit, cov, _ = _coverage_kernel(cam, wk, zb, depth_bias)
            _blend_jit(out.reshape(-1, 3), hit, cov, rgb8(color).astype(np.float32))
        return out
    pix, alpha = segment_coverage(cam, starts, ends, width_px, zb, depth_bias)
    return blend(img, pix, alpha, color, inplace=inplace)


def draw_polyline(image: ArrayLike, camera: Camera, points: ArrayLike,
                  color: ArrayLike = (0.1, 0.1, 0.1), width_px: float = 2.0,
                  depth: ArrayLike | None = None, *, depth_bias: float = 5e-3) -> Image:
    """Segments p_k → p_{k+1} of ``points`` ``(P, 3)`` drawn with :func:`draw_segments`."""
    p = np.asarray(points, dtype=float)
    if p.ndim != 2 or p.shape[1] != 3:
        raise RenderError(f"points must be (P, 3), got shape {p.shape}")
    return draw_segments(image, camera, p[:-1], p[1:], color, width_px, depth, depth_bias=depth_bias)


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
            _scatter_jit(flat, self.pixels, self.colors)
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


def _camera_for(camera: Camera, img: Image) -> Camera:
    H, W = img.shape[:2]
    if (camera.width, camera.height) != (W, H):
        raise RenderError(f"camera is {camera.width}x{camera.height} but the image is {W}x{H}")
    return camera
