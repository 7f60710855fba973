"""Batch benchmark: a library of CMU clips converted and rendered as thumbnails, on 1 and on 2 Dask workers.

    flock /tmp/animkit-bench.lock python -m benchmarks.bench_batch          # from the repository root

The library: every distinct CMU clip found (cgspeed BVH conversions): those of ``../shared/data/bvh`` (beside the
repository, see its SOURCES.md) when that folder exists, else those of ``tests/data``, all of them, cycled in name
order and copied under different names until there are ``--clips`` files (40 by default; the results file says
which clips, how many distinct and how many frames in all). One round
of a case is what a user runs, end to end in fresh processes (cluster start-up, imports and numba's cache load
included), into a fresh folder:

    animkit batch convert LIB -o OUT/convert --format bvh --workers N -q
    animkit batch render  LIB -o OUT/render --size 160x120 --fps 10 --workers N -q

Cases ``1 worker`` and ``2 workers`` alternate (harness.interleaved); the speed-up is the ratio of the medians
of the same run. Writes ``benchmarks/results_batch.md`` (``--out``).
"""

from __future__ import annotations

import csv
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from .harness import arguments, interleaved, markdown_table, ratio, write_results

ROOT = Path(__file__).resolve().parents[1]
#: Where the CMU clips come from, first found first: the shared data beside the repository (``../shared``; from a
#: worktree deeper down, the nearest ancestor's ``shared``: all distinct CMU clips this workplace holds), else the
#: few copied into tests/data.
SOURCES = (*(up / "shared" / "data" / "bvh" for up in ROOT.parents), ROOT / "tests" / "data")


def library_clips(sources: tuple[Path, ...] = SOURCES) -> tuple[Path, list[Path]]:
    """The folder and its distinct CMU clips (``cmu_*.bvh``, by name): the first of ``sources`` that has any."""
    for folder in sources:
        clips = sorted(folder.glob("cmu_*.bvh")) if folder.is_dir() else []
        if clips:
            return folder, clips
    raise SystemExit(f"no CMU clips in {' or '.join(map(str, sources))}")


def bvh_frames(path: Path) -> int:
    """The ``Frames:`` count of a BVH file."""
    return int(path.read_text().split("Frames:")[1].split()[0])


def task_seconds(summary: Path) -> float:
    """Σ of the ``seconds`` column of a batch summary (Parquet or CSV): the time its tasks took, each in its worker."""
    if summary.suffix == ".parquet":
        import pyarrow.parquet as pq

        values = pq.read_table(summary, columns=["seconds"]).column("seconds").to_pylist()
    else:
        with summary.open(newline="", encoding="utf-8") as fh:
            values = [row["seconds"] for row in csv.DictReader(fh)]
    return float(sum(float(v) for v in values if v not in (None, "")))


def make_library(folder: Path, clips: list[Path], n: int) -> list[Path]:
    """``n`` BVH files in ``folder``: ``clips`` cycled (k-th file: clip k mod len(clips)) under new names."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(n):
        src = clips[k % len(clips)]
        dst = folder / f"clip{k:03d}_{src.stem}.bvh"
        shutil.copy(src, dst)
        out.append(dst)
    return out


FIXED_COSTS = """Where the time goes. A round's time is fixed costs F (per command: the interpreter and the driver's
imports, the LocalCluster's start, each worker's imports and first-task loads, closing, the process's end) plus the
work W, which two workers share: speed-up = (F + W) / (F + W/2), so ≥ 1.7× needs F ≤ 0.21 W (the W and F of this run
are above). What `animkit batch` does about F (animkit/apps/batch.py, animkit/apps/batch_worker.py,
animkit/apps/cli.py):
- The local workers are forked from multiprocessing's forkserver, started before the driver imports dask. The
  forkserver imports `animkit.apps.batch_worker` once (dask.distributed, animkit's readers, writers and renderer,
  Pillow, tqdm) while the driver imports dask and starts the scheduler, so both run side by side, and every
  worker starts with all of it in memory (spawned workers each imported it again, ≈ 1–1.5 s a worker).
