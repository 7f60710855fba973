"""Notebooks: values show themselves inline (real IPython formatters), and the tutorial runs in a real kernel."""

from __future__ import annotations

import base64
import io
import re
import shutil
import time

import imageio.v3 as iio
import numpy as np
import pytest
from PIL import Image

import animkit
from animkit import examples
from animkit.notebook import Animation, register, show, still
from animkit.render.scene import LEFT_HUE, RIGHT_HUE

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


def test_ipython_formatters_show_animkit_values() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    register(shell)
    fmt = shell.display_formatter

    arm = examples.load("three_axis_arm")  # no clips: a still
    data, _ = fmt.format(arm)
    assert "image/png" in data and "text/html" not in data
    assert data["text/plain"].startswith("Scene('three_axis_arm', 3 joints")
    scene = examples.load("humanoid")
    wave = examples.load("wave").clip()
    data, _ = fmt.format(wave)
    assert "<video" in data["text/html"] and data["text/plain"].startswith("Clip('wave'")
    r = animkit.solve(scene.figure, scene.figure.rest_pose(), "hand_r", [-0.3, 1.25, 0.45], chain="arm")
    data, _ = fmt.format(r)
    assert "position error" in data["text/html"] and "<svg" in data["text/html"]
    assert len(data["text/plain"].splitlines()) == 1


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


def test_the_tutorial_notebook_runs_in_a_real_kernel(tmp_path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(ROOT / "docs" / "tutorial.ipynb", 4)
    shutil.copy(ROOT / "docs" / "tutorial.ipynb", tmp_path)
    t0 = time.perf_counter()
    # run from an empty folder: examples come from the package; the kernel imports this checkout's animkit
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute(env=_kernel_env())
    outputs = [(c.source, c.get("outputs", [])) for c in nb.cells if c.cell_type == "code"]
    assert not [o for _, outs in outputs for o in outs if o.output_type == "error"]
    text = "\n".join(o.get("text", "") for _, outs in outputs for o in outs if o.output_type == "stream")
    assert "['j1.rx', 'j2.ry', 'j3.rx']" in text
    assert re.search(r"hips-up\s+yes", text)  # the comparison's table
    rich = {src.split("  #")[0].split("(")[0]: outs for src, outs in outputs}
    html_of = {k: "".join(o.get("data", {}).get("text/html", "") for o in v) for k, v in rich.items()}
    assert "<video" in html_of["animkit.show"] and 'type="range"' in html_of["animkit.show"]
    assert "<video" in html_of["reach"] and "<video" in html_of["comparison"]
    assert "position error" in html_of["r"]
    png = [o["data"]["image/png"] for o in rich["animkit.still"] if "image/png" in o.get("data", {})]
    assert Image.open(io.BytesIO(base64.b64decode(png[0]))).size == (480, 360)
    print(f"notebook ran in {time.perf_counter() - t0:.1f} s")
