"""Headless rendering: camera, NumPy rasteriser, overlays, panels and streaming writers.

Submodules are imported on demand (``from animkit.render.raster import render_triangles``);
Pillow, imageio and imageio-ffmpeg are imported only inside the functions that need them.
"""

from __future__ import annotations
