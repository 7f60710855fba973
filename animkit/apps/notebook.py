"""Inline display in Jupyter: animations (an HTML5 video with play/pause and a frame slider), stills (PNG) and the
interactive viewer (:class:`Viewer`: :mod:`animkit.apps.html_view`'s page in an iframe, with the video as its fallback).

``animkit.show(scene, clip, ...)`` renders like ``animkit render`` (the same size, fps, style and camera options)
and returns an :class:`Animation` that a notebook shows inline. ``animkit.still(scene, pose)`` returns a
:class:`Still` (``_repr_png_``). The core values draw themselves too, in any Jupyter front end: a
:class:`~animkit.Scene` (its first clip, or its rest pose as a PNG), a :class:`~animkit.Clip` (on its figure;
one frame: a PNG), a baked reach, a comparison (its panels side by side), an :class:`~animkit.IKResult` (its
numbers and error curve) and an IK batch (a summary) have ``_repr_html_`` / ``_repr_png_`` methods that ask
:mod:`animkit.display` for the drawings this module registers there at import (by type name), so the core
modules never import the renderer.

``show(..., interactive=True)`` (or :func:`set_interactive` for every scene, clip, reach and comparison shown)
gives the viewer you can turn around, scrub and slow down. Its HTML output holds both the viewer (an iframe whose
``srcdoc`` is the self-contained page) and the MP4: a script swaps the video for the viewer, so JupyterLab, the
classic notebook and VS Code (which run an output's scripts) show the viewer, and a static renderer that runs no
scripts (nbviewer without JavaScript, exported HTML with scripts stripped) still shows the video. One output, no
widget state, no kernel needed to replay it; the cost is the MP4 (≈ 0.1–0.3 MB) beside the page (≈ 0.25 MB plus
the motion).
"""

from __future__ import annotations

import base64
import dataclasses
import html
import itertools
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from animkit import display
from animkit.apps.reach_panels import comparison_panels, panel_label
from animkit.display import Mime
from animkit.errors import RenderError, unknown_name

if TYPE_CHECKING:
    from animkit.ik import IKBatchResult, IKResult
    from animkit.keyframes import Clip
    from animkit.model.figure import Figure
    from animkit.motion.reach import Comparison, ReachResult
    from animkit.render.frames import Panel, Style
    from animkit.scene import Scene

__all__ = ["Animation", "Still", "Viewer", "show", "still", "show_comparison", "comparison_panels", "panel_label",
           "ik_result_html", "ik_batch_html", "set_interactive", "interactive_default"]

_ids = itertools.count()
# the notebook's setting (set_interactive): whether shown values use the interactive viewer, with an MP4 fallback
_SETTING = {"interactive": False, "fallback": True}


def set_interactive(on: bool = True, *, fallback: bool = True) -> None:
    """Show scenes, clips, reaches and comparisons (their ``_repr_html_``, and ``show`` without ``interactive=``)
    in the interactive viewer (``on``), with the MP4 inside the same output for front ends that run no scripts
    (``fallback``; off: the page alone, smaller)."""
    _SETTING["interactive"] = bool(on)
    _SETTING["fallback"] = bool(fallback)


def interactive_default() -> bool:
    """Whether values show in the interactive viewer by default (:func:`set_interactive`)."""
    return _SETTING["interactive"]


