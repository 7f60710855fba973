"""Vectorised forward kinematics on plain arrays: a figure flattened once into an FK programme.

    M_i = M_parent(i) · L_i · E_i1(θ) · … · E_ik(θ)

(E a rotation, a translation or a scale along an axis; L and so M may carry scale)
evaluated for a whole batch of poses at once. Nodes are processed level by level
(all nodes of one depth together); within a level, the DOFs of the same
slot, kind and axis are applied together. Arrays are *component-major* with the
frame axis last — rotations ``(N, 3, 3, F)``, positions ``(N, 3, F)`` — so every
NumPy call works on long contiguous rows; an axis-aligned rotation only mixes two
columns (R·R_x(θ): c₁' = c·c₁ + s·c₂, c₂' = −s·c₁ + c·c₂).

``world_batch`` and ``world_positions`` run the same arithmetic frame by frame in a compiled kernel when
:mod:`animkit.jit` is enabled (several times faster on short clips); ``forward`` is the NumPy path and the oracle.

This is the FK of a figure (several DOFs a node, scale DOFs, many poses). IK's sub-chains have their own, with one
DOF a link and the constants folded in (C_k E_k(θ) = H0 + sin θ H1 + (1 − cos θ) H2 + θ H3): NumPy's
:meth:`animkit.ik.problem.ChainModel.forward`, compiled ``lm_jit.chain_forward`` (serial), ``lanes_jit.forward_lanes``
(8 lanes), ``effectors_jit.chain_frames`` (trees) and ``fabrik_jit._fk``. :func:`forward` run on such a chain
(a node per link) gave the same frames 5–19× slower (Panda's arm, B = 1…200), so the two forms stay apart.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit import jit
from animkit.errors import SceneError
from animkit.jit import kernel
from animkit.jit import pays as jit_pays
from animkit.model.transforms import cos_sin, matrix_about_axis

__all__ = ["CompiledFigure", "DofArrays", "DofStep", "compile_figure", "forward", "world_batch", "world_positions",
           "fk_compiled", "fk_frames_kernel", "dof_frames"]

Array = NDArray[np.float64]
Index = NDArray[np.intp]

# for a rotation about coordinate axis i, the two columns it mixes (cyclic: x→(y,z), y→(z,x), z→(x,y))
_MIXED = {0: (1, 2), 1: (2, 0), 2: (0, 1)}


@dataclass(frozen=True)
class DofStep:
    """Apply one DOF slot to a run of nodes ``lo:hi`` of a level that share kind and axis; their ``dofs``."""

    lo: int
    hi: int
    dofs: Index
    revolute: bool
    letter: int  # 0, 1, 2 for x, y, z; -1 for any other axis
    axes: Array  # (m, 3)
    scale: bool = False  # a scale DOF (then ``revolute`` is False): R ← R (I + (θ − 1) a aᵀ)


@dataclass(frozen=True)
class Level:
    """The nodes of one depth: internal rows ``start:stop``, their parents' rows, their L, their DOF steps."""

    start: int
    stop: int
    parents: Index  # internal rows of their parents (−1 for the root)
    RL: Array  # (n, 3, 3) rotation of L
    pL: Array  # (n, 3) translation of L
    rotated: bool  # False when every L here is a pure translation (then R_parent · R_L = R_parent)
    steps: tuple[DofStep, ...]


