"""Headless rendering: camera, NumPy rasteriser, overlays, panels and streaming writers.

The public face: ``from animkit.render import render_clip, render_panels, Panel, Style, FigureRenderer, look_at``.
Each name imports its submodule on first use (PEP 562), so ``import animkit.render`` stays light; the submodules
are ``camera``, ``placed`` (figure → placed triangles), ``raster``, ``frames`` (clips and panels to frames and
files), ``panels`` (labelled grids), ``writers``, ``clouds`` and ``viewer``. Pillow, imageio and imageio-ffmpeg are
imported only inside the functions that need them.
"""

from __future__ import annotations

from importlib import import_module as _import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from animkit.render.camera import Camera, look_at, orbit
    from animkit.render.frames import FigureRenderer, Panel, RenderReport, Style, render_clip, render_panels

_LAZY = {"render_clip": "frames", "render_panels": "frames", "Panel": "frames", "Style": "frames",
         "FigureRenderer": "frames", "RenderReport": "frames", "Camera": "camera", "look_at": "camera",
         "orbit": "camera"}

__all__ = ["Camera", "FigureRenderer", "Panel", "RenderReport", "Style", "look_at", "orbit", "render_clip",
           "render_panels"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(_import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(__all__) | {n for n in globals() if not n.startswith("_") and n not in ("annotations",
                                                                                              "TYPE_CHECKING", "Any")})
