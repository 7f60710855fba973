"""The main job's render alone: its four panels drawn and written to the GIF in one process, CPU time, against
another tree (the bake left out: its panels are baked once, by this tree, and handed to both).

    python -m benchmarks.bench_main_render --rounds 5 --against /tmp/base
    valgrind --tool=callgrind python -m benchmarks.bench_main_render --once   # instructions: no load in them

Each round renders, in a fresh process per tree (interleaved A, B, A, B), the panels of ``animkit compare
scenes/humanoid.toml`` (pickled once: panels, camera, fps, size, style) with ``render_panels`` on one thread, so
every frame's drawing, compositing and GIF encoding is this process's; medians of the rounds with min–max (CPU,
``time.process_time``). Also whether the two trees' GIFs are byte-identical. ``--once``: one render here, nothing
else run (for callgrind: the counted instructions are the render's, the imports and the unpickling).
"""

from __future__ import annotations

import filecmp
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import arguments

ROOT = Path(__file__).resolve().parents[1]

#: Bakes the job once in this tree and pickles what the compare command hands its renderer.
BAKE = r"""
import pickle, sys
import animkit.apps.cli as cli
def grab(panels, args, scene, fps, size, title):
    with open(sys.argv[1], "wb") as fh:
        pickle.dump((panels, scene.camera, fps, size, cli._style(args)), fh)
    raise SystemExit(0)
cli._draw_panels = grab
cli.main(["compare", "scenes/humanoid.toml", "-q", "-o", sys.argv[2]])
"""

#: Renders the pickled panels to a GIF on one thread; prints the CPU seconds.
RENDER = r"""
import pickle, sys, time
from animkit.render.frames import render_panels
from animkit.render.panel_threads import panel_rows
panels, camera, fps, size, style = pickle.load(open(sys.argv[1], "rb"))
t = time.process_time()
render_panels(panels, sys.argv[2], fps=fps, camera_spec=camera, size=size, style=style, quiet=True,
              rows=lambda streams, n: panel_rows(streams, n, threads=1))
print(time.process_time() - t)
"""


def _env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "NUMBA_CACHE_DIR")}
    return dict(env, PYTHONPATH=str(tree))


def main() -> None:
    ap = arguments(__doc__, against="optional")
    ap.add_argument("--once", action="store_true", help="one render in this process (for callgrind)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="animkit-render-") as d:
        tmp = Path(d)
        pkl = tmp / "panels.pkl"
        subprocess.run([sys.executable, "-c", BAKE, str(pkl), str(tmp / "bake.gif")], cwd=ROOT, env=_env(ROOT),
                       check=True, stdout=subprocess.DEVNULL)
        if args.once:
            sys.argv = ["render", str(pkl), str(tmp / "once.gif")]
            exec(compile(RENDER, "render", "exec"), {})
            return
        trees = [ROOT] + ([args.against.resolve()] if args.against is not None else [])
        cpu: dict[Path, list[float]] = {t: [] for t in trees}
        for _ in range(args.rounds):
            for i, t in enumerate(trees):
                out = subprocess.run([sys.executable, "-c", RENDER, str(pkl), str(tmp / f"{i}.gif")], cwd=t,
                                     env=_env(t), check=True, capture_output=True, text=True).stdout
                cpu[t].append(float(out.split()[-1]))
        same = len(trees) < 2 or filecmp.cmp(tmp / "0.gif", tmp / "1.gif", shallow=False)
    print(f"Command: `python -m benchmarks.bench_main_render --rounds {args.rounds}"
          f"{' --against ' + str(args.against) if args.against else ''}` (load average {os.getloadavg()[0]:.1f} "
          "after the run)\n")
    print("| render CPU s, median (min–max) | " + " | ".join(str(t) for t in trees) + " |")
    print("|---|" + "---|" * len(trees))
    print("| the panels drawn, composed and written | " + " | ".join(
        f"{statistics.median(cpu[t]):.3f} ({min(cpu[t]):.3f}–{max(cpu[t]):.3f})" for t in trees) + " |")
    if len(trees) == 2:
        a, b = (statistics.median(cpu[t]) for t in trees)
        print(f"\nThis tree takes {a / b:.2f}× the CPU of {trees[1]}; the GIFs are "
              f"{'byte-identical' if same else 'DIFFERENT'}.")


if __name__ == "__main__":
    main()
