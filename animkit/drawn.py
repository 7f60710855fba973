"""A figure's drawn geometry: every drawn node's triangles in its node's frame (× T), stacked once.

What the renderer places each frame (``render/scene``) and what the glTF writer skins rigidly to the
bones (``io/gltf_write``): one home for both. Node data comes from :mod:`animkit.geometry`; a bare
skeleton (no node data, as from BVH) is drawn as capsule bones from each node to its children.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .errors import SceneError
from .figure import Figure
from .geometry import Capsule
from .transforms import matrix_aligning_z_to

__all__ = ["FigureMesh", "figure_mesh", "BONE_COLOR"]


@dataclass(frozen=True)
class FigureMesh:
    """All drawn nodes' triangles in their nodes' frames: ``vertices`` (V, 3), ``owner`` (V,) node index,
    ``faces`` (F, 3), ``face_colors`` (F, 3) in 0..1, ``radius`` (N,) each node's farthest vertex from its origin."""

    vertices: NDArray[np.float64]
    owner: NDArray[np.intp]
    faces: NDArray[np.intp]
    face_colors: NDArray[np.float64]
    radius: NDArray[np.float64]

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
    parts: list[tuple[int, NDArray[np.float64], NDArray[np.intp], tuple[float, float, float]]] = []
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
        parts.append((i, v @ node.T[:3, :3].T + node.T[:3, 3], f, node.color))
    if bones:
        index = {n: i for i, n in enumerate(figure.node_names)}
        radius = bone_radius if bone_radius is not None else 0.03 * figure.size()
        for arc in figure.arcs():
            if arc.parent is None or arc.parent.data is not None:
                continue
            d = arc.L[:3, 3]
            length = float(np.linalg.norm(d))
            if length <= 1e-9:
                continue
            v, f = Capsule(radius, length).triangles()
            parts.append((index[arc.parent.name], v @ matrix_aligning_z_to(d).T, f, BONE_COLOR))
    radius_of = np.zeros(len(nodes))
    if not parts:
        return FigureMesh(np.zeros((0, 3)), np.zeros(0, np.intp), np.zeros((0, 3), np.intp), np.zeros((0, 3)),
                          radius_of)
    verts, owners, faces, colors = [], [], [], []
    offset = 0
    for i, v, f, color in parts:
        verts.append(v)
        owners.append(np.full(len(v), i, dtype=np.intp))
        faces.append(f + offset)
        colors.append(np.broadcast_to(np.asarray(color, dtype=float), (len(f), 3)))
        radius_of[i] = max(radius_of[i], float(np.linalg.norm(v, axis=1).max()) if len(v) else 0.0)
        offset += len(v)
    return FigureMesh(np.concatenate(verts), np.concatenate(owners), np.concatenate(faces),
                      np.concatenate(colors), radius_of)
