"""Two checkouts of animkit, interleaved: the reused Panda 6D ``IKProblem.solve`` and ``solve_batch(restarts=8)``.

    git worktree add /tmp/lm-before 553ed37
    python -m benchmarks.bench_ik_revisions /tmp/lm-before . --rounds 5
    python -m benchmarks.bench_ik_revisions /tmp/lm-before . --rounds 5 --numpy 10000

``--phases`` also reports the thread's CPU time per solve that the batch with restarts spends after its runs (the
fold escapes and the reachability test: ``ik_problem``'s ``settle``/``_escape_folds`` and ``_reachability``, timed
by wrapping them), ``tests_cpu_us``.

``--numpy N`` times the NumPy strategy instead (ANIMKIT_JIT=0 in the children): one ``solve_batch(restarts=8)`` of
N Panda 6D targets (the same generator, seed 0), its wall and CPU time per solve and its §6 success; with
``--restarts 0`` the batch runs lm's deterministic retries (the relaxed limits and the continuations) instead.

Each round runs this file in one fresh process per checkout (its folder first on the path), A then B (so a slow
spell hits both alike): it compiles or loads the kernels, solves the 200 §6 Panda targets (seed 0, those of
`bench_ik_unseen`) once untimed, then times three passes of the loop of single solves and of the batch with 8
random restarts and reports their medians (wall clock, and the thread's CPU time: on a loaded machine the time spent
waiting for a core is left out), with the §6 success of the batch. Printed: per-round numbers, each
case's median over rounds (min–max), and the median of the per-round ratios after/before (a paired measure that
the machine's drifting load blurs less).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time

from benchmarks.harness import arguments

_CHILD = "--child"


def child() -> None:
    sys.path.insert(0, os.getcwd())
    if os.environ.get("BENCH_NUMPY"):
        numpy_child(int(os.environ["BENCH_NUMPY"]), int(os.environ.get("BENCH_RESTARTS", "8")))
        return
    import numpy as np

    from animkit.ik import IKProblem, lm_batch_jit, lm_jit
    from benchmarks.bench_ik import DATA, load_robot
    from benchmarks.bench_ik_unseen import _ok, _targets

    lm_jit.warm_up()
    lm_batch_jit.warm_up()
    panda = load_robot(DATA / "franka_panda.urdf")
    lim = panda.dof_limits()
    s = np.clip(np.zeros(panda.dof_count), lim[:, 0], lim[:, 1])
    for k, v in enumerate([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, math.pi / 4]):
        s[panda.dof_index(f"panda_joint{k + 1}")] = v
    problem = IKProblem(panda, "panda_grasptarget", "arm", pose=s, orientation=True)
    T = _targets(panda, "panda_grasptarget", problem.model.dofs, s, 200, 0)
    [problem.solve(t) for t in T]
    rb = problem.solve_batch(T, restarts=8, quiet=True)
    tests = _time_tests() if os.environ.get("BENCH_PHASES") else None
    single, batch, single_cpu, batch_cpu = [], [], [], []
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.thread_time()
        [problem.solve(t) for t in T]
        single.append((time.perf_counter() - t0) / len(T))
        single_cpu.append((time.thread_time() - c0) / len(T))
        t0, c0 = time.perf_counter(), time.thread_time()
        if tests is not None:
            tests[0] = 0.0
        problem.solve_batch(T, restarts=8, quiet=True)
        if tests is not None:
            tests[1].append(tests[0] / len(T))
        batch.append((time.perf_counter() - t0) / len(T))
        batch_cpu.append((time.thread_time() - c0) / len(T))
    ok = float(np.mean([_ok(panda, "panda_grasptarget", rb.poses[i], T[i]) for i in range(len(T))]))
    res = {"single_us": statistics.median(single) * 1e6, "batch_us": statistics.median(batch) * 1e6,
           "single_cpu_us": statistics.median(single_cpu) * 1e6, "batch_cpu_us": statistics.median(batch_cpu) * 1e6,
           "ok": ok}
    if tests is not None:
        res["tests_cpu_us"] = statistics.median(tests[1]) * 1e6
    print(json.dumps(res))


def _time_tests() -> list:
    """Wrap ik_problem's post-run steps (settle or _escape_folds, _reachability: whichever this checkout has) to sum
    their thread CPU time into slot 0 of the returned [seconds, per-batch list]."""
    from animkit.ik import ik_problem

    acc: list = [0.0, []]

    def timed(fn):  # type: ignore[no-untyped-def]
        def run(*a, **k):  # type: ignore[no-untyped-def]
            c = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                acc[0] += time.thread_time() - c
        return run

    for name in ("settle", "_escape_folds", "_reachability"):
        if hasattr(ik_problem, name):
            setattr(ik_problem, name, timed(getattr(ik_problem, name)))
    return acc


def numpy_child(count: int, restarts: int) -> None:
    """One NumPy ``solve_batch(restarts=…)`` of ``count`` Panda 6D targets (the child runs with ANIMKIT_JIT=0)."""
    import numpy as np

    from animkit.ik import IKProblem
    from benchmarks.bench_ik import DATA, load_robot
    from benchmarks.bench_ik_unseen import _ok, _targets

    panda = load_robot(DATA / "franka_panda.urdf")
    lim = panda.dof_limits()
    s = np.clip(np.zeros(panda.dof_count), lim[:, 0], lim[:, 1])
    for k, v in enumerate([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, math.pi / 4]):
        s[panda.dof_index(f"panda_joint{k + 1}")] = v
    problem = IKProblem(panda, "panda_grasptarget", "arm", pose=s, orientation=True)
    T = _targets(panda, "panda_grasptarget", problem.model.dofs, s, count, 0)
    problem.solve_batch(T[:50], restarts=restarts, quiet=True)  # imports and first calls
    t0, c0 = time.perf_counter(), time.thread_time()
    rb = problem.solve_batch(T, restarts=restarts, quiet=True)
    wall, cpu = (time.perf_counter() - t0) / len(T), (time.thread_time() - c0) / len(T)
    ok = float(np.mean([_ok(panda, "panda_grasptarget", rb.poses[i], T[i]) for i in range(len(T))]))
    iters = int(np.sum(rb.iterations))
    print(json.dumps({"single_us": math.nan, "batch_us": wall * 1e6, "single_cpu_us": math.nan,
                      "batch_cpu_us": cpu * 1e6, "ok": ok, "iterations": iters}))


def main() -> None:
    ap = arguments(__doc__)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--phases", action="store_true", help="also time the batch's steps after its runs")
    ap.add_argument("--numpy", type=int, default=0, help="time the NumPy strategy on this many targets instead")
    ap.add_argument("--restarts", type=int, default=8, help="--numpy: the batch's restarts (0: lm's retries run)")
    args = ap.parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if args.phases:
        env["BENCH_PHASES"] = "1"
    if args.numpy:
        env.update(ANIMKIT_JIT="0", BENCH_NUMPY=str(args.numpy), BENCH_RESTARTS=str(args.restarts))
    dirs = {"before": args.before, "after": args.after}
    res: dict[str, list[dict[str, float]]] = {k: [] for k in dirs}
    print("load average", os.getloadavg()[0], flush=True)
    for r in range(args.rounds):
        for k, d in dirs.items():
            out = subprocess.run([sys.executable, __file__, _CHILD], cwd=d,
                                 capture_output=True, text=True, env=env,
                                 check=True)
            res[k].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(r, k, res[k][-1], flush=True)
    print("load average", os.getloadavg()[0])
    for k, v in res.items():
        s = [x["single_us"] for x in v]
        b = [x["batch_us"] for x in v]
        c = [x["batch_cpu_us"] for x in v]
        head = f"NumPy batch of {args.numpy}, restarts={args.restarts}" if args.numpy else \
            f"reused solve {statistics.median(s):.1f} µs ({min(s):.1f}–{max(s):.1f}); batch restarts=8"
        print(f"{k}: {head} {1e6 / statistics.median(b):,.0f}/s ({1e6 / max(b):,.0f}–{1e6 / min(b):,.0f}), CPU "
              f"{1e6 / statistics.median(c):,.0f}/s; §6 success {100 * v[0]['ok']:.1f} %"
              + (f"; iterations {v[0]['iterations']}" if "iterations" in v[0] else ""))
    cases = ("batch_us", "batch_cpu_us") if args.numpy else ("single_us", "batch_us", "single_cpu_us", "batch_cpu_us")
    for case in cases + (("tests_cpu_us",) if args.phases else ()):
        ratios = [a[case] / b[case] for a, b in zip(res["after"], res["before"], strict=True)]
        print(f"{case}: after/before per round, median {statistics.median(ratios):.2f} "
              f"({min(ratios):.2f}–{max(ratios):.2f})")


if __name__ == "__main__":
    if _CHILD in sys.argv:
        child()
    else:
        main()
