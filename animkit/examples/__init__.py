"""Example scenes and clips that ship inside the package, reachable by name.

``animkit.examples.load("humanoid")`` is ``animkit.load`` of the shipped ``humanoid.toml``; the command line
takes the same names wherever it takes a scene file (``animkit compare humanoid``, ``animkit render walk``).
A name is a file's stem: see :func:`names`; sources and licences in ``SOURCES.md`` beside this file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from animkit.errors import SceneError, unknown_name

if TYPE_CHECKING:
    from animkit.scene import Scene

__all__ = ["names", "path", "load", "resolve", "load_file_or_example", "FOLDER"]

#: The folder holding the examples (inside the installed package).
FOLDER = Path(__file__).resolve().parent
_SUFFIXES = (".toml", ".bvh", ".urdf", ".glb", ".gltf")


def names() -> list[str]:
    """The examples' names (file stems), sorted."""
    return sorted(p.stem for p in FOLDER.iterdir() if p.suffix in _SUFFIXES)


def path(name: str) -> Path:
    """The file of example ``name``; SceneError listing the examples for an unknown name."""
    for suffix in _SUFFIXES:
        p = FOLDER / f"{name}{suffix}"
        if p.is_file():
            return p
    raise SceneError(unknown_name("example", name, names()))


def load(name: str) -> Scene:
    """``animkit.load`` of example ``name``."""
    from animkit.io import load as load_file

    return load_file(path(name))


def resolve(path_or_name: str | Path) -> Path:
    """A file as given when it is one or looks like a path (a folder in it, or a suffix), else the example of
    that name (a SceneError naming the examples when there is none)."""
    p = Path(path_or_name)
    if p.is_file() or p.suffix or len(p.parts) > 1:
        return p
    return path(str(path_or_name))


def load_file_or_example(path_or_name: str | Path, *, scene: int | None = None) -> Scene:
    """``animkit.load`` of a file, or of the example of that name (see :func:`resolve`); ``scene`` picks a glTF
    file's scene."""
    from animkit.io import load as load_file

    return load_file(resolve(path_or_name), scene=scene)
