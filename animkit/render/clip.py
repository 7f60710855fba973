"""Render poses of a figure to frames, and frames to files: one clip, or labelled panels.

Flow per frame: world matrices (one ``world_batch`` per chunk of frames) → placed triangles
(``place_vertices``) → the NumPy rasteriser → overlays (ground grid, target markers, the
effector's trail, joint axes, label) → the streaming writer. One camera serves the whole clip
(and every panel): framed over all frames, so nothing jitters. Frames are streamed in chunks,
so memory stays flat however long the clip.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import RenderError
from ..figure import Figure
from ..progress import ProgressCallback, progress
from ..scene import CameraSpec, Scene, UpAxis
from .camera import Camera, fit_camera, follow_cameras, look_at, view_angles
from .panels import compose_panels
from .raster import draw_grid, draw_markers, draw_polyline, draw_segments, render_triangles
from .scene import FigureMesh, figure_look, framing_points, place_vertices

if TYPE_CHECKING:
    from ..keyframes import Clip

__all__ = ["Style", "Panel", "RenderReport", "FigureRenderer", "camera_spec_with", "clip_camera", "clip_cameras",
           "panel_camera", "panel_cameras", "render_poses", "render_clip", "render_panels", "frame_times", "parse_size"]

Array = NDArray[np.float64]
CHUNK = 256  # frames whose world matrices are computed together


@dataclass(frozen=True)
class Style:
    """How frames look: anti-aliasing, background, grid, overlay colours."""

    supersample: int = 1
    background: tuple[float, float, float] = (1.0, 1.0, 1.0)
    grid: bool = True
    joint_axes: bool = False
    wireframe: bool = False
    target_color: tuple[float, float, float] = (0.85, 0.1, 0.1)
    trail_color: tuple[float, float, float] = (0.10, 0.60, 0.30)  # green: neither side's hue
    grid_color: tuple[float, float, float] = (0.78, 0.78, 0.8)


@dataclass(frozen=True, eq=False)
class Panel:
    """One panel of a comparison: a figure's poses (F, D), a label, target markers and an effector trail."""

    figure: Figure
    poses: Array
    label: str = ""
    targets: Array | None = None  # (K, 3) fixed markers, or (F, K, 3) per frame
    trail: Array | None = None  # (F, 3): drawn up to the current frame


@dataclass(frozen=True)
class RenderReport:
    """What a render wrote: path, frame count, effective fps, seconds spent, and any notice."""

    path: Path
    frames: int
    fps: float
    seconds: float
    size: tuple[int, int]
    message: str | None = None


