"""Where a head aims when the eyes take part of a steep gaze: the target's direction with its pitch clamped.

    a = p + ρ (cos φ' ĝ + sin φ' u),   φ' = clamp(φ, −φ_max, φ_max)

with p the head, t the target, v = t − p, ρ = |v|, u the unit world up, ĝ the unit ground direction of v (of the
head's forward axis where v is vertical) and φ = atan2(v · u, |v − (v · u) u|) the target's pitch. Where |φ| ≤ φ_max
a = t; beyond, a lies on the same yaw and distance at the pitch φ_max: the head turns by that much and the eyes
carry the rest (Guitton & Volle 1987, J Neurophysiol 58:427; Freedman 2008, Exp Brain Res 190:369).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["pitch_clamped_aim"]

Array = NDArray[np.float64]


def pitch_clamped_aim(head: ArrayLike, target: ArrayLike, up: ArrayLike, ahead: ArrayLike, limit: float) -> Array:
    """a = p + ρ (cos φ' ĝ + sin φ' u) (module docstring); ``ahead``: the head's forward axis (world), whose ground
    direction serves where the target is straight above or below the head; ``limit``: φ_max in radians."""
    p, t = np.asarray(head, dtype=float), np.asarray(target, dtype=float)
    u = np.asarray(up, dtype=float)
    u = u / np.linalg.norm(u)
    v = t - p
    rho = float(np.linalg.norm(v))
    for g in (v, np.asarray(ahead, dtype=float)):
        g = g - u * (g @ u)
        n = float(np.linalg.norm(g))
        if n > 1e-9 * max(rho, 1e-12):
            break
    else:
        return t
    phi = math.atan2(float(v @ u), float(np.linalg.norm(v - u * (v @ u))))
    lim = abs(float(limit))
    if abs(phi) <= lim:
        return t
    phi = math.copysign(lim, phi)
    return np.asarray(p + rho * (math.cos(phi) * g / n + math.sin(phi) * u), dtype=float)
