"""Vectorised forward kinematics: the figure compiled once into flat arrays.

    M_i = M_parent(i) · L_i · E_i1(θ) · … · E_ik(θ)

evaluated for a whole batch of poses at once. Nodes are processed level by
level (all nodes of one depth together); within a level, the DOFs of the same
slot, kind and axis are applied together. Arrays are *component-major* with the
frame axis last — rotations ``(N, 3, 3, F)``, positions ``(N, 3, F)`` — so every
NumPy call works on long contiguous rows; an axis-aligned rotation only mixes two
columns (R·R_x(θ): c₁' = c·c₁ + s·c₂, c₂' = −s·c₁ + c·c₂).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .transforms import matrix_about_axis

if TYPE_CHECKING:
    from .graph import Figure

__all__ = ["CompiledFigure", "DofStep", "compile_figure", "forward", "world_batch", "world_positions",
           "dof_frames"]

Array = NDArray[np.float64]
Index = NDArray[np.intp]

# for a rotation about coordinate axis i, the two columns it mixes (cyclic: x→(y,z), y→(z,x), z→(x,y))
_MIXED = {0: (1, 2), 1: (2, 0), 2: (0, 1)}


@dataclass(frozen=True)
class DofStep:
    """Apply one DOF to several nodes of a level: ``local`` positions in the level, their ``dofs``."""

    local: Index
    dofs: Index
    revolute: bool
    letter: int  # 0, 1, 2 for x, y, z; -1 for any other axis
    axes: Array  # (m, 3)


@dataclass(frozen=True)
class Level:
    nodes: Index  # node indices (node_names order) at this depth
    parents: Index  # their parents' indices (-1 for the root)
    RL: Array  # (n, 3, 3) rotation of L
    pL: Array  # (n, 3) translation of L
    steps: tuple[DofStep, ...]


@dataclass(frozen=True)
class CompiledFigure:
    """Flat arrays for FK: ``parent[i]`` (−1 at the root), L, T, DOF axes and owners, levels."""

    node_names: tuple[str, ...]
    dof_names: tuple[str, ...]
    parent: Index
    L: Array  # (N, 4, 4)
    T: Array  # (N, 4, 4)
    dof_node: Index  # (D,) node whose arc carries each DOF
    dof_revolute: NDArray[np.bool_]  # (D,)
    dof_axis: Array  # (D, 3) in the frame just before the DOF
    lower: Array
    upper: Array
    rest: Array
    levels: tuple[Level, ...]

    @property
    def node_count(self) -> int:
        return len(self.node_names)

    @property
    def dof_count(self) -> int:
        return len(self.dof_names)


def compile_figure(figure: Figure) -> CompiledFigure:
    """Flatten ``figure`` into arrays: nodes in traversal order, their parents, L, T and DOF programme."""
    arcs = figure.arcs()
    names = [a.child.name for a in arcs]
    index = {n: i for i, n in enumerate(names)}
    N = len(arcs)
    parent = np.array([-1 if a.parent is None else index[a.parent.name] for a in arcs], dtype=np.intp)
    L = np.stack([a.L for a in arcs])
    T = np.stack([a.child.T for a in arcs])
    dofs = [(i, slot, d) for i, a in enumerate(arcs) for slot, d in enumerate(a.joint.dofs)]
    D = len(dofs)
    dof_node = np.array([i for i, _, _ in dofs], dtype=np.intp)
    dof_rev = np.array([d.revolute for _, _, d in dofs], dtype=bool)
    dof_axis = np.array([d.axis for _, _, d in dofs], dtype=float).reshape(D, 3)
    depth = np.zeros(N, dtype=np.intp)
    for i in range(1, N):
        depth[i] = depth[parent[i]] + 1
    levels = []
    for lev in range(int(depth.max()) + 1 if N else 0):
        nodes = np.flatnonzero(depth == lev)
        local_of = {int(n): k for k, n in enumerate(nodes)}
        groups: dict[tuple[int, bool, int], list[int]] = {}
        for g, (i, slot, d) in enumerate(dofs):
            if depth[i] != lev:
                continue
            letter = d.axis_letter
            key = (slot, d.revolute, -1 if letter is None else "xyz".index(letter))
            groups.setdefault(key, []).append(g)
        steps = []
        for (_slot, rev, letter), members in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
            mem = np.array(members, dtype=np.intp)
            steps.append(DofStep(np.array([local_of[int(dof_node[g])] for g in mem], dtype=np.intp), mem, rev,
                                 letter, dof_axis[mem]))
        levels.append(Level(nodes, parent[nodes], L[nodes, :3, :3].copy(), L[nodes, :3, 3].copy(), tuple(steps)))
    dofl = figure.dofs
    arrays = (
        np.array([d.lower for d in dofl], dtype=float),
        np.array([d.upper for d in dofl], dtype=float),
        np.array([d.rest for d in dofl], dtype=float),
    )
    for arr in (parent, L, T, dof_node, dof_rev, dof_axis, *arrays):
        arr.setflags(write=False)
    return CompiledFigure(tuple(names), tuple(d.name for d in dofl), parent, L, T, dof_node, dof_rev, dof_axis,
                          *arrays, tuple(levels))


def forward(c: CompiledFigure, poses: Array, *, with_dof_frames: bool = False
            ) -> tuple[Array, Array, Array | None, Array | None]:
    """M_i = M_parent · L_i · Π E(θ) for poses (F, D), component-major.

    Returns R (N, 3, 3, F), p (N, 3, F) and, with ``with_dof_frames``, each DOF's world
    origin r (D, 3, F) and world axis a (D, 3, F), taken in the frame just before it acts.
    """
    theta = np.ascontiguousarray(np.asarray(poses, dtype=float).T)  # (D, F): one row per DOF
    F = theta.shape[1]
    N = c.node_count
    R = np.empty((N, 3, 3, F))
    p = np.empty((N, 3, F))
    r_out = np.empty((c.dof_count, 3, F)) if with_dof_frames else None
    a_out = np.empty((c.dof_count, 3, F)) if with_dof_frames else None
    for lev in c.levels:
        if lev.parents[0] < 0:  # the root level: the parent is the world
            Rn = np.repeat(lev.RL[:, :, :, None], F, axis=3)
            pn = np.repeat(lev.pL[:, :, None], F, axis=2)
        else:
            Rp = R[lev.parents]
            Rn = np.einsum("nijf,njk->nikf", Rp, lev.RL)
            pn = np.einsum("nijf,nj->nif", Rp, lev.pL) + p[lev.parents]
        for st in lev.steps:
            th = theta[st.dofs]  # (m, F)
            loc = st.local
            if with_dof_frames:
                assert r_out is not None and a_out is not None
                r_out[st.dofs] = pn[loc]
                a_out[st.dofs] = np.einsum("mijf,mj->mif", Rn[loc], st.axes)
            if st.revolute:
                if st.letter >= 0:
                    j, k = _MIXED[st.letter]
                    cj = Rn[loc, :, j]
                    ck = Rn[loc, :, k]
                    cs = np.cos(th)[:, None, :]
                    sn = np.sin(th)[:, None, :]
                    Rn[loc, :, j] = cj * cs + ck * sn
                    Rn[loc, :, k] = ck * cs - cj * sn
                else:
                    E = np.moveaxis(matrix_about_axis(st.axes[:, None, :], th), 1, -1)  # (m, 3, 3, F)
                    Rn[loc] = np.einsum("mijf,mjkf->mikf", Rn[loc], E)
            else:
                if st.letter >= 0:
                    pn[loc] += Rn[loc, :, st.letter] * th[:, None, :]
                else:
                    pn[loc] += np.einsum("mijf,mj->mif", Rn[loc], st.axes) * th[:, None, :]
        R[lev.nodes] = Rn
        p[lev.nodes] = pn
    return R, p, r_out, a_out


def world_batch(c: CompiledFigure, poses: Array) -> Array:
    """World matrices (F, N, 4, 4) for poses (F, D); node order as ``c.node_names``."""
    R, p, _, _ = forward(c, poses)
    F = R.shape[-1]
    out = np.zeros((F, c.node_count, 4, 4))
    out[:, :, :3, :3] = R.transpose(3, 0, 1, 2)
    out[:, :, :3, 3] = p.transpose(2, 0, 1)
    out[:, :, 3, 3] = 1.0
    return out


def world_positions(c: CompiledFigure, poses: Array) -> Array:
    """World positions (F, N, 3) of every node's frame origin."""
    _, p, _, _ = forward(c, poses)
    return np.ascontiguousarray(p.transpose(2, 0, 1))


def dof_frames(c: CompiledFigure, poses: Array) -> tuple[Array, Array, Array, Array]:
    """(R, p, r, a) frame-last: world frames and, per DOF, world origin r (D, 3, F) and axis a (D, 3, F)."""
    R, p, r, a = forward(c, poses, with_dof_frames=True)
    assert r is not None and a is not None
    return R, p, r, a
