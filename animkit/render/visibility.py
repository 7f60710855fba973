"""Visibility: which triangle is nearest at each pixel centre (a z-buffer on 1/d, affine in screen space, ties to
the lower face), by one NumPy scatter-max or by the compiled triangle-by-triangle loop: the same pixels."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from animkit import jit as jit_module
from animkit.jit import kernel
from animkit.jit import pays as jit_pays

__all__ = ["compiled_pays", "RASTER_JIT_MIN"]


def _min3(a: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.minimum(np.minimum(a[:, 0], a[:, 1]), a[:, 2])


def _max3(a: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.maximum(np.maximum(a[:, 0], a[:, 1]), a[:, 2])


def _sum3(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """(a₀ + a₁) + a₂ per row: ``a.sum(axis=1)``'s order for three columns, without its slow small-axis reduction."""
    return (a[:, 0] + a[:, 1]) + a[:, 2]


class _Setup(NamedTuple):
    """Per drawable triangle: its face row (``rows``), pixel box [x0, x1] × [y0, y1], edge functions and 1/d.

    Barycentric b_i(x, y) = (B_i r_y + C_i) + A_i r_x, (r_x, r_y) = (x − x0, y − y0), is the edge function of the
    edge opposite corner i over twice the signed area; 1/d = (W_C + W_A r_x) + W_B r_y is affine in (x, y).
    """

    rows: NDArray[np.int64]
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
    if not len(st.rows):
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


def _raster_loop(st: _Setup, W: int, zbuf: NDArray[np.float32], fbuf: NDArray[np.int32], colors: NDArray[np.uint8],
                 flat: NDArray[np.uint8], paint: bool, zx: int, zy: int,
                 zw: int) -> None:  # pragma: no cover - compiled; see _visible_numpy
    """The same runs (:func:`_row_spans`) and depth test as :func:`_visible_numpy`, triangle by triangle.

    Each fragment that passes the test records its triangle row in ``fbuf`` or, with ``paint``, writes that row's
    colour ``colors[t]`` into ``flat`` (H·W, 3): the last write is the visible triangle's, the same pixel as
    shading it afterwards, without a face buffer or a pass over every pixel. ``zbuf`` (and ``fbuf``) cover the box
    of ``zw``-wide rows from pixel (``zx``, ``zy``).
    """
    x0, y0, x1, y1, A, B, C = st.x0, st.y0, st.x1, st.y1, st.A, st.B, st.C
    for t in range(len(x0)):
        wa, wb, wc = st.WA[t], st.WB[t], st.WC[t]
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


def _raster(st: _Setup, W: int, zbuf: NDArray[np.float32], fbuf: NDArray[np.int32], colors: NDArray[np.uint8],
            flat: NDArray[np.uint8], paint: bool, box: tuple[int, int, int]) -> None:
    """:func:`_raster_loop`, compiled: ahead of time (``animkit._native.raster_loop``, a port held to the same
    pixels) where it is built, else by numba. ``box``: (zx, zy, zw)."""
    native = jit_module.native_kernels()
    if native is not None:
        native.raster_loop(st.x0, st.y0, st.x1, st.y1, st.A, st.B, st.C, st.WA, st.WB, st.WC, W, zbuf, fbuf, colors,
                           flat, paint, *box)
        return
    assert _raster_jit is not None
    _raster_jit(st, W, zbuf, fbuf, colors, flat, paint, *box)


def _visible_kernel(st: _Setup, W: int, H: int) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]:
    """:func:`_visible_numpy` by the compiled :func:`_raster_loop`."""
    zbuf = np.zeros(W * H, dtype=np.float32)
    fbuf = np.full(W * H, -1, dtype=np.int32)
    if len(st.rows):
        _raster(st, W, zbuf, fbuf, np.zeros((0, 3), np.uint8), np.zeros((0, 3), np.uint8), False, (0, 0, W))
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
    if len(st.rows):
        zx, zy = int(st.x0.min()), int(st.y0.min())
        zw, zh = int(st.x1.max()) - zx + 1, int(st.y1.max()) - zy + 1
        box = np.zeros(zw * zh, np.float32)
        _raster(st, W, box, np.zeros(0, np.int32), colors, flat, True, (zx, zy, zw))
        if zbuf is not None:
            zbuf.reshape(H, W)[zy:zy + zh, zx:zx + zw] = box.reshape(zh, zw)
    return zbuf
