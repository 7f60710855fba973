"""The glTF reader against three.js under Node (GLTFLoader's own tracks and interpolants, SkinnedMesh).

Needs ``node`` and the npm package ``three`` in tests/node (``npm install --prefix tests/node``; CI does
this); skipped with the reason otherwise.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import animkit

from .gltf_builder import gltf_text_from_glb
from .test_gltf import DATA, SAMPLES, _anim_file

NODE_DIR = Path(__file__).parent / "node"
SCRIPT = NODE_DIR / "threejs_oracle.mjs"

pytestmark = [
    pytest.mark.slow,  # three.js under Node: CI runs these after the rest
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.skipif(not (NODE_DIR / "node_modules" / "three").is_dir(),
                       reason="npm package three missing: npm install --prefix tests/node"),
]


def three(mode: str, gltf_text: str, times, tmp_path: Path) -> dict:
    f = tmp_path / "oracle.gltf"
    f.write_text(gltf_text)
    out = subprocess.run(["node", str(SCRIPT), mode, str(f), json.dumps([float(t) for t in times])],
                         capture_output=True, text=True, timeout=120, cwd=NODE_DIR, check=True)
    return json.loads(out.stdout)


def _compare_worlds(scene, doc: dict, result: dict, times) -> None:
    fig = scene.figure
    index = {n: k for k, n in enumerate(fig.node_names)}
    assert len(result) == len(scene.clips)
    for clip, frames in zip(scene.clips.values(), result.values(), strict=True):  # file order (names differ
        # for unnamed animations: three.js says animation_0, animkit animation0)
        W = fig.world_batch(clip.sample(np.asarray(times)))
        for f, mats in enumerate(frames):
            for i, m in mats.items():
                name = doc["nodes"][int(i)]["name"]
                want = np.array(m).reshape(4, 4).T
                np.testing.assert_allclose(W[f, index[name]], want, atol=2e-5, err_msg=f"{name} t={times[f]}")


@pytest.mark.parametrize("name", SAMPLES)
def test_node_worlds_match_threejs_between_keys(name, tmp_path) -> None:
    text = gltf_text_from_glb((DATA / name).read_bytes())
    scene = animkit.load(DATA / name)
    times = np.linspace(0.0, scene.clip().duration, 23)
    _compare_worlds(scene, json.loads(text), three("world", text, times, tmp_path), times)


@pytest.mark.parametrize("interp", ["LINEAR", "STEP", "CUBICSPLINE"])
def test_generated_interpolations_match_threejs(interp, tmp_path) -> None:
    b = _anim_file(interp, np.random.default_rng(11))
    path = b.write(tmp_path / "x.gltf", "data")
    scene = animkit.load(path)
    times = np.linspace(0.0, 2.0, 37)  # STEP: three.js switches at the key, as the spec does; avoid exact keys
    times = times[~np.isin(np.round(times, 9), [0.5, 1.25])]
    _compare_worlds(scene, json.loads(path.read_text()), three("world", path.read_text(), times, tmp_path), times)


@pytest.mark.parametrize("name", SAMPLES)
def test_skinned_vertices_match_threejs(name, tmp_path) -> None:
    """three.js SkinnedMesh world positions (getVertexPosition, then the mesh's matrixWorld) on the real
    characters, whose mesh nodes sit under transformed nodes: three.js's attached bind mode cancels the
    mesh node's world matrix, so it shows v' = Σ w W IBM v, as animkit does."""
    text = gltf_text_from_glb((DATA / name).read_bytes())
    scene = animkit.load(DATA / name)
    times = np.array([0.0, scene.clip().duration * 0.37, scene.clip().duration * 0.81])
    result = three("skin", text, times, tmp_path)
    mesh = scene.meshes[0]
    got = mesh.positions(scene.figure.world_batch(scene.clip().sample(times)))
    for f, frame in enumerate(next(iter(result.values()))):
        want = np.array(frame[0]["positions"]).reshape(-1, 3)
        np.testing.assert_allclose(got[f], want, atol=5e-5 * max(1.0, np.abs(want).max()))
