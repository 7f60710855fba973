"""Where a figure stands: its feet (:func:`feet_of`), its hip height (:func:`hip_height`: the hips above the
lowest point of the feet standing), the ground its feet find in a clip (:func:`ground_plane`,
:func:`ground_height`) and its surface's lowest point (:func:`lowest_surface`). Re-exported by
:mod:`animkit.motion.retarget`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from animkit.model.figure import Figure
from animkit.motion.retarget_map import _humanoid_of
from animkit.recent import Recent

if TYPE_CHECKING:
    from animkit.look.mesh import Mesh
    from animkit.scene import UpAxis

__all__ = ["up_index", "feet_of", "hip_height", "ground_plane", "ground_height", "lowest_surface"]

Array = NDArray[np.float64]


def _descendants(fig: Figure, name: str) -> list[str]:
    out: list[str] = []
    todo = [a.child for a in fig.node(name).arcs()]
    while todo:
        node = todo.pop()
        out.append(node.name)
        todo.extend(a.child for a in node.arcs())
    return out


def up_index(up: UpAxis) -> int:
    """The coordinate index of the up axis: 1 for "y", 2 for "z"."""
    return 1 if up == "y" else 2


def feet_of(fig: Figure) -> list[str]:
    """The nodes of the feet: each humanoid foot (:mod:`animkit.model.humanoid`) and every node below it (toes,
    tips)."""
    h = _humanoid_of(fig)
    out: list[str] = []
    for s in ("l", "r"):
        foot = h.get(f"foot_{s}")
        if foot is not None:
            out += [foot, *_descendants(fig, foot)]
    return out


def hip_height(fig: Figure, hips: str, up: UpAxis | None = None, pose: Array | None = None,
               feet: Sequence[str] | None = None) -> float:
    """h = height of ``hips`` above the lowest point of the feet (foot joints and the nodes below them) in a
    standing frame: ``pose`` (default the rest pose). The leg length, measured the same way on any humanoid;
    a figure without humanoid feet (a quadruped): above its lowest node. Found once per input (the compiled
    figure, ``hips``, up, the pose's values, ``feet``): a retarget and its lock ask for the same one several times."""
    up = fig.up if up is None else up
    P = fig.rest_pose() if pose is None else np.asarray(pose, dtype=float)
    c = fig.compiled
    key = (id(c), hips, up, P.shape, np.ascontiguousarray(P, dtype=float).tobytes(),
           None if feet is None else tuple(feet))

    def make() -> float:
        W = fig.world_batch(P[None])[0]
        k = up_index(up)
        names = fig.node_names
        low = (feet_of(fig) if feet is None else list(feet)) or names
        return float(W[names.index(hips), k, 3] - W[[names.index(n) for n in low], k, 3].min())

    return _HIP_HEIGHTS.fetch(key, (c,), make)


#: hip heights found lately (:func:`hip_height`), by compiled figure, hips, up, pose and feet
_HIP_HEIGHTS: Recent[float] = Recent(32)


def _source_feet_down(source: Figure, Ws: Array, k: int, hip: float) -> Array:
    """(F,) whether a source foot is down: the lowest joint of a foot (the foot and the nodes below it) within 4 %
    of ``hip`` of its own 5th percentile over the clip (the height rule of the motion measures' contacts, so that
    the target's feet are put on the ground over the frames its planted feet are measured on)."""
    h = _humanoid_of(source)
    names = source.node_names
    down = np.zeros(Ws.shape[0], dtype=bool)
    for side in ("l", "r"):
        foot = h.get(f"foot_{side}")
        if foot is None:
            continue
        low = Ws[:, [names.index(n) for n in (foot, *_descendants(source, foot))], k, 3].min(axis=1)
        down |= low <= np.percentile(low, 5.0) + 0.04 * hip
    if not down.any():
        low = _lowest_feet(source, Ws, k)[0]
        down = low <= np.percentile(low, 2.0) + 0.05 * hip
    return down


def _stance(low: Array, hip: float) -> float:
    """The median of ``low`` (F,) over the frames it lies within 5 % of ``hip`` of its 2nd percentile (a foot down)."""
    floor = float(np.percentile(low, 2.0))
    return float(np.median(low[low <= floor + 0.05 * hip]))


def _lowest_feet(fig: Figure, W: Array, k: int, feet: Sequence[str] | None = None) -> tuple[Array, Array]:
    """(the lowest foot point's height (F,), its position (F, 3)) from world matrices W (F, N, 4, 4)."""
    names = fig.node_names
    idx = [names.index(n) for n in (feet_of(fig) if feet is None else feet)] or list(range(len(names)))
    X = W[:, idx][:, :, :3, 3]
    j = np.argmin(X[..., k], axis=1)
    p = X[np.arange(len(X)), j]
    return p[:, k], p


def ground_plane(fig: Figure, poses: Array, up: UpAxis | None = None, hip: float | None = None,
                 feet: Sequence[str] | None = None) -> Array:
    """(a, b) (4,) of the ground g(p) = a + b · p (b (3,) along the two horizontal axes, 0 along up) through the
    planted feet: least squares of the lowest foot point's height over its position, refitted twice on the
    frames that lie within 5 % of ``hip`` (default: the hip height at rest) of the lower envelope. Mocap floors
    slope (CMU 02_01 rises 1.6 % along the walk); a flat ground gives b = 0."""
    up = fig.up if up is None else up
    hip = _rest_hip_height(fig, up) if hip is None else hip
    return _ground_plane_of(fig, fig.world_batch(np.atleast_2d(poses)), up_index(up), hip, feet)


def _rest_hip_height(fig: Figure, up: UpAxis) -> float:
    """The default ``hip`` of :func:`ground_plane` and :func:`ground_height`: :func:`hip_height` at rest, 0 without
    hips."""
    hips = _humanoid_of(fig).get("hips")
    return hip_height(fig, hips, up) if hips is not None else 0.0


def _ground_plane_of(fig: Figure, W: Array, k: int, hip: float, feet: Sequence[str] | None = None) -> Array:
    """:func:`ground_plane` from the clip's world matrices W (F, N, 4, 4) in its own world, up along axis k."""
    _, p = _lowest_feet(fig, W, k, feet)
    h = [i for i in range(3) if i != k]
    A = np.column_stack([np.ones(len(p)), p[:, h]])
    keep = np.ones(len(p), bool)
    coef = np.zeros(3)
    for step in range(3):
        coef = np.linalg.lstsq(A[keep], p[keep, k], rcond=None)[0]
        r = p[:, k] - A @ coef
        keep = r <= (np.median(r) if step == 0 else np.percentile(r, 2.0) + 0.05 * hip)
    out = np.zeros(4)
    out[0] = coef[0]
    out[1 + np.array(h)] = coef[1:]
    return out


def ground_height(fig: Figure, poses: Array, up: UpAxis | None = None, hip: float | None = None,
                  feet: Sequence[str] | None = None) -> float:
    """g = where the feet stand: the median, over the frames a foot is down, of the lowest foot point
    (:func:`feet_of`) per frame; a foot is down when that point lies within 5 % of the hip height ``hip``
    (default: :func:`hip_height` at rest) of its 2nd percentile over the clip."""
    up = fig.up if up is None else up
    hip = _rest_hip_height(fig, up) if hip is None else hip
    return _ground_height_of(fig, fig.world_batch(np.atleast_2d(poses)), up_index(up), hip, feet)


def _ground_height_of(fig: Figure, W: Array, k: int, hip: float, feet: Sequence[str] | None = None) -> float:
    """:func:`ground_height` from the clip's world matrices W (F, N, 4, 4) in its own world, up along axis k."""
    low, _ = _lowest_feet(fig, W, k, feet)
    return _stance(low, hip)


#: how far (in hip heights) the 5th percentile of a surface's lowest point over the frames a foot is down may go
#: under the ground so that its median stands on it (1.5 %: 13.5 mm on 0.9 m hips; a sole rolling over heel and
#: toe keeps its median above its low)
SINK = 0.015


#: ... and its lowest point over those frames no further than this (3 %: 27 mm on 0.9 m hips)
DEEPEST = 0.03

#: a source floor sloping less than this (rise per run) is taken as flat: its hips keep their heights exactly
FLAT = 0.005


def lowest_surface(fig: Figure, meshes: Sequence[Mesh] = (), up: UpAxis | None = None
                   ) -> Callable[[Array], Array] | None:
    """A function of world matrices W (F, N, 4, 4) giving the lowest point of the figure's surface per frame (F,):
    its meshes (skinned or rigid), else its drawn node geometry; None for a figure with neither (a bare skeleton)."""
    up = fig.up if up is None else up
    k = up_index(up)
    if meshes:
        def of_meshes(W: Array) -> Array:
            return np.min([_lowest_of_mesh(m, W, k) for m in meshes], axis=0)

        return of_meshes
    if not any(n.data is not None for n in fig.nodes()):
        return None
    drawn = _drawn_points(fig)
    if drawn is None:
        return None
    owner, vertices = drawn

    def of_drawn(W: Array) -> Array:
        M = W[:, :, k][:, owner]  # (F, V, 4): the up row of each point's node, gathered alone
        return (np.einsum("fvj,vj->fv", M[:, :, :3], vertices) + M[:, :, 3]).min(axis=1)

    return of_drawn


#: Per drawn surface (:func:`animkit.look.surface.body_surface`, itself built once per figure content): the drawn
#: points (owner node (V,), vertices in the node's frame (V, 3)) of :func:`lowest_surface`, None without triangles.
_DRAWN: Recent[tuple[NDArray[np.intp], Array] | None] = Recent(8)


def _drawn_points(fig: Figure) -> tuple[NDArray[np.intp], Array] | None:
    """(owner (V,), vertices (V, 3)) of ``fig``'s drawn geometry without bones
    (:func:`animkit.look.drawn.figure_mesh`), None where it has no triangles: built once per drawn surface
    (the figure's content as :func:`animkit.look.surface.body_surface` keys it), not once per retarget."""
    from animkit.look.drawn import figure_mesh
    from animkit.look.surface import body_surface

    surface = body_surface(fig)

    def make() -> tuple[NDArray[np.intp], Array] | None:
        fm = figure_mesh(fig, bones=False)
        return (fm.owner, fm.vertices) if fm.triangle_count else None

    return _DRAWN.fetch(id(surface), (surface,), make)


#: Per skinned mesh (by identity): its joints' bounding spheres and the vertices each joint moves
#: (:func:`_joint_spheres`); and sub-meshes of it by the vertices they keep.
_SPHERES: Recent[tuple[Array, Array, NDArray[np.bool_], NDArray[np.bool_]]] = Recent(16)
_SUBS: Recent[Mesh] = Recent(16)


def _joint_spheres(mesh: Mesh) -> tuple[Array, Array, NDArray[np.bool_], NDArray[np.bool_]]:
    """(centres c (J, 3), radii r (J,) of the rest vertices each skin joint moves (weight > 0), which joints move
    each vertex (V, J), the vertices the bound does not hold for (weights negative or not summing to 1))."""
    return _SPHERES.fetch(id(mesh), (mesh,), lambda: _spheres_of(mesh))


def _spheres_of(mesh: Mesh) -> tuple[Array, Array, NDArray[np.bool_], NDArray[np.bool_]]:
    assert mesh.skin is not None and mesh.joints is not None and mesh.weights is not None
    V, J = mesh.vertex_count, len(mesh.skin.joints)
    moves = np.zeros((V, J), dtype=bool)
    rows = np.repeat(np.arange(V), mesh.joints.shape[1])
    moves[rows, mesh.joints.ravel()] |= mesh.weights.ravel() > 0
    odd = (mesh.weights < 0).any(axis=1) | (np.abs(mesh.weights.sum(axis=1) - 1.0) > 1e-9)
    c, r = np.zeros((J, 3)), np.zeros(J)
    for j in range(J):
        X = mesh.rest_positions[moves[:, j]]
        if len(X):
            c[j] = 0.5 * (X.min(axis=0) + X.max(axis=0))
            r[j] = np.sqrt(((X - c[j]) ** 2).sum(axis=1).max()) * (1 + 1e-9) + 1e-12
    return c, r, moves, odd


def _sub_mesh(mesh: Mesh, keep: NDArray[np.bool_]) -> Mesh:
    """The vertices ``keep`` of ``mesh`` (no faces): skinned vertex by vertex as in the whole mesh."""
    joints, weights = mesh.joints, mesh.weights
    assert joints is not None and weights is not None
    return _SUBS.fetch((id(mesh), np.packbits(keep).tobytes()), (mesh,), lambda: dataclasses.replace(
        mesh, faces=np.zeros((0, 3), dtype=mesh.faces.dtype), uvs=None, texture=None,
        rest_positions=mesh.rest_positions[keep], rest_normals=mesh.rest_normals[keep], joints=joints[keep],
        weights=weights[keep]))


def _vertex_by_vertex() -> bool:
    """Whether skinning runs a compiled kernel (C, else numba), which skins each vertex on its own: a sub-mesh's
    vertices then come out as the whole mesh's, bit for bit (NumPy's one matrix product need not)."""
    from animkit import jit
    from animkit.look.skin import skin_frames_kernel

    return getattr(jit.native_kernels(), "skin_frames", None) is not None or (
        skin_frames_kernel is not None and jit.enabled())


def _lowest_of_mesh(mesh: Mesh, W: Array, k: int) -> Array:
    """min_v p_v,k per frame (F,) over the mesh's skinned vertices, skinning only those that can be lowest.

    A vertex is a convex mix of its joints' S_j (v, 1) (S_j = W_j·IBM_j; weights ≥ 0 summing to 1), so its height
    is at least min_j b_j, b_j = S_j,k · (c_j, 1) − ‖S_j,k[:3]‖ r_j over the sphere (c_j, r_j) holding the rest
    vertices joint j moves. The vertices of the joints lowest by b_j are skinned first; their lowest point m bounds
    the frame's from above, and every vertex one of whose joints has b_j ≤ m in some frame is skinned too: the
    rest lie above m in every frame, so the minimum is the whole mesh's, vertex by vertex the same numbers (the whole
    mesh is skinned where no compiled kernel runs: :func:`_vertex_by_vertex`)."""
    if mesh.skin is None or mesh.vertex_count < 64 or not _vertex_by_vertex():
        return mesh.positions(W)[..., k].min(axis=1)
    c, r, moves, odd = _joint_spheres(mesh)
    S = mesh.joint_matrices(W)[..., k, :]  # (F, J, 4): the up row of each joint's skinning matrix
    with np.errstate(invalid="ignore"):
        b = np.einsum("fjc,jc->fj", S[..., :3], c) + S[..., 3] - np.linalg.norm(S[..., :3], axis=-1) * r
    b = np.where(np.isfinite(b), b, -np.inf) - 1e-9 * (1.0 + np.abs(b))
    b[:, ~moves.any(axis=0)] = np.inf  # a joint moving no vertex bounds none
    first = moves[:, np.unique(np.argmin(b, axis=1))].any(axis=1) | odd
    m = _sub_mesh(mesh, first).positions(W)[..., k].min(axis=1)
    keep = moves[:, (b <= m[:, None]).any(axis=0)].any(axis=1) | first
    if keep.sum() > 0.7 * mesh.vertex_count:
        return mesh.positions(W)[..., k].min(axis=1)
    if (keep == first).all():
        return m
    return _sub_mesh(mesh, keep).positions(W)[..., k].min(axis=1)
