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
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from animkit import limits
from animkit.errors import AnimkitError, RenderError
from animkit.limits import frame_count
from animkit.model.figure import Figure
from animkit.progress import ProgressCallback, progress
from animkit.render.camera import Camera, fit_camera, follow_cameras, look_at, view_angles
from animkit.render.overlays import disc_coverage
from animkit.render.panel_threads import RowSource, panel_rows
from animkit.render.panels import PanelGrid
from animkit.render.placed import FigureMesh, figure_look, framing_points, place_vertices, prepared_look
from animkit.render.raster import (
    Backdrop,
    Surface,
    blend,
    check_frame_buffer,
    compiled_pays,
    draw_markers,
    draw_segments,
    grid_backdrop,
    render_surfaces,
    rgb8,
    segment_coverage,
    segment_coverage_each,
)
from animkit.scene import CameraSpec, Scene, UpAxis

if TYPE_CHECKING:
    from animkit.keyframes import Clip
    from animkit.look.mesh import Mesh

__all__ = ["Style", "Panel", "RenderReport", "FigureRenderer", "camera_spec_with", "clip_camera", "clip_cameras",
           "panel_camera", "panel_cameras", "render_poses", "mesh_framing_points", "render_clip", "render_panels",
           "frame_times", "parse_size"]

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
    bones: bool = False  # over a character's meshes, the skeleton as lines between joint origins
    bone_color: tuple[float, float, float] = (0.1, 0.1, 0.1)


@dataclass(frozen=True, eq=False)
class Panel:
    """One panel of a comparison: a figure's poses (F, D), a label, target markers and an effector trail."""

    figure: Figure
    poses: Array
    label: str = ""
    targets: Array | None = None  # (K, 3) fixed markers, or (F, K, 3) per frame
    trail: Array | None = None  # (F, 3): drawn up to the current frame
    meshes: tuple[Mesh, ...] = ()  # a character's skinned or rigid meshes (drawn instead of the bones)


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
    if not (8 <= w <= limits.MAX_IMAGE_SIDE and 8 <= h <= limits.MAX_IMAGE_SIDE):
        raise RenderError(f"size {text!r}: width and height must lie in 8..{limits.MAX_IMAGE_SIDE} (animkit.limits)")
    return w, h


def frame_times(duration: float, fps: float, path: str | Path | None = None) -> tuple[Array, float, str | None]:
    """Times 0, 1/fps, … up to ``duration``; for a GIF above 50 fps the rate is lowered first (and said so)."""
    try:
        n = frame_count(duration, fps, "render")
    except AnimkitError as exc:
        raise RenderError(str(exc)) from None
    message = None
    if path is not None and str(path).lower().endswith(".gif"):
        from animkit.render.writers import gif_frame_plan

        _, _, eff, message = gif_frame_plan(fps, n)
        fps = eff
        n = frame_count(duration, fps, "render")
    return np.arange(n) / fps, fps, message


_BACKDROPS: dict[tuple[object, ...], Backdrop | NDArray[np.uint8]] = {}  # read-only images; under _BACKDROPS_LOCK
_BACKDROPS_LOCK = threading.Lock()


