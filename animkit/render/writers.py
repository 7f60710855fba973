"""Streaming frame writers: GIF, MP4 (H.264), a folder of PNGs, or one contact-sheet PNG.

Every writer is a context manager with ``.write(frame)`` (uint8 ``(H, W, 3)``) and
``.close()``. Frames are streamed: memory stays flat however long the clip. Output goes to a
temporary file (or folder) beside the target and is renamed into place only when ``close()``
succeeds; if the ``with`` block raises (``KeyboardInterrupt`` included) the temporary output is
removed and whatever was at the target path before is left untouched.

GIF: one 256-colour palette for the whole clip (the first frame's main colours plus a fixed
colour cube), applied through a 32×32×32 lookup table, so a frame costs a table lookup plus
Pillow's LZW encoder; only the rectangle that changed since the previous frame is stored, and in it the pixels
that did not change are see-through (a palette row no colour maps to: :func:`~animkit.render.gif.unused_index`),
so they cost the LZW stream next to nothing.
GIF delays are whole hundredths of a second and viewers cap near 50 fps: see
:func:`gif_frame_plan`.
"""

from __future__ import annotations

import errno
import inspect
import math
import os
import struct
import sys
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Final, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit import jit, limits
from animkit.atomic import discard, publish, raise_if_interrupted, temporary_beside
from animkit.errors import RenderError, unknown_name

if TYPE_CHECKING:
    import subprocess

from animkit.render.gif import (
    GIF_MAX_FPS,
    _drop_message,
    _gif_delay_cs,
    gif_frame_plan,
    gif_palette,
    gif_stride,
    palette_index,
    palette_lut,
    unused_index,
)
from animkit.render.image import rgb8

__all__ = [
    "check_output",
    "WriterKind",
    "WRITER_KINDS",
    "GIF_MAX_FPS",
    "FrameWriter",
    "GifWriter",
    "Mp4Writer",
    "PngDirWriter",
    "ContactSheetWriter",
    "open_writer",
    "writer_kind",
    "gif_frame_plan",
    "gif_stride",
    "gif_palette",
    "palette_lut",
]

WriterKind = Literal["gif", "mp4", "png-dir", "contact-sheet"]
WRITER_KINDS: Final[tuple[WriterKind, ...]] = ("gif", "mp4", "png-dir", "contact-sheet")
_SUFFIXES: Final[dict[str, WriterKind]] = {".gif": "gif", ".mp4": "mp4", ".png": "contact-sheet"}

Frame = NDArray[np.uint8]


# ----------------------------------------------------------------------------------------------
# writers


