"""An IK problem: effectors, targets, weights, the movable set and its limits, compiled once.

The sub-chain is compiled once per solve: only the nodes on the paths root → effector(s) are
kept, and every DOF outside the movable set is frozen into the constant transform between two
movable DOFs. What is left is a tree of *links*, one per movable DOF:

    M_k = M_parent(k) · C_k · E_k(θ_k),     effector e:  M_e = M_link(e) · C_e

with C_k a constant rigid transform (arcs' L and frozen DOFs folded together). Forward kinematics
of the chain is then one 4×4 product per link, vectorised over a batch of B problems.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit import jit
from animkit.errors import AnimkitError, IKError, unknown_name
from animkit.ik import cones_jit
from animkit.model.chains import dof_indices
from animkit.model.figure import Figure
from animkit.model.joints import Cone, Joint, cone_axis_from_child, project_euler_to_cone
from animkit.model.transforms import matrix_from_euler_intrinsic

__all__ = ["ChainModel", "ChainBuffers", "ConeLink", "compile_chain", "movable_dofs", "parse_targets", "all_rigid",
           "Frames", "elbow_link"]

Array = NDArray[np.float64]
Index = NDArray[np.intp]
CONE_ROWS_JIT, CONE_ROWS_WARM = 3000, 4  # cone-rows from which the compiled projection repays numba's start-up, and
# its loading once numba is up (NumPy: 1–3 ms a cone-row, mostly small-array overhead; compiled: microseconds)


def _skew(a: Array) -> Array:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


@dataclass(frozen=True)
class ConeLink:
    """A ball joint with a :class:`~animkit.model.joints.Cone` (its own, or its rig's limit) whose three rotation DOFs
    are the chain's links ``links`` (in the joint's DOF order); ``axis`` is its twist axis t in the joint's frame
    (resolved); ``rest`` the turn of those DOFs at rest (the reference a cone without one is measured from)."""

    joint: Joint
    links: tuple[int, int, int]
    axis: Array
    cone: Cone
    rest: Array

    def project(self, values: Array) -> Array:
        """The joint's angles (b, 3) moved into the cone (:func:`~animkit.model.joints.project_euler_to_cone`)."""
        assert self.joint.order is not None
        return project_euler_to_cone(values, self.joint.order, self.cone, self.rest)

    def defines(self, offset: Array) -> bool:
        """Whether the child bone at ``offset`` (from the joint's origin, in its node's frame) is the one the cone's
        axis follows: A_ref ô ∥ t."""
        n = float(np.linalg.norm(offset))
        ref = self.rest if self.cone.reference is None else np.asarray(self.cone.reference)
        return n > 1e-12 and float(self.axis @ (ref @ offset)) / n > 1.0 - 1e-9

    def clamp_direction(self, J: Array, direction: Array) -> Array:
        """A unit child direction (b, 3) pulled along its great circle into the cone of half-angle σ about
        t_w = J t (J (b, 3, 3): the joint's frame before its turn): t_w cos σ + n sin σ where it lies outside
        (σ: the cone's largest swing; the exact shape is :meth:`project`'s)."""
        sw = self.cone.swing
        tw = J @ self.axis
        c = np.sum(tw * direction, axis=1, keepdims=True)
        n = direction - tw * c
        nn = np.linalg.norm(n, axis=1, keepdims=True)
        out = c < math.cos(sw)
        inside_dir = np.where(nn > 1e-12, n / np.maximum(nn, 1e-300), 0.0)
        return np.where(out & (nn > 1e-12), tw * math.cos(sw) + inside_dir * math.sin(sw), direction)


