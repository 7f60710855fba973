"""The README's main job, end to end, in fresh processes: ``animkit compare scenes/humanoid.toml -o compare.gif``.

    python -m benchmarks.bench_main [--rounds 5]          # from the repository root
    python -m benchmarks.bench_main --against DIR         # also the warm job in another checkout (before/after)

Cases, interleaved by :func:`benchmarks.harness.interleaved` (medians of ≥ 5, min–max shown), each a fresh
``python -m animkit`` process (start-up and imports included):

* warm: the default, with the numba cache as it is, in a checkout whose sources are byte-compiled first
  (``compileall``), as ``pip install`` does: what an installed animkit's user waits for;
* empty cache: the default with ``NUMBA_CACHE_DIR`` pointing at a new empty folder every run (a first run);
* ``ANIMKIT_JIT=0``: NumPy only;
* sources compiled every run: a copy of the package without ``__pycache__`` run with ``PYTHONDONTWRITEBYTECODE=1``
  (this shared workplace's setting: every animkit module is compiled from source in every process);
* ``python -c "import numpy"``: the interpreter and NumPy alone, so the table shows how loaded the machine was;
* one core (``taskset -c``): the default on one core, where the bake's forked process and the panels' threads
  have no second core to run on (what the job costs without them; on a loaded machine, nearer what it gets).

Also: whether this tree's GIFs are byte-identical (and the other tree's: byte-identical, or else whether its frames
decode to the same pixels), and the peak resident memory of one run of each.
"""

from __future__ import annotations

import compileall
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import arguments, interleaved, markdown_table, ratio, stats_of  # noqa: E402

ARGS = ["-m", "animkit", "compare", "scenes/humanoid.toml", "-q"]


