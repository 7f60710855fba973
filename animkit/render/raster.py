"""The default headless renderer: flat-shaded triangles with a z-buffer, in pure NumPy.

Deterministic, no display, no GPU. Triangles are grouped by the size of their screen bounding
box; each group is rasterised at once with barycentric tests over its boxes' pixel centres
(no Python loop over pixels or triangles). Depth is resolved per pixel with a scatter-max of
inverse depth ``1/d``, which is affine in screen space, so the depth test is exact under
perspective. Anti-aliasing is supersampling followed by a box downsample.

Overlays (:func:`draw_polyline`, :func:`draw_markers`, :func:`draw_grid`) draw on a finished
frame and return a new image; given the depth buffer from ``render_triangles(...,
depth_out=True)`` they are hidden behind nearer geometry.

Colours are RGB triples: floats in ``[0, 1]`` or integers in ``[0, 255]`` (see :func:`rgb8`).
"""

from __future__ import annotations

import math
from typing import Literal, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import RenderError, unknown_name
from .camera import Camera, UpAxis, up_vector

__all__ = [
    "MarkerShape",
    "rgb8",
    "face_shading",
    "render_triangles",
    "draw_polyline",
    "draw_segments",
    "draw_markers",
    "draw_grid",
]

Image = NDArray[np.uint8]
Depth = NDArray[np.float32]
MarkerShape = Literal["disc", "cross"]
_MARKER_SHAPES: tuple[MarkerShape, ...] = ("disc", "cross")

# Box-size classes (pixels): a triangle is rasterised over a box of the next class up.
_SIZE_CLASSES = 2 ** np.arange(16)
_CHUNK = 1 << 20  # max pixels tested at once (memory bound)


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


@overload
def render_triangles(camera: Camera, vertices: ArrayLike, faces: ArrayLike, face_colors: ArrayLike, *,
                     light_dir: ArrayLike | None = ..., ambient: float = ..., background: ArrayLike = ...,
                     supersample: int = ..., depth_out: Literal[False] = ...) -> Image: ...
@overload
def render_triangles(camera: Camera, vertices: ArrayLike, faces: ArrayLike, face_colors: ArrayLike, *,
                     light_dir: ArrayLike | None = ..., ambient: float = ..., background: ArrayLike = ...,
                     supersample: int = ..., depth_out: Literal[True]) -> tuple[Image, Depth]: ...
