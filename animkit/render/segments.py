"""Anti-aliased segments: coverage clip(w/2 + ½ − distance, 0, 1) walked along each segment (NumPy, or a compiled
kernel a band of rows at a time), blended over an image."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit import jit as jit_module
from animkit.errors import RenderError
from animkit.jit import enabled as jit_enabled
from animkit.jit import kernel
from animkit.render.camera import Camera
from animkit.render.image import Image, _camera_for, _check_depth, _check_image, rgb8

__all__ = ["segment_coverage", "segment_coverage_each", "blend", "draw_segments", "draw_polyline", "BAND_BYTES"]


def _clip_near(camera: Camera, a: NDArray[np.float64], b: NDArray[np.float64]
               ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.intp]]:
    """Segments clipped to view depth ≥ near: x(t) = a + t (b − a) at d(t) = near; and the rows kept."""
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
    return a_new, b_new, np.flatnonzero(keep)


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


class _Walk(NamedTuple):
    """Per screen segment, clipped to the near plane and to the image grown by r + 1: ends ``qa``, ``qb`` (S, 2),
    1/d at them ``iza``, ``izb``, whether y is its major axis (``steep``), the major-axis pixels ``lo`` …
    ``lo + walked − 1`` walked, its start (``ua``, ``va``) in (major, minor) and ``slope`` dv/du; half-width
    ``r`` (px) and the ``half`` candidates taken to each side of the walked pixel."""

    qa: NDArray[np.float64]
    qb: NDArray[np.float64]
    iza: NDArray[np.float64]
    izb: NDArray[np.float64]
    steep: NDArray[np.bool_]
    lo: NDArray[np.int64]
    walked: NDArray[np.int64]
    ua: NDArray[np.float64]
    va: NDArray[np.float64]
    slope: NDArray[np.float64]
    r: float
    half: int
    segment: NDArray[np.intp]  # (S,) the given segment each row is


def _walk(camera: Camera, starts: ArrayLike, ends: ArrayLike, width_px: float) -> _Walk | None:
    """:func:`segment_coverage`'s set-up (checked input, near-plane and Liang–Barsky clipping); None: nothing drawn."""
    W, H = camera.width, camera.height
    a = np.asarray(starts, dtype=float).reshape(-1, 3)
    b = np.asarray(ends, dtype=float).reshape(-1, 3)
    if a.shape != b.shape or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise RenderError("segment starts and ends must be finite and shaped alike (S, 3)")
    if not width_px > 0:
        raise RenderError(f"width_px must be > 0, got {width_px!r}")
    a, b, index = _clip_near(camera, a, b)
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
    return _Walk(qa, qb, iza, izb, steep, lo, count, ua, va, slope, r, half, index[ok])