@dataclass(frozen=True)
class CompiledFigure:
    """Flat arrays for FK: ``parent[i]`` (−1 at the root), L, T, DOF axes and owners; levels on first use.

    Public arrays are in ``node_names`` order. Internally the NumPy forward keeps nodes level by level, with
    nodes of the same DOF signature side by side, so that every step works on a slice: ``order[k]``
    is the node at internal row k. ``levels``, ``order`` and ``row`` are built on first use (the compiled
    kernel works in ``node_names`` order and needs none of them).
    """

    node_names: tuple[str, ...]
    dof_names: tuple[str, ...]
    parent: Index
    L: Array  # (N, 4, 4)
    T: Array  # (N, 4, 4)
    dof_node: Index  # (D,) node whose arc carries each DOF
    dof_revolute: NDArray[np.bool_]  # (D,)
    dof_scale: NDArray[np.bool_]  # (D,) scale DOFs (neither revolute nor prismatic)
    dof_axis: Array  # (D, 3) in the frame just before the DOF
    dof_letter: Index  # (D,) 0, 1, 2 for the coordinate axis x, y, z; −1 for any other axis
    lower: Array
    upper: Array
    rest: Array

    @property
    def node_count(self) -> int:
        return len(self.node_names)

    @property
    def dof_count(self) -> int:
        return len(self.dof_names)

    @functools.cached_property
    def depth_count(self) -> int:
        """Depths of the hierarchy (1 + the deepest node's depth): the levels :func:`forward` walks, without
        building them."""
        par = self.parent.tolist()
        depth = [0] * len(par)
        for i in range(1, len(par)):
            depth[i] = depth[par[i]] + 1 if par[i] >= 0 else 0
        return max(depth, default=-1) + 1

    @functools.cached_property
    def _programme(self) -> tuple[tuple[Level, ...], Index, Index]:
        return _levels_of(self)

    @property
    def levels(self) -> tuple[Level, ...]:
        """The nodes depth by depth, each depth's DOFs in runs of one signature (what :func:`forward` walks)."""
        return self._programme[0]

    @property
    def order(self) -> Index:
        """Internal row → node index."""
        return self._programme[1]

    @property
    def row(self) -> Index:
        """Node index → internal row."""
        return self._programme[2]

    @functools.cached_property
    def tan_columns(self) -> Index:
        """The DOFs whose tan(θ/2) :func:`_fk_frames` reads: revolute about a coordinate axis."""
        return np.flatnonzero(self.dof_revolute & (self.dof_letter >= 0))

    @functools.cached_property
    def kernel_tables(self) -> tuple[NDArray[np.bool_], Index, Index]:
        """What :func:`_fk_frames` reads besides θ: (rotated (N,): L has a rotation block, first (N + 1,): node i's
        DOFs are ``first[i]:first[i + 1]``, kind (D,): 0 prismatic, 1 revolute, 2 scale)."""
        rotated = ~(self.L[:, :3, :3] == np.eye(3)).all(axis=(1, 2))
        first = np.searchsorted(self.dof_node, np.arange(self.node_count + 1)).astype(np.intp)
        kind = np.where(self.dof_scale, 2, self.dof_revolute.astype(np.intp)).astype(np.intp)
        # the compiled kernels index without bounds checks: parents first, DOF runs and axis letters in range
        n = np.arange(self.node_count)
        if not ((self.parent < n).all() and (self.parent >= -1).all() and (np.diff(first) >= 0).all()
                and ((self.dof_letter >= -1) & (self.dof_letter <= 2)).all() and self.parent.dtype == np.intp
                and self.dof_letter.dtype == np.intp):
            raise SceneError("compiled figure: parents must come before their children, DOFs in node order and "
                             "axis letters in -1..2")
        for arr in (rotated, first, kind):
            arr.setflags(write=False)
        return rotated, first, kind


@dataclass(frozen=True)
class DofArrays:
    """Per DOF (D,), in pose order: name, revolute or prismatic (or, where ``scale``, a scale DOF), axis (D, 3),
    ``letter`` 0/1/2 for a positive coordinate axis x/y/z and −1 otherwise, limits and rest value."""

    names: Sequence[str]
    revolute: ArrayLike
    axis: ArrayLike
    letter: ArrayLike
    lower: ArrayLike
    upper: ArrayLike
    rest: ArrayLike
    scale: ArrayLike | None = None


