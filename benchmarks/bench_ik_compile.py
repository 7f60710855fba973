"""Compile cost of the Levenberg–Marquardt kernels on an empty numba cache, two checkouts interleaved.

    git archive 8b46cac | tar -x -C /tmp/lm-before   (and a copy of animkit/_native*.so)
    python -m benchmarks.bench_ik_compile /tmp/lm-before . --rounds 3

Each round runs, for each checkout (A then B), one fresh process per case with ``NUMBA_CACHE_DIR`` a new empty
folder: it imports numba and the modules first (not counted), then calls the kernels with the signatures the
suite and the solvers use, and reports the process's CPU time (user + sys, ``time.process_time``) and wall time
for those calls: compiling, since nothing is cached. Cases: ``lm_serial`` (one problem and a batch of two),
``lm_lanes`` (one problem and a batch of two), ``lm_packed`` (the compiled single-solve strategy), each alone in its
process (the callees it shares with the others compiled there too), and ``all`` (the three in one process: shared
callees compiled once; the number a fresh clone pays), and ``lm_finish`` (the batches' polish in θ and fold test,
``lm_jit.polish_batch`` and ``lm_strategy_jit.fold_mask``: nothing in a tree without them). CPU time is the figure
to compare: on a loaded machine the wall time also counts the waits for a core.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks.harness import arguments

_CHILD = "--child"
CASES = ("lm_serial", "lm_lanes", "lm_packed", "all", "lm_finish")


def child(case: str) -> None:
    sys.path.insert(0, os.getcwd())
    import numba  # noqa: F401 - imported before the clock starts
    import numpy as np

    from animkit import jit
    from animkit.ik import lm_batch_jit, lm_jit, lm_strategy_jit

    assert jit.enabled()
    chain, s = lm_jit.tiny_chain()
    c0, t0 = time.process_time(), time.perf_counter()
    if case in ("lm_serial", "all"):
        for B in (1, 2):
            lm_jit.lm_serial(chain, s, np.zeros((B, 1)), np.ones((B, 3)), np.tile(np.eye(3), (B, 1, 1)), np.ones(6))
    if case in ("lm_lanes", "all"):
        for B in (1, 2):
            lm_batch_jit.lm_lanes(chain, s, np.zeros((B, 1)), np.ones((B, 3)), np.tile(np.eye(3), (B, 1, 1)),
                                  np.ones(6))
    if case in ("lm_packed", "all"):
        lm_strategy_jit.warm_up()
    if case == "lm_finish" and hasattr(lm_jit, "polish_batch"):  # the polish and the fold test of batches (none before)
        out = lm_jit.LoopOut(np.zeros((1, 1)), np.zeros(1, dtype=np.intp), np.ones(1, dtype=np.intp), np.ones(1),
                             np.ones(1), np.zeros((1, 4)))
        lm_jit.polish_batch(chain, s._replace(max_iter=3), np.ones((1, 3)), np.zeros((1, 3, 3)), False, np.ones(3), 2,
                            out)
        lm_strategy_jit.fold_mask(chain, np.zeros((1, 1)), np.ones((1, 3)), None, np.ones(3))
    print(json.dumps({"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - t0}))


def run(tree: str, case: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench_ik_compile_") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, ANIMKIT_JIT="1", PYTHONPATH=os.path.abspath(tree))
        out = subprocess.run([sys.executable, os.path.abspath(__file__), _CHILD, case], cwd=tree, env=env,
                             capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = arguments(__doc__, rounds=3)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--cases", default=",".join(CASES))
    a = ap.parse_args()
    cases = a.cases.split(",")
    got: dict[tuple[str, str], list[dict[str, float]]] = {}
    for r in range(a.rounds):
        for case in cases:
            for label, tree in (("before", a.before), ("after", a.after)):
                m = run(tree, case)
                got.setdefault((case, label), []).append(m)
                print(f"round {r + 1} {case:9s} {label:6s} cpu {m['cpu_s']:6.1f} s  wall {m['wall_s']:6.1f} s",
                      flush=True)
    print(f"\nmedians of {a.rounds} rounds (min-max), CPU seconds of compiling on an empty cache:")
    for case in cases:
        row = []
        for label in ("before", "after"):
            cpu = [m["cpu_s"] for m in got[(case, label)]]
            row.append(f"{label} {statistics.median(cpu):6.1f} ({min(cpu):.1f}-{max(cpu):.1f})")
        b = statistics.median(m["cpu_s"] for m in got[(case, "before")])
        af = statistics.median(m["cpu_s"] for m in got[(case, "after")])
        print(f"  {case:9s} " + "  ".join(row) + f"  after/before {af / b:.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == _CHILD:
        child(sys.argv[2])
    else:
        main()
