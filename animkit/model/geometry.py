"""Node data: the shapes a node draws, in the node's own frame (placed by the node's T).

Shapes are small frozen values; ``triangles()`` gives one as vertices and faces (NumPy; trimesh only reads
mesh files), ``to_trimesh()`` as a trimesh mesh (trimesh is imported only then). A capsule and a cylinder
run along +z from z = 0 to z = length, so a bone from the joint to its child is
``Capsule(radius, |d|)`` placed by a T that turns +z onto d.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
from numpy.typing import NDArray

from animkit.errors import SceneError

if TYPE_CHECKING:
    import trimesh

__all__ = ["Box", "Capsule", "Sphere", "Cylinder", "MeshFile", "Geometry", "SHAPES", "capsules"]


def revolve(radii: NDArray[np.float64], heights: NDArray[np.float64], sections: int, *, bottom: float | None,
            top: float | None) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """Rings (r_k cos φ_j, r_k sin φ_j, z_k), φ_j = 2πj / sections, joined by quads, closed by a pole (0, 0, bottom)
    and (0, 0, top) when given: a closed surface of revolution about +z, faces counter-clockwise seen from outside
    (for heights increasing along the rings)."""
    phi = 2.0 * np.pi * np.arange(sections) / sections
    c, s = np.cos(phi), np.sin(phi)
    rings = np.stack([np.outer(radii, c), np.outer(radii, s), np.repeat(heights[:, None], sections, axis=1)], axis=-1)
    verts = [rings.reshape(-1, 3)]
    j = np.arange(sections)
    jn = (j + 1) % sections
    faces = []
    for k in range(len(radii) - 1):
        a, b = k * sections, (k + 1) * sections
        faces += [np.stack([a + j, a + jn, b + jn], 1), np.stack([a + j, b + jn, b + j], 1)]
    n = len(radii) * sections
    if bottom is not None:
        verts.append(np.array([[0.0, 0.0, bottom]]))
        faces.append(np.stack([np.full(sections, n), jn, j], 1))
        n += 1
    if top is not None:
        last = (len(radii) - 1) * sections
        verts.append(np.array([[0.0, 0.0, top]]))
        faces.append(np.stack([np.full(sections, n), last + j, last + jn], 1))
    return np.concatenate(verts), np.concatenate(faces).astype(np.intp)


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

    def triangles(self) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
        """Vertices (8, 3) at (±x/2, ±y/2, ±z/2) and 12 outward faces (counter-clockwise from outside)."""
        v = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)]) * np.asarray(self.size)
        f = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                      [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]], dtype=np.intp)
        return v, f


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

    def triangles(self, sections: int = 12, rings: int = 3) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
        """Two hemispheres of ``rings`` latitude rings each, joined by the cylinder from z = 0 to z = length."""
        lat = np.linspace(-np.pi / 2, 0.0, rings + 1)[1:]
        r = self.radius
        radii = np.r_[r * np.cos(lat), r * np.cos(lat[::-1])]
        z = np.r_[r * np.sin(lat), self.length - r * np.sin(lat[::-1])]
        return revolve(radii, z, sections, bottom=-r, top=self.length + r)


def capsules(radius: NDArray[np.float64], length: NDArray[np.float64], sections: int = 12,
             rings: int = 3) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """v = r · U + ℓ · t ẑ for n capsules at once: U the unit capsule's vertices (r = 1, ℓ = 0), t = 1 on its
    upper hemisphere; vertices (n, k, 3), faces (f, 3) shared by all (``Capsule(r, ℓ).triangles()`` each, in
    time linear in n without a Python loop)."""
    r = np.asarray(radius, dtype=float).reshape(-1)
    ell = np.asarray(length, dtype=float).reshape(-1)
    unit, faces = Capsule(1.0, 0.0).triangles(sections, rings)
    top = Capsule(1.0, 1.0).triangles(sections, rings)[0][:, 2] - unit[:, 2]  # 1 on the upper half, else 0
    v = r[:, None, None] * unit[None]
    v[:, :, 2] += ell[:, None] * top[None]
    return v, faces


@dataclass(frozen=True)
class Sphere:
    """A sphere of ``radius`` about the origin."""

    radius: float

    def __post_init__(self) -> None:
        _positive("sphere", radius=self.radius)

    def to_trimesh(self) -> trimesh.Trimesh:
        import trimesh

        return trimesh.creation.icosphere(subdivisions=2, radius=self.radius)

    def triangles(self, sections: int = 16, rings: int = 7) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
        """A UV sphere: ``rings`` latitude rings between the poles, ``sections`` meridians."""
        lat = np.linspace(-np.pi / 2, np.pi / 2, rings + 2)[1:-1]
        return revolve(self.radius * np.cos(lat), self.radius * np.sin(lat), sections, bottom=-self.radius,
                       top=self.radius)


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

    def triangles(self, sections: int = 16) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
        """The side from z = 0 to z = length and two flat caps."""
        return revolve(np.full(2, self.radius), np.array([0.0, self.length]), sections, bottom=0.0, top=self.length)


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

    def triangles(self) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
        """The file's vertices (V, 3) and faces (F, 3), read by trimesh."""
        m = self.to_trimesh()
        return np.asarray(m.vertices, dtype=float), np.asarray(m.faces, dtype=np.intp)


Geometry = Box | Capsule | Sphere | Cylinder | MeshFile
SHAPES: tuple[str, ...] = ("box", "capsule", "sphere", "cylinder", "mesh")