@dataclass(frozen=True)
class ChainModel:
    """The movable sub-chain as flat arrays: links (one per movable DOF on a path) and effectors."""

    figure: Figure
    dofs: Index  # (n,) pose index of each link's DOF
    parent: Index  # (n,) parent link, −1 for the world
    revolute: NDArray[np.bool_]  # (n,)
    axis: Array  # (n, 3) in the link's own frame (E_k keeps it fixed)
    H0: Array  # (n, 4, 4) C_k (revolute: its rotation part times I; the constant part of C_k E_k(θ))
    H1: Array  # (n, 4, 4) C_k [a]_× (revolute) — coefficient of sin θ
    H2: Array  # (n, 4, 4) C_k [a]_×² (revolute) — coefficient of 1 − cos θ
    H3: Array  # (n, 4, 4) translation column R_C a (prismatic) — coefficient of θ
    lower: Array  # (n,)
    upper: Array  # (n,)
    effectors: tuple[str, ...]
    eff_link: Index  # (E,) the last link above each effector
    eff_C: Array  # (E, 4, 4) constant transform from that link to the effector
    eff_mask: NDArray[np.bool_]  # (E, n) links on each effector's path
    base_link: Index  # (E,) first link on each effector's path
    reach: Array  # (E,) an upper bound on |effector − base origin|
    link_node: tuple[str, ...]  # (n,) node whose arc carries each link's DOF
    cones: tuple[ConeLink, ...] = ()  # ball joints with a swing–twist cone on the chain
    memo: dict[str, object] = field(init=False, default_factory=dict, repr=False, compare=False)
    # what the solvers derive from the chain once (lm's array layout, the relaxed-limits twin), kept with it

    @property
    def n(self) -> int:
        return int(self.dofs.shape[0])

    def project_cones(self, q: Array, iterated: bool = False) -> Array:
        """q (B, n) with every coned ball joint's angles moved into its cone (a copy; q itself when there are none).
        Every solver applies it after each step, so a cone holds for all of them (docs/derivations.md).

        ``iterated``: the caller projects once per step of a long iterated solve (a task stack's: the natural
        solver's thousands of steps a bake), so the compiled projection runs wherever kernels do, from the first
        call, whatever this process ran before. Its angles differ from NumPy's in the last bits, and an iterated
        solve carries such a difference into its discrete choices (a paced bake's length): chosen by the
        process's history (:func:`animkit.jit.pays`' ready and warm rules), the first natural reach on CMU's
        skeleton ran its first 149 projections in NumPy and ended 12 frames long, every later one 13, 0.26 rad
        apart."""
        if not self.cones:
            return q
        out = np.array(q, dtype=float, order="C")  # C always: the kernel compiles for one layout (F was a second)
        work = CONE_ROWS_JIT if iterated else len(q) * len(self.cones)  # iterated: work enough whatever the history
        if jit.pays(cones_jit.project_rows, work, CONE_ROWS_JIT, None if iterated else CONE_ROWS_WARM):
            arrays = self.memo.get("cones")
            if not isinstance(arrays, cones_jit.Cones):
                arrays = self.memo["cones"] = cones_jit.cone_arrays(self.cones, self.axis)
            cones_jit.project_rows(out, arrays)  # the same turns, its angles by Newton from q's (the tests' check)
            return out
        for c in self.cones:
            idx = list(c.links)
            out[:, idx] = c.project(q[:, idx])
        return out

    @functools.cached_property
    def Hs(self) -> Array:
        """(n, K, 20): per link the 4×5 blocks [H_j | h_j] that :meth:`forward` weighs by [1, sin θ, 1 − cos θ(, θ)]
        (K = 4 with a prismatic link, else 3); h_0 = R_C a (E_k keeps a fixed), h_1 = h_2 = h_3 = 0."""
        n, K = self.n, 4 if bool((~self.revolute).any()) else 3
        Hs = np.zeros((n, K, 4, 5))
        Hs[:, 0, :, :4], Hs[:, 1, :, :4], Hs[:, 2, :, :4] = self.H0, self.H1, self.H2
        if K == 4:
            Hs[:, 3, :, :4] = self.H3
        Hs[:, 0, :3, 4] = np.einsum("kij,kj->ki", self.H0[:, :3, :3], self.axis)
        return np.ascontiguousarray(Hs.reshape(n, K, 20))  # writeable: the compiled loops' records take it as is

    @functools.cached_property
    def parents(self) -> tuple[int, ...]:
        """``parent`` as Python ints (the FK loop indexes with them)."""
        return tuple(int(p) for p in self.parent)

    @functools.cached_property
    def _eff_Cn(self) -> Array:
        return self.eff_C[:, None]  # (E, 1, 4, 4): broadcast over the batch

    def buffers(self, B: int) -> ChainBuffers:
        """Work arrays of :meth:`forward` for up to B problems, reused by a solver's loop (fresh large arrays on
        every call cost page faults that tripled its time at B = 500)."""
        K = self.Hs.shape[1]
        basis = np.empty((self.n, B, K))
        basis[:, :, 0] = 1.0
        return ChainBuffers(basis, np.empty((self.n, B, 20)), np.empty((self.n, B, 4, 5)))

    def forward(self, q: Array, buf: ChainBuffers | None = None) -> tuple[Array, Array, Array, Array]:
        """M_k = M_parent(k) · C_k · E_k(θ_k) for q (b, n), link-major: frames [M_k | a_k] (n, b, 4, 5) with the
        world DOF axis a_k = R_k a appended, DOF origins r (n, b, 3) (before a prismatic DOF acts) and axes a
        (n, b, 3), effector frames (b, E, 4, 4).

        C_k E_k(θ) = [1, sin θ, 1 − cos θ(, θ)] · :attr:`Hs` for all links as one product, then one 4×4 · 4×5
        product per link. The one NumPy FK of a chain (:meth:`frames`, :mod:`.lm`'s loop); ``buf`` from
        :meth:`buffers` (views of it are returned: the next call overwrites them).
        """
        b, n = q.shape
        buf = self.buffers(b) if buf is None else buf
        qt = q.T
        basis = buf.basis[:, :b]
        np.sin(qt, out=basis[:, :, 1])
        np.cos(qt, out=basis[:, :, 2])
        np.subtract(1.0, basis[:, :, 2], out=basis[:, :, 2])
        pris = basis.shape[2] == 4
        if pris:
            basis[:, :, 3] = qt
        mm = np.matmul
        loc = mm(basis, self.Hs, out=buf.loc[:, :b]).reshape(n, b, 4, 5)
        T = buf.T[:, :b]
        for k, pk in enumerate(self.parents):
            if pk < 0:
                T[k] = loc[k]
            else:
                mm(T[pk, :, :, :4], loc[k], out=T[k])
        a = T[:, :, :3, 4].copy()
        r = T[:, :, :3, 3].copy()
        if pris:
            r -= a * (qt * ~self.revolute[:, None])[:, :, None]
        Eff = mm(T[self.eff_link, :, :, :4], self._eff_Cn).transpose(1, 0, 2, 3)
        return T, r, a, Eff

    def frames(self, q: Array) -> Frames:
        """World frames of links and effectors for chain values q (B, n) (:meth:`forward`, batch-major)."""
        T, r, a, E = self.forward(q)
        return Frames(T[..., :4], r.transpose(1, 0, 2), a.transpose(1, 0, 2), E[:, :, :3, 3], E[:, :, :3, :3])

    def frames_one(self, q: Array) -> tuple[Array, Array, Array, Array]:
        """:meth:`frames` of one configuration q (n,): the effectors' rotations (E, 3, 3) and positions (E, 3), the
        DOF origins r and axes a (n, 3); by the C extension's ``chain_fk`` where it is built (the same products in
        one call: within ~1e-16 of NumPy's, whose BLAS sums in its own order), else :meth:`frames`."""
        fn = getattr(jit.native_kernels(), "chain_fk", None)
        if fn is None:
            fr = self.frames(np.asarray(q, dtype=float)[None])
            return fr.R[0], fr.p[0], fr.r[0], fr.a[0]
        got = self.memo.get("chain_fk")
        if got is None:
            got = self.memo["chain_fk"] = (np.ascontiguousarray(self.parent, dtype=np.int64),
                                           np.ascontiguousarray(self.revolute, dtype=np.uint8),
                                           np.ascontiguousarray(self.eff_link, dtype=np.int64),
                                           np.ascontiguousarray(self.eff_C, dtype=np.float64))
        parent, rev, eff, C = cast("tuple[Array, Array, Array, Array]", got)
        n, E = self.n, len(eff)
        T, r, a, M = np.empty((n, 4, 5)), np.empty((n, 3)), np.empty((n, 3)), np.empty((E, 4, 4))
        Hs = self.Hs
        fn(np.ascontiguousarray(q, dtype=np.float64), Hs, parent, rev, eff, C, T, r, a, M, n, Hs.shape[1], E)
        return M[:, :3, :3], M[:, :3, 3], r, a


