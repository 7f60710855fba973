"""The interactive viewer in one self-contained HTML file: orbit, pan, zoom, play, scrub, speed; panels side by side.

A page holds everything it needs and fetches nothing: the viewer script (``html_view.js`` beside this module),
three.js 0.170.0 (vendored in ``animkit/vendor/three``, MIT) gzipped and base64-encoded, imported through a
blob URL (``file://`` pages may not import modules), and one GLB per figure (:func:`animkit.io.gltf_write.
gltf_document`: the figure's nodes, its drawn look or a character's own skinned, textured meshes, one
animation per panel sampled at the frame times), gzipped, plus a JSON description: the camera the GIFs use
(framed over every frame), the ground grid's segments, target markers and effector trails. A Content-Security-
Policy in the page forbids any network access. Browsers need ``DecompressionStream`` (Chrome/Edge 80, Firefox
113, Safari 16.4).

The JavaScript face, ``window.animkit`` (``ready``, ``setTime(t)``, ``jointPositions(panel)``, ``camera(panel)``,
``setOptions``…), is documented in ``html_view.js`` and used by the browser tests.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import gzip
import html
import importlib.resources
import json
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from animkit.errors import RenderError

if TYPE_CHECKING:
    from animkit.keyframes import Clip
    from animkit.look.mesh import Mesh
    from animkit.model.figure import Figure
    from animkit.render.camera import Camera
    from animkit.render.frames import Panel, Style
    from animkit.scene import CameraSpec, Scene, UpAxis

__all__ = ["THREE_VERSION", "HtmlReport", "panels_html", "scene_html", "scene_panel", "write_html", "page_camera"]

THREE_VERSION = "0.170.0"  # animkit/vendor/three (tests/node/package.json pins the same)
# the GIF renderer's light (raster.face_shading): I = a + (1 − a)·max(0, n̂·l̂), l̂ from the camera's upper left
_AMBIENT = 0.35
_LIGHT_DIR = (-1.0, 1.0, 1.0)  # camera coordinates: −s + u − f
_MARKER_PX = 6.0  # target markers: as wide as the GIFs' discs, at the target's depth in the first view


@dataclass(frozen=True)
class HtmlReport:
    """What :func:`write_html` wrote: its path and size in bytes."""

    path: Path
    bytes: int


@functools.cache
def _three_b64() -> str:
    """The vendored three.js bundle, gzipped (deterministically: mtime 0) and base64-encoded, once per process."""
    js = importlib.resources.files("animkit").joinpath("vendor/three/three-bundle.min.js").read_bytes()
    return base64.b64encode(gzip.compress(js, 9, mtime=0)).decode("ascii")


@functools.cache
def _viewer_js() -> str:
    return importlib.resources.files("animkit.apps").joinpath("html_view.js").read_text(encoding="utf-8")


def _rounded(a: NDArray[np.float64], digits: int = 6) -> list[float]:
    """Flat list of ``a``'s values to ``digits`` significant digits (the page's JSON stays small)."""
    return [float(f"{x:.{digits}g}") for x in np.asarray(a, dtype=float).ravel()]


def _glb(figure: Figure, meshes: Sequence[Mesh], up: UpAxis, clips: Sequence[Clip], source: str) -> bytes:
    """One GLB: the figure (its renderer look, or its meshes) and ``clips`` as animations, one per panel."""
    from animkit.io.gltf_bytes import glb_bytes
    from animkit.io.gltf_write import gltf_document
    from animkit.render.placed import figure_look
    from animkit.scene import Scene

    with warnings.catch_warnings():  # dense clips are sampled at their frames: what the panels hold
        warnings.filterwarnings("ignore", message=".*sampled at the clip's")
        doc, data = gltf_document(Scene(figure, up=up, meshes=tuple(meshes)), clips, source,
                                  drawn=None if meshes else figure_look(figure, up))
    return glb_bytes(doc, data)


def _panel_clip(panel: Panel, fps: float, name: str) -> Clip:
    """The panel's poses as a clip at ``fps`` (a single pose held for one frame: glTF needs two keys). Values past a
    DOF's limit by rounding (≤ 1e-9: a sampled clip's interpolation can land 4e-16 below the limit its keys sit
    on) are put on it; anything further out is the clip's error."""
    from animkit.keyframes import Clip

    poses = np.atleast_2d(np.asarray(panel.poses, dtype=float))
    if len(poses) == 1:
        poses = np.repeat(poses, 2, axis=0)
    lim = panel.figure.dof_limits()
    lo, hi = lim[:, 0], lim[:, 1]
    poses = np.where((poses < lo) & (poses >= lo - 1e-9), lo, poses)
    poses = np.where((poses > hi) & (poses <= hi + 1e-9), hi, poses)
    return Clip.from_poses(panel.figure, np.arange(len(poses)) / fps, poses, name=name, fps=fps)


