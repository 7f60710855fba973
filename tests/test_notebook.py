"""Notebooks: values show themselves inline (real IPython formatters), and the tutorial runs in a real kernel."""

from __future__ import annotations

import base64
import html
import io
import re
import shutil
import time

import imageio.v3 as iio
import numpy as np
import pytest
from PIL import Image

import animkit
from animkit import display, examples
from animkit.apps.notebook import Animation, show, still
from animkit.render.placed import LEFT_HUE, RIGHT_HUE

from .conftest import ROOT


def _video_frames(anim: Animation) -> np.ndarray:
    return iio.imread(anim.data, extension=".mp4")


def test_show_plays_a_clip_as_a_video_with_controls() -> None:
    scene = examples.load("wave")
    anim = show(scene, size=(96, 72), fps=10)
    clip = scene.clip()
    assert anim.mime == "video/mp4" and anim.frames == int(round(clip.duration * 10)) + 1
    frames = _video_frames(anim)
    assert frames.shape[0] == anim.frames and frames.shape[1:3] == (72, 96)
    page = anim._repr_html_()
    assert "<video" in page and 'type="range"' in page and f'max="{anim.frames - 1}"' in page and "play" in page
    # the video is the file render writes, with the same options (a GIF: an image without controls)
    gif = show(scene, size=(96, 72), fps=10, format="gif", view="front")
    assert gif._repr_html_().startswith("<img") and Image.open(io.BytesIO(gif.data)).n_frames == anim.frames


def test_still_is_one_pose_as_png_with_the_sides_in_their_hues() -> None:
    scene = examples.load("humanoid")
    picture = still(scene, view="front", size=(160, 160))
    img = np.asarray(Image.open(io.BytesIO(picture._repr_png_())).convert("RGB"))
    assert img.shape == (160, 160, 3)
    for hue in (LEFT_HUE, RIGHT_HUE):
        c = img.reshape(-1, 3).astype(float)
        h = np.asarray(hue) / np.linalg.norm(hue)
        assert ((c @ h) / np.maximum(np.linalg.norm(c, axis=1), 1e-9) > 0.995).sum() > 50
    with pytest.raises(animkit.RenderError, match="one pose"):
        still(scene, np.zeros((2, scene.figure.dof_count)))


def _data_uri(page: str, tag: str) -> tuple[str, bytes]:
    """The mime type and decoded bytes of the first ``<tag ... src="data:MIME;base64,...">`` in ``page``."""
    m = re.search(rf'<{tag}\b[^>]*src="data:([a-z/0-9]+);base64,([A-Za-z0-9+/=]+)"', page)
    assert m, f"no <{tag}> with base64 data in {page[:200]!r}"
    return m.group(1), base64.b64decode(m.group(2), validate=True)


def _mp4_frames(data: bytes) -> int:
    """Frames of an MP4, counted by ffmpeg's decoder (imageio-ffmpeg): the container must be a real MP4."""
    assert data[4:8] == b"ftyp"  # ISO base media file: the first box is 'ftyp'
    return int(iio.imread(data, extension=".mp4").shape[0])


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        return im.size


def test_clips_and_scenes_draw_themselves_with_their_own_repr_methods() -> None:
    assert not [k for k in display.registered() if not k[1].startswith("animkit.")]
    scene = examples.load("wave")
    clip = scene.clip()
    frames = int(round(clip.duration * clip.fps)) + 1  # every frame of the clip at its own rate
    mime, data = _data_uri(clip._repr_html_(), "video")
    assert mime == "video/mp4" and _mp4_frames(data) == frames
    assert clip._repr_png_() is None  # a moving clip has no single picture
    page = scene._repr_html_()
    assert _mp4_frames(_data_uri(page, "video")[1]) == frames and f'max="{frames - 1}"' in page
    assert scene._repr_png_() is None
    # no clips, or a clip of one frame: one pose, a PNG (the size show() and still() use)
    arm = examples.load("three_axis_arm")
    assert arm._repr_html_() is None and _png_size(arm._repr_png_()) == (480, 360)
    one = animkit.Clip.from_poses(arm.figure, [0.0], arm.figure.rest_pose()[None], name="one")
    assert one._repr_html_() is None and _png_size(one._repr_png_()) == (480, 360)
    assert still(arm)._repr_png_() == arm._repr_png_()  # the rest pose, drawn as still() draws it
    # the one-line reprs stay
    for value in (scene, clip, arm, one):
        assert "\n" not in repr(value) and "<" not in repr(value)


