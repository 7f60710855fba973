"""File formats behind one ``load`` and one ``save``, dispatched on the suffix.

``.toml`` scene files (toml_scene), ``.bvh`` motion capture (bvh), ``.urdf`` robot
descriptions (urdf). Each format module is imported only when used.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..atomic import atomic_path
from ..errors import AnimkitError, ParseError, unknown_name

if TYPE_CHECKING:
    from ..figure import Figure
    from ..keyframes import Clip
    from ..scene import Scene

__all__ = ["load", "save", "atomic_path", "LOADERS", "SAVERS"]

LOADERS = (".toml", ".bvh", ".urdf")
SAVERS = (".toml", ".bvh")


def load(path: str | os.PathLike[str]) -> Scene:
    """Read a scene (figure, chains, effectors, camera, clips) from a ``.toml``, ``.bvh`` or ``.urdf`` file."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in LOADERS:
        raise ParseError(str(p), unknown_name("file type", suffix or "(no suffix)", LOADERS))
    if not p.is_file():
        raise ParseError(str(p), "file not found" if not p.exists() else "not a regular file")
    if suffix == ".toml":
        from .toml_scene import read_toml_scene

        return read_toml_scene(p)
    if suffix == ".bvh":
        from .bvh import read_bvh

        return read_bvh(p)
    from .urdf import read_urdf

    return read_urdf(p)


def save(path: str | os.PathLike[str], scene_or_figure: Scene | Figure, clip: Clip | None = None,
         **options: Any) -> Path:
    """Write a figure (or scene) and optionally a clip to ``.toml`` or ``.bvh``, atomically."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in SAVERS:
        raise AnimkitError(unknown_name("output file type", suffix or "(no suffix)", SAVERS))
    from ..scene import Scene

    scene = scene_or_figure if isinstance(scene_or_figure, Scene) else Scene(scene_or_figure)
    writer: Callable[[], str]
    if suffix == ".bvh":
        from .bvh import dumps_bvh

        def writer() -> str:
            return dumps_bvh(scene.figure, clip if clip is not None else scene.clip(), **options)
    else:
        from .toml_clips import dumps_clips
        from .toml_scene import dumps_scene

        def writer() -> str:
            clips = dict(scene.clips)
            if clip is not None:
                clips[clip.name] = clip
            return dumps_scene(scene, clips_text=dumps_clips(clips, scene.figure) if clips else "")
    text = writer()
    with atomic_path(p) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return p
