"""An interactive window on a scene: the headless NumPy frames, shown live.

Each frame is drawn by the same :class:`~animkit.render.frames.FigureRenderer` that ``animkit render`` uses
(optionally at ``render_scale`` of the window size) and blitted as one texture, scaled to the window with
GL_LINEAR; the window adds only a progress slider and a HUD line on top. So what the viewer shows is what
the headless render writes.

Keys: space play/pause, ←/→ step a frame (Home/End: first/last), w wireframe, a joint axes, g grid,
r reset the camera, q/Esc close. Mouse: left-drag orbits, the scroll wheel zooms, click or drag the slider
at the bottom to scrub.

pyglet is imported only when a window opens (importing ``pyglet.gl`` already needs a display); with no
display :class:`Viewer` raises :class:`~animkit.errors.RenderError`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import RenderError
from animkit.render.camera import Camera, orbit
from animkit.render.frames import FigureRenderer, Style, clip_camera
from animkit.render.placed import figure_look, framing_points
from animkit.scene import Scene

if TYPE_CHECKING:
    from animkit.keyframes import Clip

__all__ = ["Viewer", "view", "NO_DISPLAY"]

Array = NDArray[np.float64]

NO_DISPLAY = ("animkit view needs a display; set DISPLAY or run under xvfb-run; "
              "headless rendering: animkit render")
SLIDER_HEIGHT = 28  # pixels at the bottom of the window that belong to the slider
_HELP = "space play/pause  <-/-> step  drag orbit  scroll zoom  w wireframe  a axes  g grid  r reset  q quit"


def _import_pyglet() -> Any:
    """pyglet with its window and GL modules loaded; RenderError when there is no display or no pyglet."""
    if sys.platform.startswith("linux") and not os.environ.get("DISPLAY"):
        try:
            import pyglet
        except ImportError:
            raise RenderError(NO_DISPLAY) from None
        if not pyglet.options["headless"]:
            raise RenderError(NO_DISPLAY)
    try:
        import pyglet
        import pyglet.gl
        import pyglet.window  # noqa: F401  (connects to the display: raises without one)
    except ImportError as exc:
        raise RenderError(f"animkit view needs pyglet>=2 ({exc}); headless rendering: animkit render") from None
    except Exception as exc:  # pyglet's own NoSuchDisplayException and friends
        shown = os.environ.get("DISPLAY")
        raise RenderError(f"{NO_DISPLAY} (DISPLAY={shown!r}: {type(exc).__name__}: {exc})") from exc
    return pyglet


def _orbit_angles(direction: Array, up: str) -> tuple[float, float]:
    """(azimuth, elevation) in degrees of a unit eye direction: the inverse of ``orbit_offset``."""
    d = direction / np.linalg.norm(direction)
    if up == "y":
        el, az = math.asin(float(np.clip(d[1], -1, 1))), math.atan2(d[0], d[2])
    else:
        el, az = math.asin(float(np.clip(d[2], -1, 1))), math.atan2(d[0], -d[1])
    return math.degrees(az), math.degrees(el)


class Viewer:
    """A window showing ``scene`` playing clip ``clip`` (a name, a Clip, or None: the first clip, else the rest
    pose), with ``targets`` (K, 3) drawn as markers, at window size ``size`` (w, h).

    ``render_scale`` < 1 renders the NumPy frames smaller and scales them up (GL_LINEAR) for speed.
    Everything but :meth:`run` works without the event loop (for tests and scripts): :meth:`step`,
    :meth:`set_frame`, :meth:`orbit`, :meth:`zoom`, the toggles, :meth:`draw`, :meth:`read_framebuffer`,
    :meth:`close`.
    """

    def __init__(self, scene: Scene, clip: str | Clip | None = None, *, targets: ArrayLike | None = None,
                 size: tuple[int, int] = (800, 600), render_scale: float = 1.0, style: Style = Style(),
                 visible: bool = True) -> None:
        self._pyglet = _import_pyglet()  # first: fail fast without a display
        w, h = (int(v) for v in size)
        if not (64 <= w <= 8192 and 64 <= h <= 8192):
            raise RenderError(f"viewer size must lie in 64..8192 each way, got {size!r}")
        if not (0.05 <= render_scale <= 1.0):
            raise RenderError(f"render_scale must lie in 0.05..1, got {render_scale!r}")
        self.scene = scene
        self.figure = scene.figure
        if clip is None and not scene.clips:
            self.clip: Clip | None = None
            self.clip_name = "rest pose"
            self.fps = 30.0
            self.poses: Array = self.figure.rest_pose()[None, :]
        else:
            c = scene.clip(clip) if clip is None or isinstance(clip, str) else clip
            self.clip, self.clip_name, self.fps = c, c.name, float(c.fps)
            self.poses = np.atleast_2d(c.sample(c.frame_times()))
        self.targets: Array | None = None
        if targets is not None:
            t = np.asarray(targets, dtype=float)
            t = t.reshape(-1, 3) if t.ndim >= 1 and t.size % 3 == 0 else t
            if t.ndim != 2 or t.shape[1] != 3 or not np.all(np.isfinite(t)):
                raise RenderError(f"targets must be finite points shaped (K, 3), got shape {np.shape(targets)}")
            self.targets = t
        self.render_scale = float(render_scale)
        self.style = style
        self.frame_index = 0
        self.playing = False
        self.render_ms = 0.0

        self._mesh = figure_look(self.figure, scene.up)
        pts = framing_points(self.figure, self._mesh, self.poses)
        if self.targets is not None:
            pts = np.concatenate([pts, self.targets])
        self._framing = pts
        self._home = clip_camera(scene.camera, scene.up, pts, size=self._render_size(w, h))
        self._reset_orbit()
        self._renderer = FigureRenderer(self.figure, self._home, up=scene.up, style=style, mesh=self._mesh)
        self._world_cache: tuple[int, Array] | None = None
        self._image_key: tuple[Any, ...] | None = None
        self._time = 0.0
        self._drag: str | None = None
        self._closed = False
        self._open_window(w, h, visible)

    # --- set-up -------------------------------------------------------------------------------------

    def _render_size(self, w: int, h: int) -> tuple[int, int]:
        return max(8, round(w * self.render_scale)), max(8, round(h * self.render_scale))

    def _reset_orbit(self) -> None:
        cam = self._home
        self._target = np.asarray(cam.target, dtype=float)
        offset = np.asarray(cam.eye, dtype=float) - self._target
        self._distance = float(np.linalg.norm(offset))
        self._azimuth, self._elevation = _orbit_angles(offset, self.scene.up)
        self._home_distance = self._distance
        self._camera = cam

    def _open_window(self, w: int, h: int, visible: bool) -> None:
        pyglet = self._pyglet
        gl = pyglet.gl
        try:
            self.window = pyglet.window.Window(w, h, caption=f"animkit: {self.figure.name} - {self.clip_name}",
                                               resizable=True, visible=visible)
        except Exception as exc:  # no GL context, bad display
            raise RenderError(f"animkit view could not open a window ({type(exc).__name__}: {exc}); "
                              f"{NO_DISPLAY}") from exc
        self._gl = gl
        self._batch = pyglet.graphics.Batch()
        self._g_image = pyglet.graphics.Group(order=0)
        self._g_ui = pyglet.graphics.Group(order=1)
        self._g_top = pyglet.graphics.Group(order=2)
        self._texture: Any = None
        self._sprite: Any = None
        shapes = pyglet.shapes
        self._bar_bg = shapes.Rectangle(0, 0, w, SLIDER_HEIGHT, color=(40, 40, 48, 200), batch=self._batch,
                                        group=self._g_ui)
        self._track = shapes.Rectangle(0, 0, 1, 4, color=(150, 150, 160, 255), batch=self._batch, group=self._g_ui)
        self._fill = shapes.Rectangle(0, 0, 1, 4, color=(60, 140, 235, 255), batch=self._batch, group=self._g_top)
        self._knob = shapes.Rectangle(0, 0, 8, 16, color=(235, 235, 240, 255), batch=self._batch,
                                      group=self._g_top)
        self._hud_bg = shapes.Rectangle(0, 0, w, 36, color=(255, 255, 255, 170), batch=self._batch,
                                        group=self._g_ui)
        self._hud = pyglet.text.Label("", x=6, y=h - 4, anchor_y="top", font_size=10, color=(20, 20, 20, 255),
                                      batch=self._batch, group=self._g_top)
        self._help = pyglet.text.Label(_HELP, x=6, y=h - 20, anchor_y="top", font_size=9,
                                       color=(70, 70, 70, 255), batch=self._batch, group=self._g_top)
        self.window.push_handlers(on_draw=self._on_draw, on_resize=self._on_resize, on_key_press=self._on_key,
                                  on_mouse_press=self._on_mouse_press, on_mouse_drag=self._on_mouse_drag,
                                  on_mouse_release=self._on_mouse_release, on_mouse_scroll=self._on_scroll,
                                  on_close=self._on_close)
        self._layout(w, h)

    def _layout(self, w: int, h: int) -> None:
        """Place the slider and HUD for a w × h window; re-aim the camera at the new render size."""
        self._bar_bg.width = w
        self._track.x, self._track.y, self._track.width = 12, SLIDER_HEIGHT // 2 - 2, max(1, w - 24)
        self._fill.x, self._fill.y = 12, SLIDER_HEIGHT // 2 - 2
        self._knob.y = SLIDER_HEIGHT // 2 - 8
        self._hud_bg.y, self._hud_bg.width = h - 36, w
        self._hud.y, self._help.y = h - 4, h - 20
        rw, rh = self._render_size(w, h)
        if (rw, rh) != (self._home.width, self._home.height):
            self._home = clip_camera(self.scene.camera, self.scene.up, self._framing, size=(rw, rh))
            self._camera = self._camera.with_size(rw, rh)
        self._update_slider()

    # --- state changes (usable without the event loop) ---------------------------------------------

    @property
    def frame_count(self) -> int:
        return len(self.poses)

    @property
    def camera(self) -> Camera:
        """The camera the current frame is rendered with (at the internal render size)."""
        return self._camera

    def set_frame(self, i: int) -> None:
        """Show frame ``i`` (clamped to the clip); playback continues from there."""
        self.frame_index = int(min(max(int(i), 0), self.frame_count - 1))
        self._time = self.frame_index / self.fps
        self._update_slider()

    def step(self, n: int = 1) -> None:
        """Move ``n`` frames (negative: back), wrapping around the clip's ends."""
        self.set_frame((self.frame_index + int(n)) % self.frame_count)

    def toggle_play(self) -> None:
        self.playing = not self.playing

    def toggle_wireframe(self) -> None:
        self._set_style(dataclasses.replace(self.style, wireframe=not self.style.wireframe))

    def toggle_joint_axes(self) -> None:
        self._set_style(dataclasses.replace(self.style, joint_axes=not self.style.joint_axes))

    def toggle_grid(self) -> None:
        self._set_style(dataclasses.replace(self.style, grid=not self.style.grid))

    def _set_style(self, style: Style) -> None:
        self.style = style
        self._renderer.style = style

    def orbit(self, d_azimuth: float, d_elevation: float) -> None:
        """Turn the camera around its target by ``d_azimuth`` and ``d_elevation`` degrees (elevation kept
        within ±89°)."""
        self._azimuth = (self._azimuth + float(d_azimuth)) % 360.0
        self._elevation = float(np.clip(self._elevation + float(d_elevation), -89.0, 89.0))
        self._reorbit()

    def zoom(self, factor: float) -> None:
        """Move the camera ``factor`` times closer to its target (factor < 1 moves away)."""
        if not (factor > 0 and math.isfinite(factor)):
            raise RenderError(f"zoom factor must be positive, got {factor!r}")
        self._distance = float(np.clip(self._distance / factor, 0.02 * self._home_distance,
                                       50.0 * self._home_distance))
        self._reorbit()

    def reset_camera(self) -> None:
        self._reset_orbit()

    def _reorbit(self) -> None:
        home = self._home
        ratio = self._distance / self._home_distance
        self._camera = orbit(self._target, self._distance, self._azimuth, self._elevation, self.scene.up,
                             fov_y_deg=home.fov_y_deg, width=home.width, height=home.height,
                             near=home.near * ratio, far=home.far * max(ratio, 1.0))

    # --- drawing ------------------------------------------------------------------------------------

    def image(self) -> NDArray[np.uint8]:
        """The current frame as the NumPy renderer draws it: uint8 (h, w, 3) at the internal render size."""
        self._renderer.camera = self._camera
        if self._world_cache is None or self._world_cache[0] != self.frame_index:
            self._world_cache = (self.frame_index,
                                 self.figure.world_batch(self.poses[self.frame_index:self.frame_index + 1])[0])
        return self._renderer.frame(self._world_cache[1], targets=self.targets)

    def _upload(self) -> None:
        key = (self.frame_index, self._camera, self.style)
        if key == self._image_key and self._texture is not None:
            return
        t0 = time.perf_counter()
        img = np.ascontiguousarray(self.image())
        self.render_ms = 1000.0 * (time.perf_counter() - t0)
        pyglet, gl = self._pyglet, self._gl
        h, w = img.shape[:2]
        if self._texture is None or (self._texture.width, self._texture.height) != (w, h):
            self._texture = pyglet.image.Texture.create(w, h, min_filter=gl.GL_LINEAR, mag_filter=gl.GL_LINEAR)
            if self._sprite is not None:
                self._sprite.delete()
            self._sprite = pyglet.sprite.Sprite(self._texture, 0, 0, batch=self._batch, group=self._g_image)
        # negative pitch: rows are given top to bottom, as the renderer writes them
        data = pyglet.image.ImageData(w, h, "RGB", img.tobytes(), pitch=-w * 3)
        self._texture.blit_into(data, 0, 0, 0)
        ww, wh = self.window.width, self.window.height
        self._sprite.update(x=0, y=0, scale_x=ww / w, scale_y=wh / h)
        self._image_key = key

    def _update_slider(self) -> None:
        if not hasattr(self, "_track"):
            return
        n = self.frame_count
        u = self.frame_index / (n - 1) if n > 1 else 1.0
        px = self._track.x + u * self._track.width
        self._fill.width = max(1.0, px - self._track.x)
        self._knob.x = px - 4
        state = "playing" if self.playing else "paused"
        self._hud.text = (f"{self.clip_name}   frame {self.frame_index + 1}/{n}   t {self.frame_index / self.fps:.2f} s"
                          f"   {self.fps:g} fps   {state}   render {self.render_ms:.0f} ms"
                          f"{'   wireframe' if self.style.wireframe else ''}")

    def _on_draw(self) -> None:
        self._upload()
        self._update_slider()
        self.window.clear()
        self._batch.draw()

    def draw(self) -> None:
        """Draw the current frame into the window and show it (a new window may read back black until it has
        been drawn twice)."""
        self._check_open()
        self.window.switch_to()
        self.window.dispatch_events()
        self._on_draw()
        self.window.flip()

    def read_framebuffer(self) -> NDArray[np.uint8]:
        """What the window shows now, as uint8 (H, W, 3), rows top to bottom: the frame is drawn into the back
        buffer and read back before any swap, so the result does not depend on the swap's behaviour."""
        self._check_open()
        self.window.switch_to()
        self._on_draw()
        gl = self._gl
        gl.glFinish()
        buf = self._pyglet.image.get_buffer_manager().get_color_buffer().get_image_data()
        a = np.frombuffer(buf.get_data("RGB", buf.width * 3), dtype=np.uint8).reshape(buf.height, buf.width, 3)
        return a[::-1].copy()

    # --- events -------------------------------------------------------------------------------------

    def _on_resize(self, width: int, height: int) -> None:
        self._layout(width, height)

    def _on_key(self, symbol: int, modifiers: int) -> Any:
        key = self._pyglet.window.key
        actions = {key.SPACE: self.toggle_play, key.RIGHT: lambda: self._manual_step(1),
                   key.LEFT: lambda: self._manual_step(-1), key.HOME: lambda: self.set_frame(0),
                   key.END: lambda: self.set_frame(self.frame_count - 1), key.W: self.toggle_wireframe,
                   key.A: self.toggle_joint_axes, key.G: self.toggle_grid, key.R: self.reset_camera,
                   key.Q: self.close, key.ESCAPE: self.close}
        if symbol in actions:
            actions[symbol]()
            return self._pyglet.event.EVENT_HANDLED
        return None

    def _manual_step(self, n: int) -> None:
        self.playing = False
        self.step(n)

    def _slider_frame(self, x: float) -> int:
        u = (x - self._track.x) / max(self._track.width, 1)
        return round(float(np.clip(u, 0.0, 1.0)) * (self.frame_count - 1))

    def _on_mouse_press(self, x: int, y: int, button: int, modifiers: int) -> None:
        if button != self._pyglet.window.mouse.LEFT:
            return
        if y < SLIDER_HEIGHT:
            self._drag = "slider"
            self.set_frame(self._slider_frame(x))
        else:
            self._drag = "orbit"

    def _on_mouse_drag(self, x: int, y: int, dx: int, dy: int, buttons: int, modifiers: int) -> None:
        if self._drag == "slider":
            self.set_frame(self._slider_frame(x))
        elif self._drag == "orbit":
            self.orbit(-0.4 * dx, -0.4 * dy)

    def _on_mouse_release(self, x: int, y: int, button: int, modifiers: int) -> None:
        self._drag = None

    def _on_scroll(self, x: int, y: int, scroll_x: float, scroll_y: float) -> None:
        self.zoom(1.1 ** scroll_y)

    def _tick(self, dt: float) -> None:
        if self.playing and self.frame_count > 1:
            self._time += dt
            period = self.frame_count / self.fps
            self._time %= period
            self.frame_index = min(int(self._time * self.fps), self.frame_count - 1)
            self._update_slider()

    def _on_close(self) -> Any:
        self.close()
        return self._pyglet.event.EVENT_HANDLED

    # --- lifetime -----------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise RenderError("the viewer window is closed")

    def run(self) -> None:
        """Show the window and play until it is closed (enters ``pyglet.app.run``)."""
        self._check_open()
        pyglet = self._pyglet
        pyglet.clock.schedule_interval(self._tick, 1.0 / 60.0)
        self.playing = self.frame_count > 1
        try:
            pyglet.app.run(1.0 / 60.0)
        finally:
            pyglet.clock.unschedule(self._tick)

    def close(self) -> None:
        """Close the window (and leave the event loop if it runs); closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        if self._sprite is not None:
            self._sprite.delete()
            self._sprite = None
        self.window.close()
        self._pyglet.app.exit()

    def __enter__(self) -> Viewer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def view(scene: Scene, clip: str | None = None, *, targets: ArrayLike | None = None,
         size: tuple[int, int] = (800, 600), render_scale: float = 1.0) -> None:
    """Open a :class:`Viewer` on ``scene`` (clip ``clip``, or the first clip, or the rest pose) and run it until
    the window is closed. RenderError when there is no display."""
    Viewer(scene, clip, targets=targets, size=size, render_scale=render_scale).run()
