"""The HTML viewer in a real browser: headless Chromium (Debian's ``chromium``, driven by playwright) over the pages
animkit writes. Oracles: animkit's own software render of the same camera and time (silhouettes), animkit's FK
(joint positions read back from three.js), the page's network log (nothing but the file itself and its blob URLs).

Screenshots of every check are kept in each test's ``tmp_path`` (pytest keeps the last three runs' folders).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from animkit import load
from animkit.apps.html_view import THREE_VERSION, panels_html, scene_html, scene_panel, write_html
from animkit.apps.notebook import comparison_panels
from animkit.examples import load as example
from animkit.motion.reach import compare
from animkit.render.camera import Camera
from animkit.render.frames import FigureRenderer, Style
from animkit.render.placed import figure_look

from .conftest import DATA, ROOT

pytestmark = pytest.mark.slow  # headless Chromium: CI runs these after the rest

CHROMIUM = os.environ.get("ANIMKIT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--no-sandbox", "--disable-gpu-sandbox"]


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    if CHROMIUM is None:
        pytest.skip("no chromium binary (apt-get install chromium; or set ANIMKIT_CHROMIUM)")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


class Page:
    """A written page open in the browser, with its console messages and requests recorded."""

    def __init__(self, browser, path: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1600, "height": 1000}, device_scale_factor=1,
                                      bypass_csp=True)  # the page forbids eval, which playwright uses
        self.console: list[tuple[str, str]] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.console.append(("pageerror", str(e))))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_function("window.animkit && (window.animkit.ready || window.animkit.error)",
                                    timeout=120_000)
        assert self.js("window.animkit.error") is None

    def js(self, expr: str, arg=None):
        return self.page.evaluate(expr, arg)

    def canvas(self, i: int, out: Path) -> np.ndarray:
        """Panel ``i``'s canvas as (H, W, 3) uint8, also saved to ``out``."""
        from PIL import Image

        self.page.locator("canvas").nth(i).screenshot(path=str(out))
        return np.asarray(Image.open(out).convert("RGB"))

    def close(self) -> None:
        self.page.close()


def _save(image: np.ndarray, path: Path) -> None:
    from PIL import Image

    Image.fromarray(image).save(path)


def _mask(image: np.ndarray, background=(255, 255, 255)) -> np.ndarray:
    """Foreground: pixels off the flat background by more than 40 in some channel."""
    return np.abs(image.astype(int) - np.asarray(background)).max(axis=2) > 40


MAGENTA = (255, 0, 255)


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / max((a | b).sum(), 1))


def _page_camera(page: Page, i: int = 0) -> Camera:
    c = page.js(f"window.animkit.camera({i})")
    return Camera(tuple(c["eye"]), tuple(c["target"]), tuple(c["up"]), c["fov"], c["width"], c["height"],
                  c["near"], c["far"])


def _height(figure, up) -> float:
    P = figure.world_positions(figure.rest_pose()[None])[0]
    return float(np.ptp(P[:, 1 if up == "y" else 2]))


def _write(tmp_path: Path, name: str, page: str) -> Path:
    return write_html(page, tmp_path / name).path


def _offline(page: Page, path: Path) -> None:
    """No console error or warning, and no request but the page itself and its own blob URLs."""
    bad = [m for m in page.console if m[0] in ("error", "warning", "pageerror")]
    assert not bad, bad
    assert page.requests[0] == path.resolve().as_uri()
    others = [u for u in page.requests[1:] if not u.startswith(("blob:", "data:"))]
    assert not others, others


