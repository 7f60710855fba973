"""The render pipeline: clips and panels to files, one camera per clip, resampling, the CLI."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import animkit
from animkit.keyframes import Clip
from animkit.render.frames import Panel, Style, clip_camera, frame_times, render_clip, render_panels, render_poses
from animkit.render.placed import figure_mesh, framing_points, place_vertices
from animkit.scene import CameraSpec, Scene

from .cli_helpers import run_cli
from .conftest import DATA, SCENES


@pytest.fixture(scope="module")
def arm() -> Scene:
    return animkit.load(SCENES / "three_axis_arm.toml")


def _swing(scene: Scene, n: int = 13, fps: float = 12.0) -> Clip:
    t = np.arange(n) / fps
    poses = np.zeros((n, scene.figure.dof_count))
    poses[:, 0] = np.linspace(0, 1.2, n)
    poses[:, 1] = np.linspace(0, -0.8, n)
    return Clip.from_poses(scene.figure, t, poses, name="swing", fps=fps)


def _gif_frames(path):
    im = Image.open(path)
    durations = []
    for k in range(im.n_frames):
        im.seek(k)
        durations.append(im.info["duration"])
    return im.n_frames, im.size, durations


def test_gif_has_frame_count_size_and_duration(tmp_path, arm) -> None:
    clip = _swing(arm)
    report = render_clip(arm, tmp_path / "swing.gif", clip=clip, size=(160, 120), quiet=True)
    n, size, durations = _gif_frames(tmp_path / "swing.gif")
    assert n == report.frames == 13
    assert size == (160, 120)
    assert all(abs(d - 1000 / 12) <= 10 for d in durations)  # hundredths of a second: 8 cs


def test_fast_clips_are_resampled_for_gif_and_say_so(tmp_path, arm) -> None:
    times, fps, message = frame_times(1.0, 120.0, "x.gif")
    assert fps <= 50 and message and "120" in message
    assert len(times) == int(fps) + 1
    _, fps_mp4, msg_mp4 = frame_times(1.0, 120.0, "x.mp4")
    assert fps_mp4 == 120.0 and msg_mp4 is None


def test_one_camera_frames_the_whole_clip(arm) -> None:
    clip = _swing(arm)
    poses = clip.sample_frames()
    mesh = figure_mesh(arm.figure)
    cam = clip_camera(arm.camera, arm.up, framing_points(arm.figure, mesh, poses), size=(200, 150))
    W = arm.figure.world_batch(poses)
    for w in W:  # every vertex of every frame is inside the picture
        xy, depth = cam.project(place_vertices(mesh, w))
        assert np.all(depth > 0)
        assert xy[:, 0].min() >= -0.5 and xy[:, 0].max() <= 199.5
        assert xy[:, 1].min() >= -0.5 and xy[:, 1].max() <= 149.5


def test_rendering_is_deterministic_and_draws_the_figure(tmp_path, arm) -> None:
    pose = arm.figure.rest_pose()[None]
    mesh = figure_mesh(arm.figure)
    cam = clip_camera(CameraSpec(), "z", framing_points(arm.figure, mesh, pose), size=(120, 90))
    a = tmp_path / "a.png"
    b = tmp_path / "b.png"
    render_poses(Panel(arm.figure, pose), a, fps=1, camera=cam, up="z", quiet=True)
    render_poses(Panel(arm.figure, pose), b, fps=1, camera=cam, up="z", quiet=True)
    assert a.read_bytes() == b.read_bytes()
    img = np.asarray(Image.open(a).convert("RGB")).astype(int)
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    orange = (r > 90) & (np.abs(g / np.maximum(r, 1) - 140 / 242) < 0.06) & (b < 0.3 * r)  # the first link's hue
    assert orange.sum() > 20


def test_panels_share_a_camera_and_are_labelled(tmp_path, arm) -> None:
    clip = _swing(arm, n=5)
    poses = clip.sample_frames()
    tip = arm.figure.node_names.index("tip")
    trail = arm.figure.world_positions(poses)[:, tip]
    panels = [Panel(arm.figure, poses, "moving", targets=np.array([[0.5, 0.5, 1.5]]), trail=trail),
              Panel(arm.figure, poses[:1], "still")]
    report = render_panels(panels, tmp_path / "p.gif", fps=5, up="z", size=(120, 100), quiet=True)
    n, size, _ = _gif_frames(tmp_path / "p.gif")
    assert n == report.frames == 5  # the shorter panel holds its last frame
    assert size[0] >= 240 and size[1] > 100  # two columns, a label strip


def test_interrupted_render_leaves_nothing(tmp_path, arm, monkeypatch) -> None:
    out = tmp_path / "x.gif"
    out.write_bytes(b"previous")
    import animkit.render.frames as rc

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(rc.FigureRenderer, "frame", boom)
    with pytest.raises(KeyboardInterrupt):
        render_clip(arm, out, clip=_swing(arm), size=(64, 48), quiet=True)
    assert out.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir()] == ["x.gif"]


def test_style_options_change_the_picture(arm) -> None:
    from animkit.render.frames import FigureRenderer

    pose = arm.figure.rest_pose()[None]
    mesh = figure_mesh(arm.figure)
    cam = clip_camera(CameraSpec(), "z", framing_points(arm.figure, mesh, pose), size=(96, 72))
    W = arm.figure.world_batch(pose)[0]
    plain = FigureRenderer(arm.figure, cam, up="z", style=Style(grid=False)).frame(W)
    grid = FigureRenderer(arm.figure, cam, up="z").frame(W)
    axes = FigureRenderer(arm.figure, cam, up="z", style=Style(grid=False, joint_axes=True)).frame(W)
    assert (plain != grid).any() and (plain != axes).any()


def test_cli_render_and_its_errors(tmp_path) -> None:
    out = tmp_path / "rest.png"
    r = run_cli("render", "scenes/humanoid.toml", "-o", str(out), "--size", "96x72", "-q")
    assert r.returncode == 0, r.stderr
    assert Image.open(out).size[0] > 0
    for bad in (["render", "scenes/humanoid.toml", "-o", str(tmp_path / "x.avi")],
                ["render", "scenes/humanoid.toml", "-o", str(tmp_path / "x.gif"), "--size", "big"],
                ["render", "scenes/none.toml", "-o", str(tmp_path / "x.gif")],
                ["info", "scenes/none.bvh"]):
        r = run_cli(*bad)
        assert r.returncode == 2
        lines = [ln for ln in r.stderr.splitlines() if ln.startswith("animkit: error")]
        assert len(lines) == 1 and "Traceback" not in r.stderr
    assert not (tmp_path / "x.avi").exists() and not (tmp_path / "x.gif").exists()


def test_outputs_get_the_usual_permissions(tmp_path, arm) -> None:
    import os

    mask = os.umask(0o022)
    try:
        render_clip(arm, tmp_path / "a.gif", clip=_swing(arm, n=2), size=(32, 24), quiet=True)
        render_clip(arm, str(tmp_path / "frames") + "/", clip=_swing(arm, n=2), size=(32, 24), quiet=True)
        animkit.save(tmp_path / "arm.toml", arm)
    finally:
        os.umask(mask)
    assert (tmp_path / "a.gif").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "arm.toml").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "frames").stat().st_mode & 0o777 == 0o755


def test_a_skeleton_without_geometry_is_drawn_as_bones() -> None:
    from .conftest import DATA

    scene = animkit.load(DATA / "cmu_02_01_walk.bvh")
    fig = scene.figure
    mesh = figure_mesh(fig)
    assert mesh.triangle_count > 0
    # every bone belongs to a parent whose child sits at a non-zero offset; leaves (End Sites) own none
    owners = {fig.node_names[i] for i in np.unique(mesh.owner)}
    has_offset_child = {a.parent.name for a in fig.arcs() if a.parent is not None and np.linalg.norm(a.L[:3, 3]) > 0}
    assert owners == has_offset_child
    # a bone ends at its child's origin: each owner's farthest vertex reaches its farthest child (+ the radius)
    W = fig.world_batch(fig.rest_pose()[None])[0]
    v = place_vertices(mesh, W)
    hips = fig.node_names.index("LeftUpLeg")
    knee = fig.node_names.index("LeftLeg")
    near_knee = np.linalg.norm(v[mesh.owner == hips] - W[knee, :3, 3], axis=1).min()
    assert near_knee <= 0.031 * fig.size()
    assert not figure_mesh(animkit.load(SCENES / "humanoid.toml").figure, bones=False).triangle_count == 0


def test_the_grid_follows_a_changed_camera(arm) -> None:
    from animkit.render.camera import orbit
    from animkit.render.frames import FigureRenderer

    pose = arm.figure.rest_pose()[None]
    mesh = figure_mesh(arm.figure)
    cam = clip_camera(CameraSpec(), "z", framing_points(arm.figure, mesh, pose), size=(96, 72))
    r = FigureRenderer(arm.figure, cam, up="z", mesh=mesh)
    def image() -> np.ndarray:
        bd = r.backdrop()
        return bd if isinstance(bd, np.ndarray) else bd.image()

    first = image()
    r.camera = orbit(cam.target, 4.0, 120.0, 40.0, "z", width=96, height=72)  # what the viewer does on a drag
    assert (image() != first).any()
    r.camera = cam
    assert (image() == first).all()


# ---------------------------------------------------------------- loaded characters (glTF)


@pytest.fixture(scope="module")
def cesium() -> Scene:
    return animkit.load(DATA / "CesiumMan.glb")


def test_character_is_framed_over_its_whole_clip(cesium) -> None:
    from animkit.render.frames import mesh_framing_points

    clip = cesium.clip()
    poses = clip.sample_frames()
    cam = clip_camera(cesium.camera, cesium.up, mesh_framing_points(cesium.meshes, cesium.figure, poses,
                                                                    max_frames=len(poses)), size=(160, 120))
    W = cesium.figure.world_batch(poses)
    for m in cesium.meshes:
        xy, depth = cam.project(m.positions(W).reshape(-1, 3))
        assert np.all(depth > 0)
        assert xy[:, 0].min() >= -0.5 and xy[:, 0].max() <= 159.5
        assert xy[:, 1].min() >= -0.5 and xy[:, 1].max() <= 119.5


def test_skinned_character_is_drawn_where_the_written_out_skinning_puts_it(cesium) -> None:
    """The frame's covered pixels equal those of the mesh placed by v' = Σ_k w_k · W[joint_k] · IBM_k · v written
    out here (not animkit.skin), drawn as plain triangles; the texture's colours show."""
    from animkit.render.frames import FigureRenderer, mesh_framing_points
    from animkit.render.raster import render_triangles

    clip = cesium.clip()
    poses = clip.sample(np.array([0.0, 0.5]))
    cam = clip_camera(cesium.camera, cesium.up, mesh_framing_points(cesium.meshes, cesium.figure, poses),
                      size=(120, 120))
    r = FigureRenderer(cesium.figure, cam, up=cesium.up, style=Style(grid=False, background=(0.0, 1.0, 0.0)),
                       meshes=cesium.meshes)
    W = cesium.figure.world_batch(poses)
    for f in range(2):
        img = r.frame(W[f])
        verts, faces = [], []
        for m in cesium.meshes:
            S = W[f][m.skin.joint_index] @ m.skin.inverse_bind  # (J, 4, 4)
            v = np.c_[m.rest_positions, np.ones(m.vertex_count)]
            placed = np.zeros((m.vertex_count, 3))
            for k in range(m.joints.shape[1]):
                placed += m.weights[:, k, None] * np.einsum("vij,vj->vi", S[m.joints[:, k]], v)[:, :3]
            faces.append(m.faces + sum(len(x) for x in verts))
            verts.append(placed)
        ref = render_triangles(cam, np.concatenate(verts), np.concatenate(faces), (0.0, 0.0, 0.0))
        covered = np.any(img != [0, 255, 0], axis=2)
        want = np.all(ref == 0, axis=2)
        assert want.sum() > 400
        assert (covered != want).sum() <= 2, (covered != want).sum()  # equal but for rounding of the placements
        assert len(np.unique(img[covered].reshape(-1, 3), axis=0)) > 50  # shaded and textured, not flat


