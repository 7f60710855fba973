"""The spine's bend shared over its joints, measured from their rest (so the same on every rig, whatever its rest
turns and Euler orders): a task in one file, as :mod:`animkit.ik.hang` is,

    e_j = r_j − mean(r),   r_j = R_n log(A_restᵀ A(θ))^∨   (:func:`relative_turn`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from animkit import jit
from animkit.ik.tasks import Configuration, Task, left_jacobian_inverse
from animkit.model.joints import Joint
from animkit.model.transforms import cross3, rotation_vector_from_matrix

__all__ = ["Spread", "relative_turn"]

Array = NDArray[np.float64]


def relative_turn(c: Configuration, node: int, spans: dict[str, list[int]] | None = None) -> tuple[Array, Array]:
    """r = R_n log(A_restᵀ A(θ))^∨ (3,): the turn of ``node``'s joint from its rest, as a world rotation vector (R_n
    the node's world rotation; the same as log(R_p A R_restᵀ R_pᵀ), R_p its joint's frame), and ∂r/∂θ (3, D):
    J_l⁻¹(r) a_k for the joint's own revolute DOFs, a_m × r for the revolute DOFs that turn its parent (``spans``:
    the figure's ``joint_dofs``, where a caller asks for several nodes)."""
    return _turn(c, _turn_plan(c, node, c.figure.joint_dofs if spans is None else spans))


@dataclass(frozen=True, eq=False)
class _TurnPlan:
    """What :func:`relative_turn` reads of one node's joint, found once per compiled figure and body: the node, its
    joint (None: no joint or no DOFs), A_restᵀ, the joint's DOFs, its revolute ones and the revolute DOFs that turn
    its parent (None at the root)."""

    node: int
    joint: Joint | None
    rest_t: Array
    own: NDArray[np.intp]
    mine: NDArray[np.intp]
    above: NDArray[np.intp] | None


def _turn_plan(c: Configuration, node: int, spans: Mapping[str, Sequence[int]]) -> _TurnPlan:
    fig, comp = c.figure, c.figure.compiled
    arc = fig.node(comp.node_names[node]).parent_arc
    none = np.zeros(0, dtype=np.intp)
    if arc is None or not arc.joint.dof_count:
        return _TurnPlan(node, None, np.eye(3), none, none, None)
    joint = arc.joint
    own = np.asarray(spans[joint.name], dtype=np.intp)
    rev = comp.dof_revolute
    par = int(comp.parent[node])
    above = np.flatnonzero(c.body.moves[par] & rev) if par >= 0 else None
    return _TurnPlan(node, joint, joint.rest_rotation().T, own, own[rev[own]], above)


def _turn(c: Configuration, t: _TurnPlan) -> tuple[Array, Array]:
    """:func:`relative_turn` from its plan (the same arithmetic, in the same order)."""
    J = np.zeros((3, c.figure.compiled.dof_count))
    if t.joint is None:
        return np.zeros(3), J
    U, _, Vt = np.linalg.svd(c.state.R[t.node])  # the world rotation (a static scale above taken out)
    local = t.rest_t @ t.joint.matrix(c.pose[t.own])[:3, :3]
    r = (U @ Vt) @ rotation_vector_from_matrix(local)
    if t.above is not None:
        J[:, t.above] = cross3(c.state.a[t.above], r).T
    J[:, t.mine] = left_jacobian_inverse(r) @ c.state.a[t.mine].T
    return r, J


@dataclass(frozen=True, eq=False)
class _GroupKernel:
    """One group of :class:`_TurnPlan` as ``animkit._native.spread_turns`` reads it, found with the plans: the nodes
    (N,), Tᵀ = A_restᵀ (N, 3, 3), each joint's DOF axes (N, K, 3) and kinds (N, K: 0 none, 1 revolute, 2 prismatic,
    3 scale; K the most DOFs of a joint), where its DOFs' values lie in the pose (N, K), whether it has a joint
    (N,), and masks (N, D) of the DOFs that turn its parent (``above``) and its own revolute DOFs (``mine``)."""

    nodes: NDArray[np.intp]
    rest_t: Array
    axes: Array
    kind: NDArray[np.uint8]
    dofs: NDArray[np.intp]
    has: NDArray[np.uint8]
    above: NDArray[np.uint8]
    mine: NDArray[np.uint8]


