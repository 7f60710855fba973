"""Benchmark: an FBX character, Mixamo-size (65 joints, ~16k vertices, 500 frames): load + sample every frame +
skin every vertex in every frame.

    python benchmarks/bench_fbx.py --blender-python /path/to/venv-with-bpy/bin/python [--rounds 5]

The file is made first (tests/data/fbx/make_fbx.py big-source / big-blender: animkit writes the glTF, Blender's FBX
exporter the FBX) unless ``--fbx FILE`` is given. Three cases, interleaved (A, B, C, A, B, C, …), each timed from
the file on disk to the skinned vertices of every frame in memory, its process already started:

* animkit: ``animkit.load`` (ufbx in its child process, start included) → ``clip.sample_frames()`` →
  ``figure.world_batch`` → ``mesh.positions`` (the compiled skinning kernel);
* three.js 0.170.0 under Node: ``FBXLoader.parse`` → ``AnimationMixer.setTime`` per frame → CPU skinning with
  ``SkinnedMesh.getVertexPosition`` per vertex (timed inside Node: tests/node/threejs_fbx_oracle.mjs ``bench``);
* Blender (bpy) 4.2: ``import_scene.fbx`` → ``frame_set`` per frame → the evaluated mesh's vertex coordinates
  (``foreach_get``) per frame (timed inside the bpy process, after ``import bpy``).

One core for BLAS/OpenMP; medians of ≥ 5 rounds with the spread (benchmarks/harness.py). Results:
benchmarks/results_fbx.md.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import animkit  # noqa: E402
from benchmarks.harness import arguments, markdown_table, ratio, stats_of, write_results  # noqa: E402

MAKE = ROOT / "tests" / "data" / "fbx" / "make_fbx.py"
NODE_DIR = ROOT / "tests" / "node"
BLENDER_CASE = r"""
import sys, time, json
import bpy
import numpy as np
path = sys.argv[-1]
t0 = time.perf_counter()
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_scene.fbx(filepath=path)
scene = bpy.context.scene
obj = next(o for o in scene.objects if o.type == "MESH")
arm = next(o for o in scene.objects if o.type == "ARMATURE")
action = arm.animation_data.action
start, end = (int(round(v)) for v in action.frame_range)
n = len(obj.data.vertices)
out = np.empty(n * 3, dtype=np.float32)
frames = 0
for f in range(start, end + 1):
    scene.frame_set(f)
    dg = bpy.context.evaluated_depsgraph_get()
    mesh = obj.evaluated_get(dg).data
    mesh.vertices.foreach_get("co", out)
    frames += 1
print(json.dumps({"seconds": time.perf_counter() - t0, "frames": frames, "vertices": n}), flush=True)
import os
os._exit(0)  # bpy's teardown sometimes crashes after the work is done
"""


def animkit_case(path: Path) -> dict:
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scene = animkit.load(path)
    clip = scene.clip()
    poses = clip.sample_frames()
    W = scene.figure.world_batch(poses)
    mesh = next(m for m in scene.meshes if m.skinned)
    X = mesh.positions(W)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "frames": int(X.shape[0]), "vertices": int(X.shape[1])}


def three_case(path: Path, frames: int, fps: float) -> dict:
    times = json.dumps([k / fps for k in range(frames)])
    out = subprocess.run(["node", str(NODE_DIR / "threejs_fbx_oracle.mjs"), "bench", str(path), times],
                         capture_output=True, text=True, check=True, cwd=NODE_DIR, timeout=1200)
    r = json.loads(out.stdout)
    clip = next(iter(r["clips"].values()))
    return {"seconds": r["seconds"], "frames": frames, "vertices": clip["vertex_frames"] // max(frames, 1)}


def blender_case(python: str, path: Path, script: Path) -> dict:
    out = subprocess.run([python, str(script), str(path)], capture_output=True, text=True, check=True,
                         timeout=1200, cwd=tempfile.gettempdir())
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = arguments(__doc__, out=Path(__file__).with_name("results_fbx.md"))
    ap.add_argument("--fbx", type=Path, default=None, help="an FBX file (default: make the Mixamo-size one)")
    ap.add_argument("--blender-python", default=None, help="a Python with bpy (Blender as a module) for the peer")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="animkit-bench-fbx-"))
    path = args.fbx
    if path is None:
        if not args.blender_python:
            raise SystemExit("making the character needs --blender-python (or give --fbx FILE)")
        glb = work / "big.glb"
        path = work / "big.fbx"
        subprocess.run([sys.executable, str(MAKE), "big-source", str(glb)], check=True, env={**os.environ,
                       "PYTHONPATH": str(ROOT)}, capture_output=True)
        subprocess.run([args.blender_python, str(MAKE), "big-blender", str(glb), str(path)], check=True,
                       capture_output=True, cwd=work)
    script = work / "blender_case.py"
    script.write_text(BLENDER_CASE)
    first = animkit_case(path)  # warm-up (numba's cache, imports), and the clip's frame count for the peers
    scene = animkit.load(path)
    clip = scene.clip()
    frames, fps = first["frames"], clip.fps
    cases = {"animkit": lambda: animkit_case(path), "three.js FBXLoader + AnimationMixer":
             lambda: three_case(path, frames, fps)}
    if args.blender_python:
        cases["Blender import_scene.fbx + frame_set"] = lambda: blender_case(args.blender_python, path, script)
    for fn in list(cases.values())[1:]:
        fn()  # warm-up of the peers (disk cache)
    samples: dict[str, list[float]] = {k: [] for k in cases}
    info: dict[str, dict] = {}
    for _ in range(args.rounds):
        for name, fn in cases.items():
            r = fn()
            samples[name].append(r["seconds"])
            info[name] = r
    stats = {k: stats_of(k, v) for k, v in samples.items()}
    base = "animkit"
    lines = ["# FBX: load + sample every frame + skin (benchmarks/bench_fbx.py)", "",
             f"`python benchmarks/bench_fbx.py --rounds {args.rounds}"
             + (" --blender-python ...`" if args.blender_python else "`"), "",
             f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores shared with other "
             "jobs (loaded while this ran); one BLAS/OpenMP thread. File: "
             f"{len(scene.figure.node_names) - 1} nodes, {info[base]['vertices']} skinned vertices (three.js keeps "
             "one per triangle corner: see the second table), "
             f"{frames} frames at {fps:g} fps, made by tests/data/fbx/make_fbx.py (Blender's FBX exporter).", "",
             markdown_table(stats, unit="s", scale=1.0, baseline=base), "",
             "| case | frames | vertices skinned per frame |", "|---|---|---|"]
    lines += [f"| {k} | {v['frames']} | {v['vertices']} |" for k, v in info.items()]
    lines += ["", "Speed-up of animkit over each peer (ratio of medians): "
              + ", ".join(f"{k}: {ratio(stats[k], stats[base]):.2f}×" for k in cases if k != base), ""]
    text = "\n".join(lines)
    print(text)
    write_results(args.out, text)


if __name__ == "__main__":
    main()
