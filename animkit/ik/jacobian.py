"""The geometric Jacobian in world coordinates, and the task error it acts on.

For DOF j with world origin r_j and world axis a_j, and an effector at e:

    revolute:   ∂e/∂θ_j = a_j × (e − r_j),   ∂ω/∂θ_j = a_j
    prismatic:  ∂e/∂θ_j = a_j,               ∂ω/∂θ_j = 0

A DOF not on the path root → effector has a zero column. Several effectors stack their rows
(3 per effector, or 6 with orientation: position rows first, then orientation rows).
The orientation error is a rotation vector, log(R_target · R_currentᵀ)^∨ — never a difference of
Euler angles.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import AnimkitError, IKError
from animkit.ik.problem import ChainModel, Frames, check_effectors, movable_dofs
from animkit.model.figure import Figure
from animkit.model.fk import forward
from animkit.model.transforms import cross3, rotation_error

__all__ = ["jacobian", "chain_jacobian", "rotation_error"]

Array = NDArray[np.float64]


def jacobian(figure: Figure, pose: ArrayLike, effector: str | Sequence[str], *, dofs: str | Sequence[str] | None = None,
             orientation: bool = False) -> Array:
    """J (m, D) for ``pose``: columns for every DOF of the figure, zero outside the set ``dofs``.

    J = [[a_j × (e − r_j)], [a_j]] (revolute), [[a_j], [0]] (prismatic); rows 3 per effector, or 6 with
    ``orientation`` (for each effector, its position rows then its orientation rows).
    ``dofs`` is a movable set (chain names of the figure's rig, joint/node/DOF names); None means every DOF.
    """
    try:
        p = figure.check_pose(pose)
    except AnimkitError as exc:
        raise IKError(str(exc)) from None
    if p.ndim != 1:
        raise IKError(f"jacobian takes one pose (D,), got shape {p.shape}")
    names = check_effectors(figure, effector)
    c = figure.compiled
    M, r, a = forward(c, p[None], with_dof_frames=True)
    assert r is not None and a is not None
    r, a = r[:, :, 0], a[:, :, 0]
    P = M[c.row, :, 3]  # node positions (N, 3, 1) in node_names order
    index = {n: i for i, n in enumerate(c.node_names)}
    selected = np.zeros(c.dof_count, dtype=bool)
    if dofs is None:
        selected[:] = True
    else:
        selected[movable_dofs(figure, dofs, names)] = True
    rows = 6 if orientation else 3
    J = np.zeros((rows * len(names), c.dof_count))
    for j, e in enumerate(names):
        ie = index[e]
        on_path = np.zeros(c.node_count, dtype=bool)
        i = ie
        while i >= 0:
            on_path[i] = True
            i = int(c.parent[i])
        col = selected & on_path[c.dof_node]
        pe = P[ie, :, 0]
        rev = c.dof_revolute
        Jp = np.where(rev[:, None], cross3(a, pe - r), a)
        J[rows * j: rows * j + 3] = (Jp * col[:, None]).T
        if orientation:
            J[rows * j + 3: rows * j + 6] = (a * (col & rev)[:, None]).T
    return J


def chain_jacobian(model: ChainModel, fr: Frames, orientation: bool) -> Array:
    """J (B, m, n) of a compiled chain, m = 3E or 6E in the same row order as :func:`jacobian`."""
    B = fr.r.shape[0]
    n = model.n
    E = len(model.effectors)
    rows = 6 if orientation else 3
    J = np.zeros((B, rows * E, n))
    rev = model.revolute
    for j in range(E):
        m = model.eff_mask[j]
        d = fr.p[:, j, None, :] - fr.r  # (B, n, 3)
        Jp = cross3(fr.a, d)
        if not rev.all():
            Jp[:, ~rev] = fr.a[:, ~rev]
        J[:, rows * j: rows * j + 3] = (Jp * m[None, :, None]).transpose(0, 2, 1)
        if orientation:
            J[:, rows * j + 3: rows * j + 6] = (fr.a * (m & rev)[None, :, None]).transpose(0, 2, 1)
    return J



