"""Inverse kinematics on chosen sub-chains: Jacobian solvers behind one loop, CCD, analytic two-bone.

    from animkit.ik import IKProblem, LM, solve
    result = solve(figure, pose, "hand_r", (0.3, 1.2, 0.4), chain="arm")
    problem = IKProblem(figure, "hand_r", "arm", solver=LM())   # checked, compiled once
    results = [problem.solve(t) for t in targets]

See docs/derivations.md for the equations and when to pick which solver.
"""

from __future__ import annotations

from animkit.ik.analytic import two_bone_angles
from animkit.ik.api import IKProblem, solve, solve_batch
from animkit.ik.bfgs import BFGS
from animkit.ik.cg import CG
from animkit.ik.effectors import pose_from_effectors
from animkit.ik.jacobian import jacobian, rotation_error
from animkit.ik.methods import CCD, DLS, FABRIK, LM, NullSpace, Pseudoinverse, Solver, SteppedSolver, Transpose, TwoBone
from animkit.ik.prior import PosePrior, Prior
from animkit.ik.problem import ChainModel, compile_chain
from animkit.ik.registry import solver_from_name
from animkit.ik.result import IKBatchResult, IKResult, Reason
from animkit.ik.solvers import DEFAULT_SOLVER, SOLVERS, SolverName
from animkit.ik.spread import Spread
from animkit.ik.tasks import Balance, Cost, Gaze, Plant, Posture, Reach, Task
from animkit.ik.workspace import Workspace, workspace

__all__ = [
    "IKProblem",
    "solve",
    "solve_batch",
    "Solver",
    "SteppedSolver",
    "LM",
    "Pseudoinverse",
    "DLS",
    "Transpose",
    "NullSpace",
    "CCD",
    "TwoBone",
    "FABRIK",
    "BFGS",
    "CG",
    "Task",
    "Reach",
    "Gaze",
    "Plant",
    "Balance",
    "Posture",
    "Spread",
    "Cost",
    "workspace",
    "Workspace",
    "solver_from_name",
    "jacobian",
    "rotation_error",
    "two_bone_angles",
    "IKResult",
    "IKBatchResult",
    "Reason",
    "SolverName",
    "SOLVERS",
    "DEFAULT_SOLVER",
    "ChainModel",
    "compile_chain",
    "PosePrior",
    "Prior",
    "pose_from_effectors",
]
