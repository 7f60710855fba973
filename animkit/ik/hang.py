"""Gravity on a free limb as an IK task: the limb that is not reaching hangs.

With c the centre of mass of the segments at and below the limb's top node, p its top joint and u the up axis, the
limb's potential height h = u · (c − p) is lowest when it hangs straight down. As a task,

    e = [√(2 (h + L))],   ∂e/∂θ = uᵀ ∂c/∂θ / e      (only the limb's own DOFs: gravity hangs the arm, it does not
                                                    bend the trunk that carries it)

with L = Σ m_i ℓ_i / M (ℓ_i: the path length from p to segment i's centroid, through the bones, in the world) ≥ −h, so
that ½e² = h + L ≥ 0 and a null-space pull w Jᵀe = w uᵀ ∂c/∂θ is exactly gravity's gradient (the prioritised solver's
``hang``). With ``unit`` k (metres per scene unit) the potential is in metres, e = √(2k (h + L)), w Jᵀe = w k uᵀ ∂c/∂θ:
the same pull on a figure in its file's units (a CMU BVH's, k = 1/15.3) as on it in metres (the limb's own DOFs are
turns, so their steps are the same numbers in both), where in scene units it was 15× stiffer. A new task is one
class like this one: its error and Jacobian (:meth:`Hang.compute`) and nothing else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import IKError
from animkit.ik.body import Body, centres, com_jacobian
from animkit.ik.tasks import Configuration, Task
from animkit.model.transforms import vector_norm

__all__ = ["Hang"]

Array = NDArray[np.float64]


def _below(parent: NDArray[np.intp], top: int) -> NDArray[np.bool_]:
    """Nodes at or below ``top`` (parents come before children in the compiled order)."""
    out = np.zeros(len(parent), dtype=bool)
    out[top] = True
    for i in range(top + 1, len(parent)):
        if parent[i] >= 0 and out[parent[i]]:
            out[i] = True
    return out


@dataclass(frozen=True, eq=False, kw_only=True)
class Hang(Task):
    """A free limb hangs under gravity: e = [√(2k (u · (c − p) + L))] over the segments at and below ``top`` (the
    module docstring); ``up``: the world up axis; ``unit``: k, metres per scene unit (the potential in metres)."""

    kind: ClassVar[str] = "hang"
    top: str
    up: ArrayLike = (0.0, 1.0, 0.0)
    unit: float = 1.0
    priority: int = 3

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.unit, (int, float)) or not math.isfinite(self.unit) or self.unit <= 0:
            raise IKError(f"Hang: unit must be a finite number > 0 (metres per scene unit), got {self.unit!r}")

    @property
    def name(self) -> str:
        return f"hang {self.top}"

    def compute(self, c: Configuration) -> tuple[Array, Array]:
        cf = c.figure.compiled
        plan = self._plan(c)
        if plan is None:
            return np.zeros(1), np.zeros((1, cf.dof_count))
        top, limb, u, bones, own = plan
        com, Jc = com_jacobian(c.figure, limb, c.state)
        h = float(u @ (com - c.state.p[top]))
        P = c.state.p
        reach = np.zeros(cf.node_count)  # path length from the top joint to each node's origin, through the bones
        for i, parent in bones:  # (in the world: a scaled parent, CesiumMan's, shrinks the local offsets, and
            reach[i] = reach[parent] + vector_norm(P[i] - P[parent])  # L < −h left e = 0 and no pull at all)
        ell = reach[limb.node] + np.linalg.norm(centres(limb, c.state) - P[limb.node], axis=1)
        k = self.unit
        e = math.sqrt(max(2.0 * k * (h + float(limb.mass @ ell) / limb.total), 0.0))
        J = np.where(own, k * (u @ Jc), 0.0) / max(e, 1e-12)
        return np.array([e]), J[None]

    def _plan(self, c: Configuration) -> tuple[int, Body, Array, list[tuple[int, int]], NDArray[np.bool_]] | None:
        """What :meth:`compute` reads of the figure, found once per compiled figure and body: the top node, the limb's
        segments as a :class:`Body`, the unit up, the bones (node, parent) below the top in order and the limb's own
        DOFs; None where no segment hangs below the top."""
        got = self.__dict__.get("_memo")
        if got is not None and got[0] is c.figure.compiled and got[1] is c.body:
            return got[2]
        cf = c.figure.compiled
        top = c.node(self.top)
        below = _below(cf.parent, top)
        seg = below[c.body.node]
        plan = None
        if seg.any():
            b = c.body
            u = np.asarray(self.up, dtype=float)
            bones = [(int(i), int(cf.parent[i])) for i in np.flatnonzero(below) if i != top]
            plan = (top, Body(b.node[seg], b.mass[seg], b.centroid[seg], b.moves), u / vector_norm(u), bones,
                    below[cf.dof_node])
        object.__setattr__(self, "_memo", (cf, c.body, plan))
        return plan

    def __getstate__(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k != "_memo"}  # the memo is found again where it is used