@dataclass(frozen=True)
class Animation:
    """An encoded animation (``mime`` ``video/mp4`` or ``image/gif``), its frame count, rate and size."""

    data: bytes
    mime: str
    frames: int
    fps: float
    size: tuple[int, int]

    def __repr__(self) -> str:
        return (f"Animation({self.mime}, {self.frames} frames at {self.fps:g} fps, {self.size[0]}x{self.size[1]}, "
                f"{len(self.data) / 1024:.0f} KiB)")

    def save(self, path: str | Path) -> Path:
        """Write the encoded bytes to ``path`` (atomically)."""
        from animkit.atomic import atomic_path

        with atomic_path(path) as tmp:
            tmp.write_bytes(self.data)
        return Path(path)

    def _repr_html_(self) -> str:
        """A <video> (loop, muted autoplay) with a play/pause button and a frame slider kept in step with it."""
        b64 = base64.b64encode(self.data).decode("ascii")
        w, h = self.size
        if self.mime != "video/mp4":
            return f'<img src="data:{self.mime};base64,{b64}" width="{w}" height="{h}"/>'
        k = next(_ids)
        vid, sld, btn, lab = (f"animkit-{name}-{k}" for name in ("video", "slider", "play", "label"))
        last = max(self.frames - 1, 0)
        return f"""<div class="animkit-animation">
<video id="{vid}" width="{w}" height="{h}" src="data:video/mp4;base64,{b64}" loop muted autoplay playsinline></video>
<div><button id="{btn}" type="button">pause</button>
<input id="{sld}" type="range" min="0" max="{last}" step="1" value="0" style="width:{max(w - 160, 80)}px"/>
<span id="{lab}">frame 0 / {last}</span></div>
<script>(function() {{
  var v = document.getElementById("{vid}"), s = document.getElementById("{sld}"),
      b = document.getElementById("{btn}"), l = document.getElementById("{lab}"), fps = {self.fps!r};
  function show() {{ var f = Math.min({last}, Math.round(v.currentTime * fps)); s.value = f;
                     l.textContent = "frame " + f + " / {last}"; }}
  v.addEventListener("timeupdate", show);
  b.onclick = function() {{ if (v.paused) {{ v.play(); b.textContent = "pause"; }}
                           else {{ v.pause(); b.textContent = "play"; }} }};
  s.oninput = function() {{ v.pause(); b.textContent = "play"; v.currentTime = (+s.value + 0.5) / fps; show(); }};
}})();</script>
</div>"""


@dataclass(frozen=True)
class Still:
    """One PNG image (a single pose)."""

    png: bytes
    size: tuple[int, int]

    def __repr__(self) -> str:
        return f"Still({self.size[0]}x{self.size[1]} PNG, {len(self.png) / 1024:.0f} KiB)"

    def _repr_png_(self) -> bytes:
        return self.png

    def array(self) -> np.ndarray:
        """The image as (H, W, 3) uint8."""
        import io

        from PIL import Image

        return np.asarray(Image.open(io.BytesIO(self.png)).convert("RGB"))


@dataclass(frozen=True)
class Viewer:
    """The interactive viewer (:mod:`animkit.apps.html_view`'s self-contained page) for a notebook: shown in an iframe,
    with ``fallback`` (the MP4) shown instead where the output's scripts do not run."""

    page: str
    size: tuple[int, int]  # the iframe's width and height in pixels
    fallback: Animation | None = None

    def __repr__(self) -> str:
        extra = f" + {self.fallback!r}" if self.fallback is not None else ""
        return f"Viewer({len(self.page.encode('utf-8')) / 1e6:.2f} MB page, {self.size[0]}x{self.size[1]}{extra})"

    def save(self, path: str | Path) -> Path:
        """Write the page to ``path`` (atomically): it opens offline in any current browser."""
        from animkit.apps.html_view import write_html

        return write_html(self.page, path).path

    def _repr_html_(self) -> str:
        """The viewer in an iframe (srcdoc), hidden, and the fallback video shown; a script swaps them."""
        k = next(_ids)
        w, h = self.size
        frame = (f'<iframe class="animkit-viewer-frame" width="{w}" height="{h}" style="border:0;display:none" '
                 f'srcdoc="{html.escape(self.page, quote=True)}"></iframe>')
        if self.fallback is None:
            return frame.replace("display:none", "display:block")
        return f"""<div id="animkit-interactive-{k}"><div class="animkit-fallback">{self.fallback._repr_html_()}</div>
{frame}
<script>(function() {{
  var d = document.getElementById("animkit-interactive-{k}");
  d.querySelector(".animkit-fallback").remove();
  d.querySelector("iframe").style.display = "block";
}})();</script></div>"""


def _frame_size(n_panels: int, size: tuple[int, int]) -> tuple[int, int]:
    """The iframe around the page's grid of panels (html_view's columns) and its controls."""
    import math

    columns = n_panels if n_panels <= 4 else math.ceil(math.sqrt(n_panels))
    rows = math.ceil(n_panels / columns)
    return max(columns * (size[0] + 4) + 24, 600), rows * (size[1] + 4) + 100


def _viewer(panels: Sequence[Panel], fps: float, up: Literal["y", "z"], spec: Any, size: tuple[int, int],
            style: Style | None, title: str, fallback: Any) -> Viewer:
    """A :class:`Viewer` of ``panels``; ``fallback()`` encodes the MP4 when the setting keeps one."""
    from animkit.apps.html_view import panels_html

    page = panels_html(panels, fps=fps, up=up, camera_spec=spec, size=size, style=style, title=title)
    return Viewer(page, _frame_size(len(panels), size), fallback() if _SETTING["fallback"] else None)


