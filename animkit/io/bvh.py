"""BVH motion capture (Biovision Hierarchy): read into a figure and frames, write back.

    M_child = M_parent · L(OFFSET) · E₁(c₁) · E₂(c₂) · … · E_k(c_k)

Each ROOT/JOINT becomes a node whose arc has L = the translation OFFSET and a joint
whose DOFs are the joint's CHANNELS in the file's order (``Xposition`` → a prismatic
DOF ``joint.tx``, ``Zrotation`` → a revolute DOF ``joint.rz``); the product runs in
channel order, so a ``Zrotation Xrotation Yrotation`` joint is the intrinsic Euler
rotation R_z R_x R_y. An ``End Site`` becomes a leaf node ``<parent>_end`` with a
fixed joint. The file holds degrees; poses hold radians (positions stay in file units).

The MOTION block is read in one pass by a compiled scanner (built at install in ``animkit._native``, else numba's,
see :mod:`animkit.jit`) that declines anything it cannot read bit-identically to ``float()``; then in one vectorised
call; only when that fails is it walked line by line, to name the offending line in the error.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from animkit import jit, limits
from animkit.errors import ParseError
from animkit.io.bvh_hierarchy import (  # the hierarchy reader and the channel names
    _DIGITS,
    _MOTION,
    _NUMBER,
    CHANNEL_NAMES,
    _build_figure,
    _compiled_from_blocks,
    _parse_hierarchy,
    _preorder,
    _usual_split,
)
from animkit.io.bvh_write import bvh_baked, bvh_files, dumps_bvh
from animkit.jit import enabled as _jit_enabled
from animkit.jit import kernel
from animkit.jit import pays as jit_pays
from animkit.model.figure import Figure
from animkit.model.rig import character_rig
from animkit.scene import Scene

__all__ = ["BvhData", "parse_bvh", "read_bvh", "dumps_bvh", "bvh_baked", "bvh_files", "check_bvh_files",
           "CHANNEL_NAMES", "parse_frames", "frames_compiled", "load_scanner", "scan_frames_kernel"]

Array = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class BvhData:
    """A parsed BVH file: the figure, frames (F, D) in ``figure.dof_names`` order (radians, file units)."""

    figure: Figure
    frames: Array
    frame_time: float

    @property
    def fps(self) -> float:
        return 1.0 / self.frame_time

    @property
    def times(self) -> Array:
        """t_i = i · frame_time, shape (F,)."""
        return np.arange(self.frames.shape[0], dtype=np.float64) * self.frame_time

    @property
    def duration(self) -> float:
        """(F − 1) · frame_time."""
        return (self.frames.shape[0] - 1) * self.frame_time


# --- reading the motion -----------------------------------------------------------------------------------


def _motion_header(text: str, start: int, line: int, path: str | None) -> tuple[int, float, int, int, int]:
    """Read ``Frames:`` and ``Frame Time:`` after MOTION; return (F, frame_time, Frames line, data offset, line)."""
    values: list[tuple[str, int]] = []
    patterns = [("Frames:", re.compile(r"^\s*Frames\s*:\s*(\S*)\s*$", re.IGNORECASE)),
                ("Frame Time:", re.compile(r"^\s*Frame\s+Time\s*:\s*(\S*)\s*$", re.IGNORECASE))]
    pos, n = start, line + 1  # n: the number of the line that starts at pos
    for label, pat in patterns:
        while True:
            if pos >= len(text):
                raise ParseError(path, f"expected '{label} …' after MOTION, got end of file", line=n - 1)
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            current, current_line = text[pos:end], n
            pos, n = end + 1, n + 1
            if current.strip():
                break
        m = pat.match(current)
        if m is None:
            raise ParseError(path, f"expected '{label} …', got {current.strip()!r}", line=current_line)
        values.append((m.group(1), current_line))
    (frames_text, frames_line), (time_text, time_line) = values
    if not _DIGITS.match(frames_text):
        raise ParseError(path, f"expected a whole number of frames after 'Frames:', got {frames_text!r}",
                         line=frames_line)
    count = int(frames_text) if len(frames_text) <= 20 else limits.MAX_FRAMES + 1
    if count < 1:
        raise ParseError(path, "expected at least one frame, got 'Frames: 0'", line=frames_line)
    if count > limits.MAX_FRAMES:
        raise ParseError(path, f"'Frames: {frames_text}' is more than animkit reads from one file "
                               f"({limits.MAX_FRAMES:,} frames, animkit.limits.MAX_FRAMES)", line=frames_line)
    if not _NUMBER.match(time_text) or not 1.0 / limits.MAX_FPS <= float(time_text) <= limits.MAX_TIME:
        raise ParseError(path, f"expected a number of seconds in [{1.0 / limits.MAX_FPS:g}, {limits.MAX_TIME:g}] "
                               "after 'Frame Time:' (positive, animkit.limits.MAX_FPS and MAX_TIME), "
                               f"got {time_text!r}", line=time_line)
    return count, float(time_text), frames_line, pos, n


# exact powers of ten: 10**k is a double for k <= 22, so m · 10**k and m / 10**k round once (Clinger's fast path)
_POW10 = np.array([float(10 ** k) for k in range(23)])
_MANTISSA_LIMIT = 2 ** 53  # every integer below it is a double
_RADIANS_PER_DEGREE = math.pi / 180.0  # NumPy's deg2rad multiplies by this double


# complexity: a numba kernel: a byte-level number scanner, one flat loop
def _scan_frames(buf: NDArray[np.uint8], out: Array, pow10: Array, scale: Array) -> int:  # noqa: C901
    """out[r, c] = float(token c of the r-th non-blank line of ``buf`` (ASCII)) · scale[c] when every token takes the
    fast path (one more rounding: a scale of π/180 gives ``np.deg2rad``'s value, of 1 the number itself).

    A token is [+-]?(d+.?d*|.d+)([eE][+-]?d+)?; its digits give an integer mantissa m < 2**53 and a decimal
    exponent e, and x = ±m · 10**e with |e| <= 22 is one correctly rounded multiply or divide, bit-identical to
    Python's float(). Tokens of at most 15 digits take m as written (m < 10**15, no check per digit); others, and
    any whose e falls outside, are read again with trailing zeros moved from m to e. Separators: space, tab, LF,
    and CR before LF or at the end. Returns 0 when ``out`` (count, width) is filled exactly; -1 on anything else
    (another separator or character, a token off the fast path, a line without exactly ``width`` tokens, too many
    or too few lines), leaving the caller's slower, exact path to read or explain it.
    """
    count, width = out.shape
    n = buf.shape[0]
    i = 0
    row = 0
    col = 0
    while i < n:
        c = buf[i]
        if c == 32 or c == 9:
            i += 1
            continue
        if c == 10 or c == 13:
            if c == 13 and i + 1 < n and buf[i + 1] != 10:
                return -1
            if c == 10 and col != 0:
                if col != width:
                    return -1
                row += 1
                col = 0
            i += 1
            continue
        if row >= count or col >= width:
            return -1
        negative = c == 45
        if c == 43 or c == 45:
            i += 1
        token = i
        full = 0  # the digits as written, point left out
        nd = 0
        point = -1
        while i < n:
            d = int(buf[i]) - 48
            if 0 <= d <= 9:
                full = full * 10 + d
                nd += 1
            elif d == -2 and point < 0:
                point = nd
            else:
                break
            i += 1
        if nd == 0:
            return -1
        exponent = 0 if point < 0 else point - nd
        if i < n and (buf[i] == 101 or buf[i] == 69):
            i += 1
            sign = 1
            if i < n and (buf[i] == 43 or buf[i] == 45):
                sign = -1 if buf[i] == 45 else 1
                i += 1
            power = 0
            exp_digits = 0
            while i < n and 48 <= buf[i] <= 57:
                if power < 100000:
                    power = power * 10 + (buf[i] - 48)
                exp_digits += 1
                i += 1
            if exp_digits == 0:
                return -1
            exponent += sign * power
        if i < n and not (buf[i] == 32 or buf[i] == 9 or buf[i] == 10 or buf[i] == 13):
            return -1
        if nd <= 15 and -22 <= exponent <= 22:  # full < 10**15 < 2**53: one rounding
            if full == 0:
                value = 0.0
            elif exponent >= 0:
                value = full * pow10[exponent]
            else:
                value = full / pow10[-exponent]
        else:  # the digits again, trailing zeros kept out of the mantissa
            mantissa = 0
            zeros = 0
            j = token
            while j < n:
                d = int(buf[j]) - 48
                if d == 0:
                    zeros += 1
                elif 0 < d <= 9:
                    if zeros != 0:
                        if mantissa != 0:
                            for _ in range(zeros):
                                mantissa *= 10
                                if mantissa >= _MANTISSA_LIMIT:
                                    return -1
                        zeros = 0
                    mantissa = mantissa * 10 + d
                    if mantissa >= _MANTISSA_LIMIT:
                        return -1
                elif d != -2:
                    break
                j += 1
            exponent += zeros
            if mantissa == 0:
                value = 0.0
            elif 0 <= exponent <= 22:
                value = mantissa * pow10[exponent]
            elif -22 <= exponent < 0:
                value = mantissa / pow10[-exponent]
            else:
                return -1
        out[row, col] = (-value if negative else value) * scale[col]
        col += 1
    if col != 0:
        if col != width:
            return -1
        row += 1
    return 0 if row == count else -1


scan_frames_kernel = kernel(_scan_frames)

# The scanner reads ~18 ns a value, NumPy's loadtxt ~160 ns. numba's start-up and the scanner's first loading cost
# ~0.45 s a process (~6 ms when another kernel already runs): ~3M values sent to loadtxt repay the first, ~40k the
# second (a process reading one CMU clip of 149–2,236 frames × 96 channels never starts numba for it; a long-lived
# one switches after some 30 MB of BVH text, or at once when numba is already up).
SCAN_JIT_MIN = 3e6
SCAN_JIT_WARM = 4e4


def load_scanner() -> bool:
    """Load the compiled scanner now, whatever the work (a process about to read much BVH, such as a batch worker,
    pays numba's start-up once up front); whether it is loaded."""
    if scan_frames_kernel is None or not _jit_enabled():
        return False
    scan_frames_kernel(np.frombuffer(b"0 0\n", dtype=np.uint8), np.empty((1, 2)), _POW10, np.ones(2))
    return bool(getattr(scan_frames_kernel, "ready", False))


def frames_compiled(block: str, count: int, width: int, scale: Array | None = None) -> Array | None:
    """The (count, width) frame values of ``block`` (column c times ``scale[c]`` where given) from a compiled
    scanner: the one built at install (from a process's first read, no start-up), else numba's where it pays
    (see :data:`SCAN_JIT_MIN`); None when neither runs or the scanner declined."""
    if width == 0 or not block.isascii():
        return None
    native = jit.native_kernels()
    if native is None and (scan_frames_kernel is None or
                           not jit_pays(scan_frames_kernel, count * width, SCAN_JIT_MIN, SCAN_JIT_WARM)):
        return None
    out = np.empty((count, width))
    if scale is None:
        scale = np.ones(width)
    raw = block.encode("ascii")
    if native is not None:
        done = native.scan_frames(raw, out, count, width, scale) == 0
    else:
        assert scan_frames_kernel is not None
        done = scan_frames_kernel(np.frombuffer(raw, dtype=np.uint8), out, _POW10, scale) == 0
    return out if done else None


def parse_frames(block: str, first_line: int, count: int, width: int, frames_line: int,
                  path: str | None, revolute: NDArray[np.bool_] | None = None) -> Array:
    """The (count, width) numbers of the MOTION data: compiled, else vectorised, then line by line only to explain
    a failure; the ``revolute`` columns (where given) from degrees to radians, x · π/180 as ``np.deg2rad``."""
    # each value takes a digit and a separator at least: a block shorter than that cannot fill 'Frames:', and
    # nothing of the size 'Frames:' claims is allocated before the lines present are read (and found short)
    short = width > 0 and len(block) < 2 * count * width - 1
    if width == 0 and block.count("\n") + 1 < count:  # no channels: one (empty) line per frame
        raise ParseError(path, f"the file ends after {block.count(chr(10)) + 1} lines; 'Frames: {count}' (line "
                               f"{frames_line}) expects {count} (empty) lines for a figure without channels",
                         line=first_line + block.count("\n"))
    turns = revolute is not None and bool(revolute.any())
    scale = np.where(revolute, _RADIANS_PER_DEGREE, 1.0) if revolute is not None and turns else None
    fast = None if short else frames_compiled(block, count, width, scale)
    if fast is not None:
        return fast
    lines = block.split("\n")
    if width == 0:
        data = np.zeros((0, 0))
    else:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "input contained no data": handled below
                data = np.loadtxt(lines, dtype=float, comments=None, ndmin=2)
        except ValueError:
            data = None
    if data is not None and data.shape == (count, width) and np.isfinite(data).all():
        if turns:
            data[:, revolute] = np.deg2rad(data[:, revolute])
        return data
    # slow path: find the first offending line
    seen = 0
    for n, line in enumerate(lines, start=first_line):
        toks = line.split()
        if not toks:
            continue
        seen += 1
        if seen > count:
            raise ParseError(path, f"more frame lines than 'Frames: {count}' (line {frames_line}) says; "
                                   f"expected {count} lines of {width} numbers", line=n)
        if len(toks) != width:
            raise ParseError(path, f"frame {seen} has {len(toks)} values; expected {width}, one per channel",
                             line=n)
        for i, tok in enumerate(toks):
            if not _NUMBER.match(tok) or not math.isfinite(float(tok)):
                raise ParseError(path, f"frame {seen}, value {i + 1}: expected a finite number, got {tok!r}",
                                 line=n)
    if width == 0 and seen == 0:
        return np.zeros((count, 0))
    if seen < count:
        last = first_line + len(lines) - 1
        raise ParseError(path, f"the file ends after {seen} frames; 'Frames: {count}' (line {frames_line}) "
                               f"expects {count} lines of {width} numbers", line=last)
    if width == 0:
        return np.zeros((count, 0))
    raise ParseError(path, f"could not read the {count} x {width} frame values", line=first_line)


def parse_bvh(text: str, path: str | Path | None = None) -> BvhData:
    """Parse BVH ``text`` into a figure and its frames (F, D) in ``dof_names`` order, radians and file units."""
    spath = None if path is None else str(path)
    if text.startswith("\ufeff"):
        text = text[1:]
    usual = _usual_split(text)
    if usual is not None:
        header, root, motion_end = usual
    else:
        m = _MOTION.search(text)
        header = text if m is None else text[:m.start()]
        root = _parse_hierarchy(header, spath)
        if m is None:
            raise ParseError(spath, "expected 'MOTION' after the hierarchy, got end of file",
                             line=header.count("\n") + 1)
        motion_end = m.end()
    motion_line = header.count("\n") + 1
    count, frame_time, frames_line, pos, line = _motion_header(text, motion_end + 1, motion_line, spath)
    blocks = _preorder(root)
    compiled = _compiled_from_blocks(blocks)
    name = Path(spath).stem if spath else "bvh"
    # the Joint/Dof/Node/Arc objects are built on first use: world positions need only the arrays
    figure = Figure.deferred(name, compiled, lambda: _build_figure(blocks, name, spath))
    frames = parse_frames(text[pos:], line, count, compiled.dof_count, frames_line, spath, compiled.dof_revolute)
    figure.defer_rig(character_rig)  # a humanoid's or a quadruped's chains and effectors, where the names say
    return BvhData(figure, frames, frame_time)


def read_bvh(path: str | Path) -> Scene:
    """Load a BVH file as a Scene: its figure (Y up) and one clip named after the file's stem."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ParseError(str(p), f"cannot read file ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(str(p), f"expected UTF-8 text, got byte 0x{raw[exc.start]:02x}",
                         line=raw.count(b"\n", 0, exc.start) + 1) from None
    data = parse_bvh(text, p)
    return Scene(data.figure, clips={p.stem: _clip_from_frames(data, p.stem)}, up="y", source=str(p))


def _clip_from_frames(data: BvhData, name: str) -> Any:
    """The keyframed clip of ``data``: key i at t = i · frame_time, fps = 1 / frame_time."""
    from animkit.keyframes import Clip

    return Clip.from_poses(data.figure, data.times, data.frames, name=name, fps=data.fps)


def check_bvh_files(path: Path, files: Sequence[tuple[Path, bytes]]) -> None:
    """Read the bytes :func:`bvh_files` made as :func:`read_bvh` would (the registry's check before writing)."""
    parse_bvh(dict(files)[path].decode("utf-8"), str(path))
