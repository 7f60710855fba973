"""Limbs and their reach, for completing a body from effectors (:func:`animkit.ik.effectors.pose_from_effectors`):

    a target t is out of a limb's reach when ‖t − p_base‖ > Σ rest bone lengths from the base to the effector

(no pose of the joints between them meets it), the base the limb's root (the upper arm for a hand, the upper leg for a
foot, the neck for the head) or the figure's root node."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from animkit.ik.prior import PriorBinding
from animkit.model.figure import Figure
from animkit.model.humanoid import match_figure

__all__ = ["Limbs", "out_of_limb_reach", "limb", "rest_world", "LIMB_BASE"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Limbs:
    """Per target: ``mask`` (targets, D), the DOFs that move it; ``base`` −1, −2 for a target left out, or for a target
    out of its limb's reach the node of the limb's root, its ``reach`` the limb's length and its mask the limb's own
    DOFs (those that move the effector and not the root's parent), so that it points the limb at the target and never
    pulls the body."""

    mask: NDArray[np.bool_]
    base: NDArray[np.intp]
    reach: Array

    @staticmethod
    def none(b: PriorBinding, tg: list[tuple[int, Array, Array | None]]) -> Limbs:
        node = np.array([i for i, _, _ in tg], dtype=np.intp)
        return Limbs(b.moves[node].copy(), np.full(len(tg), -1, dtype=np.intp), np.zeros(len(tg)))

    @staticmethod
    def far(figure: Figure, b: PriorBinding, tg: list[tuple[int, Array, Array | None]], far: NDArray[np.bool_],
            drop: bool = False) -> Limbs:
        """The far targets (``far``) pointed at through their limbs, or left out (``drop``: base −2, no DOF)."""
        out = Limbs.none(b, tg)
        W0 = rest_world(figure)
        for k in np.flatnonzero(far):
            base, length = limb(figure, tg[k][0], rest=W0)
            parent = int(figure.compiled.parent[base])
            out.base[k], out.reach[k] = (-2, 0.0) if drop else (base, length)
            if drop:
                out.mask[k] = False
            elif parent >= 0:
                out.mask[k] &= ~b.moves[parent]
        return out


def out_of_limb_reach(figure: Figure, tg: list[tuple[int, Array, Array | None]], q: Array, *,
                      from_root: bool = False) -> NDArray[np.bool_]:
    """Per target: ‖t − p_base‖ > Σ bone lengths from the base to the effector (no pose of those joints meets it),
    the base the effector's limb root (:data:`LIMB_BASE`: the upper arm for a hand, the upper leg for a foot, the
    neck for the head) at pose ``q``, or the figure's root node with ``from_root`` (with the root given, no pose at
    all meets it)."""
    W = figure.world_batch(q[None])[0]
    root = figure.compiled.node_names.index(figure.root_arc.child.name)
    out, W0 = np.zeros(len(tg), dtype=bool), rest_world(figure)
    for k, (node, tp, _) in enumerate(tg):
        base, length = limb(figure, node, root if from_root else None, rest=W0)
        out[k] = base >= 0 and float(np.linalg.norm(tp - W[base, :3, 3])) > length * (1.0 + 1e-9)
    return out


def rest_world(figure: Figure) -> Array:
    """W⁰ (nodes, 4, 4): every node's world matrix at the rest pose."""
    return figure.world_batch(figure.rest_pose()[None])[0]


def limb(figure: Figure, node: int, base: int | None = None, *, rest: Array | None = None) -> tuple[int, float]:
    """(the node of the limb's root, −1 where the figure has none; Σ of the rest bone lengths from it to ``node``): the
    root :data:`LIMB_BASE` names for the effector at ``node``, or ``base``; ``rest`` the rest pose's world matrices
    (:func:`rest_world`) where the caller has them."""
    c = figure.compiled
    if base is None:
        eff = {v: k for k, v in figure.rig.effectors.items()}
        top = match_figure(figure).bones.get(LIMB_BASE.get(eff.get(c.node_names[node], ""), ""), "")
        base = c.node_names.index(top) if top in c.node_names else -1
    W0 = rest_world(figure) if rest is None else rest
    length, i = 0.0, node
    while i != base and i >= 0:
        j = int(c.parent[i])
        length += float(np.linalg.norm(W0[i, :3, 3] - W0[j, :3, 3])) if j >= 0 else 0.0
        i = j
    return (base, length) if i == base else (-1, 0.0)


#: The bone whose joint is the root of each effector's limb.
LIMB_BASE = {"hand_l": "upper_arm_l", "hand_r": "upper_arm_r", "foot_l": "upper_leg_l", "foot_r": "upper_leg_r",
             "head": "neck"}
