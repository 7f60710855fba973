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

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks.harness import arguments, interleaved, stats_of, write_results
from benchmarks.skin_meshes import mesh_case, mesh_names

ROOT = Path(__file__).resolve().parents[1]
NODE_SCRIPT = ROOT / "benchmarks" / "node" / "skin_loop.mjs"
WORKER = ROOT / "benchmarks" / "skin_meshes.py"


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


def against(tree: Path, rounds: int) -> list[str]:
    """The same call, ``positions(W, out=float32 buffer)``, by this tree's animkit and by ``tree``'s (its C extension
    built in place), each in its own long-lived worker process (benchmarks/skin_meshes.py), interleaved A, B, B, A:
    the cost per vertex-frame in thread CPU time (the scheduler of a loaded machine left out) and wall time."""
    env = dict(os.environ)
    rows = []
    for name in mesh_names():
        procs = {}
        for label, root in (("this tree", ROOT), ("against", tree)):
            env["PYTHONPATH"] = str(root)
            procs[label] = subprocess.Popen([sys.executable, str(WORKER)], cwd=root, env=env, stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, text=True)
        cpu: dict[str, list[float]] = {k: [] for k in procs}
        wall: dict[str, list[float]] = {k: [] for k in procs}
        try:
            for r in range(rounds + 1):  # the first round builds, warms up and is dropped; then A, B, B, A, …
                for label, proc in (list(procs.items()) if r % 2 else list(procs.items())[::-1]):
                    assert proc.stdin is not None and proc.stdout is not None
                    proc.stdin.write(name + "\n")
                    proc.stdin.flush()
                    got = json.loads(proc.stdout.readline())
                    if r:
                        cpu[label].append(got["cpu"])
                        wall[label].append(got["wall"])
        finally:
            for proc in procs.values():
                proc.communicate("")
        mesh, W = mesh_case(name)
        vf = mesh.vertex_count * W.shape[0] / 1e9
        c = {k: stats_of(k, [x / vf for x in v]) for k, v in cpu.items()}
        w = {k: stats_of(k, [x / vf for x in v]) for k, v in wall.items()}
        rows.append(f"| {name} | {c['this tree'].spread()} | {c['against'].spread()} | "
                    f"{c['this tree'].median / c['against'].median:.2f} | {w['this tree'].spread()} | "
                    f"{w['against'].spread()} | {w['this tree'].median / w['against'].median:.2f} |")
        print(rows[-1], flush=True)
    return [f"### Against {tree}: float32 into a buffer, ns per vertex-frame, {rounds} interleaved rounds", "",
            "| mesh | this tree, CPU | against, CPU | ratio (CPU) | this tree, wall | against, wall | ratio (wall) |",
            "|---|---|---|---|---|---|---|", *rows, ""]


def main() -> None:
    ap = arguments(__doc__, rounds=7, against="optional", out=ROOT / "benchmarks" / "results_skin.md")
    ap.add_argument("--against-only", action="store_true", help="with --against: only that comparison")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    from animkit import jit

    jit.ALWAYS = True
    node = shutil.which("node") is not None
    native = getattr(jit.native_kernels(), "skin_frames", None) is not None
    kernel = ("the C kernel (animkit._native.skin_frames; its AVX2 clone where the CPU has AVX2)" if native else
              "numba's reference loop (the C extension is not built)")
    load = os.getloadavg()
    command = f"python -m benchmarks.bench_skin --rounds {args.rounds}" + (
        f" --against {args.against}" + (" --against-only" if args.against_only else "") if args.against else "")
    lines = ["# Skinning at memory speed", "", f"Command: `{command}`",
             "", f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average at the start "
             f"{load[0]:.1f} on {os.cpu_count()} cores: a shared machine, other jobs running (the copy row measures "
             f"the same machine at the same time, interleaved). One thread each; animkit ran {kernel}.", "",
             __doc__.split("\n\n", 2)[1], ""]
    if not (args.against and args.against_only):
        for name in mesh_names():
            mesh, W = mesh_case(name)
            if mesh.skin.joint_index.max() >= W.shape[1]:
                raise SystemExit(f"{name}: world matrices do not cover the skin")
            lines += one_mesh(name, mesh, W, args.rounds, node)
            print(f"{name}: done", flush=True)
    if args.against:
        lines += against(args.against.resolve(), args.rounds)
    lines.append(f"Load average at the end: {os.getloadavg()[0]:.1f}.")
    text = "\n".join(lines) + "\n"
    write_results(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