@dataclass(frozen=True)
class ChainBuffers:
    """Work arrays of :meth:`ChainModel.forward` for up to B problems: basis (n, B, K), C_k E_k (n, B, 20), frames
    (n, B, 4, 5)."""

    basis: Array
    loc: Array
    T: Array


@dataclass(frozen=True)
class Frames:
    """World frames of a chain: links T (n, B, 4, 4), DOF origins r and axes a (B, n, 3), effectors."""

    T: Array
    r: Array
    a: Array
    p: Array  # (B, E, 3) effector positions
    R: Array  # (B, E, 3, 3) effector rotations


def movable_dofs(figure: Figure, chain: str | Iterable[str] | None, effectors: Sequence[str]) -> Index:
    """Pose indices of the movable set (chain names of the figure's rig, joint/node/DOF names, or None = root →
    effectors).

    Scale DOFs (glTF) never move in IK: they are left out of every movable set.
    """
    scale = figure.compiled.dof_scale
    return np.array([i for i in _movable_dofs(figure, chain, effectors) if not scale[i]], dtype=np.intp)


def _movable_dofs(figure: Figure, chain: str | Iterable[str] | None, effectors: Sequence[str]) -> Index:
    try:
        return dof_indices(figure, chain, effector=effectors)  # the one resolver; IKError for IK's callers
    except AnimkitError as exc:
        raise IKError(str(exc)) from None


