"""One commands layer: ``animkit CMD`` and a batch job of the same command write the same bytes, because both call
:mod:`animkit.apps.commands`; and the up axis lives on the figure."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.apps import commands
from animkit.apps.batch import run_one
from animkit.apps.cli import main
from animkit.examples import resolve
from animkit.render.frames import Style
from animkit.scene import CameraSpec, Scene

DATA = Path(__file__).parent / "data"


def _batch(name: str, src: Path, out: Path, **options: object) -> dict:
    row = run_one(name, src, out, options)
    assert row["status"] == "ok", row.get("error")
    return row


def test_convert_cli_and_batch_write_the_same_file(tmp_path: Path) -> None:
    src = tmp_path / "wave.toml"
    for name in ("wave", "humanoid"):  # wave's figure is humanoid.toml's
        shutil.copy(resolve(name), tmp_path)
    for suffix in (".bvh", ".glb", ".toml"):
        cli_out, batch_out = tmp_path / f"cli{suffix}", tmp_path / "batch" / f"wave{suffix}"
        batch_out.parent.mkdir(exist_ok=True)
        assert main(["convert", str(src), str(cli_out)]) == 0
        _batch("convert", src, batch_out, suffix=suffix)
        assert cli_out.read_bytes() == batch_out.read_bytes(), suffix
        again = animkit.load(cli_out)  # and it is the scene: same figure, same motion at the frames
        a, b = animkit.load(src), again
        t = a.clip().frame_times()
        names = [n for n in a.figure.node_names if n in b.figure.node_names]  # readers may add end sites, a root
        assert len(names) >= len(a.figure.node_names) - 2  # BVH names its leaves as end sites
        pa, pb = a.figure.world_positions(a.clip().sample(t)), b.figure.world_positions(b.clip().sample(t))
        ia, ib = [a.figure.node_names.index(n) for n in names], [b.figure.node_names.index(n) for n in names]
        np.testing.assert_allclose(pb[:, ib], pa[:, ia], atol=1e-4)


def test_render_cli_and_batch_write_the_same_gif(tmp_path: Path) -> None:
    src = tmp_path / "walk.bvh"
    shutil.copy(DATA / "cmu_02_01_walk.bvh", src)
    cli_out, batch_out = tmp_path / "cli.gif", tmp_path / "batch" / "walk.gif"
    batch_out.parent.mkdir()
    assert main(["render", str(src), "-o", str(cli_out), "--size", "64x48", "--fps", "4", "-q"]) == 0
    row = _batch("render", src, batch_out, suffix=".gif", size=(64, 48), fps=4.0, camera=CameraSpec(),
                 style=Style(grid=True))
    assert cli_out.read_bytes() == batch_out.read_bytes()
    assert row["rendered_frames"] > 1


def test_retarget_cli_and_batch_write_the_same_clip(tmp_path: Path) -> None:
    src = tmp_path / "walk.bvh"
    shutil.copy(DATA / "cmu_02_01_walk.bvh", src)
    cli_out, batch_out = tmp_path / "cli.bvh", tmp_path / "batch" / "walk.bvh"
    batch_out.parent.mkdir()
    assert main(["retarget", str(src), "humanoid", "-o", str(cli_out), "-q"]) == 0
    row = _batch("retarget", src, batch_out, suffix=".bvh", target="humanoid")
    assert cli_out.read_bytes() == batch_out.read_bytes()
    done = commands.retarget(animkit.load(src), commands.load_scene("humanoid"))
    assert row["retarget_scale"] == pytest.approx(done.result.scale)
    assert row["skate_mm_after"] == pytest.approx(done.locked.after.skate_mm)


def test_info_cli_prints_the_tree_the_batch_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    src = tmp_path / "arm.toml"
    shutil.copy(resolve("three_axis_arm"), src)
    assert main(["info", str(src)]) == 0
    printed = capsys.readouterr().out.splitlines()
    out = tmp_path / "batch" / "arm.json"
    out.parent.mkdir()
    _batch("info", src, out)
    tree = json.loads(out.read_text())["tree"]
    assert printed[: len(tree)] == tree


def test_convert_refuses_an_unknown_format_before_reading(tmp_path: Path) -> None:
    with pytest.raises(animkit.AnimkitError, match="output file type"):
        commands.check_writable(tmp_path / "x.obj")
    assert main(["convert", str(tmp_path / "missing.toml"), str(tmp_path / "x.obj")]) == 2


def test_the_up_axis_is_the_figures() -> None:
    arm = animkit.load(resolve("three_axis_arm"))  # a TOML scene that says up = "z"
    walk = animkit.load(DATA / "cmu_02_01_walk.bvh")  # BVH: Y up
    robot = animkit.load(DATA / "ur5_robot.urdf")  # URDF: Z up
    assert (arm.up, arm.figure.up) == ("z", "z")
    assert (walk.up, walk.figure.up) == ("y", "y")
    assert (robot.up, robot.figure.up) == ("z", "z")
    # a Scene made without up takes the figure's; one made with up sets it
    assert Scene(robot.figure).up == "z"
    assert Scene(walk.figure, up="z").figure.up == "z"
    with pytest.raises(animkit.AnimkitError, match="up axis"):
        walk.figure.up = "x"  # type: ignore[assignment]
    # the functions that take up read the figure's when not told: the hip height of a Z-up walk is the one
    # measured along z, the same number as telling them up="z"
    from animkit.motion.retarget import hip_height

    fig = walk.figure
    assert hip_height(fig, "Hips") == pytest.approx(hip_height(fig, "Hips", "z"))
    fig.up = "y"
    assert hip_height(fig, "Hips") == pytest.approx(hip_height(fig, "Hips", "y"))
    assert hip_height(fig, "Hips", "y") != pytest.approx(hip_height(fig, "Hips", "z"))
