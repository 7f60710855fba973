"""Figure + pose → placed triangles: each node's data drawn with M · T.

The figure's meshes are built once (:func:`figure_mesh`): every drawn node's mesh is
put in the node's frame by its T (v_node = T · v_data) and all of them are stacked
into one vertex array with an owner index. Placing a pose is then one batched
product, v_world = R_owner · v_node + p_owner, for every vertex at once.
Data shared between nodes is turned into triangles once and drawn once per node.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..drawn import BONE_COLOR, FigureMesh, figure_mesh
from ..figure import Figure
from .camera import UpAxis, horizontal

__all__ = ["FigureMesh", "figure_mesh", "place_vertices", "framing_points", "BONE_COLOR"]


def place_vertices(mesh: FigureMesh, world: NDArray[np.float64]) -> NDArray[np.float64]:
    """v_world = R_owner · v + p_owner for one pose's world matrices ``world`` (N, 4, 4) → (V, 3)."""
    W = world[mesh.owner]
    return np.einsum("vij,vj->vi", W[:, :3, :3], mesh.vertices) + W[:, :3, 3]


def framing_points(figure: Figure, mesh: FigureMesh, poses: NDArray[np.float64], *,
                   max_frames: int = 2000, follow: UpAxis | None = None) -> NDArray[np.float64]:
    """Points that bound the figure over a whole clip: node origins ± each node's mesh radius (P, 3).

    Uses at most ``max_frames`` evenly spaced frames (plus the last), so framing a 10,000-frame clip is cheap.
    ``follow`` (the up axis) frames the figure as a following camera sees it: each frame's points less its
    root's ground-plane position, pₖ − h(rₖ).
    """
    poses = np.atleast_2d(poses)
    if len(poses) > max_frames:
        idx = np.unique(np.linspace(0, len(poses) - 1, max_frames).round().astype(int))
        poses = poses[idx]
    origins = figure.world_positions(poses)  # (F, N, 3)
    if follow is not None:
        origins = origins - horizontal(origins[:, :1], follow)
    drawn = mesh.radius > 0
    pts = origins.reshape(-1, 3)
    if not drawn.any():
        return pts
    r = mesh.radius[drawn]
    o = origins[:, drawn].reshape(-1, 3)
    rr = np.tile(r, len(poses))[:, None]
    offsets = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], dtype=float)
    return np.concatenate([pts, (o[:, None, :] + rr[:, None, :] * offsets[None]).reshape(-1, 3)])
