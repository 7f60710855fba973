"""Labelled panel grids: several frames side by side, each under a centred caption."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import RenderError
from animkit.render.raster import rgb8, solid_image

__all__ = ["PanelGrid", "compose_panels", "panel_origin"]


def panel_origin(index: int, columns: int, cell_size: tuple[int, int], label_height: int,
                 gap: int) -> tuple[int, int]:
    """x = c (w + g) + g, y = r (h + l + g) + g + l: top-left of panel i's image, (r, c) = divmod(i, C)."""
    r, c = divmod(index, columns)
    w, h = cell_size
    return c * (w + gap) + gap, r * (h + label_height + gap) + gap + label_height


class PanelGrid:
    """A grid of R × C cells, each a label band over a ``w × h`` frame; the labels are drawn once, then
    :meth:`compose` pastes each frame into a copy of that template (no text rendering per frame)."""

    def __init__(self, count: int, cell_size: tuple[int, int], labels: Sequence[str], columns: int | None = None,
                 *, label_height: int = 22, font_size: int = 14, gap: int = 4,
                 background: ArrayLike = (1.0, 1.0, 1.0), text_color: ArrayLike = (0.0, 0.0, 0.0)) -> None:
        if count < 1:
            raise RenderError("compose_panels needs at least one frame")
        if len(labels) != count:
            raise RenderError(f"got {count} frames but {len(labels)} labels")
        cols = math.ceil(math.sqrt(count)) if columns is None else int(columns)
        if cols < 1:
            raise RenderError(f"columns must be >= 1, got {columns!r}")
        if label_height < 0 or gap < 0:
            raise RenderError(f"label_height and gap must be >= 0, got {label_height!r}, {gap!r}")
        self.count = count
        self.columns = cols = min(cols, count)
        rows = math.ceil(count / cols)
        self.cell_size = w, h = cell_size
        self.label_height, self.gap = label_height, gap
        #: (H, W) of the composed image
        self.shape = (rows * (h + label_height + gap) + gap, cols * (w + gap) + gap)
        rgb8(background, "background"), rgb8(text_color, "text_color")  # bad colours fail here, not at the first frame
        self._look = (list(labels), font_size, background, text_color)
        self._template: NDArray[np.uint8] | None = None

    @property
    def template(self) -> NDArray[np.uint8]:
        """The grid without frames: the background, each label centred in its band; drawn at first use (a caller
        may start its frames' drawing first: the text costs a font's loading)."""
        if self._template is None:
            labels, font_size, background, text_color = self._look
            out = solid_image(*self.shape, background)
            w, h = self.cell_size
            if self.label_height and any(labels):
                from PIL import Image, ImageDraw, ImageFont

                font = ImageFont.load_default(size=font_size)
                canvas = Image.fromarray(out)
                draw = ImageDraw.Draw(canvas)
                ink = tuple(int(v) for v in rgb8(text_color, "text_color"))
                for i, text in enumerate(labels):
                    if not text:
                        continue
                    x, y = panel_origin(i, self.columns, (w, h), self.label_height, self.gap)
                    # anchor "mm": the text's middle sits on the band's centre
                    draw.text((x + w / 2.0, y - self.label_height / 2.0), str(text), fill=ink, font=font,
                              anchor="mm")
                out = np.asarray(canvas).copy()
            self._template = out
        return self._template

    def compose(self, frames: Sequence[ArrayLike], out: NDArray[np.uint8] | None = None) -> NDArray[np.uint8]:
        """The template with frame i centred in cell i. ``out``: an image this grid composed before, given back to
        be composed into (the labels and gaps are the template's already: only the cells are written, not a copy
        of the whole template per frame); returned."""
        if len(frames) != self.count:
            raise RenderError(f"got {len(frames)} frames for a grid of {self.count}")
        w, h = self.cell_size
        if out is None:
            out = self.template.copy()
        elif out.shape != (*self.shape, 3) or out.dtype != np.uint8:
            raise RenderError(f"out must be an image this grid composed ({(*self.shape, 3)} uint8), got "
                              f"{out.dtype} {out.shape}")
        for i, f in enumerate(frames):
            f = np.asarray(f)
            if f.ndim != 3 or f.shape[2] != 3 or f.dtype != np.uint8 or f.shape[0] > h or f.shape[1] > w:
                raise RenderError(f"frame {i} must be uint8 (H, W, 3) at most {w}x{h}, got {f.dtype} {f.shape}")
            x, y = panel_origin(i, self.columns, (w, h), self.label_height, self.gap)
            if f.shape[:2] != (h, w):  # the cell's margins as the template has them (a larger frame may have been here)
                out[y:y + h, x:x + w] = self.template[y:y + h, x:x + w]
            dx, dy = (w - f.shape[1]) // 2, (h - f.shape[0]) // 2
            out[y + dy:y + dy + f.shape[0], x + dx:x + dx + f.shape[1]] = f
        return out


def compose_panels(frames: Sequence[ArrayLike], labels: Sequence[str], columns: int | None = None, *,
                   label_height: int = 22, font_size: int = 14, gap: int = 4,
                   background: ArrayLike = (1.0, 1.0, 1.0), text_color: ArrayLike = (0.0, 0.0, 0.0)
                   ) -> NDArray[np.uint8]:
    """Grid of R × C cells, C = columns or ⌈√N⌉, R = ⌈N / C⌉; each cell is a label band over its frame.

    Frames are uint8 ``(H, W, 3)``; a cell is as large as the largest frame and smaller frames
    are centred in it. Labels use Pillow's default font at ``font_size`` and are centred in
    their band. The image is ``(R (h + l + g) + g, C (w + g) + g, 3)`` for cell ``w × h``,
    label height ``l`` and gap ``g``. Deterministic for a given Pillow. To compose many frames
    with the same labels, build a :class:`PanelGrid` once.
    """
    if len(frames) == 0:
        raise RenderError("compose_panels needs at least one frame")
    imgs = [np.asarray(f) for f in frames]
    for i, f in enumerate(imgs):
        if f.ndim != 3 or f.shape[2] != 3 or f.dtype != np.uint8:
            raise RenderError(f"frame {i} must be uint8 (H, W, 3), got {f.dtype} {f.shape}")
    size = (max(f.shape[1] for f in imgs), max(f.shape[0] for f in imgs))
    grid = PanelGrid(len(imgs), size, labels, columns, label_height=label_height, font_size=font_size, gap=gap,
                     background=background, text_color=text_color)
    return grid.compose(imgs)