def _coverage_kernel(camera: Camera, wk: _Walk, depth: NDArray[np.float32] | None, depth_bias: float,
                     shade: tuple[NDArray[np.uint8], NDArray[np.uint8]] | None = None
                     ) -> tuple[NDArray[np.int32], NDArray[np.float32], NDArray[np.uint8]]:
    """:func:`segment_coverage` by the compiled :func:`_coverage_loop`: (pixels with α > 0 in no order, α, and with
    ``shade`` = (plain background, line colour) uint8 their colours round((1 − α) b + α c) and no α, else none)."""
    assert _coverage_jit is not None
    W, H = camera.width, camera.height
    zb = np.zeros(0, np.float32) if depth is None else depth.ravel()
    cap = min(W * H, int(wk.walked.sum()) * (2 * wk.half + 1))
    pix, alpha = np.empty(cap, np.int32), np.empty(cap if shade is None else 0, np.float32)
    colors = np.empty((cap if shade is not None else 0, 3), np.uint8)
    base, color = (shade[0].astype(np.float32), shade[1].astype(np.float32)) if shade is not None else \
        (np.zeros(3, np.float32), np.zeros(3, np.float32))
    n = _coverage_jit(wk, (W, H, max(1, BAND_BYTES // (4 * W))), _DepthTest(zb, depth_bias, depth is not None),
                      _segment_normals(wk.qa, wk.qb), _Found(pix, alpha, colors), _Tint(shade is not None, base, color))
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
    _, flat, cov = _coverage_numpy(camera, wk, depth, depth_bias)
    qa = wk.qa
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


def segment_coverage_each(camera: Camera, starts: ArrayLike, ends: ArrayLike, width_px: float = 2.0
                          ) -> tuple[NDArray[np.intp], NDArray[np.int64], NDArray[np.float32]]:
    """α_s(p) = clip(w/2 + ½ − dist(p, a'_s b'_s), 0, 1) of each segment s on its own: (segment s, flat pixel p,
    α > 0) in the order of the segments, a pixel once per segment that covers it. :func:`segment_coverage` is the
    largest α of these per pixel; a caller adding segments a few at a time (a growing trail) takes them from here
    once instead of one call per frame."""
    none = (np.zeros(0, np.intp), np.zeros(0, np.int64), np.zeros(0, np.float32))
    wk = _walk(camera, starts, ends, width_px)
    if wk is None:
        return none
    S, flat, cov = _coverage_numpy(camera, wk, None, 0.0)
    return wk.segment[S], flat, cov


def _coverage_numpy(camera: Camera, wk: _Walk, depth: NDArray[np.float32] | None, depth_bias: float
                    ) -> tuple[NDArray[np.intp], NDArray[np.int64], NDArray[np.float32]]:
    """:func:`segment_coverage`'s candidates in NumPy: (row of ``wk``, flat pixel, α > 0), by row, not merged."""
    W, H = camera.width, camera.height
    qa, qb, iza, izb, steep, lo, count = wk.qa, wk.qb, wk.iza, wk.izb, wk.steep, wk.lo, wk.walked
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
    return S[keep], flat[keep], cov[keep].astype(np.float32)


#: The bytes of α the compiled coverage keeps at once: a band of rows this large (in cache), not the whole image.
BAND_BYTES = 1 << 18


class _DepthTest(NamedTuple):
    """For :func:`_coverage_loop`: the (H·W,) view-depth buffer, its bias, and whether to test at all."""

    depth: NDArray[np.float32]
    bias: float
    use_depth: bool


class _Found(NamedTuple):
    """:func:`_coverage_loop`'s outputs: flat pixels (int32), and their α or (with a tint) their colours (N, 3)."""

    pix: NDArray[np.int32]
    alpha: NDArray[np.float32]
    colors: NDArray[np.uint8]


class _Tint(NamedTuple):
    """Whether :func:`_coverage_loop` blends (``shade``) the line ``color`` over the plain ``base`` (float32 (3,))."""

    shade: bool
    base: NDArray[np.float32]
    color: NDArray[np.float32]


def _segment_geometry(wk: _Walk, s: int) -> tuple[bool, float, float, float, int, float, float, float, float, float,
                                                   float]:  # pragma: no cover - compiled
    """Segment s of the walk: (y major, u range [umin, umax], slope, first walked pixel, start (u_a, v_a), start
    (a_x, a_y) and vector (e_x, e_y) on the screen)."""
    st = wk.steep[s]
    ub = wk.qb[s, 1] if st else wk.qb[s, 0]
    ax, ay = wk.qa[s, 0], wk.qa[s, 1]
    return st, min(wk.ua[s], ub), max(wk.ua[s], ub), wk.slope[s], wk.lo[s], wk.ua[s], wk.va[s], ax, ay, \
        wk.qb[s, 0] - ax, wk.qb[s, 1] - ay


_segment_geometry_jit = kernel(_segment_geometry)


def _compiled(*kernels: Callable[..., Any] | None) -> list[Callable[..., Any]]:
    """The kernels a kernel calls, less those that are None (numba off)."""
    return [k for k in kernels if k is not None]


def _interior_runs(wk: _Walk, s: int, cu: tuple[int, int], rows: tuple[int, int], W: int,
                   normals: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]],
                   buf: NDArray[np.float32], runs: NDArray[np.int64], nr: int) -> int:  # pragma: no cover - compiled
    """:func:`_coverage_loop`'s interior of segment s, walked pixels ``cu`` = (first, last), by rows of the band
    ``rows`` = [b₀, b₁): α max-ed into ``buf``, each row's run appended to ``runs`` after the ``nr`` there; returns
    how many runs there are now."""
    st, umin, umax, sl, los, uas, vas, ax, ay, ex, ey = _segment_geometry(wk, s)
    nx, ny = normals[1][s], normals[2][s]
    reach = wk.r + 0.5
    rv = reach * np.sqrt(1.0 + sl * sl) + 1e-3
    b0, b1 = rows
    cu0, cu1 = cu  # interior major pixels
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
    return nr


