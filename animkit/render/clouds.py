"""Point clouds around a figure (workspaces): each point a small octahedron, drawn with the figure in one z-buffer.

One panel per cloud, all with one camera framing the figure and every cloud, composed into a labelled grid."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.atomic import atomic_path
from animkit.model.figure import Figure
from animkit.render.camera import UpAxis, fit_camera
from animkit.render.panels import compose_panels
from animkit.render.placed import figure_mesh, place_vertices
from animkit.render.raster import Surface, render_surfaces, surface

__all__ = ["cloud_surface", "render_clouds"]

Array = NDArray[np.float64]
_OCT = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], dtype=float)
_OCT_FACES = np.array([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]])


def cloud_surface(points: ArrayLike, radius: float, color: ArrayLike) -> Surface:
    """Octahedra of circumradius ``radius`` at the points (P, 3), one colour."""
    p = np.asarray(points, dtype=float).reshape(-1, 3)
    V = (p[:, None, :] + radius * _OCT[None]).reshape(-1, 3)
    F = (np.arange(len(p))[:, None, None] * 6 + _OCT_FACES[None]).reshape(-1, 3)
    return surface(V, F, color=color)


def render_clouds(figure: Figure, pose: ArrayLike, clouds: Sequence[tuple[str, Sequence[tuple[ArrayLike, ArrayLike]]]],
                  out: str | Path, *, up: UpAxis | None = None, size: tuple[int, int] = (420, 380),
                  azimuth_deg: float = 30.0, elevation_deg: float = 20.0) -> Path:
    """A PNG of labelled panels, one per (label, [(points (P, 3), colour), ...]): the figure at ``pose`` with its
    clouds around it, one camera for all panels (fit to the figure and every cloud)."""
    up = figure.up if up is None else up
    from PIL import Image

    mesh = figure_mesh(figure)
    world = figure.world_batch(np.asarray(pose, dtype=float)[None])[0]
    body = surface(place_vertices(mesh, world), mesh.faces, face_colors=mesh.face_colors)
    everything = [place_vertices(mesh, world)] + [np.asarray(p, dtype=float).reshape(-1, 3)
                                                  for _, layers in clouds for p, _ in layers]
    pts = np.concatenate(everything)
    cam = fit_camera(pts, up, width=size[0], height=size[1], azimuth_deg=azimuth_deg, elevation_deg=elevation_deg)
    radius = 0.01 * float(np.max(pts.max(axis=0) - pts.min(axis=0)))
    frames = []
    for _, layers in clouds:
        # each layer's points 1.4× the size of the layer before: a point in two layers (dexterous ⊂ reachable) shows
        # the later one around the earlier instead of tying with it in the z-buffer
        surfs = [body] + [cloud_surface(p, radius * 1.4 ** i, c) for i, (p, c) in enumerate(layers) if np.size(p)]
        frames.append(render_surfaces(cam, surfs))
    sheet = compose_panels(frames, [label for label, _ in clouds])
    target = Path(out)
    with atomic_path(target) as tmp:
        Image.fromarray(np.asarray(sheet)).save(tmp, format="PNG")
    return target