class FrameWriter(ABC):
    """Base: size checks, temp-file lifecycle and the context-manager protocol."""

    kind: WriterKind

    def __init__(self, path: str | Path, fps: float, size: tuple[int, int], quiet: bool) -> None:
        if not (0 < fps <= limits.MAX_FPS):
            raise RenderError(f"fps must lie in (0, {limits.MAX_FPS:g}] (animkit.limits.MAX_FPS), got {fps!r}")
        w, h = size
        if int(w) != w or int(h) != h or not (1 <= w <= limits.MAX_IMAGE_SIDE and 1 <= h <= limits.MAX_IMAGE_SIDE):
            raise RenderError(f"size must be (width, height) whole numbers in 1..{limits.MAX_IMAGE_SIDE} "
                              f"(animkit.limits.MAX_IMAGE_SIDE), got {size!r}")
        self.path = Path(path)
        self.fps = float(fps)
        self.size = (int(w), int(h))
        self.quiet = quiet
        self.frames_in = 0  # frames given to write()
        self._closed = False
        parent = self.path.parent
        if not parent.is_dir():
            raise RenderError(f"output folder {str(parent)!r} does not exist")

    def _check(self, frame: ArrayLike) -> Frame:
        if self._closed:
            raise RenderError(f"writer for {str(self.path)!r} is closed")
        f = np.asarray(frame)
        w, h = self.size
        if f.shape != (h, w, 3) or f.dtype != np.uint8:
            raise RenderError(f"frame must be uint8 ({h}, {w}, 3) for this writer, got {f.dtype} {f.shape}")
        return f

    def write(self, frame: ArrayLike) -> None:
        """Append one frame (uint8 ``(H, W, 3)``, H × W = ``size``). Nothing of the array is kept: the caller may
        draw the next frame into it."""
        f = self._check(frame)
        raise_if_interrupted()  # a Ctrl-C swallowed on its way up (see animkit.atomic.guard_interrupts)
        self._write(f)
        self.frames_in += 1

    def close(self) -> None:
        """Finish the output and move it into place; an empty clip is an error (and leaves nothing)."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.frames_in == 0:
                raise RenderError(f"no frames were written to {str(self.path)!r}")
            self._finish()
        except BaseException:
            self._discard()
            raise

    def abort(self) -> None:
        """Drop the partial output; the target path is left as it was."""
        if self._closed:
            return
        self._closed = True
        self._discard()

    def __enter__(self) -> FrameWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    # what each kind of output does
    @abstractmethod
    def _write(self, frame: Frame) -> None:
        """Take one checked frame."""

    @abstractmethod
    def _finish(self) -> None:
        """Complete the output and move it into place."""

    @abstractmethod
    def _discard(self) -> None:
        """Drop everything written so far (the target is left as it was)."""


class _TempFileWriter(FrameWriter):
    """Writes to ``.<name>.<random>.partial<suffix>`` beside the target; renamed onto it on close."""

    def __init__(self, path: str | Path, fps: float, size: tuple[int, int], quiet: bool) -> None:
        super().__init__(path, fps, size, quiet)
        if self.path.is_dir():
            raise RenderError(f"{str(self.path)!r} is a folder; expected a {self.path.suffix} file path")
        self.tmp_path = temporary_beside(self.path, suffix=f".partial{self.path.suffix}")

    def _discard(self) -> None:
        self._release()
        discard(self.tmp_path)

    def _release(self) -> None:
        """Close open handles (without finishing the output)."""

    def _commit(self) -> None:
        publish(self.tmp_path, self.path)


class GifWriter(_TempFileWriter):
    """Streams a looping GIF with one palette for the whole clip (see module docstring).

    Frames beyond 50 fps are dropped per :func:`gif_frame_plan` (``message`` says so and is
    printed to stderr unless ``quiet``).
    """

    kind: WriterKind = "gif"

    def __init__(self, path: str | Path, fps: float, size: tuple[int, int], quiet: bool = False,
                 palette: NDArray[np.uint8] | None = None, loop: int = 0) -> None:
        super().__init__(path, fps, size, quiet)
        self.stride = gif_stride(fps)
        self.effective_fps = self.fps / self.stride
        self.message = _drop_message(fps, self.stride) if self.stride > 1 else None
        if self.message and not quiet:
            print(f"animkit: {self.message}", file=sys.stderr)
        self.loop = loop
        self.frames_out = 0
        self._palette = None if palette is None else rgb8(palette, "palette").reshape(-1, 3)
        if self._palette is not None and len(self._palette) != 256:
            raise RenderError(f"a GIF palette must have 256 colours, got {len(self._palette)}")
        self._lut: NDArray[np.uint8] | None = None  # flat 15-bit LUT, filled for the colours met so far
        self._known: NDArray[np.uint8] = np.zeros(1 << 15, dtype=np.uint8)  # 1: lut[k] is filled
        self._prev: NDArray[np.uint8] | None = None
        self._clear: int | None = None  # the palette row no colour maps to: the changed rectangle's see-through pixels
        self._pending: NDArray[np.int32] | None = None  # the native kernel's list of pixels of colours not yet met
        self._sub: NDArray[np.uint8] | None = None  # the native kernel's changed rectangle, row by row
        self._prev_rgb: NDArray[np.uint8] | None = None  # the native kernel's frame before (its indices: _prev)
        self._fh: IO[bytes] | None = open(self.tmp_path, "wb")  # noqa: SIM115 - closed in _finish/_release

    def _header(self, palette: NDArray[np.uint8]) -> bytes:
        w, h = self.size
        head = b"GIF89a" + struct.pack("<HHBBB", w, h, 0xF7, 0, 0) + palette.tobytes()
        head += b"!\xff\x0bNETSCAPE2.0\x03\x01" + struct.pack("<H", self.loop) + b"\x00"
        return head

    def _write(self, frame: Frame) -> None:
        if self.frames_in % self.stride:
            return
        from PIL import GifImagePlugin, Image

        assert self._fh is not None
        if self._lut is None:
            if self._palette is None:
                self._palette = gif_palette(frame)
            self._lut = np.zeros(1 << 15, dtype=np.uint8)
            self._clear = unused_index(self._palette)
            self._fh.write(self._header(self._palette))
        ind = self._indices(frame)
        delay = _gif_delay_cs(self.frames_out, self.stride / self.fps)
        x0, y0 = 0, 0
        extra: dict[str, int] = {}
        native = jit.native_kernels()
        if self._prev is not None and native is not None:  # the same rectangle and see-through pixels in one pass
            if self._sub is None:
                self._sub = np.empty(ind.size, np.uint8)
            y0, x0, h, w = native.gif_delta(ind, self._prev, *ind.shape, -1 if self._clear is None else self._clear,
                                            self._sub)
            sub = self._sub[:h * w].reshape(h, w)
            if self._clear is not None:
                extra["transparency"] = self._clear
        elif self._prev is not None:  # store only the changed rectangle (disposal 1: keep the rest)
            diff = ind != self._prev
            rows, cols = np.flatnonzero(diff.any(axis=1)), np.flatnonzero(diff.any(axis=0))
            if len(rows) == 0:
                rows, cols = np.array([0]), np.array([0])
            y0, x0 = int(rows[0]), int(cols[0])
            sub = ind[y0:rows[-1] + 1, x0:cols[-1] + 1]
            if self._clear is not None:  # and in it, the pixels that did not change are see-through
                sub = np.where(diff[y0:rows[-1] + 1, x0:cols[-1] + 1], sub, np.uint8(self._clear))
                extra["transparency"] = self._clear
        else:
            sub = ind
        self._prev = ind
        im = Image.fromarray(np.ascontiguousarray(sub), mode="L")
        for chunk in GifImagePlugin.getdata(im, (x0, y0), duration=10 * delay, disposal=1, **extra):
            self._fh.write(chunk)
        self.frames_out += 1

    def _indices(self, frame: Frame) -> NDArray[np.uint8]:
        """ind[y, x] = lut[k], k = r' << 10 | g' << 5 | b' the pixel's 15-bit colour; the LUT entries of colours not
        met before are filled first (a frame has a few thousand of 32768). In one pass of the ahead-of-time
        kernel where it is built (:func:`animkit.jit.native_kernels`), else in NumPy: the same indices."""
        lut, palette = self._lut, self._palette
        assert lut is not None and palette is not None
        native = jit.native_kernels()
        if native is not None:
            ind = np.empty(frame.shape[:2], dtype=np.uint8)
            rgb = np.ascontiguousarray(frame, dtype=np.uint8)
            if self._pending is None or len(self._pending) != ind.size:
                self._pending = np.empty(ind.size, np.int32)
            if self._prev is None or self._prev_rgb is None:  # the first frame: every pixel through the LUT
                fresh, left = native.gif_index(rgb, lut, self._known, ind, self._pending)
            else:  # a pixel whose colour is the frame before's keeps its index
                fresh, left = native.gif_index(rgb, lut, self._known, ind, self._pending, self._prev_rgb, self._prev)
            if fresh:
                new = np.flatnonzero(self._known == 2)
                lut[new] = palette_index(new, palette)
                self._known[new] = 1
            if left:  # the pixels of the colours met just now
                pix = self._pending[:left]
                c = rgb.reshape(-1, 3)[pix]
                code = ((c[:, 0] >> 3).astype(np.uint16) << 10) | ((c[:, 1] >> 3).astype(np.uint16) << 5) | \
                    (c[:, 2] >> 3)
                ind.reshape(-1)[pix] = lut.take(code)
            if self._prev_rgb is None:  # read by the next frame's indexing (with its indices, self._prev); the
                self._prev_rgb = rgb.copy()  # kernel keeps it the frame before from then on
            return ind
        code = (frame[..., 0] >> 3).astype(np.uint16) << 10
        code |= (frame[..., 1] >> 3).astype(np.uint16) << 5
        code |= frame[..., 2] >> 3
        new = code[self._known.take(code) == 0]
        if len(new):
            new = np.unique(new)
            lut[new] = palette_index(new, palette)
            self._known[new] = 1
        return lut.take(code)

    def _finish(self) -> None:
        assert self._fh is not None
        self._fh.write(b";")
        self._fh.close()
        self._fh = None
        self._commit()

    def _release(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class Mp4Writer(_TempFileWriter):
    """H.264 MP4 (yuv420p) through ffmpeg (imageio-ffmpeg's binary); odd sizes are padded to even by repeating
    the edge.

    ffmpeg's messages go to a temporary log, not the terminal: its warnings are printed after it ends (unless
    ``quiet``); if it fails (a full disk, a closed pipe) the error is one line naming the output and the cause
    (``cannot write the file (No space left on device)``), and the partial file is removed."""

    kind: WriterKind = "mp4"

    def __init__(self, path: str | Path, fps: float, size: tuple[int, int], quiet: bool = False,
                 crf: int = 18) -> None:
        super().__init__(path, fps, size, quiet)
        import subprocess  # here, not at the top: a GIF's process does without it (start-up)
        from fractions import Fraction

        import imageio_ffmpeg

        w, h = self.size
        self.padded = (w + w % 2, h + h % 2)
        rate = Fraction(self.fps).limit_denominator()  # as imageio-ffmpeg passes it: 24000/1001 stays exact
        cmd = [imageio_ffmpeg.get_ffmpeg_exe(), "-y", "-f", "rawvideo", "-vcodec", "rawvideo",
               "-s", f"{self.padded[0]}x{self.padded[1]}", "-pix_fmt", "rgb24", "-r", str(rate), "-i", "-",
               "-vcodec", "libx264", "-pix_fmt", "yuv420p", "-v", "error" if quiet else "warning",
               "-crf", str(int(crf)), "-preset", "veryfast", str(self.tmp_path)]
        self._log: IO[bytes] | None = tempfile.TemporaryFile()  # noqa: SIM115 - closed in _release
        try:
            # its own session: a Ctrl-C at the terminal reaches animkit, which stops ffmpeg itself
            self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._log, start_new_session=True)
        except OSError as exc:
            self._discard()
            raise RenderError(f"{self.path}: cannot start ffmpeg ({exc.strerror or exc})") from None

    def _write(self, frame: Frame) -> None:
        w, h = self.size
        if self.padded != (w, h):
            frame = np.pad(frame, ((0, self.padded[1] - h), (0, self.padded[0] - w), (0, 0)), mode="edge")
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(np.ascontiguousarray(frame).data)
        except OSError:  # ffmpeg has gone (a full disk, killed): its log says why
            raise self._failure() from None

    def _finish(self) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.close()
        except OSError:
            raise self._failure() from None
        if self._proc.wait() != 0:
            raise self._failure()
        self._proc = None
        log = self._read_log()
        if log.strip() and not self.quiet:
            print(log, end="" if log.endswith("\n") else "\n", file=sys.stderr)  # ffmpeg's warnings
        self._release()
        self._commit()

    def _read_log(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read(1 << 20).decode("utf-8", "replace")

    def _failure(self) -> RenderError:
        """Stop ffmpeg and say why it failed, in one line: the first system error its log names (a full disk),
        else no space left where the folder's file system has none, else ffmpeg's last line."""
        proc, self._proc = self._proc, None
        code = _stop(proc)
        log = self._read_log()
        causes = [os.strerror(e) for e in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES,
                                           errno.EIO)]
        found = [c for c in causes if c.lower() in log.lower()]
        if found:
            cause = found[0]
        elif _disk_full(self.tmp_path.parent):
            cause = os.strerror(errno.ENOSPC)
        else:
            lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
            cause = lines[-1] if lines else f"ffmpeg exited with status {code}"
        return RenderError(f"{self.path}: cannot write the file ({cause})")

    def _release(self) -> None:
        proc, self._proc = self._proc, None
        _stop(proc, kill=True)
        if self._log is not None:
            self._log.close()
            self._log = None


def _stop(proc: subprocess.Popen[bytes] | None, kill: bool = False) -> int | None:
    """Close ffmpeg's input and wait for it (10 s, then kill; at once with ``kill``); its exit status."""
    if proc is None:
        return None
    try:
        if proc.stdin is not None:
            proc.stdin.close()
    except OSError:
        pass
    if kill and proc.poll() is None:
        proc.kill()
    import subprocess

    try:
        return proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def _disk_full(folder: Path) -> bool:
    try:
        return os.statvfs(folder).f_bavail == 0
    except (OSError, AttributeError):  # pragma: no cover - not POSIX
        return False


