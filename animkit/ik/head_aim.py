"""Where a head aims when the eyes take part of a steep gaze: the target's direction with part of its pitch left to
the eyes.

    a = p + ρ (cos φ_h ĝ + sin φ_h u),   φ_h = sign(φ) (|φ| − E S((|φ| − 5E/6) / (3E/2))),
    S(τ) = 3τ² − 2τ³ on [0, 1] (0 before, 1 after)

with p the head, t the target, v = t − p, ρ = |v|, u the unit world up, ĝ the unit ground direction of v (of the
head's forward axis where v is vertical), φ = atan2(v · u, |v − (v · u) u|) the target's pitch and E the eyes'
range. The eyes take nothing of a pitch up to 5E/6, then an eased share up to E from 7E/3 on, the head the rest:
with E = 30°, a target 25° below the eyes is aimed at by the head alone, one 50° below by the head 32.5° and the
eyes 17.5°, one 70° below by the head 40° and the eyes 30°, a steeper one by the head beyond 40°, as the eyes can
go no further. In eye-head gaze shifts the eyes carry up to ~30° and the head the rest (Guitton & Volle 1987, J
Neurophysiol 58:427; Freedman 2008, Exp Brain Res 190:369). φ_h is continuous with its slope (1 − E S' ≥ 0: the
head never turns back as the target drops): a hard clamp of the head's pitch stopped the head dead where a moving
look-at point crossed it (the neck's jitter 0.22 -> 0.9-1.2°).

:func:`shift_shared_aim` takes the same share of the whole gaze shift from the body's start forward instead (the
eyes take part of an oblique shift's vector, its yaw too): the natural reach's Gaze uses it (``Gaze.start``).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.model.transforms import vector_norm

__all__ = ["head_pitch_share", "pitch_shared_aim", "shift_shared_aim"]

Array = NDArray[np.float64]


def head_pitch_share(pitch: float, eye_range: float) -> float:
    """φ_h = sign(φ) (|φ| − E S((|φ| − 5E/6) / (3E/2))) (module docstring), radians."""
    e = abs(float(eye_range))
    if e <= 0:
        return pitch
    t = min(1.0, max(0.0, (abs(pitch) - 5.0 * e / 6.0) / (1.5 * e)))
    return math.copysign(abs(pitch) - e * t * t * (3.0 - 2.0 * t), pitch)


def pitch_shared_aim(head: ArrayLike, target: ArrayLike, up: ArrayLike, ahead: ArrayLike, eye_range: float
                     ) -> Array:
    """a = p + ρ (cos φ_h ĝ + sin φ_h u) (module docstring); ``ahead``: the head's forward axis (world), whose ground
    direction serves where the target is straight above or below the head; ``eye_range``: E in radians."""
    p, t = np.asarray(head, dtype=float), np.asarray(target, dtype=float)
    u = np.asarray(up, dtype=float)
    u = u / vector_norm(u)
    v = t - p
    rho = vector_norm(v)
    for g in (v, np.asarray(ahead, dtype=float)):
        g = g - u * (g @ u)
        n = vector_norm(g)
        if n > 1e-9 * max(rho, 1e-12):
            break
    else:
        return t
    phi = math.atan2(float(v @ u), vector_norm(v - u * (v @ u)))
    if abs(phi) <= 5.0 * abs(eye_range) / 6.0:
        return t
    phi = head_pitch_share(phi, eye_range)
    return np.asarray(p + rho * (math.cos(phi) * g / n + math.sin(phi) * u), dtype=float)


def shift_shared_aim(head: ArrayLike, target: ArrayLike, start: ArrayLike, eye_range: float) -> Array:
    """a = p + ρ (cos φ_h ŝ + sin φ_h ŵ), φ = ∠(ŝ, v̂), φ_h = :func:`head_pitch_share` (φ, E), ŵ = the unit part of
    v̂ ⟂ ŝ: the eyes' share taken along the gaze shift from ``start`` (ŝ, the body's forward where the reach starts)
    to the target's direction v̂ = (t − p)/ρ, not along its pitch alone (the target itself where φ ≤ 5E/6 or the
    shift is undefined, v̂ = −ŝ). Straight ahead and below, the shift is a pitch and a = :func:`pitch_shared_aim`'s;
    to the side, the eyes take part of the yaw too, as they do of an oblique gaze shift's whole vector (Freedman &
    Sparks 1997, J Neurophysiol 77:2328; Freedman 2008). With the pitch alone left to the eyes, CesiumMan's hips-up
    reach aimed its head 56° to the side of the trunk and 32° down, beyond its neck's 2 × 30° twist: the neck
    pressed on its cones' rims 31.6° off the aim, where the aim's error is flat along the rim, and thrashed."""
    p, t = np.asarray(head, dtype=float), np.asarray(target, dtype=float)
    s = np.asarray(start, dtype=float)
    s = s / vector_norm(s)
    v = t - p
    rho = vector_norm(v)
    if rho <= 1e-12:
        return t
    v = v / rho
    w = v - s * float(s @ v)
    sn = vector_norm(w)
    phi = math.atan2(sn, float(s @ v))
    if phi <= 5.0 * abs(eye_range) / 6.0 or sn <= 1e-9:
        return t
    phi_h = head_pitch_share(phi, eye_range)
    return np.asarray(p + rho * (math.cos(phi_h) * s + math.sin(phi_h) * w / sn), dtype=float)