def check_effectors(figure: Figure, effector: str | Sequence[str]) -> tuple[str, ...]:
    given = (effector,) if isinstance(effector, str) else tuple(effector)
    if not given:
        raise IKError("expected at least one effector node name, got none")
    nodes: list[str] = []
    for e in given:
        if not isinstance(e, str):
            raise IKError(unknown_name("effector", str(e), list(figure.rig.effectors) + figure.node_names))
        try:
            nodes.append(figure.effector(e))
        except AnimkitError as exc:
            raise IKError(str(exc)) from None
    names = tuple(nodes)
    if len(set(names)) != len(names):
        raise IKError(f"effectors repeat: {list(names)}")
    return names


def compile_chain(figure: Figure, pose: Array, movable: Index, effectors: Sequence[str],
                  chain_label: str = "the movable set") -> ChainModel:
    """Fold everything outside ``movable`` at ``pose`` into constants; one link per movable DOF on a path."""
    c = figure.compiled
    index = {n: i for i, n in enumerate(c.node_names)}
    on_path: set[int] = set()
    for e in effectors:
        i = index[e]
        while i >= 0:
            on_path.add(i)
            i = int(c.parent[i])
    mov = set(int(d) for d in movable)
    dofs_of: dict[int, list[int]] = {}
    for d, node in enumerate(c.dof_node):
        dofs_of.setdefault(int(node), []).append(d)
    state: dict[int, tuple[int, Array]] = {}
    links: list[tuple[int, Array, int]] = []  # (parent link, C, dof)
    for i in sorted(on_path):  # traversal order: parents first
        pi = int(c.parent[i])
        k, C = (-1, np.eye(4)) if pi < 0 else state[pi]
        C = C @ c.L[i]
        for d in dofs_of.get(i, []):
            if d in mov:
                links.append((k, C, d))
                k, C = len(links) - 1, np.eye(4)
            else:
                C = C @ _dof_matrix(c.dof_revolute[d], c.dof_axis[d], float(pose[d]), bool(c.dof_scale[d]))
        state[i] = (k, C)
    n = len(links)
    eff_link = np.array([state[index[e]][0] for e in effectors], dtype=np.intp)
    for e, k in zip(effectors, eff_link, strict=True):
        if k < 0:
            raise IKError(f"{chain_label} cannot move effector {e!r}: no movable DOF lies on the path from the "
                          f"root to {e!r} (joints on that path: {[a.joint.name for a in figure.path_to(e)]})")
    parent = np.array([p for p, _, _ in links], dtype=np.intp)
    dofs = np.array([d for _, _, d in links], dtype=np.intp)
    rev = np.array([bool(c.dof_revolute[d]) for d in dofs], dtype=bool)
    axis = np.array([c.dof_axis[d] for d in dofs], dtype=float).reshape(n, 3)
    H0 = np.zeros((n, 4, 4))
    H1 = np.zeros((n, 4, 4))
    H2 = np.zeros((n, 4, 4))
    H3 = np.zeros((n, 4, 4))
    for k, (_, C, _) in enumerate(links):
        H0[k] = C
        if rev[k]:
            K = _skew(axis[k])
            H1[k, :3, :3] = C[:3, :3] @ K
            H2[k, :3, :3] = C[:3, :3] @ K @ K
        else:
            H3[k, :3, 3] = C[:3, :3] @ axis[k]
    eff_C = np.stack([state[index[e]][1] for e in effectors])
    E = len(effectors)
    mask = np.zeros((E, n), dtype=bool)
    for j, k in enumerate(eff_link):
        while k >= 0:
            mask[j, k] = True
            k = parent[k]
    base = np.array([int(np.flatnonzero(mask[j])[0]) for j in range(E)], dtype=np.intp)
    lower = c.lower[dofs].copy()
    upper = c.upper[dofs].copy()
    reach = np.zeros(E)
    for j in range(E):
        total = float(np.linalg.norm(eff_C[j, :3, 3]))
        for k in map(int, np.flatnonzero(mask[j])):
            if k != base[j]:
                total += float(np.linalg.norm(H0[k, :3, 3]))
            if not rev[k]:
                total += max(abs(lower[k]), abs(upper[k]))
        reach[j] = total if math.isfinite(total) else math.inf
    link_node = tuple(c.node_names[int(c.dof_node[d])] for d in dofs)
    cones = _cone_links(figure, dofs, on_path, index)
    return ChainModel(figure, dofs, parent, rev, axis, H0, H1, H2, H3, lower, upper, tuple(effectors), eff_link,
                      eff_C, mask, base, reach, link_node, cones)