def test_walk_page_loads_offline_and_draws(browser, tmp_path) -> None:
    scene = example("walk")
    path = _write(tmp_path, "walk.html", scene_html(scene))
    page = Page(browser, path)
    try:
        _offline(page, path)
        assert page.js("document.querySelectorAll('canvas').length") == 1
        assert page.js("window.__THREE__") == THREE_VERSION.split(".")[1]  # the vendored three.js ran
        page.js("window.animkit.setTime(0.5)")
        img = page.canvas(0, tmp_path / "walk_0.5s.png")
        fg = _mask(img)
        assert 0.02 < fg.mean() < 0.6, fg.mean()  # a figure (and grid), not a blank or filled canvas
        assert len(np.unique(img.reshape(-1, 3), axis=0)) > 50
        # the page plays: time moves on its own, at the speed asked for (clip seconds per wall second)
        page.js("window.animkit.play()")
        page.page.wait_for_function("window.animkit.time() > 0.6", timeout=30_000)
        page.js("window.animkit.pause()")
        page.js("window.animkit.setTime(0); window.animkit.setSpeed(0.25)")
        t0, w0 = page.js("[window.animkit.time(), performance.now()]")
        page.js("window.animkit.play()")
        page.page.wait_for_timeout(2000)
        page.js("window.animkit.pause()")
        t1, w1 = page.js("[window.animkit.time(), performance.now()]")
        rate = (t1 - t0) / ((w1 - w0) / 1000)
        assert 0.15 < rate < 0.27, rate  # 0.25, give or take a frame at either end
    finally:
        page.close()


def test_page_runs_under_its_own_content_security_policy(browser, tmp_path) -> None:
    """With the page's CSP enforced (no network, no eval; the other tests bypass it to evaluate script), a skinned,
    textured character (its texture decoded from blob URLs) loads and draws without a console message."""
    path = _write(tmp_path, "cesium.html", scene_html(load(DATA / "CesiumMan.glb")))
    page = browser.new_page(viewport={"width": 900, "height": 700})
    try:
        console: list[tuple[str, str]] = []
        page.on("console", lambda m: console.append((m.type, m.text)))
        page.on("pageerror", lambda e: console.append(("pageerror", str(e))))
        page.goto(path.as_uri())
        page.wait_for_selector("html[data-animkit]", state="attached", timeout=120_000)
        assert page.get_attribute("html", "data-animkit") == "ready"
        page.locator("canvas").screenshot(path=str(tmp_path / "cesium_csp.png"))
        assert not [m for m in console if m[0] in ("error", "warning", "pageerror")], console
        # the control: the policy is in force, and a violation would have been seen
        bad = tmp_path / "fetches.html"
        bad.write_text(path.read_text(encoding="utf-8").replace(
            "<body>", '<body><img src="https://example.invalid/x.png">', 1), encoding="utf-8")
        finished: list[str] = []
        page.on("requestfinished", lambda r: finished.append(r.url))
        page.goto(bad.as_uri())
        page.wait_for_selector("html[data-animkit]", state="attached", timeout=120_000)
        assert any("Content Security Policy" in text for kind, text in console if kind == "error"), console
        assert not [u for u in finished if u.startswith("http")], finished  # tried (the request log shows it), refused
    finally:
        page.close()


CASES = [("walk", "example"), ("six_axis_arm", "example"), ("cmu_02_01_walk.bvh", "data"),
         ("CesiumMan.glb", "data")]


