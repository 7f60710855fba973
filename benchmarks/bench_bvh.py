"""Benchmark: parse BVH + world positions of every joint in every frame, animkit against pybvh, bvhio, fairmotion.

    python benchmarks/bench_bvh.py [--data ../shared/data/bvh] [--repeat 5] [--fresh | --no-fresh]

By default two tables: a long-lived process reading the files again and again (after a warm-up that loads its
compiled kernels), then a fresh process per read (``--fresh``: only that one; ``--no-fresh``: only the first).

Run it in the benchmark environment (``benchmarks/requirements-bvh.txt``); a peer that is not importable is
skipped with a message. One core: BLAS/OpenMP threads are pinned to 1 before NumPy loads. Each time is the best
of ``--repeat`` runs (a peer whose single run takes over 2 s is run once). Every peer's world positions are checked
against animkit's, joint by joint (matched by name), relative to the figure's size.

"Joint transforms" counts F × J with J the ROOT+JOINT count (31 in the CMU files) for everyone, although animkit
also places the 7 End Sites in the same call.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from animkit.io.bvh import parse_bvh  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[1] / "shared" / "data" / "bvh"

Positions = dict[str, np.ndarray]  # joint name -> (F, 3)


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t0
    if first > 2.0:
        return first, out
    times = [first]
    for _ in range(repeat - 1):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


# --- the contenders: each gives (parse(), fk(parsed) -> {joint name: (F, 3)}) -------------------------------


def animkit_impl(path: Path) -> tuple[Callable[[], Any], Callable[[Any], Positions]]:
    def parse() -> Any:
        return parse_bvh(path.read_text(), path)

    def fk(data: Any) -> Positions:
        P = data.figure.world_positions(data.frames)
        return {n: P[:, i] for i, n in enumerate(data.figure.node_names)}

    return parse, fk


def pybvh_impl(path: Path) -> tuple[Callable[[], Any], Callable[[Any], Positions]]:
    import pybvh

    def parse() -> Any:
        return pybvh.read_bvh_file(path, world_up="+y")

    def fk(b: Any) -> Positions:
        b._invalidate_motion_caches()  # pybvh caches world FK on the object: time the computation, not the cache
        P = b.node_positions(centered="world")  # (F, N, 3), End Sites included, file units
        return {n: P[:, i] for n, i in b.node_index.items() if not n.endswith("_end")}

    return parse, fk


def fairmotion_impl(path: Path) -> tuple[Callable[[], Any], Callable[[Any], Positions]]:
    from fairmotion.data import bvh

    def parse() -> Any:
        return bvh.load(str(path))  # scale 1, Y up on both sides: no conversion

    def fk(m: Any) -> Positions:
        P = m.positions(local=False)  # (F, J, 3), a Python loop over frames and joints
        return {j.name: P[:, i] for i, j in enumerate(m.skel.joints)}

    return parse, fk


def bvhio_impl(path: Path) -> tuple[Callable[[], Any], Callable[[Any], Positions]]:
    import bvhio

    def parse() -> Any:
        return bvhio.readAsHierarchy(str(path))

    def fk(root: Any) -> Positions:
        joints = [j for j, _, _ in root.layout()]
        frames = len(root.Keyframes)
        out = np.empty((frames, len(joints), 3))
        for f in range(frames):  # bvhio places one frame at a time (PyGLM, float32)
            root.loadPose(f, recursive=True)
            for i, j in enumerate(joints):
                out[f, i] = tuple(j.PositionWorld)
        return {j.Name: out[:, i] for i, j in enumerate(joints)}

    return parse, fk


PEERS = {"pybvh": pybvh_impl, "bvhio": bvhio_impl, "fairmotion": fairmotion_impl}


def available(name: str) -> bool:
    module = {"pybvh": "pybvh", "bvhio": "bvhio", "fairmotion": "fairmotion"}[name]
    if importlib.util.find_spec(module) is None:
        print(f"[skip] {name}: not importable here; install benchmarks/requirements-bvh.txt "
              f"(see its notes) to include it")
        return False
    try:
        PEERS[name](Path("x"))
    except ImportError as exc:
        print(f"[skip] {name}: import failed ({exc})")
        return False
    return True


def warm_up(files: list[Path], limit: int = 400) -> int:
    """Read the files in turn, as a long-lived process would, until the BVH scanner and the FK kernel have been
    loaded (or ``limit`` reads, or at once where numba is off); the number of reads."""
    from animkit import jit
    from animkit.io import bvh
    from animkit.model import fk

    reads = 0
    if jit.native_kernels() is not None:  # compiled ahead of time: a process's first read is already compiled
        return 0
    kernels = (bvh.scan_frames_kernel, fk.fk_frames_kernel)
    while jit.enabled() and reads < limit and not all(getattr(k, "ready", False) for k in kernels):
        parse, fk_of = animkit_impl(files[reads % len(files)])
        fk_of(parse())
        reads += 1
    return reads


def interleaved_per_file(files: list[Path], peers: list[str], rounds: int) -> None:
    """Per file: parse + all world positions, each library once per round (A, B, C, A, B, C, ...), medians of
    ``rounds`` with min-max; the ratio is peer median / animkit median of the same run."""
    from benchmarks.harness import interleaved

    impls: dict[str, Callable[[Path], Any]] = {"animkit": animkit_impl, **{p: PEERS[p] for p in peers}}
    reads = warm_up(files)
    if reads:
        print(f"process warm-up: {reads} animkit reads of these files before the table (the steady state of a "
              f"long-lived process: its compiled scanner and FK kernel loaded once the work sent to NumPy has repaid "
              f"numba's start-up; see animkit.jit.pays)\n")
    else:
        print("no warm-up: the scanner and FK were compiled ahead of time (animkit._native), so the table starts at "
              "the process's first read (one warm-up round per file, as for every peer)\n")
    print(f"| file | frames | {' | '.join(f'{n} ms (min-max)' for n in impls)} | "
          + " | ".join(f"x {p}" for p in peers) + " |")
    print("|---|---|" + "---|" * (len(impls) + len(peers)))
    for path in files:
        cases = {}
        for name, impl in impls.items():
            parse, fk = impl(path)
            cases[name] = lambda parse=parse, fk=fk: fk(parse())
        frames = parse_bvh(path.read_text(), path).frames.shape[0]
        st = interleaved(cases, rounds=rounds, warmup=1)
        cells = [st[n].spread(1e3) for n in impls]
        ratios = [f"{st[p].median / st['animkit'].median:.2f}" for p in peers]
        print(f"| {path.name} | {frames} | {' | '.join(cells)} | {' | '.join(ratios)} |", flush=True)


# one read in a fresh process: imports, then parse + every world position timed inside (the first call of a process)
_FRESH = """
import sys, time
lib, path = sys.argv[1], sys.argv[2]
if lib == "animkit":
    from pathlib import Path
    from animkit.io.bvh import parse_bvh
    t0 = time.perf_counter()
    p = Path(path)
    d = parse_bvh(p.read_text(), p)
    P = d.figure.world_positions(d.frames)
    out = {n: P[:, i] for i, n in enumerate(d.figure.node_names)}
