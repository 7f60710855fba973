"""FABRIK against LM on the humanoid's arm: time per solve, success, and the upper arm's spin over bakes.

    python -m benchmarks.bench_fabrik --rounds 7      # from the repository root; writes results_fabrik.md

Protocol: 12 seeded reachable targets for ``hand_r`` on the ``arm`` chain (``tests.ik_helpers.arm_targets``: FK of
the arm's DOFs drawn inside their limits, 0.2 rad from them), each solved from the same start (rest, elbow bent
0.6 rad, shoulder 0.3 rad), tol 1e-4 m, the same success test for every solver (``IKResult.converged``: the hand
within tol), each solver's default iteration cap. Two calls, each timed for every solver: ``solve(t)`` on a problem
posed at the start (``IKProblem(..., pose=start)``: the call that takes LM's and FABRIK's packed compiled paths,
their fastest) and
``solve(t, start)`` on a problem posed at rest (the start given: every solver's checked path). Time: interleaved
rounds (every case once a round, in the same order), each round all 12 solves, in this process's CPU time (the
machine is shared: wall time would count other work); medians with min–max, and the ratio to LM's (same call) both
of the medians and of the minima. Spin: bakes of 40 frames along the straight line from the start hand to a target,
each frame warm-started from the last; the upper arm's axial turn is the twist τ about the bone (0, −1, 0) of
R_{k−1}ᵀ R_k (its world rotation from one frame to the next, :func:`animkit.model.transforms.swing_twist_from_matrix`),
summed |τ| over the bake ("total") and of R_0ᵀ R_F ("net"): total − |net| is turn that went back and forth.

    python -m benchmarks.bench_fabrik --against /tmp/before --rounds 7      # two trees, interleaved; writes nothing

``--against TREE``: the same cases in two child processes, one on this tree's animkit and one on TREE's (each
started once, its kernels loaded and every case run once untimed), asked for one round each in turn (this tree,
TREE, this tree, …): each case's CPU µs per solve, median (min–max), its ratio to LM's in the same tree, the
median of the per-round ratios this tree / TREE, and whether the two trees give the same answers (iterations,
converged, the largest pose difference).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import animkit
from animkit import jit
from animkit.ik import FABRIK, LM, IKProblem, IKResult
from animkit.ik.methods import Solver
from animkit.model.transforms import swing_twist_from_matrix
from benchmarks.harness import Stats, interleaved, stats_of, write_results
from tests.ik_helpers import arm_targets, load

BONE = (0.0, -1.0, 0.0)  # the upper arm's direction in its own frame (elbow_r's offset)
CALLS = ("solve(t)", "solve(t, start)")


def axial_turn(fig: animkit.Figure, poses: list[np.ndarray]) -> tuple[float, float]:
    """(total, net) axial turn of the upper arm in degrees over a sequence of poses (module docstring)."""
    Ws = [fig.world(q)["shoulder_r"][:3, :3] for q in poses]
    total = sum(abs(float(swing_twist_from_matrix(a.T @ b, BONE)[1])) for a, b in zip(Ws, Ws[1:], strict=False))
    net = float(swing_twist_from_matrix(Ws[0].T @ Ws[-1], BONE)[1])
    return float(np.degrees(total)), float(np.degrees(net))


def bake_spin(problem: IKProblem, start: np.ndarray, target: np.ndarray, frames: int = 40) -> tuple[float, float]:
    fig = problem.figure
    h0 = fig.world(start)["hand_r"][:3, 3]
    path = h0 + np.linspace(0.0, 1.0, frames)[:, None] * (target - h0)
    return axial_turn(fig, [start, *problem.bake(path, start).poses])


def _table(stats: dict[str, Stats], results: dict[str, list[IKResult]], n: int) -> list[str]:
    """One row per solver and call: converged, iterations, CPU time per solve and its ratios to LM's (same call)."""
    lines = ["| solver | call | converged | median iterations | CPU µs per solve, median (min–max) | × LM's median "
             "| × LM's min |", "|---|---|---|---|---|---|---|"]
    for call in CALLS:
        lm = stats[f"LM() {call}"]
        for k, st in stats.items():
            if not k.endswith(f" {call}"):
                continue
            rs = results[k]
            lines.append(f"| {k[:-len(call) - 1]} | `{call}` | {sum(r.converged for r in rs)}/{n} | "
                         f"{np.median([r.iterations for r in rs]):.1f} | {st.spread(1e6 / n)} | "
                         f"{st.median / lm.median:.2f}× | {st.low / lm.low:.2f}× |")
    return lines


