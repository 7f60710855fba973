"""Inverse kinematics on chosen sub-chains: Jacobian solvers behind one loop, CCD, analytic two-bone.

    from animkit.ik import solve
    result = solve(figure, pose, "hand_r", (0.3, 1.2, 0.4), chain="arm")

See docs/derivations.md for the equations and when to pick which solver.
"""

from __future__ import annotations

from .analytic import two_bone_angles
from .api import DEFAULT_MAX_ITER, solve, solve_batch
from .jacobian import jacobian, rotation_error
from .problem import ChainModel, compile_chain
from .result import IKBatchResult, IKResult, Reason
from .solvers import DEFAULT_SOLVER, SOLVERS, SolverName, StepPolicy

__all__ = [
    "solve",
    "solve_batch",
    "jacobian",
    "rotation_error",
    "two_bone_angles",
    "IKResult",
    "IKBatchResult",
    "Reason",
    "SolverName",
    "StepPolicy",
    "SOLVERS",
    "DEFAULT_SOLVER",
    "DEFAULT_MAX_ITER",
    "ChainModel",
    "compile_chain",
]
