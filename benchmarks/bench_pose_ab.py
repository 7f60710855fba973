"""pose_from_effectors' time a pose, this checkout against another (an older commit's tree), interleaved A, B, A, B.

    python benchmarks/bench_pose_ab.py --against /tmp/oldtree --rounds 5     # (git archive OLD animkit | tar -x)

Each round runs, in a fresh process per tree, 16 poses (4 held-out CMU trials of subjects 02 and 08, two frames each,
hands+feet+head and hands+head, root given), each solved once to warm up and once timed; a round's figure is the
median over its poses; printed: the median over rounds (min–max) per tree, and the load average.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from harness import arguments

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT.parent.parent / "shared/data/bvh/library"


def poses() -> None:
    import warnings

    from animkit.ik import PosePrior, pose_from_effectors
    from animkit.io import load

    warnings.simplefilter("ignore")
    files = sorted(f for f in Path(os.environ["BENCH_LIB"]).glob("cmu_*.bvh") if f.name[4:6] in ("02", "08"))[:4]
    prior = PosePrior.load()
    cases = []
    for f in files:
        fig = load(f).figure
        P = next(iter(load(f).clips.values())).sample_frames()
        names = fig.compiled.node_names
        root = names.index(fig.root_arc.child.name)
        for i in (len(P) // 3, 2 * len(P) // 3):
            W = fig.world_batch(P[i][None])[0]
            for effs in (("hand_l", "hand_r", "foot_l", "foot_r", "head"), ("hand_l", "hand_r", "head")):
                t = {e: W[names.index(fig.rig.effectors[e]), :3, 3].copy() for e in effs}
                cases.append((fig, t, W[root]))
    times = []
    for fig, t, r in cases:
        pose_from_effectors(fig, t, root=r, prior=prior)
        t0 = time.perf_counter()
        pose_from_effectors(fig, t, root=r, prior=prior)
        times.append(time.perf_counter() - t0)
    print(json.dumps(times))


def main() -> None:
    ap = arguments(__doc__, against="required")
    ap.add_argument("--library", type=Path, default=LIB)
    args = ap.parse_args()
    runs: dict[str, list[float]] = {"this": [], "against": []}
    for _ in range(args.rounds):
        for name, path in (("this", ROOT), ("against", args.against)):
            env = dict(os.environ, PYTHONPATH=str(path), OPENBLAS_NUM_THREADS="1", BENCH_LIB=str(args.library))
            out = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, env=env,
                                 cwd="/tmp", check=True)
            runs[name].append(1e3 * statistics.median(json.loads(out.stdout.strip().splitlines()[-1])))
    for k, v in runs.items():
        print(f"{k}: {statistics.median(v):.1f} ms ({min(v):.1f}–{max(v):.1f}) a pose, median of {len(v)} rounds")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--child"]:
        poses()
    else:
        main()
