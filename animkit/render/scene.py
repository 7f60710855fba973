"""Figure + pose → placed triangles: each node's data drawn with M · T.

The figure's meshes are built once (:func:`figure_mesh`): every drawn node's mesh is
put in the node's frame by its T (v_node = T · v_data) and all of them are stacked
into one vertex array with an owner index. Placing a pose is then one batched
product, v_world = R_owner · v_node + p_owner, for every vertex at once.
Data shared between nodes is turned into triangles once and drawn once per node.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..errors import SceneError
from ..graph import Figure

__all__ = ["FigureMesh", "figure_mesh", "place_vertices", "framing_points"]


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


def figure_mesh(figure: Figure) -> FigureMesh:
    """Build the figure's triangles once (trimesh primitives, or mesh files), each in its node's frame (× T)."""
    cache: dict[int, tuple[NDArray[np.float64], NDArray[np.intp]]] = {}
    verts, owners, faces, colors = [], [], [], []
    radius = np.zeros(len(figure.node_names))
    offset = 0
    for i, node in enumerate(figure.nodes()):
        if node.data is None:
            continue
        key = id(node.data)
        if key not in cache:
            try:
                m = node.data.to_trimesh()
            except SceneError as exc:
                warnings.warn(f"node {node.name!r}: {exc}; drawing nothing for it", stacklevel=2)
                continue
            cache[key] = (np.asarray(m.vertices, dtype=float), np.asarray(m.faces, dtype=np.intp))
        v, f = cache[key]
        v_node = v @ node.T[:3, :3].T + node.T[:3, 3]
        verts.append(v_node)
        owners.append(np.full(len(v_node), i, dtype=np.intp))
        faces.append(f + offset)
        colors.append(np.broadcast_to(np.asarray(node.color, dtype=float), (len(f), 3)))
        radius[i] = float(np.linalg.norm(v_node, axis=1).max()) if len(v_node) else 0.0
        offset += len(v_node)
    if not verts:
        return FigureMesh(np.zeros((0, 3)), np.zeros(0, np.intp), np.zeros((0, 3), np.intp), np.zeros((0, 3)),
                          radius)
    return FigureMesh(np.concatenate(verts), np.concatenate(owners), np.concatenate(faces),
                      np.concatenate(colors), radius)


def place_vertices(mesh: FigureMesh, world: NDArray[np.float64]) -> NDArray[np.float64]:
    """v_world = R_owner · v + p_owner for one pose's world matrices ``world`` (N, 4, 4) → (V, 3)."""
    W = world[mesh.owner]
    return np.einsum("vij,vj->vi", W[:, :3, :3], mesh.vertices) + W[:, :3, 3]


def framing_points(figure: Figure, mesh: FigureMesh, poses: NDArray[np.float64], *,
                   max_frames: int = 2000) -> NDArray[np.float64]:
    """Points that bound the figure over a whole clip: node origins ± each node's mesh radius (P, 3).

    Uses at most ``max_frames`` evenly spaced frames (plus the last), so framing a 10,000-frame clip is cheap.
    """
    poses = np.atleast_2d(poses)
    if len(poses) > max_frames:
        idx = np.unique(np.linspace(0, len(poses) - 1, max_frames).round().astype(int))
        poses = poses[idx]
    origins = figure.world_positions(poses)  # (F, N, 3)
    drawn = mesh.radius > 0
    pts = origins.reshape(-1, 3)
    if not drawn.any():
        return pts
    r = mesh.radius[drawn]
    o = origins[:, drawn].reshape(-1, 3)
    rr = np.tile(r, len(poses))[:, None]
    offsets = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], dtype=float)
    return np.concatenate([pts, (o[:, None, :] + rr[:, None, :] * offsets[None]).reshape(-1, 3)])
