"""The main job's critical path on two cores, from each process's CPU time: what a quiet two-core machine's wall
time would be, measured on a loaded one (where wall time says more about the others' load than about the job).

    python -m benchmarks.bench_main_path --rounds 5 --against /tmp/base13

Each round runs ``animkit compare scenes/humanoid.toml`` in a fresh process per tree (interleaved A, B), the bake,
the forked bake and the panel renderers wrapped to log each process's CPU time (user + sys, ``os.times``) at the
start and end of its part. The model: startup (this process, before the bakes' forks) + max(this process's bake,
prepare and render set-up; the longest forked bake; (this process's part + the forked bakes' sum) / 2) + max(this
process's render (composing, the GIF); (that + the forked renderers' CPU) / 2): the work on the critical path when
the two cores share the processes of each phase, CPU time standing for wall time (no waiting but for the other
side). Medians of the rounds. A model, not a measurement of wall time:
bench_main.py measures that.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import arguments

ROOT = Path(__file__).resolve().parents[1]

#: The job, run in the tree it is started in, each part's CPU time logged as "pid event cpu" lines to argv[2].
DRIVER = r"""
import os, sys
log = open(sys.argv[2], "a")
def mark(event):
    t = os.times()
    log.write(f"{os.getpid()} {event} {t[0] + t[1]:.4f}\n"); log.flush()
import animkit.apps.cli as cli
import animkit.motion.reach as reach
import animkit.apps.panel_forks as pf
import animkit.render.frames as fr
def wrap(mod, name, start, end):
    f = getattr(mod, name)
    def w(*a, **k):
        mark(start); r = f(*a, **k); mark(end); return r
    setattr(mod, name, w)
wrap(reach, "compare", "bake-start", "bake-end")
wrap(pf, "_draw", "draw-start", "draw-end")
wrap(fr, "render_panels", "render-start", "render-end")
cli.main(["compare", "scenes/humanoid.toml", "-q", "-o", sys.argv[1]])
mark("end")
"""

PARTS = ("startup", "this process: bake, prepare, render set-up", "the longest forked bake", "the forked bakes (sum)",
         "this process: render (GIF)", "the forked renderers (sum)", "critical path on 2 cores (model)", "total CPU")


def one_run(tree: Path, tmp: Path) -> tuple[float, ...]:
    """The parts' CPU seconds (PARTS) of one run of the job in ``tree``."""
    log = tmp / "log.txt"
    log.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "NUMBA_CACHE_DIR")}
    subprocess.run([sys.executable, "-c", DRIVER, str(tmp / "out.gif"), str(log)], cwd=tree,
                   env=dict(env, PYTHONPATH=str(tree)), check=True, stdout=subprocess.DEVNULL)
    events = [line.split() for line in log.read_text().splitlines()]
    me = next(e[0] for e in events if e[1] == "end")  # this process (children log first where forked first)
    mine = {e[1]: float(e[2]) for e in events if e[0] == me}
    bakes = [float(e[2]) for e in events if e[0] != me and e[1] == "bake-end"]
    kids = sum(float(e[2]) for e in events if e[0] != me and e[1] == "draw-end")
    start = mine["bake-start"]
    middle = mine["render-start"] - start
    render = mine["render-end"] - mine["render-start"]
    model = start + max(middle, *bakes, (middle + sum(bakes)) / 2) + max(render, (render + kids) / 2)
    return start, middle, max(bakes), sum(bakes), render, kids, model, mine["end"] + sum(bakes) + kids


def main() -> None:
    ap = arguments(__doc__, against="optional")
    args = ap.parse_args()
    trees = [ROOT] + ([args.against.resolve()] if args.against is not None else [])
    runs: dict[Path, list[tuple[float, ...]]] = {t: [] for t in trees}
    with tempfile.TemporaryDirectory(prefix="animkit-path-") as d:
        for _ in range(args.rounds):
            for t in trees:
                runs[t].append(one_run(t, Path(d)))
    load = os.getloadavg()[0]
    print(f"Command: `python -m benchmarks.bench_main_path --rounds {args.rounds}"
          f"{' --against ' + str(args.against) if args.against else ''}` (load average {load:.1f} after the run)\n")
    print("| CPU s, median of " + str(args.rounds) + " | " + " | ".join(str(t) for t in trees) + " |")
    print("|---|" + "---|" * len(trees))
    for i, part in enumerate(PARTS):
        print(f"| {part} | " + " | ".join(f"{statistics.median(r[i] for r in runs[t]):.3f} "
                                          f"({min(r[i] for r in runs[t]):.3f}–{max(r[i] for r in runs[t]):.3f})"
                                          for t in trees) + " |")
    if len(trees) == 2:
        a, b = (statistics.median(r[PARTS.index("critical path on 2 cores (model)")] for r in runs[t]) for t in trees)
        print(f"\nCritical path: {b / a:.2f}× shorter here than in {trees[1]}.")


if __name__ == "__main__":
    main()