def test_character_panels_and_bones(cesium, tmp_path) -> None:
    poses = cesium.clip().sample(np.linspace(0, 1, 3))
    panels = [Panel(cesium.figure, poses, "a", meshes=cesium.meshes), Panel(cesium.figure, poses[::-1], "b",
                                                                            meshes=cesium.meshes)]
    out = tmp_path / "p.png"
    render_panels(panels, out, fps=3, size=(100, 100), style=Style(bones=True), quiet=True)
    sheet = np.asarray(Image.open(out).convert("RGB"))
    assert sheet.shape[0] > 100 and (np.abs(sheet.astype(int) - 26).sum(axis=2) < 20).sum() > 20  # the bones' ink


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("supersample", [1, 2])
def test_frames_drawn_into_a_callers_buffer_equal_new_images(cesium, jit, supersample) -> None:
    """frame(out=) and frames(out=) draw into the caller's arrays (returned as they are, nothing else allocated per
    frame) the same pixels as new images, overlays (bones, trail, target) included, on both raster paths."""
    from animkit.render.frames import FigureRenderer

    poses = cesium.clip().sample(np.linspace(0, 1, 4))
    W = cesium.figure.world_batch(poses)
    mesh = framing_points(cesium.figure, figure_mesh(cesium.figure), poses)
    cam = clip_camera(CameraSpec(), cesium.up, mesh, size=(80, 60))
    style = Style(bones=True, supersample=supersample)
    trail = W[:, 5, :3, 3]
    target = trail[-1:] + 0.1

    def renderer():
        return FigureRenderer(cesium.figure, cam, up=cesium.up, style=style, meshes=cesium.meshes, jit=jit)

    fresh = list(renderer().frames(poses, targets=target, trail=trail))
    buf = np.zeros((len(poses), 60, 80, 3), np.uint8)
    kept = list(renderer().frames(poses, targets=target, trail=trail, out=buf))
    assert all(k.base is buf or k is buf[f] or np.shares_memory(k, buf[f]) for f, k in enumerate(kept))
    np.testing.assert_array_equal(buf, np.stack(fresh))
    one = np.zeros((60, 80, 3), np.uint8)
    assert renderer().frame(W[2], targets=target, out=one) is one
    np.testing.assert_array_equal(one, renderer().frame(W[2], targets=target))


