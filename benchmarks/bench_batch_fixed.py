"""The fixed cost of one ``animkit batch`` command, this checkout against an earlier commit, interleaved.

    flock /tmp/animkit-bench.lock python -m benchmarks.bench_batch_fixed --against 5a93ac2   # from the repo root

A command on a library of two short files (one task per worker with 2 workers) is almost all fixed cost: the
interpreter, the driver's imports, the LocalCluster's start, the workers' imports and first-task loads, closing.
Cases: ``convert`` then ``render`` (as in bench_batch) with 1 and 2 workers, run by this checkout and by
``--against`` (exported with ``git archive`` into a temporary folder), in fresh processes, interleaved
(harness.interleaved). Writes ``benchmarks/results_batch_fixed.md`` (``--out``; earlier runs kept below).
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .harness import arguments, interleaved, markdown_table, ratio, write_results

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = arguments(__doc__, out=ROOT / "benchmarks" / "results_batch_fixed.md")
    ap.add_argument("--against", required=True, help="the earlier commit (e.g. 5a93ac2: before the start-up cuts)")
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args()

    load0 = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="animkit-bench-fixed-"))
    try:
        old = work / "old"
        old.mkdir()
        archive = subprocess.run(["git", "archive", args.against], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        lib = work / "lib"
        lib.mkdir()
        for name in ("a", "b"):
            shutil.copy(ROOT / "tests" / "data" / "cmu_09_01_run.bvh", lib / f"{name}.bvh")
        counter = [0]
        # as bench_batch: without PYTHONDONTWRITEBYTECODE (set in this shared workplace), so that both trees run from
        # their .pyc files (the warm-up round writes the exported tree's), as an installed package does
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

        def case(root: Path, workers: int):
            def run() -> None:
                counter[0] += 1
                out = work / f"out{counter[0]}"
                for cmd in (["convert", str(lib), "-o", str(out / "convert"), "--format", "bvh"],
                            ["render", str(lib), "-o", str(out / "render"), "--size", "160x120", "--fps", "10"]):
                    subprocess.run([sys.executable, "-m", "animkit", "batch", *cmd, "--workers", str(workers), "-q"],
                                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=root,
                                   env=env)
                shutil.rmtree(out)
            return run

        cases = {f"{args.against}, 1 worker": case(old, 1), "this checkout, 1 worker": case(ROOT, 1),
                 f"{args.against}, 2 workers": case(old, 2), "this checkout, 2 workers": case(ROOT, 2)}
        t0 = time.perf_counter()
        stats = interleaved(cases, rounds=args.rounds, warmup=args.warmup)
        total = time.perf_counter() - t0
        load = os.getloadavg()
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()
        r1 = ratio(stats[f"{args.against}, 1 worker"], stats["this checkout, 1 worker"])
        r2 = ratio(stats[f"{args.against}, 2 workers"], stats["this checkout, 2 workers"])
        text = f"""# Batch: the fixed cost of a command, {head} against {args.against}

Command (from the repository root; {args.rounds} interleaved rounds after {args.warmup} warm-up round(s),
{total:.0f} s in all, ending {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}):

    flock /tmp/animkit-bench.lock python -m benchmarks.bench_batch_fixed --against {args.against}

One round of a case = `animkit batch convert LIB -o … --format bvh` then `animkit batch render LIB -o …
--size 160x120 --fps 10` with N workers, in fresh processes, LIB = two copies of a short CMU clip (149 frames):
one task per worker, so the time is almost all fixed cost (the interpreter and the driver's imports, the
LocalCluster's start, the workers' imports and first-task loads, closing). `{args.against}` is run from a
`git archive` of that commit.

Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, shared with other
engineers' work (load average {load0[0]:.1f}, {load0[1]:.1f}, {load0[2]:.1f} at the start, {load[0]:.1f},
{load[1]:.1f}, {load[2]:.1f} at the end): absolute times are upper bounds.

{markdown_table(stats, unit="s", scale=1.0, baseline=f"{args.against}, 1 worker")}

The two commands' fixed cost, this checkout against {args.against}: {r1:.2f}× less with 1 worker, {r2:.2f}× less with
2 workers (ratios of the medians of this run).
"""
        write_results(Path(args.out), text)
        print(text)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
