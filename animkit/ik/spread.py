"""The spine's bend shared over its joints, measured from their rest (so the same on every rig, whatever its rest
turns and Euler orders): a task in one file, as :mod:`animkit.ik.hang` is,

    e_j = r_j − mean(r),   r_j = R_n log(A_restᵀ A(θ))^∨   (:func:`relative_turn`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from animkit.ik.tasks import Configuration, Task, left_jacobian_inverse
from animkit.model.transforms import cross3, rotation_vector_from_matrix

__all__ = ["Spread", "relative_turn"]

Array = NDArray[np.float64]


def relative_turn(c: Configuration, node: int, spans: dict[str, list[int]] | None = None) -> tuple[Array, Array]:
    """r = R_n log(A_restᵀ A(θ))^∨ (3,): the turn of ``node``'s joint from its rest, as a world rotation vector (R_n
    the node's world rotation; the same as log(R_p A R_restᵀ R_pᵀ), R_p its joint's frame), and ∂r/∂θ (3, D):
    J_l⁻¹(r) a_k for the joint's own revolute DOFs, a_m × r for the revolute DOFs that turn its parent (``spans``:
    the figure's ``joint_dofs``, where a caller asks for several nodes)."""
    fig, comp = c.figure, c.figure.compiled
    arc = fig.node(comp.node_names[node]).parent_arc
    D = comp.dof_count
    J = np.zeros((3, D))
    if arc is None or not arc.joint.dof_count:
        return np.zeros(3), J
    joint = arc.joint
    own = np.asarray((fig.joint_dofs if spans is None else spans)[joint.name], dtype=np.intp)
    U, _, Vt = np.linalg.svd(c.state.R[node])  # the world rotation (a static scale above taken out)
    local = joint.rest_rotation().T @ joint.matrix(c.pose[own])[:3, :3]
    r = (U @ Vt) @ rotation_vector_from_matrix(local)
    rev = comp.dof_revolute
    par = int(comp.parent[node])
    if par >= 0:
        above = np.flatnonzero(c.body.moves[par] & rev)
        J[:, above] = cross3(c.state.a[above], r).T
    mine = own[rev[own]]
    J[:, mine] = left_jacobian_inverse(r) @ c.state.a[mine].T
    return r, J


@dataclass(frozen=True, eq=False, kw_only=True)
class Spread(Task):
    """A bend shared over joints, measured from their rest, so the same whatever their rest turns and Euler orders:
    for each group of ``joints`` (node names: the joints into them), e_j = r_j − mean(r) with r_j each joint's turn from
    rest as a world rotation vector (:func:`relative_turn`); for each group of ``groups`` (DOFs about one axis),
    e = d_g − mean(d_g) with d = θ − θ_rest."""

    kind: ClassVar[str] = "spread"
    groups: tuple[tuple[int, ...], ...] = ()
    joints: tuple[tuple[str, ...], ...] = ()
    priority: int = 3

    def compute(self, c: Configuration) -> tuple[Array, Array]:
        D = c.figure.dof_count
        es, Js = [np.zeros(0)], [np.zeros((0, D))]
        d = c.pose - c.figure.rest_pose()
        spans = c.figure.joint_dofs if self.joints else None
        for g in self.groups:
            idx = np.asarray(g, dtype=np.intp)
            k = len(idx)
            es.append(d[idx] - d[idx].mean())
            J = np.zeros((k, D))
            J[:, idx] = np.eye(k) - 1.0 / k
            Js.append(J)
        for names in self.joints:
            turns = [relative_turn(c, c.node(n), spans) for n in names]
            r = np.array([t for t, _ in turns])
            Jr = np.array([j for _, j in turns])
            es.append((r - r.mean(axis=0)).ravel())
            Js.append((Jr - Jr.mean(axis=0)).reshape(-1, D))
        return np.concatenate(es), np.vstack(Js)
