"""A biped's pelvis, shared by its two legs, moved so the foot lock can hold both feet: :func:`pelvis_offset`.

The lock (:mod:`animkit.motion.foot_lock`) gives each leg an ankle goal; a held foot out of the leg's reach needs the
pelvis lower, a planted knee bent to the clip's limit needs it higher. Per frame the pelvis takes the least vertical
move that meets both (closed form); where the two clash (a trailing toe out of reach while the landing knee is at
its bend limit) it also shifts along the ground, towards the foot out of reach and away from the bent knee, by the
least amount of a small bound (:data:`PELVIS_SHIFT`), as the "pelvis adjustment" of Maya's HumanIK and Unreal's leg
IK does; smoothed over the lock's blend (:func:`smooth_max`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from animkit import jit
from animkit.motion.leg_ik import SOFT, HeldLeg
from animkit.motion.legs import Leg, _norm

__all__: list[str] = []

Array = NDArray[np.float64]
Bool = NDArray[np.bool_]


def smooth_max(x: Array, r: int) -> Array:
    """A max filter then a mean filter, both of half-width r: a bump that covers x and eases in and out. The C
    extension's ``smooth_max`` takes the same steps (NumPy's pairwise sum for the mean, bit for bit) where it is
    built and x holds no NaN."""
    kernel = getattr(jit.native_kernels(), "smooth_max", None)
    if kernel is not None and x.ndim == 1 and x.size and x.dtype == np.float64 and r >= 0:
        out = np.empty(x.size)
        if kernel(np.ascontiguousarray(x), out, x.size, int(r)):
            return out
    pad = np.pad(x, r, mode="edge")
    wide = np.lib.stride_tricks.sliding_window_view(pad, 2 * r + 1).max(axis=1)
    pad = np.pad(wide, r, mode="edge")
    return np.lib.stride_tricks.sliding_window_view(pad, 2 * r + 1).mean(axis=1)


def _off_held(bump: Array, x: Array, held: Bool, r: int) -> Array:
    """max(x, s·bump): ``bump`` (covering x ≥ 0, a lift out of the ground) eased by s = smoothstep(min(t / r, 1)),
    t the frames to the nearest ``held`` frame (s = 0 there, where x = 0): no lift spread by
    :func:`animkit.motion.pelvis.smooth_max` reaches a held frame (its goal already stands the sole on the ground),
    and near one the foot is lifted only as far as it must be (its sole kept on the ground)."""
    F = len(x)
    idx = np.arange(F)
    prev = np.maximum.accumulate(np.where(held, idx, -F - r))  # the last held frame up to f, the first from f on
    nxt = np.minimum.accumulate(np.where(held, idx, 2 * F + r)[::-1])[::-1]
    z = np.clip(np.minimum(idx - prev, nxt - idx) / r, 0.0, 1.0)
    return np.maximum(x, z * z * (3.0 - 2.0 * z) * bump)


def _near(mask: Bool, r: int) -> Array:
    """1 on ``mask``, easing to 0 over r frames either side: smoothstep((r + 1 − t) / (r + 1)), t the frames to the
    nearest frame of ``mask`` (the weights :func:`_goal` eases a lock in and out by)."""
    F = len(mask)
    idx = np.arange(F)
    prev = np.maximum.accumulate(np.where(mask, idx, -F - r - 1))
    nxt = np.minimum.accumulate(np.where(mask, idx, 2 * F + r + 1)[::-1])[::-1]
    x = np.clip((r + 1.0 - np.minimum(idx - prev, nxt - idx)) / (r + 1.0), 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


#: How far a biped's pelvis may shift along the ground, a fraction of the leg's length, where lowering or raising it
#: alone cannot give a held foot its reach and a planted knee its bend at once (a trailing toe out of reach while
#: the landing knee is at the clip's bend), as "pelvis adjustment" does in Maya's HumanIK and Unreal's leg IK.
PELVIS_SHIFT = 0.12


def shift_needs(feet: list[HeldLeg], W: Array, names: list[str], k: int, h: Array, rows: NDArray[np.intp] | None = None
           ) -> tuple[Array, Array, Array]:
    """For pelvis shifts ``h`` (…, F, 3) along the ground (F: the frames ``rows`` where given, else all), the bounds on
    how far it comes down, d (…, F): every active
    leg's hip–goal distance ≤ its reach less half the soft stop, far, needs d ≥ −y − √(far² − x²) (y the goal's
    height from the hip, x its distance along the ground); every planted leg's ≥ the bend the clip allows it, bent,
    needs d ≤ −y − √(bent² − x²) (< 0: the pelvis must go up); and by how much a goal lies further along the ground
    than its leg reaches (short = x − far, which no d mends). → (lower, upper, short), ∓inf where unbounded."""
    lower, short = np.full(h.shape[:-1], -np.inf), np.zeros(h.shape[:-1])
    upper = np.full(h.shape[:-1], np.inf)
    at = slice(None) if rows is None else rows  # each frame's bounds are its own: the frames asked for alone
    for f in feet:
        reach, active = f.reach, f.active[at]
        off = f.goal[at] - W[at, names.index(f.leg.hip), :3, 3] - h
        vert = off[..., k]
        flat2 = np.maximum(np.einsum("...i,...i->...", off, off) - vert**2, 0.0)
        far = reach - 0.5 * SOFT * reach  # half into the IK's soft stop: the foot ≤ 0.11 of its width short
        bent = np.minimum(f.near + 0.5 * SOFT * reach, f.d_clip[at])  # never for a bend the clip makes itself there
        lower = np.maximum(lower, np.where(active & (flat2 < far**2),
                                           -vert - np.sqrt(np.maximum(far**2 - flat2, 0.0)), -np.inf))
        upper = np.minimum(upper, np.where((f.w[at] >= 1.0) & (flat2 < bent**2),
                                           -vert - np.sqrt(np.maximum(bent**2 - flat2, 0.0)), np.inf))
        short = np.maximum(short, np.where(active, np.sqrt(flat2) - far, 0.0))
    return lower, upper, short


def pelvis_offset(feet: list[HeldLeg], W: Array, names: list[str], k: int, nb: int) -> Array:
    """The biped pelvis's world offset (F, 3): o = s·ê − d·ê_up, smoothed over ``nb`` frames.

    d = min(max(0, lower), upper) (:func:`shift_needs` at the shift chosen): the least vertical move that gives
    every held foot its reach without bending a planted knee past the clip's; where the two clash (lower > upper),
    the planted knee wins (the foot out of reach then misses, and the lock lets it go there). ê: along the
    ground, towards the goals out of reach and away from the planted goals too near (both ask the same way when a
    trailing foot is out of reach while the landing knee is bent to its limit); s: 0 where the vertical move alone
    will do, else the least s ≤ :data:`PELVIS_SHIFT` of the leg's length (21 steps) that leaves the least unmet,
    (lower − upper)⁺ + short⁺. Smoothing: :func:`smooth_max` of each sign of each component of s·ê and of d, then
    d kept ≤ upper's own smoothed lower envelope."""
    F = W.shape[0]
    zero = np.zeros((F, 3))
    lower, upper, short = shift_needs(feet, W, names, k, zero)
    tol = 1e-6 * max(leg_length(W[0], names, f.leg) for f in feet)
    clash = (lower > upper + tol) | (short > tol)
    shift = zero.copy()
    if clash.any():  # the shift is searched on the clashing frames only (elsewhere it is 0: their bounds stand)
        rows = np.flatnonzero(clash)
        n = rows.size
        e, still = np.zeros((n, 3)), np.zeros((n, 3))
        for f in feet:  # each leg's own ask: towards its goal where out of reach, away where its knee is too bent
            lo, up, sh = shift_needs([f], W, names, k, still, rows)
            off = f.goal[rows] - W[rows, names.index(f.leg.hip), :3, 3]
            off[:, k] = 0.0
            unit = off / np.maximum(_norm(off, axis=1, keepdims=True), 1e-300)
            e += np.where(((lo > upper[rows] + tol) | (sh > tol))[:, None], unit, 0.0)
            e -= np.where((up < lower[rows] - tol)[:, None], unit, 0.0)
        e /= np.maximum(_norm(e, axis=1, keepdims=True), 1e-300)
        s = np.linspace(0.0, PELVIS_SHIFT * 1e6 * tol, 21)
        lo, up, sh = shift_needs(feet, W, names, k, s[:, None, None] * e[None], rows)
        best = np.argmin(np.maximum(lo - up, 0.0) + sh, axis=0)  # the first (least) shift of the least unmet
        shift[rows] = s[best][:, None] * e
        lower[rows], upper[rows] = lo[best, np.arange(n)], up[best, np.arange(n)]
    big = 1e7 * tol
    upper = np.minimum(upper, big)
    col = np.concatenate([shift, -np.minimum(np.maximum(lower, 0.0), upper)[:, None]], axis=1)  # s·ê, then −d
    out = np.zeros_like(col)
    for i in range(4):
        for sign in (1.0, -1.0):
            part = np.maximum(sign * col[:, i], 0.0)
            if part.max() > 0:
                out[:, i] += sign * smooth_max(part, nb)
    if upper.min() < big:
        out[:, 3] = np.maximum(out[:, 3], -np.minimum(upper, -smooth_max(-upper, nb)))  # d ≤ upper, smoothly
    return out[:, :3] + out[:, 3:] * np.eye(3)[k]


def leg_length(W0: Array, names: list[str] | tuple[str, ...], leg: Leg) -> float:
    """Thigh plus shin, from one frame's world transforms (…, 4, 4) of every node."""
    h, kn, a = (W0[names.index(n), :3, 3] for n in (leg.hip, leg.knee, leg.ankle))
    return float(np.linalg.norm(kn - h) + np.linalg.norm(a - kn))
