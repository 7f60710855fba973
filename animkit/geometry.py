"""Node data: the shapes a node draws, in the node's own frame (placed by the node's T).

Shapes are small frozen values; ``to_trimesh()`` turns one into a triangle mesh
(trimesh is imported only then). A capsule and a cylinder run along +z from
z = 0 to z = length, so a bone from the joint to its child is
``Capsule(radius, |d|)`` placed by a T that turns +z onto d.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
from numpy.typing import NDArray

from .errors import SceneError
from .transforms import matrix_aligning_z_to

if TYPE_CHECKING:
    import trimesh


__all__ = ["Box", "Capsule", "Sphere", "Cylinder", "MeshFile", "Geometry", "SHAPES", "FigureMesh", "figure_mesh",
           "BONE_COLOR"]


def _positive(name: str, **values: float) -> None:
    for key, v in values.items():
        if not np.isfinite(v) or v <= 0:
            raise SceneError(f"{name}: {key} must be a positive number, got {v!r}")


@dataclass(frozen=True)
class Box:
    """An axis-aligned box of ``size`` (sx, sy, sz) centred on the origin."""

    size: tuple[float, float, float]

    def __post_init__(self) -> None:
        if len(self.size) != 3:
            raise SceneError(f"box: size must be 3 numbers, got {self.size!r}")
        _positive("box", sx=self.size[0], sy=self.size[1], sz=self.size[2])

    def to_trimesh(self) -> trimesh.Trimesh:
        import trimesh

        return trimesh.creation.box(extents=self.size)


@dataclass(frozen=True)
class Capsule:
    """Points within ``radius`` of the segment (0,0,0)–(0,0,length)."""

    radius: float
    length: float

    def __post_init__(self) -> None:
        _positive("capsule", radius=self.radius)
        if not np.isfinite(self.length) or self.length < 0:
            raise SceneError(f"capsule: length must be >= 0, got {self.length!r}")

    def to_trimesh(self, sections: int = 12) -> trimesh.Trimesh:
        import trimesh

        if self.length == 0:
            return trimesh.creation.icosphere(subdivisions=1, radius=self.radius)
        mesh = trimesh.creation.capsule(height=self.length, radius=self.radius, count=[sections, sections // 2])
        mesh.apply_translation([0.0, 0.0, self.length / 2.0])
        return mesh


@dataclass(frozen=True)
class Sphere:
    """A sphere of ``radius`` about the origin."""

    radius: float

    def __post_init__(self) -> None:
        _positive("sphere", radius=self.radius)

    def to_trimesh(self) -> trimesh.Trimesh:
        import trimesh

        return trimesh.creation.icosphere(subdivisions=2, radius=self.radius)


@dataclass(frozen=True)
class Cylinder:
    """A cylinder of ``radius`` from z = 0 to z = ``length``."""

    radius: float
    length: float

    def __post_init__(self) -> None:
        _positive("cylinder", radius=self.radius, length=self.length)

    def to_trimesh(self, sections: int = 16) -> trimesh.Trimesh:
        import trimesh

        mesh = trimesh.creation.cylinder(radius=self.radius, height=self.length, sections=sections)
        mesh.apply_translation([0.0, 0.0, self.length / 2.0])
        return mesh


@dataclass(frozen=True)
class MeshFile:
    """A mesh read by trimesh from ``path``, scaled by ``scale`` (per axis)."""

    path: str
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)

    def to_trimesh(self) -> trimesh.Trimesh:
        import trimesh

        p = Path(self.path)
        if not p.is_file():
            raise SceneError(f"{self.path}: mesh file not found")
        try:
            # force="mesh" always gives a Trimesh; load() is annotated only as returning a Geometry
            mesh = cast("trimesh.Trimesh", trimesh.load(p, force="mesh"))
        except Exception as exc:  # trimesh raises many kinds; one clear message for all
            raise SceneError(f"{self.path}: trimesh could not read this mesh ({exc})") from None
        mesh.apply_scale(np.asarray(self.scale, dtype=float))
        return mesh


Geometry = Box | Capsule | Sphere | Cylinder | MeshFile
SHAPES: tuple[str, ...] = ("box", "capsule", "sphere", "cylinder", "mesh")


# --- a figure's drawn geometry (what the renderer draws and the glTF writer skins) -----------------------


class _Drawable(Protocol):
    """What :func:`figure_mesh` reads of a figure (a Figure; named here without importing it, which sits above)."""

    @property
    def node_names(self) -> list[str]: ...

    def nodes(self) -> list[Any]: ...

    def arcs(self) -> list[Any]: ...

    def size(self) -> float: ...


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


def figure_mesh(figure: _Drawable, *, bones: bool | None = None, bone_radius: float | None = None) -> FigureMesh:
    """Build the figure's triangles once (trimesh primitives, or mesh files), each in its node's frame (× T).

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
                m = node.data.to_trimesh()
            except SceneError as exc:
                warnings.warn(f"node {node.name!r}: {exc}; drawing nothing for it", stacklevel=2)
                continue
            cache[key] = (np.asarray(m.vertices, dtype=float), np.asarray(m.faces, dtype=np.intp))
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
            m = Capsule(radius, length).to_trimesh()
            v = np.asarray(m.vertices, dtype=float) @ matrix_aligning_z_to(d).T
            parts.append((index[arc.parent.name], v, np.asarray(m.faces, dtype=np.intp), BONE_COLOR))
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