_interior_runs_jit = kernel(_interior_runs, calls=_compiled(_segment_geometry_jit))


def _walk_band(wk: _Walk, s: int, inner: tuple[int, int], rows: tuple[int, int], W: int, test: _DepthTest,
               normals: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]], buf: NDArray[np.float32],
               hits: NDArray[np.int32], nh: int) -> int:  # pragma: no cover - compiled
    """:func:`_coverage_loop`'s walk of segment s over the band ``rows`` = [b₀, b₁), outside its interior walked
    pixels ``inner`` = (i₀, i₁): each candidate's α max-ed into ``buf``, pixels first reached appended to ``hits``
    after the ``nh`` there; returns how many there are now."""
    st, umin, umax, sl, los, uas, vas, ax, ay, ex, ey = _segment_geometry(wk, s)
    il, nx, ny = normals[0][s], normals[1][s], normals[2][s]
    count, half, r, iza, izb = wk.walked, wk.half, wk.r, wk.iza, wk.izb
    depth, bias, use_depth = test.depth, test.bias, test.use_depth
    rv = (r + 0.5) * np.sqrt(1.0 + sl * sl) + 1e-3
    b0, b1 = rows
    i0, i1 = inner
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
                return nh
        else:
            c0, c1 = uas + (v0 - vas) / sl, uas + (v1 - vas) / sl
            p0, p1 = max(min(c0, c1), umin), min(max(c0, c1), umax)
            if p0 > p1:
                return nh
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
    return nh


_walk_band_jit = kernel(_walk_band, calls=_compiled(_segment_geometry_jit))


def _flush_band(buf: NDArray[np.float32], hits: NDArray[np.int32], nh: int, runs: NDArray[np.int64], nr: int,
                start: int, out: _Found, tint: _Tint, n: int) -> int:  # pragma: no cover - compiled
    """Each pixel of α > 0 in the band's ``hits`` and ``runs`` (its α in ``buf``, cleared) appended to ``out`` after
    the ``n`` there (flat pixel ``start`` + its place in the band) with its α or, with the ``tint``, its colour
    round((1 − α) b + α c) (:func:`_blended`'s float32 arithmetic); returns how many there are now."""
    pix, alpha, colors = out.pix, out.alpha, out.colors
    shade, base, color = tint.shade, tint.base, tint.color
    one = np.float32(1.0)
    grey = shade and base[0] == base[1] and base[1] == base[2] and color[0] == color[1] and color[1] == color[2]
    for i in range(nh + nr):
        if i < nh:
            qs = qe = hits[i]
        else:
            qs, qe = runs[i - nh, 0], runs[i - nh, 1]
        for q in range(qs, qe + 1):
            a = buf[q]
            if a > 0:
                buf[q] = 0
                pix[n] = start + q
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


_flush_band_jit = kernel(_flush_band)