def _cone_links(figure: Figure, dofs: Index, on_path: set[int], index: dict[str, int]) -> tuple[ConeLink, ...]:
    """The coned ball joints on the paths: all three DOFs movable (a cone constrains the whole turn), or none."""
    c = figure.compiled
    link_of = {int(d): k for k, d in enumerate(dofs)}
    out = []
    rig_limits = figure.rig.limits
    for arc in figure.arcs():
        j = arc.joint
        if index[arc.child.name] not in on_path:
            continue
        cone = j.cone
        if cone is None and j.name in rig_limits and not any(
                math.isfinite(d.lower) or math.isfinite(d.upper) for d in j.dofs):
            cone = rig_limits[j.name]  # the rig's default range (a humanoid's anatomy); the joint's own limits win
            rot = [d for d in j.dofs if d.kind == "revolute"]
            pose_idx = [figure.dof_index(d.name) for d in rot]
            if j.order is None or len(rot) != 3 or not all(i in link_of for i in pose_idx):
                continue  # a default applies only where IK turns the whole joint
        elif cone is None:
            continue
        else:
            rot = list(j.dofs)
        pose_idx = [figure.dof_index(d.name) for d in rot]
        moving = [i in link_of for i in pose_idx]
        if not any(moving):
            continue
        if not all(moving):
            raise IKError(f"joint {j.name!r} has a cone, which limits its whole turn: move all of its DOFs "
                          f"{[d.name for d in j.dofs]} or none (movable here: "
                          f"{[d.name for d, m in zip(j.dofs, moving, strict=True) if m]})")
        assert j.order is not None
        rest = matrix_from_euler_intrinsic(np.array([d.rest for d in rot]), j.order)
        axis = cone.axis
        if axis is None:
            kids = [int(i) for i in np.flatnonzero(c.parent == index[arc.child.name])]
            if len(kids) != 1:
                raise IKError(f"joint {j.name!r}: its cone has no axis and its node has {len(kids)} children; give "
                              f"Cone(axis=...)")
            axis = cone_axis_from_child(j, c.L[kids[0]][:3, 3])
        out.append(ConeLink(j, (link_of[pose_idx[0]], link_of[pose_idx[1]], link_of[pose_idx[2]]),
                            np.asarray(axis, dtype=float), cone, rest))
    return tuple(out)


def _dof_matrix(revolute: bool, axis: Array, value: float, scale: bool = False) -> Array:
    M = np.eye(4)
    if scale:
        M[:3, :3] += (value - 1.0) * np.outer(axis, axis)
    elif revolute:
        K = _skew(axis)
        M[:3, :3] += math.sin(value) * K + (1.0 - math.cos(value)) * (K @ K)
    else:
        M[:3, 3] = axis * value
    return M


def _rigid(a: Array) -> bool:
    """R Rᵀ ≈ I (np.allclose with atol 1e-6), det R ≥ 0 and last row ≈ 0 0 0 1 (atol 1e-9), in Python floats:
    np.allclose costs ~15 µs per call, a noticeable share of a whole solve."""
    (r0, r1, r2, last) = a.tolist()
    rows = (r0[:3], r1[:3], r2[:3])
    for i in range(3):
        for j in range(3):
            g = rows[i][0] * rows[j][0] + rows[i][1] * rows[j][1] + rows[i][2] * rows[j][2]
            ref = 1.0 if i == j else 0.0
            if not abs(g - ref) <= 1e-6 + 1e-5 * ref:
                return False
    det = (r0[0] * (r1[1] * r2[2] - r1[2] * r2[1]) - r0[1] * (r1[0] * r2[2] - r1[2] * r2[0])
           + r0[2] * (r1[0] * r2[1] - r1[1] * r2[0]))
    if det < 0:
        return False
    return all(abs(x - ref) <= 1e-9 + 1e-5 * abs(ref) for x, ref in zip(last, (0.0, 0.0, 0.0, 1.0), strict=True))


