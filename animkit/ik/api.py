"""The one-line conveniences :func:`solve` and :func:`solve_batch` (each builds an :class:`IKProblem`, the problem
object checked and compiled once: :mod:`animkit.ik.ik_problem`; the strategy around a solver's run:
:mod:`animkit.ik.strategy`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TypedDict, Unpack

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import AnimkitError, IKError, unknown_name
from animkit.ik.ik_problem import IKProblem, _check_figure
from animkit.ik.methods import Solver
from animkit.ik.result import IKBatchResult, IKResult
from animkit.ik.strategy import (  # re-exported; the strategy reads them from animkit.ik.strategy (set them there)
    BATCH_CHUNK,
    FOLD_CURVATURE,
    FOLD_ESCAPES,
    FOLD_STEP,
    RESTART_MAX_ITER,
    RESTART_PULL,
    RESTART_STALL,
    retry_orientation_continuation,
    retry_orientation_first,
    retry_position_first,
)
from animkit.model.figure import Figure

__all__ = ["IKProblem", "solve", "solve_batch", "ProblemOptions", "retry_position_first", "retry_orientation_first",
           "retry_orientation_continuation", "BATCH_CHUNK", "RESTART_MAX_ITER", "RESTART_STALL", "RESTART_PULL",
           "FOLD_ESCAPES", "FOLD_STEP", "FOLD_CURVATURE"]

Array = NDArray[np.float64]


class ProblemOptions(TypedDict, total=False):
    """The problem's weights and tolerances, which :func:`solve` and :func:`solve_batch` take as keywords
    (``**options``) and hand to :class:`IKProblem` as they are (its keywords of the same names and defaults)."""

    weights: ArrayLike | None
    orientation_weight: float
    tol: float
    orientation_tol: float


def _check_options(function: str, options: Mapping[str, object], keywords: Sequence[str]) -> None:
    """Raise :class:`~animkit.IKError` on the first of ``options`` that is not a :class:`ProblemOptions` key (the
    message lists every keyword ``function`` takes: its own ``keywords`` and the options)."""
    for key in options:
        if key not in ProblemOptions.__annotations__:
            raise IKError(f"{function}: " + unknown_name("keyword", key, [*keywords, *ProblemOptions.__annotations__]))


def solve(figure: Figure, pose: ArrayLike, effector: str | Sequence[str], target: ArrayLike, *,
          chain: str | Iterable[str] | None = None, solver: Solver | str | None = None, restarts: int = 0,
          time_budget: float | None = None, seed: int = 0, **options: Unpack[ProblemOptions]) -> IKResult:
    """Move the DOFs of ``chain`` so that ``effector`` reaches ``target``; everything else stays as in ``pose``.

    One line for ``IKProblem(...).solve(target)``: build an :class:`IKProblem` to solve many targets on one
    figure (it is checked and compiled once). ``target`` is a 3-vector (position) or a 4×4 matrix (position and
    orientation); several effectors take a sequence of targets (with ``weights``). ``effector`` names a
    node or an effector of the figure's rig; ``chain`` a chain of its rig, or joint/node/DOF names; None means
    every DOF from the root to the effector(s). ``solver`` is a solver object (:mod:`animkit.ik.methods`:
    ``LM(relax=False)``, ``Pseudoinverse(alpha=0.5)``, ...) or a name (``SOLVERS``) with its default options;
    None is ``LM()``.
    ``restarts`` > 0 retries from random in-limit starts when the first run does not converge, until one
    converges, ``restarts`` starts have run, or ``time_budget`` seconds (counted from the call, the first run
    included) have passed. The first run is never cut by the budget; with restarts on, each run stops after at most
    ``RESTART_MAX_ITER`` iterations (or the solver's ``max_iter`` if smaller), and on a serial chain with one
    effector (lm) at a stall (``RESTART_STALL``).
    ``**options`` are :class:`IKProblem`'s weights and tolerances (:class:`ProblemOptions`: ``weights``,
    ``orientation_weight``, ``tol``, ``orientation_tol``), handed to it as they are; another keyword raises
    :class:`~animkit.IKError` naming the ones this function takes.
    Bad input raises :class:`~animkit.IKError`; a target out of reach is a result with ``reachable=False``.
    """
    _check_options("solve", options, ("chain", "solver", "restarts", "time_budget", "seed"))
    orient = _is_pose_target(target, effector)
    problem = IKProblem(figure, effector, chain, pose=_frozen_pose(figure, pose), orientation=orient,
                        solver=solver, **options)
    return problem.solve(target, pose, restarts=restarts, time_budget=time_budget, seed=seed)


def solve_batch(figure: Figure, pose: ArrayLike, effector: str | Sequence[str], targets: ArrayLike, *,
                chain: str | Iterable[str] | None = None, solver: Solver | str | None = None, restarts: int = 0,
                seed: int = 0, quiet: bool = False, **options: Unpack[ProblemOptions]) -> IKBatchResult:
    """Solve B problems at once: one start pose (D,) or one per target (B, D); targets (B, 3) or (B, 4, 4).

    One line for ``IKProblem(...).solve_batch(targets, pose, restarts=, seed=)``; options mean what they mean in
    :func:`solve` (``restarts``: :meth:`IKProblem.solve_batch`'s random restarts).
    """
    _check_options("solve_batch", options, ("chain", "solver", "restarts", "seed", "quiet"))
    shape = np.shape(targets)
    orient = len(shape) >= 2 and shape[-2:] == (4, 4)
    problem = IKProblem(figure, effector, chain, pose=_frozen_pose(figure, pose), orientation=orient,
                        solver=solver, **options)
    return problem.solve_batch(targets, pose, restarts=restarts, seed=seed, quiet=quiet)


def _is_pose_target(target: ArrayLike, effector: str | Sequence[str]) -> bool:
    if isinstance(effector, str):
        return np.shape(target) == (4, 4)
    try:
        first = target[0]  # type: ignore[index]
    except (TypeError, IndexError, KeyError):
        return False
    return np.shape(first) == (4, 4)


def _frozen_pose(figure: Figure, pose: ArrayLike) -> Array:
    """The first start pose: the values the problem freezes outside its movable set."""
    fig = _check_figure(figure)
    try:
        p = fig.check_pose(pose)
    except AnimkitError as exc:
        raise IKError(str(exc)) from None
    return np.asarray(p if p.ndim == 1 else p[0], dtype=float)