def _cases(fig: animkit.Figure, start: np.ndarray, targets: list[np.ndarray]
           ) -> tuple[dict[str, IKProblem], dict[str, Callable[[], list[IKResult]]]]:
    """The problems posed at rest (for the bakes) and the timed cases: each solver's two calls over the targets."""
    solvers: dict[str, Solver] = {"LM()": LM(), "FABRIK()": FABRIK(),
                                  "FABRIK(published=False)": FABRIK(published=False)}
    posed = {k: IKProblem(fig, "hand_r", "arm", solver=s, tol=1e-4, pose=start) for k, s in solvers.items()}
    rest = {k: IKProblem(fig, "hand_r", "arm", solver=s, tol=1e-4) for k, s in solvers.items()}
    cases = {**{f"{k} {CALLS[0]}": (lambda p=p: [p.solve(t) for t in targets]) for k, p in posed.items()},
             **{f"{k} {CALLS[1]}": (lambda p=p: [p.solve(t, start) for t in targets]) for k, p in rest.items()}}
    return rest, cases


def _child() -> None:
    """``--against``'s worker: this process's animkit (the tree in PYTHONPATH), the cases run once, their answers
    printed as one JSON line; then each line "round" on stdin times every case once (CPU s per case, one JSON line)."""
    jit.ALWAYS = True
    sc = load("humanoid")
    start, targets = arm_targets(sc)
    _, cases = _cases(sc.figure, start, targets)
    results = {k: fn() for k, fn in cases.items()}
    print(json.dumps({k: [[r.iterations, bool(r.converged), r.pose.tolist()] for r in rs]
                      for k, rs in results.items()}), flush=True)
    for line in sys.stdin:
        if line.strip() != "round":
            break
        out = {}
        for k, fn in cases.items():
            t0 = time.process_time()
            fn()
            out[k] = time.process_time() - t0
        print(json.dumps(out), flush=True)


def _against(tree: Path, rounds: int) -> None:
    """Interleaved A/B of this tree against ``tree`` (module docstring); prints a markdown report."""
    here = Path(__file__).resolve().parents[1]
    kids = {}
    for name, root in (("this tree", here), ("against", tree.resolve())):
        env = {**os.environ, "PYTHONPATH": str(root)}
        kids[name] = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child"], cwd=root, env=env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    answers = {name: json.loads(k.stdout.readline()) for name, k in kids.items()}  # type: ignore[union-attr]
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in kids}
    load0 = os.getloadavg()
    for _ in range(rounds):
        for name, k in kids.items():
            k.stdin.write("round\n")  # type: ignore[union-attr]
            k.stdin.flush()  # type: ignore[union-attr]
            for case, sec in json.loads(k.stdout.readline()).items():  # type: ignore[union-attr]
                samples[name].setdefault(case, []).append(sec)
    load1 = os.getloadavg()
    for k in kids.values():
        k.communicate("stop\n")
    n = len(next(iter(answers["this tree"].values())))
    print(f"this tree {here} against {tree}: {rounds} rounds interleaved, CPU µs per solve ({n} targets); load "
          f"average {load0[0]:.1f} before, {load1[0]:.1f} after; {os.cpu_count()} CPUs\n")
    print("| case | this tree | against | this / against (median of per-round ratios) | × LM's here | × LM's there "
          "| same iterations, converged | largest pose difference |\n|---|---|---|---|---|---|---|---|")
    for case in samples["this tree"]:
        a, b = (stats_of(case, samples[name][case]) for name in kids)
        lm = [stats_of(case, samples[name][f"LM() {case.split(' ', 1)[1]}"]) for name in kids]
        paired = statistics.median(x / y for x, y in zip(a.samples, b.samples, strict=True))
        ra, rb = answers["this tree"][case], answers["against"][case]
        same = all(x[0] == y[0] and x[1] == y[1] for x, y in zip(ra, rb, strict=True))
        dq = max(float(np.abs(np.subtract(x[2], y[2])).max()) for x, y in zip(ra, rb, strict=True))
        print(f"| {case} | {a.spread(1e6 / n)} | {b.spread(1e6 / n)} | {paired:.3f} | "
              f"{a.median / lm[0].median:.2f}× | {b.median / lm[1].median:.2f}× | {same} | {dq:.1e} |")