def all_rigid(T: Array) -> bool:
    """:func:`_rigid`'s test on every 4×4 of T (..., 4, 4) at once: R Rᵀ ≈ I (|g − δ| ≤ 1e-6 + 1e-5 δ), det R ≥ 0,
    last row ≈ 0 0 0 1 (≤ 1e-9 + 1e-5 |·|); the 3×3 products written out on rows of (9, N) (batched matmul and
    LAPACK's det cost ~4× more on many small matrices)."""
    a0, a1, a2, b0, b1, b2, c0, c1, c2 = np.ascontiguousarray(T[..., :3, :3].reshape(-1, 9).T)
    diag = np.stack([a0 * a0 + a1 * a1 + a2 * a2, b0 * b0 + b1 * b1 + b2 * b2, c0 * c0 + c1 * c1 + c2 * c2])
    off = np.stack([a0 * b0 + a1 * b1 + a2 * b2, a0 * c0 + a1 * c1 + a2 * c2, b0 * c0 + b1 * c1 + b2 * c2])
    det = a0 * (b1 * c2 - b2 * c1) - a1 * (b0 * c2 - b2 * c0) + a2 * (b0 * c1 - b1 * c0)
    last = T[..., 3, :].reshape(-1, 4)
    return bool(np.all(np.abs(diag - 1.0) <= 1e-6 + 1e-5) and np.all(np.abs(off) <= 1e-6) and np.all(det >= 0.0)
                and np.all(np.abs(last[:, :3]) <= 1e-9) and np.all(np.abs(last[:, 3] - 1.0) <= 1e-9 + 1e-5))


def parse_targets(target: ArrayLike | Sequence[ArrayLike], count: int) -> tuple[Array, Array | None]:
    """Targets for ``count`` effectors: positions (E, 3) and rotations (E, 3, 3) or None (position only).

    Each target is a 3-vector (position) or a 4×4 homogeneous matrix (position and orientation);
    with several effectors, a sequence of them, all of one kind.
    """
    items: list[ArrayLike]
    if count == 1:
        items = [target]  # type: ignore[list-item]
    else:
        if isinstance(target, np.ndarray) and target.shape[:1] == (count,) or \
                isinstance(target, (list, tuple)) and len(target) == count:
            items = list(target)
        else:
            raise IKError(f"expected {count} targets (one per effector), got {target!r}")
    pos: list[NDArray[np.float64]] = []
    rot: list[NDArray[np.float64] | None] = []
    for t in items:
        try:
            a = np.asarray(t, dtype=float)
        except (TypeError, ValueError):
            raise IKError(f"a target must be a 3-vector or a 4x4 matrix of numbers, got {t!r}") from None
        if not np.all(np.isfinite(a)):
            raise IKError(f"target holds NaN/inf: {a.tolist()}")
        if a.shape == (3,):
            pos.append(a)
            rot.append(None)
        elif a.shape == (4, 4):
            R = a[:3, :3]
            if not _rigid(a):
                raise IKError("a 4x4 target must be rigid: orthonormal rotation with det +1 and last row 0 0 0 1")
            pos.append(a[:3, 3].copy())
            rot.append(R.copy())
        else:
            raise IKError(f"a target must have shape (3,) (position) or (4, 4) (pose), got {a.shape}")
    kinds = {r is None for r in rot}
    if len(kinds) > 1:
        raise IKError("targets must be all positions (3,) or all poses (4, 4), not a mix")
    P = np.stack(pos)
    R6 = None if rot[0] is None else np.stack([r for r in rot if r is not None])
    return P, R6


def elbow_link(model: ChainModel) -> int:
    """The joint the pole bends: on effector 0's path, the joint farthest (along the chain) from both ends."""
    links = [int(k) for k in np.flatnonzero(model.eff_mask[0])]
    along = np.cumsum([0.0] + [float(np.linalg.norm(model.H0[k, :3, 3])) for k in links[1:]])
    total = along[-1] + float(np.linalg.norm(model.eff_C[0, :3, 3]))
    best, score = -1, 0.0
    for k, s in zip(links, along, strict=True):
        if model.link_node[k] == model.link_node[links[0]]:
            continue
        sc = min(s, total - s)
        if sc > score + 1e-12:
            best, score = k, sc
    if best < 0:
        raise IKError(f"a pole needs a chain with an elbow/knee: a joint between the base "
                      f"{model.link_node[links[0]]!r} and effector {model.effectors[0]!r}")
    return best
