"""Nonlinear conjugate gradients (Polak–Ribière+; seed 001) on f(θ) = ½‖W V(θ)‖².

    d₀ = −∇f₀,   d_k = −∇f_k + β_k d_{k−1},   β_k = max(0, ∇f_kᵀ(∇f_k − ∇f_{k−1}) / ‖∇f_{k−1}‖²)

with θ⁺ = Π(θ + t d) by the same Armijo backtracking as BFGS (:func:`animkit.ik.bfgs.line_search`; an accepted
t = 1 doubled while f keeps falling, up to 2⁶: CG's directions carry no scale), a restart
d = −∇f every n iterations or when d is not a descent direction. Memory O(n), no matrix at all; on IK's narrow
valleys (a stretched arm, orientation rows against position rows) it zig-zags like steepest descent with momentum.
See docs/derivations.md ("cg").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from animkit.ik.bfgs import line_search
from animkit.ik.objective import DescentSolver, Objective, free_gradient
from animkit.ik.solvers import LoopOutput

__all__ = ["CG", "cg_minimise"]

Array = NDArray[np.float64]
EXPAND = 6  # doublings of an accepted full step while f keeps falling (the line search's expansion)


def cg_minimise(o: Objective, q0: Array, max_iter: int) -> LoopOutput:
    """Polak–Ribière+ conjugate gradients from q0 (n,) until the tolerances, a failed line search, or max_iter."""
    q = o.clamp(q0)
    f, g, pos, ori = o.value(q)
    n = len(q)
    gf = free_gradient(o, q, g)
    d = -gf
    history = [math.sqrt(2 * f)]
    reason = "max_iterations"
    it = 0
    while True:
        if o.met(pos, ori):
            reason = "converged"
            break
        if it == max_iter:
            break
        it += 1
        if float(d @ gf) >= 0.0 or (it - 1) % max(n, 1) == 0:
            d = -gf
        step = line_search(o, q, f, gf, d, expand=EXPAND)
        if step is None:
            reason = "stalled"
            break
        q, f, g, pos, ori = step
        gn = free_gradient(o, q, g)
        beta = max(0.0, float(gn @ (gn - gf)) / max(float(gf @ gf), 1e-300))
        d = -gn + beta * d
        gf = gn
        history.append(math.sqrt(2 * f))
    return LoopOutput(q[None], np.array([it], dtype=np.intp), [reason], np.array([pos]), np.array([ori]),
                      np.array(history)[:, None])


@dataclass(frozen=True, eq=False, kw_only=True)
class CG(DescentSolver):
    """Nonlinear conjugate gradients (Polak–Ribière+) on f = ½‖W V‖² (see the module)."""

    name: ClassVar[str] = "cg"
    max_iter: int = 2000
    minimise = staticmethod(cg_minimise)