elif lib == "numpy":  # the floor of any NumPy-based reader: the interpreter and `import numpy`, no read
    import numpy
    t0 = time.perf_counter()
else:
    import pybvh
    t0 = time.perf_counter()
    b = pybvh.read_bvh_file(path, world_up="+y")
    P = b.node_positions(centered="world")
    out = {n: P[:, i] for n, i in b.node_index.items() if not n.endswith("_end")}
if lib == "numpy":
    t0 = time.perf_counter()
print(time.perf_counter() - t0)
"""


def fresh_per_file(files: list[Path], rounds: int) -> None:
    """Per file, each library in a fresh process per round (animkit, animkit with ANIMKIT_JIT=0, pybvh, and the
    interpreter importing NumPy alone, the floor of every NumPy-based reader): the whole process's wall time
    (start-up and imports included) and, inside it, the first parse + all world positions after the imports."""
    import subprocess

    # as benchmarks.bench_main: PYTHONDONTWRITEBYTECODE (set in this shared workplace) is dropped, since an installed
    # package has its .pyc files and recompiling changed sources in every fresh process is a cost no user pays
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    from benchmarks.harness import interleaved, stats_of

    root = str(Path(__file__).resolve().parents[1])
    libs = {"animkit": ("animkit", {}), "animkit JIT=0": ("animkit", {"ANIMKIT_JIT": "0"}), "pybvh": ("pybvh", {}),
            "python -c 'import numpy'": ("numpy", {})}
    print("| file | frames | case | process wall ms (min-max) | first read ms (min-max) | x pybvh wall | "
          "x pybvh first read |")
    print("|---|---|---|---|---|---|---|")
    for path in files:
        inner: dict[str, list[float]] = {name: [] for name in libs}

        def case(name: str, lib: str, env: dict[str, str], path: Path = path,
                 inner: dict[str, list[float]] = inner) -> Callable[[], None]:
            def run() -> None:
                out = subprocess.run([sys.executable, "-c", _FRESH, lib, str(path)], check=True, text=True,
                                     capture_output=True, cwd=root,
                                     env={**base, "PYTHONPATH": root, **env})
                inner[name].append(float(out.stdout.split()[-1]))
            return run

        st = interleaved({name: case(name, lib, env) for name, (lib, env) in libs.items()}, rounds=rounds, warmup=1)
        first = {name: stats_of(name, inner[name][1:]) for name in libs}  # the warm-up round's reads dropped
        frames = parse_bvh(path.read_text(), path).frames.shape[0]
        for name, (lib, _) in libs.items():
            print(f"| {path.name} | {frames} | {name} | {st[name].spread(1e3)} | {first[name].spread(1e3)} | "
                  f"{st['pybvh'].median / st[name].median:.2f} | "
                  f"{'–' if lib == 'numpy' else format(first['pybvh'].median / first[name].median, '.2f')} |",
                  flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--peers", default="pybvh,bvhio,fairmotion")
    ap.add_argument("--fresh", action="store_true", help="only the table of a fresh process per read (start-up "
                    "and the first call of a process), against pybvh only")
    ap.add_argument("--no-fresh", action="store_true", help="only the long-lived process's table")
    ap.add_argument("--best-of", action="store_true", help="the older best-of-N table with the accuracy check "
                    "(default: interleaved rounds per file, medians with min-max)")
    args = ap.parse_args()
    files = sorted(args.data.glob("*.bvh"))
    if not files:
        sys.exit(f"no .bvh files in {args.data}")
    if args.fresh:
        if not available("pybvh"):
            sys.exit("--fresh compares with pybvh, which is not importable here")
        fresh_per_file(files, max(args.repeat, 5))
        return
    peers = [p for p in args.peers.split(",") if p and available(p)]
    if not args.best_of:
        interleaved_per_file(files, peers, max(args.repeat, 5))
        if not args.no_fresh and "pybvh" in peers:
            print("\nA fresh process per read:\n")
            fresh_per_file(files, max(args.repeat, 5))
        return
    impls: dict[str, Callable[[Path], Any]] = {"animkit": animkit_impl, **{p: PEERS[p] for p in peers}}
    totals = {name: [0.0, 0.0] for name in impls}  # parse, fk seconds
    transforms = 0
    worst = {name: 0.0 for name in peers}
    warnings.simplefilter("ignore")  # pybvh/fairmotion chatter
    for path in files:
        ref_names: list[str] = []
        ref: Positions = {}
        scale = 1.0
        line = [f"{path.name:34s}"]
        for name, impl in impls.items():
            parse, fk = impl(path)
            t_parse, parsed = best(parse, args.repeat)
            t_fk, pos = best(lambda parsed=parsed, fk=fk: fk(parsed), args.repeat)
            totals[name][0] += t_parse
            totals[name][1] += t_fk
            if name == "animkit":
                ref = pos
                ref_names = [n for n in pos if not n.endswith("_end")]
                transforms += parsed.frames.shape[0] * len(ref_names)
                scale = parsed.figure.size()
            else:
                common = [n for n in ref_names if n in pos]
                if len(common) != len(ref_names):
                    missing = sorted(set(ref_names) - set(common))
                    print(f"  [warn] {name} lacks joints {missing[:5]}")
                err = max(float(np.abs(pos[n] - ref[n]).max()) for n in common) / scale
                worst[name] = max(worst[name], err)
            line.append(f"{name} {1e3 * (t_parse + t_fk):8.1f} ms")
        print("  ".join(line))
    print()
    print(f"{len(files)} files, {transforms:,} joint transforms (frames x 31 joints); best of {args.repeat}; "
          f"one thread")
    ak_parse, ak_fk = totals["animkit"]
    head = (f"| {'library':10s} | {'parse ms':>9s} | {'FK ms':>9s} | {'parse+FK ms':>11s} | {'M joint xf/s':>12s} "
            f"| {'parse x':>7s} | {'FK x':>7s} | {'total x':>7s} | {'max err / size':>14s} |")
    print(head)
    print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
    for name, (tp, tf) in totals.items():
        err = "reference" if name == "animkit" else f"{worst[name]:.1e}"
        print(f"| {name:10s} | {1e3 * tp:9.1f} | {1e3 * tf:9.1f} | {1e3 * (tp + tf):11.1f} | "
              f"{transforms / tf / 1e6:12.2f} | {tp / ak_parse:7.1f} | {tf / ak_fk:7.1f} | "
              f"{(tp + tf) / (ak_parse + ak_fk):7.1f} | {err:>14s} |")
    print("(x columns: the library's time divided by animkit's; above 1 means animkit is faster)")
    if peers:
        fastest = min(peers, key=lambda p: sum(totals[p]))
        ratio = sum(totals[fastest]) / (ak_parse + ak_fk)
        print(f"goal parse+FK >= 2x the fastest peer ({fastest}): {ratio:.1f}x -> {'met' if ratio >= 2 else 'NOT met'}")
        if "bvhio" in totals:
            r = sum(totals["bvhio"]) / (ak_parse + ak_fk)
            print(f"goal >= 10x faster than bvhio: {r:.0f}x -> {'met' if r >= 10 else 'NOT met'}")
    rate = transforms / ak_fk
    print(f"goal FK >= 10 M joint transforms/s on one core: {rate / 1e6:.1f} M/s -> "
          f"{'met' if rate >= 1e7 else 'NOT met'}")


if __name__ == "__main__":
    main()
