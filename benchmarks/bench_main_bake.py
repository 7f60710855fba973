"""The main job's critical path alone: the whole-body panel's bake, CPU time in a warm process, against another tree.

    python -m benchmarks.bench_main_bake --rounds 7 --against /tmp/base14

Each round runs, in a fresh process per tree (interleaved A, B, A, B), ``animkit.motion.reach.compare(scene,
chains=["whole-body"])`` on ``scenes/humanoid.toml`` once to warm up, then ``--repeats`` times timed with
``time.process_time`` (the best of them: the least disturbed by the machine's other work); medians of the rounds
with min–max. Also whether the two trees' baked poses are bit-identical (every float array of the result).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import arguments

ROOT = Path(__file__).resolve().parents[1]

DRIVER = r"""
import sys, time, numpy as np, animkit, animkit.motion.reach as reach
scene = animkit.load("scenes/humanoid.toml")
res = reach.compare(scene, chains=["whole-body"])
took = []
for _ in range(int(sys.argv[1])):
    t0 = time.process_time()
    reach.compare(scene, chains=["whole-body"])
    took.append(time.process_time() - t0)
best = min(took)
np.savez(sys.argv[2], *[p.poses for p in res.panels])
print(best)
"""


def _run(tree: Path, repeats: int, npz: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", DRIVER, str(repeats), npz], cwd=tree, env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out.split()[-1])


def _identical(a: str, b: str) -> bool:
    import numpy as np

    x, y = np.load(a), np.load(b)
    return x.files == y.files and all(np.array_equal(x[k], y[k]) for k in x.files)


def main() -> None:
    ap = arguments(__doc__, against="required")
    ap.add_argument("--repeats", type=int, default=3, help="timed bakes per process (the best kept)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="animkit-bake-")
    times: dict[str, list[float]] = {"this tree": [], str(args.against): []}
    for _ in range(max(args.rounds, 5)):
        for name, tree in (("this tree", ROOT), (str(args.against), args.against)):
            times[name].append(_run(tree, args.repeats, f"{tmp}/{'a' if tree == ROOT else 'b'}.npz"))
    a, b = times["this tree"], times[str(args.against)]
    summary = {k: {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v)} for k, v in times.items()}
    summary["ratio_before_over_after"] = statistics.median(b) / statistics.median(a)  # type: ignore[assignment]
    summary["poses_bit_identical"] = _identical(f"{tmp}/a.npz", f"{tmp}/b.npz")  # type: ignore[assignment]
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
