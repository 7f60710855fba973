"""GIF timing and colour: whole-hundredth delays and the frames kept at most 50 fps (:func:`gif_frame_plan`), and one
256-colour palette for a clip (the first frame's main colours, a fixed cube and greys) with its 15-bit lookup table,
filled lazily (:func:`palette_index`). :class:`animkit.render.writers.GifWriter` streams the file."""

from __future__ import annotations

import math
from typing import Final

import numpy as np
from numpy.typing import NDArray

from animkit.errors import RenderError

__all__ = ["GIF_MAX_FPS", "gif_stride", "gif_frame_plan", "gif_palette", "palette_lut", "palette_index",
           "unused_index"]

GIF_MAX_FPS: Final[float] = 50.0  # a 2 cs delay; browsers treat shorter delays as 10 cs
Frame = NDArray[np.uint8]


# ----------------------------------------------------------------------------------------------
# GIF frame timing


def gif_stride(fps: float) -> int:
    """k = ⌈fps / 50⌉: keep every k-th frame so the kept rate fps / k ≤ 50."""
    if not (fps > 0 and math.isfinite(fps)):
        raise RenderError(f"fps must be positive and finite, got {fps!r}")
    return max(1, math.ceil(fps / GIF_MAX_FPS - 1e-9))


def _gif_delay_cs(i: int, dt: float) -> int:
    """δ_i = round(100 (i+1) Δt) − round(100 i Δt): whole hundredths whose sums track real time."""
    return round(100.0 * (i + 1) * dt) - round(100.0 * i * dt)


def gif_frame_plan(fps: float, n_frames: int
                   ) -> tuple[NDArray[np.int64], NDArray[np.int64], float, str | None]:
    """indices = 0, k, 2k, …; δ_i = round(100 (i+1) k/fps) − round(100 i k/fps) cs; k = ⌈fps/50⌉.

    Returns the frame indices to keep, each kept frame's delay in hundredths of a second
    (cumulative delays track the clip's real time, so 30 fps gives 3, 3, 4, 3, 3, 4 …), the
    effective frame rate ``fps / k`` and a message when frames are dropped (``None`` otherwise).
    :class:`GifWriter` applies the same plan as frames stream in.
    """
    if n_frames < 0:
        raise RenderError(f"n_frames must be >= 0, got {n_frames!r}")
    k = gif_stride(fps)
    idx = np.arange(0, n_frames, k, dtype=np.int64)
    dt = k / fps
    delays = np.array([_gif_delay_cs(i, dt) for i in range(len(idx))], dtype=np.int64)
    eff = fps / k
    msg = _drop_message(fps, k) + f" ({len(idx)} of {n_frames} frames)" if k > 1 else None
    return idx, delays, eff, msg


def _drop_message(fps: float, k: int) -> str:
    return (f"GIF plays at most {GIF_MAX_FPS:g} fps: keeping every {_ordinal(k)} frame of the {fps:g} fps "
            f"clip, i.e. {fps / k:g} fps; write MP4 for the full rate")


def _ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


# ----------------------------------------------------------------------------------------------
# GIF palette


def gif_palette(first: Frame | None = None, n_adaptive: int = 128) -> NDArray[np.uint8]:
    """Palette (256, 3) = up to ``n_adaptive`` median-cut colours of ``first`` + a 5×5×5 cube + greys.

    The fixed part covers colours that appear only in later frames; the adaptive part keeps the
    first frame's flat shades (and the background) exact.
    """
    levels = np.array([0, 64, 128, 191, 255], dtype=np.uint8)
    cube = np.stack(np.meshgrid(levels, levels, levels, indexing="ij"), axis=-1).reshape(-1, 3)
    n_grey = 256 - len(cube) - n_adaptive
    greys = np.repeat(np.round(np.linspace(0, 255, n_grey + 2)[1:-1]).astype(np.uint8)[:, None], 3, axis=1)
    fixed = np.concatenate([cube, greys])
    if first is None or n_adaptive == 0:
        adaptive = np.zeros((0, 3), np.uint8)
    else:
        from PIL import Image

        q = Image.fromarray(first).quantize(n_adaptive, method=Image.Quantize.MEDIANCUT,
                                            dither=Image.Dither.NONE)
        pal = np.asarray((q.getpalette() or [])[: 3 * n_adaptive], dtype=np.uint8).reshape(-1, 3)
        used = np.flatnonzero(np.bincount(np.asarray(q).ravel(), minlength=1))  # the indices met, ascending
        adaptive = pal[used[used < len(pal)]]
    pal = np.concatenate([adaptive, fixed])
    row_of: dict[tuple[int, ...], int] = {}  # each colour's first row: duplicates out, order kept (adaptive first)
    for i, c in enumerate(map(tuple, pal.tolist())):  # (np.unique would import numpy.ma: 40 ms of a process)
        row_of.setdefault(c, i)
    pal = pal[list(row_of.values())]
    out = np.empty((256, 3), np.uint8)
    out[:] = pal[0]
    out[: len(pal)] = pal
    return out


def unused_index(palette: NDArray[np.uint8]) -> int | None:
    """The first row j with palette_j = palette_i for some i < j: :func:`palette_index` (argmin, first row on ties)
    never gives it, so a GIF frame can spend it on transparency; None when all rows differ."""
    seen: set[bytes] = set()
    for j, row in enumerate(np.asarray(palette, dtype=np.uint8).reshape(-1, 3)):
        key = row.tobytes()
        if key in seen:
            return j
        seen.add(key)
    return None


def palette_lut(palette: NDArray[np.uint8], bits: int = 5) -> NDArray[np.uint8]:
    """LUT[r', g', b'] = argmin_j ‖c(r', g', b') − palette_j‖², c = bin centre, r' = r >> (8 − bits)."""
    n = 1 << bits
    return palette_index(np.arange(n ** 3), palette, bits).reshape(n, n, n)


def palette_index(codes: NDArray[np.integer], palette: NDArray[np.uint8], bits: int = 5) -> NDArray[np.uint8]:
    """i(k) = argmin_j ‖c(k) − palette_j‖² for packed codes k = r' << 2b | g' << b | b' (the entries of
    :func:`palette_lut` for those codes only). Every term is a multiple of ½ below 2²⁴ in float32, so the distances
    are exact and the result does not depend on how the codes are batched."""
    n = 1 << bits
    k = np.asarray(codes, dtype=np.int64).ravel()
    idx = np.stack([k >> (2 * bits), (k >> bits) & (n - 1), k & (n - 1)], axis=1)
    grid = (idx * (256 // n) + (256 // n - 1) / 2.0).astype(np.float32)
    pal = palette.astype(np.float32)
    out = np.empty(len(grid), np.uint8)
    pn = (pal ** 2).sum(axis=1)
    for s in range(0, len(grid), 2048):  # 2 MB of distances at a time (memory stays flat)
        d = pn[None, :] - 2.0 * (grid[s:s + 2048] @ pal.T)
        out[s:s + 2048] = np.argmin(d, axis=1)
    return out