def test_a_reach_and_a_comparison_play_inline() -> None:
    scene = examples.load("humanoid")
    fig = scene.figure
    reach = animkit.bake_reach(fig, "hand_r", [-0.3, 1.25, 0.45], chain="arm", duration=0.5, hold=0.2, fps=10,
                               quiet=True)
    assert _mp4_frames(_data_uri(reach._repr_html_(), "video")[1]) == len(reach.poses)
    comparison = animkit.compare(scene, chains=["arm", "torso"], duration=0.4, hold=0.1, fps=10, quiet=True)
    data = _data_uri(comparison._repr_html_(), "video")[1]
    assert _mp4_frames(data) == max(len(p.poses) for p in comparison.panels)
    assert 2 * 300 <= iio.imread(data, extension=".mp4", index=0).shape[1] < 3 * 300  # two 300 px panels, side by side


def test_ik_results_show_their_numbers() -> None:
    scene = examples.load("humanoid")
    fig = scene.figure
    r = animkit.solve(fig, fig.rest_pose(), "hand_r", [-0.3, 1.25, 0.45], chain="arm")
    page = r._repr_html_()
    assert f"<td>{r.position_error:.4g}</td>" in page and f"<td>{r.iterations}</td>" in page
    points = re.search(r"points='([^']*)'", page).group(1).split()
    assert len(points) == len(r.errors)  # one point of the curve per recorded error
    batch = animkit.ik.solve_batch(fig, fig.rest_pose(), "hand_r", [[-0.3, 1.25, 0.45], [5.0, 5.0, 5.0]],
                                   chain="arm", quiet=True)
    page = batch._repr_html_()
    assert f"<td>{int(batch.converged.sum())} of 2</td>" in page
    assert f"{np.max(batch.position_error):.4g}</td>" in page
    assert all(f"{reason}: {batch.reason.count(reason)}" in page for reason in batch.reason)


def test_a_drawing_that_fails_is_a_short_note_not_an_exception(capsys) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    def broken(value):
        raise animkit.RenderError("no GPU in this test\nsecond line")

    kinds = ("text/html", "image/png")
    before = display.registered()
    try:
        for mime in kinds:
            display.register(mime, "animkit.scene.Scene", broken)
        scene = examples.load("three_axis_arm")
        page = scene._repr_html_()
        assert "not drawn: RenderError: no GPU in this test" in page and "second line" not in page
        assert html.escape(repr(scene)) in page and scene._repr_png_() is None
        # IPython shows the note and the one-line text, and prints no traceback
        data, _ = InteractiveShell.instance().display_formatter.format(scene)
        assert "not drawn" in data["text/html"] and "image/png" not in data and "\n" not in data["text/plain"]
        assert "Traceback" not in capsys.readouterr().err
        display.register("image/png", "animkit.scene.Scene", lambda v: None)
        assert scene._repr_png_() is None  # a drawer may have nothing to draw
    finally:
        for mime in kinds:
            display.register(mime, "animkit.scene.Scene", before.get((mime, "animkit.scene.Scene")))
    assert display.registered() == before


def test_ipython_shows_animkit_values_without_any_registration() -> None:
    # the values' own methods are what IPython calls: no type printers for animkit anywhere
    from IPython.core.interactiveshell import InteractiveShell

    fmt = InteractiveShell.instance().display_formatter
    printers = [t for f in fmt.formatters.values() for t in [*f.type_printers, *f.deferred_printers]]
    assert not [t for t in printers if "animkit" in str(t)]
    data, _ = fmt.format(examples.load("three_axis_arm"))
    assert "image/png" in data and "text/html" not in data
    assert data["text/plain"].startswith("Scene('three_axis_arm', 3 joints")


def test_one_line_reprs() -> None:
    scene = examples.load("walk")
    for value in (scene, scene.clip(), scene.figure):
        text = repr(value)
        assert "\n" not in text and len(text) < 160
    assert "46 DOFs" in repr(scene) and "34 frames" in repr(scene.clip())


def _kernel_env() -> dict[str, str]:
    """The kernel's environment: this checkout first on its path (as pytest's pythonpath puts it here)."""
    import os

    path = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path))