class FigureRenderer:
    """Draws one figure with one camera: meshes built once, each frame placed and rasterised.

    ``jit`` is passed to :func:`render_surfaces` (None: decided per image; callers that know the whole job's size
    pass :func:`compiled_pays` of it).
    """

    def __init__(self, figure: Figure, camera: Camera, *, up: UpAxis | None = None, style: Style = Style(),
                 mesh: FigureMesh | None = None, grid_extent: float | None = None, jit: bool | None = None,
                 meshes: Sequence[Mesh] = ()) -> None:
        up = figure.up if up is None else up
        self.figure = figure
        self.meshes = tuple(meshes)
        self._looks = [_mesh_look(m) for m in self.meshes]
        self._bone_pairs = _bone_pairs(figure, self.meshes) if self.meshes else np.zeros((0, 2), np.intp)
        self.camera = camera
        self.up = up
        self.style = style
        self.mesh = mesh if mesh is not None else (_NO_MESH if self.meshes else figure_look(figure, up))
        self.size = figure.size()
        self.grid_extent = grid_extent
        self.jit = jit
        self._colors = rgb8(self.mesh.face_colors, "face_colors") if len(self.mesh.faces) else \
            np.zeros((0, 3), np.uint8)
        self._edges: NDArray[np.intp] | None = None
        self._trail_pts: Array | None = None
        self._trail_alpha: NDArray[np.float32] | None = None
        self._trail_pix = np.zeros(0, np.int64)
        self._trail_camera: Camera | None = None
        self._trail_plan: tuple[Camera, Array, NDArray[np.intp], NDArray[np.int64], NDArray[np.float32]] | None = None
        self._held: tuple[Camera, Array, NDArray[np.uint8] | None, list[Surface]] | None = None  # see _drawn
        self._targets: tuple[object, NDArray[np.int64], NDArray[np.float32]] | None = None  # see _target_cover

    def surfaces(self, world: Array) -> list[Surface]:
        """What one frame draws for world matrices ``world`` (N, 4, 4): the figure's shapes (or bones), and each
        character mesh placed by its skin (or node), smooth-shaded with its base colour and texture."""
        out = []
        if len(self.mesh.faces):
            # back faces are culled while every node keeps its handedness (a mirroring matrix turns them forward)
            rigid = self.mesh.closed is not None and bool(np.all(np.linalg.det(world[:, :3, :3]) > 0))
            out.append(Surface(place_vertices(self.mesh, world), self.mesh.faces, face_colors=self._colors,
                               closed=self.mesh.closed if rigid else None))
        for m, (color, tex) in zip(self.meshes, self._looks, strict=True):
            if not len(m.faces):
                continue
            out.append(Surface(m.positions(world)[0], np.asarray(m.faces, dtype=np.int64), color=color,
                               normals=m.normals(world)[0], uvs=m.uvs if tex is not None else None, texture=tex))
        return out

    def frame(self, world: Array, *, targets: Array | None = None, trail: Array | None = None,
              out: NDArray[np.uint8] | None = None) -> NDArray[np.uint8]:
        """One image for world matrices ``world`` (N, 4, 4), drawn into ``out`` (a C-contiguous (H, W, 3) uint8
        array, returned) when given, else into a new image; the overlays are drawn into the same image."""
        st = self.style
        image, srfs = self._drawn(world, out)
        if st.wireframe and len(self.mesh.faces):
            e = self.edges()
            verts = srfs[0].vertices
            draw_segments(image, self.camera, verts[e[:, 0]], verts[e[:, 1]], (0.1, 0.1, 0.1), 1, inplace=True)
        if st.bones and len(self._bone_pairs):
            o = world[:, :3, 3]
            draw_segments(image, self.camera, o[self._bone_pairs[:, 0]], o[self._bone_pairs[:, 1]], st.bone_color, 2,
                          inplace=True)
            draw_markers(image, self.camera, o[np.unique(self._bone_pairs)], st.bone_color, 2.5, "disc",
                         inplace=True)
        if st.joint_axes:
            self._axes(image, world)
        if trail is not None and len(trail) >= 2:
            self._trail(image, np.asarray(trail, dtype=float))
        if targets is not None and len(targets):
            blend(image, *self._target_cover(np.asarray(targets, dtype=float)), st.target_color, inplace=True)
        return image

    def _target_cover(self, targets: Array) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """The 6 px target discs' (pixels, α) (:func:`disc_coverage`), once while camera and targets stay."""
        key = (self.camera, targets.shape, targets.tobytes())
        if self._targets is None or self._targets[0] != key:
            self._targets = (key, *disc_coverage(self.camera, targets, 6.0))
        return self._targets[1], self._targets[2]

    def _drawn(self, world: Array, out: NDArray[np.uint8] | None) -> tuple[NDArray[np.uint8], list[Surface]]:
        """(the surfaces of ``world`` rasterised, overlays not yet drawn; the surfaces). A held pose (matrices and
        camera as the frame before: a reach's hold, a short panel's padding) is drawn twice, then copied."""
        held = self._held
        same = held is not None and held[0] == self.camera and np.array_equal(held[1], world)
        if same and held is not None and held[2] is not None:
            image = np.empty_like(held[2]) if out is None else check_frame_buffer(out, self.camera)
            np.copyto(image, held[2])
            return image, held[3]
        st, srfs = self.style, self.surfaces(world)
        image = render_surfaces(self.camera, srfs, background=st.background, backdrop=self.backdrop() if st.grid
                                else None, supersample=st.supersample, jit=self.jit, out=out)
        self._held = (self.camera, world.copy(), image.copy() if same else None, srfs)
        return image, srfs

    def _trail(self, image: NDArray[np.uint8], trail: Array) -> NDArray[np.uint8]:
        """The polyline through ``trail`` (2 px), drawing only the segments added since the last frame:
        α = max over segments, so adding segments to the kept α equals drawing the whole polyline."""
        prev = self._trail_pts
        if prev is None or len(prev) > len(trail) or not np.array_equal(trail[:len(prev)], prev) or \
                self._trail_camera != self.camera:  # a moving camera: the trail is drawn anew
            self._trail_camera = self.camera
            self._trail_alpha = np.zeros(self.camera.width * self.camera.height, np.float32)
            self._trail_pix = np.zeros(0, np.int64)
            prev = trail[:1]
        alpha = self._trail_alpha
        assert alpha is not None
        m = len(prev)
        if len(trail) > m:
            pix, a = self._trail_coverage(trail, m)
            fresh = np.sort(pix[alpha[pix] == 0])  # pixels the trail did not cover yet, each once
            fresh = fresh[np.r_[True, fresh[1:] != fresh[:-1]]] if len(fresh) else fresh
            np.maximum.at(alpha, pix, a)
            self._trail_pix = np.concatenate([self._trail_pix, fresh])
        self._trail_pts = trail.copy()
        return blend(image, self._trail_pix, alpha[self._trail_pix], self.style.trail_color, inplace=True)

    def _trail_coverage(self, trail: Array, m: int) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """(pixels, α) of the segments trail[m − 1] → … → trail[−1]: from the whole trail's coverage when
        :meth:`frames` computed it for this camera (one call for the clip), else drawn now."""
        plan = self._trail_plan
        n = len(trail)
        if plan is not None and plan[0] is self.camera and n <= len(plan[1]) and np.array_equal(trail, plan[1][:n]):
            bounds, pix, a = plan[2], plan[3], plan[4]
            return pix[bounds[m - 1]:bounds[n - 1]], a[bounds[m - 1]:bounds[n - 1]]
        return segment_coverage(self.camera, trail[m - 1:-1], trail[m:], 2.0)

    def _plan_trail(self, trail: Array) -> None:
        """Each segment's coverage of the whole ``trail`` with this camera, once (:func:`segment_coverage_each`);
        segment j's entries are [bounds[j], bounds[j + 1])."""
        seg, pix, a = segment_coverage_each(self.camera, trail[:-1], trail[1:], 2.0)
        bounds = np.searchsorted(seg, np.arange(len(trail)))
        self._trail_plan = (self.camera, trail.copy(), bounds, pix, a)

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

    def backdrop(self) -> Backdrop | NDArray[np.uint8]:
        """The background with the ground grid (:func:`grid_backdrop`), drawn once per camera, grid and colours —
        shared by every renderer (panel) that asks for the same (read-only). The compiled path keeps it sparse and
        paints it into each frame; the NumPy path copies a full image, which is faster there."""
        spacing, extent, center = self.ground()
        key = (self.camera, self.up, self.style.background, self.style.grid_color, spacing, extent,
               tuple(center), bool(self.jit))
        with _BACKDROPS_LOCK:
            bd = _BACKDROPS.get(key)
        if bd is None:
            bd = grid_backdrop(self.camera, self.up, background=self.style.background, spacing=spacing,
                               extent=extent, color=self.style.grid_color, center=center, jit=bool(self.jit))
            if not self.jit:
                bd = bd.image()
            for a in (bd.pixels, bd.colors) if isinstance(bd, Backdrop) else (bd,):
                a.setflags(write=False)
            with _BACKDROPS_LOCK:  # two threads may draw the same one; either copy is right
                if len(_BACKDROPS) >= 8:
                    _BACKDROPS.pop(next(iter(_BACKDROPS)))
                _BACKDROPS[key] = bd
        return bd

    def _axes(self, image: NDArray[np.uint8], world: Array) -> NDArray[np.uint8]:
        length = 0.15 * self.size
        o = world[:, :3, 3]
        for k, color in enumerate(((0.9, 0.1, 0.1), (0.1, 0.7, 0.1), (0.1, 0.2, 0.9))):
            draw_segments(image, self.camera, o, o + length * world[:, :3, k], color, 2, inplace=True)
        return image

    def frames(self, poses: Array, *, targets: Array | None = None, trail: Array | None = None,
               cameras: Sequence[Camera] | None = None, out: NDArray[np.uint8] | None = None
               ) -> Iterator[NDArray[np.uint8]]:
        """Frames for poses (F, D), streamed: world matrices computed a chunk at a time, each image yielded as it is
        drawn; ``cameras``: one per frame. ``out``: (F, H, W, 3) uint8, frame f drawn into out[f] (and yielded), so
        a caller keeping every frame pays for one buffer; else each frame is a new image."""
        if out is not None and (not isinstance(out, np.ndarray) or len(out) != len(poses) or out.ndim != 4):
            raise RenderError(f"out= must be one (H, W, 3) uint8 image per pose: ({len(poses)}, H, W, 3); got "
                              f"{getattr(out, 'shape', type(out).__name__)}")
        if trail is not None and cameras is None and len(trail) >= 2:
            self._plan_trail(np.asarray(trail, dtype=float))
        for start in range(0, len(poses), CHUNK):
            W = self.figure.world_batch(poses[start:start + CHUNK])
            for k in range(len(W)):
                f = start + k
                if cameras is not None:
                    self.camera = cameras[f]
                tgt = None if targets is None else (targets[f] if targets.ndim == 3 else targets)
                yield self.frame(W[k], targets=tgt, trail=None if trail is None else trail[:f + 1],
                                 out=None if out is None else out[f])