def _coverage_loop(wk: _Walk, size: tuple[int, int, int], test: _DepthTest,
                   normals: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]], out: _Found,
                   tint: _Tint) -> int:  # pragma: no cover - compiled; segment_coverage's NumPy path is its oracle
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
    W, H, band = size
    buf = np.zeros(band * W, np.float32)
    hits = np.empty(band * W, np.int32)
    runs = np.empty((band * len(wk.lo), 2), np.int64)  # per band: a run's first and last pixel
    n = 0
    reach = wk.r + 0.5
    margin = wk.half + 2.0
    # the interior of a segment (major pixels ≥ margin from both ends: t surely in [0, 1]) by rows, when every
    # pixel of α > 0 there is a candidate of the walk (R √2 + ½ < half): the same pixels, the same arithmetic
    by_rows = not test.use_depth and reach * np.sqrt(2.0) + 0.5 + 1e-3 < wk.half
    for b0 in range(0, H, band):
        b1 = min(b0 + band, H)
        nh = 0
        nr = 0
        for s in range(len(wk.lo)):
            count, los = wk.walked[s], wk.lo[s]
            i0, i1 = count, count - 1  # interior walked pixels: none
            if by_rows and normals[0][s] > 0:
                st, umin, umax, sl, los, uas, vas, ax, ay, ex, ey = _segment_geometry(wk, s)
                i0 = max(0, int(np.ceil(umin + margin)) - los)
                i1 = min(count - 1, int(np.floor(umax - margin)) - los)
            if i0 <= i1:
                nr = _interior_runs(wk, s, (los + i0, los + i1), (b0, b1), W, normals, buf, runs, nr)
            nh = _walk_band(wk, s, (i0, i1), (b0, b1), W, test, normals, buf, hits, nh)
        n = _flush_band(buf, hits, nh, runs, nr, b0 * W, out, tint, n)
    return n


_coverage_jit = kernel(_coverage_loop, calls=_compiled(_segment_geometry_jit, _interior_runs_jit, _walk_band_jit,
                                                     _flush_band_jit))


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
        native = jit_module.native_kernels()
        if native is not None and _native_blend(native, out, pixels, alpha, color):
            return out
        o = out.reshape(-1, 3)
        o[pixels] = _blended(o[pixels], alpha, color)
    return out


def _native_blend(native: Any, out: Image, pixels: NDArray[np.int64], alpha: NDArray[np.float32],
                  color: ArrayLike) -> bool:
    """:func:`blend` by the ahead-of-time ``blend_px`` (the same arithmetic: the same bytes) where the arrays suit
    it (a C-contiguous uint8 image, int64 pixels, float32 α); False (nothing written) where they do not."""
    if not (isinstance(out, np.ndarray) and out.dtype == np.uint8 and out.flags.c_contiguous and out.shape[-1:] == (3,)
            and isinstance(pixels, np.ndarray) and pixels.dtype == np.int64 and pixels.ndim == 1
            and isinstance(alpha, np.ndarray) and alpha.dtype == np.float32 and alpha.shape == pixels.shape):
        return False
    try:
        c = _colour32(color) if isinstance(color, tuple) else rgb8(color).astype(np.float32)
    except TypeError:  # a tuple holding something unhashable
        c = rgb8(color).astype(np.float32)
    if c.shape != (3,):
        return False
    return native.blend_px(out, np.ascontiguousarray(pixels), np.ascontiguousarray(alpha), c,
                           np.empty(3 * len(pixels), np.uint8)) == 0


@functools.lru_cache(maxsize=64)
def _colour32(color: tuple[Any, ...]) -> NDArray[np.float32]:
    """:func:`rgb8` of a colour given as a tuple, as float32 (read-only), once per colour: a frame blends its trail
    and targets in the same few colours (checking one costs more than blending a trail's new pixels)."""
    c = rgb8(color).astype(np.float32)
    c.flags.writeable = False
    return c


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
