"""The ahead-of-time kernels of a frame's set-up and a GIF frame's changed rectangle (``animkit._native``'s
tri_setup and gif_delta) against the NumPy paths they replace: the same pixels, depths and file bytes."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from animkit import jit
from animkit.render.camera import look_at
from animkit.render.raster import Surface, render_surfaces
from animkit.render.writers import GifWriter

needs_native = pytest.mark.skipif(jit.native_kernels() is None,
                                  reason="the C extension animkit._native is not built here")


def _both(fn):  # type: ignore[no-untyped-def]
    """fn() with the compiled kernels, then with NumPy alone (no C extension, no numba)."""
    a = fn()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(jit, "native_kernels", lambda: None)
        b = fn()
    return a, b


@needs_native
@given(st.integers(0, 2**32 - 1), st.integers(1, 3), st.sampled_from([1, 2]), st.booleans(),
       st.floats(0.05, 2.9), st.floats(3.0, 12.0))
@settings(max_examples=40, deadline=None)
def test_compiled_setup_draws_the_numpy_pixels(seed: int, n_surfaces: int, supersample: int, smooth: bool,
                                               near: float, far: float) -> None:
    """Random triangle soups (some faces marked closed and culled when facing away, corners behind the camera,
    before near and past far, repeated corners: zero-area faces, triangles beyond the image's edges), flat or
    smooth, in one to three surfaces: the kernel's set-up gives NumPy's set-up's pixels and depth buffer, bit for
    bit (the smooth shading reads the set-up's edge functions and 1/d, so they are checked too)."""
    rng = np.random.default_rng(seed)
    cam = look_at((3.0, 2.0, 4.0), (0, 0, 0), "y", width=int(rng.integers(8, 60)), height=int(rng.integers(8, 50)),
                  near=near, far=far)
    srfs = []
    for _ in range(n_surfaces):
        nv = int(rng.integers(3, 40))
        v = rng.normal(size=(nv, 3)) * rng.choice([0.3, 1.5, 6.0])
        f = rng.integers(0, nv, size=(int(rng.integers(1, 80)), 3)).astype(np.int64)
        closed = rng.random(len(f)) < 0.5 if rng.random() < 0.7 else None
        if smooth:
            nrm = rng.normal(size=(nv, 3))
            srfs.append(Surface(v, f, color=rng.uniform(size=3), normals=nrm / np.linalg.norm(nrm, axis=1)[:, None],
                                closed=closed))
        else:
            srfs.append(Surface(v, f, face_colors=rng.integers(0, 256, (len(f), 3)).astype(np.uint8),
                                closed=closed))
    (a, da), (b, db) = _both(lambda: render_surfaces(cam, srfs, supersample=supersample, depth_out=True))
    assert a.tobytes() == b.tobytes() and da.tobytes() == db.tobytes()


@needs_native
def test_compiled_setup_draws_a_figure_like_numpy() -> None:
    """A closed capsule and box and an open floor seen from several sides: the same frames with either set-up, and
    something drawn in each (the test is not passing on empty images)."""
    from animkit.model.geometry import Box, Capsule

    srfs = []
    for shape, closed in ((Capsule(0.3, 0.9), True), (Box((0.6, 0.5, 0.4)), True), (Box((1.5, 0.05, 1.5)), False)):
        v, f = shape.triangles()
        srfs.append(Surface(v, f.astype(np.int64), color=(0.8, 0.5, 0.2), closed=np.full(len(f), closed)))
    for eye in ((2.5, 1.5, 3.0), (0.0, 4.0, 0.1), (-3.0, 0.2, 0.0)):
        cam = look_at(eye, (0, 0, 0), "y", width=80, height=60, near=0.3)
        (a, da), (b, db) = _both(lambda cam=cam: render_surfaces(cam, srfs, depth_out=True))
        assert a.tobytes() == b.tobytes() and da.tobytes() == db.tobytes()
        assert np.isfinite(da).sum() > 300


def _gif(path: Path, clip: list[np.ndarray], palette: np.ndarray | None) -> bytes:
    h, w = clip[0].shape[:2]
    with GifWriter(path, 10, (w, h), quiet=True, palette=palette) as writer:
        for f in clip:
            writer.write(f)
    return path.read_bytes()


@needs_native
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 30), st.integers(2, 6), st.booleans())
@settings(max_examples=40, deadline=None)
def test_gif_changed_rectangle_bytes_equal_numpy(seed: int, w: int, h: int, frames: int, own_palette: bool) -> None:
    """Frames that change in a random box, not at all, or in one pixel, with and without a palette row left for
    see-through pixels (a palette of distinct colours has none): the compiled changed rectangle writes NumPy's
    bytes."""
    rng = np.random.default_rng(seed)
    colours = rng.integers(0, 256, (6, 3), dtype=np.uint8)
    clip = [colours[rng.integers(0, 6, (h, w))]]
    for _ in range(frames - 1):
        f = clip[-1].copy()
        kind = rng.integers(0, 3)
        if kind == 1:  # a box of new colours
            y0, x0 = int(rng.integers(0, h)), int(rng.integers(0, w))
            y1, x1 = int(rng.integers(y0, h)) + 1, int(rng.integers(x0, w)) + 1
            f[y0:y1, x0:x1] = colours[rng.integers(0, 6, (y1 - y0, x1 - x0))]
        elif kind == 2:  # one pixel
            f[int(rng.integers(0, h)), int(rng.integers(0, w))] = rng.integers(0, 256, 3)
        clip.append(f)  # kind 0: the frame repeats
    palette = None
    if own_palette:  # 256 distinct colours: no see-through row
        codes = rng.choice(1 << 24, 256, replace=False)
        palette = np.stack([codes >> 16, (codes >> 8) & 255, codes & 255], axis=1).astype(np.uint8)
    with tempfile.TemporaryDirectory() as tmp:
        a, b = _both(lambda: _gif(Path(tmp) / "a.gif", clip, palette))
    assert a == b