_NO_MESH = FigureMesh(np.zeros((0, 3)), np.zeros(0, np.intp), np.zeros((0, 3), np.intp), np.zeros((0, 3)),
                      np.zeros(0))


def _mesh_look(mesh: Mesh) -> tuple[NDArray[np.uint8], NDArray[np.uint8] | None]:
    """(display colour (3,) uint8, texture (h, w, 3|4) or None): the base colour factor, linear RGB, encoded as sRGB
    (c ≤ 0.0031308: 12.92 c, else 1.055 c^(1/2.4) − 0.055), so that an sRGB texture times it stays in display space."""
    c = np.clip(np.asarray(mesh.base_color, dtype=float)[:3], 0.0, 1.0)
    srgb = np.where(c <= 0.0031308, 12.92 * c, 1.055 * np.power(c, 1 / 2.4) - 0.055)
    tex = None
    if mesh.texture is not None and mesh.uvs is not None:
        tex = np.ascontiguousarray(mesh.texture[..., :3])  # RGB, once (the shader reads no alpha)
    return np.round(srgb * 255).astype(np.uint8), tex


def _bone_pairs(figure: Figure, meshes: Sequence[Mesh] = ()) -> NDArray[np.intp]:
    """(parent, child) node rows of the skeleton drawn by ``--bones``: every arc with a parent, or, for skinned
    meshes, the arcs between two of their skins' joints (not the scene's helper nodes above the armature)."""
    index = {n: i for i, n in enumerate(figure.node_names)}
    pairs = [(index[a.parent.name], index[a.child.name]) for a in figure.arcs() if a.parent is not None]
    joints = {int(j) for m in meshes if m.skin is not None for j in m.skin.joint_index}
    if joints:
        pairs = [(p, c) for p, c in pairs if p in joints and c in joints]
    return np.asarray(pairs, dtype=np.intp).reshape(-1, 2)


