"""The main job's stage table: where its CPU time goes, process by process, in CPU seconds (which a loaded machine
changes far less than wall time), against another tree.

    python -m benchmarks.bench_main_stages --rounds 5 --against /tmp/base

Each round runs ``animkit compare scenes/humanoid.toml`` in a fresh process per tree (interleaved A, B, A, B), with
each stage's functions wrapped to add their CPU time (``time.process_time``: this process's threads; a forked child
counts from zero) to the process's tally, and the garbage collector's runs timed (``gc.callbacks``). The stages:

* startup, this process, before the bakes: the interpreter and ``site``; ``import numpy``; the command's imports
  (``animkit.apps.cli`` and what it imports); the scene read; the rest up to the bakes (the compare path's imports,
  the sets dealt out);
* the bakes: the set baked here and each forked one (``animkit.motion.reach.compare``); over all sets, the natural
  solver's solves (``Natural.solve_stack``), within them its iterations (``_step``), within those the prioritised
  step's arithmetic (``bounded_step``), and their counts; the render set-up imported here meanwhile (``prepare``);
* the render, this process (``render_panels``): the palette (median cut of the first frame), the GIF's frames
  (``GifWriter._write``) and within them the palette indices (``GifWriter._indices``), composing each frame's grid;
  the forked panel renderers (``_draw``);
* the garbage collector, every process.

Medians of the rounds, min–max. CPU time is not load-free here: on this shared machine a loaded run's CPU times
read up to 2× a quiet one's (the cores' other threads slow each instruction), so compare trees within one run. A
tally, not a model: ``bench_main_path`` turns these into a critical path on two
cores; ``bench_main`` measures wall time.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from benchmarks.harness import arguments

ROOT = Path(__file__).resolve().parents[1]

#: The job in the tree it starts in; each process writes "pid stage cpu_s" lines to argv[2] as it ends.
DRIVER = r"""
import time
T_START = time.process_time()
import gc, os, sys
tally = {"startup: the interpreter and site": T_START}
def add(key, s):
    tally[key] = tally.get(key, 0.0) + s
gc_t0 = [0.0]
def on_gc(phase, info):
    if phase == "start":
        gc_t0[0] = time.process_time()
    else:
        add("garbage collector", time.process_time() - gc_t0[0])
gc.callbacks.append(on_gc)
t = time.process_time(); import numpy; add("startup: import numpy", time.process_time() - t)
t = time.process_time(); import animkit.apps.cli as cli; add("startup: the command's imports", time.process_time() - t)
log = open(sys.argv[2], "a")
MAIN = os.getpid()
def dump():
    tally["total" if os.getpid() == MAIN else "total, forked"] = time.process_time()
    log.write("".join(f"{'main' if os.getpid() == MAIN else 'child'} {k}\t{v:.6f}\n" for k, v in tally.items()))
    log.flush()
os.register_at_fork(after_in_child=tally.clear)  # a child counts its own work only (its CPU clock starts at 0)
_exit = os._exit
def ending(code):
    dump(); _exit(code)
os._exit = ending  # how a forked child ends
def wrap(owner, name, key, counted=None):
    f = getattr(owner, name)
    def w(*a, **k):
        t = time.process_time()
        try:
            return f(*a, **k)
        finally:
            add(key(a, k) if callable(key) else key, time.process_time() - t)
            if counted:
                add(counted, 1)
    setattr(owner, name, w)
import animkit.apps.commands as commands
import animkit.apps.panel_forks as pf
import animkit.ik.natural as natural
import animkit.motion.reach as reach
import animkit.render.frames as frames
import animkit.render.panels as panels
import animkit.render.writers as writers
wrap(cli, "_load_for_render", "startup: the scene read")
f_compare = commands.compare
def compare(*a, **k):
    tally["_t"] = time.process_time()
    return f_compare(*a, **k)
commands.compare = compare
f_bake = reach.compare
def bake(*a, **k):
    if os.getpid() == MAIN and "_t" in tally:
        add("startup: the rest before the bakes (compare's imports, forks)", time.process_time() - tally.pop("_t"))
    t = time.process_time()
    try:
        return f_bake(*a, **k)
    finally:
        add(f"bake: {','.join(k.get('chains') or ['?'])}{' (here)' if os.getpid() == MAIN else ''}",
            time.process_time() - t)
