"""Benchmark: glTF characters — load + sample every frame of every animation + skin, and skinning throughput.

    flock /tmp/animkit-bench.lock python benchmarks/bench_gltf.py [--rounds 7] [--frames 240]

1. Load + sample + skin on the three sample characters (tests/data): animkit against pygltflib + NumPy written
   the obvious way (accessors by np.frombuffer, per channel np.interp / a slerp per frame, world matrices by
   walking parents, skinning with einsum), checked against animkit's vertices. trimesh's own glTF load (which
   reads no animation) is timed for the load part only.
2. Skinning throughput (vertex-frames per second) on CesiumMan: ``mesh.positions(W)`` against three.js's CPU
   skinning (``SkinnedMesh.getVertexPosition`` in a loop under Node, timed inside Node) on the same mesh and frames.

One core: BLAS/OpenMP threads are pinned to 1 before NumPy loads. Interleaved rounds, medians, spread shown
(benchmarks/harness.py).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import animkit  # noqa: E402
from benchmarks.harness import arguments, interleaved, markdown_table, ratio, stats_of  # noqa: E402
from tests.gltf_builder import gltf_text_from_glb  # noqa: E402

DATA = ROOT / "tests" / "data"
SAMPLES = ["CesiumMan.glb", "RiggedFigure.glb", "RiggedSimple.glb"]
NODE_DIR = ROOT / "tests" / "node"


def animkit_case(path: Path) -> np.ndarray:
    scene = animkit.load(path)
    out = None
    for clip in scene.clips.values():
        W = scene.figure.world_batch(clip.sample_frames())
        for mesh in scene.meshes:
            out = mesh.positions(W)
    assert out is not None
    return out


def _quat_matrices(q: np.ndarray) -> np.ndarray:
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
                     np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
                     np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], -2)


def pygltflib_case(path: Path, times_of: dict[int, np.ndarray]) -> np.ndarray:
    """The obvious pygltflib + NumPy pipeline (LINEAR samplers, which is what the samples hold)."""
    import pygltflib

    g = pygltflib.GLTF2().load(str(path))
    blob = g.binary_blob()
    sizes = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}
    dts = {5126: "<f4", 5123: "<u2", 5121: "u1", 5125: "<u4"}

    def read(i: int) -> np.ndarray:
        a = g.accessors[i]
        v = g.bufferViews[a.bufferView]
        n = sizes[a.type]
        dt = np.dtype(dts[a.componentType])
        start = (v.byteOffset or 0) + (a.byteOffset or 0)
        if v.byteStride and v.byteStride != n * dt.itemsize:
            raw = np.lib.stride_tricks.as_strided(np.frombuffer(blob, dt, offset=start), (a.count, n),
                                                  (v.byteStride, dt.itemsize))
            return raw.astype(float)
        return np.frombuffer(blob, dt, a.count * n, start).reshape(a.count, n).astype(float)

    nodes = g.nodes
    parent = {c: i for i, n in enumerate(nodes) for c in (n.children or [])}
    out = None
    for a_i, anim in enumerate(g.animations):
        t = times_of[a_i]
        F = len(t)
        T = np.array([n.translation or [0, 0, 0] for n in nodes], dtype=float)[None].repeat(F, 0)
        Q = np.array([n.rotation or [0, 0, 0, 1] for n in nodes], dtype=float)[None].repeat(F, 0)
        S = np.array([n.scale or [1, 1, 1] for n in nodes], dtype=float)[None].repeat(F, 0)
        for ch in anim.channels:
            smp = anim.samplers[ch.sampler]
            kt = read(smp.input)[:, 0]
            kv = read(smp.output)
            node, p = ch.target.node, ch.target.path
            if p == "rotation":
                for f in range(F):  # slerp, one frame at a time
                    k = int(np.clip(np.searchsorted(kt, t[f], side="right") - 1, 0, len(kt) - 2))
                    u = float(np.clip((t[f] - kt[k]) / (kt[k + 1] - kt[k]), 0, 1))
                    q0, q1 = kv[k], kv[k + 1]
                    d = q0 @ q1
                    if d < 0:
                        q1, d = -q1, -d
                    if d > 0.9995:
                        q = q0 + u * (q1 - q0)
                    else:
                        th = np.arccos(d)
                        q = (np.sin((1 - u) * th) * q0 + np.sin(u * th) * q1) / np.sin(th)
                    Q[f, node] = q / np.linalg.norm(q)
            else:
                target = T if p == "translation" else S
                for c in range(3):
                    target[:, node, c] = np.interp(t, kt, kv[:, c])
        local = np.zeros((F, len(nodes), 4, 4))
        local[..., :3, :3] = _quat_matrices(Q) * S[..., None, :]
        local[..., :3, 3] = T
        local[..., 3, 3] = 1
        for i, n in enumerate(nodes):
            if n.matrix:
                local[:, i] = np.array(n.matrix).reshape(4, 4).T
        world = np.empty_like(local)
        for i in range(len(nodes)):  # walk up the parents, multiply on the way
            M = local[:, i]
            j = i
            while j in parent:
                j = parent[j]
                M = local[:, j] @ M
            world[:, i] = M
        for n in nodes:
            if n.skin is None:
                continue
            skin = g.skins[n.skin]
            ibm = read(skin.inverseBindMatrices).reshape(-1, 4, 4).transpose(0, 2, 1)
            Sj = world[:, skin.joints] @ ibm
            prim = g.meshes[n.mesh].primitives[0]
            P = read(prim.attributes.POSITION)
            J = read(prim.attributes.JOINTS_0).astype(int)
            Wt = read(prim.attributes.WEIGHTS_0)
            Wt /= Wt.sum(axis=1, keepdims=True)
            blend = np.einsum("vk,fvkij->fvij", Wt, Sj[:, J])
            out = np.einsum("fvij,vj->fvi", blend[..., :3, :3], P) + blend[..., :3, 3]
    assert out is not None
    return out


def trimesh_load(path: Path) -> None:
    import trimesh

    trimesh.load(str(path))


def three_skinning(text_path: Path, times: np.ndarray) -> tuple[float, int]:
    out = subprocess.run(["node", str(NODE_DIR / "threejs_oracle.mjs"), "bench", str(text_path),
                          json.dumps([float(t) for t in times])], capture_output=True, text=True, check=True,
                         cwd=NODE_DIR, timeout=600)
    r = next(iter(json.loads(out.stdout).values()))
    return float(r["seconds"]), int(r["vertex_frames"])


def main() -> None:
    ap = arguments(__doc__, rounds=7, out=ROOT / "benchmarks" / "results_gltf.md")
    ap.add_argument("--frames", type=int, default=240, help="frames for the skinning throughput (default 240)")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    lines = ["# glTF: load + sample + skin, and skinning throughput", "",
             f"Command: `flock /tmp/animkit-bench.lock python benchmarks/bench_gltf.py --rounds {args.rounds} "
             f"--frames {args.frames}`", "",
             "One core (OMP/OpenBLAS/MKL threads = 1). The machine (2 cores) is shared with other jobs while this "
             "runs: absolute numbers are lower bounds; ratios are medians of one interleaved run.", ""]
    animkit_case(DATA / SAMPLES[0])  # numba's compile and caches, once, outside the timing
    lines += ["## Load + sample every frame of every animation + skin", "",
              "pygltflib + NumPy: accessors by `np.frombuffer`, `np.interp` per channel, a slerp per frame, world "
              "matrices by walking parents, skinning by `einsum`; its vertices are checked against animkit's. "
              "trimesh reads no animation: its row is the load alone (animkit's `load` alone beside it). trimesh "
              "opens images with `PIL.Image.open`, which decodes no pixels until asked; animkit's load decodes the "
              "base-colour texture into an array (CesiumMan: one 1024×1024 image) and builds the clips.", ""]
    for name in SAMPLES:
        path = DATA / name
        scene = animkit.load(path)
        times_of = {a: c.frame_times() for a, c in enumerate(scene.clips.values())}
        ours = animkit_case(path)
        theirs = pygltflib_case(path, times_of)
        err = float(np.abs(ours - theirs).max())
        assert err < 1e-4, f"{name}: pygltflib pipeline differs from animkit by {err}"
        cases = {"animkit: load + sample + skin": lambda p=path: animkit_case(p),
                 "pygltflib + NumPy: load + sample + skin": lambda p=path, t=times_of: pygltflib_case(p, t),
                 "animkit: load only": lambda p=path: animkit.load(p),
                 "trimesh: load only": lambda p=path: trimesh_load(p)}
        st = interleaved(cases, rounds=args.rounds)
        F = sum(len(t) for t in times_of.values())
        lines += [f"### {name} ({F} frames, {scene.meshes[0].vertex_count} vertices; max |Δ| vs pygltflib "
                  f"{err:.1e})", "", markdown_table(st, baseline="pygltflib + NumPy: load + sample + skin"), "",
                  f"load only: animkit is {ratio(st['trimesh: load only'], st['animkit: load only']):.2f}× trimesh.",
                  ""]
        print(f"{name}: done", flush=True)

    # --- skinning throughput ---------------------------------------------------------------------------------
    path = DATA / "CesiumMan.glb"
    scene = animkit.load(path)
    clip = scene.clip()
    times = np.linspace(0.0, clip.duration, args.frames)
    W = scene.figure.world_batch(clip.sample(times))
    mesh = scene.meshes[0]
    mesh.positions(W)
    VF = mesh.vertex_count * len(times)
    from animkit.look import skin as lbs

    S = mesh.joint_matrices(W)
    X = lbs.influence_table(mesh.rest_positions, mesh.joints, mesh.weights, len(mesh.skin.joints), True)
    cases = {"animkit mesh.positions(W)": lambda: mesh.positions(W),
             "animkit NumPy fallback (BLAS product)": lambda: lbs.positions_from_table(X, mesh.joint_matrices(W)),
             "animkit mesh.normals(W)": lambda: mesh.normals(W)}
    assert np.allclose(lbs.positions_from_table(X, S), mesh.positions(W), atol=1e-12)
    have_three = shutil.which("node") is not None and (NODE_DIR / "node_modules" / "three").is_dir()
    three_samples: list[float] = []
    if have_three:
        tmp = Path(tempfile.mkdtemp()) / "cesium.gltf"
        tmp.write_text(gltf_text_from_glb(path.read_bytes()))
        three_vf = three_skinning(tmp, times)[1]
        assert three_vf == VF, (three_vf, VF)

        def three_case() -> None:
            three_samples.append(three_skinning(tmp, times)[0])

        cases["three.js getVertexPosition loop (Node)"] = three_case
    st = interleaved(cases, rounds=args.rounds)
    lines += ["## Skinning throughput (CesiumMan, " f"{mesh.vertex_count} vertices × {len(times)} frames)", "",
              "animkit: `mesh.positions(W)` for W (F, N, 4, 4) precomputed (the compiled kernel; its NumPy "
              "fallback, one BLAS product over all frames, in the next row). "
              "three.js: `SkinnedMesh.getVertexPosition` for every vertex, then the mesh's `matrixWorld`, per frame "
              "after `mixer.setTime` + `updateMatrixWorld` (timed inside Node, so Node's start-up is not counted; the "
              "row's wall time includes it and is not used).", ""]
    rows = ["| case | median (ms) (min–max) | million vertex-frames / s |", "|---|---|---|"]
    for k in ("animkit mesh.positions(W)", "animkit NumPy fallback (BLAS product)", "animkit mesh.normals(W)"):
        s = st[k]
        rows.append(f"| {k} | {s.spread(1e3)} | {VF / s.median / 1e6:.1f} |")
    if have_three:
        s3 = stats_of("three", three_samples[-args.rounds:])
        rows.append(f"| three.js getVertexPosition loop | {s3.spread(1e3)} | {VF / s3.median / 1e6:.1f} |")
        rows.append("")
        rows.append(f"animkit positions are {s3.median / st['animkit mesh.positions(W)'].median:.1f}× three.js's CPU "
                    "skinning (medians of one interleaved run).")
    lines += rows + [""]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s)")