#: The camera options of ``animkit render`` that :func:`show` takes as keywords.
CAMERA_OPTIONS = ("view", "azimuth", "elevation", "distance", "follow", "fov")


def _camera(scene: Scene, view: str | None = None, azimuth: float | None = None, elevation: float | None = None,
            distance: float | None = None, follow: bool = False, fov: float | None = None) -> Scene:
    """The scene with the camera options of ``animkit render`` applied (render.frames.camera_spec_with)."""
    from animkit.render.frames import camera_spec_with

    return dataclasses.replace(scene, camera=camera_spec_with(scene.camera, fov=fov, view=view, azimuth=azimuth,
                                                              elevation=elevation, distance=distance, follow=follow))


def _scene(scene_or_figure: Scene | Figure | str | Path) -> Scene:
    from animkit.model.figure import Figure
    from animkit.scene import Scene

    if isinstance(scene_or_figure, Scene):
        return scene_or_figure
    if isinstance(scene_or_figure, Figure):
        return Scene(scene_or_figure)
    from animkit.examples import load_file_or_example

    return load_file_or_example(scene_or_figure)


def _encode(render: Any, fmt: Literal["mp4", "gif"]) -> tuple[bytes, Any]:
    """Run ``render(path)`` into a temporary file of format ``fmt``; its bytes and the render's report."""
    with tempfile.TemporaryDirectory(prefix="animkit-show-") as tmp:
        path = Path(tmp) / f"clip.{fmt}"
        report = render(path)
        return path.read_bytes(), report


def show(scene: Scene | Figure | str | Path, clip: str | Clip | None = None, *, size: tuple[int, int] = (480, 360),
         fps: float | None = None, style: Style | None = None, format: Literal["mp4", "gif"] = "mp4",
         interactive: bool | None = None, **camera: Any) -> Animation | Viewer:
    """Render a clip like ``animkit render`` (same options) into an inline :class:`Animation`, or with
    ``interactive=True`` (default: :func:`set_interactive`'s setting) a :class:`Viewer`.

    ``scene`` is a Scene, a Figure, a file or an example's name; ``clip`` a clip's name or a Clip (default: the
    scene's first; a scene without clips shows its rest pose). ``format="gif"`` gives an animated image instead
    of a video (no controls). ``camera``: ``animkit render``'s camera options (:data:`CAMERA_OPTIONS`: ``view``,
    ``azimuth``, ``elevation``, ``distance``, ``follow``, ``fov``).
    """
    from animkit.keyframes import Clip
    from animkit.render.frames import Style, render_clip

    if format not in ("mp4", "gif"):
        raise RenderError(f"format must be 'mp4' or 'gif', got {format!r}")
    for key in camera:
        if key not in CAMERA_OPTIONS:
            raise RenderError(unknown_name("show() camera option", key, CAMERA_OPTIONS))
    sc = _camera(_scene(scene), **camera)
    if clip is None and not sc.clips:
        clip = Clip.from_poses(sc.figure, [0.0], sc.figure.rest_pose()[None], name="rest")
    st = style if style is not None else Style()
    if interactive if interactive is not None else _SETTING["interactive"]:
        from animkit.apps.html_view import scene_panel

        panel, eff = scene_panel(sc, clip, fps=fps)
        name = Path(sc.source).name if sc.source else sc.figure.name
        return _viewer([panel], eff, sc.figure.up, sc.camera, size, st, name,
                       lambda: show(sc, clip, size=size, fps=fps, style=st, format=format, interactive=False))
    data, report = _encode(lambda p: render_clip(sc, p, clip=clip, size=size, fps=fps, style=st, quiet=True), format)
    return Animation(data, "video/mp4" if format == "mp4" else "image/gif", report.frames, report.fps, report.size)


