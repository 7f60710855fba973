"""When and how a natural reach's head turns: the look-at point's path and the hand's wait behind it.

With u the world up axis, the head at p_h and a the direction it looks along at the start, the direction to the
target b is reached by yaw ψ (about u) and pitch φ (above the ground plane), both on one minimum-jerk timeline
s(t/T_g) (Flash & Hogan 1985):

    ψ(t) = s(t/T_g) Δψ,   φ(t) = φ_a + s(t/T_g)(φ_b − φ_a),   look(t) = p_h + ρ (cos φ (cos ψ x̂ + sin ψ ŷ) + sin φ u)

(x̂ the ground direction of a, ŷ = u × x̂, ρ = |t − p_h|). A head that turns this way with its ears level rotates at
ω = ψ̇ u + φ̇ ê (ê ⊥ u: the ear-to-ear axis), so |ω| = √(ψ̇² + φ̇²) = ṡ(t/T_g) A / T_g with A = √(Δψ² + Δφ²): peak
1.875 A / T_g. The turn's time T_g = max(1.875 A / GAZE_SPEED, min(GAZE_MIN, GAZE_SHARE · T)) for a reach of T
seconds keeps the head's peak at or below GAZE_SPEED (a point moving on the straight chord between the two
directions, the earlier path, turns the head up to 1/cos(A/2) faster in the middle, and a yaw at a steep pitch
faster still). The gaze settles (its last 5°) before T_g; the hand's peak speed comes at the middle of its
movement, so the hand waits ``lead`` = max(0, T_g − T/2) s before it starts: the eyes and head start first and
settle on the target before the hand's peak speed however short the reach (a person starts the gaze earlier for a
larger or quicker turn) instead of whipping the head round.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from animkit.motion.reach_measures import minimum_jerk

__all__ = ["GAZE_SPEED", "GAZE_MIN", "GAZE_SHARE", "gaze_turn", "gaze_time", "gaze_lead", "look_path", "turn_degrees"]

Array = NDArray[np.float64]
GAZE_SPEED = 150.0  # deg/s: the look-at path's peak turn speed (a head turns at most ~200 deg/s; the margin is the
# trunk's share the neck cannot cancel within a frame, and the head's own travel)
GAZE_MIN, GAZE_SHARE = 0.25, 0.5  # the turn takes at least min(GAZE_MIN, GAZE_SHARE · T) s


def _frame(a: Array, up: Array) -> tuple[Array, Array]:
    """x̂: a's direction in the ground plane (any ground direction where a is vertical), ŷ = u × x̂."""
    h = a - up * (a @ up)
    n = float(np.linalg.norm(h))
    if n < 1e-9:
        h = np.cross(up, [1.0, 0.0, 0.0] if abs(up[0]) < 0.9 else [0.0, 0.0, 1.0])
        n = float(np.linalg.norm(h))
    x = h / n
    return x, np.cross(up, x)


def gaze_turn(head: Array, ahead: Array, goal: Array, up: Array) -> tuple[float, float, float]:
    """(Δψ, φ_a, φ_b) in radians: the yaw from the direction ``ahead`` (a vector) to ``goal − head`` about the unit
    ``up``, and the two pitches."""
    a = np.asarray(ahead, dtype=float)
    b = np.asarray(goal, dtype=float) - head
    x, y = _frame(a, up)
    pa = math.atan2(float(a @ up), float(np.linalg.norm(a - up * (a @ up))))
    pb = math.atan2(float(b @ up), float(np.linalg.norm(b - up * (b @ up))))
    yaw = math.atan2(float(b @ y), float(b @ x))
    return yaw, pa, pb


def gaze_time(turn_deg: float, duration: float) -> float:
    """T_g = max(1.875 A / GAZE_SPEED, min(GAZE_MIN, GAZE_SHARE · T)) seconds for a turn of A degrees (module
    docstring)."""
    return max(1.875 * turn_deg / GAZE_SPEED, min(GAZE_MIN, GAZE_SHARE * duration), 1e-9)


def gaze_lead(t_gaze: float, duration: float) -> float:
    """How long the hand waits so that a gaze of ``t_gaze`` s has settled by its peak speed: max(0, T_g − T/2)."""
    return max(0.0, t_gaze - 0.5 * duration)


def look_path(head: Array, ahead: Array, goal: Array, up: Array, times: Array, t_gaze: float) -> Array:
    """The look-at point at each time (F, 3): yaw and pitch on one minimum-jerk timeline of ``t_gaze`` s from the
    direction ``ahead`` to the goal, at the goal's distance (module docstring)."""
    u = np.asarray(up, dtype=float) / np.linalg.norm(up)
    a = np.asarray(ahead, dtype=float)
    x, y = _frame(a, u)
    yaw, pa, pb = gaze_turn(head, a, goal, u)
    rho = float(np.linalg.norm(np.asarray(goal, dtype=float) - head))
    s = minimum_jerk(np.asarray(times, dtype=float) / t_gaze)
    psi, phi = s * yaw, pa + s * (pb - pa)
    d = np.cos(phi)[:, None] * (np.cos(psi)[:, None] * x + np.sin(psi)[:, None] * y) + np.sin(phi)[:, None] * u
    out = head + rho * d
    out[s >= 1.0] = goal  # exactly on the target once the turn is done
    return np.asarray(out, dtype=float)


def turn_degrees(yaw: float, pitch_a: float, pitch_b: float) -> float:
    """A = √(Δψ² + Δφ²) in degrees: the angle a level head turns through (its peak speed is 1.875 A / T_g)."""
    return math.degrees(math.hypot(yaw, pitch_b - pitch_a))
