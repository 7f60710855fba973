"""A problem made of tasks (:mod:`animkit.ik.tasks`) over a movable set: the stacked, weighted error and Jacobian,
and the weighted Levenberg–Marquardt loop that minimises it.

    f(θ) = ½ Σ_k w_k ‖e_k(θ)‖² = ½ ‖e(θ)‖²   (e: every task's rows scaled by √w_k),   ∇f = Jᵀe

    (JᵀJ + λI) Δθ = −Jᵀe,   θ ← clamp(θ + Δθ) into the limits (cones projected); λ ÷ 10 on a decrease, × 10 else

Goal tasks (Reach, Plant, Balance) decide convergence: every one of them within tolerance; the others (Gaze,
Posture, Spread, Cost) shape the answer and settle while the goals hold. A run stops when the goals are met and
f stops falling (relative change below 1e-9), when λ grows past 10¹⁰ (no step lowers f: stalled) or at max_iter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from ..figure import Figure
from .problem import ChainModel
from .solvers import LoopOutput
from .tasks import Balance, Body, Configuration, Plant, Reach, Task, configuration

__all__ = ["TaskStack", "lm_stack", "GOAL_TASKS"]

Array = NDArray[np.float64]
GOAL_TASKS = (Reach, Plant, Balance)  # tasks whose tolerance decides convergence


@dataclass(frozen=True, eq=False)
class TaskStack:
    """Tasks over the movable set ``dofs`` (pose indices) of ``figure``; DOFs outside it keep ``pose``'s values."""

    figure: Figure
    body: Body
    model: ChainModel  # the movable set compiled (its DOFs, limits and cones)
    pose: Array
    tasks: tuple[Task, ...]
    tol: float
    orientation_tol: float

    @property
    def dofs(self) -> NDArray[np.intp]:
        return self.model.dofs

    def full(self, q: Array) -> Array:
        p = self.pose.copy()
        p[self.dofs] = q
        return p

    def config(self, q: Array) -> Configuration:
        return configuration(self.figure, self.full(q), self.body)

    def evaluate(self, q: Array) -> tuple[Array, Array, Configuration]:
        """e (m,) and J = ∂e/∂θ (m, n) over the movable set, each task's rows scaled by √w; the configuration."""
        c = self.config(q)
        es, Js = [], []
        for t in self.tasks:
            e, J = t.compute(c)
            s = t.row_scale(len(e))
            es.append(e * s)
            Js.append(J[:, self.dofs] * s[:, None])
        return np.concatenate(es), np.vstack(Js), c

    def goal_errors(self, c: Configuration) -> tuple[float, float, bool]:
        """The worst position and orientation error over the goal tasks, and whether every goal is met."""
        pos = ori = 0.0
        for t in self.tasks:
            if not isinstance(t, GOAL_TASKS):
                continue
            e = t.error(c)
            if isinstance(t, Balance):
                pos = max(pos, float(e[0]))
                continue
            pos = max(pos, float(np.linalg.norm(e[:3])))
            if len(e) > 3:
                ori = max(ori, float(np.linalg.norm(e[3:])))
        return pos, ori, pos <= self.tol and ori <= self.orientation_tol

    def clamp(self, q: Array) -> Array:
        m = self.model
        return np.asarray(m.project_cones(np.clip(q, m.lower, m.upper)[None])[0], dtype=float)


SOFT_POLISH = 1e-6  # the second stage's factor on the weights of the tasks that are not goals


def lm_stack(stack: TaskStack, q0: Array, max_iter: int, damping: float = 1e-2) -> LoopOutput:
    """Minimise ½‖e‖² over the movable set from q0 (n,) by Levenberg–Marquardt (the module docstring); where the
    weighted optimum leaves a goal outside its tolerance (the other tasks pull against it), a second run from that
    answer with their weights × SOFT_POLISH meets the goals while staying near it."""
    out = _lm_stack(stack, q0, max_iter, damping)
    soft = [not isinstance(t, GOAL_TASKS) for t in stack.tasks]
    if out.reason[0] == "converged" or not any(soft):
        return out
    light = tuple(t.with_weight(t.weight * SOFT_POLISH) if s else t for t, s in zip(stack.tasks, soft, strict=True))
    second = _lm_stack(replace(stack, tasks=light), out.q[0], max_iter, damping)
    it = out.iterations + second.iterations
    return LoopOutput(second.q, it, second.reason, second.position_error, second.orientation_error,
                      np.concatenate([out.errors, second.errors[1:]]))


def _lm_stack(stack: TaskStack, q0: Array, max_iter: int, damping: float) -> LoopOutput:
    q = stack.clamp(q0)
    e, J, c = stack.evaluate(q)
    f = 0.5 * float(e @ e)
    history = [math.sqrt(2 * f)]
    lam = damping
    n = len(q)
    reason = "max_iterations"
    it = 0
    lo, hi = stack.model.lower, stack.model.upper
    while it < max_iter:
        it += 1
        g = J.T @ e
        A = J.T @ J + lam * np.eye(n)
        d = -np.linalg.solve(A, g)
        blocked = ((q + d <= lo) & (d < 0)) | ((q + d >= hi) & (d > 0))
        if blocked.any():  # clamp, then solve again without the DOFs pressed on a limit
            free = ~blocked
            d = np.zeros(n)
            Af = A[np.ix_(free, free)]
            d[free] = -np.linalg.solve(Af, g[free])
        qn = stack.clamp(q + d)
        en, Jn, cn = stack.evaluate(qn)
        fn = 0.5 * float(en @ en)
        if fn < f:
            drop = f - fn
            q, e, J, c, f = qn, en, Jn, cn, fn
            lam = max(lam * 0.1, 1e-12)
            met = stack.goal_errors(c)[2]
            history.append(math.sqrt(2 * f))
            if met and drop <= 1e-9 * max(f, 1e-300) + 1e-30:
                reason = "converged"
                break
        else:
            lam *= 10.0
            history.append(math.sqrt(2 * f))
            if lam > 1e10:
                reason = "converged" if stack.goal_errors(c)[2] else "stalled"
                break
    pos, ori, met = stack.goal_errors(c)
    if reason == "max_iterations" and met:
        reason = "converged"
    return LoopOutput(q[None], np.array([it], dtype=np.intp), [reason], np.array([pos]), np.array([ori]),
                      np.array(history)[:, None])


def stack_tasks(tasks: Sequence[Task], c: Configuration) -> tuple[Task, ...]:
    """The tasks with what they leave open taken from the start configuration (:meth:`Task.resolved`)."""
    return tuple(t.resolved(c) for t in tasks)
