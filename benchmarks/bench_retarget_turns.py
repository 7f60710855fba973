"""The retarget's one pass over the source's turns (the C extension's ``retarget_turns``), this tree's build against
another's, in one process, call by call interleaved:

    python -m benchmarks.bench_retarget_turns --against /tmp/base-tree [--rounds 40] [--frames 2000]

The input is what benchmarks/bench_motion.py retargets: the CMU walk looped to ``--frames`` frames onto CesiumMan, its
arguments caught from one ``retarget_full`` (the source's world matrices W (F, N, 4, 4), the driven bones' sources,
children, rest products K and directions d). Each round calls both builds once, in alternating order, on the same
arguments; printed: CPU time (``time.process_time``: the kernel releases nothing to other threads) medians with the
range, the median and range of the per-round ratio this ÷ other, and whether the two outputs are the same bits.
Prints only (no results file). The kernel is read-bound on W (F·N·128 bytes), so a loaded machine's shared caches
show in both columns alike.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import time
import types
from pathlib import Path

import numpy as np

from animkit import jit
from benchmarks.bench_motion import inputs
from benchmarks.harness import arguments


def kernel_of(tree: Path) -> types.ModuleType:
    """The C extension built in ``tree`` (``animkit/_native*.so``), loaded under a name of its own."""
    path = next((tree / "animkit").glob("_native*.so"))
    package = types.ModuleType("other_tree")
    package.__path__ = []
    sys.modules["other_tree"] = package
    spec = importlib.util.spec_from_file_location("other_tree._native", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def caught_arguments(frames: int) -> tuple[np.ndarray, ...]:
    """(W, src, child, K, d): ``bone_turns_compiled``'s arguments in one retarget of the looped walk."""
    import animkit.motion.retarget_drive as rd
    from animkit.motion.retarget import retarget_full

    caught: list[tuple[np.ndarray, ...]] = []
    real = rd.bone_turns_compiled

    def catch(*a: np.ndarray) -> np.ndarray | None:
        caught.append(a)
        return real(*a)

    rd.bone_turns_compiled = catch  # type: ignore[assignment]
    try:
        _, _, looped, target = inputs(frames)
        retarget_full(looped, target)
    finally:
        rd.bone_turns_compiled = real  # type: ignore[assignment]
    W, src, child, K, d = caught[0]
    return np.ascontiguousarray(W), src, child, np.ascontiguousarray(K), np.ascontiguousarray(d)


def main() -> None:
    ap = arguments(__doc__, rounds=40, against="required")
    ap.add_argument("--frames", type=int, default=2000)
    args = ap.parse_args()
    this = jit.native_kernels()
    if this is None or not hasattr(this, "retarget_turns"):
        raise SystemExit("this tree's C extension is not built (python setup.py build_ext --inplace)")
    other = kernel_of(args.against.resolve())
    W, src, child, K, d = caught_arguments(args.frames)
    F, N, B = W.shape[0], W.shape[1], len(src)
    out = {"this": np.empty((B, F, 3, 3)), "other": np.empty((B, F, 3, 3))}
    cpu: dict[str, list[float]] = {"this": [], "other": []}
    for i in range(args.rounds):
        for name in ("this", "other") if i % 2 == 0 else ("other", "this"):
            fn = (this if name == "this" else other).retarget_turns
            c0 = time.process_time()
            fn(W, src, child, K, d, out[name], F, N, B)
            cpu[name].append(time.process_time() - c0)
    q = [b / a for a, b in zip(cpu["other"], cpu["this"], strict=True)]

    def ms(v: list[float]) -> str:
        return f"{1e3 * statistics.median(v):.1f} ms [{1e3 * min(v):.1f}–{1e3 * max(v):.1f}]"

    print(f"retarget_turns, the walk looped to {F} frames ({N} source nodes, {B} driven bones), {args.rounds} rounds: "
          f"other {ms(cpu['other'])}, this {ms(cpu['this'])}, this/other {statistics.median(q):.2f} "
          f"[{min(q):.2f}–{max(q):.2f}]; the same bits: {bool(np.array_equal(out['this'], out['other']))}")


if __name__ == "__main__":
    main()
