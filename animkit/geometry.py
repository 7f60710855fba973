"""Node data: the shapes a node draws, in the node's own frame (placed by the node's T).

Shapes are small frozen values; ``to_trimesh()`` turns one into a triangle mesh
(trimesh is imported only then). A capsule and a cylinder run along +z from
z = 0 to z = length, so a bone from the joint to its child is
``Capsule(radius, |d|)`` placed by a T that turns +z onto d.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from .errors import SceneError

if TYPE_CHECKING:
    import trimesh

__all__ = ["Box", "Capsule", "Sphere", "Cylinder", "MeshFile", "Geometry", "SHAPES"]


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
