"""Examples ship inside the package and are reachable by name, from the repository and from an installed wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest

from animkit import examples
from animkit.apps.cli import main
from animkit.errors import SceneError

from .conftest import DATA, ROOT, SCENES


def test_names_files_and_loading() -> None:
    assert {"humanoid", "walk", "wave", "three_axis_arm", "six_axis_arm", "cmu_02_01_walk",
            "cmu_09_01_run"} <= set(examples.names())
    scene = examples.load("walk")  # a scene with a base file beside it
    assert scene.figure.name == "humanoid" and "walk" in scene.clips
    # the shipped clips are the test data's files, byte for byte; scenes/ is the same folder
    for name in ("cmu_02_01_walk", "cmu_09_01_run"):
        assert examples.path(name).read_bytes() == (DATA / f"{name}.bvh").read_bytes()
    assert (SCENES / "humanoid.toml").resolve() == examples.path("humanoid")
    with pytest.raises(SceneError, match="'humanoid'"):
        examples.path("humanoi")
    assert examples.resolve("scenes/walk.toml") == Path("scenes/walk.toml")


def test_the_command_line_takes_example_names(tmp_path, capsys) -> None:
    assert main(["info", "cmu_09_01_run"]) == 0
    assert "149 frames" not in capsys.readouterr().err
    assert main(["render", "wave", "-o", str(tmp_path / "w.png"), "--fps", "2", "--size", "64x48", "-q"]) == 0
    assert main(["render", "humanoi", "-o", str(tmp_path / "x.gif")]) == 2
    assert "'humanoid'" in capsys.readouterr().err


@pytest.mark.study
def test_an_installed_wheel_runs_the_examples_outside_the_repository(tmp_path) -> None:
    t0 = time.perf_counter()
    dist = tmp_path / "dist"
    # a real wheel, built the way pip builds one (isolated build environment, setuptools from PyPI or pip's cache)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(ROOT)],
                   check=True, capture_output=True, cwd=tmp_path)
    wheel = next(dist.glob("animkit-*.whl"))
    env_dir = tmp_path / "venv"
    venv.create(env_dir, system_site_packages=True, with_pip=True)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True,
                   capture_output=True)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = ("import animkit, animkit.examples as e; s = e.load('walk'); "
            "print(animkit.__file__); print(s.source); print(len(e.names()))")
    out = subprocess.run([str(py), "-c", code], check=True, capture_output=True, text=True, cwd=work, env=env)
    module, source, count = out.stdout.split()
    assert module.startswith(str(env_dir)) and source.startswith(str(env_dir)), out.stdout
    assert int(count) >= 7
    # the README's main command, by name, from a folder with no scenes in it
    cli = env_dir / "bin" / "animkit"
    subprocess.run([str(cli), "compare", "humanoid", "-o", "c.gif", "--size", "96x96", "--fps", "5", "-q"],
                   check=True, capture_output=True, cwd=work, env=env)
    assert (work / "c.gif").stat().st_size > 1000
    print(f"wheel build + install + run: {time.perf_counter() - t0:.1f} s")