def mesh_framing_points(meshes: Sequence[Mesh], figure: Figure, poses: Array, *, max_frames: int = 60) -> Array:
    """Points bounding the meshes over a clip: their vertices at up to ``max_frames`` evenly spaced frames (P, 3).

    A character is framed on these alone: its skinned or rigid surface, never its nodes (a Blender export's camera
    and light nodes, empty nodes far from the body)."""
    poses = np.atleast_2d(poses)
    if not meshes:
        return np.zeros((0, 3))
    idx = np.unique(np.linspace(0, len(poses) - 1, min(max_frames, len(poses))).round().astype(int))
    W = figure.world_batch(poses[idx])
    return np.concatenate([m.positions(W).reshape(-1, 3) for m in meshes])


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


def _looks(panels: Sequence[Panel], up: UpAxis) -> dict[int, FigureMesh]:
    """:func:`figure_look` once per distinct figure of the panels drawn by it, not by their own meshes (keyed by
    ``id``; panels often share one)."""
    drawn = {id(p.figure): p for p in panels if not p.meshes}.values()
    return {id(p.figure): prepared_look(p.figure, up) for p in drawn}


def panel_cameras(panels: Sequence[Panel], spec: CameraSpec, up: UpAxis, size: tuple[int, int],
                  looks: dict[int, FigureMesh] | None = None) -> list[Camera]:
    """One camera per frame shared by every panel (:func:`clip_cameras` on all panels' points; a following
    camera follows the first panel's root). Panels shorter than the longest hold their last frame. ``looks``:
    :func:`_looks` of the panels, when the caller has them."""
    n = max(len(p.poses) for p in panels)
    looks = looks if looks is not None else _looks(panels, up)
    if spec.follow:
        p0 = panels[0]
        look = looks[id(p0.figure)] if id(p0.figure) in looks else figure_look(p0.figure, up)
        return clip_cameras(spec, up, p0.figure, look, _pad(np.atleast_2d(p0.poses), n),
                            size=size)
    pts = []
    for p in panels:
        if p.meshes:
            pts.append(mesh_framing_points(p.meshes, p.figure, p.poses))  # the surface, not empty nodes
        else:
            pts.append(framing_points(p.figure, looks[id(p.figure)], p.poses))
        if p.targets is not None:
            pts.append(np.asarray(p.targets, dtype=float).reshape(-1, 3))
        if p.trail is not None:
            pts.append(np.asarray(p.trail, dtype=float).reshape(-1, 3))
    return [clip_camera(spec, up, np.concatenate(pts), size=size)] * n


