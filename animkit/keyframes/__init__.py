"""Keyframes: interpolants on arrays, tracks of keys, and clips sampled into poses (uses core only)."""

from __future__ import annotations

from animkit.keyframes.clip import LOOP_MODES, Blend, Clip, Crossfade, LoopMode, PoseLayout, blend, crossfade
from animkit.keyframes.interpolate import (
    EASINGS,
    Easing,
    auto_clamped_tangents,
    bezier,
    catmull_rom_slopes,
    cubic_hermite,
    ease_in,
    ease_in_out,
    ease_linear,
    ease_out,
    linear,
    segment_fraction,
    segment_index,
    slerp,
    squad,
    step,
)
from animkit.keyframes.track import (
    INTERPOLATIONS,
    ROTATION_INTERPOLATIONS,
    DenseTrackSet,
    Interpolation,
    RotationInterpolation,
    RotationTrack,
    Track,
)

__all__ = [
    # clip
    "Clip",
    "PoseLayout",
    "LoopMode",
    "LOOP_MODES",
    "Blend",
    "Crossfade",
    "blend",
    "crossfade",
    # track
    "Track",
    "RotationTrack",
    "DenseTrackSet",
    "Interpolation",
    "RotationInterpolation",
    "INTERPOLATIONS",
    "ROTATION_INTERPOLATIONS",
    # interpolate
    "Easing",
    "EASINGS",
    "ease_linear",
    "ease_in",
    "ease_out",
    "ease_in_out",
    "segment_index",
    "segment_fraction",
    "step",
    "linear",
    "catmull_rom_slopes",
    "cubic_hermite",
    "auto_clamped_tangents",
    "bezier",
    "slerp",
    "squad",
]
