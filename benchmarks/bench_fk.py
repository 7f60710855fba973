"""World transforms of the humanoid over 10,000 poses: ``world_batch`` (vectorised) vs ``world`` (traversal).

    python -m benchmarks.bench_fk [--poses 10000]
    python -m benchmarks.bench_fk --large 1000,10000,100000   # world_positions at many frames, interleaved

Reports joint transforms per second (poses × nodes / seconds), best of several runs, on one core
(set OMP_NUM_THREADS=1 etc. before NumPy loads: done below). Goal: ≥ 2 million/s for world_batch.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import animkit  # noqa: E402

SCENES = Path(__file__).resolve().parent.parent / "scenes"


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def large(frame_counts: list[int], rounds: int) -> None:
    """world_positions at F frames: the whole-array kernel (one float64 output, as before chunking), the default
    (chunks of fk.CHUNK_FRAMES frames, float64), float32 output — each allocating a fresh output (page faults on
    first touch included) — and both written into a reused ``out=`` buffer (the steady state of a caller who keeps
    one); interleaved rounds, medians with min-max."""
    from animkit.model import fk
    from benchmarks.harness import interleaved

    fig = animkit.load(SCENES / "humanoid.toml").figure
    n_nodes = len(fig.node_names)
    rng = np.random.default_rng(0)
    # load the compiled kernel once (a batch past fk.FK_JIT_MIN): from then on every size runs it, as in any process
    # that has done one large FK; without this the small sizes would time NumPy's path
    fig.world_positions(rng.uniform(-1.0, 1.0, (int(fk.FK_JIT_MIN) // n_nodes + 1, fig.dof_count)))
    print(f"| frames | case | median ms (min-max), {rounds} rounds | M joint transforms/s (median) |")
    print("|---|---|---|---|")
    for F in frame_counts:
        poses = rng.uniform(-1.0, 1.0, (F, fig.dof_count))
        c = fig.compiled
        buf64 = np.zeros((F, n_nodes, 3))  # the caller's buffers, touched once: steady state when reused
        buf32 = np.zeros((F, n_nodes, 3), dtype=np.float32)
        cases = {"whole array, float64": lambda c=c, poses=poses: fk.fk_compiled(c, poses, 3),
                 "chunked, float64 (default)": lambda poses=poses: fig.world_positions(poses),
                 "chunked, float32": lambda poses=poses: fig.world_positions(poses, dtype=np.float32),
                 "reused out=, float64": lambda poses=poses, b=buf64: fig.world_positions(poses, out=b),
                 "reused out=, float32": lambda poses=poses, b=buf32: fig.world_positions(poses, dtype=np.float32,
                                                                                       out=b)}
        st = interleaved(cases, rounds=rounds, warmup=1)
        for name, x in st.items():
            print(f"| {F:,} | {name} | {x.spread(1e3)} | {F * n_nodes / x.median / 1e6:.1f} |", flush=True)


def main() -> None:
    from benchmarks.harness import arguments

    ap = arguments(__doc__, rounds=7)
    ap.add_argument("--poses", type=int, default=10_000)
    ap.add_argument("--large", default=None, help="comma-separated frame counts: world_positions, interleaved")
    args = ap.parse_args()
    if args.large:
        large([int(v) for v in args.large.split(",")], args.rounds)
        return
    fig = animkit.load(SCENES / "humanoid.toml").figure
    rng = np.random.default_rng(0)
    lim = fig.dof_limits()
    lo = np.where(np.isfinite(lim[:, 0]), lim[:, 0], -1.0)
    hi = np.where(np.isfinite(lim[:, 1]), lim[:, 1], 1.0)
    poses = rng.uniform(lo, hi, (args.poses, fig.dof_count))
    n_nodes = len(fig.node_names)
    fig.world_batch(poses[:10])  # compile once
    t_batch = best_of(lambda: fig.world_batch(poses), 5)
    t_pos = best_of(lambda: fig.world_positions(poses), 5)
    n_trav = min(args.poses, 1000)
    t_trav = best_of(lambda: [fig.world(p) for p in poses[:n_trav]], 2) * args.poses / n_trav
    rate = lambda t: args.poses * n_nodes / t  # noqa: E731
    print(f"humanoid: {n_nodes} nodes, {fig.dof_count} DOFs, {args.poses} poses (one core)")
    print(f"{'method':<34s}{'time (ms)':>12s}{'joint transforms/s':>22s}{'vs world':>10s}")
    for name, t in (("world (traversal, per pose)", t_trav), ("world_batch (F, N, 4, 4)", t_batch),
                    ("world_positions (F, N, 3)", t_pos)):
        print(f"{name:<34s}{t * 1e3:>12.1f}{rate(t):>22,.0f}{t_trav / t:>9.0f}x")
    goal = 2e6
    print(f"goal world_batch >= {goal:,.0f}/s: {'met' if rate(t_batch) >= goal else 'NOT met'}")


if __name__ == "__main__":
    main()
