"""Solver objects by name (the CLI's and the scene files' ``solver = "..."``): each name's default options."""

from __future__ import annotations

from collections.abc import Callable

from animkit.errors import IKError, unknown_name
from animkit.ik.bfgs import BFGS
from animkit.ik.cg import CG
from animkit.ik.methods import CCD, DLS, FABRIK, LM, NullSpace, Pseudoinverse, Solver, Transpose, TwoBone

__all__ = ["solver_from_name"]


def solver_from_name(name: str) -> Solver:
    """The solver object with default options for a name: lm, pinv, pinv-lu, dls, dls-adaptive, transpose,
    nullspace, ccd, two-bone, fabrik, bfgs, cg."""
    makers: dict[str, Callable[[], Solver]] = {
        "lm": LM, "pinv": Pseudoinverse, "pinv-lu": lambda: Pseudoinverse(method="lu"), "dls": DLS,
        "dls-adaptive": lambda: DLS(adaptive=True), "transpose": Transpose, "nullspace": NullSpace, "ccd": CCD,
        "two-bone": TwoBone, "fabrik": FABRIK, "bfgs": BFGS, "cg": CG}
    make = makers.get(name) if isinstance(name, str) else None
    if make is None:
        raise IKError(unknown_name("solver", str(name), list(makers)))
    return make()