class PngDirWriter(FrameWriter):
    """frame_00000.png, frame_00001.png … in a folder.

    Frames go to a temporary folder beside the target. On close it is renamed into place. A target
    folder that exists and is not empty is refused unless ``overwrite``: then its old ``frame_*.png``
    files are removed and the new ones moved in (other files there are left alone).
    """

    kind: WriterKind = "png-dir"

    def __init__(self, path: str | Path, fps: float, size: tuple[int, int], quiet: bool = False,
                 compress_level: int = 3, overwrite: bool = False) -> None:
        super().__init__(path, fps, size, quiet)
        if self.path.exists() and not self.path.is_dir():
            raise RenderError(f"{str(self.path)!r} is a file; a PNG sequence needs a folder path")
        check_output(f"{self.path}{os.sep}", overwrite=overwrite)
        self.tmp_path = temporary_beside(self.path, suffix=".partial", directory=True)
        self.compress_level = compress_level

    def _write(self, frame: Frame) -> None:
        from PIL import Image

        Image.fromarray(frame).save(self.tmp_path / f"frame_{self.frames_in:05d}.png",
                                    compress_level=self.compress_level)

    def _finish(self) -> None:
        if not self.path.exists():
            publish(self.tmp_path, self.path, directory=True)
            return
        for old in self.path.glob("frame_*.png"):
            old.unlink()
        for new in sorted(self.tmp_path.iterdir()):
            os.replace(new, self.path / new.name)
        discard(self.tmp_path)

    def _discard(self) -> None:
        discard(self.tmp_path)


