"""What a solve returns: the pose, whether and how it got there, and what it cost."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from animkit.display import html_for

__all__ = ["IKResult", "IKBatchResult", "Reason"]

Reason = Literal["converged", "max_iterations", "stalled", "unreachable"]


@dataclass(frozen=True)
class IKResult:
    """One solve.

    ``pose`` is the full pose (D,); only the movable set differs from the start pose.
    ``reachable`` is True when converged, False when the target is shown to be out of reach
    (beyond the chain's reach from its base, or a first-order optimum of the error above tolerance: no small
    motion of the movable set brings the effector closer), None when the solver stopped elsewhere.
    ``tasks`` (a problem made of tasks): each task's measure at the pose by name (:meth:`~animkit.ik.tasks.Task.report`:
    a Gaze's degrees off, a Balance's margin, a Plant's drift, else ‖e‖).
    ``errors`` holds the weighted residual norm ‖W V‖ before the first step and after every iteration (for the
    default ``lm`` loop: of the pose it would return, the start if nothing beat it).
    Errors are in scene units (position) and radians (orientation), unweighted.
    """

    pose: NDArray[np.float64]
    converged: bool
    reachable: bool | None
    iterations: int
    position_error: float
    orientation_error: float
    errors: NDArray[np.float64]
    reason: Reason
    solver: str
    restarts_used: int
    time_s: float
    tasks: Mapping[str, float] | None = None  # a problem made of tasks: each task's report at the pose (Task.report)

    def __repr__(self) -> str:
        """One line: converged or not, errors, iterations, solver, time."""
        state = "converged" if self.converged else "out of reach" if self.reachable is False else "not converged"
        return (f"IKResult({state}, position error {self.position_error:.3g}, orientation error "
                f"{self.orientation_error:.3g}, {self.iterations} iterations, {self.solver}, "
                f"{self.time_s * 1e3:.3g} ms, {len(self.pose)} DOFs)")

    def _repr_html_(self) -> str | None:
        """In Jupyter: the numbers as a table and the error against iteration as a curve."""
        return html_for(self)


@dataclass(frozen=True)
class IKBatchResult:
    """B solves that iterated together: per-problem arrays, the same meanings as :class:`IKResult`.

    ``reachable`` holds, per problem, what :attr:`IKResult.reachable` holds: True, False or None.
    ``errors`` is (iterations + 1, B): each problem's value is held after it finished.
    ``restarts_used`` (B,): the random starts each problem ran (0 unless the batch was given ``restarts``).
    """

    poses: NDArray[np.float64]
    converged: NDArray[np.bool_]
    reachable: tuple[bool | None, ...]
    iterations: NDArray[np.intp]
    position_error: NDArray[np.float64]
    orientation_error: NDArray[np.float64]
    errors: NDArray[np.float64]
    reason: tuple[Reason, ...]
    solver: str
    restarts_used: NDArray[np.intp]
    time_s: float

    def __len__(self) -> int:
        return int(self.poses.shape[0])

    def __repr__(self) -> str:
        return (f"IKBatchResult({len(self)} problems, {int(self.converged.sum())} converged, {self.solver}, "
                f"{self.time_s * 1e3:.3g} ms)")

    def _repr_html_(self) -> str | None:
        """In Jupyter: how many converged, why the others stopped, and the spread of errors and iterations."""
        return html_for(self)

    def result(self, i: int) -> IKResult:
        """Problem ``i`` as an :class:`IKResult` (time is the batch's time divided evenly)."""
        return IKResult(self.poses[i].copy(), bool(self.converged[i]), self.reachable[i],
                        int(self.iterations[i]), float(self.position_error[i]), float(self.orientation_error[i]),
                        self.errors[: int(self.iterations[i]) + 1, i].copy(), self.reason[i], self.solver,
                        int(self.restarts_used[i]),
                        self.time_s / max(len(self), 1))