def _folder_options(out: str | Path, overwrite: bool) -> dict[str, Any]:
    """``overwrite`` for a PNG-folder output (the only writer that can mix into what is there)."""
    from animkit.render.writers import writer_kind

    return {"overwrite": overwrite} if writer_kind(out) == "png-dir" else {}


def render_poses(panel: Panel, out: str | Path, *, fps: float, camera: Camera | Sequence[Camera],
                 up: UpAxis | None = None,
                 style: Style = Style(), quiet: bool = False, mesh: FigureMesh | None = None, overwrite: bool = False,
                 on_progress: ProgressCallback | None = None) -> RenderReport:
    """Render a panel's poses (F, D) with one camera (or one per frame) and stream them into ``out`` (GIF, MP4, PNG
    folder or sheet), with its target markers and trail; its ``meshes`` (a loaded character's) are drawn on the
    figure instead of its bones (its label is not drawn). A PNG folder that exists and is not empty is written only
    with ``overwrite``. ``on_progress(done, total)`` after each frame replaces the progress bar (the caller draws)."""
    from animkit.render.writers import open_writer

    figure, meshes, targets, trail = panel.figure, panel.meshes, panel.targets, panel.trail
    up = figure.up if up is None else up
    P = np.atleast_2d(figure.check_pose(panel.poses))
    cameras = None if isinstance(camera, Camera) else list(camera)
    if cameras is not None and len(cameras) != len(P):
        raise RenderError(f"got {len(cameras)} cameras for {len(P)} frames: give one camera, or one per frame")
    camera = camera if isinstance(camera, Camera) else cameras[0]  # type: ignore[index]
    samples = len(P) * camera.width * camera.height * style.supersample ** 2
    renderer = FigureRenderer(figure, camera, up=up, style=style, mesh=mesh, jit=compiled_pays(samples),
                              meshes=meshes)
    tg = None if targets is None else np.asarray(targets, dtype=float)
    tr = None if trail is None else np.asarray(trail, dtype=float)
    t0 = time.perf_counter()
    with open_writer(out, fps, size=(camera.width, camera.height), quiet=quiet,
                     **_folder_options(out, overwrite)) as writer:
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
                overwrite: bool = False, on_progress: ProgressCallback | None = None) -> RenderReport:
    """Render one of the scene's clips (by name, or a Clip) to ``out``, framed over the whole clip
    (``on_progress``: see :func:`render_poses`)."""
    c = scene.clip(clip) if clip is None or isinstance(clip, str) else clip
    assert c.duration is not None  # Clip.__post_init__ resolves it to a float
    times, eff_fps, message = frame_times(c.duration, fps if fps is not None else c.fps, out)
    poses = c.sample(times)
    if scene.meshes:  # a character: framed on its skinned vertices (and joints) over the clip
        mesh = None
        pts = mesh_framing_points(scene.meshes, scene.figure, poses)  # the surface only: never cameras, lights
        cameras = [clip_camera(scene.camera, scene.up, pts, size=size)] * len(poses)
    else:
        mesh = figure_look(scene.figure, scene.up)
        cameras = clip_cameras(scene.camera, scene.up, scene.figure, mesh, poses, size=size)
    if message and not quiet:
        print(f"animkit: {message}", file=sys.stderr)
    report = render_poses(Panel(scene.figure, poses, meshes=tuple(scene.meshes)), out, fps=eff_fps, camera=cameras,
                          up=scene.up, style=style, quiet=quiet, mesh=mesh, overwrite=overwrite,
                          on_progress=on_progress)
    return RenderReport(report.path, report.frames, report.fps, report.seconds, report.size, message)


