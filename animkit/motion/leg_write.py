"""Joint turns written back into poses: world turns read into their joints' DOFs over the frames a leg IK moves
(:func:`_write_joints`, A = (R_parent · R_L)ᵀ · R read, each angle the whole turn nearest its old value, within the
limits), one joint at a time by the C extension's ``write_joint`` where it reads the joint's angles, else the joints
of one DOF layout at once in NumPy (with ``euler_read``). Split from :mod:`animkit.motion.leg_ik`, whose passes
call it; private helpers only."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from animkit import jit
from animkit.model.figure import Figure
from animkit.model.graph import Arc
from animkit.motion.legs import _norm
from animkit.motion.retarget_rest import _mm3, euler_plan, read_local_dofs

__all__: list[str] = []

Array = NDArray[np.float64]
Bool = NDArray[np.bool_]


def _rotation(M: Array) -> Array:
    """The turn of a uniformly scaled 3×3 block (…, 3, 3): M / |M e₁| (a node under Mixamo's 0.01-scaled armature has
    world blocks 0.01·R, whose transpose is not their inverse)."""
    return M / _norm(M[..., :, :1], axis=-2, keepdims=True)


def _columns(figure: Figure, node: str) -> tuple[NDArray[np.intp], Array]:
    """The pose columns (in order) of the DOFs on the arc into ``node`` and their limits (n, 2), read from the compiled
    figure's flat arrays (``joint_dofs`` and ``dof_limits()`` build a dict and a table of every DOF on each call)."""
    c = figure.compiled
    idx = np.flatnonzero(c.dof_node == c.node_names.index(node))
    return idx, np.column_stack((c.lower[idx], c.upper[idx]))


def _nearest_turns(new: Array, old: Array) -> Array:
    """``new`` moved by whole turns to lie closest to ``old``."""
    return old + (new - old + np.pi) % (2 * np.pi) - np.pi


def _write_joints(figure: Figure, P: Array, writes: list[tuple[str, Array, Array, Bool]]) -> None:
    """World turns read into their joints' DOFs in ``P`` (in place): for each (node, its world turn R (F, 3, 3), its
    parent's (F, 3, 3), the frames ``active``), A = (R_parent·R_L)ᵀ·R read (:func:`read_dofs`) where active, each
    angle the whole turn nearest its old value, within the limits. Nodes whose joints have one DOF layout are read at
    once, their active rows stacked (row by row the same arithmetic as one alone)."""
    groups: dict[tuple[object, ...], list[tuple[Arc, NDArray[np.intp], Array, Array, Array, Bool]]] = {}
    kernel = getattr(jit.native_kernels(), "write_joint", None)
    if len({w[0] for w in writes}) < len(writes):  # a node written twice: each write reads the columns as they were
        kernel = None
    for node, R_world, R_above, active in writes:
        arc = figure.node(node).parent_arc
        assert arc is not None
        idx, lim = _columns(figure, node)
        if idx.size and active.any() and (kernel is None or not _write_joint(kernel, arc, idx, lim, R_world, R_above,
                                                                             active, P)):
            key = tuple((d.kind, d.axis_letter, tuple(d.axis)) for d in arc.joint.dofs)
            groups.setdefault(key, []).append((arc, idx, lim, R_world, R_above, active))
    for group in groups.values():
        joint = group[0][0].joint
        counts = [int(g[5].sum()) for g in group]
        R_above = np.concatenate([g[4][g[5]] for g in group])
        L = np.repeat(np.stack([_rotation(g[0].L[:3, :3]) for g in group]), counts, axis=0)
        old = np.concatenate([P[:, g[1]][g[5]] for g in group])  # the joints' columns, then the active rows
        vals = read_local_dofs(joint, _mm3(R_above, L), np.concatenate([g[3][g[5]] for g in group]), old)
        rev = np.array([dof.revolute for dof in joint.dofs])
        vals[:, rev] = _nearest_turns(vals[:, rev], old[:, rev])
        lim = np.repeat(np.stack([g[2] for g in group]), counts, axis=0)  # (rows, k, 2)
        vals = np.clip(vals, lim[:, :, 0], lim[:, :, 1])
        start = 0
        for (_, idx, _, _, _, active), n in zip(group, counts, strict=True):
            cols = P[:, idx]
            cols[active] = vals[start:start + n]
            P[:, idx] = cols
            start += n


def _write_joint(kernel: Any, arc: Arc, idx: NDArray[np.intp], lim: Array, R_world: Array, R_above: Array,
                 active: Bool, P: Array) -> bool:
    """:func:`_write_joints`' reading of one joint (its columns ``idx``, limits ``lim`` (k, 2)) in one pass of the C
    extension's ``write_joint``: A = (R_above·R_L)ᵀ·R_world read where ``active``, each angle the whole turn nearest
    its old value, every column clipped to its limits, the same products, angles and NumPy mod and clip bit for
    bit. False (nothing written) where the pass does not apply: angles :func:`read_local_dofs` does not read with
    ``euler_read``, columns not in one run, a pose array not C-ordered float64."""
    joint = arc.joint
    plan = euler_plan(joint)
    if plan is None or len(idx) != joint.dof_count or idx[-1] - idx[0] != joint.dof_count - 1 \
            or P.dtype != np.float64 or not P.flags.c_contiguous:
        return False
    codes, order = plan
    F = P.shape[0]
    Ra = R_above[:1] if R_above.strides[0] == 0 else R_above  # (a broadcast parent turn: one frame's)
    kernel(np.ascontiguousarray(Ra, dtype=np.float64), np.ascontiguousarray(_rotation(arc.L[:3, :3])),
           np.ascontiguousarray(R_world, dtype=np.float64), np.ascontiguousarray(active, dtype=np.uint8), P,
           np.ascontiguousarray(lim, dtype=np.float64), F, Ra.shape[0], P.shape[1], int(idx[0]), codes, *order)
    return True
