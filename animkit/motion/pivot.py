"""Feet that turn while planted: which contacts spin, what the foot pivots on there, and how far the hip twists a leg
whose ankle cannot (the foot lock's reading of a contact's turn; :mod:`animkit.motion.foot_lock` holds the feet).

A contact **spins** when the clip's foot turns its heading (the toe's ground direction from the ankle) more than
:data:`TWIST_TURN` from its first frame: a hop turning on one foot, a dancer's pivot. Such a foot is not held still:
it pivots on its ball (the toe) wherever the toe is down, the toe held at one point while the foot's heading follows
the clip's, and on its heel before the toe comes down (:func:`pivot_masks`). A contact that turns less is held whole
(heel and toe), and a leg whose ankle cannot twist gets the heading the lock asks for from its hip
(:func:`twist_weight`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from animkit.model.transforms import swing_twist_from_matrix
from animkit.motion.leg_ik import _rotation
from animkit.motion.legs import Contacts, Leg, _intervals
from animkit.motion.pelvis import _near

__all__ = ["TWIST_TURN", "heading_turn", "held_masks", "held_points", "pivot_masks", "run_turns", "spins",
           "twist_weight"]

Array = NDArray[np.float64]
Bool = NDArray[np.bool_]

#: The largest turn of its heading (radians) over a contact for which a clip's foot is held whole (heel and toe, at
#: the heading the lock asks for, given by the hip's twist where the ankle cannot twist: :func:`twist_weight`); a foot
#: turning further spins, pivoting on its toe (:func:`pivot_masks`).
TWIST_TURN = np.radians(30.0)


def heading_turn(R: Array, k: int) -> Array:
    """|τ(f)| (F,): how far the foot's heading has turned from its first frame's, radians in [0, π]; τ the twist about
    the up axis ``k`` of R(f)·R(0)ᵀ (:func:`animkit.model.transforms.swing_twist_from_matrix`), ``R`` (F, 3, 3) the
    foot's world turns (uniformly scaled blocks are fine). The foot's own turn, not its toe's direction: a foot whose
    toe sits almost under its ankle (CesiumMan's: 3 cm ahead) has a heading all the same."""
    R = _rotation(np.asarray(R, dtype=float))
    e = np.zeros(3)
    e[k] = 1.0
    _, tau = swing_twist_from_matrix(R @ R[0].T, e)
    return np.abs(tau)


def run_turns(m: Bool, R: Array, k: int) -> Array:
    """(F,): :func:`heading_turn` within each run of ``m`` (its frames' turn from the run's first frame), 0 outside the
    runs: one swing–twist split over every run's frames at once, R(f)·R(s)ᵀ with s the first frame of f's run."""
    out = np.zeros(m.shape[0])
    rows = np.flatnonzero(m)
    if not rows.size:
        return out
    idx = np.arange(m.shape[0])
    first = np.maximum.accumulate(np.where(m & ~np.concatenate(([False], m[:-1])), idx, 0))[rows]
    R = np.asarray(R, dtype=float)
    e = np.zeros(3)
    e[k] = 1.0
    _, tau = swing_twist_from_matrix(_rotation(R[rows]) @ np.swapaxes(_rotation(R[first]), 1, 2), e)
    out[rows] = np.abs(tau)
    return out


def spins(mh: Bool, mt: Bool, R: Array, k: int, turn: float = TWIST_TURN) -> Bool:
    """(F,): the frames of each contact (a run of ``mh | mt``, heel or toe down) over which the clip's foot turns its
    heading more than ``turn`` (:func:`heading_turn` of the foot's world turns ``R`` (F, 3, 3) over the run, for every
    run at once: :func:`run_turns`)."""
    down = mh | mt
    out = np.zeros_like(mh)
    runs = _intervals(down)
    if not runs:
        return out
    turned = run_turns(down, R, k)
    starts = np.array([s for s, _ in runs])
    over = np.maximum.reduceat(turned, starts) > turn  # each run's largest turn (the frames after a run are 0)
    for (s, e), o in zip(runs, over, strict=True):
        if o:
            out[s:e] = True
    return out


def pivot_masks(mh: Bool, mt: Bool, R: Array, k: int) -> tuple[Bool, Bool]:
    """(heel, toe) masks to hold: in a contact that :func:`spins`, the toe alone wherever it is down (the foot pivots on
    its ball: the lock holds the toe still and the foot keeps the clip's heading, ankle = toe lock − (toe − ankle)(f)),
    the heel where the toe is up (a heel pivot, held where the toe's lock left it or where the toe's lock continues
    from: :func:`animkit.motion.foot_lock._goal`); elsewhere as given. ``R``: the foot's world turns (F, 3, 3) in
    the clip."""
    return mh & ~(spins(mh, mt, R, k) & mt), mt.copy()


def twist_weight(mh: Bool, mt: Bool, R: Array, k: int, nb: int) -> Array:
    """How far (F,) the hip twists a leg whose ankle cannot, to give its foot the heading the lock asks for
    (:class:`animkit.motion.leg_ik.HeldLeg`): over each contact that the toe alone holds some of the time and that does
    not spin (:func:`spins`: a foot pivoting further turns as the clip turns it), and near frames the toe alone holds;
    eased in and out over ``nb`` frames. ``R``: the foot's world turns (F, 3, 3) in the clip."""
    some = np.zeros_like(mh)
    spun = spins(mh, mt, R, k)
    for s, e in _intervals(mh | mt):
        if (mt & ~mh)[s:e].any() and not spun[s]:
            some[s:e] = True
    return _near(some | (mt & ~mh), nb)


def held_masks(c: Contacts, legs: tuple[Leg, ...], R: Array, k: int) -> dict[str, tuple[Bool, Bool]]:
    """Per leg's side, the (heel, toe) frames the lock holds, from the contacts ``c`` of its ankle and toe: a biped's
    foot that spins pivots on its toe (:func:`pivot_masks`; ``R`` (F, legs, 3, 3): the feet's world turns in the clip);
    a quadruped stands on its paws (the toe): its "ankle" is a hock or wrist, so where the paw is down the paw is held
    and the leg pivots about it (ankle = toe lock − (toe − ankle) as the clip turns the foot), and where only the hock
    or wrist is (a running fox's hind leg), that is held."""
    F = c.mask.shape[0]
    masks = {}
    for j, leg in enumerate(legs):
        mh = c.mask[:, c.points.index(leg.ankle)].copy()
        mt = c.mask[:, c.points.index(leg.toe)].copy() if leg.toe in c.points else np.zeros(F, bool)
        if leg.side not in ("l", "r") and leg.toe != leg.ankle:
            mh = mh & ~mt
        elif leg.toe != leg.ankle:
            mh, mt = pivot_masks(mh, mt, R[:, j], k)
        masks[leg.side] = (mh, mt)
    return masks


def held_points(c: Contacts, legs: tuple[Leg, ...], masks: dict[str, tuple[Bool, Bool]]) -> Bool | None:
    """(F, K): the frames each of ``c.points`` was locked in the end (None when nothing was)."""
    if not masks:
        return None
    held = np.zeros_like(c.mask)
    for leg in legs:
        mh, mt = masks[leg.side]
        held[:, c.points.index(leg.ankle)] = mh
        if leg.toe in c.points:
            held[:, c.points.index(leg.toe)] = mt
    return held