def render_triangles(camera: Camera, vertices: ArrayLike, faces: ArrayLike, face_colors: ArrayLike, *,
                     light_dir: ArrayLike | None = None, ambient: float = 0.35,
                     background: ArrayLike = (1.0, 1.0, 1.0), supersample: int = 1,
                     depth_out: bool = False) -> Image | tuple[Image, Depth]:
    """pixel = c_f · I_f for the face f with the largest 1/d at the pixel centre (z-buffer), else background.

    ``vertices`` ``(V, 3)`` world; ``faces`` ``(F, 3)`` vertex indices; ``face_colors`` ``(F, 3)`` or
    one ``(3,)`` colour (floats 0..1 or uint8). Shading ``I_f`` is flat Lambert + ambient
    (:func:`face_shading`). Triangles with a vertex nearer than ``camera.near`` are dropped
    (not clipped); triangles wholly beyond ``camera.far`` too. Returns a ``(H, W, 3)`` uint8 image,
    and with ``depth_out=True`` also the ``(H, W)`` float32 view depth (``inf`` where empty; the
    nearest sample of each supersampled block).
    """
    if supersample not in (1, 2, 3, 4):
        raise RenderError(f"supersample must be 1, 2, 3 or 4, got {supersample!r}")
    if not 0.0 <= ambient <= 1.0:
        raise RenderError(f"ambient must be in [0, 1], got {ambient!r}")
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
    colors = rgb8(face_colors, "face_colors")
    if colors.ndim == 1:
        colors = np.broadcast_to(colors, (len(Fc), 3))
    if colors.shape != (len(Fc), 3):
        raise RenderError(f"face_colors must be (3,) or (F, 3) with F={len(Fc)}, got {colors.shape}")
    bg = rgb8(background, "background")

    s = supersample
    W, H = camera.width * s, camera.height * s
    if max(W, H) > _SIZE_CLASSES[-1]:
        raise RenderError(f"image too large: {W}x{H} samples (at most {_SIZE_CLASSES[-1]} a side)")
    view = camera.view_matrix()
    pc = V @ view[:3, :3].T + view[:3, 3]
    depth = -pc[:, 2]
    fd = depth[Fc]  # (F, 3)
    dmin = _min3(fd)
    keep = (dmin >= camera.near) & (dmin <= camera.far)
    face_ids = np.flatnonzero(keep)
    shade = face_shading(camera, V[Fc[face_ids]], light_dir, ambient)
    shaded = np.round(colors[face_ids].astype(float) * shade[:, None]).astype(np.uint8)

    fp = camera.focal_px() * s
    with np.errstate(divide="ignore", invalid="ignore"):
        xs = 0.5 * W - 0.5 + fp * pc[:, 0] / depth
        ys = 0.5 * H - 0.5 - fp * pc[:, 1] / depth
    tri = Fc[face_ids]
    pix, winv, fidx = _rasterise(xs[tri], ys[tri], 1.0 / fd[face_ids], W, H)

    zbuf = np.zeros(W * H, dtype=np.float32)  # inverse depth; 0 = empty (infinitely far)
    np.maximum.at(zbuf, pix, winv)
    win = winv >= zbuf[pix]
    flat = np.empty((W * H, 3), dtype=np.uint8)
    flat[:] = bg
    flat[pix[win]] = shaded[fidx[win]]
    img = flat.reshape(H, W, 3)
    if s > 1:
        acc = np.zeros((camera.height, camera.width, 3), dtype=np.uint16)
        for dy in range(s):
            for dx in range(s):
                acc += img[dy::s, dx::s]
        img = ((acc + (s * s) // 2) // (s * s)).astype(np.uint8)  # box filter, rounded
    if not depth_out:
        return img
    zb = zbuf.reshape(H, W)
    if s > 1:
        zb = np.max([zb[dy::s, dx::s] for dy in range(s) for dx in range(s)], axis=0)
    with np.errstate(divide="ignore"):
        dbuf = (1.0 / zb).astype(np.float32)
    return img, dbuf


def _min3(a: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.minimum(np.minimum(a[:, 0], a[:, 1]), a[:, 2])


def _max3(a: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.maximum(np.maximum(a[:, 0], a[:, 1]), a[:, 2])


def _rasterise(X: NDArray[np.float64], Y: NDArray[np.float64], IZ: NDArray[np.float64], W: int,
               H: int) -> tuple[NDArray[np.int64], NDArray[np.float32], NDArray[np.int64]]:
    """Fragments (pixel index, 1/d, triangle index) of all pixel centres with barycentrics b ≥ 0.

    ``X, Y, IZ`` are ``(T, 3)`` screen coordinates and inverse depths of triangle corners.
    Barycentric b_i = A_i x + B_i y + C_i is the edge function of the edge opposite corner i
    over twice the signed area; 1/d = Σ b_i / d_i is affine in (x, y).
    """
    empty = (np.empty(0, np.int64), np.empty(0, np.float32), np.empty(0, np.int64))
    if len(X) == 0:
        return empty
    with np.errstate(invalid="ignore"):
        x0 = np.clip(np.ceil(_min3(X)), 0, W)
        x1 = np.clip(np.floor(_max3(X)), -1, W - 1)
        y0 = np.clip(np.ceil(_min3(Y)), 0, H)
        y1 = np.clip(np.floor(_max3(Y)), -1, H - 1)
    area2 = (X[:, 1] - X[:, 0]) * (Y[:, 2] - Y[:, 0]) - (X[:, 2] - X[:, 0]) * (Y[:, 1] - Y[:, 0])
    ok = (x0 <= x1) & (y0 <= y1) & (np.abs(area2) > 1e-12) & np.isfinite(area2)
    idx = np.flatnonzero(ok)
    if len(idx) == 0:
        return empty
    X, Y, IZ, area2 = X[idx], Y[idx], IZ[idx], area2[idx]
    x0, x1, y0, y1 = x0[idx], x1[idx], y0[idx], y1[idx]
    nxt, prv = [1, 2, 0], [2, 0, 1]
    inv = (1.0 / area2)[:, None]
    A = (Y[:, nxt] - Y[:, prv]) * inv
    B = (X[:, prv] - X[:, nxt]) * inv
    # value at the box origin (x0, y0), kept small so float32 is enough per pixel
    C = A * (x0[:, None] - X[:, nxt]) + B * (y0[:, None] - Y[:, nxt])
    WA, WB, WC = (A * IZ).sum(axis=1), (B * IZ).sum(axis=1), (C * IZ).sum(axis=1)
    params = np.concatenate([A, B, C], axis=1).astype(np.float32)  # (T, 9)
    bw = (x1 - x0 + 1).astype(np.int64)
    bh = (y1 - y0 + 1).astype(np.int64)
    ncls = len(_SIZE_CLASSES)
    cw = np.searchsorted(_SIZE_CLASSES, bw)
    ch = np.searchsorted(_SIZE_CLASSES, bh)
    key = cw * ncls + ch
    order = np.argsort(key, kind="stable")
    skey = key[order]
    starts = np.flatnonzero(np.r_[True, skey[1:] != skey[:-1]])
    ends = np.r_[starts[1:], len(order)]
    out_t, out_x, out_y = [], [], []
    for a, b in zip(starts, ends, strict=True):
        BWc = int(_SIZE_CLASSES[skey[a] // ncls])
        BHc = int(_SIZE_CLASSES[skey[a] % ncls])
        n_box = BWc * BHc
        step = max(1, _CHUNK // n_box)
        ox = np.arange(BWc, dtype=np.float32)
        oy = np.arange(BHc, dtype=np.float32)[:, None]
        for c in range(a, b, step):
            sel = order[c:min(c + step, b)]
            p = params[sel][:, :, None, None]  # (T, 9, 1, 1)
            inside = (p[:, 3] * oy + p[:, 6]) + p[:, 0] * ox >= 0
            inside &= (p[:, 4] * oy + p[:, 7]) + p[:, 1] * ox >= 0
            inside &= (p[:, 5] * oy + p[:, 8]) + p[:, 2] * ox >= 0
            hits = np.flatnonzero(inside)
            if len(hits) == 0:
                continue
            t_local, p_local = np.divmod(hits, n_box)
            ry, rx = np.divmod(p_local, BWc)
            out_t.append(sel[t_local])
            out_x.append(rx)
            out_y.append(ry)
    if not out_t:
        return empty
    tri = np.concatenate(out_t)
    rx = np.concatenate(out_x)
    ry = np.concatenate(out_y)
    px = x0[tri].astype(np.int64) + rx
    py = y0[tri].astype(np.int64) + ry
    inb = (px < W) & (py < H)  # boxes of a size class may reach past the image edge
    if not np.all(inb):
        tri, rx, ry, px, py = tri[inb], rx[inb], ry[inb], px[inb], py[inb]
    w = (WC[tri] + WA[tri] * rx + WB[tri] * ry).astype(np.float32)
    return py * W + px, w, idx[tri]


# ----------------------------------------------------------------------------------------------
# overlays


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
           color: NDArray[np.uint8], depth: NDArray[np.float32] | None, bias: float) -> Image:
    """α(p) = max_k clip(r + ½ − |p − x_k|, 0, 1) over discs at ``xy``; out = (1 − α) img + α c."""
    H, W = img.shape[:2]
    out = img.copy()
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


def draw_segments(image: ArrayLike, camera: Camera, starts: ArrayLike, ends: ArrayLike,
                  color: ArrayLike = (0.1, 0.1, 0.1), width_px: float = 2.0,
                  depth: ArrayLike | None = None, *, depth_bias: float = 5e-3) -> Image:
    """Each segment a→b drawn as discs of radius w/2 at samples ≤ ½ px apart (anti-aliased).

    ``starts``/``ends`` are ``(S, 3)`` world points; segments are clipped to the near plane.
    With ``depth`` (the ``(H, W)`` buffer of :func:`render_triangles`), a sample is drawn only
    where its view depth ≤ buffer · (1 + depth_bias). Returns a new image.
    """
    img = _check_image(image)
    zb = _check_depth(depth, img)
    if not width_px > 0:
        raise RenderError(f"width_px must be > 0, got {width_px!r}")
    a = np.asarray(starts, dtype=float).reshape(-1, 3)
    b = np.asarray(ends, dtype=float).reshape(-1, 3)
    if a.shape != b.shape or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise RenderError("segment starts and ends must be finite and shaped alike (S, 3)")
    cam = _camera_for(camera, img)
    a, b = _clip_near(cam, a, b)
    if len(a) == 0:
        return img.copy()
    pa, _ = cam.project(a)
    pb, _ = cam.project(b)
    length = np.linalg.norm(pb - pa, axis=1)
    # keep the sample count sane for segments that project far outside the image
    length = np.minimum(length, 4.0 * (cam.width + cam.height))
    n = (np.ceil(length / 0.5).astype(np.int64) + 1)
    seg = np.repeat(np.arange(len(a)), n)
    first = np.repeat(np.cumsum(n) - n, n)
    t = (np.arange(len(seg)) - first) / np.maximum(n[seg] - 1, 1)
    pts = a[seg] + t[:, None] * (b[seg] - a[seg])
    xy, d = cam.project(pts)
    return _stamp(img, xy, d, 0.5 * width_px, rgb8(color), zb, depth_bias)


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
                 width_px: float = 2.0, depth_bias: float = 5e-3) -> Image:
    """A disc of radius r, or a "+" cross of arm r and stroke ``width_px``, centred on each projected point.

    Points behind the near plane are skipped; with ``depth`` a marker is hidden where its
    centre's view depth is behind the buffer. Returns a new image.
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
        return _stamp(img, xy, d, radius_px, rgb8(color), zb, depth_bias)
    n = int(math.ceil(2.0 * radius_px / 0.5)) + 1
    t = np.linspace(-radius_px, radius_px, n)
    horiz = np.stack([xy[:, None, 0] + t, np.broadcast_to(xy[:, None, 1], (len(xy), n))], axis=-1)
    vert = np.stack([np.broadcast_to(xy[:, None, 0], (len(xy), n)), xy[:, None, 1] + t], axis=-1)
    pts = np.concatenate([horiz, vert], axis=1).reshape(-1, 2)
    return _stamp(img, pts, np.repeat(d, 2 * n), 0.5 * width_px, rgb8(color), zb, depth_bias)


def draw_grid(image: ArrayLike, camera: Camera, up: UpAxis = "y", *, spacing: float = 1.0,
              extent: float = 5.0, color: ArrayLike = (0.75, 0.75, 0.75), width_px: float = 1.0,
              depth: ArrayLike | None = None, depth_bias: float = 5e-3,
              center: ArrayLike = (0.0, 0.0, 0.0)) -> Image:
    """Lines u = k·spacing and v = k·spacing, |u − c_u|, |v − c_v| ≤ extent, in the plane through the origin ⟂ up.

    Y-up: the xz plane; Z-up: the xy plane. ``center`` (its in-plane part, snapped to the spacing) moves the
    patch of grid, not the lines: they stay on multiples of ``spacing``. Returns a new image.
    """
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
    return draw_segments(image, camera, np.concatenate([s1, s2]), np.concatenate([e1, e2]), color,
                         width_px, depth, depth_bias=depth_bias)


def _camera_for(camera: Camera, img: Image) -> Camera:
    H, W = img.shape[:2]
    if (camera.width, camera.height) != (W, H):
        raise RenderError(f"camera is {camera.width}x{camera.height} but the image is {W}x{H}")
    return camera
