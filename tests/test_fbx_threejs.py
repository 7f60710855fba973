"""The FBX reader against three.js's FBXLoader under Node, on the files tests/data/fbx/make_fbx.py made with Blender
and Assimp: every named node's world position and every skinned vertex, at several times of every clip.

three.js keeps the file's own units and axes (it applies neither UnitScaleFactor nor the axis system), so its
positions are mapped with what each file's recipe set (its unit and up axis, in :data:`FILES`, not read from the
file): p = unit · C · p_three. Needs ``node`` and the npm package ``three`` in tests/node; skipped otherwise.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import animkit

pytest.importorskip("ufbx", reason="ufbx (animkit[fbx]) is not installed")

NODE_DIR = Path(__file__).parent / "node"
SCRIPT = NODE_DIR / "threejs_fbx_oracle.mjs"
DATA = Path(__file__).parent / "data" / "fbx"
ZUP = np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]])  # (x, y, z) Z-up, -Y front → (x, z, -y) Y-up, +Z front
#: file → (metres per unit, file axes → Y-up), from make_fbx.py's recipe
#: (prerot_ascii.fbx, Assimp's ASCII output, is not here: FBXLoader samples its one-key curves as NaN)
FILES = {"mixamo_yup_cm.fbx": (0.01, np.eye(3)), "mixamo_zup_77.fbx": (1.0, ZUP),
         # the same two as ASCII 7.4 and 7.7 (tests/data/fbx/fbx_to_ascii.py)
         "mixamo_yup_cm_ascii74.fbx": (0.01, np.eye(3)), "mixamo_zup_ascii77.fbx": (1.0, ZUP)}

pytestmark = [
    pytest.mark.slow,  # three.js under Node: CI runs these after the rest
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.skipif(not (NODE_DIR / "node_modules" / "three").is_dir(),
                       reason="npm package three missing: npm install --prefix tests/node"),
]


def three(mode: str, path: Path, times) -> dict:
    out = subprocess.run(["node", str(SCRIPT), mode, str(path), json.dumps([float(t) for t in times])],
                         capture_output=True, text=True, timeout=300, cwd=NODE_DIR, check=True)
    return json.loads(out.stdout)


def _times(clip) -> np.ndarray:
    """Frame times (the file's keys: both readers agree there exactly) spread over the clip, its ends included."""
    frames = clip.frame_times()
    return frames[np.unique(np.linspace(0, len(frames) - 1, 7).round().astype(int))]


@pytest.fixture(scope="module")
def scenes() -> dict:
    return {name: animkit.load(DATA / name) for name in FILES}


@pytest.mark.parametrize("name", sorted(FILES))
def test_joint_world_positions_match_threejs(name, scenes) -> None:
    scene = scenes[name]
    unit, C = FILES[name]
    fig = scene.figure
    height = fig.size()
    assert len(scene.clips) == 2
    index = {n.replace(":", ""): k for k, n in enumerate(fig.node_names)}  # three.js drops ':' from names
    compared = 0
    for clip in scene.clips.values():
        times = _times(clip)
        result = three("world", DATA / name, times)["clips"]
        frames = result[clip.name] if clip.name in result else result[clip.name.split("|")[-1]]
        W = fig.world_batch(clip.sample(times))
        for f, positions in enumerate(frames):
            for node, p in positions.items():
                if node not in index:
                    continue
                want = unit * C @ np.asarray(p)
                err = np.abs(W[f, index[node], :3, 3] - want).max()
                assert err <= 1e-5 * height, f"{name} {clip.name} {node} t={times[f]:.4f}: off by {err:.3g} m"
                compared += 1
    assert compared >= 2 * 7 * 20


@pytest.mark.parametrize("name", sorted(FILES))
def test_skinned_vertices_match_threejs(name, scenes) -> None:
    scene = scenes[name]
    unit, C = FILES[name]
    skinned = [m for m in scene.meshes if m.skinned]
    assert len(skinned) == 1
    mesh = skinned[0]
    height = scene.figure.size()
    for clip in scene.clips.values():
        times = _times(clip)[::3]
        result = three("skin", DATA / name, times)["clips"]
        frames = result[clip.name] if clip.name in result else result[clip.name.split("|")[-1]]
        ours = mesh.positions(scene.figure.world_batch(clip.sample(times)))
        # three.js keeps one vertex per triangle corner, in the file's order; animkit one per distinct corner
        # (faces in the file's order): compare corner by corner
        corner = mesh.faces.reshape(-1)
        four = ((mesh.weights > 0).sum(axis=1) <= 4)[corner]  # three.js skins with the 4 largest influences only
        assert four.sum() >= 0.9 * corner.size and not four.all() and mesh.vertex_count < corner.size
        for f, meshes in enumerate(frames):
            assert len(meshes) == 1
            theirs = unit * (np.asarray(meshes[0]["positions"]).reshape(-1, 3) @ C.T)
            assert theirs.shape == (corner.size, 3)
            d = np.abs(ours[f][corner][four] - theirs[four]).max()
            assert d <= 1e-4 * height, f"{name} {clip.name} t={times[f]:.3f}: skinned vertices off by {d:.3g} m"


#: real files by other tools (tests/data/SOURCES.md) → (metres per unit, file axes → Y-up, what the file is)
REAL = {
    "huesitos.fbx": (0.01, np.eye(3), "FBX 7.4 binary by Blender (stable FBX IO) - 2.79"),  # skeleton, clip, skin
    "maya_cubes_pivots.fbx": (1.0, np.eye(3), "FBX 7.5 ASCII by FBX SDK/FBX Plugins version 2018.1.1"),
    "maya_prepost.fbx": (1.0, np.eye(3), "FBX 7.5 ASCII by FBX SDK/FBX Plugins version 2018.1.1"),
    "max_box_77_ascii.fbx": (1.0, np.eye(3), "FBX 7.7 ASCII by FBX SDK/FBX Plugins version 2020.0.1"),
}


def _real_times(scene) -> np.ndarray:
    if not scene.clips:
        return np.zeros(1)
    return _times(next(iter(scene.clips.values())))


def _frames(result: dict, scene) -> list:
    clips = result["clips"]
    if not scene.clips:
        return clips["rest"]
    name = next(iter(scene.clips))
    return clips[name] if name in clips else clips[name.split("|")[-1]]


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_files_nodes_match_threejs(name) -> None:
    """Maya (ASCII 7.5, rotation and scaling pivots, offsets, mirroring; the same with pre/post rotations and
    rotation orders added), 3ds Max (ASCII 7.7) and Blender 2.79 (binary 7.4, a skinned skeleton and its clip):
    every uniquely named node's world position at 7 times of the clip (or at rest) within 1e-5 of the height."""
    unit, C, what = REAL[name]
    scene = animkit.load(DATA / name)
    assert scene.notes[0].startswith(what)
    fig = scene.figure
    height = fig.size()
    times = _real_times(scene)
    W = fig.world_batch(next(iter(scene.clips.values())).sample(times) if scene.clips else fig.rest_pose()[None])
    renamed = {m for n in fig.node_names if re.fullmatch(r".+_\d+", n) for m in (n, n.rsplit("_", 1)[0])}
    index = {n.replace(":", ""): k for k, n in enumerate(fig.node_names) if n not in renamed}
    compared = 0
    for f, positions in enumerate(_frames(three("world", DATA / name, times), scene)):
        for node, p in positions.items():
            if node in index:
                err = np.abs(W[f, index[node], :3, 3] - unit * C @ np.asarray(p)).max()
                assert err <= 1e-5 * height, f"{name} {node} t={times[f]:.4f}: off by {err:.3g} m"
                compared += 1
    assert compared >= len(times) * min(5, len(index) - 1)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(
    strict=True, reason="three.js's FBXLoader is off on this Blender 2.79 file's skinned vertices once animated "
    "(1.5 m of an 11 m figure at t = 0.8 s; it agrees at rest and on every joint), where Blender 4.2's importer and "
    "animkit agree within 1e-4 of the height (tests/test_fbx.py)")) if n == "huesitos.fbx" else n
    for n in sorted(REAL)])
