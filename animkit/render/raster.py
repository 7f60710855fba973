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

from collections.abc import Sequence
from typing import Literal, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit import jit as jit_module
from animkit.errors import RenderError
from animkit.jit import enabled as jit_enabled
from animkit.model.transforms import cross3
from animkit.render.camera import Camera
from animkit.render.image import Depth, Image, _check_image, check_frame_buffer, rgb8, solid_image
from animkit.render.overlays import Backdrop, MarkerShape, draw_grid, draw_markers, grid_backdrop, grid_segments
from animkit.render.segments import (
    BAND_BYTES,
    blend,
    draw_polyline,
    draw_segments,
    segment_coverage,
    segment_coverage_each,
)
from animkit.render.shading import _flat_colors, _light, _shade, face_shading, sample_bilinear
from animkit.render.triangles import Surface, surface
from animkit.render.visibility import (
    _min3,
    _paint_kernel,
    _raster_jit,
    _Setup,
    _setup,
    _visible_kernel,
    _visible_numpy,
    compiled_pays,
)

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
    "segment_coverage_each",
    "blend",
    "draw_segments",
    "draw_markers",
    "draw_grid",
    "Backdrop",
    "grid_backdrop",
    "grid_segments",
    "BAND_BYTES",
]

_MAX_SIDE = 1 << 15  # samples a side


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
    _check_render(camera, supersample, ambient, backdrop, out)
    s = supersample
    W, H = camera.width * s, camera.height * s
    light = _light(camera, light_dir)
    V, Fc, first = _merged(surfaces)
    view = camera.view_matrix()
    pc = V @ view[:3, :3].T + view[:3, 3]
    setup, face_of = _frame_setup(camera, surfaces, pc, Fc, s)
    use_kernel = compiled_pays(W * H) if jit is None else (jit and _raster_jit is not None and jit_enabled())
    # visibility runs compiled whenever the ahead-of-time kernel is built (no start-up to repay); ``jit`` decides
    # numba's kernels (smooth shading here)
    visible_compiled = use_kernel or jit_module.native_kernels() is not None
    into = out if s == 1 else None  # supersampled: drawn at full size, then filtered into out
    flat = _backdrop_samples(background, backdrop, H, W, s, into, use_kernel)
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
    img = _downsampled(flat.reshape(H, W, 3) if into is None else into, s, out)
    if not depth_out:
        return img
    if zbuf is None:
        zbuf = np.zeros(W * H, np.float32)
        zbuf[pix] = zvis
    return img, _view_depth(zbuf.reshape(H, W), s)


def _check_render(camera: Camera, supersample: int, ambient: float, backdrop: Image | Backdrop | None,
                  out: Image | None) -> None:
    """:func:`render_surfaces`' arguments, checked (one RenderError naming what is wrong)."""
    if supersample not in (1, 2, 3, 4):
        raise RenderError(f"supersample must be 1, 2, 3 or 4, got {supersample!r}")
    if not 0.0 <= ambient <= 1.0:
        raise RenderError(f"ambient must be in [0, 1], got {ambient!r}")
    W, H = camera.width * supersample, camera.height * supersample
    if max(W, H) > _MAX_SIDE:
        raise RenderError(f"image too large: {W}x{H} samples (at most {_MAX_SIDE} a side)")
    if backdrop is not None:
        bh, bw = (backdrop.height, backdrop.width) if isinstance(backdrop, Backdrop) else \
            _check_image(backdrop).shape[:2]
        if (bh, bw) != (camera.height, camera.width):
            raise RenderError(f"backdrop is {bw}x{bh} but the camera is {camera.width}x{camera.height}")
    if out is not None:
        check_frame_buffer(out, camera)


def _merged(surfaces: Sequence[Surface]) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """The surfaces as one mesh: vertices (V, 3), faces (F, 3) into them, and each surface's first face row."""
    if len(surfaces) == 1:
        return surfaces[0].vertices, surfaces[0].faces, np.zeros(1, np.int64)
    if not surfaces:
        return np.zeros((0, 3)), np.zeros((0, 3), np.int64), np.zeros(1, np.int64)
    counts_v = [len(x.vertices) for x in surfaces]
    counts_f = [len(x.faces) for x in surfaces]
    off_v = np.cumsum([0, *counts_v[:-1]])
    V = np.concatenate([x.vertices for x in surfaces])
    Fc = np.concatenate([x.faces + o for x, o in zip(surfaces, off_v, strict=True)])
    return V, Fc, np.cumsum([0, *counts_f[:-1]]).astype(np.int64)


