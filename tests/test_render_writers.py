from __future__ import annotations

import tempfile
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from animkit import jit
from animkit.errors import RenderError
from animkit.render.writers import GifWriter, gif_frame_plan, open_writer, writer_kind

W, H = 64, 48


def frame(i: int, w: int = W, h: int = H) -> np.ndarray:
    """White background with a coloured block that moves with i."""
    f = np.full((h, w, 3), 255, np.uint8)
    colors = [(200, 30, 30), (30, 160, 60), (40, 60, 200), (90, 90, 90)]
    x = (3 * i) % (w - 10)
    f[10:30, x:x + 10] = colors[i % 4]
    return f


def test_writer_kind_from_path(tmp_path: Path) -> None:
    assert writer_kind(tmp_path / "a.gif") == "gif"
    assert writer_kind(tmp_path / "a.MP4") == "mp4"
    assert writer_kind(tmp_path / "sheet.png") == "contact-sheet"
    assert writer_kind(str(tmp_path / "frames") + "/") == "png-dir"
    assert writer_kind(tmp_path) == "png-dir"
    with pytest.raises(RenderError, match=r"'\.gif', '\.mp4', '\.png'"):
        writer_kind(tmp_path / "clip.avi")


def test_gif_frame_count_size_duration_loop(tmp_path: Path) -> None:
    from PIL import Image

    path = tmp_path / "clip.gif"
    with open_writer(path, 25, size=(W, H), quiet=True) as w:
        for i in range(12):
            w.write(frame(i))
    with Image.open(path) as im:
        assert im.n_frames == 12
        assert im.size == (W, H)
        assert im.info["loop"] == 0
        durations = []
        for k in range(im.n_frames):
            im.seek(k)
            durations.append(im.info["duration"])
            got = np.asarray(im.convert("RGB"))
            assert np.abs(got.astype(int) - frame(k)).max() <= 40  # one shared palette
    assert durations == [40] * 12
    import imageio.v3 as iio

    arr = iio.imread(path, index=None)
    assert arr.shape[:3] == (12, H, W)
    np.testing.assert_array_equal(arr[0][..., :3], frame(0))  # first frame's colours are exact


def test_gif_delays_track_real_time_at_30_fps(tmp_path: Path) -> None:
    from PIL import Image

    path = tmp_path / "clip.gif"
    with open_writer(path, 30, size=(W, H), quiet=True) as w:
        for i in range(30):
            w.write(frame(i))
    with Image.open(path) as im:
        d = []
        for k in range(im.n_frames):
            im.seek(k)
            d.append(im.info["duration"])
    assert len(d) == 30 and set(d) <= {30, 40} and sum(d) == 1000


def test_gif_frame_plan() -> None:
    idx, delays, eff, msg = gif_frame_plan(30, 90)
    np.testing.assert_array_equal(idx, np.arange(90))
    assert msg is None and eff == 30 and delays.sum() == 300 and delays.min() >= 2
    idx, delays, eff, msg = gif_frame_plan(120, 240)
    assert eff <= 50 and msg is not None and "50 fps" in msg and "MP4" in msg
    np.testing.assert_array_equal(idx, np.arange(0, 240, 3))
    assert delays.min() >= 2 and delays.sum() == 200  # 2 s of clip
    _, _, eff60, msg60 = gif_frame_plan(60, 10)
    assert eff60 == 30 and msg60 is not None
    assert gif_frame_plan(50, 5)[3] is None


def test_gif_writer_resamples_high_fps_like_the_plan(tmp_path: Path) -> None:
    from PIL import Image

    path = tmp_path / "fast.gif"
    with open_writer(path, 120, size=(W, H), quiet=True) as w:
        assert isinstance(w, GifWriter) and w.message is not None and w.effective_fps == 40
        for i in range(24):
            w.write(frame(i))
    idx, delays, _, _ = gif_frame_plan(120, 24)
    with Image.open(path) as im:
        assert im.n_frames == len(idx) == 8
        got = []
        for k in range(im.n_frames):
            im.seek(k)
            got.append(im.info["duration"])
            assert np.abs(np.asarray(im.convert("RGB")).astype(int) - frame(int(idx[k]))).max() <= 40
    assert got == list(10 * delays)


def test_gif_memory_stays_flat(tmp_path: Path) -> None:
    frames = [frame(i, 320, 240) for i in range(8)]

    def peak_for(n: int) -> int:
        tracemalloc.start()
        with open_writer(tmp_path / f"long{n}.gif", 30, size=(320, 240), quiet=True) as w:
            for i in range(n):
                w.write(frames[i % 8])
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return peak

    short, long = peak_for(20), peak_for(400)  # 400 frames x 230 kB would be 92 MB if held
    assert long < short + 2e6 and long < 10e6


