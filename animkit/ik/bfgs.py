"""BFGS on the task error (quasi-Newton; seed 001): minimise f(θ) = ½‖W V(θ)‖² with an inverse-Hessian estimate.

    d = −H ∇f,   θ⁺ = Π(θ + t d)  (t: Armijo backtracking from 1, f(θ⁺) ≤ f(θ) + c t ∇fᵀ(θ⁺ − θ)/t, c = 1e-4)
    s = θ⁺ − θ,  y = ∇f⁺ − ∇f,   ρ = 1/(yᵀs):   H ← (I − ρ s yᵀ) H (I − ρ y sᵀ) + ρ s sᵀ   (when yᵀs > 0)

Π clamps into the limits (and projects cones); a DOF on a limit that ∇f pushes through is held (its gradient
component and its row of d are zero: d_F = −H_FF ∇f_F, a descent direction on the free DOFs). H starts as
(yᵀs/yᵀy) I after the first step (Nocedal & Wright's scaling) and is reset to that when d is not a descent
direction. It uses only ∇f = −JᵀW²V, never JᵀJ: near a solution it converges superlinearly, yet it spends its first
iterations learning the curvature LM gets from JᵀJ.
See docs/derivations.md ("bfgs").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from animkit.ik.objective import DescentSolver, Objective, free_gradient
from animkit.ik.solvers import LoopOutput

__all__ = ["BFGS", "bfgs_minimise", "line_search"]

Array = NDArray[np.float64]
ARMIJO = 1e-4
BACKTRACK = 30  # halvings before the line search gives up (stalled)


def line_search(o: Objective, q: Array, f: float, g: Array, d: Array, *, expand: int = 0
                ) -> tuple[Array, float, Array, float, float] | None:
    """Armijo backtracking along d from t = 1 on the projected path Π(θ + t d); None when 30 halvings fail.
    ``expand``: when t = 1 is accepted, doubling t up to this many times while f keeps falling (CG's steps are
    not scaled like Newton's)."""
    t = 1.0
    for _ in range(BACKTRACK):
        qn = o.clamp(q + t * d)
        s = qn - q
        fn, gn, pos, ori = o.value(qn)
        if fn <= f + ARMIJO * float(g @ s) and float(np.max(np.abs(s), initial=0.0)) > 0.0:
            best = (qn, fn, gn, pos, ori)
            if t == 1.0:
                for _ in range(expand):
                    t *= 2.0
                    qe = o.clamp(q + t * d)
                    fe, ge, pe, oe = o.value(qe)
                    if fe >= best[1]:
                        break
                    best = (qe, fe, ge, pe, oe)
            return best
        t *= 0.5
    return None


def bfgs_minimise(o: Objective, q0: Array, max_iter: int) -> LoopOutput:
    """BFGS from q0 (n,) until the tolerances are met, the line search fails (stalled), or max_iter."""
    q = o.clamp(q0)
    f, g, pos, ori = o.value(q)
    n = len(q)
    H = np.eye(n)
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
        gf = free_gradient(o, q, g)
        d = -(H @ gf) * (gf == g)  # on the free DOFs only: −H_FF ∇f_F (a pinned DOF's row of H would push it out)
        if float(d @ gf) >= 0.0:  # not a descent direction: back to steepest descent
            H = np.eye(n)
            d = -gf
        step = line_search(o, q, f, gf, d)
        if step is None:
            reason = "stalled"
            break
        qn, fn, gn, pos, ori = step
        s, y = qn - q, gn - g
        sy = float(s @ y)
        if math.isfinite(sy) and sy > max(1e-12 * float(np.linalg.norm(s) * np.linalg.norm(y)), 1e-200):
            if it == 1:
                H = np.eye(n) * (sy / float(y @ y))
            rho = 1.0 / sy
            V = np.eye(n) - rho * np.outer(s, y)
            H = V @ H @ V.T + rho * np.outer(s, s)
        q, f, g = qn, fn, gn
        history.append(math.sqrt(2 * f))
    return LoopOutput(q[None], np.array([it], dtype=np.intp), [reason], np.array([pos]), np.array([ori]),
                      np.array(history)[:, None])


@dataclass(frozen=True, eq=False, kw_only=True)
class BFGS(DescentSolver):
    """Quasi-Newton (BFGS) on f = ½‖W V‖² with Armijo backtracking, limits by projection (see the module)."""

    name: ClassVar[str] = "bfgs"
    max_iter: int = 500
    minimise = staticmethod(bfgs_minimise)