- numba only where it pays: the compiled BVH scanner reads ~19 ms/MB faster than NumPy's reader but its first
  call in a fresh process costs ~0.65 s (numba, its registries, SciPy); with under 32 MiB of BVH text per worker
  (here: 0.1–1.7 MB a file) `info`, `convert` and `render` run their workers without numba (ANIMKIT_JIT=0).
- The largest files go first (task priority = file size), so the last task to finish is a short one; pyarrow (the
  Parquet summary, ~0.2 s) is imported by the driver in the background while its workers start.
- The installed command ends a finished batch with `os._exit` after flushing its output and running the atexit
  handlers (the cluster already closed, every output and the summary renamed into place), skipping the
  interpreter's teardown of dask's, pandas' and pyarrow's modules (≈ 0.2 s a command); `import animkit` loads IK,
  reach, motion and the readers only when asked (PEP 562), ≈ 30 ms less in the driver and in the forkserver.
- The cluster's monitors that feed dask's dashboard (which a batch does not start) look less often and the workers'
  statistical profiler is off (`batch.QUIET_MONITORS`): less of the driver's and workers' CPU taken from the tasks.
What is left per command (phase timestamps in fresh processes at load ≈ 1, one command on two short files): the
interpreter and `import animkit` ≈ 0.15 s before the driver starts the forkserver; the forkserver's own interpreter
and imports (dask.distributed ≈ 0.25 s, NumPy, animkit's readers and renderer, Pillow) ≈ 0.42 s, the critical path
(the driver's own imports end ≈ 0.16 s sooner, and starting the forkserver ≈ 0.08 s sooner, before `import animkit`,
gained ≈ 0.04 s in a trial, not kept); the workers' fork and registration ≈ 0.06 s (1 worker) to 0.1 s (2); the
first task's extra ≈ 0.03 s; closing and the summary ≈ 0.02 s: ≈ 0.7–0.75 s a command, most of it dask's start-up,
which more workers cannot share. The work itself: 2 workers' tasks take ≈ 3 % longer than 1 worker's (the driver's
scheduler, client and nannies share the two cores with them; two processes running the same tasks without dask
side by side took 3.51 s and 3.53 s against 3.56 s alone).
The fixed cost alone, this checkout against an earlier commit, interleaved in one run:
`python -m benchmarks.bench_batch_fixed --against 76cb6ed` (benchmarks/results_batch_fixed.md)."""


def main() -> None:
    ap = arguments(__doc__, out=ROOT / "benchmarks" / "results_batch.md")
    ap.add_argument("--clips", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=0, help="unrecorded rounds first (each case starts fresh "
                    "processes anyway; numba's on-disk cache is warm after the tests)")
    ap.add_argument("--clips-from", type=Path, default=None, help="take the clips from this folder only (default: "
                    "the first of ../shared/data/bvh and tests/data that has CMU clips)")
    args = ap.parse_args()

    load0 = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="animkit-bench-batch-"))
    try:
        source, clips = library_clips(SOURCES if args.clips_from is None else (args.clips_from.resolve(),))
        files = make_library(work / "lib", clips, args.clips)
        frames = sum(bvh_frames(f) for f in files)
        distinct_frames = {c.name: bvh_frames(c) for c in clips}
        where = (f"`{source.relative_to(ROOT)}`" if source.is_relative_to(ROOT)
                 else f"`{source}` (outside the repository; sources: `{source.parent / 'SOURCES.md'}`)")
        listing = ", ".join(f"{name} ({n:,})" for name, n in distinct_frames.items())
        round_text = textwrap.fill(
            "One round = `animkit batch convert LIB -o … --format bvh` then `animkit batch render LIB -o … --size "
            "160x120 --fps 10` on a LocalCluster of N single-threaded worker processes, in fresh processes (cluster "
            f"start-up, imports and numba's cache load included). LIB: {args.clips} BVH files, {frames:,} frames at "
            f"120 fps in all: the {len(clips)} distinct CMU clips of {where}, {sum(distinct_frames.values()):,} frames "
            f"together, cycled in name order under different names (not {args.clips} distinct clips). The clips "
            f"(frames): {listing}.", width=116, break_on_hyphens=False)
        counter = [0]
        # as benchmarks.bench_main: PYTHONDONTWRITEBYTECODE (set in this shared workplace) is dropped, since an
        # installed package has its .pyc files and recompiling sources in every process is a cost no user pays
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

        kept = work / "summaries"
        kept.mkdir()
        summaries: dict[int, list[list[Path]]] = {1: [], 2: []}  # per case, per round: its two summaries

        def case(workers: int):
            def run() -> None:
                counter[0] += 1
                out = work / f"out{counter[0]}"
                summaries[workers].append([])
                for cmd in (["convert", str(work / "lib"), "-o", str(out / "convert"), "--format", "bvh"],
                            ["render", str(work / "lib"), "-o", str(out / "render"), "--size", "160x120",
                             "--fps", "10"]):
                    subprocess.run([sys.executable, "-m", "animkit", "batch", *cmd, "--workers", str(workers),
                                    "-q"], check=True, stdout=subprocess.DEVNULL, cwd=ROOT, env=env)
                    summary = next((out / cmd[0]).glob("summary.*"))  # kept (a rename) to read after the timing
                    summaries[workers][-1].append(summary.replace(kept / f"{counter[0]}-{cmd[0]}{summary.suffix}"))
                shutil.rmtree(out)
            return run

        t0 = time.perf_counter()
        stats = interleaved({"1 worker": case(1), "2 workers": case(2)}, rounds=args.rounds, warmup=args.warmup)
        total = time.perf_counter() - t0
        speedup = ratio(stats["1 worker"], stats["2 workers"])
        # the work W of a round: the Σ of its tasks' own times (the summaries' seconds), recorded rounds only; the
        # fixed costs F = the round's time − W / N (N workers sharing W evenly)
        work_s = {n: statistics.median(sum(map(task_seconds, r)) for r in rs[-args.rounds:])
                  for n, rs in summaries.items()}
        fixed = {n: stats[label].median - work_s[n] / n for n, label in ((1, "1 worker"), (2, "2 workers"))}
        per_clip = stats["2 workers"].median / args.clips
        load = os.getloadavg()
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        text = f"""# Batch: a library of CMU clips on Dask, 1 vs 2 workers

Run ending {stamp} (load average at the start {load0[0]:.1f}, {load0[1]:.1f}, {load0[2]:.1f}).

Command (from the repository root; {args.rounds} interleaved rounds after {args.warmup} warm-up round(s), {total:.0f} s
in all):

    flock /tmp/animkit-bench.lock python -m benchmarks.bench_batch --clips {args.clips} --rounds {args.rounds} \\
        --warmup {args.warmup}{"" if args.clips_from is None else f" --clips-from {args.clips_from}"}

{round_text}

Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; shared with other
engineers' work during the run (load average at the end {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}), so the
absolute times are upper bounds and the speed-up a lower bound of what a quiet machine gives.

{markdown_table(stats, unit="s", scale=1.0, baseline="1 worker")}

Speed-up with 2 workers: **{speedup:.2f}×** (goal ≥ 1.7×). Per clip with 2 workers: {per_clip:.2f} s
(convert + thumbnail).

This run's work and fixed costs a round (medians): W = Σ of the tasks' own times (the summaries' `seconds`)
{work_s[1]:.2f} s with 1 worker, {work_s[2]:.2f} s with 2 (the same tasks, slower side by side); F = the round's
time − W / N: {fixed[1]:.2f} s with 1 worker, {fixed[2]:.2f} s with 2 (two commands: interpreters, imports, cluster
start and close; with 2 workers, also the uneven end and whatever else ran).

{FIXED_COSTS}
"""
        write_results(Path(args.out), text)
        print(text)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