reach.compare = bake
wrap(natural.Natural, "solve_stack", "bake: Natural.solve_stack, all sets", "bake: frames solved, all sets (count)")
wrap(natural, "_step", "bake: Natural._step, all sets", "bake: iterations, all sets (count)")
wrap(natural, "bounded_step", "bake: the prioritised step (bounded_step), all sets")
wrap(cli, "_render_imports", "bake phase, here: the render set-up (prepare)")
wrap(frames, "render_panels", "render, here: all")
wrap(writers, "gif_palette", "render, here: the palette (median cut)")
wrap(panels.PanelGrid, "compose", "render, here: composing the grid")
wrap(writers.GifWriter, "_indices", "render, here: palette indices")
wrap(writers.GifWriter, "_write", "render, here: the GIF frames (indices, box, LZW, writing)")
wrap(pf, "_draw", "render, forked: drawing the panels")
try:
    cli.main(["compare", "scenes/humanoid.toml", "-q", "-o", sys.argv[1]])
finally:
    dump()
"""


def one_run(tree: Path, tmp: Path) -> dict[str, float]:
    """Stage -> CPU seconds of one run (summed over the processes that ran it; "(count)" rows: calls)."""
    log = tmp / "stages.txt"
    log.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "NUMBA_CACHE_DIR")}
    subprocess.run([sys.executable, "-c", DRIVER, str(tmp / "out.gif"), str(log)], cwd=tree,
                   env=dict(env, PYTHONPATH=str(tree)), check=True, stdout=subprocess.DEVNULL)
    rows: dict[str, float] = defaultdict(float)
    for line in log.read_text().splitlines():
        who, rest = line.split(" ", 1)
        key, value = rest.rsplit("\t", 1)
        if not key.startswith("_"):
            rows[key if who == "main" or key != "garbage collector" else "garbage collector, forked"] += float(value)
    rows["total, all processes"] = rows["total"] + rows["total, forked"]
    return dict(rows)


def main() -> None:
    ap = arguments(__doc__, against="optional")
    args = ap.parse_args()
    trees = [ROOT] + ([args.against.resolve()] if args.against is not None else [])
    runs: dict[Path, list[dict[str, float]]] = {t: [] for t in trees}
    with tempfile.TemporaryDirectory(prefix="animkit-stages-") as d:
        for _ in range(args.rounds):
            for t in trees:
                runs[t].append(one_run(t, Path(d)))
    load = os.getloadavg()[0]
    keys = sorted({k for t in trees for r in runs[t] for k in r}, key=_order)
    print(f"Command: `python -m benchmarks.bench_main_stages --rounds {args.rounds}"
          f"{' --against ' + str(args.against) if args.against else ''}` (load average {load:.1f} after the run)\n")
    print(f"| stage (CPU ms, median of {args.rounds}, min–max) | " + " | ".join(str(t) for t in trees) + " |")
    print("|---|" + "---|" * len(trees))
    for k in keys:
        cells = []
        for t in trees:
            v = [r.get(k, 0.0) for r in runs[t]]
            scale, spec = (1.0, ".0f") if "(count)" in k else (1e3, ".0f")
            cells.append(f"{statistics.median(v) * scale:{spec}} ({min(v) * scale:{spec}}–{max(v) * scale:{spec}})")
        print(f"| {k} | " + " | ".join(cells) + " |")


def _order(key: str) -> tuple[int, str]:
    """The table's rows in the job's order: startup (as it runs), the bakes, the render, the collector, totals."""
    heads = ("startup: the interpreter", "startup: import numpy", "startup: the command's", "startup: the scene",
             "startup: the rest", "bake: arm", "bake: torso", "bake: hips-up", "bake: whole-body", "bake phase",
             "bake: Natural.solve", "bake: Natural._step", "bake: the prioritised", "bake: frames", "bake: iter",
             "render, here: all", "render, here: the palette", "render, here: the GIF", "render, here: palette",
             "render, here: composing", "render, forked", "garbage", "total")
    return next((i for i, h in enumerate(heads) if key.startswith(h)), len(heads)), key


if __name__ == "__main__":
    main()