def test_the_notebook_is_the_tutorial() -> None:
    import importlib.util

    import nbformat

    spec = importlib.util.spec_from_file_location("make_notebook", ROOT / "docs" / "make_notebook.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    want = [(c.cell_type, c.source) for c in mod.build().cells]
    have = [(c.cell_type, c.source) for c in nbformat.read(ROOT / "docs" / "tutorial.ipynb", 4).cells]
    assert have == want, "docs/tutorial.ipynb is stale: run python docs/make_notebook.py"


def test_the_notebook_writes_its_pictures_into_a_temporary_folder() -> None:
    # before any code that writes a file (compare.gif, reach.toml...), the kernel moves into a fresh temporary
    # folder: opened in docs/, the notebook never overwrites docs/compare.gif
    import nbformat

    code = [c.source for c in nbformat.read(ROOT / "docs" / "tutorial.ipynb", 4).cells if c.cell_type == "code"]
    assert "os.chdir(tempfile.mkdtemp(" in code[0]
    assert not any(re.search(r"[\"']compare\.gif[\"']", c) for c in code[:1])
    assert any(re.search(r"[\"']compare\.gif[\"']", c) for c in code[1:])  # the writes come after it
    assert not any("docs/" in c for c in code)


@pytest.mark.slow
def test_the_tutorial_notebook_runs_in_a_real_kernel(tmp_path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(ROOT / "docs" / "tutorial.ipynb", 4)
    shutil.copy(ROOT / "docs" / "tutorial.ipynb", tmp_path)
    # and, in the same kernel: nothing registered animkit with IPython's formatters, yet a plain display() of a
    # clip and a scene without clips carries HTML (a video) and a PNG: the values' own _repr_html_/_repr_png_
    nb.cells.append(nbformat.v4.new_code_cell(
        "from IPython.display import display\n"
        "fmts = get_ipython().display_formatter.formatters\n"
        "print('animkit printers:', [t for f in fmts.values() for t in [*f.type_printers, *f.deferred_printers]\n"
        "                            if 'animkit' in str(t)])\n"
        "display(animkit.examples.load('wave').clip(), animkit.examples.load('three_axis_arm'))"))
    t0 = time.perf_counter()
    # run from an empty folder: examples come from the package; the kernel imports this checkout's animkit
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute(env=_kernel_env())
    outputs = [(c.source, c.get("outputs", [])) for c in nb.cells if c.cell_type == "code"]
    assert not [o for _, outs in outputs for o in outs if o.output_type == "error"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tutorial.ipynb"]  # its files went to a temporary folder
    text = "\n".join(o.get("text", "") for _, outs in outputs for o in outs if o.output_type == "stream")
    assert "['j1.rx', 'j2.ry', 'j3.rx']" in text
    assert re.search(r"hips-up\s+yes", text)  # the comparison's table
    rich = {src.split("  #")[0].split("(")[0]: outs for src, outs in outputs}
    html_of = {k: "".join(o.get("data", {}).get("text/html", "") for o in v) for k, v in rich.items()}
    assert "<video" in html_of["animkit.show"] and 'type="range"' in html_of["animkit.show"]
    assert "<video" in html_of["reach"] and "<video" in html_of["comparison"]
    viewer = html_of["animkit.apps.notebook.show_comparison"]  # the interactive viewer, the MP4 inside as its fallback
    assert "<iframe" in viewer and "animkit-meta" in viewer and "<video" in viewer
    size = len(nbformat.writes(nb).encode("utf-8"))
    print(f"executed notebook: {size / 1e6:.2f} MB")
    assert size < 5_000_000
    assert "position error" in html_of["r"]
    png = [o["data"]["image/png"] for o in rich["animkit.still"] if "image/png" in o.get("data", {})]
    assert Image.open(io.BytesIO(base64.b64decode(png[0]))).size == (480, 360)
    last = nb.cells[-1].outputs
    assert [o.text for o in last if o.output_type == "stream"] == ["animkit printers: []\n"]
    shown = [o.data for o in last if o.output_type == "display_data"]
    assert len(shown) == 2 and shown[0]["text/plain"].startswith("Clip('wave'")
    assert _mp4_frames(_data_uri(shown[0]["text/html"], "video")[1]) == 91  # 3 s at 30 fps
    assert "text/html" not in shown[1] and _png_size(base64.b64decode(shown[1]["image/png"])) == (480, 360)
    print(f"notebook ran in {time.perf_counter() - t0:.1f} s")