class ContactSheetWriter(_TempFileWriter):
    """One PNG of at most ``max_tiles`` downscaled frames, every k-th frame, labelled with its index
    (a single frame is written as it is, full size: a still).

    With ``n_frames`` known, k = ⌈n / max_tiles⌉. Otherwise k starts at 1 and doubles (dropping
    every other kept tile) whenever the tiles would exceed ``max_tiles``, so memory stays bounded.
    """

    kind: WriterKind = "contact-sheet"

    def __init__(self, path: str | Path, fps: float, size: tuple[int, int], quiet: bool = False,
                 max_tiles: int = 24, tile_width: int = 200, n_frames: int | None = None,
                 columns: int | None = None) -> None:
        super().__init__(path, fps, size, quiet)
        if max_tiles < 1 or tile_width < 1:
            raise RenderError(f"max_tiles and tile_width must be >= 1, got {max_tiles!r}, {tile_width!r}")
        self.max_tiles = max_tiles
        self.stride = 1 if n_frames is None else max(1, math.ceil(n_frames / max_tiles))
        self.columns = columns
        w, h = self.size
        self.tile_size = (min(tile_width, w), max(1, round(h * min(tile_width, w) / w)))
        self.tiles: list[tuple[int, Frame]] = []

    def _write(self, frame: Frame) -> None:
        if self.frames_in == 0:
            self.first = frame.copy()  # a one-frame "sheet" is that frame, full size (the caller may reuse its own)
        if self.frames_in % self.stride:
            return
        from PIL import Image

        tile = np.asarray(Image.fromarray(frame).resize(self.tile_size, Image.Resampling.BOX))
        self.tiles.append((self.frames_in, tile))
        while len(self.tiles) > self.max_tiles:
            self.stride *= 2
            self.tiles = [(i, t) for i, t in self.tiles if i % self.stride == 0]

    def _finish(self) -> None:
        from PIL import Image

        from animkit.render.panels import compose_panels

        if len(self.tiles) == 1 and self.tiles[0][0] == 0:
            sheet = self.first
        else:
            sheet = compose_panels([t for _, t in self.tiles], [f"frame {i}" for i, _ in self.tiles],
                                   columns=self.columns)
        Image.fromarray(sheet).save(self.tmp_path, format="PNG")
        self._commit()


