"""The natural reach's gaze: the head's :class:`~animkit.ik.tasks.Gaze` task built for a figure (:func:`gaze_task`:
forward = up × right at the start, turned by the neck's turning DOFs only) and the eyes' share of a steep gaze
reckoned once per solve (:func:`eyes_from`), again where a solve that met its goals left the neck far from the aim
it started with (:func:`eyes_moved`); :data:`EYE_RANGE` is a person's (docs/derivations.md, "The eyes' share")."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from animkit.ik.body import body_from_figure
from animkit.ik.tasks import Gaze
from animkit.model.figure import Figure

if TYPE_CHECKING:
    from animkit.ik.stack import TaskStack

__all__ = ["EYE_RANGE", "EYE_ROUNDS", "EYE_TOL", "eyes_from", "eyes_moved", "gaze_task"]

Array = NDArray[np.float64]

# The eyes' share of a gaze's pitch (animkit.ik.head_aim): in eye-head gaze shifts the eyes carry up to ~30° of a
# shift and the head the remainder (Guitton & Volle 1987, J Neurophysiol 58:427; Freedman 2008, Exp Brain Res
# 190:369): a target 63° below the eyes is seen with the head pitched ~35° and the eyes ~28°, not the head alone.
EYE_RANGE = math.radians(30.0)


def eyes_from(stack: TaskStack, c: Any) -> TaskStack:
    """The stack with each Gaze that leaves part of its pitch to the eyes reckoning that share from the head at ``c``
    (a solve's start): its aim point is then fixed within the solve (reckoned from the moving head, the whole body's
    solve took 200 iterations instead of 85), and a bake's frames, each solved from the last, follow the head."""
    if not any(isinstance(t, Gaze) and t.eye_range is not None for t in stack.tasks):
        return stack
    return replace(stack, tasks=tuple(replace(t, eye_frame=None).resolved(c)
                                      if isinstance(t, Gaze) and t.eye_range is not None else t for t in stack.tasks))


EYE_ROUNDS, EYE_TOL = 1, math.radians(2.0)  # a solve that met its goals reckons the eyes' share again from where
# the neck ended (once: the whole body's direct solve from standing ended with its head 19° off the aim reckoned there)


def eyes_moved(stack: TaskStack, c: Any, rounds: int) -> bool:
    """Whether, with fewer than EYE_ROUNDS rounds done, a Gaze's held aim point is seen from the head at ``c`` more
    than EYE_TOL off the one reckoned again at ``c``."""
    if rounds >= EYE_ROUNDS:
        return False
    for t in stack.tasks:
        if isinstance(t, Gaze) and t.eye_frame is not None and t.target is not None:
            p = c.state.p[c.node(t.head)]
            a, b = t.aim(c) - p, t.aim_here(c) - p
            if math.atan2(float(np.linalg.norm(np.cross(a, b))), float(a @ b)) > EYE_TOL:
                return True
    return False


def gaze_task(figure: Figure, bones: Any, s0: Any, up: Array, moves: tuple[NDArray[np.bool_], NDArray[np.bool_]],
               eyes: float) -> Gaze | None:
    """The head's Gaze task (forward = up × right at the start, the ear-to-ear axis = right, up to ``eyes`` of the
    gaze shift from that forward (its ``start``) to the target left to the eyes; ``moves``: the DOFs that move the
    effector, the movable set), moved by the DOFs that move the head and not the effector (without such a DOF:
    weight 0, measured by its report, not enforced); None without a head or a left-right axis."""
    c = figure.compiled
    eff_moves, mov = moves
    index = {n: i for i, n in enumerate(c.node_names)}
    head = figure.rig.effectors.get("head") or bones.get("head")
    if head is None:
        return None
    h = index[head]
    moves_head = body_from_figure(figure).moves[h]
    neck = np.flatnonzero(moves_head & ~eff_moves & mov & c.dof_revolute)  # turned, not slid
    for a, b in (("upper_arm_l", "upper_arm_r"), ("upper_leg_l", "upper_leg_r")):
        na, nb = bones.get(a), bones.get(b)
        if na is None or nb is None:
            continue
        v = s0.p[index[nb]] - s0.p[index[na]]
        v = v - up * (v @ up)
        if np.linalg.norm(v) > 1e-9:
            right = v / np.linalg.norm(v)
            ahead = np.cross(up, right)
            fwd = s0.R[h].T @ (ahead / np.linalg.norm(ahead))
            return Gaze(head=head, forward=tuple(fwd), ear=tuple(s0.R[h].T @ right), up=tuple(up),
                        dofs=tuple(int(d) for d in neck), weight=1.0 if len(neck) else 0.0,
                        eye_range=eyes if eyes > 0 else None, start=tuple(ahead / np.linalg.norm(ahead)))
    return None