def page_camera(panels: Sequence[Panel], camera_spec: CameraSpec, up: UpAxis, size: tuple[int, int]) -> Camera:
    """The page's first view: the camera the GIFs use for these panels (:func:`~animkit.render.frames.panel_camera`,
    framed over all frames; a following camera is not followed in the page)."""
    from animkit.render.frames import panel_camera

    return panel_camera(panels, dataclasses.replace(camera_spec, follow=False), up, size)


def _targets(panel: Panel, frames: int) -> dict[str, Any]:
    if panel.targets is None or not np.size(panel.targets):
        return {"count": 0, "perFrame": False, "points": []}
    tg = np.asarray(panel.targets, dtype=float)
    if tg.ndim == 3:  # (F, K, 3): held at the last frame when shorter than the panel
        idx = np.minimum(np.arange(frames), len(tg) - 1)
        return {"count": tg.shape[1], "perFrame": True, "points": _rounded(tg[idx])}
    tg = tg.reshape(-1, 3)
    return {"count": len(tg), "perFrame": False, "points": _rounded(tg)}


def panels_html(panels: Sequence[Panel], *, fps: float, up: UpAxis | None = None,
                camera_spec: CameraSpec | None = None,
                size: tuple[int, int] = (640, 480), style: Style | None = None, columns: int | None = None,
                title: str = "animkit", loop: bool = True, autoplay: bool = True) -> str:
    """The page (HTML text) showing ``panels`` (:class:`~animkit.render.frames.Panel`: figure, poses at ``fps``,
    label, targets, trail, meshes) side by side, each ``size`` pixels, on one timeline; the first view is the
    GIFs' camera. ``style``: background, grid (on or off at start) and overlay colours as in the GIFs; ``up``:
    default the first panel's figure's."""
    from animkit.render.frames import FigureRenderer, Style
    from animkit.render.placed import figure_look
    from animkit.render.raster import grid_segments
    from animkit.scene import CameraSpec

    if not panels:
        raise RenderError("the HTML viewer needs at least one panel")
    up = panels[0].figure.up if up is None else up
    if not (fps > 0 and math.isfinite(fps)):
        raise RenderError(f"fps must be a positive number, got {fps!r}")
    st = style if style is not None else Style()
    spec = camera_spec if camera_spec is not None else CameraSpec()
    camera = page_camera(panels, spec, up, size)
    # one GLB per figure (and its meshes), one animation per panel on it
    groups: dict[tuple[int, tuple[int, ...]], list[int]] = {}
    for i, p in enumerate(panels):
        groups.setdefault((id(p.figure), tuple(id(m) for m in p.meshes)), []).append(i)
    glbs: list[str] = []
    where: dict[int, tuple[int, int]] = {}
    for g, members in enumerate(groups.values()):
        first = panels[members[0]]
        clips = [_panel_clip(panels[i], fps, f"panel{i}") for i in members]
        data = _glb(first.figure, first.meshes, up, clips, title)
        glbs.append(base64.b64encode(gzip.compress(data, 6, mtime=0)).decode("ascii"))
        for k, i in enumerate(members):
            where[i] = (g, k)
    frames = max(len(np.atleast_2d(p.poses)) for p in panels)
    meta_panels = []
    for i, p in enumerate(panels):
        n = len(np.atleast_2d(p.poses))
        renderer = FigureRenderer(p.figure, camera, up=up, style=st, meshes=p.meshes,
                                  mesh=None if p.meshes else figure_look(p.figure, up))
        spacing, extent, center = renderer.ground()
        starts, ends = grid_segments(up, spacing, extent, center)
        trail = np.zeros((0, 3)) if p.trail is None else np.asarray(p.trail, dtype=float).reshape(-1, 3)
        meta_panels.append({
            "label": p.label, "glb": where[i][0], "animation": where[i][1], "nodes": len(p.figure.node_names),
            "wrapper": len(p.figure.node_names) if up == "z" else None,
            "frames": n, "fps": fps, "duration": (n - 1) / fps,
            "grid": _rounded(np.stack([starts, ends], axis=1)), "targets": _targets(p, frames),
            "trail": _rounded(trail),
        })
    _, depth = camera.project(np.asarray(camera.target))
    meta = {
        "version": 1, "three": THREE_VERSION, "fps": fps, "duration": (frames - 1) / fps, "loop": loop,
        "autoplay": autoplay, "size": [int(size[0]), int(size[1])],
        "columns": columns if columns is not None else (len(panels) if len(panels) <= 4
                                                        else math.ceil(math.sqrt(len(panels)))),
        "up": up, "background": list(st.background),
        "camera": {"eye": list(camera.eye), "target": list(camera.target), "up": list(camera.up),
                   "fov": camera.fov_y_deg, "near": camera.near, "far": camera.far},
        "light": {"ambient": _AMBIENT, "direct": 1.0 - _AMBIENT, "dir": list(_LIGHT_DIR)},
        "marker": _MARKER_PX * float(depth) / camera.focal_px(),
        "colors": {"grid": list(st.grid_color), "target": list(st.target_color), "trail": list(st.trail_color)},
        "glbs": [f"animkit-glb-{g}" for g in range(len(glbs))], "panels": meta_panels,
    }
    return _page(title, meta, glbs, grid=st.grid)


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element (no ``</``)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


