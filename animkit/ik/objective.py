"""The cost the descent solvers (BFGS, conjugate gradients) minimise, for one problem: f(θ) = ½‖W V(θ)‖² and its
gradient ∇f = −Jᵀ W² V (a chain's reach) or ½‖e‖² and Jᵀe (a problem made of tasks), with the limits as a box."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from animkit.ik.jacobian import chain_jacobian, rotation_error
from animkit.ik.methods import Solver
from animkit.ik.problem import ChainModel
from animkit.ik.solvers import LoopOutput, Options
from animkit.ik.stack import TaskStack

__all__ = ["Objective", "DescentSolver", "chain_objective", "stack_objective", "run_each", "free_gradient"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Objective:
    """f and ∇f of one problem (``value``: θ (n,) → f, ∇f, position error, orientation error), its box
    (``lower``, ``upper``, with ``clamp`` projecting into it and the cones) and its tolerances."""

    value: Callable[[Array], tuple[float, Array, float, float]]
    clamp: Callable[[Array], Array]
    lower: Array
    upper: Array
    tol: float
    orientation_tol: float

    def met(self, pos: float, ori: float) -> bool:
        return pos <= self.tol and ori <= self.orientation_tol


def free_gradient(o: Objective, q: Array, g: Array) -> Array:
    """∇f with the components that push a DOF out through a limit it sits on set to zero (the projected gradient)."""
    pinned = ((q <= o.lower + 1e-12) & (g > 0)) | ((q >= o.upper - 1e-12) & (g < 0))
    return np.where(pinned, 0.0, g)


def chain_objective(model: ChainModel, P: Array, R: Array | None, opts: Options) -> Objective:
    """One chain problem: targets P (E, 3), R (E, 3, 3) or None; rows weighted by opts.row_weights."""
    w = opts.row_weights

    def value(q: Array) -> tuple[float, Array, float, float]:
        fr = model.frames(q[None])
        Vp = P[None] - fr.p
        pos = float(np.sqrt(np.max(np.sum(Vp * Vp, axis=2))))
        ori = 0.0
        V = Vp
        if R is not None:
            Vo = rotation_error(R[None], fr.R)
            ori = float(np.sqrt(np.max(np.sum(Vo * Vo, axis=2))))
            V = np.concatenate([Vp, Vo], axis=2)
        v = V.reshape(-1) * w
        J = chain_jacobian(model, fr, R is not None)[0] * w[:, None]
        return 0.5 * float(v @ v), -(J.T @ v), pos, ori

    def clamp(q: Array) -> Array:
        return np.asarray(model.project_cones(np.clip(q, model.lower, model.upper)[None])[0], dtype=float)

    return Objective(value, clamp, model.lower, model.upper, opts.tol, opts.orientation_tol)


def stack_objective(stack: TaskStack) -> Objective:
    """A problem made of tasks: f = ½‖e‖², ∇f = Jᵀe; position/orientation errors of its goal tasks."""

    def value(q: Array) -> tuple[float, Array, float, float]:
        e, J, c = stack.evaluate(q)
        pos, ori, _ = stack.goal_errors(c)
        return 0.5 * float(e @ e), J.T @ e, pos, ori

    return Objective(value, stack.clamp, stack.model.lower, stack.model.upper, stack.tol, stack.orientation_tol)


def run_each(minimise: Callable[[Objective, Array, int], LoopOutput], model: ChainModel, q0: Array, P: Array,
             R: Array | None, opts: Options) -> LoopOutput:
    """A one-problem minimiser over B problems, one after another (outputs joined, errors held at their last)."""
    outs = [minimise(chain_objective(model, P[b], None if R is None else R[b], opts), q0[b], opts.max_iter)
            for b in range(len(q0))]
    rows = max(len(o.errors) for o in outs)
    errors = np.concatenate([np.concatenate([o.errors, np.repeat(o.errors[-1:], rows - len(o.errors), 0)])
                             for o in outs], axis=1)
    return LoopOutput(np.concatenate([o.q for o in outs]), np.concatenate([o.iterations for o in outs]),
                      [o.reason[0] for o in outs], np.concatenate([o.position_error for o in outs]),
                      np.concatenate([o.orientation_error for o in outs]), errors)


@dataclass(frozen=True, eq=False, kw_only=True)
class DescentSolver(Solver):
    """A solver that minimises a problem's :class:`Objective` with its ``minimise(objective, θ₀, max_iter)``: a
    chain's targets one after another (:func:`run_each`), a problem of tasks on its stack. BFGS and CG are two."""

    @staticmethod
    @abstractmethod
    def minimise(o: Objective, q0: Array, max_iter: int) -> LoopOutput:
        """The minimiser of one problem (each solver's own)."""

    def __post_init__(self) -> None:
        self._check()

    def run(self, model: ChainModel, q0: Array, P: Array, R: Array | None, opts: Options, *,
            first_success: bool = False) -> LoopOutput:
        return run_each(type(self).minimise, model, q0, P, R, opts)

    def solve_stack(self, stack: TaskStack, q0: Array) -> LoopOutput:
        return type(self).minimise(stack_objective(stack), q0, self.max_iter)