@needs_native
@given(st.integers(0, 2**32 - 1), st.integers(1, 30), st.integers(0, 200), st.booleans())
@settings(max_examples=60, deadline=None)
def test_compiled_blend_writes_the_numpy_bytes(seed: int, side: int, n: int, int_colour: bool) -> None:
    """blend: α ∈ [0, 1] (the ends included) over random pixels, some listed twice (the last entry wins, from the
    image as it was), a float or an integer colour: the compiled blend writes NumPy's bytes; pixels outside the image
    raise NumPy's IndexError either way."""
    from animkit.render.raster import blend

    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (side, side + 1, 3), dtype=np.uint8)
    pix = rng.integers(0, img.shape[0] * img.shape[1], n).astype(np.int64)
    alpha = np.where(rng.random(n) < 0.5, rng.choice([0.0, 0.5, 1.0], n), rng.random(n)).astype(np.float32)
    colour = tuple(int(x) for x in rng.integers(0, 256, 3)) if int_colour else tuple(float(x) for x in rng.random(3))
    a, b = _both(lambda: blend(img, pix, alpha, colour))
    assert a.tobytes() == b.tobytes()
    once = np.flatnonzero(np.bincount(pix, minlength=img.shape[0] * img.shape[1])[pix] == 1)
    flat, before = a.reshape(-1, 3), img.reshape(-1, 3)
    c8 = np.array(colour) if int_colour else np.round(np.array(colour) * 255)
    ones, zeros = pix[once[alpha[once] == 1]], pix[once[alpha[once] == 0]]
    assert np.array_equal(flat[ones], np.broadcast_to(c8, (len(ones), 3)))  # α = 1: the colour
    assert np.array_equal(flat[zeros], before[zeros])  # α = 0: the image as it was
    for bad in (np.array([img.shape[0] * img.shape[1]], np.int64), np.array([-img.size], np.int64)):
        for native in (True, False):
            with pytest.MonkeyPatch.context() as m:
                if not native:
                    m.setattr(jit, "native_kernels", lambda: None)
                with pytest.raises(IndexError):
                    blend(img, bad, np.ones(1, np.float32), colour)


def _indexed(native: Any, frame_: np.ndarray, palette: np.ndarray, lut: np.ndarray, known: np.ndarray,
             *prev: np.ndarray) -> np.ndarray:
    """gif_index on ``frame_`` (optionally with the frame before and its indices), the colours it had not met filled
    as GifWriter fills them: the frame's finished indices."""
    from animkit.render.gif import palette_index

    h, w = frame_.shape[:2]
    ind = np.empty((h, w), np.uint8)
    pending = np.empty(h * w, np.int32)
    fresh, left = native.gif_index(frame_, lut, known, ind, pending, *prev)
    if fresh:
        new = np.flatnonzero(known == 2)
        lut[new] = palette_index(new, palette)
        known[new] = 1
    pix = pending[:left]
    c = frame_.reshape(-1, 3)[pix].astype(np.int64)
    ind.reshape(-1)[pix] = lut[(c[:, 0] >> 3) << 10 | (c[:, 1] >> 3) << 5 | (c[:, 2] >> 3)]
    return ind