def main() -> None:
    if sys.argv[1:] == ["--child"]:
        _child()
        return
    from benchmarks.harness import arguments  # here: a child run in an older tree (--against) imports its harness

    ap = arguments(__doc__, rounds=7, against="optional", out=Path(__file__).with_name("results_fabrik.md"))
    ap.add_argument("--bakes", type=int, default=4, help="targets baked for the spin measure")
    args = ap.parse_args()
    if args.against is not None:
        _against(args.against, args.rounds)
        return
    jit.ALWAYS = True  # compiled from the first solve (a process otherwise starts on NumPy: fabrik.COMPILE_PAYS)
    sc = load("humanoid")
    start, targets = arm_targets(sc)
    fig = sc.figure
    rest, cases = _cases(fig, start, targets)
    solvers = list(rest)
    results = {k: fn() for k, fn in cases.items()}
    for k in solvers:  # the two calls solve the same problems: the same answers
        a, b = results[f"{k} {CALLS[0]}"], results[f"{k} {CALLS[1]}"]
        assert all(x.iterations == y.iterations and np.allclose(x.pose, y.pose, atol=1e-12)
                   for x, y in zip(a, b, strict=True))
    load0 = os.getloadavg()
    stats = interleaved(cases, rounds=args.rounds, timer=time.process_time)
    load1 = os.getloadavg()
    spins = {k: [bake_spin(p, start, t) for t in targets[:args.bakes]] for k, p in rest.items()}
    n = len(targets)
    lines = [
        "# FABRIK against LM on the humanoid arm",
        "",
        f"`python -m benchmarks.bench_fabrik --rounds {args.rounds} --bakes {args.bakes}` on "
        f"{platform.machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
        f"{load0[0]:.1f} before the timed rounds and {load1[0]:.1f} after (2 cores shared with other work: "
        "ratios are of the same interleaved run).",
        "",
        f"{n} reachable targets for `hand_r` on `arm` from one start, tol 1e-4 m; time per solve from rounds of "
        f"all {n} solves, the {len(cases)} cases interleaved. `solve(t)`: the problem posed at the start (LM's and "
        "FABRIK's packed compiled paths); `solve(t, start)`: the start given (every solver's checked path).",
        "",
        *_table(stats, results, n),
        "", f"Upper arm's axial turn over {args.bakes} bakes of 40 frames (degrees, total / net; total − |net| "
        "went back and forth):", "", "| solver | " + " | ".join(f"bake {i}" for i in range(args.bakes)) +
        " | sum of totals |", "|---|" + "---|" * (args.bakes + 1)]
    for k, sp in spins.items():
        lines.append(f"| {k} | " + " | ".join(f"{a:.0f} / {b:.0f}" for a, b in sp) +
                     f" | {sum(a for a, _ in sp):.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    write_results(args.out, text)


if __name__ == "__main__":
    main()