def test_mp4_frame_count_and_size(tmp_path: Path) -> None:
    import imageio_ffmpeg

    path = tmp_path / "clip.mp4"
    with open_writer(path, 24, size=(W, H), quiet=True) as w:
        for i in range(15):
            w.write(frame(i))
    n, secs = imageio_ffmpeg.count_frames_and_secs(str(path))
    assert n == 15
    assert secs == pytest.approx(15 / 24, abs=0.05)
    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)  # read_frames yields its metadata first
    assert tuple(meta["size"]) == (W, H)
    first = np.frombuffer(next(reader), np.uint8).reshape(H, W, 3)
    reader.close()
    assert np.abs(first.astype(int) - frame(0)).mean() < 8  # lossy, but the same picture


def test_mp4_odd_size_is_padded_to_even(tmp_path: Path) -> None:
    import imageio_ffmpeg

    path = tmp_path / "odd.mp4"
    with open_writer(path, 10, size=(W + 1, H + 1), quiet=True) as w:
        for i in range(3):
            w.write(frame(i, W + 1, H + 1))
    meta = next(imageio_ffmpeg.read_frames(str(path)))
    assert tuple(meta["size"]) == (W + 2, H + 2)


def test_png_folder(tmp_path: Path) -> None:
    from PIL import Image

    out = tmp_path / "frames"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    (out / "frame_00099.png").write_bytes(b"stale")
    for target in (out, str(out) + "/"):  # a non-empty folder is never mixed into without overwrite
        with pytest.raises(RenderError, match="not empty"):
            open_writer(target, 30, size=(W, H))
    with open_writer(str(out) + "/", 30, size=(W, H), overwrite=True) as w:
        for i in range(5):
            w.write(frame(i))
    names = sorted(p.name for p in out.iterdir())
    assert names == [f"frame_{i:05d}.png" for i in range(5)] + ["notes.txt"]
    np.testing.assert_array_equal(np.asarray(Image.open(out / "frame_00003.png")), frame(3))
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_contact_sheet_samples_at_most_max_tiles(tmp_path: Path) -> None:
    from PIL import Image

    from animkit.render.panels import compose_panels

    for n_frames in (None, 100):
        path = tmp_path / f"sheet{n_frames}.png"
        opts = {} if n_frames is None else {"n_frames": n_frames}
        with open_writer(path, 30, size=(W, H), max_tiles=24, tile_width=32, **opts) as w:
            assert w.kind == "contact-sheet"
            for i in range(100):
                w.write(frame(i))
            kept = [i for i, _ in w.tiles]  # type: ignore[attr-defined]
        assert 12 <= len(kept) <= 24 and kept[0] == 0
        assert len(set(np.diff(kept))) == 1
        sheet = np.asarray(Image.open(path))
        expect = compose_panels([np.zeros((24, 32, 3), np.uint8)] * len(kept), ["x"] * len(kept))
        assert sheet.shape == expect.shape


KINDS = ["clip.gif", "clip.mp4", "frames/", "sheet.png"]


@pytest.mark.parametrize("name", KINDS)
def test_output_appears_only_when_complete(tmp_path: Path, name: str) -> None:
    target = tmp_path / name.rstrip("/")
    with open_writer(f"{tmp_path}/{name}", 30, size=(W, H), quiet=True) as w:
        for i in range(4):
            w.write(frame(i))
        assert not target.exists()
    assert target.exists()
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temp left behind


@pytest.mark.parametrize("name", KINDS)
@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_failure_leaves_no_output_and_keeps_the_old_file(tmp_path: Path, name: str,
                                                         exc: type[BaseException]) -> None:
    target = tmp_path / name.rstrip("/")
    if name.endswith("/"):
        target.mkdir()
        (target / "frame_00000.png").write_bytes(b"old frame")
    else:
        target.write_bytes(b"previous output")
    before = sorted((p.name, p.read_bytes() if p.is_file() else None) for p in tmp_path.rglob("*"))
    opts = {"overwrite": True} if name.endswith("/") else {}
    with pytest.raises(exc):
        with open_writer(f"{tmp_path}/{name}", 30, size=(W, H), quiet=True, **opts) as w:
            for i in range(3):
                w.write(frame(i))
            raise exc("interrupted")
    after = sorted((p.name, p.read_bytes() if p.is_file() else None) for p in tmp_path.rglob("*"))
    assert after == before


