"""FABRIK against LM on the humanoid's arm: time per solve, success, and the upper arm's spin over bakes.

    python -m benchmarks.bench_fabrik --rounds 5      # from the repository root; writes results_fabrik.md

Protocol: 12 seeded reachable targets for ``hand_r`` on the ``arm`` chain (FK of the arm's DOFs drawn inside
their limits, 0.2 rad from them), each solved from the same start (rest, elbow bent 0.6 rad, shoulder 0.3 rad),
tol 1e-4 m. Time: interleaved rounds (LM, FABRIK(), FABRIK(published=False), …), each round all 12 solves, in this
process's CPU time (the machine is shared: wall time would count other work); medians with min–max, and the ratio to
LM's both of the medians and of the minima. Spin: bakes of 40 frames along the straight line from the start hand to
a target, each frame warm-started from the last; the upper arm's axial turn is the twist τ about the bone (0, −1, 0) of
R_{k−1}ᵀ R_k (its world rotation from one frame to the next, :func:`animkit.model.transforms.swing_twist_from_matrix`),
summed |τ| over the bake ("total") and of R_0ᵀ R_F ("net"): total − |net| is turn that went back and forth.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

import animkit
from animkit import jit
from animkit.ik import FABRIK, LM, IKProblem
from animkit.ik.methods import Solver
from animkit.model.chains import dof_indices
from animkit.model.transforms import swing_twist_from_matrix

from .harness import interleaved, ratio, write_results

ROOT = Path(__file__).resolve().parent.parent
BONE = (0.0, -1.0, 0.0)  # the upper arm's direction in its own frame (elbow_r's offset)


def arm_case() -> tuple[animkit.Scene, np.ndarray, list[np.ndarray]]:
    sc = animkit.load(ROOT / "scenes" / "humanoid.toml")
    fig = sc.figure
    start = fig.rest_pose()
    start[fig.dof_index("elbow_r.rx")] = -0.6
    start[fig.dof_index("shoulder_r.rx")] = -0.3
    idx = dof_indices(fig, "arm")
    lim = fig.dof_limits()[idx]
    rng = np.random.default_rng(3)
    targets = []
    for _ in range(12):
        q = start.copy()
        q[idx] = rng.uniform(np.maximum(lim[:, 0], -3.0) + 0.2, np.minimum(lim[:, 1], 3.0) - 0.2)
        targets.append(fig.world(q)["hand_r"][:3, 3])
    return sc, start, targets


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--bakes", type=int, default=4, help="targets baked for the spin measure")
    ap.add_argument("-o", "--output", type=Path, default=Path(__file__).with_name("results_fabrik.md"))
    args = ap.parse_args()
    jit.ALWAYS = True  # compiled from the first solve (a process otherwise starts on NumPy: fabrik.COMPILE_PAYS)
    sc, start, targets = arm_case()
    fig = sc.figure
    solvers: dict[str, Solver] = {"LM()": LM(), "FABRIK()": FABRIK(),
                                  "FABRIK(published=False)": FABRIK(published=False)}
    problems = {k: IKProblem(fig, "hand_r", "arm", solver=s, tol=1e-4) for k, s in solvers.items()}
    results = {k: [p.solve(t, start) for t in targets] for k, p in problems.items()}
    load0 = os.getloadavg()
    stats = interleaved({k: (lambda p=p: [p.solve(t, start) for t in targets]) for k, p in problems.items()},
                        rounds=args.rounds, timer=time.process_time)
    load1 = os.getloadavg()
    spins = {k: [bake_spin(p, start, t) for t in targets[:args.bakes]] for k, p in problems.items()}
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
        f"all {n} solves, interleaved.",
        "",
        "| solver | converged | median iterations | CPU ms per solve, median (min–max) | × LM's median | × LM's min |",
        "|---|---|---|---|---|---|",
    ]
    for k, st in stats.items():
        rs = results[k]
        lines.append(f"| {k} | {sum(r.converged for r in rs)}/{n} | {np.median([r.iterations for r in rs]):.1f} | "
                     f"{st.spread(1e3 / n)} | {1.0 / ratio(stats['LM()'], st):.1f}× | "
                     f"{st.low / stats['LM()'].low:.1f}× |")
    lines += ["", f"Upper arm's axial turn over {args.bakes} bakes of 40 frames (degrees, total / net; total − |net| "
              "went back and forth):", "", "| solver | " + " | ".join(f"bake {i}" for i in range(args.bakes)) +
              " | sum of totals |", "|---|" + "---|" * (args.bakes + 1)]
    for k, sp in spins.items():
        lines.append(f"| {k} | " + " | ".join(f"{a:.0f} / {b:.0f}" for a, b in sp) +
                     f" | {sum(a for a, _ in sp):.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    write_results(args.output, text)


if __name__ == "__main__":
    main()