def compile_figure(*, node_names: Sequence[str], parent: ArrayLike, L: ArrayLike, T: ArrayLike,
                   dof_counts: ArrayLike, dofs: DofArrays) -> CompiledFigure:
    """Flatten a figure given as arrays into the FK programme: levels, runs of one DOF signature, L and T.

    Nodes in traversal order: ``parent`` (N,) indices (−1 at the root, parents before children), ``L`` and ``T``
    (N, 4, 4), ``dof_counts`` (N,) the DOFs of each node's arc in pose order; ``dofs`` the DOFs' own arrays
    (:class:`DofArrays`). The levels are built on first use.
    """
    dof_names, dof_revolute, dof_axis, dof_letter = dofs.names, dofs.revolute, dofs.axis, dofs.letter
    lower, upper, rest, dof_scale = dofs.lower, dofs.upper, dofs.rest, dofs.scale
    parent = np.array(parent, dtype=np.intp).reshape(-1)
    L = np.array(L, dtype=float)
    T = np.array(T, dtype=float)
    counts = np.array(dof_counts, dtype=np.intp).reshape(-1)
    D = int(counts.sum())
    dof_node = np.repeat(np.arange(len(parent), dtype=np.intp), counts)
    dof_rev = np.array(dof_revolute, dtype=bool).reshape(D)
    scale_ = np.zeros(D, dtype=bool) if dof_scale is None else np.array(dof_scale, dtype=bool).reshape(D)
    axis = np.array(dof_axis, dtype=float).reshape(D, 3)
    letter = np.array(dof_letter, dtype=np.intp).reshape(D)
    lo, hi, rs = (np.array(a, dtype=float).reshape(D) for a in (lower, upper, rest))
    for arr in (parent, L, T, dof_node, dof_rev, scale_, axis, letter, lo, hi, rs):
        arr.setflags(write=False)
    return CompiledFigure(tuple(node_names), tuple(dof_names), parent, L, T, dof_node, dof_rev, scale_, axis,
                          letter, lo, hi, rs)


def _levels_of(c: CompiledFigure) -> tuple[tuple[Level, ...], Index, Index]:
    """(levels, order, row) of :class:`CompiledFigure`: nodes depth by depth, same DOF signature side by side."""
    N, D = c.node_count, c.dof_count
    parent, L = c.parent, c.L
    first_dof = np.searchsorted(c.dof_node, np.arange(N + 1)).astype(np.intp)
    kind_code = [2 if sc else int(rv) for sc, rv in zip(c.dof_scale.tolist(), c.dof_revolute.tolist(), strict=True)]
    code = c.dof_letter.tolist()
    assert len(code) == D
    par_list = parent.tolist()
    depth_list = [0] * N
    for i in range(1, N):  # Python ints: N scalar NumPy index operations would cost more than the rest
        depth_list[i] = depth_list[par_list[i]] + 1
    depth = np.array(depth_list, dtype=np.intp)

    bounds = first_dof.tolist()
    signatures = [tuple((kind_code[g], code[g]) for g in range(bounds[i], bounds[i + 1])) for i in range(N)]

    def signature(i: int) -> tuple:
        return signatures[i]

    # depth by depth, same signature side by side: one sort, so a chain N deep costs N log N, not N² scans
    order = sorted(range(N), key=lambda i: (depth_list[i], signatures[i], i))
    order_a = np.array(order, dtype=np.intp)
    row = np.empty(N, dtype=np.intp)
    row[order_a] = np.arange(N)
    levels = []
    start = 0
    for count in np.bincount(depth).tolist() if N else []:
        stop = start + count
        nodes = order_a[start:stop]
        steps = []
        k = 0
        while k < count:  # runs of one signature
            sig = signature(int(nodes[k]))
            end = k
            while end < count and signature(int(nodes[end])) == sig:
                end += 1
            for slot, (kind, letter) in enumerate(sig):
                dofs = np.array([first_dof[n] + slot for n in nodes[k:end]], dtype=np.intp)
                steps.append(DofStep(k, end, dofs, kind == 1, letter, c.dof_axis[dofs], kind == 2))
            k = end
        RL = L[nodes, :3, :3].copy()
        rotated = not bool((RL == np.eye(3)).all())
        par = np.where(parent[nodes] >= 0, row[np.maximum(parent[nodes], 0)], -1)
        levels.append(Level(start, stop, par, RL, L[nodes, :3, 3].copy(), bool(rotated), tuple(steps)))
        start = stop
    for arr in (order_a, row):
        arr.setflags(write=False)
    return tuple(levels), order_a, row