@pytest.mark.parametrize("name", KINDS)
def test_no_frames_is_an_error_and_leaves_nothing(tmp_path: Path, name: str) -> None:
    with pytest.raises(RenderError, match="no frames"):
        with open_writer(f"{tmp_path}/{name}", 30, size=(W, H), quiet=True):
            pass
    assert list(tmp_path.iterdir()) == []


def test_bad_frames_and_options(tmp_path: Path) -> None:
    with pytest.raises(RenderError, match=r"uint8 \(48, 64, 3\)"):
        with open_writer(tmp_path / "a.gif", 30, size=(W, H)) as w:
            w.write(np.zeros((10, 10, 3), np.uint8))
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RenderError, match="no option 'crf'"):
        open_writer(tmp_path / "a.gif", 30, size=(W, H), crf=20)
    with pytest.raises(RenderError, match="fps"):
        open_writer(tmp_path / "a.gif", 0, size=(W, H))
    with pytest.raises(RenderError, match="does not exist"):
        open_writer(tmp_path / "missing" / "a.gif", 30, size=(W, H))


@pytest.mark.skipif(jit.native_kernels() is None, reason="the C extension animkit._native is not built here")
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 30), st.integers(1, 4))
@settings(max_examples=25, deadline=None)
def test_gif_bytes_equal_with_and_without_the_compiled_indexer(seed: int, w: int, h: int, frames: int) -> None:
    """The ahead-of-time gif_index (one pass: 15-bit colour → LUT, new colours marked and filled) writes the same
    file, byte for byte, as the NumPy path (codes, take, unique): random frames, a fixed palette and one from the
    first frame, colours appearing frame after frame."""
    rng = np.random.default_rng(seed)
    clip = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for _ in range(frames)]
    clip[-1][: h // 2] = clip[0][: h // 2]  # a frame that repeats part of another: the changed rectangle shrinks
    palette = rng.integers(0, 256, (256, 3), dtype=np.uint8) if seed % 2 else None
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for native in (True, False):
            path = Path(tmp) / f"{native}.gif"
            with pytest.MonkeyPatch.context() as m:
                if not native:
                    m.setattr(jit, "native_kernels", lambda: None)
                with GifWriter(path, 10, (w, h), quiet=True, palette=palette) as writer:
                    for f in clip:
                        writer.write(f)
            out[native] = path.read_bytes()
    assert out[True] == out[False]


def _nearest(frame_: np.ndarray, palette: np.ndarray) -> np.ndarray:
    """The GIF's promised colours, by brute force: each pixel's 5-bit bin centre (8 k + 3.5 per channel) to the
    nearest palette row in squared distance, the first row on ties."""
    bins = (frame_ >> 3).reshape(-1, 3).astype(np.int64)  # each distinct bin once (frames share most pixels)
    distinct, which = np.unique(bins, axis=0, return_inverse=True)
    centre = distinct.astype(np.float64) * 8 + 3.5
    rows = np.concatenate([np.argmin(((c[:, None, :] - palette.astype(np.float64)) ** 2).sum(axis=-1), axis=-1)
                           for c in np.array_split(centre, max(1, len(centre) // 4096))])
    return palette[rows[which.ravel()]].reshape(frame_.shape)


def _decoded(path: Path) -> list[np.ndarray]:
    from PIL import Image

    with Image.open(path) as im:
        out = []
        for k in range(im.n_frames):
            im.seek(k)
            out.append(np.asarray(im.convert("RGB")).copy())
    return out


@given(st.integers(0, 2**32 - 1), st.integers(1, 30), st.integers(1, 20), st.integers(2, 5), st.booleans())
@settings(max_examples=20, deadline=None)
def test_gif_decodes_to_each_frames_nearest_palette_colours(seed: int, w: int, h: int, frames: int,
                                                            distinct: bool) -> None:
    """Decoded frame by frame (Pillow), every frame is exactly its pixels' nearest palette colours: the unchanged
    pixels inside a frame's changed rectangle are see-through (the palette's unused row) and show the frame before,
    and a palette of 256 distinct colours (no unused row) is written without see-through pixels."""
    from animkit.render.gif import gif_palette, unused_index

    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    clip = [base.copy() for _ in range(frames)]
    for f in clip[1:]:  # a few pixels change, some back to an earlier colour, so the rectangle holds unchanged ones
        ys, xs = rng.integers(0, h, 3), rng.integers(0, w, 3)
        f[ys, xs] = rng.integers(0, 256, (3, 3), dtype=np.uint8)
    palette = gif_palette(clip[0])
    if distinct:
        palette = np.unique(rng.integers(0, 256, (400, 3), dtype=np.uint8), axis=0)[:256]
        palette = palette[rng.permutation(len(palette))]
    if len(palette) < 256:
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.gif"
        with GifWriter(path, 10, (w, h), quiet=True, palette=palette) as writer:
            for f in clip:
                writer.write(f)
        got = _decoded(path)
        controls = _graphic_controls(path.read_bytes())
    assert len(got) == frames
    for f, g in zip(clip, got, strict=True):
        np.testing.assert_array_equal(g, _nearest(f, palette))
    clear = unused_index(palette)
    assert (clear is None) == distinct
    assert controls[0][1] is None  # the first frame is whole
    assert all(t == clear for _, t in controls[1:])


def _graphic_controls(data: bytes) -> list[tuple[int, int | None]]:
    """Each image's (disposal, transparent index or None) from its Graphic Control Extension, by walking the GIF's
    blocks (GIF89a spec: header, global table, extensions and images as sub-block chains, trailer)."""
    assert data[:6] == b"GIF89a"
    pos = 13 + (3 << ((data[10] & 7) + 1) if data[10] & 0x80 else 0)
    out: list[tuple[int, int | None]] = []
    control: tuple[int, int | None] = (0, None)

    def skip_blocks(p: int) -> int:
        while data[p]:
            p += data[p] + 1
        return p + 1

    while data[pos] != 0x3B:
        if data[pos] == 0x21:  # extension: label, sub-blocks
            if data[pos + 1] == 0xF9:
                flags, index = data[pos + 3], data[pos + 6]
                control = ((flags >> 2) & 7, index if flags & 1 else None)
            pos = skip_blocks(pos + 2)
        else:  # image: descriptor, local table, LZW code size, sub-blocks
            assert data[pos] == 0x2C
            packed = data[pos + 9]
            pos += 10 + (3 << ((packed & 7) + 1) if packed & 0x80 else 0) + 1
            pos = skip_blocks(pos)
            out.append(control)
            control = (0, None)
    return out


def test_unused_index_is_a_row_the_lut_never_gives() -> None:
    from animkit.render.gif import gif_palette, palette_lut, unused_index

    f = np.full((20, 30, 3), 255, np.uint8)
    f[5:15, 5:25] = (200, 30, 30)
    palette = gif_palette(f)
    j = unused_index(palette)
    assert j is not None and any((palette[:j] == palette[j]).all(axis=1))  # a repeat of an earlier row
    assert j not in set(np.unique(palette_lut(palette)).tolist())  # no colour at all maps to it
    rows = np.arange(256 * 3, dtype=np.uint8).reshape(256, 3)  # 256 distinct rows
    assert unused_index(rows) is None
    rows[200] = rows[17]
    assert unused_index(rows) == 200


def test_gif_of_a_moving_block_stores_little_beyond_the_block(tmp_path: Path) -> None:
    """Unchanged pixels inside the changed rectangle cost next to nothing: two blocks moving far apart give a file
    about as small as one block does (a rectangle spanning both, stored pixel by pixel, would be many times larger)."""
    rng = np.random.default_rng(0)
    texture = rng.integers(0, 256, (120, 200, 3), dtype=np.uint8)  # busy, hard-to-compress still background

    def clip(blocks: int) -> list[np.ndarray]:
        out = []
        for i in range(10):
            f = texture.copy()
            f[10:20, 5 + i:15 + i] = (255, 0, 0)
            if blocks == 2:
                f[100:110, 180 - i:190 - i] = (0, 0, 255)
            out.append(f)
        return out

    sizes = {}
    for blocks in (1, 2):
        path = tmp_path / f"{blocks}.gif"
        with GifWriter(path, 10, (200, 120), quiet=True) as w:
            for f in clip(blocks):
                w.write(f)
        sizes[blocks] = path.stat().st_size
        frames = clip(blocks)
        want = _nearest(np.stack(frames), gif_palette_of(frames[0], frames[0]))  # every frame at once
        for w_, g in zip(want, _decoded(path), strict=True):
            np.testing.assert_array_equal(g, w_)
    first = sizes[1]
    assert sizes[2] < 1.2 * first, sizes


def gif_palette_of(_: np.ndarray, first: np.ndarray) -> np.ndarray:
    from animkit.render.gif import gif_palette

    return gif_palette(first)
