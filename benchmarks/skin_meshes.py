"""The meshes bench_skin times, and a worker that times skinning into a float32 buffer with whichever animkit is on
its path (for ``bench_skin --against TREE``: the same calls in this tree and in another, interleaved).

    PYTHONPATH=TREE python benchmarks/skin_meshes.py    # reads mesh names on stdin, answers seconds (thread CPU, wall)

Uses only animkit's public API that every tree since skinning into ``out=`` has (``animkit.load``, ``Mesh``, ``Skin``,
``figure.world_batch``, ``Mesh.positions(W, out=)``), so an older tree runs the same cases.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

CESIUM = Path(__file__).resolve().parents[1] / "tests" / "data" / "CesiumMan.glb"


def synthetic_mesh(V: int, J: int, K: int, seed: int = 0):
    """A mesh shaped like an exported character's: vertices in runs that hang on neighbouring joints (exporters
    order vertices by part), K influences with Dirichlet weights, random rigid-plus-scale joint matrices."""
    from animkit.look.mesh import Mesh, Skin

    rng = np.random.default_rng(seed)
    pos = rng.normal(size=(V, 3))
    nrm = pos / np.linalg.norm(pos, axis=1, keepdims=True)
    part = (np.arange(V) * J) // V
    joints = np.clip(part[:, None] + rng.integers(-2, 3, size=(V, K)), 0, J - 1)
    weights = rng.dirichlet(np.ones(K), size=V)
    ibm = np.tile(np.eye(4), (J, 1, 1))
    ibm[:, :3, 3] = rng.normal(size=(J, 3))
    skin = Skin("s", tuple(f"j{i}" for i in range(J)), ibm, np.arange(J))
    return Mesh("m", "mesh", 0, np.zeros((0, 3), np.intp), pos, nrm, skin=skin, joints=joints, weights=weights)


def world_matrices(F: int, J: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(F * J, 3, 3)))
    W = np.zeros((F * J, 4, 4))
    W[:, :3, :3] = q * np.sign(np.linalg.det(q))[:, None, None]
    W[:, :3, 3] = rng.normal(size=(F * J, 3))
    W[:, 3, 3] = 1.0
    return W.reshape(F, J, 4, 4)


def mesh_names() -> list[str]:
    return (["CesiumMan"] if CESIUM.exists() else []) + ["Mixamo-size (synthetic)", "large (synthetic)"]


def mesh_case(name: str):
    """(mesh, world matrices W (F, N, 4, 4)) of one of :func:`mesh_names`."""
    if name == "CesiumMan":
        import animkit

        scene = animkit.load(CESIUM)
        clip = scene.clip()
        return scene.meshes[0], scene.figure.world_batch(clip.sample(np.linspace(0.0, clip.duration, 240)))
    if name == "Mixamo-size (synthetic)":
        return synthetic_mesh(15_000, 65, 4), world_matrices(240, 65)
    if name == "large (synthetic)":
        return synthetic_mesh(200_000, 65, 4), world_matrices(60, 65)
    raise KeyError(name)


def worker() -> None:
    """Per line on stdin, a mesh name: one timed ``positions(W, out=float32 buffer)`` call (built and warmed up on
    the first request); answers {"cpu": s, "wall": s} on stdout."""
    cases: dict[str, tuple] = {}
    for line in sys.stdin:
        name = line.strip()
        if name not in cases:
            mesh, W = mesh_case(name)
            out = np.empty((W.shape[0], mesh.vertex_count, 3), np.float32)
            mesh.positions(W, out=out)
            mesh.positions(W, out=out)
            cases[name] = (mesh, W, out)
        mesh, W, out = cases[name]
        c0, t0 = time.thread_time(), time.perf_counter()
        mesh.positions(W, out=out)
        t1, c1 = time.perf_counter(), time.thread_time()
        print(json.dumps({"cpu": c1 - c0, "wall": t1 - t0}), flush=True)


if __name__ == "__main__":
    worker()