def forward(c: CompiledFigure, poses: Array, *, with_dof_frames: bool = False
            ) -> tuple[Array, Array | None, Array | None]:
    """M_i = M_parent · L_i · Π E(θ) for poses (F, D), component-major, rows in the kernel's internal order.

    Returns M (N, 3, 4, F) = [R | p] per node — row k is node ``c.order[k]``; R = M[:, :, :3],
    p = M[:, :, 3] — and, with ``with_dof_frames``,
    each DOF's world origin r (D, 3, F) and world axis a (D, 3, F) (in DOF order), taken in the frame just
    before it acts.
    """
    theta = np.ascontiguousarray(np.asarray(poses, dtype=float).T)  # (D, F): one row per DOF
    cos, sin = cos_sin(theta)  # once for every DOF (prismatic rows unused)
    F = theta.shape[1]
    N = c.node_count
    M = np.empty((N, 3, 4, F))  # [R | p] per node: one block, so world_batch copies it out in one pass
    R = M[:, :, :3]
    p = M[:, :, 3]
    r_out = np.empty((c.dof_count, 3, F)) if with_dof_frames else None
    a_out = np.empty((c.dof_count, 3, F)) if with_dof_frames else None
    for lev in c.levels:
        Rn = R[lev.start:lev.stop]  # views: the level is written in place
        pn = p[lev.start:lev.stop]
        if lev.parents[0] < 0:  # the root level: the parent is the world
            Rn[...] = lev.RL[:, :, :, None]
            pn[...] = lev.pL[:, :, None]
        else:
            Rp = R[lev.parents]
            if lev.rotated:
                np.einsum("nijf,njk->nikf", Rp, lev.RL, out=Rn)
            else:
                Rn[...] = Rp
            np.einsum("nijf,nj->nif", Rp, lev.pL, out=pn)
            pn += p[lev.parents]
        for st in lev.steps:
            th = theta[st.dofs]  # (m, F)
            Rs = Rn[st.lo:st.hi]
            ps = pn[st.lo:st.hi]
            if with_dof_frames:
                assert r_out is not None and a_out is not None
                r_out[st.dofs] = ps
                a_out[st.dofs] = np.einsum("mijf,mj->mif", Rs, st.axes)
            if st.scale:
                if st.letter >= 0:
                    Rs[:, :, st.letter] *= th[:, None, :]
                else:  # R ← R + (θ − 1) (R a) aᵀ
                    Ra = np.einsum("mijf,mj->mif", Rs, st.axes)
                    Rs += (th - 1.0)[:, None, None, :] * Ra[:, :, None, :] * st.axes[:, None, :, None]
            elif st.revolute:
                if st.letter >= 0:
                    j, k = _MIXED[st.letter]
                    cs = cos[st.dofs][:, None, :]
                    sn = sin[st.dofs][:, None, :]
                    cj = Rs[:, :, j].copy()
                    ck = Rs[:, :, k]
                    Rs[:, :, j] = cj * cs + ck * sn
                    ck *= cs
                    ck -= cj * sn
                else:
                    E = np.moveaxis(matrix_about_axis(st.axes[:, None, :], th), 1, -1)  # (m, 3, 3, F)
                    Rs[...] = np.einsum("mijf,mjkf->mikf", Rs, E)
            else:
                if st.letter >= 0:
                    ps += Rs[:, :, st.letter] * th[:, None, :]
                else:
                    ps += np.einsum("mijf,mj->mif", Rs, st.axes) * th[:, None, :]
    return M, r_out, a_out


