"""Where a head aims when the eyes take part of a steep gaze: the target's direction with its pitch clamped.

    a = p + ρ (cos φ' ĝ + sin φ' u),   φ' = sign(φ) σ(|φ|),
    σ(x) = x  for x ≤ φ_k = φ_max − w,   σ(x) = φ_max − w e^{−(x − φ_k)/w}  beyond

with p the head, t the target, v = t − p, ρ = |v|, u the unit world up, ĝ the unit ground direction of v (of the
head's forward axis where v is vertical) and φ = atan2(v · u, |v − (v · u) u|) the target's pitch. σ is the
identity up to the knee φ_k and approaches φ_max beyond it with its value and slope continuous (σ(φ_k) = φ_k,
σ'(φ_k) = 1, σ < φ_max): a = t where |φ| ≤ φ_k; beyond, a lies on the same yaw and distance at the pitch σ(|φ|): the
head turns by that much and the eyes carry the rest (Guitton & Volle 1987, J Neurophysiol 58:427; Freedman 2008,
Exp Brain Res 190:369). A hard clamp would stop the head's pitch dead where a moving look-at point crosses φ_max (a
kink: the neck jittered 0.9–1.2°); the soft knee eases it in over w = ``knee``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["pitch_clamped_aim", "soft_limit", "KNEE"]

Array = NDArray[np.float64]


KNEE = math.radians(10.0)  # w: the soft clamp's knee, below φ_max


def soft_limit(x: float, limit: float, knee: float = KNEE) -> float:
    """sign(x) σ(|x|): the identity up to |x| = limit − knee, then limit − knee e^{−(|x| − limit + knee)/knee}."""
    k = min(knee, limit)
    start = limit - k
    if abs(x) <= start:
        return x
    return math.copysign(limit - k * math.exp(-(abs(x) - start) / k), x) if k > 0 else math.copysign(limit, x)


def pitch_clamped_aim(head: ArrayLike, target: ArrayLike, up: ArrayLike, ahead: ArrayLike, limit: float,
                      knee: float = KNEE) -> Array:
    """a = p + ρ (cos φ' ĝ + sin φ' u), φ' = :func:`soft_limit` (φ) (module docstring); ``ahead``: the head's forward
    axis (world), whose ground direction serves where the target is straight above or below the head; ``limit``:
    φ_max and ``knee``: w, in radians."""
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
    if abs(phi) <= lim - min(knee, lim):
        return t
    phi = soft_limit(phi, lim, knee)
    return np.asarray(p + rho * (math.cos(phi) * g / n + math.sin(phi) * u), dtype=float)