def parse_size(text: str) -> tuple[int, int]:
    """"640x480" → (640, 480); RenderError for anything else."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise RenderError(f"size {text!r}: expected WIDTHxHEIGHT, e.g. 640x480") from None
    if not (8 <= w <= 8192 and 8 <= h <= 8192):
        raise RenderError(f"size {text!r}: width and height must lie in 8..8192")
    return w, h


def frame_times(duration: float, fps: float, path: str | Path | None = None) -> tuple[Array, float, str | None]:
    """Times 0, 1/fps, … up to ``duration``; for a GIF above 50 fps the rate is lowered first (and said so)."""
    if not (fps > 0 and math.isfinite(fps)):
        raise RenderError(f"fps must be a positive number, got {fps!r}")
    message = None
    if path is not None and str(path).lower().endswith(".gif"):
        from .writers import gif_frame_plan

        n = int(math.floor(duration * fps + 1e-9)) + 1
        _, _, eff, message = gif_frame_plan(fps, n)
        fps = eff
    n = int(math.floor(duration * fps + 1e-9)) + 1
    return np.arange(n) / fps, fps, message


class FigureRenderer:
    """Draws one figure with one camera: meshes built once, each frame placed and rasterised."""

    def __init__(self, figure: Figure, camera: Camera, *, up: UpAxis = "y", style: Style = Style(),
                 mesh: FigureMesh | None = None, grid_extent: float | None = None) -> None:
        self.figure = figure
        self.camera = camera
        self.up = up
        self.style = style
        self.mesh = mesh if mesh is not None else figure_look(figure, up)
        self.size = figure.size()
        self.grid_extent = grid_extent
        self._backdrop: tuple[tuple[object, ...], NDArray[np.uint8]] | None = None
        self._edges: NDArray[np.intp] | None = None

    def frame(self, world: Array, *, targets: Array | None = None, trail: Array | None = None) -> NDArray[np.uint8]:
        """One image for world matrices ``world`` (N, 4, 4)."""
        st = self.style
        verts = place_vertices(self.mesh, world)
        image, depth = render_triangles(self.camera, verts, self.mesh.faces, self.mesh.face_colors,
                                        background=st.background, supersample=st.supersample, depth_out=True)
        if st.grid:  # the ground lies behind the figure: show the backdrop wherever no triangle is
            np.copyto(image, self.backdrop(), where=np.isinf(depth)[:, :, None])
        if st.wireframe and len(self.mesh.faces):
            e = self.edges()
            image = draw_segments(image, self.camera, verts[e[:, 0]], verts[e[:, 1]], (0.1, 0.1, 0.1), 1)
        if st.joint_axes:
            image = self._axes(image, world)
        if trail is not None and len(trail) >= 2:
            image = draw_polyline(image, self.camera, trail, st.trail_color, 2)
        if targets is not None and len(targets):
            image = draw_markers(image, self.camera, np.atleast_2d(targets), st.target_color, 6, "disc")
        return image

    def edges(self) -> NDArray[np.intp]:
        """Each triangle edge once (E, 2): shared edges are drawn once, not once per face."""
        if self._edges is None:
            f = self.mesh.faces
            pairs = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
            self._edges = np.unique(pairs, axis=0)
        return self._edges

    def ground(self) -> tuple[float, float, NDArray[np.float64]]:
        """(spacing, extent, centre) of the grid patch: under the camera's target, as wide as its view,
        about 10 to 25 lines each way."""
        reach = 0.8 * float(np.linalg.norm(np.subtract(self.camera.eye, self.camera.target)))
        extent = self.grid_extent if self.grid_extent is not None else max(1.5 * self.size, reach)
        spacing = _nice(max(self.size / 4.0, extent / 12.0))
        # centred on a grid line nearest the target, so the lines stay put in the world when the camera moves
        centre = np.round(np.asarray(self.camera.target, dtype=float) / spacing) * spacing
        return spacing, max(extent, 4 * spacing), centre

    def backdrop(self) -> NDArray[np.uint8]:
        """The background with the ground grid, drawn once per camera (and style), not once per frame."""
        key = (self.camera, self.up, self.style.background, self.style.grid_color)
        if self._backdrop is None or self._backdrop[0] != key:
            blank = np.empty((self.camera.height, self.camera.width, 3), np.uint8)
            blank[...] = np.round(np.asarray(self.style.background) * 255).astype(np.uint8)
            spacing, extent, center = self.ground()
            self._backdrop = (key, draw_grid(blank, self.camera, self.up, spacing=spacing, extent=extent,
                                             color=self.style.grid_color, center=center))
        return self._backdrop[1]

    def _axes(self, image: NDArray[np.uint8], world: Array) -> NDArray[np.uint8]:
        length = 0.15 * self.size
        o = world[:, :3, 3]
        for k, color in enumerate(((0.9, 0.1, 0.1), (0.1, 0.7, 0.1), (0.1, 0.2, 0.9))):
            image = draw_segments(image, self.camera, o, o + length * world[:, :3, k], color, 2)
        return image

    def frames(self, poses: Array, *, targets: Array | None = None, trail: Array | None = None,
               cameras: Sequence[Camera] | None = None) -> Iterator[NDArray[np.uint8]]:
        """Frames for poses (F, D), world matrices computed a chunk at a time; ``cameras``: one per frame."""
        for start in range(0, len(poses), CHUNK):
            W = self.figure.world_batch(poses[start:start + CHUNK])
            for k in range(len(W)):
                f = start + k
                if cameras is not None:
                    self.camera = cameras[f]
                tgt = None if targets is None else (targets[f] if targets.ndim == 3 else targets)
                yield self.frame(W[k], targets=tgt, trail=None if trail is None else trail[:f + 1])


def _nice(x: float) -> float:
    """The nearest 1, 2 or 5 × 10ⁿ at or below x."""
    if x <= 0 or not math.isfinite(x):
        return 1.0
    e = math.floor(math.log10(x))
    for m in (5, 2, 1):
        if m * 10**e <= x:
            return float(m * 10**e)
    return float(10**e)


def camera_spec_with(spec: CameraSpec, *, fov: float | None = None, view: str | None = None,
                     azimuth: float | None = None, elevation: float | None = None, distance: float | None = None,
                     follow: bool = False) -> CameraSpec:
    """``spec`` with the camera options of the rendering commands applied: a named ``view`` (front, side, top,
    three-quarter) sets azimuth and elevation, ``azimuth``/``elevation`` (degrees) override it, ``distance``
    replaces the fitted distance, ``follow`` tracks the root. A direction or distance drops a fixed eye."""
    kw: dict[str, Any] = {}
    if fov is not None:
        if not 1.0 <= fov <= 170.0:
            raise RenderError(f"--fov {fov:g}: expected degrees in 1..170")
        kw["fov_deg"] = fov
    if view is not None:
        kw["azimuth_deg"], kw["elevation_deg"] = view_angles(view)
    if azimuth is not None:
        if not math.isfinite(azimuth):
            raise RenderError(f"--azimuth {azimuth}: expected a finite number of degrees")
        kw["azimuth_deg"] = azimuth
    if elevation is not None:
        if not -89.0 <= elevation <= 89.0:
            raise RenderError(f"--elevation {elevation:g}: expected degrees in -89..89")
        kw["elevation_deg"] = elevation
    if distance is not None:
        if not (distance > 0 and math.isfinite(distance)):
            raise RenderError(f"--distance {distance:g}: expected a positive number of scene units")
        kw["distance"] = distance
    if kw.keys() - {"fov_deg"}:
        kw["eye"] = kw["target"] = None
    if follow:
        kw["follow"] = True
    return dataclasses.replace(spec, **kw)


def clip_camera(spec: CameraSpec, up: UpAxis, points: Array, *, size: tuple[int, int] | None = None) -> Camera:
    """The scene's camera: its eye/target when given, else framed on ``points`` from its azimuth and elevation
    (at its ``distance`` when given)."""
    w, h = size if size is not None else (spec.width, spec.height)
    if spec.eye is not None:
        target = spec.target if spec.target is not None else points.mean(axis=0)
        return look_at(spec.eye, target, up, fov_y_deg=spec.fov_deg, width=w, height=h)
    return fit_camera(points, up, width=w, height=h, fov_y_deg=spec.fov_deg, azimuth_deg=spec.azimuth_deg,
                      elevation_deg=spec.elevation_deg, distance=spec.distance)


def clip_cameras(spec: CameraSpec, up: UpAxis, figure: Figure, mesh: FigureMesh, poses: Array, *,
                 size: tuple[int, int] | None = None, extra: Array | None = None) -> list[Camera]:
    """One camera per frame of ``poses``: the scene's camera framed over the whole clip (and the ``extra``
    points (P, 3): targets, trails), or with ``spec.follow`` one that moves with the root across the ground
    (:func:`~.camera.follow_cameras`), framed on the figure as seen from its root (``extra`` then ignored).
    """
    if not spec.follow:
        pts = framing_points(figure, mesh, poses)
        if extra is not None and len(extra):
            pts = np.concatenate([pts, np.reshape(extra, (-1, 3))])
        return [clip_camera(spec, up, pts, size=size)] * len(poses)
    roots = figure.world_positions(np.atleast_2d(poses))[:, 0]
    return follow_cameras(clip_camera(spec, up, framing_points(figure, mesh, poses, follow=up), size=size),
                          roots, up)


def panel_camera(panels: Sequence[Panel], spec: CameraSpec, up: UpAxis, size: tuple[int, int]) -> Camera:
    """One camera for every panel: framed on all figures over all frames, targets and trails included."""
    return panel_cameras(panels, dataclasses.replace(spec, follow=False), up, size)[0]


def panel_cameras(panels: Sequence[Panel], spec: CameraSpec, up: UpAxis, size: tuple[int, int]) -> list[Camera]:
    """One camera per frame shared by every panel (:func:`clip_cameras` on all panels' points; a following
    camera follows the first panel's root). Panels shorter than the longest hold their last frame."""
    n = max(len(p.poses) for p in panels)
    if spec.follow:
        p0 = panels[0]
        return clip_cameras(spec, up, p0.figure, figure_look(p0.figure, up), _pad(np.atleast_2d(p0.poses), n),
                            size=size)
    pts = []
    for p in panels:
        pts.append(framing_points(p.figure, figure_look(p.figure, up), p.poses))
        if p.targets is not None:
            pts.append(np.asarray(p.targets, dtype=float).reshape(-1, 3))
        if p.trail is not None:
            pts.append(np.asarray(p.trail, dtype=float).reshape(-1, 3))
    return [clip_camera(spec, up, np.concatenate(pts), size=size)] * n


def render_poses(figure: Figure, poses: ArrayLike, out: str | Path, *, fps: float, camera: Camera | Sequence[Camera],
                 up: UpAxis = "y", style: Style = Style(), targets: ArrayLike | None = None,
                 trail: ArrayLike | None = None, quiet: bool = False, mesh: FigureMesh | None = None,
                 on_progress: ProgressCallback | None = None) -> RenderReport:
    """Render poses (F, D) with one camera (or one per frame) and stream them into ``out`` (GIF, MP4, PNG folder
    or sheet). ``on_progress(done, total)`` after each frame replaces the progress bar (the caller draws)."""
    from .writers import open_writer

    P = figure.check_pose(poses)
    P = np.atleast_2d(P)
    cameras = None if isinstance(camera, Camera) else list(camera)
    if cameras is not None and len(cameras) != len(P):
        raise RenderError(f"got {len(cameras)} cameras for {len(P)} frames: give one camera, or one per frame")
    camera = camera if isinstance(camera, Camera) else cameras[0]  # type: ignore[index]
    renderer = FigureRenderer(figure, camera, up=up, style=style, mesh=mesh)
    tg = None if targets is None else np.asarray(targets, dtype=float)
    tr = None if trail is None else np.asarray(trail, dtype=float)
    t0 = time.perf_counter()
    with open_writer(out, fps, size=(camera.width, camera.height), quiet=quiet) as writer:
        bar = progress(len(P), f"rendering {Path(out).name}", enabled=False if quiet or on_progress else None)
        for k, image in enumerate(renderer.frames(P, targets=tg, trail=tr, cameras=cameras)):
            writer.write(image)
            bar.update()
            if on_progress is not None:
                on_progress(k + 1, len(P))
        bar.close()
    return RenderReport(Path(out), len(P), fps, time.perf_counter() - t0, (camera.width, camera.height),
                        getattr(writer, "message", None))


def render_clip(scene: Scene, out: str | Path, *, clip: str | Clip | None = None, size: tuple[int, int] | None = None,
                fps: float | None = None, style: Style = Style(), quiet: bool = False,
                on_progress: ProgressCallback | None = None) -> RenderReport:
    """Render one of the scene's clips (by name, or a Clip) to ``out``, framed over the whole clip
    (``on_progress``: see :func:`render_poses`)."""
    c = scene.clip(clip) if clip is None or isinstance(clip, str) else clip
    assert c.duration is not None  # Clip.__post_init__ resolves it to a float
    times, eff_fps, message = frame_times(c.duration, fps if fps is not None else c.fps, out)
    poses = c.sample(times)
    mesh = figure_look(scene.figure, scene.up)
    cameras = clip_cameras(scene.camera, scene.up, scene.figure, mesh, poses, size=size)
    if message and not quiet:
        print(f"animkit: {message}", file=sys.stderr)
    report = render_poses(scene.figure, poses, out, fps=eff_fps, camera=cameras, up=scene.up, style=style,
                          quiet=quiet, mesh=mesh, on_progress=on_progress)
    return RenderReport(report.path, report.frames, report.fps, report.seconds, report.size, message)


def render_panels(panels: Sequence[Panel], out: str | Path, *, fps: float, up: UpAxis = "y",
                  camera_spec: CameraSpec = CameraSpec(), size: tuple[int, int] = (400, 360),
                  columns: int | None = None, style: Style = Style(), quiet: bool = False,
                  on_progress: ProgressCallback | None = None) -> RenderReport:
    """Render N panels (each ``size``) into one labelled grid per frame, one shared camera, to ``out``.

    Panels shorter than the longest hold their last frame.
    """
    from .writers import open_writer

    if not panels:
        raise RenderError("render_panels needs at least one panel")
    cameras = panel_cameras(panels, camera_spec, up, size)
    renderers = [FigureRenderer(p.figure, cameras[0], up=up, style=style) for p in panels]
    n = max(len(p.poses) for p in panels)
    follow = cameras if camera_spec.follow else None
    labels = [p.label for p in panels]
    if columns is None:
        columns = len(panels) if len(panels) <= 4 else math.ceil(math.sqrt(len(panels)))
    first = compose_panels([np.zeros((size[1], size[0], 3), np.uint8)] * len(panels), labels, columns)
    t0 = time.perf_counter()
    streams = [r.frames(_pad(p.poses, n), targets=None if p.targets is None else np.asarray(p.targets, float),
                        trail=None if p.trail is None else _pad(np.asarray(p.trail, float), n), cameras=follow)
               for r, p in zip(renderers, panels, strict=True)]
    with open_writer(out, fps, size=(first.shape[1], first.shape[0]), quiet=quiet) as writer:
        bar = progress(n, f"rendering {Path(out).name}", enabled=False if quiet or on_progress else None)
        for k in range(n):
            writer.write(compose_panels([next(s) for s in streams], labels, columns))
            bar.update()
            if on_progress is not None:
                on_progress(k + 1, n)
        bar.close()
    return RenderReport(Path(out), n, fps, time.perf_counter() - t0, (first.shape[1], first.shape[0]),
                        getattr(writer, "message", None))


def _pad(a: Array, n: int) -> Array:
    if len(a) >= n:
        return a[:n]
    return np.concatenate([a, np.repeat(a[-1:], n - len(a), axis=0)])