@pytest.mark.parametrize(("name", "kind"), CASES)
def test_frame_matches_software_render(browser, tmp_path, name, kind) -> None:
    """Same camera, same time: three.js's silhouette of the figure overlaps animkit's raster by IoU ≥ 0.9 (both
    anti-aliased: the browser multisamples, animkit supersamples 3×3; a thin bone's edge pixels would otherwise
    decide the score)."""
    scene = example(name) if kind == "example" else load(DATA / name)
    panel, fps = scene_panel(scene)
    size = (480, 360)
    style = Style(grid=False, background=(1.0, 0.0, 1.0))  # a colour no figure here wears: the mask is the shape
    path = _write(tmp_path, "page.html", panels_html([panel], fps=fps, up=scene.up, camera_spec=scene.camera,
                                                     size=size, style=style))
    page = Page(browser, path)
    try:
        _offline(page, path)
        page.js("window.animkit.setOptions({targets: false, trails: false})")
        cam = _page_camera(page)
        assert (cam.width, cam.height) == size
        shots, renders = {}, {}
        for k in (0, len(panel.poses) // 2, len(panel.poses) - 1):
            page.js(f"window.animkit.setTime({k / fps!r})")
            shot = page.canvas(0, tmp_path / f"three_{k}.png")
            world = scene.figure.world_batch(panel.poses[k][None])[0]
            ours = FigureRenderer(scene.figure, cam, up=scene.up, style=dataclasses.replace(style, supersample=3),
                                  meshes=scene.meshes,
                                  mesh=None if scene.meshes else figure_look(scene.figure, scene.up)).frame(world)
            _save(ours, tmp_path / f"animkit_{k}.png")
            a, b = _mask(shot, MAGENTA), _mask(ours, MAGENTA)
            both = np.zeros_like(ours)
            both[..., 0], both[..., 1] = a * 255, b * 255
            _save(both, tmp_path / f"masks_{k}.png")  # red: three.js only, green: animkit only, yellow: both
            assert b.mean() > 0.003, "animkit's render shows no figure"
            assert _iou(a, b) >= 0.9, (name, k, _iou(a, b))
            shots[k], renders[k] = a, b
        # the measure tells times apart: where animkit's own frames differ, the page's frame misses the other one
        for k in shots:
            for k2 in renders:
                if _iou(renders[k], renders[k2]) < 0.8:
                    assert _iou(shots[k], renders[k2]) < 0.9
    finally:
        page.close()


@pytest.mark.parametrize("name", ["cmu_02_01_walk.bvh", "six_axis_arm", "CesiumMan.glb"])
def test_scrubbing_shows_that_times_pose(browser, tmp_path, name) -> None:
    """Joint world positions read back from three.js at a scrubbed time equal animkit's FK of the clip at that
    time to 1e-5 of the figure's height (the GLB's float32 keys and matrices)."""
    scene = example(name) if "." not in name else load(DATA / name)
    clip = next(iter(scene.clips.values()))
    panel, fps = scene_panel(scene)
    path = _write(tmp_path, "page.html", panels_html([panel], fps=fps, up=scene.up, camera_spec=scene.camera,
                                                     size=(320, 240)))
    page = Page(browser, path)
    try:
        h = _height(scene.figure, scene.up)
        n = len(panel.poses)
        rng = np.random.default_rng(3)
        for k in sorted({0, n - 1, *rng.integers(0, n, 6).tolist()}):
            t = k / fps
            page.js(f"window.animkit.setTime({t!r})")
            got = np.asarray(page.js("window.animkit.jointPositions(0)"))
            want = scene.figure.world_positions(clip.sample([t]))[0]
            err = np.abs(got - want).max()
            assert err <= 1e-5 * h, (name, k, err / h)
        page.canvas(0, tmp_path / "last.png")
    finally:
        page.close()


def test_comparison_shows_four_panels_on_one_timeline(browser, tmp_path) -> None:
    scene = example("humanoid")
    comparison = compare(scene, quiet=True)
    panels = comparison_panels(scene.figure, comparison)
    assert len(panels) == 4
    path = _write(tmp_path, "compare.html", panels_html(panels, fps=comparison.fps, up=scene.up,
                                                        camera_spec=scene.camera, size=(300, 300)))
    page = Page(browser, path)
    try:
        _offline(page, path)
        assert page.js("document.querySelectorAll('canvas').length") == 4
        labels = page.js("[...document.querySelectorAll('.animkit-label')].map(e => e.textContent)")
        assert labels == [p.label for p in panels]
        t = page.js("window.animkit.duration")
        page.js(f"window.animkit.setTime({t!r})")
        page.page.locator("#animkit-viewer").screenshot(path=str(tmp_path / "compare_end.png"))
        h = _height(scene.figure, scene.up)
        for i, p in enumerate(panels):
            img = page.canvas(i, tmp_path / f"panel_{i}.png")
            assert _mask(img).mean() > 0.02
            got = np.asarray(page.js(f"window.animkit.jointPositions({i})"))
            k = min(len(p.poses) - 1, round(t * comparison.fps))
            want = scene.figure.world_positions(p.poses[k][None])[0]
            assert np.abs(got - want).max() <= 1e-5 * h
        # linked cameras: orbiting one panel turns every panel's camera; unlinked, only its own
        box = page.page.locator("canvas").nth(1).bounding_box()
        cams = [page.js(f"window.animkit.camera({i})") for i in range(4)]

        def drag() -> None:
            x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
            page.page.mouse.move(x, y)
            page.page.mouse.down()
            page.page.mouse.move(x + 60, y + 10, steps=5)
            page.page.mouse.up()

        drag()
        moved = [page.js(f"window.animkit.camera({i})") for i in range(4)]
        assert not np.allclose(moved[1]["eye"], cams[1]["eye"])
        for i in range(4):
            np.testing.assert_allclose(moved[i]["eye"], moved[1]["eye"], atol=1e-9)
        page.js("window.animkit.setOptions({link: false})")
        drag()
        apart = [page.js(f"window.animkit.camera({i})") for i in range(4)]
        assert not np.allclose(apart[1]["eye"], moved[1]["eye"])
        np.testing.assert_allclose(apart[0]["eye"], moved[0]["eye"], atol=1e-9)
        page.page.locator("#animkit-viewer").screenshot(path=str(tmp_path / "compare_unlinked.png"))
        _offline(page, path)
    finally:
        page.close()


def test_ten_second_mocap_page_is_under_2mb(browser, tmp_path) -> None:
    scene = load(DATA / "clips" / "cmu_05_04.bvh")
    clip = next(iter(scene.clips.values()))
    assert clip.duration >= 9.9
    path = _write(tmp_path, "mocap.html", scene_html(scene))
    size = path.stat().st_size
    assert size < 2_000_000, size
    meta = json.loads(re.search(r'id="animkit-meta">(.*?)</script>', path.read_text()).group(1))
    assert meta["panels"][0]["frames"] == len(clip.frame_times())
    page = Page(browser, path)
    try:
        _offline(page, path)
        page.js("window.animkit.setTime(5.0)")
        assert _mask(page.canvas(0, tmp_path / "mocap_5s.png")).mean() > 0.01
    finally:
        page.close()


def _meta(path: Path) -> dict:
    return json.loads(re.search(r'id="animkit-meta">(.*?)</script>', path.read_text(encoding="utf-8")).group(1))


def test_cli_writes_pages(tmp_path, capsys) -> None:
    """``view --html``, ``render -o .html``, ``compare -o .html``, ``reach -o .html`` and ``retarget --render .html``
    each write one page (no browser needed to check what it holds)."""
    from animkit.apps.cli import main

    out = {k: tmp_path / f"{k}.html" for k in ("view", "render", "compare", "reach", "retarget")}
    assert main(["view", "walk", "--html", str(out["view"]), "--size", "320x240"]) == 0
    assert main(["render", str(DATA / "cmu_02_01_walk.bvh"), "-o", str(out["render"]), "--view", "side",
                 "--no-grid", "-q"]) == 0
    assert main(["compare", "humanoid", "-o", str(out["compare"]), "-q"]) == 0
    assert main(["reach", "humanoid", "-o", str(out["reach"]), "-q"]) == 0
    assert main(["retarget", str(DATA / "cmu_09_01_run.bvh"), "humanoid", "-o", str(tmp_path / "r.toml"),
                 "--render", str(out["retarget"]), "-q"]) == 0
    m = {k: _meta(p) for k, p in out.items()}
    assert m["view"]["size"] == [320, 240] and len(m["view"]["panels"]) == 1
    assert m["view"]["panels"][0]["targets"]["count"] == 1  # view marks the scene's [reach] target, as its window does
    assert main(["view", "walk", "--html", str(out["view"]), "--no-target"]) == 0
    assert _meta(out["view"])["panels"][0]["targets"]["count"] == 0
    assert m["view"]["panels"][0]["frames"] == len(example("walk").clip(None).frame_times())
    assert m["render"]["grid"] is False
    cam = m["render"]["camera"]  # --view side: the camera looks along -x (azimuth 90 from +x, Y-up)
    d = np.subtract(cam["target"], cam["eye"])
    assert d[0] < -0.9 * np.linalg.norm(d)
    labels = [p["label"].split(":")[0] for p in m["compare"]["panels"]]  # the torso's neck and free arm carry posture
    assert labels == ["arm", "torso +neck +free arm", "hips-up", "whole-body"]
    assert m["reach"]["panels"][0]["targets"]["count"] == 1 and len(m["reach"]["panels"][0]["trail"]) > 6
    assert m["retarget"]["panels"][0]["frames"] > 100
    capsys.readouterr()
    assert main(["render", "walk", "-o", str(tmp_path / "missing" / "x.html")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["render", "walk", "-o", str(tmp_path / "f.html"), "--follow"]) == 0
    assert "does not follow" in capsys.readouterr().err


def test_bad_input_is_one_clear_error() -> None:
    from animkit.errors import RenderError

    panel, fps = scene_panel(example("walk"))
    with pytest.raises(RenderError, match="at least one panel"):
        panels_html([], fps=30.0)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(RenderError, match="fps must be a positive number"):
            panels_html([panel], fps=bad)


def test_notebook_viewer_runs_where_scripts_run_and_falls_back_to_the_video(browser, tmp_path) -> None:
    """``show(..., interactive=True)``'s HTML output: with scripts, the viewer in its iframe (the video removed);
    without scripts (a static notebook renderer), the MP4 and no viewer."""
    from animkit.apps.notebook import Animation, Viewer, show

    v = show("walk", size=(320, 240), interactive=True)
    assert isinstance(v, Viewer) and isinstance(v.fallback, Animation) and v.fallback.mime == "video/mp4"
    host = tmp_path / "output.html"  # what a front end does with a text/html output: insert it, run its scripts
    host.write_text(f"<!DOCTYPE html><html><body>{v._repr_html_()}</body></html>", encoding="utf-8")
    page = browser.new_page(viewport={"width": 900, "height": 700}, bypass_csp=True)
    try:
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(host.as_uri())
        assert page.evaluate("document.querySelectorAll('video').length") == 0
        assert page.evaluate("getComputedStyle(document.querySelector('iframe')).display") == "block"
        frame = page.frames[1]
        frame.wait_for_function("window.animkit && (window.animkit.ready || window.animkit.error)",
                                timeout=120_000)
        assert frame.evaluate("window.animkit.error") is None
        frame.evaluate("window.animkit.setTime(0.5)")
        page.screenshot(path=str(tmp_path / "notebook_viewer.png"))
        assert _mask(np.asarray(__import__("PIL.Image").Image.open(tmp_path / "notebook_viewer.png")
                                .convert("RGB"))).mean() > 0.01
        assert not errors, errors
    finally:
        page.close()
    context = browser.new_context(java_script_enabled=False, viewport={"width": 900, "height": 700})
    try:
        static = context.new_page()
        static.goto(host.as_uri())
        assert static.locator("video").count() == 1 and static.locator("video").is_visible()
        assert not static.locator("iframe").is_visible()
        static.screenshot(path=str(tmp_path / "notebook_static.png"))
    finally:
        context.close()


def test_setting_shows_values_in_the_viewer() -> None:
    from animkit.apps import notebook

    scene = example("wave")
    assert "<iframe" not in scene._repr_html_()
    notebook.set_interactive(True, fallback=False)
    try:
        out = scene._repr_html_()
        assert out.startswith("<iframe") and "animkit-meta" in out and "<video" not in out
        assert notebook.interactive_default()
    finally:
        notebook.set_interactive(False)
    assert "<iframe" not in scene._repr_html_()


def test_vendored_three_is_the_pinned_one() -> None:
    """The bundle in the wheel is the three.js the Node oracle tests pin (tests/node/package.json), with its licence."""
    import importlib.resources

    pin = json.loads((ROOT / "tests" / "node" / "package.json").read_text())["dependencies"]["three"]
    assert pin == THREE_VERSION
    vendor = importlib.resources.files("animkit").joinpath("vendor/three")
    bundle = vendor.joinpath("three-bundle.min.js").read_text(encoding="utf-8")
    assert f'__THREE__="{THREE_VERSION.split(".")[1]}"' in bundle and "SPDX-License-Identifier: MIT" in bundle
    assert "MIT License" in vendor.joinpath("LICENSE").read_text(encoding="utf-8")