def main() -> None:

    ap = arguments(__doc__, against="optional")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="animkit-main-"))
    for tree in (ROOT, args.against) if args.against is not None else (ROOT,):
        compileall.compile_dir(str(Path(tree) / "animkit"), quiet=1)  # as an install does
    src = tmp / "src"  # the package without its .pyc files, for the compiled-every-run case
    shutil.copytree(ROOT / "animkit", src / "animkit", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "scenes", src / "scenes")
    # PYTHONDONTWRITEBYTECODE (set in this shared workplace) is dropped: an installed package has its .pyc files,
    # and recompiling animkit's sources on every run (≈ 0.2 s) is no part of what a user waits for.
    drop = ("ANIMKIT_JIT", "NUMBA_CACHE_DIR", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    cpu: dict[str, list[float]] = {}

    def case(name: str, extra: dict[str, str], fresh_cache: bool = False, cwd: Path = ROOT,
             prefix: tuple[str, ...] = ()) -> Callable[[], None]:
        def run() -> None:
            e = dict(env, **extra)
            if fresh_cache:
                e["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(dir=tmp)
            c0 = sum(os.times()[2:4])  # the children's user + sys CPU time (their reaped children's included)
            subprocess.run([*prefix, sys.executable, *ARGS, "-o", str(tmp / f"{name}.gif")], cwd=cwd, env=e,
                           check=True, stdout=subprocess.DEVNULL)
            cpu.setdefault(name, []).append(sum(os.times()[2:4]) - c0)
        return run

    def numpy_alone() -> None:
        c0 = sum(os.times()[2:4])
        subprocess.run([sys.executable, "-c", "import numpy"], cwd=ROOT, env=env, check=True)
        cpu.setdefault("numpy", []).append(sum(os.times()[2:4]) - c0)

    cases = {"default, warm": case("warm", {}), "default, empty numba cache": case("cold", {}, True),
             "ANIMKIT_JIT=0": case("nojit", {"ANIMKIT_JIT": "0"}),
             "default, warm, sources compiled every run": case("source", {"PYTHONDONTWRITEBYTECODE": "1"}, cwd=src),
             'python -c "import numpy"': numpy_alone}
    names = ["warm", "cold", "nojit", "source", "numpy"]
    if shutil.which("taskset") and len(os.sched_getaffinity(0)) > 1:  # no second core: the bake's fork, the
        one = f"default, warm, one core (taskset -c {min(os.sched_getaffinity(0))})"  # panels' threads wait
        cases[one] = case("onecore", {}, prefix=("taskset", "-c", str(min(os.sched_getaffinity(0)))))
        names.append("onecore")
    if args.against is not None:
        cases[f"default, warm, in {args.against}"] = case("against", {}, cwd=args.against.resolve())
        names.append("against")
    load = os.getloadavg()[0]
    stats = interleaved(cases, rounds=args.rounds)
    gifs = [n for n in names if n not in ("numpy", "against")]
    same = len({(tmp / f"{n}.gif").read_bytes() for n in gifs}) == 1
    rss = {}
    for name, extra in (("default", {}), ("ANIMKIT_JIT=0", {"ANIMKIT_JIT": "0"})):
        # the command's own peak (wait4's rusage; the process ends by os._exit, so it cannot report it itself); the
        # bake's forked process peaks at about the same, its pages shared with this one until written
        p = subprocess.Popen([sys.executable, *ARGS, "-o", str(tmp / "m.gif")], cwd=ROOT, env=dict(env, **extra),
                             stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        assert p.returncode == 0, f"the job failed ({p.returncode})"
        rss[name] = usage.ru_maxrss / 1024
    # after the RSS runs: a process forked from this one counts this one's pages until it execs
    against = _against_line(tmp / "warm.gif", tmp / "against.gif") if args.against is not None else ""
    print("# The main job: `animkit compare scenes/humanoid.toml -o compare.gif`\n")
    print(f"Command: `flock /tmp/animkit-bench.lock python -m benchmarks.bench_main --rounds {args.rounds}"
          f"{' --against ' + str(args.against) if args.against is not None else ''}` "
          f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {load:.1f} on {os.cpu_count()} "
          "cores before the run — the machine is shared by several people, so absolute times are upper bounds of "
          "what a quiet machine takes; the ratios come from one interleaved run).\n")
    print("Wall time:\n")
    print(markdown_table(stats, unit="s", scale=1.0, baseline="default, warm"))
    cpu_stats = {label: stats_of(label, cpu[name][-len(stats[label].samples):])
                 for label, name in zip(cases, names, strict=True)}
    print("\nCPU time (user + sys of the child process, same runs; what the job costs, less sensitive to load):\n")
    print(markdown_table(cpu_stats, unit="s", scale=1.0, baseline="default, warm"))
    print(f"\nGIFs byte-identical across this tree's {len(gifs)} cases: {'yes' if same else 'NO'}.{against} "
          "Peak RSS of one run: " + ", ".join(f"{k} {v:.0f} MiB" for k, v in rss.items()) + ".\n")
    w, c, n = stats["default, warm"], stats["default, empty numba cache"], stats["ANIMKIT_JIT=0"]
    print("| goal | measured |\n|---|---|")
    print(f"| warm ≤ 2 s | {w.median:.2f} s wall (median; min {w.low:.2f} s), "
          f"{cpu_stats['default, warm'].median:.2f} s CPU |")
    print(f"| empty cache ≤ 2.5 s | {c.median:.2f} s wall (median; min {c.low:.2f} s) |")
    floor = stats['python -c "import numpy"'].median
    print(f"| the machine's load: `python -c \"import numpy\"` | {floor:.3f} s; the warm job is "
          f"{w.median / floor:.1f}× it, the empty-cache job {c.median / floor:.1f}× |")
    srcs = stats["default, warm, sources compiled every run"]
    print(f"| sources compiled every run (PYTHONDONTWRITEBYTECODE=1, no .pyc) | {srcs.median:.2f} s wall "
          f"(median; min {srcs.low:.2f} s) |")
    print(f"| ANIMKIT_JIT=0 not faster than the default | JIT=0 takes {ratio(n, w):.2f}× the default's time |")


def _against_line(here: Path, there: Path) -> str:
    """The other tree's GIF beside this one's: byte-identical, or else whether every frame decodes (Pillow) to the
    same pixels and durations, and the two sizes."""
    a, b = here.read_bytes(), there.read_bytes()
    if a == b:
        return " The other tree's GIF: byte-identical."
    from PIL import Image, ImageSequence

    with Image.open(here) as ima, Image.open(there) as imb:
        same = ima.n_frames == imb.n_frames and all(  # frame by frame (not every decoded frame kept)
            fa.convert("RGB").tobytes() == fb.convert("RGB").tobytes() and fa.info.get("duration") ==
            fb.info.get("duration")
            for fa, fb in zip(ImageSequence.Iterator(ima), ImageSequence.Iterator(imb), strict=True))
    return (f" The other tree's GIF: other bytes, {'the same' if same else 'DIFFERENT'} decoded frames (pixels and "
            f"delays, Pillow); {len(a) / 1e6:.2f} MB here, {len(b) / 1e6:.2f} MB there.")


if __name__ == "__main__":
    main()