def _fk_frames(tan_half: Array, theta: Array, parent: Index, L: Array, rotated: NDArray[np.bool_],
               first: Index, kind: Index, letter: Index, axis: Array, out: Array) -> None:
    """M_i = M_parent(i) · L_i · E_i1(θ) · … · E_ik(θ) frame by frame, nodes in ``node_names`` order (parents first).

    Reads θ and tan(θ/2) (F, D), cos θ and sin θ from the latter as :func:`~animkit.model.transforms.cos_sin` does.
    DOFs ``first[i]:first[i + 1]`` act on node i (``kind`` 0 prismatic, 1 revolute, 2 scale; ``letter`` 0, 1, 2
    for a coordinate axis, else -1 and the Rodrigues matrix of ``axis``). Writes ``out`` (F, N, 3): the origins
    p_i, or (F, N, 16): each M_i row-major.
    The same arithmetic as :func:`forward`, one frame at a time.
    """
    F = theta.shape[0]
    N = parent.shape[0]
    full = out.shape[2] == 16
    R = np.empty((N, 3, 3))
    p = np.empty((N, 3))
    K = np.zeros((3, 3))  # [a]_× of a general axis
    E = np.empty((3, 3))
    for f in range(F):
        for i in range(N):
            q = parent[i]
            for r in range(3):
                if q < 0:
                    for k in range(3):
                        R[i, r, k] = L[i, r, k]
                    p[i, r] = L[i, r, 3]
                    continue
                for k in range(3):
                    R[i, r, k] = (R[q, r, 0] * L[i, 0, k] + R[q, r, 1] * L[i, 1, k] + R[q, r, 2] * L[i, 2, k]
                                  if rotated[i] else R[q, r, k])
                p[i, r] = (R[q, r, 0] * L[i, 0, 3] + R[q, r, 1] * L[i, 1, 3] + R[q, r, 2] * L[i, 2, 3]) + p[q, r]
            for d in range(first[i], first[i + 1]):
                th = theta[f, d]
                a = letter[d]
                revolute = kind[d] == 1
                if kind[d] == 2:  # scale: R ← R (I + (θ − 1) a aᵀ)
                    for r in range(3):
                        ra = R[i, r, 0] * axis[d, 0] + R[i, r, 1] * axis[d, 1] + R[i, r, 2] * axis[d, 2]
                        for k in range(3):
                            R[i, r, k] += (th - 1.0) * ra * axis[d, k]
                elif revolute and a >= 0:
                    j = (a + 1) % 3
                    k = (a + 2) % 3
                    t = tan_half[f, d]
                    t2 = t * t
                    t1 = 1.0 / (1.0 + t2)
                    cs = (1.0 - t2) * t1
                    sn = 2.0 * t * t1
                    for r in range(3):
                        cj = R[i, r, j]
                        ck = R[i, r, k]
                        R[i, r, j] = cj * cs + ck * sn
                        R[i, r, k] = ck * cs - cj * sn
                elif revolute:  # Rodrigues, as transforms.matrix_about_axis: E = I + s K + (1 − c) K²
                    K[0, 1], K[0, 2], K[1, 2] = -axis[d, 2], axis[d, 1], -axis[d, 0]
                    K[1, 0], K[2, 0], K[2, 1] = axis[d, 2], -axis[d, 1], axis[d, 0]
                    cs = math.cos(th)
                    sn = math.sin(th)
                    for r in range(3):
                        for k in range(3):
                            K2 = K[r, 0] * K[0, k] + K[r, 1] * K[1, k] + K[r, 2] * K[2, k]
                            E[r, k] = (1.0 if r == k else 0.0) + sn * K[r, k] + (1.0 - cs) * K2
                    for r in range(3):
                        r0, r1, r2 = R[i, r, 0], R[i, r, 1], R[i, r, 2]
                        for k in range(3):
                            R[i, r, k] = r0 * E[0, k] + r1 * E[1, k] + r2 * E[2, k]
                elif a >= 0:
                    for r in range(3):
                        p[i, r] += R[i, r, a] * th
                else:
                    for r in range(3):
                        p[i, r] += (R[i, r, 0] * axis[d, 0] + R[i, r, 1] * axis[d, 1] + R[i, r, 2] * axis[d, 2]) * th
            if full:
                for r in range(3):
                    for k in range(3):
                        out[f, i, 4 * r + k] = R[i, r, k]
                    out[f, i, 4 * r + 3] = p[i, r]
                out[f, i, 12] = 0.0
                out[f, i, 13] = 0.0
                out[f, i, 14] = 0.0
                out[f, i, 15] = 1.0
            else:
                for r in range(3):
                    out[f, i, r] = p[i, r]