@needs_native
@given(st.integers(0, 2**32 - 1), st.integers(1, 41), st.integers(1, 20))
@settings(max_examples=40, deadline=None)
def test_gif_index_takes_the_frame_befores_index_where_the_colour_stayed(seed: int, w: int, h: int) -> None:
    """gif_index with the frame before and its indices gives the indices it gives without them (a figure moved over
    a still backdrop: a box of changed pixels, some in colours not met yet, some changed back to the same colour),
    and it reads them from the frame before exactly where the colour stayed: given indices it could not have made
    (255 everywhere; the palette's rows from 128 on repeat row 0), it copies 255 at those pixels and nowhere else;
    and it leaves the frame before holding this one (the next frame's "before"). Widths around the kernel's
    eight-pixel words."""
    rng = np.random.default_rng(seed)
    native = jit.native_kernels()
    palette = rng.integers(0, 256, (256, 3), dtype=np.uint8)
    palette[128:] = palette[0]  # rows 128.. repeat row 0: the LUT (first row on ties) never gives them, so not 255
    colours = rng.integers(0, 256, (5, 3), dtype=np.uint8)
    a = colours[rng.integers(0, 5, (h, w))]
    b = a.copy()
    y0, x0 = int(rng.integers(0, h)), int(rng.integers(0, w))
    y1, x1 = int(rng.integers(y0, h)) + 1, int(rng.integers(x0, w)) + 1
    b[y0:y1, x0:x1] = np.where(rng.random((y1 - y0, x1 - x0, 1)) < 0.3, rng.integers(0, 256, (y1 - y0, x1 - x0, 3)),
                               colours[rng.integers(0, 5, (y1 - y0, x1 - x0))]).astype(np.uint8)
    lut, known = np.zeros(1 << 15, np.uint8), np.zeros(1 << 15, np.uint8)
    ind_a = _indexed(native, a, palette, lut, known)
    state = (lut.copy(), known.copy())
    plain = _indexed(native, b, palette, *(x.copy() for x in state))
    was = a.copy()
    since = _indexed(native, b, palette, *(x.copy() for x in state), was, ind_a)
    assert np.array_equal(since, plain)
    assert np.array_equal(was, b)  # the frame before is left holding this one, for the next
    stayed = (a == b).all(axis=2)
    marked = _indexed(native, b, palette, *(x.copy() for x in state), a.copy(), np.full_like(ind_a, 255))
    assert plain.max() < 128 and np.array_equal(marked, np.where(stayed, 255, plain))
    with pytest.raises(ValueError, match="prev"):
        native.gif_index(b, *state, np.empty((h, w), np.uint8), np.empty(h * w, np.int32), a[:, :0], ind_a)


@needs_native
@given(st.integers(0, 2**32 - 1), st.integers(1, 120), st.booleans(), st.floats(0.0, 1.0), st.booleans())
@settings(max_examples=60, deadline=None)
def test_compiled_flat_shade_gives_the_numpy_colours(seed: int, n_faces: int, one_colour: bool, ambient: float,
                                                     own_light: bool) -> None:
    """Flat surfaces drawn with their face colours from the compiled flat_shade (each face's Lambert shade times its
    colour) and from face_shading's NumPy path: the same pixels, byte for byte. Random faces (some with repeated
    corners: zero area, ambient only; some seen from behind: turned to the eye), per-face colours or one colour, any
    ambient, the default light or a given one; a large camera-facing backdrop face, so the frame is not empty, and
    face_shading's own numbers times the colours where a face shows alone (the test is not passing on flat grey)."""
    from animkit.render.raster import face_shading, render_surfaces, surface

    rng = np.random.default_rng(seed)
    nv = int(rng.integers(3, 30))
    v = rng.normal(size=(nv, 3)) * rng.choice([0.05, 1.0, 3.0])
    f = rng.integers(0, nv, size=(n_faces, 3)).astype(np.int64)
    f[: n_faces // 5, 1] = f[: n_faces // 5, 0]  # zero-area faces
    kw = {"color": rng.integers(0, 256, 3)} if one_colour else {"face_colors": rng.integers(0, 256, (n_faces, 3))}
    cam = look_at((4.0, 3.0, 6.0), (0, 0, 0), "y", width=int(rng.integers(8, 50)), height=int(rng.integers(8, 40)))
    light = rng.normal(size=3) if own_light else None
    srfs = [surface(v, f, **kw)]
    a, b = _both(lambda: render_surfaces(cam, srfs, light_dir=light, ambient=ambient))
    assert a.tobytes() == b.tobytes()
    one = surface(np.array([[-9.0, -9.0, 0.0], [9.0, -9.0, 0.0], [0.0, 9.0, 0.0]]), np.array([[0, 1, 2]]),
                  face_colors=np.array([[200, 120, 40]]))  # one face over the whole frame
    a, b = _both(lambda: render_surfaces(cam, [one], light_dir=light, ambient=ambient))
    shade = face_shading(cam, one.vertices[one.faces], light, ambient)[0]
    assert a.tobytes() == b.tobytes()
    np.testing.assert_array_equal(a[cam.height // 2, cam.width // 2], np.rint(np.array([200, 120, 40]) * shade))