def writer_kind(path: str | Path) -> WriterKind:
    """Kind from the path: ``.gif``, ``.mp4``, ``.png`` (contact sheet), an existing folder or a
    path ending in ``/`` (PNG per frame)."""
    s = str(path)
    p = Path(s)
    if s.endswith(("/", os.sep)) or p.is_dir():
        return "png-dir"
    kind = _SUFFIXES.get(p.suffix.lower())
    if kind is None:
        valid = [*_SUFFIXES, "a folder path ending in '/'"]
        raise RenderError(f"cannot tell the output format of {s!r}: "
                          + unknown_name("suffix", p.suffix or "(none)", valid))
    return kind


def check_output(path: str | Path, *, overwrite: bool = False, render: bool = True) -> None:
    """Fail now, before any work, if ``path`` cannot be written: its folder is missing or not writable, or it
    is a folder that is not empty (without ``overwrite``). ``render``: a frame output (its kind from the
    path, a folder for PNG frames), else any file (a saved clip, a JSON report)."""
    p = Path(path)
    folder_out = render and writer_kind(path) == "png-dir"
    folder = p if folder_out and p.is_dir() else p.parent
    if not folder.is_dir():
        raise RenderError(f"output folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise RenderError(f"output folder {str(folder)!r} is not writable (permission denied)")
    if folder_out and p.is_dir() and not overwrite and any(os.scandir(p)):
        raise RenderError(f"output folder {str(p)!r} is not empty; give an empty or new folder, or --overwrite "
                          f"(overwrite=True) to replace its frame_*.png files")
    if not folder_out and p.is_dir():
        raise RenderError(f"{str(p)!r} is a folder; expected a file path")


def open_writer(path: str | Path, fps: float, *, size: tuple[int, int], kind: WriterKind | None = None,
                quiet: bool = False, **options: Any) -> FrameWriter:
    """Writer for ``path`` (kind from its suffix unless given): use as ``with open_writer(...) as w:``.

    ``size`` is ``(width, height)``. ``options`` go to the writer class: GIF ``palette``, ``loop``;
    MP4 ``crf``; PNG folder ``compress_level``; contact sheet ``max_tiles``, ``tile_width``,
    ``n_frames``, ``columns``. An unknown option is an error.
    """
    k = writer_kind(path) if kind is None else kind
    classes: dict[str, type[FrameWriter]] = {"gif": GifWriter, "mp4": Mp4Writer, "png-dir": PngDirWriter,
                                             "contact-sheet": ContactSheetWriter}
    if k not in classes:
        raise RenderError(unknown_name("writer kind", str(k), WRITER_KINDS))
    cls = classes[k]
    accepted = [n for n in inspect.signature(cls.__init__).parameters if n not in _BASE_PARAMS]
    for name in options:
        if name not in accepted:
            raise RenderError(f"the {k} writer has no option {name!r}; its options are: "
                              + ", ".join(repr(a) for a in accepted))
    return cls(path, fps, size, quiet, **options)


_BASE_PARAMS: Final = ("self", "path", "fps", "size", "quiet")