fk_frames_kernel = kernel(_fk_frames)


# NumPy's forward runs about 5 M joint transforms a second on short batches, the kernel about 29 M; numba's start-up
# and loading the cached kernel cost about 0.5 s a process: below ~2 M transforms (F × N) NumPy finishes first.
FK_JIT_MIN = 2e6
# Once numba is up in a process (the BVH scanner or any kernel has run), loading the cached FK kernel costs about
# 5.5 ms, and on a freshly parsed short clip it saves about 0.34 µs a transform (NumPy's forward also builds the
# figure's levels: 3.2 → 1.3 ms a call on the 149-frame CMU clip, 38 nodes): a process that has sent ~20k
# transforms to NumPy since then has paid the load once over, and switches (at most twice the better choice's cost).
FK_JIT_WARM = 2e4
# NumPy's forward also pays a fixed cost per depth of the hierarchy (about 10 array operations: 50–110 µs, measured
# on a 10,001-deep chain on a loaded machine) and building the levels once costs about twice that again: in
# transforms at 5 M/s, a depth weighs about 500. A 10,000-node chain drawn once goes to the kernel.
FK_LEVEL_WORK = 500.0


def _fk_work(c: CompiledFigure, poses: Array) -> float:
    """What NumPy's :func:`forward` would do, in joint transforms: F · N plus the per-depth overhead."""
    return np.shape(poses)[0] * c.node_count + FK_LEVEL_WORK * c.depth_count


def _compiled_runs(c: CompiledFigure, poses: Array) -> bool:
    """Whether :func:`_fk_frames` runs compiled on ``poses``: the ahead-of-time build where there is one (no
    start-up to repay), else numba's where the work pays for its start-up (:func:`animkit.jit.pays`)."""
    if np.ndim(poses) != 2:
        return False
    if jit.native_kernels() is not None:
        return True
    return fk_frames_kernel is not None and jit_pays(fk_frames_kernel, _fk_work(c, poses), FK_JIT_MIN, FK_JIT_WARM)


def fk_compiled(c: CompiledFigure, poses: Array, width: int) -> Array | None:
    """(F, N, width) from :func:`_fk_frames` (width 3: positions, 16: row-major matrices), or None when it is off
    or would not pay (:func:`_compiled_runs`)."""
    if not _compiled_runs(c, poses):
        return None
    out = np.empty((np.shape(poses)[0], c.node_count, width))
    _fk_into(c, np.ascontiguousarray(poses, dtype=np.float64), out)
    return out


#: frames per pass of :func:`world_positions_chunked`: the pass's angles and positions stay in the CPU's caches
CHUNK_FRAMES = 2048


def world_positions_chunked(c: CompiledFigure, poses: Array, dtype: type = np.float64,
                            chunk: int = CHUNK_FRAMES, out: Array | None = None) -> Array | None:
    """World positions (F, N, 3) in ``dtype`` (float64 or float32), computed ``chunk`` frames at a time in
    float64 (the same values as :func:`world_positions`, rounded once to ``dtype``); None when the kernel is off
    or would not pay (:func:`animkit.jit.pays`)."""
    if not _compiled_runs(c, poses):
        return None
    F = np.shape(poses)[0]
    if out is None:
        out = np.empty((F, c.node_count, 3), dtype=dtype)
    same = np.dtype(dtype) == np.float64
    scratch = None if same else np.empty((min(chunk, F), c.node_count, 3))
    for a in range(0, F, chunk):
        b = min(a + chunk, F)
        theta = np.ascontiguousarray(poses[a:b], dtype=np.float64)
        if same:
            _fk_into(c, theta, out[a:b])
        else:
            assert scratch is not None
            _fk_into(c, theta, scratch[:b - a])
            out[a:b] = scratch[:b - a]
    return out