def test_real_files_mesh_vertices_match_threejs(name) -> None:
    """Every mesh's world vertices (skinned ones skinned) against three.js's, corner by corner, within 1e-4 of the
    height: each node's own pivots, pre/post rotation and rotation order, not only its children's positions."""
    unit, C, _ = REAL[name]
    scene = animkit.load(DATA / name)
    fig = scene.figure
    height = fig.size()
    times = _real_times(scene)[::3]
    W = fig.world_batch(next(iter(scene.clips.values())).sample(times) if scene.clips else fig.rest_pose()[None])
    node = {n: k for k, n in enumerate(fig.node_names)}
    compared = 0
    for f, theirs_all in enumerate(_frames(three("meshes", DATA / name, times), scene)):
        assert len(theirs_all) == len(scene.meshes)
        for theirs in theirs_all:
            origin = unit * C @ np.asarray(theirs["origin"])
            corners = unit * (np.asarray(theirs["positions"]).reshape(-1, 3) @ C.T)
            # the animkit mesh on the node three.js puts at the same place
            mine = [m for m in scene.meshes if np.abs(W[f, node[m.node], :3, 3] - origin).max() <= 1e-6 * height]
            assert mine, f"{name}: no animkit mesh for three.js's {theirs['name']!r}"
            ours = np.concatenate([m.positions(W[f:f + 1])[0] for m in mine])
            if any(m.skinned for m in mine):  # three.js skins with the 4 largest influences only
                four = np.concatenate([(m.weights > 0).sum(axis=1) <= 4 for m in mine])
                ours = ours[four]
            # the readers order corners differently: the two vertex sets' Hausdorff distance
            gap = np.linalg.norm(ours[:, None, :] - corners[None, :, :], axis=2)
            d = gap.min(axis=1).max()  # each of ours (skinned: those three.js can skin) to its nearest of theirs
            if not any(m.skinned for m in mine):
                d = max(d, gap.min(axis=0).max())  # and each of theirs to its nearest of ours
            assert d <= 1e-4 * height, f"{name} {theirs['name']} t={times[f]:.3f}: vertices off by {d:.3g} m"
            compared += 1
    assert compared == len(times) * len(scene.meshes) > 0
