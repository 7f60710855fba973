"""Every limit in ``animkit.limits`` can be overridden at run time (issue 27): readers read ``limits.MAX_X`` when
they check, never a copy imported by value. For each limit, a small input that loads under the default is refused,
with an error naming that limit, once the limit is set below what the input holds; the oracle is the input's own
size (known by construction) against the lowered limit."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit import limits
from animkit.errors import AnimkitError
from animkit.keyframes import Clip
from animkit.render.writers import GifWriter

from .conftest import DATA, SCENES


def _bvh(tmp: Path, depth: int = 4, frames: int = 20, frame_time: float = 0.01) -> Path:
    """A chain ``depth`` joints deep (each one channel), ``frames`` frames at ``frame_time``."""
    lines = ["HIERARCHY", "ROOT r", "{", "OFFSET 0 0 0", "CHANNELS 1 Xrotation"]
    for i in range(depth - 1):
        lines += [f"JOINT j{i}", "{", "OFFSET 0 1 0", "CHANNELS 1 Xrotation"]
    lines += ["}"] * depth + ["MOTION", f"Frames: {frames}", f"Frame Time: {frame_time}"]
    lines += [" ".join(["0"] * depth)] * frames
    p = tmp / "chain.bvh"
    p.write_text("\n".join(lines) + "\n")
    return p


def _gltf(tmp: Path, nodes: int = 3, scale: float = 2.0) -> Path:
    """``nodes`` nodes in a chain, the first scaled by ``scale``."""
    doc = {"asset": {"version": "2.0"}, "scenes": [{"nodes": [0]}], "scene": 0,
           "nodes": [{"name": f"n{i}", "translation": [0, 1, 0], **({"children": [i + 1]} if i + 1 < nodes else {}),
                      **({"scale": [scale] * 3} if i == 0 else {})} for i in range(nodes)]}
    p = tmp / "chain.gltf"
    p.write_text(json.dumps(doc))
    return p


def _arm() -> animkit.Figure:
    return animkit.load(SCENES / "three_axis_arm.toml").figure


def _based(tmp: Path) -> Path:
    """A scene whose figure is a base scene (humanoid.toml, a few kB)."""
    (tmp / "humanoid.toml").write_bytes((SCENES / "humanoid.toml").read_bytes())
    p = tmp / "top.toml"
    p.write_text('[figure]\nbase = "humanoid.toml"\n')
    return p


# name → [(what is probed, what the input holds against the limit, the call, the value that refuses it)]
Probe = tuple[str, Callable[[Path], object], float]
PROBES: dict[str, list[Probe]] = {
    "MAX_FPS": [("a clip at 60 fps", lambda d: Clip.from_poses(_arm(), [0.0, 1.0], np.zeros((2, 3)), fps=60.0), 50.0),
                ("a BVH at 100 fps", lambda d: animkit.load(_bvh(d)), 50.0),
                ("a GIF at 30 fps", lambda d: GifWriter(d / "a.gif", 30.0, (16, 16), quiet=True).abort(), 20.0),
                ("frame_count at 30 fps", lambda d: limits.frame_count(1.0, 30.0), 20.0)],
    "MAX_FRAMES": [("a BVH of 20 frames", lambda d: animkit.load(_bvh(d)), 10),
                   ("a clip of 31 frames", lambda d: Clip.from_poses(_arm(), [0.0, 1.0], np.zeros((2, 3)),
                                                                     fps=30.0), 10)],
    "MAX_TIME": [("a key at 10 s", lambda d: Clip.from_poses(_arm(), [0.0, 10.0], np.zeros((2, 3))), 5.0),
                 ("a BVH frame time of 0.01 s", lambda d: animkit.load(_bvh(d)), 0.005)],
    "MAX_IMAGE_SIDE": [("a 16x16 GIF", lambda d: GifWriter(d / "a.gif", 30.0, (16, 16), quiet=True).abort(), 8)],
    "MAX_REFERENCED_BYTES": [("a glb of 0.4 MB", lambda d: animkit.load(DATA / "CesiumMan.glb"), 1000),
                             ("a base scene of a few kB", lambda d: animkit.load(_based(d)), 100)],
    "MAX_DEPTH": [("a BVH 4 deep", lambda d: animkit.load(_bvh(d)), 2),
                  ("a glTF 3 deep", lambda d: animkit.load(_gltf(d)), 1)],
    "MAX_NODES": [("a glTF of 3 nodes", lambda d: animkit.load(_gltf(d)), 2)],
    "MAX_SKIN_JOINTS": [("CesiumMan's 19 joints", lambda d: animkit.load(DATA / "CesiumMan.glb"), 5)],
    "MAX_KEYS": [("CesiumMan's walk", lambda d: animkit.load(DATA / "CesiumMan.glb"), 10)],
    "MAX_SAMPLES": [("CesiumMan's walk", lambda d: animkit.load(DATA / "CesiumMan.glb"), 10),
                    ("a clip sampled", lambda d: Clip.from_poses(_arm(), [0.0, 1.0], np.zeros((2, 3)))
                     .sample_frames(), 10)],
    "MAX_IMAGE_PIXELS": [("CesiumMan's texture", lambda d: animkit.load(DATA / "CesiumMan.glb"), 100)],
    "MAX_TOTAL_IMAGE_PIXELS": [("CesiumMan's texture", lambda d: animkit.load(DATA / "CesiumMan.glb"), 100)],
    "MAX_DECODED_BYTES": [("CesiumMan's accessors", lambda d: animkit.load(DATA / "CesiumMan.glb"), 1000)],
    "MAX_SCALE": [("a node scaled by 2", lambda d: animkit.load(_gltf(d)), 1.5)],
}

NAMES = [n for n in limits.__all__ if n.startswith("MAX_")]


def test_every_limit_has_a_probe() -> None:
    assert sorted(PROBES) == sorted(NAMES)


@pytest.mark.parametrize(("name", "what", "call", "low"),
                         [(n, w, c, v) for n in NAMES for w, c, v in PROBES.get(n, [])],
                         ids=[f"{n}-{w}" for n in NAMES for w, _, _ in PROBES.get(n, [])])
def test_lowering_a_limit_at_run_time_takes_effect(tmp_path: Path, monkeypatch, name: str, what: str,
                                                   call: Callable[[Path], object], low: float) -> None:
    call(tmp_path)  # within the default
    monkeypatch.setattr(limits, name, low)
    with pytest.raises(AnimkitError) as info:
        call(tmp_path)
    assert f"animkit.limits.{name}" in str(info.value) or (
        name in {"MAX_FPS", "MAX_TIME"} and "animkit.limits.MAX_FPS and MAX_TIME" in str(info.value)), info.value
