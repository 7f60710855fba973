"""The viewer, for real: a pyglet window under Xvfb (Mesa's software GL), read back and compared with the headless
render of the same pose. Each viewer session runs in a subprocess with DISPLAY set, so pyglet's global state (its
display connection, the shadow window) never leaks into other tests.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import ROOT

pytestmark = pytest.mark.viewer

# Runs in the subprocess: argv[1] is the folder for the PNGs. Prints one JSON line.
SCRIPT = textwrap.dedent("""
    import dataclasses, json, sys
    from pathlib import Path

    import numpy as np

    out = Path(sys.argv[1])
    try:  # can pyglet make a GL context on this display at all?
        import pyglet
        import pyglet.gl
        probe = pyglet.window.Window(64, 64, visible=False)
        renderer = pyglet.gl.gl_info.get_renderer()
        probe.close()
    except Exception as exc:
        print(json.dumps({"skip": f"pyglet cannot create a GL context: {type(exc).__name__}: {exc}"}))
        sys.exit(0)

    from PIL import Image

    import animkit
    from animkit.errors import RenderError
    from animkit.keyframes import Clip
    from animkit.render.frames import FigureRenderer, clip_camera
    from animkit.render.placed import figure_look, framing_points
    from animkit.render.viewer import Viewer

    scene = animkit.load(str(Path("scenes") / "humanoid.toml"))
    fig = scene.figure
    # a small clip: the right arm swings forward over 12 frames
    times = np.arange(12) / 12.0
    poses = np.repeat(fig.rest_pose()[None], 12, axis=0)
    poses[:, fig.dof_index("shoulder_r.rx")] = np.linspace(0.0, -1.4, 12)
    scene = dataclasses.replace(scene, clips={"swing": Clip.from_poses(fig, times, poses, name="swing", fps=12.0)})
    targets = np.array([scene.reach.target[:3]])

    v = Viewer(scene, "swing", targets=targets, size=(480, 360))
    stats = {"renderer": renderer, "opened": bool(v.window.visible), "frames": v.frame_count}
    v.draw()
    v.draw()  # a new window reads back black until drawn twice
    shots = {"first": v.read_framebuffer()}

    # the headless render of the same pose, camera framed the same way, built independently of the viewer
    mesh = figure_look(fig, scene.up)
    pts = np.concatenate([framing_points(fig, mesh, poses), targets])
    cam = clip_camera(scene.camera, scene.up, pts, size=(480, 360))
    ref = FigureRenderer(fig, cam, up=scene.up, mesh=mesh).frame(fig.world_batch(poses[:1])[0], targets=targets)
    Image.fromarray(ref).save(out / "headless.png")

    v.step(5)
    v.draw()
    stats["frame_after_step"] = v.frame_index
    shots["stepped"] = v.read_framebuffer()
    v.toggle_wireframe()
    shots["wireframe"] = v.read_framebuffer()
    v.toggle_wireframe()
    v.orbit(70.0, 15.0)
    shots["orbit"] = v.read_framebuffer()
    v.zoom(1.6)
    shots["zoom"] = v.read_framebuffer()
    for name, img in shots.items():
        Image.fromarray(img).save(out / f"{name}.png")

    first = shots["first"].astype(int)
    stats["shape"] = list(first.shape)
    white = np.all(first >= 250, axis=2)
    stats["non_white"] = float(1.0 - white.mean())
    stats["distinct_colours"] = int(len(np.unique(first.reshape(-1, 3), axis=0)))
    # the humanoid's sides: the left cool (blue clearly above red), the right warm (red clearly above blue)
    stats["blue"] = float(np.mean(np.abs(first[..., 2].astype(int) - first[..., 0]) > 60))
    stats["agree_headless"] = float(np.mean(np.abs(first - ref.astype(int)).max(axis=2) <= 8))
    # the same, leaving out the HUD (top 36 rows) and the slider (bottom 28 rows) drawn over the image
    mid = slice(36, first.shape[0] - 28)
    stats["agree_headless_image_area"] = float(np.mean(np.abs(first[mid] - ref[mid].astype(int)).max(axis=2) <= 8))

    def changed(a, b):
        return float(np.mean(np.any(shots[a] != shots[b], axis=2)))

    stats["changed_step"] = changed("first", "stepped")
    stats["changed_wireframe"] = changed("stepped", "wireframe")
    stats["changed_orbit"] = changed("stepped", "orbit")
    stats["changed_zoom"] = changed("orbit", "zoom")
    v.close()
    stats["closed"] = v.closed
    try:
        v.draw()
        stats["draw_after_close"] = "no error"
    except RenderError as exc:
        stats["draw_after_close"] = str(exc)
    print(json.dumps(stats))
""")


@pytest.fixture(scope="module")
def xvfb_display() -> Iterator[str]:
    """Start ``Xvfb -displayfd FD -screen 0 1024x768x24``: Xvfb picks a free display N itself and writes it to FD
    (no race with another test worker or another Xvfb choosing the same N); yield ":N"; stop it afterwards."""
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed (apt-get install xvfb libgl1-mesa-dri)")
    r, w = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=(w,))
    os.close(w)
    with os.fdopen(r) as pipe:
        ready, _, _ = select.select([pipe], [], [], 15.0)
        line = pipe.readline().strip() if ready else ""
    if not line.isdigit():
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        err = proc.stderr.read().decode(errors="replace")[-500:] if proc.stderr else ""
        pytest.skip(f"Xvfb did not report a display within 15 s (exit {proc.returncode}): {err}")
    n = int(line)
    try:
        yield f":{n}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _run(code: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=240)


def test_viewer_window_under_xvfb(xvfb_display: str, tmp_path: Path) -> None:
    env = dict(os.environ, DISPLAY=xvfb_display)
    proc = _run(SCRIPT, env, str(tmp_path))
    assert proc.returncode == 0, f"viewer script failed:\n{proc.stdout}\n{proc.stderr}"
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    if "skip" in stats:
        pytest.skip(stats["skip"])
    print(json.dumps(stats, indent=1), f"\nimages in {tmp_path}")
    assert stats["opened"]
    assert stats["shape"] == [360, 480, 3]
    assert (tmp_path / "first.png").exists()
    # not blank: the figure's colours are there
    assert stats["non_white"] > 0.1
    assert stats["blue"] > 0.01
    assert stats["distinct_colours"] > 50
    # what the window shows is what the headless renderer draws (HUD and slider aside)
    assert stats["agree_headless_image_area"] > 0.97
    assert stats["agree_headless"] > 0.85
    assert stats["frame_after_step"] == 5
    assert stats["changed_step"] > 0.002
    assert stats["changed_wireframe"] > 0.01
    assert stats["changed_orbit"] > 0.05
    assert stats["changed_zoom"] > 0.05
    assert stats["closed"] is True
    assert "closed" in stats["draw_after_close"]


NO_DISPLAY_SCRIPT = textwrap.dedent("""
    import animkit
    from animkit.render.viewer import view
    try:
        view(animkit.load("scenes/humanoid.toml"))
    except animkit.RenderError as exc:
        print("RenderError:", exc)
""")


def test_view_without_display_raises_render_error() -> None:
    pytest.importorskip("pyglet")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = _run(NO_DISPLAY_SCRIPT, env)
    assert proc.returncode == 0, proc.stderr
    assert "RenderError: animkit view needs a display; set DISPLAY or run under xvfb-run" in proc.stdout
    assert "animkit render" in proc.stdout
    assert "Traceback" not in proc.stderr