def _frame_setup(camera: Camera, surfaces: Sequence[Surface], pc: NDArray[np.float64], Fc: NDArray[np.int64],
                 s: int) -> tuple[_Setup, NDArray[np.int64]]:
    """The drawn faces' set-up (:func:`_drawn_faces`, x = (W/2 − ½) + f x_c / d, y = (H/2 − ½) − f y_c / d, then
    :func:`animkit.render.visibility._setup`) and each set-up row's face of the concatenation: in one pass of the
    ahead-of-time kernel where it is built (``animkit._native.tri_setup``, the same operations in the same order:
    the same numbers), else in NumPy."""
    W, H = camera.width * s, camera.height * s
    fp = camera.focal_px() * s
    native = jit_module.native_kernels()
    if native is not None:
        F = len(Fc)
        closed = np.concatenate([x.closed if x.closed is not None else np.zeros(len(x.faces), bool)
                                 for x in surfaces]) if any(x.closed is not None for x in surfaces) else np.zeros(0)
        ints, abc, wabc = np.empty((5, F), np.int64), np.empty((4, F, 3)), np.empty((3, F))
        T = native.tri_setup(np.ascontiguousarray(pc, np.float64), np.ascontiguousarray(Fc, np.int64),
                             closed.astype(np.uint8), camera.near, camera.far, fp, 0.5 * W - 0.5, 0.5 * H - 0.5, W, H,
                             ints, abc, wabc)
        face = ints[0, :T]
        return _Setup(face, ints[1, :T], ints[2, :T], ints[3, :T], ints[4, :T], abc[0, :T], abc[1, :T], abc[2, :T],
                      wabc[0, :T], wabc[1, :T], wabc[2, :T], abc[3, :T]), face
    depth = -pc[:, 2]
    fd = depth[Fc]  # (F, 3)
    keep = _drawn_faces(camera, surfaces, pc, Fc, fd)
    with np.errstate(divide="ignore", invalid="ignore"):
        xs = 0.5 * W - 0.5 + fp * pc[:, 0] / depth
        ys = 0.5 * H - 0.5 - fp * pc[:, 1] / depth
    tri = Fc[keep]
    setup = _setup(xs[tri], ys[tri], 1.0 / fd[keep], W, H)
    return setup, keep[setup.rows]  # setup row → face of the concatenation


def _drawn_faces(camera: Camera, surfaces: Sequence[Surface], pc: NDArray[np.float64], Fc: NDArray[np.int64],
                 fd: NDArray[np.float64]) -> NDArray[np.intp]:
    """Faces with every corner's depth in [near, far], less the back faces of closed solids:
    (v₁ − v₀) × (v₂ − v₀) · v₀ > 0 in view space (``pc``; ``fd`` the corners' depths)."""
    dmin = _min3(fd)
    visible = (dmin >= camera.near) & (dmin <= camera.far)
    if any(x.closed is not None for x in surfaces):
        closed = np.concatenate([x.closed if x.closed is not None else np.zeros(len(x.faces), bool)
                                 for x in surfaces])
        c = pc[Fc[closed]]
        away = np.einsum("fi,fi->f", cross3(c[:, 1] - c[:, 0], c[:, 2] - c[:, 0]), c[:, 0]) > 0.0
        visible[np.flatnonzero(closed)[away]] = False
    return np.flatnonzero(visible)


def _backdrop_samples(background: ArrayLike, backdrop: Image | Backdrop | None, H: int, W: int, s: int,
                      into: Image | None, jit: bool) -> NDArray[np.uint8]:
    """The (H·W, 3) samples a frame starts from (in ``into`` when given): the plain background or the backdrop,
    each pixel repeated s × s when supersampled."""
    if backdrop is None:
        return solid_image(H, W, background, into).reshape(-1, 3)
    if isinstance(backdrop, Backdrop) and s == 1:
        flat = solid_image(H, W, backdrop.background, into).reshape(-1, 3)
        backdrop.paint(flat, jit)
        return flat
    full = backdrop.image() if isinstance(backdrop, Backdrop) else backdrop
    if s > 1:
        return np.repeat(np.repeat(full, s, axis=0), s, axis=1).reshape(-1, 3)
    if into is None:
        return full.reshape(-1, 3).copy()
    np.copyto(into, full)
    return into.reshape(-1, 3)


def _downsampled(img: Image, s: int, out: Image | None) -> Image:
    """The s × s box filter of ``img``, rounded (``img`` itself when s = 1), into ``out`` when given."""
    if s == 1:
        return img
    H, W = img.shape[0] // s, img.shape[1] // s
    acc = np.zeros((H, W, 3), dtype=np.uint16)
    for dy in range(s):
        for dx in range(s):
            acc += img[dy::s, dx::s]
    small = ((acc + (s * s) // 2) // (s * s)).astype(np.uint8)
    if out is None:
        return small
    np.copyto(out, small)
    return out


def _view_depth(zb: NDArray[np.float32], s: int) -> Depth:
    """d = 1 / (1/d) per pixel (inf where empty) from the samples' 1/d ``zb``: the nearest of each s × s block."""
    if s > 1:
        zb = np.max([zb[dy::s, dx::s] for dy in range(s) for dx in range(s)], axis=0)
    with np.errstate(divide="ignore"):
        return (1.0 / zb).astype(np.float32)
