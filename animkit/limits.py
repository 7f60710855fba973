"""Documented limits on sizes, rates and spans: what animkit refuses before it allocates.

    frames(duration, fps) = ⌊duration · fps⌋ + 1 ≤ MAX_FRAMES,   0 < fps ≤ MAX_FPS,   |t| ≤ MAX_TIME

Every reader and sampler checks its counts against these (and against the data it holds) before it makes
an array, so that work and memory stay bounded by the size of the input. An input beyond a limit is an
:class:`~animkit.errors.AnimkitError` that names the limit.
"""

from __future__ import annotations

import math

from .errors import AnimkitError

__all__ = ["MAX_FPS", "MAX_FRAMES", "MAX_TIME", "MAX_IMAGE_SIDE", "MAX_REFERENCED_BYTES", "MAX_DEPTH",
           "frame_count"]

#: frames per second of a clip, a render or a BVH file (1 / Frame Time)
MAX_FPS = 10_000.0
#: frames one clip may be sampled into, one render may draw, one BVH file may hold
MAX_FRAMES = 10_000_000
#: seconds: key times and clip durations lie in [-MAX_TIME, MAX_TIME] (about 11.6 days)
MAX_TIME = 1_000_000.0
#: pixels: width and height of an image or a render
MAX_IMAGE_SIDE = 8192
#: bytes of a file referred to by another file (a TOML base scene, a URDF mesh, a glTF buffer or image)
MAX_REFERENCED_BYTES = 256 * 1024 * 1024
#: nesting of BVH joints (figures of any depth are read from TOML and URDF, in time linear in their size)
MAX_DEPTH = 1_000


def frame_count(duration: float, fps: float, what: str = "clip") -> int:
    """⌊duration · fps + 1e-9⌋ + 1, after checking fps, duration and the count against the limits."""
    if not (math.isfinite(fps) and 0.0 < fps <= MAX_FPS):
        raise AnimkitError(f"{what}: fps must lie in (0, {MAX_FPS:g}], got {fps!r}")
    if not (math.isfinite(duration) and 0.0 <= duration <= MAX_TIME):
        raise AnimkitError(f"{what}: duration must lie in [0, {MAX_TIME:g}] s, got {duration!r}")
    n = math.floor(duration * fps + 1e-9) + 1
    if n > MAX_FRAMES:
        raise AnimkitError(f"{what}: {duration:g} s at {fps:g} fps is {n:,} frames; the limit is {MAX_FRAMES:,} "
                           f"(lower the fps or shorten the clip)")
    return n