def render_panels(panels: Sequence[Panel], out: str | Path, *, fps: float, up: UpAxis | None = None,
                  camera_spec: CameraSpec = CameraSpec(), size: tuple[int, int] = (400, 360),
                  columns: int | None = None, style: Style = Style(), quiet: bool = False,
                  overwrite: bool = False, on_progress: ProgressCallback | None = None,
                  rows: RowSource | None = None) -> RenderReport:
    """Render N panels (each ``size``) into one labelled grid per frame, one shared camera, to ``out``.

    Panels shorter than the longest hold their last frame. ``up``: default the first panel's figure's. ``rows``: how
    the frame streams advance (default :func:`~animkit.render.panel_threads.panel_rows`, on threads).
    """
    from animkit.render.writers import open_writer

    if not panels:
        raise RenderError("render_panels needs at least one panel")
    up = panels[0].figure.up if up is None else up
    looks = _looks(panels, up)
    cameras = panel_cameras(panels, camera_spec, up, size, looks)
    n = max(len(p.poses) for p in panels)
    follow = cameras if camera_spec.follow else None
    jit = compiled_pays(n * len(panels) * size[0] * size[1] * style.supersample ** 2)
    renderers = [FigureRenderer(p.figure, cameras[0], up=up, style=style, jit=jit, meshes=p.meshes,
                                mesh=None if p.meshes else looks[id(p.figure)]) for p in panels]
    if columns is None:
        columns = len(panels) if len(panels) <= 4 else math.ceil(math.sqrt(len(panels)))
    grid = PanelGrid(len(panels), size, [p.label for p in panels], columns)  # labels drawn at the first compose,
    gh, gw = grid.shape  # once the panels' drawing has started (rows: forked processes)
    for r in renderers if style.grid else ():  # the shared grid drawn once, before any thread or process draws
        r.backdrop()
    t0 = time.perf_counter()
    streams = [r.frames(_pad(p.poses, n), targets=None if p.targets is None else np.asarray(p.targets, float),
                        trail=None if p.trail is None else _pad(np.asarray(p.trail, float), n), cameras=follow)
               for r, p in zip(renderers, panels, strict=True)]
    with open_writer(out, fps, size=(gw, gh), quiet=quiet,
                     **_folder_options(out, overwrite)) as writer:
        bar = progress(n, f"rendering {Path(out).name}", enabled=False if quiet or on_progress else None)
        composed = None  # one image, composed into frame after frame (a writer keeps no frame it was given)
        for k, row in enumerate((rows or panel_rows)(streams, n)):
            composed = grid.compose(row, out=composed)
            writer.write(composed)
            bar.update()
            if on_progress is not None:
                on_progress(k + 1, n)
        bar.close()
    return RenderReport(Path(out), n, fps, time.perf_counter() - t0, (gw, gh),
                        getattr(writer, "message", None))


def _pad(a: Array, n: int) -> Array:
    return a[:n] if len(a) >= n else np.concatenate([a, np.repeat(a[-1:], n - len(a), axis=0)])


