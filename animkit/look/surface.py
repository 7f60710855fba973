"""A figure's surface as points, each owned by one node: a character's meshes, else its drawn geometry.

    x_v(f) = Σ_k w_vk · W_f[j_vk] · IBM_j · v   (skinned)      W_f[node] · v   (rigid)      W_f[owner] · T · v   (drawn)

    h_G(f) = min_{v owned by G} ⟨x_v(f), up⟩   (the lowest point of the node group G at frame f)

What the eye sees touch the ground is the surface, not a joint centre: the skinned mesh where the scene has one
(:meth:`animkit.look.mesh.Mesh.positions`), else the drawn geometry (:func:`animkit.look.drawn.figure_mesh`: capsules,
boxes; for a bare skeleton the capsule bones it draws). A skinned vertex belongs to the joint with its largest weight.
Motion measures (:mod:`animkit.motion.measures`) and foot locking (:mod:`animkit.motion.root_motion`) read heights from
here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from animkit import jit
from animkit.look import skin as lbs
from animkit.look.drawn import figure_mesh
from animkit.look.mesh import Mesh
from animkit.model.figure import Figure
from animkit.recent import Recent

__all__ = ["BodySurface", "body_surface", "descendants", "lowest_about", "lowest_along"]

Array = NDArray[np.float64]
Index = NDArray[np.intp]

#: Frames per chunk when skinning for heights (bounds memory: chunk × vertices × 3 floats).
CHUNK = 256


@dataclass(frozen=True, eq=False)
class _Part:
    """Points skinned to joints: rest (V, 3), ``joints``/``weights`` (V, K) into ``joint_index`` (J,) (node rows)
    with bind matrices ``bind`` (J, 4, 4); ``table`` the dense influence table (V, 4J) when it is small enough."""

    owner: Index
    rest: Array
    joints: Index
    weights: Array
    joint_index: Index
    bind: Array
    table: Array | None

    @staticmethod
    def of(owner: Index, rest: Array, joints: Index, weights: Array, joint_index: Index, bind: Array) -> _Part:
        table = lbs.influence_table(rest, joints, weights, len(joint_index), True)
        return _Part(owner, rest, joints, weights, joint_index, bind, table)

    def select(self, keep: Index | None) -> Index | slice:
        return slice(None) if keep is None else np.flatnonzero(np.isin(self.owner, keep))

    def positions(self, W: Array, sel: Index | slice) -> Array:
        S = lbs.joint_matrices(W, self.joint_index, self.bind)
        if self.table is not None:
            return lbs.positions_from_table(self.table[sel], S)
        return lbs.skin_positions(S, self.rest[sel], self.joints[sel], self.weights[sel])

    def heights(self, W: Array, sel: Index | slice, up: int) -> Array:
        """(F, V') the ``up`` coordinate only: one matrix product X · S_up when the table exists."""
        if self.table is None:
            return self.positions(W, sel)[..., up]
        S = lbs.joint_matrices(W, self.joint_index, self.bind)[:, :, up, :]  # (F, J, 4)
        F, J = S.shape[:2]
        return (self.table[sel] @ S.transpose(1, 2, 0).reshape(J * 4, F)).T

    def sub_table(self, sel: Index | slice) -> tuple[Array, Index] | None:
        """The table's rows ``sel`` restricted to the joints that move them: (X', used joints), None without a
        table (a foot's points hang on 2–4 of a character's joints: the product then costs a fraction)."""
        if self.table is None:
            return None
        X = self.table[sel]
        J = len(self.joint_index)
        used = np.flatnonzero(np.abs(X.reshape(X.shape[0], J, 4)).sum(axis=(0, 2)) > 0)
        return X.reshape(X.shape[0], J, 4)[:, used].reshape(X.shape[0], 4 * used.size), used

    def sub_positions(self, W: Array, sub: tuple[Array, Index]) -> Array:
        """(F, V', 3) as :meth:`positions`, from :meth:`sub_table`'s restricted table."""
        X, used = sub
        return lbs.positions_from_table(X, lbs.joint_matrices(W, self.joint_index[used], self.bind[used]))

    def sub_points(self, W: Array, sub: tuple[Array, Index]) -> Array:
        """(V', F, 3) point-major, C-ordered: :meth:`sub_positions`' values as the table's product leaves them."""
        X, used = sub
        S = lbs.joint_matrices(W, self.joint_index[used], self.bind[used])
        F, J = S.shape[:2]
        return (X @ S[:, :, :3, :].transpose(1, 3, 0, 2).reshape(J * 4, F * 3)).reshape(-1, F, 3)

    def sub_heights(self, W: Array, sub: tuple[Array, Index], up: int) -> Array:
        """(F, V') as :meth:`heights`, from :meth:`sub_table`'s restricted table."""
        X, used = sub
        S = np.matmul(W[:, self.joint_index[used], up, None, :], self.bind[used])[:, :, 0]  # (F, J', 4): W · IBM's
        # row ``up``
        F, J = S.shape[:2]
        return (X @ S.transpose(1, 2, 0).reshape(J * 4, F)).T


@dataclass(frozen=True, eq=False)
class BodySurface:
    """Surface points of a figure: ``owner`` (V,) node index of each point; ``kind`` says where they came from."""

    kind: Literal["mesh", "drawn"]
    owner: Index
    parts: tuple[_Part, ...]
    _subs: dict[tuple[int, bytes], tuple[Index | slice, tuple[Array, Index] | None]] = field(
        default_factory=dict, repr=False)

    @property
    def point_count(self) -> int:
        return int(self.owner.shape[0])

    def positions(self, W: Array, nodes: Sequence[int] | None = None) -> Array:
        """World positions (F, V', 3) of the points owned by ``nodes`` (all when None), in ``owner`` order."""
        W = _frames(W)
        keep = None if nodes is None else np.asarray(sorted(set(nodes)), dtype=np.intp)
        out = []
        for i, part in enumerate(self.parts):
            sel, sub = self._sub(i, part, keep)
            if _size(sel, part):  # a group's points skinned by the joints that move them only
                out.append(part.sub_positions(W, sub) if sub is not None else part.positions(W, sel))
        return np.concatenate(out, axis=1) if out else np.zeros((W.shape[0], 0, 3))

    def points(self, W: Array, nodes: Sequence[int]) -> Array:
        """:meth:`positions` point-major: (V', F, 3) C-ordered, the same values (for :func:`lowest_about`)."""
        W = _frames(W)
        keep = np.asarray(sorted(set(nodes)), dtype=np.intp)
        out = []
        for i, part in enumerate(self.parts):
            sel, sub = self._sub(i, part, keep)
            if _size(sel, part):
                out.append(part.sub_points(W, sub) if sub is not None
                           else np.ascontiguousarray(part.positions(W, sel).transpose(1, 0, 2)))
        if len(out) == 1:
            return out[0]
        return np.concatenate(out, axis=0) if out else np.zeros((0, W.shape[0], 3))

    def movers(self, nodes: Sequence[int]) -> list[int]:
        """The nodes whose world matrices the points owned by ``nodes`` are skinned by (what :meth:`positions`,
        :meth:`points` and :meth:`lowest` read of W for them)."""
        keep = np.asarray(sorted(set(nodes)), dtype=np.intp)
        out: set[int] = set()
        for i, part in enumerate(self.parts):
            sel, sub = self._sub(i, part, keep)
            if _size(sel, part):
                out.update(part.joint_index[sub[1] if sub is not None else np.unique(part.joints[sel])].tolist())
        return sorted(out)

    def _sub(self, i: int, part: _Part, keep: Index | None) -> tuple[Index | slice, tuple[Array, Index] | None]:
        """The points of ``keep``'s nodes in part ``i`` and their restricted table (:meth:`_Part.sub_table`), found
        once per group."""
        key = (i, b"" if keep is None else keep.tobytes())
        if key not in self._subs:
            sel = part.select(keep)
            self._subs[key] = (sel, part.sub_table(sel) if _size(sel, part) else None)
        return self._subs[key]

    def lowest(self, W: Array, up: int, groups: Sequence[Sequence[int]] | None = None) -> Array:
        """h_G(f): (F, G) the lowest height (coordinate ``up``) of each group's points; one group of all when None.

        A group that owns no point gets NaN. Frames are taken ``CHUNK`` at a time.
        """
        W = _frames(W)
        F = W.shape[0]
        gs = [None] if groups is None else [np.asarray(sorted(set(g)), dtype=np.intp) for g in groups]
        out = np.full((F, len(gs)), np.nan)
        for j, keep in enumerate(gs):
            for i, part in enumerate(self.parts):
                sel, sub = self._sub(i, part, keep)  # a group's points and the joints that move them, found once
                if not _size(sel, part):
                    continue
                for s in range(0, F, CHUNK):
                    Wc = W[s:s + CHUNK]
                    h = (part.sub_heights(Wc, sub, up) if sub is not None else part.heights(Wc, sel, up)).min(axis=1)
                    out[s:s + CHUNK, j] = np.fmin(out[s:s + CHUNK, j], h)
        return out


def lowest_along(points: Array, d: Array) -> Array:
    """min_v ⟨p_fv, d_f⟩ (F,): the lowest of each frame's points ``points`` (F, V, 3), V ≥ 1, along ``d`` (F, 3) (a
    foot's surface about its ankle along a row of the foot's turn: how far its sole reaches below the ankle). Each dot
    product is (p₀d₀ + p₁d₁) + p₂d₂, NaN carried as ``np.min`` carries it; the C extension's ``lowest_along`` adds the
    same products in the same order in one pass (bit for bit) where it is built."""
    P = np.ascontiguousarray(points, dtype=np.float64)
    D = np.ascontiguousarray(d, dtype=np.float64)
    F, V = P.shape[0], P.shape[1]
    kernel = getattr(jit.native_kernels(), "lowest_along", None)
    if kernel is not None and V >= 1 and P.shape == (F, V, 3) and D.shape == (F, 3):
        out = np.empty(F)
        kernel(P, D, out, F, V)
        return out
    x = P[..., 0] * D[:, None, 0]
    x += P[..., 1] * D[:, None, 1]
    x += P[..., 2] * D[:, None, 2]
    return np.asarray(x.min(axis=1), dtype=float)


def lowest_about(points: Array, origin: Array, d: Array) -> Array:
    """min_v ⟨p_vf − o_f, d_f⟩ (F,) for points (V, F, 3) point-major (:meth:`BodySurface.points`), V ≥ 1, about
    ``origin`` (F, 3) along ``d`` (F, 3): :func:`lowest_along` of the points less their origin (a foot's surface about
    its ankle), the same differences and products; the C extension's ``lowest_about`` reads the points once in memory
    order and writes no difference (bit for bit) where it is built."""
    P = np.ascontiguousarray(points, dtype=np.float64)
    O = np.ascontiguousarray(origin, dtype=np.float64)
    D = np.ascontiguousarray(d, dtype=np.float64)
    V, F = P.shape[0], P.shape[1]
    kernel = getattr(jit.native_kernels(), "lowest_about", None)
    if kernel is not None and V >= 1 and P.shape == (V, F, 3) and O.shape == D.shape == (F, 3):
        out = np.empty(F)
        kernel(P, O, D, out, F, V)
        return out
    rel = np.empty((F, V, 3))
    np.subtract(P.transpose(1, 0, 2), O[:, None, :], out=rel)
    return lowest_along(rel, D)


@dataclass(frozen=True, eq=False)
class _Sole:
    """A foot's surface in a clip: its points (V, F, 3), point-major (:meth:`BodySurface.points`), and ankle (F, 3)."""

    points: Array
    ankle: Array
    last: list[tuple[Array, Array]] = field(default_factory=list, repr=False)  # (d, its result) of the latest call

    @property
    def count(self) -> int:
        return int(self.points.shape[0])

    def below(self, d: Array) -> Array:
        """min_v ⟨s_v(f), d_f⟩ (F,), s_v = the point about the ankle (:func:`lowest_about`), read-only; the latest
        call's result again for the same ``d`` (a lock pass and the check after it ask for the same turned foot)."""
        if self.last and np.array_equal(self.last[0][0], d):
            return self.last[0][1]
        out = lowest_about(self.points, self.ankle, d)
        out.flags.writeable = False
        self.last[:] = [(np.array(d, dtype=np.float64), out)]
        return out


def _frames(W: Array) -> Array:
    W = np.asarray(W, dtype=float)
    return W[None] if W.ndim == 3 else W


def _size(sel: Index | slice, part: _Part) -> int:
    return len(part.rest) if isinstance(sel, slice) else int(sel.size)


_BUILT: Recent[BodySurface] = Recent(8)  # surfaces built lately (:func:`body_surface`)


def body_surface(figure: Figure, meshes: Sequence[Mesh] = ()) -> BodySurface:
    """The figure's surface points: every vertex of ``meshes`` when given (a scene's ``meshes``), else the
    drawn geometry (:func:`animkit.look.drawn.figure_mesh`, capsule bones for a bare skeleton).

    Built once per input: meshes (frozen values with read-only arrays) by identity; a drawn surface by what
    :func:`~animkit.look.drawn.figure_mesh` reads (each node's data object and T, each arc's ends and L, the rest
    pose's world matrices), so an edited figure gets a new one. The surface is read-only to its callers."""
    key, held = _surface_key(figure, meshes)
    return _BUILT.fetch(key, held, lambda: _build_surface(figure, meshes))


def _surface_key(figure: Figure, meshes: Sequence[Mesh]) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """(key, the objects it names by identity) for :func:`body_surface`'s cache."""
    if meshes:
        return ("mesh", *(id(m) for m in meshes)), tuple(meshes)
    nodes = figure.nodes()
    arcs = figure.arcs()
    data = tuple(n.data for n in nodes)
    rest = figure.world_batch(figure.rest_pose()[None])[0]
    key = ("drawn", tuple(figure.node_names), tuple(id(d) for d in data),
           b"".join(np.ascontiguousarray(n.T, dtype=float).tobytes() for n in nodes),
           tuple((None if a.parent is None else a.parent.name, a.child.name) for a in arcs),
           b"".join(np.ascontiguousarray(a.L, dtype=float).tobytes() for a in arcs),
           np.ascontiguousarray(rest).tobytes(), float(figure.size()))
    return key, data


def _build_surface(figure: Figure, meshes: Sequence[Mesh]) -> BodySurface:
    parts: list[_Part] = []
    one = np.ones((1, 1))
    for m in meshes:
        rest = np.asarray(m.rest_positions, dtype=float)
        if m.skin is not None:
            assert m.joints is not None and m.weights is not None
            joints = np.asarray(m.joints, dtype=np.intp)
            top = joints[np.arange(m.vertex_count), np.argmax(m.weights, axis=1)]
            parts.append(_Part.of(np.asarray(m.skin.joint_index[top], dtype=np.intp), rest, joints,
                                  lbs.normalized_weights(np.asarray(m.weights)),
                                  np.asarray(m.skin.joint_index, dtype=np.intp), np.asarray(m.skin.inverse_bind)))
        else:
            V = m.vertex_count
            parts.append(_Part.of(np.full(V, m.node_index, dtype=np.intp), rest, np.zeros((V, 1), dtype=np.intp),
                                  np.broadcast_to(one, (V, 1)).copy(), np.array([m.node_index], dtype=np.intp),
                                  np.eye(4)[None]))
    if parts:
        return BodySurface("mesh", np.concatenate([p.owner for p in parts]), tuple(parts))
    fm = figure_mesh(figure)
    N = len(figure.node_names)
    owner = np.asarray(fm.owner, dtype=np.intp)
    part = _Part.of(owner, np.asarray(fm.vertices, dtype=float), owner[:, None], np.ones((len(owner), 1)),
                    np.arange(N, dtype=np.intp), np.broadcast_to(np.eye(4), (N, 4, 4)).copy())
    return BodySurface("drawn", owner, (part,))


def descendants(figure: Figure, node: str) -> list[int]:
    """Node indices of ``node`` and everything below it (a foot: the ankle, its toes and their tips)."""
    names = figure.node_names
    out = [names.index(node)]
    todo = [a.child for a in figure.node(node).arcs()]
    while todo:
        n = todo.pop()
        out.append(names.index(n.name))
        todo.extend(a.child for a in n.arcs())
    return sorted(out)
