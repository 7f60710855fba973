"""Skinning throughput against this machine's memory bandwidth and the strongest plain CPU path of a three.js user.

    python -m benchmarks.bench_skin --rounds 7

Cases, interleaved in one run (A, B, C, … each round), per mesh, each one thread:
- animkit ``mesh.positions(W, out=buf)``: float32 into a reused buffer (the headline; the C kernel of
  ``animkit._native``, numba's reference loop where the extension was not built), and float64 likewise;
- animkit ``mesh.positions(W)`` and ``mesh.positions(W, dtype=np.float32)``: a new array each call (what a caller
  gets without ``out=``: the fresh pages' faults are paid in the call);
- NumPy ``np.copyto(buf, src)`` of an array the size of the float32 output: the machine's copy bandwidth, measured
  beside the kernel, so "fraction of copy bandwidth" = t(copy) / t(skin) for the same bytes written;
- Node: a plain typed-array loop (Float32Array positions, weights and joint matrices, Uint16Array joints) over
  frames and vertices into a reused Float32Array, no allocation inside it — the strongest CPU path a three.js user
  has (three.js's own ``SkinnedMesh.getVertexPosition`` allocates per vertex and is several times slower): the
  faster of two forms, any number of influences with zero weights skipped, or four influences unrolled without a
  branch (three.js's skinIndex/skinWeight layout; about 1.2× faster in V8 where K = 4), chosen once per mesh by the
  best of three warmed-up passes of each. Timed inside Node after two untimed passes (V8's tiers), one Node process
  per round so its rounds interleave with ours.
Each case's output is checked against animkit's float64 result before timing (Node's to float32 rounding).
Every call is timed twice: wall time (the harness) and the CPU time of the thread that ran it (``time.thread_time``;
Node: ``process.cpuUsage``), which leaves out the time a loaded machine's scheduler hands to other processes — a
2 ms copy mostly runs between two preemptions, a 20 ms skinning call does not, so under load the wall-time ratio
is biased against the longer call.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks.harness import interleaved, stats_of, write_results

ROOT = Path(__file__).resolve().parents[1]
NODE_SCRIPT = ROOT / "benchmarks" / "node" / "skin_loop.mjs"


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


def node_case(mesh, W: np.ndarray, folder: Path, samples: list[float], cpu: list[float]):
    """Write the mesh and joint matrices for skin_loop.mjs; return one round's callable (its wall and CPU time from
    inside Node, appended to ``samples`` and ``cpu``) and the name of the loop Node timed (the faster of its two)."""
    S = mesh.joint_matrices(W)
    V, K = mesh.joints.shape
    F, J = S.shape[:2]
    mesh.rest_positions.astype("<f4").tofile(folder / "rest.f32")
    mesh.joints.astype("<u2").tofile(folder / "joints.u16")
    mesh.weights.astype("<f4").tofile(folder / "weights.f32")
    np.ascontiguousarray(S[:, :, :3, :]).astype("<f4").tofile(folder / "S.f32")
    (folder / "shape.json").write_text(json.dumps({"V": V, "K": K, "F": F, "J": J}))

    def run(*loop: str) -> dict:
        out = subprocess.run(["node", str(NODE_SCRIPT), str(folder), "1", *loop], capture_output=True, text=True,
                             check=True, timeout=600)
        return json.loads(out.stdout)

    first = run()  # Node picks its faster loop (best of three each, warmed up); every round then runs that one
    want = mesh.positions(W)[0, :2].ravel()
    assert np.allclose(first["sample"], want, rtol=1e-4, atol=1e-4 * np.abs(want).max()), (first["sample"], want)

    def case() -> None:
        got = run(first["loop"])
        samples.append(got["seconds"][0])
        cpu.append(got["cpu_seconds"][0])

    return case, first["loop"]


NODE = "Node typed-array loop → Float32Array"
COPY = "NumPy copy of the float32 output's size"
BEST = "animkit positions → float32 buffer"


def cpu_timed(fn, bucket: list[float]):
    """``fn`` that appends the CPU time of this thread over each call to ``bucket`` (time.thread_time: the time the
    scheduler of a loaded machine gives other processes is left out; the harness times the same calls' wall time)."""

    def run() -> None:
        t0 = time.thread_time()
        fn()
        bucket.append(time.thread_time() - t0)

    return run


def one_mesh(name: str, mesh, W: np.ndarray, rounds: int, node: bool) -> list[str]:
    F, V = W.shape[0], mesh.vertex_count
    ref = mesh.positions(W)
    out32 = np.empty((F, V, 3), np.float32)
    out64 = np.empty((F, V, 3), np.float64)
    src32 = np.ones_like(out32)
    np.testing.assert_allclose(mesh.positions(W, out=out32), ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    np.testing.assert_array_equal(mesh.positions(W, out=out64), ref)
    cases = {
        BEST: lambda: mesh.positions(W, out=out32),
        "animkit positions → float64 buffer": lambda: mesh.positions(W, out=out64),
        "animkit positions, new float64 array": lambda: mesh.positions(W),
        "animkit positions, new float32 array": lambda: mesh.positions(W, dtype=np.float32),
        COPY: lambda: np.copyto(out32, src32),
    }
    cpu: dict[str, list[float]] = {k: [] for k in [*cases, NODE]}
    timed = {k: cpu_timed(fn, cpu[k]) for k, fn in cases.items()}
    node_samples: list[float] = []
    tmp = Path(tempfile.mkdtemp(prefix="bench-skin-"))
    try:
        if node:
            timed[NODE], node_loop = node_case(mesh, W, tmp, node_samples, cpu[NODE])
        st = interleaved(timed, rounds=rounds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if node:
        st[NODE] = stats_of("node", node_samples[-rounds:])
    ct = {k: stats_of(k, v[-rounds:]) for k, v in cpu.items() if v}
    VF = V * F
    lines = [f"### {name}: {V:,} vertices × {F} frames, {mesh.joints.shape[1]} influences, "
             f"{len(mesh.skin.joints)} joints", "",
             "| case | wall ms, median (min–max) | CPU ms, median (min–max) | M vertex-frames/s (wall; CPU) "
             "| GB/s written (wall) |", "|---|---|---|---|---|"]
    for k, s in st.items():
        nbytes = VF * 3 * (8 if "float64" in k else 4)
        lines.append(f"| {k} | {s.spread(1e3)} | {ct[k].spread(1e3)} | {VF / s.median / 1e6:.1f}; "
                     f"{VF / ct[k].median / 1e6:.1f} | {nbytes / s.median / 1e9:.2f} |")
    lines.append("")
    if node:
        lines.append(f"Node timed its `{node_loop}` loop (the faster of its warmed-up forms on this mesh).")
        lines.append("")
    for label, t in (("wall", st), ("CPU", ct)):
        copy, best = t[COPY], t[BEST]
        frac = copy.median / best.median
        parts = [f"- {label} time: float32 into a buffer at **{frac:.0%} of the copy bandwidth** (t(copy) / t(skin), "
                 f"the same bytes written; goal ≥ 50%: {'met' if frac >= 0.5 else 'not met'})"]
        if node:
            x = t[NODE].median / best.median
            parts.append(f"**{x:.1f}× Node's typed-array loop** (goal ≥ 10×: {'met' if x >= 10 else 'not met'})")
        parts.append(f"{t['animkit positions, new float64 array'].median / best.median:.2f}× a new float64 array "
                     "per call")
        lines.append("; ".join(parts))
    return lines + [""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results_skin.md")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import animkit
    from animkit import jit

    jit.ALWAYS = True
    node = shutil.which("node") is not None
    native = getattr(jit.native_kernels(), "skin_frames", None) is not None
    kernel = ("the C kernel (animkit._native.skin_frames; its AVX2 clone where the CPU has AVX2)" if native else
              "numba's reference loop (the C extension is not built)")
    load = os.getloadavg()
    lines = ["# Skinning at memory speed", "", f"Command: `python -m benchmarks.bench_skin --rounds {args.rounds}`",
             "", f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average at the start "
             f"{load[0]:.1f} on {os.cpu_count()} cores: a shared machine, other jobs running (the copy row measures "
             f"the same machine at the same time, interleaved). One thread each; animkit ran {kernel}.", "",
             __doc__.split("\n\n", 2)[1], ""]
    data = ROOT / "tests" / "data" / "CesiumMan.glb"
    meshes = []
    if data.exists():
        scene = animkit.load(data)
        clip = scene.clip()
        W = scene.figure.world_batch(clip.sample(np.linspace(0.0, clip.duration, 240)))
        meshes.append(("CesiumMan", scene.meshes[0], W))
    meshes.append(("Mixamo-size (synthetic)", synthetic_mesh(15_000, 65, 4), world_matrices(240, 65)))
    meshes.append(("large (synthetic)", synthetic_mesh(200_000, 65, 4), world_matrices(60, 65)))
    for name, mesh, W in meshes:
        if mesh.skin.joint_index.max() >= W.shape[1]:
            raise SystemExit(f"{name}: world matrices do not cover the skin")
        lines += one_mesh(name, mesh, W, args.rounds, node)
        print(f"{name}: done", flush=True)
    lines.append(f"Load average at the end: {os.getloadavg()[0]:.1f}.")
    text = "\n".join(lines) + "\n"
    write_results(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
