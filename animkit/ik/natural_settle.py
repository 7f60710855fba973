"""What a natural solve that settles (``Natural(settle=True)``: on after its goals are met until no DOF moves 1e-3 in
a step) adds to a bake frame's rules, so that it reaches that fixed point: the null-space terms' gain adapts,

    g ← g · NULL_SHRINK where Δθ_k · Δθ_{k−1} < 0 (scaled coordinates: the step reversed), else min(g · NULL_GROW,
    NULL_GAIN_MAX);   the null-space step ½ g P W^−½∇H, bounded by min(g, 1) · NULL_STEP

(the "bold driver", Battiti 1989, Neural Computation 1:141), and the DOFs the comfort pose leaves out (each free
arm's, :class:`~animkit.ik.natural.Priors`) are held by a weak share of it as well (:func:`settling`): gravity
(:class:`~animkit.ik.hang.Hang`) leaves a hanging arm's twist flat, so the posture terms' minimum was no point but a
valley the arm crept along. A bake's frames and ``settle=False`` take neither.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from animkit.ik.natural_gaze import eyes_from
from animkit.ik.tasks import Posture

if TYPE_CHECKING:
    from animkit.ik.stack import TaskStack

__all__ = ["NULL_GROW", "NULL_SHRINK", "NULL_GAIN_MAX", "ARM_SETTLE", "settling", "fixed_point", "adapted"]

Array = NDArray[np.float64]

NULL_GROW, NULL_SHRINK, NULL_GAIN_MAX = 1.2, 0.5, 8.0  # a reversal is an overshoot of H's valley (a CMU skeleton's
# free arm, its gravity 15x stiffer in centimetre-ish units, 2-cycled ±NULL_STEP); a step that keeps its way walks a
# flat valley (the humanoid's torso without ranges crept 1e-3–7e-3 rad an iteration and settled at iteration 705)
ARM_SETTLE = 0.3  # the free arms' comfort weight, a share of ``Priors.comfort``: with it a free arm under a trunk
# bent β rests about β/11 off gravity's pose (Hang's pull ≈ 0.3 m · φ against the comfort's 0.03 (β − φ)); without,
# the whole body's free upper arm turned 82° about itself over 300 iterations


def settling(stack: TaskStack) -> TaskStack:
    """The stack with a comfort pose on the movable DOFs no comfort pose holds (the free arms'), at ARM_SETTLE of the
    first comfort pose's weight (the stack as it is where there is none, its weight is 0, or every DOF is held)."""
    poses = [t for t in stack.tasks if isinstance(t, Posture) and t.dofs is not None]
    held = {int(d) for t in poses for d in (t.dofs or ())}
    rest = tuple(int(d) for d in stack.dofs if int(d) not in held)
    if not poses or not rest or poses[0].weight <= 0:
        return stack
    return replace(stack, tasks=(*stack.tasks, Posture(pose=poses[0].pose, dofs=rest,
                                                       weight=poses[0].weight * ARM_SETTLE)))


def fixed_point(stack: TaskStack, c: Any, gain: float, step: Callable[..., Array]) -> tuple[bool, TaskStack]:
    """Whether a settling solve that met its goals, its step at ``gain`` under 1e-3, is at a fixed point: a plain
    step (``step(stack, gain=max(g, 1))``) with the eyes' share reckoned at ``c`` moves no DOF 1e-3 either (a step
    shrunk by g < 1, or an aim held from where the head was, is no proof); and the stack to go on with."""
    fresh = eyes_from(stack, c)
    if fresh is stack and gain >= 1.0:
        return True, stack
    return float(np.abs(step(fresh, gain=max(gain, 1.0))).max(initial=0.0)) < 1e-3, fresh


def adapted(gain: float, now: Array, last: Array | None) -> tuple[float, bool]:
    """The gain after a step ``now`` that followed ``last`` (both in scaled coordinates), and whether it reversed
    (the step is then taken again at the halved gain)."""
    if last is not None and float(now @ last) < 0.0:
        return gain * NULL_SHRINK, True
    return min(gain * NULL_GROW, NULL_GAIN_MAX), False
