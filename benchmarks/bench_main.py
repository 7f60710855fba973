"""The README's main job, end to end, in fresh processes: ``animkit compare scenes/humanoid.toml -o compare.gif``.

    python -m benchmarks.bench_main            # from the repository root

Cases, interleaved by :func:`benchmarks.harness.interleaved` (medians of ≥ 5, min–max shown), each a fresh
``python -m animkit`` process (start-up and imports included):

* warm: the default, with the numba cache as it is;
* empty cache: the default with ``NUMBA_CACHE_DIR`` pointing at a new empty folder every run (a first run);
* ``ANIMKIT_JIT=0``: NumPy only.

Also: whether the three GIFs are byte-identical, and the peak resident memory of one run of each.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import interleaved, markdown_table, ratio  # noqa: E402

ARGS = ["-m", "animkit", "compare", "scenes/humanoid.toml", "-q"]


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="animkit-main-"))
    env = {k: v for k, v in os.environ.items() if k not in ("ANIMKIT_JIT", "NUMBA_CACHE_DIR")}

    def case(name: str, extra: dict[str, str], fresh_cache: bool = False) -> Callable[[], None]:
        def run() -> None:
            e = dict(env, **extra)
            if fresh_cache:
                e["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(dir=tmp)
            subprocess.run([sys.executable, *ARGS, "-o", str(tmp / f"{name}.gif")], cwd=ROOT, env=e, check=True,
                           stdout=subprocess.DEVNULL)
        return run

    cases = {"default, warm": case("warm", {}), "default, empty numba cache": case("cold", {}, True),
             "ANIMKIT_JIT=0": case("nojit", {"ANIMKIT_JIT": "0"})}
    load = os.getloadavg()[0]
    stats = interleaved(cases, rounds=5)
    same = len({(tmp / f"{n}.gif").read_bytes() for n in ("warm", "cold", "nojit")}) == 1
    rss = {}
    probe = ("import resource, runpy, sys\nsys.argv = ['animkit', *sys.argv[1:]]\ntry:\n"
             "    runpy.run_module('animkit', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)")
    for name, extra in (("default", {}), ("ANIMKIT_JIT=0", {"ANIMKIT_JIT": "0"})):
        p = subprocess.run([sys.executable, "-c", probe, *ARGS[2:], "-o", str(tmp / "m.gif")], cwd=ROOT,
                           env=dict(env, **extra), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
        rss[name] = int(p.stderr.strip().splitlines()[-1]) / 1024
    print("# The main job: `animkit compare scenes/humanoid.toml -o compare.gif`\n")
    print(f"Command: `flock /tmp/animkit-bench.lock python -m benchmarks.bench_main` "
          f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {load:.1f} on {os.cpu_count()} "
          "cores before the run — the machine is shared by several people, so absolute times are upper bounds of "
          "what a quiet machine takes; the ratios come from one interleaved run).\n")
    print(markdown_table(stats, unit="s", scale=1.0, baseline="default, warm"))
    print(f"\nGIFs byte-identical across the three: {'yes' if same else 'NO'}. Peak RSS of one run: "
          + ", ".join(f"{k} {v:.0f} MiB" for k, v in rss.items()) + ".\n")
    w, c, n = stats["default, warm"], stats["default, empty numba cache"], stats["ANIMKIT_JIT=0"]
    print("| goal | measured |\n|---|---|")
    print(f"| warm ≤ 2 s | {w.median:.2f} s (median; min {w.low:.2f} s) |")
    print(f"| empty cache ≤ 1.5× warm | {ratio(c, w):.2f}× |")
    print(f"| ANIMKIT_JIT=0 not faster than the default | JIT=0 takes {ratio(n, w):.2f}× the default's time |")


if __name__ == "__main__":
    main()