_KINDS = {"revolute": 1, "prismatic": 2, "scale": 3}


def _group_kernel(plans: Sequence[_TurnPlan], D: int) -> _GroupKernel:
    """The kernel's view of one group of plans over D DOFs."""
    N = len(plans)
    K = max([len(t.joint.dofs) for t in plans if t.joint is not None], default=0)
    k = _GroupKernel(np.array([t.node for t in plans], dtype=np.intp), np.zeros((N, 3, 3)), np.zeros((N, K, 3)),
                     np.zeros((N, K), np.uint8), np.zeros((N, K), np.intp), np.zeros(N, np.uint8),
                     np.zeros((N, D), np.uint8), np.zeros((N, D), np.uint8))
    for j, t in enumerate(plans):
        if t.joint is None:
            continue
        k.rest_t[j], k.has[j] = t.rest_t, 1
        for i, d in enumerate(t.joint.dofs):
            k.axes[j, i], k.kind[j, i], k.dofs[j, i] = d.axis, _KINDS[d.kind], t.own[i]
        if t.above is not None:
            k.above[j, t.above] = 1
        k.mine[j, t.mine] = 1
    return k


def _native_turns(c: Configuration, k: _GroupKernel) -> tuple[Array, Array] | None:
    """One group's (r − mean r, ∂r − mean ∂r) by ``animkit._native.spread_turns`` (the arithmetic of :func:`_turn`,
    the polar factor by Newton's iteration: to NumPy's ~1e-15), or None where the extension is off
    (ANIMKIT_JIT=0), not built, or leaves it to NumPy (a singular frame, a number not finite)."""
    fn = getattr(jit.native_kernels(), "spread_turns", None)
    if fn is None:
        return None
    N, D = len(k.nodes), c.figure.compiled.dof_count
    e, J = np.empty(3 * N), np.empty((3 * N, D))
    s = c.state
    ok = fn(np.ascontiguousarray(s.R[k.nodes], dtype=np.float64), k.rest_t, k.axes, k.kind,
            np.ascontiguousarray(c.pose[k.dofs], dtype=np.float64), k.has, np.ascontiguousarray(s.a, dtype=np.float64),
            k.above, k.mine, e, J, N, D, k.kind.shape[1])
    return (e, J) if ok else None


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
        D = c.figure.compiled.dof_count
        es, Js = [np.zeros(0)], [np.zeros((0, D))]
        d = c.pose - c.figure.rest_pose()
        for g in self.groups:
            idx = np.asarray(g, dtype=np.intp)
            k = len(idx)
            es.append(d[idx] - d[idx].mean())
            J = np.zeros((k, D))
            J[:, idx] = np.eye(k) - 1.0 / k
            Js.append(J)
        plans_of, kernels = self._plans(c)
        for plans, kernel in zip(plans_of, kernels, strict=True):
            got = _native_turns(c, kernel) if plans else None
            if got is not None:
                es.append(got[0])
                Js.append(got[1])
                continue
            turns = [_turn(c, t) for t in plans]
            r = np.array([t for t, _ in turns])
            Jr = np.array([j for _, j in turns])
            es.append((r - r.mean(axis=0)).ravel())
            Js.append((Jr - Jr.mean(axis=0)).reshape(-1, D))
        return np.concatenate(es), np.vstack(Js)

    def _plans(self, c: Configuration) -> tuple[list[list[_TurnPlan]], list[_GroupKernel]]:
        """Each group of ``joints``' :class:`_TurnPlan` and its kernel's view (:func:`_group_kernel`), found once per
        compiled figure and body."""
        got = self.__dict__.get("_memo")
        if got is not None and got[0] is c.figure.compiled and got[1] is c.body:
            return got[2], got[3]
        spans = c.figure.joint_dofs
        plans = [[_turn_plan(c, c.node(n), spans) for n in names] for names in self.joints]
        kernels = [_group_kernel(p, c.figure.compiled.dof_count) for p in plans]
        object.__setattr__(self, "_memo", (c.figure.compiled, c.body, plans, kernels))
        return plans, kernels

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_memo"}  # the memo is found again where it is used
