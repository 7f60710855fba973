"""Documented limits on sizes, rates and spans: what animkit refuses before it allocates.

    frames(duration, fps) = ⌊duration · fps⌋ + 1 ≤ MAX_FRAMES,   0 < fps ≤ MAX_FPS,   |t| ≤ MAX_TIME

Every reader and sampler checks its counts against these (and against the data it holds) before it makes
an array, so that work and memory stay bounded by the size of the input. An input beyond a limit is an
:class:`~animkit.errors.AnimkitError` that names the limit (``animkit.limits.MAX_NODES``).

The limits are module attributes read when they are checked (every reader reads ``limits.MAX_X`` at the call,
never a copy imported by value), so a program that needs more sets them before loading
(``animkit.limits.MAX_NODES = 200_000``, or ``monkeypatch.setattr(animkit.limits, "MAX_NODES", ...)`` in a test);
they are process-wide, not per thread. ``tests/test_limits.py`` checks that lowering each one takes effect.
"""

from __future__ import annotations

import math

from animkit.errors import AnimkitError

__all__ = ["MAX_FPS", "MAX_FRAMES", "MAX_TIME", "MAX_IMAGE_SIDE", "MAX_REFERENCED_BYTES", "MAX_DEPTH",
           "MAX_NODES", "MAX_SKIN_JOINTS", "MAX_KEYS", "MAX_SAMPLES", "MAX_IMAGE_PIXELS", "MAX_TOTAL_IMAGE_PIXELS",
           "MAX_DECODED_BYTES", "MAX_SCALE", "frame_count", "sample_count"]

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
#: nesting of BVH joints and glTF nodes (figures of any depth are read from TOML and URDF, in time linear in
#: their size)
MAX_DEPTH = 1_000
#: nodes of a glTF file (its ``nodes`` array)
MAX_NODES = 50_000
#: joints of one glTF skin
MAX_SKIN_JOINTS = 4_096
#: key times of one clip, summed over its tracks (a glTF animation's channels)
MAX_KEYS = 10_000_000
#: values one clip samples into: frames(duration, fps) × its DOFs (a day at 30 fps on one DOF is 2.6 M)
MAX_SAMPLES = 1 << 25
#: pixels of one decoded image (a 4096 × 4096 texture)
MAX_IMAGE_PIXELS = 1 << 24
#: pixels of all the images one file decodes
MAX_TOTAL_IMAGE_PIXELS = 1 << 26
#: bytes of the arrays a glTF file's accessors decode to (float64), summed over every use: what an accessor
#: with no buffer view (zeros) or a sparse one claims counts as much as bytes in a buffer; the data of
#: ``data:`` URIs and buffers counts too
MAX_DECODED_BYTES = 256 * 1024 * 1024
#: magnitude of a scale factor a file may give a node (beyond it sizes overflow when drawn or written)
MAX_SCALE = 1e6


def frame_count(duration: float, fps: float, what: str = "clip") -> int:
    """⌊duration · fps + 1e-9⌋ + 1, after checking fps, duration and the count against the limits."""
    if not (math.isfinite(fps) and 0.0 < fps <= MAX_FPS):
        raise AnimkitError(f"{what}: fps must lie in (0, {MAX_FPS:g}] (animkit.limits.MAX_FPS), got {fps!r}")
    if not (math.isfinite(duration) and 0.0 <= duration <= MAX_TIME):
        raise AnimkitError(f"{what}: duration must lie in [0, {MAX_TIME:g}] s (animkit.limits.MAX_TIME), "
                           f"got {duration!r}")
    n = math.floor(duration * fps + 1e-9) + 1
    if n > MAX_FRAMES:
        raise AnimkitError(f"{what}: {duration:g} s at {fps:g} fps is {n:,} frames; the limit is {MAX_FRAMES:,} "
                           "(animkit.limits.MAX_FRAMES) "
                           f"(lower the fps or shorten the clip)")
    return n


def sample_count(duration: float, fps: float, dofs: int, what: str = "clip") -> int:
    """frames(duration, fps) · dofs, the values a clip samples into, checked against :data:`MAX_SAMPLES`."""
    n = frame_count(duration, fps, what) * max(1, dofs)
    if n > MAX_SAMPLES:
        raise AnimkitError(f"{what}: {duration:g} s at {fps:g} fps on {dofs} DOFs is {n:,} sampled values; the "
                           f"limit is {MAX_SAMPLES:,} (animkit.limits.MAX_SAMPLES)")
    return n