def still(scene: Scene | Figure | str | Path, pose: ArrayLike | None = None, *, size: tuple[int, int] = (480, 360),
          style: Style | None = None, targets: ArrayLike | None = None, view: str | None = None,
          azimuth: float | None = None, elevation: float | None = None, distance: float | None = None,
          fov: float | None = None) -> Still:
    """One pose (default: the rest pose) as a PNG :class:`Still`, framed like ``animkit render`` frames it (a
    character: its own meshes, framed on their surface)."""
    import io

    from PIL import Image

    from animkit.render.frames import FigureRenderer, Style, clip_camera, clip_cameras, mesh_framing_points
    from animkit.render.placed import figure_look

    sc = _camera(_scene(scene), view, azimuth, elevation, distance, False, fov)
    fig = sc.figure
    p = fig.check_pose(fig.rest_pose() if pose is None else pose)
    if p.ndim != 1:
        raise RenderError(f"still draws one pose (D,), got shape {p.shape}; use show() for several")
    tg = None if targets is None else np.asarray(targets, dtype=float).reshape(-1, 3)
    if sc.meshes:  # a character: its own meshes, framed on their surface (never camera, light or empty nodes)
        look = None
        pts = mesh_framing_points(sc.meshes, fig, p[None])
        cam = clip_camera(sc.camera, sc.figure.up, pts if tg is None else np.concatenate([pts, tg]), size=size)
    else:
        look = figure_look(fig, sc.figure.up)
        cam = clip_cameras(sc.camera, sc.figure.up, fig, look, p[None], size=size, extra=tg)[0]
    image = FigureRenderer(fig, cam, up=sc.figure.up, style=style if style is not None else Style(), mesh=look,
                           meshes=sc.meshes).frame(fig.world_batch(p[None])[0], targets=tg)
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG")
    return Still(buf.getvalue(), (image.shape[1], image.shape[0]))


def show_comparison(comparison: Comparison, figure: Figure | None = None, *, size: tuple[int, int] = (300, 300),
                    style: Style | None = None, camera: Any = None, interactive: bool | None = None
                    ) -> Animation | Viewer:
    """The comparison's panels side by side, as ``animkit compare`` draws them, inline (``interactive``: in the
    viewer, one timeline, linked cameras; default: :func:`set_interactive`'s setting)."""
    from animkit.render.frames import Style, render_panels
    from animkit.scene import CameraSpec

    fig = figure if figure is not None else _figure_of(comparison.panels[0].clip)
    panels = comparison_panels(fig, comparison)
    up = _up_of(fig)
    spec = camera if camera is not None else CameraSpec()
    st = style if style is not None else Style()
    if interactive if interactive is not None else _SETTING["interactive"]:
        return _viewer(panels, comparison.fps, up, spec, size, st, f"comparison: {comparison.effector}",
                       lambda: show_comparison(comparison, fig, size=size, style=st, camera=spec, interactive=False))
    data, report = _encode(lambda p: render_panels(panels, p, fps=comparison.fps, up=up, camera_spec=spec,
                                                   size=size, style=st, quiet=True), "mp4")
    return Animation(data, "video/mp4", report.frames, report.fps, report.size)


def _figure_of(clip: Clip) -> Figure:
    from animkit.model.figure import Figure

    if not isinstance(clip.layout, Figure):
        raise RenderError(f"clip {clip.name!r} is not on a Figure; pass the figure")
    return clip.layout


def _up_of(figure: Figure) -> Literal["y", "z"]:
    """A figure's up axis: :attr:`animkit.model.figure.Figure.up` (its reader's, or set by a Scene)."""
    return figure.up


# --- what core values draw in a notebook (animkit.display: their _repr_html_ / _repr_png_ ask for these) ----


def _scene_html(scene: Scene) -> str | None:
    return show(scene)._repr_html_() if scene.clips else None


def _scene_png(scene: Scene) -> bytes | None:
    return None if scene.clips else still(scene)._repr_png_()


def _clip_scene(clip: Clip) -> Scene | None:
    """The clip's figure as a scene (its up axis guessed), or None when the clip is not on a Figure."""
    from animkit.model.figure import Figure
    from animkit.scene import Scene

    return Scene(clip.layout, up=_up_of(clip.layout)) if isinstance(clip.layout, Figure) else None


def _clip_html(clip: Clip) -> str | None:
    scene = _clip_scene(clip)
    if scene is None or not clip.duration:
        return None  # not on a figure: nothing to draw it on; one frame: a still (_clip_png)
    return show(scene, clip)._repr_html_()


def _clip_png(clip: Clip) -> bytes | None:
    scene = _clip_scene(clip)
    if scene is None or clip.duration:
        return None
    return still(scene, clip.sample([0.0])[0])._repr_png_()


