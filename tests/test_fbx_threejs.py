"""The FBX reader against three.js's FBXLoader under Node, on the files tests/data/fbx/make_fbx.py made with Blender
and Assimp: every named node's world position and every skinned vertex, at several times of every clip.

three.js keeps the file's own units and axes (it applies neither UnitScaleFactor nor the axis system), so its
positions are mapped with what each file's recipe set (its unit and up axis, in :data:`FILES`, not read from the
file): p = unit · C · p_three. Needs ``node`` and the npm package ``three`` in tests/node; skipped otherwise.
"""

from __future__ import annotations

import json
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
FILES = {"mixamo_yup_cm.fbx": (0.01, np.eye(3)), "mixamo_zup_77.fbx": (1.0, ZUP)}

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