_CSS = """body{margin:0;font:13px system-ui,sans-serif;color:#222;background:#fff}
#animkit-viewer{display:inline-block;padding:6px}
#animkit-panels{display:grid;gap:4px}
.animkit-cell{position:relative}
.animkit-label{position:absolute;left:6px;top:4px;pointer-events:none;background:rgba(255,255,255,.75);padding:1px 4px}
.animkit-canvas{display:block;touch-action:none}
#animkit-controls{display:flex;gap:8px;align-items:center;margin-top:6px;flex-wrap:wrap}
#animkit-time{flex:1;min-width:160px}
#animkit-error{display:none;color:#a00;white-space:pre-wrap}"""

_CSP = ("default-src 'none'; script-src 'unsafe-inline' blob:; style-src 'unsafe-inline'; img-src blob: data:; "
        "connect-src blob: data:")


def _page(title: str, meta: dict[str, Any], glbs: list[str], *, grid: bool) -> str:
    t = html.escape(title)
    blobs = "\n".join(f'<script type="application/octet-stream" id="animkit-glb-{g}">{b}</script>'
                      for g, b in enumerate(glbs))
    checked = " checked" if grid else ""
    speeds = "".join(f'<option value="{s:g}"{" selected" if s == 1 else ""}>{s:g}×</option>'
                     for s in (0.1, 0.25, 0.5, 1.0, 2.0))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<title>{t}</title>
<style>{_CSS}</style></head>
<body><div id="animkit-viewer">
<div id="animkit-panels"></div>
<div id="animkit-controls"><button id="animkit-play" type="button">pause</button>
<input id="animkit-time" type="range" min="0" value="0"><span id="animkit-clock"></span>
<label>speed <select id="animkit-speed">{speeds}</select></label>
<label><input id="animkit-grid" type="checkbox"{checked}> grid</label>
<label><input id="animkit-trails" type="checkbox" checked> targets and trails</label>
<label><input id="animkit-link" type="checkbox" checked> link cameras</label></div>
<div id="animkit-error"></div>
<div style="color:#777">drag: orbit · right-drag: pan · wheel: zoom · space: play/pause · animkit, three.js
{THREE_VERSION} (MIT)</div></div>
<script type="application/json" id="animkit-meta">{_script_json({**meta, "grid": grid})}</script>
<script type="application/octet-stream" id="animkit-three">{_three_b64()}</script>
{blobs}
<script type="module">
{_viewer_js()}
</script>
</body></html>
"""


def scene_panel(scene: Scene, clip: str | Clip | None = None, *, fps: float | None = None, target: bool = False
                ) -> tuple[Panel, float]:
    """The scene's clip (default: its first; none: the rest pose) as one panel of poses at its frame times
    (:func:`~animkit.render.frames.frame_times`, as ``animkit render`` samples it), and the rate; ``target``: the
    scene's [reach] target marked (as ``animkit view`` marks it)."""
    from animkit.keyframes import Clip
    from animkit.render.frames import Panel, frame_times

    if clip is None and not scene.clips:
        c = Clip.from_poses(scene.figure, [0.0], scene.figure.rest_pose()[None], name="rest")
    else:
        c = scene.clip(clip) if clip is None or isinstance(clip, str) else clip
    assert c.duration is not None
    times, eff, _ = frame_times(c.duration, fps if fps is not None else c.fps)
    targets = None if scene.reach is None or not target else np.asarray([scene.reach.target[:3]], dtype=float)
    return Panel(scene.figure, c.sample(times), "", targets=targets, meshes=scene.meshes), eff


def scene_html(scene: Scene, clip: str | Clip | None = None, *, size: tuple[int, int] | None = None,
               fps: float | None = None, style: Style | None = None, title: str | None = None,
               target: bool = False) -> str:
    """The page for one clip of ``scene`` (:func:`scene_panel`), framed as ``animkit render`` frames it."""
    panel, eff = scene_panel(scene, clip, fps=fps, target=target)
    sz = size if size is not None else (scene.camera.width, scene.camera.height)
    name = title if title is not None else Path(scene.source).name if scene.source else scene.figure.name
    return panels_html([panel], fps=eff, up=scene.up, camera_spec=scene.camera, size=sz, style=style, title=name)


def write_html(page: str, out: str | Path) -> HtmlReport:
    """Write ``page`` to ``out`` (atomically); the report says its size."""
    from animkit.atomic import atomic_path

    data = page.encode("utf-8")
    with atomic_path(out) as tmp:
        Path(tmp).write_bytes(data)
    return HtmlReport(Path(out), len(data))
