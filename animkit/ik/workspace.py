"""Workspaces of a movable set (seed 003): where an effector can get (reachable) and where it can get in any
orientation (dexterous), sampled within the limits.

A box B around the effector's cloud (FK of poses drawn uniformly inside the limits, ±π where a revolute DOF has
none; the box grown by 5 % of its size each way) holds the workspace. N points x_i uniform in B are tested by IK
(batched LM with random restarts from in-limit starts): x_i is reachable when a solve converges. The volume is the
Monte Carlo estimate V = |B| k/N with its binomial standard error |B| √(p(1 − p)/N), p = k/N. A reachable point
is dexterous when every one of M orientations (uniform random rotations) is reached there by a 6D solve; with M
orientations the test is necessary, not sufficient (a point reached in all M may miss a few orientations between
them), so the dexterous volume is an upper estimate that tightens as M grows. A missed solve (a local minimum the
restarts did not leave) counts as unreachable. Volumes in litres (scene units taken as metres).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from animkit.errors import IKError
from animkit.ik.api import IKProblem
from animkit.ik.problem import check_effectors, compile_chain, movable_dofs
from animkit.model.figure import Figure

__all__ = ["Workspace", "workspace"]

Array = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class Workspace:
    """One movable set's workspaces: the test points, the volumes in litres (scene units taken as metres) with their
    standard errors, and the points found reachable and dexterous (point clouds for drawing)."""

    chain: str | None
    effector: str
    points: Array  # (N, 3) the test points, uniform in the box
    reachable_l: float
    reachable_err_l: float
    dexterous_l: float
    dexterous_err_l: float
    box: float  # the box's volume |B| (scene units³)
    reachable: Array  # (k, 3) the test points reached
    dexterous: Array  # (k', 3) the test points reached in every tested orientation

    def __repr__(self) -> str:
        return (f"Workspace({self.chain!r}, {self.effector!r}: reachable {self.reachable_l:.4g} ± "
                f"{self.reachable_err_l:.2g} L, dexterous {self.dexterous_l:.4g} ± {self.dexterous_err_l:.2g} L, "
                f"{len(self.points)} test points)")


def _random_rotations(rng: np.random.Generator, count: int) -> Array:
    """``count`` rotations uniform on SO(3): normalised Gaussian quaternions (Shoemake), as matrices (count, 3, 3)."""
    q = rng.normal(size=(count, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], 1)


def workspace(figure: Figure, chain: str | Iterable[str] | None, effector: str, *, points: int = 2000,
              orientations: int = 12, restarts: int = 4, cloud: int = 20_000, seed: int = 0) -> Workspace:
    """The reachable and dexterous workspaces of ``effector`` moved by ``chain`` (see the module docstring).

    ``points`` test points N in the box, ``orientations`` M per reachable point for the dexterous test (0: skip
    it), ``restarts`` random restarts per solve, ``cloud`` FK samples that size the box; seeded. DOFs outside the
    movable set stay at the rest pose."""
    if not isinstance(points, int) or points < 100:
        raise IKError(f"workspace: points must be an integer >= 100, got {points!r}")
    (node,) = check_effectors(figure, effector)
    rest = figure.rest_pose()
    movable = movable_dofs(figure, chain, (node,))
    model = compile_chain(figure, rest, movable, (node,))
    lo = np.where(np.isfinite(model.lower), model.lower, np.where(model.revolute, -math.pi, -1.0))
    hi = np.where(np.isfinite(model.upper), model.upper, np.where(model.revolute, math.pi, 1.0))
    rng = np.random.default_rng(seed)
    fk = model.frames(model.project_cones(rng.uniform(lo, hi, size=(cloud, model.n)))).p[:, 0]
    a, b = fk.min(axis=0), fk.max(axis=0)
    pad = 0.05 * (b - a) + 1e-6
    a, b = a - pad, b + pad
    box = float(np.prod(b - a))
    x = rng.uniform(a, b, size=(points, 3))
    dofs = [figure.dof_names[int(d)] for d in movable]
    problem = IKProblem(figure, node, dofs, pose=rest)
    got = problem.solve_batch(x, restarts=restarts, seed=seed, quiet=True)
    reach = np.asarray(got.converged, dtype=bool)
    dex = np.zeros(points, dtype=bool)
    if orientations and reach.any():
        idx = np.flatnonzero(reach)
        T = np.repeat(np.eye(4)[None], len(idx) * orientations, 0)
        T[:, :3, :3] = _random_rotations(rng, len(T))
        T[:, :3, 3] = np.repeat(x[idx], orientations, 0)
        six = IKProblem(figure, node, dofs, pose=rest, orientation=True)
        ok = np.asarray(six.solve_batch(T, restarts=restarts, seed=seed, quiet=True).converged, dtype=bool)
        dex[idx] = ok.reshape(len(idx), orientations).all(axis=1)
    litres = 1000.0

    def volume(hit: NDArray[np.bool_]) -> tuple[float, float]:
        p = float(hit.mean())
        return box * p * litres, box * math.sqrt(p * (1.0 - p) / points) * litres

    vr, er = volume(reach)
    vd, ed = volume(dex)
    label = chain if isinstance(chain, str) or chain is None else ",".join(chain)
    return Workspace(label, node, x, vr, er, vd, ed, box, x[reach], x[dex])
