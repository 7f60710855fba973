"""Writes that never lose the old file (issue 27): a ``.gltf`` + ``.bin`` pair replaced as a set, a full disk, a
file animkit could not read back refused before anything is written. The oracle: the folder's listing and what
loads from it after each (failed) save."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.errors import AnimkitError
from animkit.model.figure import Figure
from animkit.model.joints import custom

from .conftest import DATA, ROOT, SCENES


def _positions(path: Path) -> np.ndarray:
    scene = animkit.load(path)
    clip = next(iter(scene.clips.values()))
    return scene.figure.world_positions(clip.sample_frames())


def _uri(path: Path) -> str:
    return json.loads(path.read_text())["buffers"][0]["uri"]


def test_gltf_and_bin_are_replaced_as_a_set(tmp_path: Path) -> None:
    walk, run = animkit.load(DATA / "cmu_02_01_walk.bvh"), animkit.load(DATA / "cmu_09_01_run.bvh")
    out = tmp_path / "m.gltf"
    animkit.save(out, walk)
    assert _uri(out) == "m.bin" and sorted(os.listdir(tmp_path)) == ["m.bin", "m.gltf"]
    first = _positions(out)
    animkit.save(out, run)  # the new set under the other name, then the switch, then the old .bin goes
    assert _uri(out) == "m.1.bin" and sorted(os.listdir(tmp_path)) == ["m.1.bin", "m.gltf"]
    second = _positions(out)
    assert first.shape != second.shape or not np.allclose(first, second)
    animkit.save(out, walk)
    assert _uri(out) == "m.bin" and sorted(os.listdir(tmp_path)) == ["m.bin", "m.gltf"]
    assert np.allclose(_positions(out), first)


def test_a_save_that_fails_at_the_switch_leaves_the_old_pair_whole(tmp_path: Path, monkeypatch) -> None:
    """The .gltf's rename fails (a kill or a full disk at the last step): the old .gltf and the .bin it names are
    still there and load as before; the new .bin is removed."""
    walk, run = animkit.load(DATA / "cmu_02_01_walk.bvh"), animkit.load(DATA / "cmu_09_01_run.bvh")
    out = tmp_path / "m.gltf"
    animkit.save(out, walk)
    before = _positions(out)
    real = os.replace

    def failing(src, dst, *a, **k):
        if Path(dst) == out:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(src, dst, *a, **k)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(AnimkitError, match="No space left on device"):
        animkit.save(out, run)
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["m.bin", "m.gltf"]
    assert np.allclose(_positions(out), before)


@pytest.mark.parametrize("suffix", [".gltf", ".glb", ".bvh", ".toml"])
def test_a_full_disk_is_one_error_and_leaves_nothing(tmp_path: Path, monkeypatch, suffix: str) -> None:
    scene = animkit.load(DATA / "cmu_02_01_walk.bvh") if suffix != ".toml" else animkit.load(SCENES / "walk.toml")
    out = tmp_path / f"out{suffix}"
    calls = []

    def full(self, data):
        calls.append(self)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(AnimkitError, match=r"cannot write the file \(No space left on device\)") as info:
        animkit.save(out, scene)
    monkeypatch.undo()
    assert calls and "\n" not in str(info.value)
    assert os.listdir(tmp_path) == []  # no temporary, no half of a pair


def test_a_full_tmpfs_is_one_error_and_leaves_nothing(tmp_path: Path) -> None:
    """A real full disk: a 64 KiB tmpfs (root only; skipped where it cannot be mounted)."""
    import subprocess

    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (not root, or no mount namespace)")
    try:
        (mnt / "keep.glb").write_bytes(b"old")
        with pytest.raises(AnimkitError, match="No space left on device"):
            animkit.save(mnt / "keep.glb", animkit.load(DATA / "CesiumMan.glb"))
        assert os.listdir(mnt) == ["keep.glb"] and (mnt / "keep.glb").read_bytes() == b"old"
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_a_zero_scale_is_refused_before_writing(tmp_path: Path) -> None:
    fig = Figure("root")
    fig.add("a", "root", offset=(0, 1, 0), joint=custom("a", [("scale", "x"), ("scale", "y"), ("scale", "z")],
                                                       rest=[0.0, 0.0, 0.0]))
    fig.add("b", "a", offset=(0, 1, 0))
    for suffix in (".gltf", ".glb"):
        with pytest.raises(AnimkitError, match="node 'a' has a degenerate transform at rest"):
            animkit.save(tmp_path / f"z{suffix}", fig)
    assert os.listdir(tmp_path) == []
    animkit.save(tmp_path / "z.toml", fig)  # TOML holds it, and reads it back
    assert animkit.load(tmp_path / "z.toml").figure.dof_count == 3


def test_a_huge_scale_is_refused_by_the_reader(tmp_path: Path) -> None:
    doc = {"asset": {"version": "2.0"}, "nodes": [{"name": "a", "children": [1], "scale": [1e308] * 3},
                                                  {"name": "b", "translation": [0, 1, 0]}], "scenes": [{"nodes": [0]}]}
    (tmp_path / "s.gltf").write_text(json.dumps(doc))
    with pytest.raises(animkit.ParseError, match=r"/nodes/0/scale.*MAX_SCALE"):
        animkit.load(tmp_path / "s.gltf")


def _render_mp4(out: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``animkit render walk.toml -o out.mp4`` as a real process: what reaches its stderr is what a user sees
    (ffmpeg, a child process, writes to file descriptor 2, past any Python-level capture)."""
    return subprocess.run([sys.executable, "-m", "animkit", "render", str(SCENES / "walk.toml"), "-o", str(out),
                           "--size", "320x240", "--loops", "4", "-q"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


def test_a_full_disk_during_an_mp4_render_is_one_line_naming_the_cause(tmp_path: Path) -> None:
    """A real full disk under ffmpeg: a 16 KiB tmpfs (root only; skipped where it cannot be mounted). The old
    writer reported success and left a truncated 16 KiB file; now: exit 2, one line naming the output and
    'No space left on device', none of ffmpeg's own lines, nothing left in the folder."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (not root, or no mount namespace)")
    try:
        done = _render_mp4(mnt / "walk.mp4")
        assert done.returncode == 2, done
        assert done.stderr == f"animkit: error: {mnt / 'walk.mp4'}: cannot write the file (No space left on device)\n"
        assert os.listdir(mnt) == []
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_an_ffmpeg_that_ends_early_is_one_line_with_its_reason(tmp_path: Path) -> None:
    """A stand-in ffmpeg (``IMAGEIO_FFMPEG_EXE``) that writes a line to its stderr and exits 1 without reading
    its input: the render's frames meet a broken pipe; the error is that line, not 'Broken pipe', and the
    partial file is removed."""
    fake = tmp_path / "ffmpeg"
    fake.write_text("#!/bin/sh\necho 'Unknown encoder libx264' >&2\nexit 1\n")
    fake.chmod(0o755)
    out = tmp_path / "out" / "walk.mp4"
    out.parent.mkdir()
    done = _render_mp4(out, {"IMAGEIO_FFMPEG_EXE": str(fake)})
    assert done.returncode == 2, done
    assert done.stderr == f"animkit: error: {out}: cannot write the file (Unknown encoder libx264)\n"
    assert os.listdir(out.parent) == []
