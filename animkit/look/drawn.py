"""A figure's drawn geometry: every drawn node's triangles in its node's frame (× T), stacked once.

What the renderer places each frame (``render/placed``) and what the glTF writer skins rigidly to the
bones (``io/gltf_write``): one home for both. Node data comes from :mod:`animkit.model.geometry`; a bare
skeleton (no node data, as from BVH) is drawn as capsule bones from each node to its children.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from animkit.errors import SceneError
from animkit.model.figure import Figure
from animkit.model.geometry import capsules
from animkit.model.transforms import matrix_aligning_z_to

__all__ = ["FigureMesh", "figure_mesh", "bone_capsules", "BONE_COLOR"]


@dataclass(frozen=True)
class FigureMesh:
    """All drawn nodes' triangles in their nodes' frames: ``vertices`` (V, 3), ``owner`` (V,) node index,
    ``faces`` (F, 3), ``face_colors`` (F, 3) in 0..1, ``radius`` (N,) each node's farthest vertex from its origin;
    ``closed`` (F,) whether the face bounds a closed, outward-wound shape (:func:`closed_outward`; None: unknown)."""

    vertices: NDArray[np.float64]
    owner: NDArray[np.intp]
    faces: NDArray[np.intp]
    face_colors: NDArray[np.float64]
    radius: NDArray[np.float64]
    closed: NDArray[np.bool_] | None = None

    @property
    def triangle_count(self) -> int:
        return len(self.faces)


BONE_COLOR = (0.36, 0.56, 0.86)


def figure_mesh(figure: Figure, *, bones: bool | None = None, bone_radius: float | None = None) -> FigureMesh:
    """Build the figure's triangles once (shapes tessellated in NumPy, mesh files), each in its node's frame (× T).

    ``bones`` also draws, for every node without data, a capsule from its origin to each child's origin
    (in its own frame: the child arc's L translation) — the usual picture of a skeleton. None (the default)
    draws bones exactly when no node has data, as for a BVH skeleton. ``bone_radius`` defaults to 3 % of
    the figure's size.
    """
    nodes = figure.nodes()
    if bones is None:
        bones = all(n.data is None for n in nodes)
    cache: dict[int, tuple[NDArray[np.float64], NDArray[np.intp]]] = {}
    parts: list[tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.intp], tuple[float, float, float]]] = []
    for i, node in enumerate(nodes):
        if node.data is None:
            continue
        key = id(node.data)
        if key not in cache:
            try:
                cache[key] = node.data.triangles()
            except SceneError as exc:
                warnings.warn(f"node {node.name!r}: {exc}; drawing nothing for it", stacklevel=2)
                continue
        v, f = cache[key]
        parts.append((np.full(len(v), i, dtype=np.intp), v @ node.T[:3, :3].T + node.T[:3, 3], f, node.color))
    if bones:
        index = {n: i for i, n in enumerate(figure.node_names)}
        radius = bone_radius if bone_radius is not None else 0.03 * figure.size()
        owner, ds = [], []
        for arc in figure.arcs():
            if arc.parent is None or arc.parent.data is not None:
                continue
            owner.append(index[arc.parent.name])
            ds.append(arc.L[:3, 3])
        if ds:
            d = np.array(ds)
            keep = np.linalg.norm(d, axis=1) > 1e-9
            if keep.any():  # the radius in the parent's frame: a world scale on it (centimetre rigs) taken out
                W0 = figure.world_batch(figure.rest_pose()[None])[0, np.array(owner, dtype=np.intp)[keep], :3, :3]
                scale = np.cbrt(np.maximum(np.abs(np.linalg.det(W0)), 1e-300))
                v, f, k = bone_capsules(radius / scale, d[keep])
                parts.append((np.repeat(np.array(owner, dtype=np.intp)[keep], k), v, f, BONE_COLOR))
    radius_of = np.zeros(len(nodes))
    if not parts:
        return FigureMesh(np.zeros((0, 3)), np.zeros(0, np.intp), np.zeros((0, 3), np.intp), np.zeros((0, 3)),
                          radius_of)
    verts, owners, faces, colors, closed = [], [], [], [], []
    offset = 0
    for own, v, f, color in parts:
        closed.append(np.full(len(f), closed_outward(v, f), dtype=bool))
        verts.append(v)
        owners.append(own)
        faces.append(f + offset)
        colors.append(np.broadcast_to(np.asarray(color, dtype=float), (len(f), 3)))
        if len(v):
            np.maximum.at(radius_of, own, np.linalg.norm(v, axis=1))
        offset += len(v)
    return FigureMesh(np.concatenate(verts), np.concatenate(owners), np.concatenate(faces),
                      np.concatenate(colors), radius_of, np.concatenate(closed))


def bone_capsules(radius: NDArray[np.float64], d: NDArray[np.float64]
                  ) -> tuple[NDArray[np.float64], NDArray[np.intp], int]:
    """Capsules of ``radius`` (n,) from the origin to each d (n, 3): v = R(ẑ → d̂) (r U + |d| t ẑ)
    (:func:`~animkit.model.geometry.capsules`, :func:`~animkit.model.transforms.matrix_aligning_z_to`), all at once:
    vertices (n·k, 3), faces (n·f, 3) into them, and k, the vertices of one capsule (capsule i's are rows
    i·k … (i + 1)·k − 1). Each is a closed, outward-wound solid (the shared template's property)."""
    d = np.asarray(d, dtype=float).reshape(-1, 3)
    v, f = capsules(radius, np.linalg.norm(d, axis=1))
    n, k = v.shape[:2]
    v = np.einsum("nij,nkj->nki", matrix_aligning_z_to(d), v)
    faces = (f[None] + (k * np.arange(n, dtype=np.intp))[:, None, None]).reshape(-1, 3)
    return v.reshape(-1, 3), faces, k


def closed_outward(vertices: NDArray[np.float64], faces: NDArray[np.intp]) -> bool:
    """Whether the triangles bound a solid, wound outward: every directed edge (a, b) occurs once and its reverse
    (b, a) once (closed, consistently oriented), and the signed volume ⅙ Σ v₀ · (v₁ × v₂) is positive. Seen from
    outside, such a shape's faces turned away from the eye are hidden by its own faces turned toward it."""
    f = np.asarray(faces, dtype=np.int64)
    if not len(f):
        return False
    n = int(f.max()) + 1
    e = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    if np.any(e[:, 0] == e[:, 1]):
        return False
    key = e[:, 0] * n + e[:, 1]
    rev = e[:, 1] * n + e[:, 0]
    sk = np.sort(key)  # sorting, not np.unique: its hash table slows down on these keys (multiples of n)
    if bool((sk[1:] == sk[:-1]).any()) or not np.array_equal(sk, np.sort(rev)):
        return False
    v = np.asarray(vertices, dtype=float)[f]
    return float(np.einsum("fi,fi->", v[:, 0], np.cross(v[:, 1], v[:, 2]))) > 0.0
