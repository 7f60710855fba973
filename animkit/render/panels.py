"""Labelled panel grids: several frames side by side, each under a centred caption."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import RenderError
from .raster import rgb8

__all__ = ["compose_panels", "panel_origin"]


def panel_origin(index: int, columns: int, cell_size: tuple[int, int], label_height: int,
                 gap: int) -> tuple[int, int]:
    """x = c (w + g) + g, y = r (h + l + g) + g + l: top-left of panel i's image, (r, c) = divmod(i, C)."""
    r, c = divmod(index, columns)
    w, h = cell_size
    return c * (w + gap) + gap, r * (h + label_height + gap) + gap + label_height


def compose_panels(frames: Sequence[ArrayLike], labels: Sequence[str], columns: int | None = None, *,
                   label_height: int = 22, font_size: int = 14, gap: int = 4,
                   background: ArrayLike = (1.0, 1.0, 1.0), text_color: ArrayLike = (0.0, 0.0, 0.0)
                   ) -> NDArray[np.uint8]:
    """Grid of R × C cells, C = columns or ⌈√N⌉, R = ⌈N / C⌉; each cell is a label band over its frame.

    Frames are uint8 ``(H, W, 3)``; a cell is as large as the largest frame and smaller frames
    are centred in it. Labels use Pillow's default font at ``font_size`` and are centred in
    their band. The image is ``(R (h + l + g) + g, C (w + g) + g, 3)`` for cell ``w × h``,
    label height ``l`` and gap ``g``. Deterministic for a given Pillow.
    """
    if len(frames) == 0:
        raise RenderError("compose_panels needs at least one frame")
    if len(labels) != len(frames):
        raise RenderError(f"got {len(frames)} frames but {len(labels)} labels")
    imgs = [np.asarray(f) for f in frames]
    for i, f in enumerate(imgs):
        if f.ndim != 3 or f.shape[2] != 3 or f.dtype != np.uint8:
            raise RenderError(f"frame {i} must be uint8 (H, W, 3), got {f.dtype} {f.shape}")
    n = len(imgs)
    cols = math.ceil(math.sqrt(n)) if columns is None else int(columns)
    if cols < 1:
        raise RenderError(f"columns must be >= 1, got {columns!r}")
    if label_height < 0 or gap < 0:
        raise RenderError(f"label_height and gap must be >= 0, got {label_height!r}, {gap!r}")
    cols = min(cols, n)
    rows = math.ceil(n / cols)
    w = max(f.shape[1] for f in imgs)
    h = max(f.shape[0] for f in imgs)
    out = np.empty((rows * (h + label_height + gap) + gap, cols * (w + gap) + gap, 3), np.uint8)
    out[:] = rgb8(background, "background")
    for i, f in enumerate(imgs):
        x, y = panel_origin(i, cols, (w, h), label_height, gap)
        dx, dy = (w - f.shape[1]) // 2, (h - f.shape[0]) // 2
        out[y + dy:y + dy + f.shape[0], x + dx:x + dx + f.shape[1]] = f
    if label_height == 0 or not any(labels):
        return out
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=font_size)
    canvas = Image.fromarray(out)
    draw = ImageDraw.Draw(canvas)
    ink = tuple(int(v) for v in rgb8(text_color, "text_color"))
    for i, text in enumerate(labels):
        if not text:
            continue
        x, y = panel_origin(i, cols, (w, h), label_height, gap)
        # anchor "mm": the text's middle sits on the band's centre
        draw.text((x + w / 2.0, y - label_height / 2.0), str(text), fill=ink, font=font, anchor="mm")
    return np.asarray(canvas).copy()
