from __future__ import annotations

import numpy as np
import pytest

from animkit.errors import RenderError
from animkit.render.panels import compose_panels, panel_origin

COLORS = [(200, 30, 30), (30, 160, 60), (40, 60, 200), (220, 180, 20), (120, 0, 140)]


def panels(n: int, w: int = 80, h: int = 60) -> list[np.ndarray]:
    return [np.broadcast_to(np.array(COLORS[i], np.uint8), (h, w, 3)).copy() for i in range(n)]


@pytest.mark.parametrize("n, columns, grid", [(5, 3, (2, 3)), (5, None, (2, 3)), (4, None, (2, 2)),
                                              (3, 1, (3, 1)), (1, None, (1, 1))])
def test_size_and_placement(n: int, columns: int | None, grid: tuple[int, int]) -> None:
    lh, gap = 20, 4
    img = compose_panels(panels(n), [f"panel {i}" for i in range(n)], columns, label_height=lh, gap=gap)
    rows, cols = grid
    assert img.shape == (rows * (60 + lh + gap) + gap, cols * (80 + gap) + gap, 3)
    for i in range(n):
        x, y = panel_origin(i, cols, (80, 60), lh, gap)
        assert y == (i // cols) * (60 + lh + gap) + gap + lh and x == (i % cols) * (80 + gap) + gap
        np.testing.assert_array_equal(img[y:y + 60, x:x + 80], panels(n)[i])  # exactly that panel
        band = img[y - lh:y, x:x + 80]
        dark = band.min(axis=2) < 100
        assert dark.sum() > 10  # the label's text
        cols_with_ink = np.flatnonzero(dark.any(axis=0))
        centre = (cols_with_ink[0] + cols_with_ink[-1]) / 2
        assert abs(centre - 40) <= 3  # centred


def test_empty_label_draws_nothing_and_output_is_deterministic() -> None:
    a = compose_panels(panels(2), ["", "b"], label_height=16)
    b = compose_panels(panels(2), ["", "b"], label_height=16)
    assert a.tobytes() == b.tobytes()
    assert np.all(a[4:4 + 16, 4:84] == 255)


def test_smaller_frames_are_centred_in_their_cell() -> None:
    img = compose_panels([panels(1)[0], panels(2, 40, 30)[1]], ["a", "b"], 2, label_height=0, gap=0)
    assert img.shape == (60, 160, 3)
    np.testing.assert_array_equal(img[15:45, 100:140], panels(2, 40, 30)[1])
    assert np.all(img[0:15, 80:160] == 255)


def test_errors() -> None:
    with pytest.raises(RenderError, match="2 frames but 1 labels"):
        compose_panels(panels(2), ["a"])
    with pytest.raises(RenderError, match="at least one"):
        compose_panels([], [])
    with pytest.raises(RenderError, match="uint8"):
        compose_panels([np.zeros((4, 4, 3))], ["a"])


def test_composing_into_the_last_image_equals_composing_afresh() -> None:
    """compose(frames, out=previous) gives compose(frames) byte for byte, row after row: full frames, then smaller
    ones (the cells' margins back to the template's), then full ones again; the array given is the one returned."""
    from animkit.render.panels import PanelGrid

    rng = np.random.default_rng(7)
    grid = PanelGrid(3, (12, 9), ["a", "bb", "ccc"], 2)
    assert grid.shape == grid.template.shape[:2] == (2 * (9 + 22 + 4) + 4, 2 * (12 + 4) + 4)
    out = None
    for shape in ((9, 12), (9, 12), (5, 7), (9, 12), (1, 1)):
        frames = [rng.integers(0, 256, (*shape, 3), dtype=np.uint8) for _ in range(3)]
        fresh = grid.compose(frames)
        again = grid.compose(frames, out=out)
        assert out is None or again is out
        assert np.array_equal(again, fresh)
        out = again
    with pytest.raises(RenderError, match="out must be"):
        grid.compose(frames, out=np.zeros((3, 3, 3), np.uint8))