def test_a_wrong_frame_buffer_is_refused(arm) -> None:
    from animkit.errors import RenderError
    from animkit.render.frames import FigureRenderer

    pose = arm.figure.rest_pose()[None]
    cam = clip_camera(CameraSpec(), "z", framing_points(arm.figure, figure_mesh(arm.figure), pose), size=(32, 24))
    r = FigureRenderer(arm.figure, cam, up="z")
    W = arm.figure.world_batch(pose)
    for bad in (np.zeros((24, 32, 3)), np.zeros((32, 24, 3), np.uint8), np.zeros((24, 32, 4), np.uint8)[..., :3]):
        with pytest.raises(RenderError, match="out= must be"):
            r.frame(W[0], out=bad)
    with pytest.raises(RenderError, match="one \\(H, W, 3\\) uint8 image per pose"):
        next(r.frames(pose, out=np.zeros((2, 24, 32, 3), np.uint8)))


def test_a_trail_covered_once_equals_one_drawn_frame_by_frame(cesium) -> None:
    """frames() covers a clip's whole trail once (segment_coverage_each) and adds each frame's segments from it: the
    images equal those of frame() given the trail so far, which covers the new segments anew each frame."""
    from animkit.render.frames import FigureRenderer

    poses = cesium.clip().sample(np.linspace(0, 1, 12))
    W = cesium.figure.world_batch(poses)
    cam = clip_camera(CameraSpec(), cesium.up, framing_points(cesium.figure, figure_mesh(cesium.figure), poses),
                      size=(96, 72))
    trail = W[:, 5, :3, 3] + np.linspace(0, 0.3, len(poses))[:, None]  # a curve crossing the picture
    planned = list(FigureRenderer(cesium.figure, cam, up=cesium.up, meshes=cesium.meshes).frames(poses, trail=trail))
    r = FigureRenderer(cesium.figure, cam, up=cesium.up, meshes=cesium.meshes)
    by_frame = [r.frame(W[k], trail=trail[:k + 1]) for k in range(len(poses))]
    green = np.array([26, 153, 77])  # the trail's colour
    assert (np.abs(planned[-1].astype(int) - green).sum(axis=2) < 60).sum() > 10  # the trail is drawn
    for a, b in zip(planned, by_frame, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_held_pose_is_drawn_once_and_copied_after(arm, monkeypatch) -> None:
    """A pose held over frames (a reach's hold, a short panel's padding) is rasterised for its first two frames and
    copied after: every frame equals the one a new renderer draws for that frame alone, into a new image or into
    the caller's buffer, overlays included."""
    from animkit.render import frames as frames_module
    from animkit.render.frames import FigureRenderer

    clip = _swing(arm, n=4)
    p = clip.sample_frames()
    poses = p[[0, 1, 1, 1, 1, 2, 3, 3, 3]]
    tip = arm.figure.node_names.index("tip")
    trail = arm.figure.world_positions(poses)[:, tip]
    target = np.array([[0.5, 0.5, 1.5]])
    cam = clip_camera(CameraSpec(), "z", framing_points(arm.figure, figure_mesh(arm.figure), poses), size=(64, 48))
    W = arm.figure.world_batch(poses)
    alone = [FigureRenderer(arm.figure, cam, up="z").frame(W[k], targets=target, trail=trail[:k + 1])
             for k in range(len(poses))]
    drawn = []
    real = frames_module.render_surfaces
    monkeypatch.setattr(frames_module, "render_surfaces", lambda *a, **k: drawn.append(1) or real(*a, **k))
    kept = list(FigureRenderer(arm.figure, cam, up="z").frames(poses, targets=target, trail=trail))
    assert len(drawn) == 6  # frames 0, 1, 2 (the hold's second: kept), 5, 6, 7 (kept); 3, 4 and 8 copied
    np.testing.assert_array_equal(np.stack(kept), np.stack(alone))
    buf = np.zeros((len(poses), 48, 64, 3), np.uint8)
    list(FigureRenderer(arm.figure, cam, up="z").frames(poses, targets=target, trail=trail, out=buf))
    np.testing.assert_array_equal(buf, np.stack(alone))
    assert not np.shares_memory(kept[3], kept[4])  # a copy each: a caller may draw on one frame


def test_panels_drawn_on_threads_equal_panels_drawn_in_turn(tmp_path, arm, monkeypatch) -> None:
    """render_panels draws its panels on several threads (panel_rows): the file is byte for byte the one drawn on
    one thread, panels of different lengths and trails included; the panels were drawn off the calling thread."""
    from animkit.errors import RenderError
    from animkit.render import panel_threads
    from animkit.render.panel_threads import panel_rows

    poses = _swing(arm, n=7).sample_frames()
    tip = arm.figure.node_names.index("tip")
    trail = arm.figure.world_positions(poses)[:, tip]
    panels = [Panel(arm.figure, poses, "a", targets=np.array([[0.5, 0.5, 1.5]]), trail=trail),
              Panel(arm.figure, poses[::-1], "b"), Panel(arm.figure, poses[:3], "c", trail=trail[:3])]
    out = {}
    for threads in (1, 3):
        monkeypatch.setattr(panel_threads, "render_threads", lambda threads=threads: threads)
        render_panels(panels, tmp_path / f"{threads}.gif", fps=7, up="z", size=(60, 50), quiet=True)
        out[threads] = (tmp_path / f"{threads}.gif").read_bytes()
    assert out[1] == out[3]

    import threading

    def stream(k: int, fail_at: int | None = None):
        for f in range(5):
            if f == fail_at:
                raise RenderError("stream broke")
            yield np.full((2, 2, 3), 10 * k + f, np.uint8), threading.current_thread().name

    rows = list(panel_rows([stream(k) for k in range(3)], 5, threads=2))
    assert [[int(img[0, 0, 0]) for img, _ in row] for row in rows] == [[f, 10 + f, 20 + f] for f in range(5)]
    assert all(name.startswith("animkit-panels") for row in rows for _, name in row)
    before = threading.active_count()
    with pytest.raises(RenderError, match="stream broke"):
        list(panel_rows([stream(0), stream(1, fail_at=3)], 5, threads=2))
    assert threading.active_count() == before  # the drawing threads ended