def _fk_into(c: CompiledFigure, theta: Array, out: Array) -> None:
    """Fill ``out`` (F, N, width), float64 and C-contiguous, with :func:`_fk_frames` for angles ``theta`` (F, D)."""
    cols = c.tan_columns  # vectorised; the kernel's scalar libm calls would be several times slower
    if len(cols) == theta.shape[1]:
        tan_half = np.multiply(theta, 0.5)
        np.tan(tan_half, out=tan_half)
    else:  # only the DOFs the kernel reads it for (a glTF joint's translation and scale DOFs need none)
        half = np.multiply(theta[:, cols], 0.5)
        tan_half = np.zeros_like(theta)
        tan_half[:, cols] = np.tan(half, out=half)
    rotated, first, kind = c.kernel_tables
    native = jit.native_kernels()
    if native is not None:
        F, D = theta.shape
        native.fk_frames(tan_half, theta, c.parent, c.L, rotated, first, kind, c.dof_letter, c.dof_axis, out, F,
                         c.node_count, D, out.shape[2])
        return
    assert fk_frames_kernel is not None
    fk_frames_kernel(tan_half, theta, c.parent, c.L, rotated, first, kind, c.dof_letter, c.dof_axis, out)


def world_batch(c: CompiledFigure, poses: Array) -> Array:
    """World matrices (F, N, 4, 4) for poses (F, D); node order as ``c.node_names``."""
    fast = fk_compiled(c, poses, 16)
    if fast is not None:
        return fast.reshape(fast.shape[0], fast.shape[1], 4, 4)
    M, _, _ = forward(c, poses)
    out = np.zeros((M.shape[-1], c.node_count, 4, 4))
    out[:, :, :3, :] = M[c.row].transpose(3, 0, 1, 2)
    out[:, :, 3, 3] = 1.0
    return out


def positions_out(c: CompiledFigure, frames: int, dtype: type, out: object) -> Array:
    """``out`` when it is a writeable C-contiguous ndarray of shape (frames, N, 3) and ``dtype``; SceneError
    naming what was expected otherwise (checked once per call, not per chunk)."""
    want = (frames, c.node_count, 3)
    if not isinstance(out, np.ndarray):
        raise SceneError(f"world_positions: out must be a NumPy array of shape {want}, got {type(out).__name__}")
    if out.shape != want or out.dtype != np.dtype(dtype) or not out.flags.c_contiguous or \
            not out.flags.writeable:
        raise SceneError(f"world_positions: out must be a writeable C-contiguous {np.dtype(dtype)} array of "
                         f"shape {want} (frames, nodes, 3), got {out.dtype} {out.shape}"
                         f"{'' if out.flags.c_contiguous else ', not C-contiguous'}"
                         f"{'' if out.flags.writeable else ', read-only'}")
    return out


def world_positions(c: CompiledFigure, poses: Array, dtype: type = np.float64, out: Array | None = None) -> Array:
    """World positions (F, N, 3) of every node's frame origin, in ``dtype`` (float64, or float32 to halve the
    output), computed in chunks of :data:`CHUNK_FRAMES` frames; written into ``out`` (and returned) when given,
    so a caller reusing one buffer skips the page faults of a fresh F × N × 3 array."""
    if out is not None:
        out = positions_out(c, np.shape(poses)[0], dtype, out)
    fast = world_positions_chunked(c, poses, dtype, out=out)
    if fast is not None:
        return fast
    M, _, _ = forward(c, poses)
    if out is None:
        return np.ascontiguousarray(M[c.row, :, 3].transpose(2, 0, 1), dtype=dtype)
    out[...] = M[c.row, :, 3].transpose(2, 0, 1)
    return out


def dof_frames(c: CompiledFigure, poses: Array) -> tuple[Array, Array, Array]:
    """(M, r, a) frame-last: world frames [R | p] (N, 3, 4, F) in internal row order (see ``c.row``) and,
    per DOF, world origin r (D, 3, F) and axis a (D, 3, F)."""
    M, r, a = forward(c, poses, with_dof_frames=True)
    assert r is not None and a is not None
    return M, r, a