def _reach_html(reach: ReachResult) -> str:
    from animkit.render.frames import Panel
    from animkit.scene import CameraSpec

    fig = _figure_of(reach.clip)
    target = reach.target[:3, 3] if np.shape(reach.target) == (4, 4) else reach.target
    panel = Panel(fig, reach.poses, panel_label(reach), targets=np.asarray([target]), trail=reach.trail)
    if _SETTING["interactive"]:
        return _viewer([panel], reach.clip.fps, _up_of(fig), CameraSpec(), (400, 360), None, reach.title,
                       lambda: _reach_animation(panel, reach.clip.fps, fig))._repr_html_()
    return _reach_animation(panel, reach.clip.fps, fig)._repr_html_()


def _reach_animation(panel: Panel, fps: float, fig: Figure) -> Animation:
    from animkit.render.frames import render_panels
    from animkit.scene import CameraSpec

    data, report = _encode(lambda p: render_panels([panel], p, fps=fps, up=_up_of(fig),
                                                   camera_spec=CameraSpec(), size=(400, 360), quiet=True), "mp4")
    return Animation(data, "video/mp4", report.frames, report.fps, report.size)


def _comparison_html(comparison: Comparison) -> str:
    return show_comparison(comparison)._repr_html_()


def ik_result_html(result: IKResult) -> str:
    """An IK result's numbers as a small table, and its error against iteration as an inline SVG curve."""
    e = np.maximum(np.asarray(result.errors, dtype=float), 1e-12)
    rows = [("converged", result.converged), ("reachable", result.reachable), ("reason", result.reason),
            ("position error", f"{result.position_error:.4g}"),
            ("orientation error", f"{result.orientation_error:.4g}"), ("iterations", result.iterations),
            ("solver", result.solver), ("restarts used", result.restarts_used),
            ("time", f"{result.time_s * 1e3:.3g} ms")]
    table = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
                    for k, v in rows)
    svg = ""
    if len(e) >= 2:
        w, h = 240, 90
        y = np.log10(e)
        lo, hi = float(y.min()), float(max(y.max(), y.min() + 1e-9))
        xs = np.linspace(4, w - 4, len(e))
        ys = h - 4 - (y - lo) / (hi - lo) * (h - 8)
        pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(xs, ys, strict=True))
        svg = (f"<svg width='{w}' height='{h}' style='border:1px solid #ccc'><polyline points='{pts}' fill='none' "
               f"stroke='#1f6fd1' stroke-width='1.5'/><text x='6' y='12' font-size='10'>log error, "
               f"{e[0]:.2g} → {e[-1]:.2g}</text></svg>")
    return f"<div style='display:flex;gap:1em'><table>{table}</table>{svg}</div>"


def ik_batch_html(batch: IKBatchResult) -> str:
    """An IK batch as a small table: how many converged, why the others stopped (reason: count), and the median
    and largest position error and iteration count."""
    n = len(batch)
    reasons = {r: batch.reason.count(r) for r in dict.fromkeys(batch.reason)}
    pe = np.asarray(batch.position_error, dtype=float)
    it = np.asarray(batch.iterations)
    rows = [("problems", n), ("converged", f"{int(np.sum(batch.converged))} of {n}"),
            ("reasons", ", ".join(f"{k}: {v}" for k, v in reasons.items()) or "-"), ("solver", batch.solver),
            ("position error (median / max)", f"{np.median(pe):.4g} / {pe.max():.4g}" if n else "-"),
            ("iterations (median / max)", f"{np.median(it):g} / {it.max()}" if n else "-"),
            ("time", f"{batch.time_s * 1e3:.3g} ms")]
    return "<table>" + "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(str(v))}"
                               "</td></tr>" for k, v in rows) + "</table>"


_DRAWINGS: Sequence[tuple[Mime, str, Any]] = (
    ("text/html", "animkit.scene.Scene", _scene_html),
    ("image/png", "animkit.scene.Scene", _scene_png),
    ("text/html", "animkit.keyframes.clip.Clip", _clip_html),
    ("image/png", "animkit.keyframes.clip.Clip", _clip_png),
    ("text/html", "animkit.motion.reach.ReachResult", _reach_html),
    ("text/html", "animkit.motion.reach.Comparison", _comparison_html),
    ("text/html", "animkit.ik.result.IKResult", ik_result_html),
    ("text/html", "animkit.ik.result.IKBatchResult", ik_batch_html),
)
for _mime, _name, _drawer in _DRAWINGS:  # named, not imported: nothing heavy loads before a value is shown
    display.register(_mime, _name, _drawer)
