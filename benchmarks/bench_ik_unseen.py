"""IK success on arms it was not tuned on (issue 13 §6) and batched throughput (issue 14 goal 4).

    OMP_NUM_THREADS=1 flock /tmp/animkit-bench.lock python -m benchmarks.bench_ik_unseen

§6: 6D targets (FK of configurations drawn uniformly inside the limits, seed 0) on the Panda (7 axes) and the UR5
(6 axes) from one fixed, non-singular start each (the Panda's "ready" pose qr, the UR5's elbow-up home
(0, −π/2, π/2, −π/2, −π/2, 0)), and on the humanoid's arm and torso chains from its natural start (elbow and
shoulder slightly bent), default solver, no restarts. Success: position < 1e-4 m, orientation < 1e-3 rad, inside
the limits. Goal 4: the same Panda targets solved by ``IKProblem.solve_batch`` against a loop of
``IKProblem.solve``, and on a 50-DOF serial chain, interleaved rounds (medians, min–max); both compiled loops are
loaded before any timing (a process that only ever ran batches would otherwise solve single targets in NumPy, see
``lm.LM_JIT_MIN``). Below them, the two compiled loops alone on the same problems (the first run of every problem,
no retries): ``lm_jit.lm_serial`` one problem after another, ``lm_batch_jit.lm_lanes`` in lanes (the same
iteration, bit for bit). With random restarts (``--restarts``, 8): a loop of ``IKProblem.solve(restarts=8)`` (lm's
retries, then random starts one at a time), ``IKProblem.solve_batch(restarts=8)`` on the same 500 targets (random
starts in the lanes, in place of lm's retries) and on ``--big`` (4,000) targets (seed + 1), which spreads the batch's
fixed costs (checking the targets, the reachability test of the few left unconverged) over more problems.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable

import numpy as np

import animkit
from animkit.ik import IKBatchResult, IKProblem, IKResult, rotation_error
from animkit.model.figure import Figure
from animkit.model.joints import hinge

from .bench_ik import DATA, ROOT, load_robot
from .harness import arguments, interleaved

POS_OK, ORI_OK = 1e-4, 1e-3


def _targets(fig: Figure, eff: str, dofs: np.ndarray, start: np.ndarray, n: int, seed: int) -> np.ndarray:
    lim = fig.dof_limits()
    lo = np.where(np.isfinite(lim[dofs, 0]), lim[dofs, 0], -math.pi)
    hi = np.where(np.isfinite(lim[dofs, 1]), lim[dofs, 1], math.pi)
    rng = np.random.default_rng(seed)
    poses = np.repeat(start[None], n, 0)
    poses[:, dofs] = rng.uniform(lo, hi, size=(n, len(dofs)))
    return np.array([fig.world(p)[eff] for p in poses])


def _ok(fig: Figure, eff: str, pose: np.ndarray, T: np.ndarray) -> bool:
    lim = fig.dof_limits()
    if np.any(pose < lim[:, 0] - 1e-9) or np.any(pose > lim[:, 1] + 1e-9):
        return False
    W = fig.world(pose)[eff]
    return bool(np.linalg.norm(W[:3, 3] - T[:3, 3]) < POS_OK
                and np.linalg.norm(rotation_error(T[:3, :3], W[:3, :3])) < ORI_OK)


def snake(n: int) -> Figure:
    """n hinges alternating about z and y, 0.05 apart, limits ±2: a long redundant serial chain."""
    fig = Figure("base")
    parent = "base"
    for k in range(n):
        name = f"l{k}"
        fig.add(name, parent, offset=(0.05 if k else 0.0, 0.0, 0.0),
                joint=hinge(f"j{k}", "z" if k % 2 == 0 else "y", limits=(-2.0, 2.0)))
        parent = name
    fig.add("tip", parent, offset=(0.05, 0.0, 0.0))
    return fig


def _kernel_runs(problem: IKProblem, T: np.ndarray
                 ) -> tuple[Callable[[], object], Callable[[], object], float, float]:
    """The first run of every target by each compiled loop alone (what run_lm hands them), and the shares that
    converged (serial, lanes); the lanes with the library's trig (poly=False) must agree with the serial loop bit for
    bit; the timed lanes use the polynomial trig (the default)."""
    from animkit.ik.lm import loop_chain, loop_settings, serial_chain
    from animkit.ik.lm_batch_jit import lm_lanes
    from animkit.ik.lm_jit import lm_serial

    ch, opts = serial_chain(problem.model), problem._opts
    q0 = np.repeat(problem.pose[problem.model.dofs][None], len(T), 0)
    args = (loop_chain(ch, opts), loop_settings(opts), q0, np.ascontiguousarray(T[:, :3, 3]),
            np.ascontiguousarray(T[:, :3, :3]), opts.row_weights)
    a, b = lm_serial(*args), lm_lanes(*args, poly=False)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True)), "lanes and serial loop disagree"
    c = lm_lanes(*args)
    return ((lambda: lm_serial(*args)), (lambda: lm_lanes(*args)),
            float(np.mean(a[2] == 0)), float(np.mean(c[2] == 0)))


def _same_answers(batch: IKBatchResult, singles: list[IKResult]) -> bool:
    return all(batch.reason[i] == r.reason and batch.reachable[i] == r.reachable for i, r in enumerate(singles))


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, rounds=7)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--restarts", type=int, default=8, help="random restarts of the batch (and loop) with restarts")
    ap.add_argument("--big", type=int, default=4000, help="targets of the large batch (one chunk: ≤ BATCH_CHUNK)")
    args = ap.parse_args(argv)
    from animkit.ik import lm_batch_jit, lm_jit

    lm_jit.warm_up()
    lm_batch_jit.warm_up()
    cases = []
    panda = load_robot(DATA / "franka_panda.urdf")
    lim = panda.dof_limits()
    s = np.clip(np.zeros(panda.dof_count), lim[:, 0], lim[:, 1])
    for k, v in enumerate([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, math.pi / 4]):
        s[panda.dof_index(f"panda_joint{k + 1}")] = v
    cases.append(("Panda (7 axes)", panda, "panda_grasptarget", "arm", s))
    ur5 = load_robot(DATA / "ur5_robot.urdf")
    s = ur5.rest_pose()
    for name, v in zip(("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
                        "wrist_3_joint"), (0.0, -math.pi / 2, math.pi / 2, -math.pi / 2, -math.pi / 2, 0.0),
                       strict=True):
        s[ur5.dof_index(name)] = v
    cases.append(("UR5 (6 axes)", ur5, "ee_link", "arm", s))
    hum = animkit.load(ROOT / "scenes" / "humanoid.toml").figure
    s = hum.rest_pose()
    s[hum.dof_index("elbow_r.rx")] = -0.6
    s[hum.dof_index("shoulder_r.rx")] = -0.3
    cases += [("humanoid arm", hum, "hand_r", "arm", s), ("humanoid torso", hum, "hand_r", "torso", s)]
    print(f"§6: {args.n} 6D targets per case (seed {args.seed}), one fixed start, default solver (LM()), "
          "no restarts\n")
    print("| case | success (1e-4 m, 1e-3 rad, limits) | mean iterations |")
    print("|---|---|---|")
    panda_case = None
    for label, fig, eff, chain, start in cases:
        problem = IKProblem(fig, eff, chain, pose=start, orientation=True)
        T = _targets(fig, eff, problem.model.dofs, start, args.n, args.seed)
        b = problem.solve_batch(T, quiet=True)
        ok = np.mean([_ok(fig, eff, b.poses[i], T[i]) for i in range(len(T))])
        print(f"| {label} | {100 * ok:.1f} % | {b.iterations.mean():.1f} |")
        if panda_case is None:
            panda_case = (problem, T)
    assert panda_case is not None
    problem, T = panda_case
    snake_fig = snake(50)
    sp = IKProblem(snake_fig, "tip", None, pose=snake_fig.rest_pose() + 0.1, orientation=True)
    ST = _targets(snake_fig, "tip", sp.model.dofs, sp.pose, 100, args.seed)
    singles = [problem.solve(t) for t in T]
    batch = problem.solve_batch(T, quiet=True)
    k = args.restarts
    fig_p, eff_p = cases[0][1], cases[0][2]
    big = _targets(fig_p, eff_p, problem.model.dofs, problem.pose, args.big, args.seed + 1)
    rbatch = problem.solve_batch(T, restarts=k, quiet=True)
    rbig = problem.solve_batch(big, restarts=k, quiet=True)
    rsingles = [problem.solve(t, restarts=k) for t in T]

    def common(poses: np.ndarray, TT: np.ndarray) -> float:  # the §6 test, by the figure's own FK
        return float(np.mean([_ok(fig_p, eff_p, poses[i], TT[i]) for i in range(len(TT))]))
    s_single = [sp.solve(t) for t in ST]
    s_batch = sp.solve_batch(ST, quiet=True)
    k_panda, k_snake = _kernel_runs(problem, T), _kernel_runs(sp, ST)
    cases_t = {
        "Panda 6D: loop of IKProblem.solve": lambda: [problem.solve(t) for t in T],
        "Panda 6D: IKProblem.solve_batch": lambda: problem.solve_batch(T, quiet=True),
        f"Panda 6D: loop of IKProblem.solve(restarts={k})": lambda: [problem.solve(t, restarts=k) for t in T],
        f"Panda 6D: IKProblem.solve_batch(restarts={k})": lambda: problem.solve_batch(T, restarts=k, quiet=True),
        f"Panda 6D, {args.big:,} targets: IKProblem.solve_batch(restarts={k})":
            lambda: problem.solve_batch(big, restarts=k, quiet=True),
        "50-DOF chain 6D: loop of IKProblem.solve": lambda: [sp.solve(t) for t in ST],
        "50-DOF chain 6D: IKProblem.solve_batch": lambda: sp.solve_batch(ST, quiet=True),
        "Panda 6D, first run: lm_serial": k_panda[0],
        "Panda 6D, first run: lm_lanes": k_panda[1],
        "50-DOF chain 6D, first run: lm_serial": k_snake[0],
        "50-DOF chain 6D, first run: lm_lanes": k_snake[1],
    }
    both = [(b.converged[i] and r.converged, b.poses[i] - r.pose) for bb, ss in ((batch, singles), (s_batch, s_single))
            for b, i, r in ((bb, i, r) for i, r in enumerate(ss))]
    same = max((float(np.abs(d).max()) for ok, d in both if ok), default=0.0)
    differ = sum(b.reason[i] != r.reason or b.reachable[i] != r.reachable
                 for b, ss in ((batch, singles), (s_batch, s_single)) for i, r in enumerate(ss))
    print(f"\nGoal 4 (batched): {len(T)} Panda targets, 100 targets on a 50-hinge chain. The batch's poses against the "
          f"loop's where both converge: max |Δθ| = {same:.1e} rad (the lanes' polynomial sines move where a run stops "
          f"inside the tolerance); reasons or reachability differ on {differ} of {len(T) + len(ST)} targets. The "
          f"lanes with the library's sines (poly=False) checked bit for bit against lm_serial.")
    print(f"\nRandom restarts ({k}): success by the §6 test (the figure's FK: 1e-4 m, 1e-3 rad, limits): loop of "
          f"single solves {100 * common(np.array([r.pose for r in rsingles]), T):.1f} %, the batch "
          f"{100 * common(rbatch.poses, T):.1f} %, the {args.big:,}-target batch "
          f"{100 * common(rbig.poses, big):.1f} %; "
          f"without restarts: single solves {100 * common(np.array([r.pose for r in singles]), T):.1f} %, the batch "
          f"{100 * common(batch.poses, T):.1f} %. Random starts run by the batch: {int(rbatch.restarts_used.sum())} "
          f"({int((rbatch.restarts_used > 0).sum())} of {len(T)} problems).")
    rows = [("Panda 6D: loop of IKProblem.solve", np.mean([r.converged for r in singles]), len(T), None),
            ("Panda 6D: IKProblem.solve_batch", batch.converged.mean(), len(T), "Panda 6D: loop of IKProblem.solve"),
            (f"Panda 6D: loop of IKProblem.solve(restarts={k})", np.mean([r.converged for r in rsingles]), len(T),
             None),
            (f"Panda 6D: IKProblem.solve_batch(restarts={k})", rbatch.converged.mean(), len(T),
             f"Panda 6D: loop of IKProblem.solve(restarts={k})"),
            (f"Panda 6D, {args.big:,} targets: IKProblem.solve_batch(restarts={k})", rbig.converged.mean(),
             len(big), f"Panda 6D: loop of IKProblem.solve(restarts={k})"),
            ("50-DOF chain 6D: loop of IKProblem.solve", np.mean([r.converged for r in s_single]), len(ST), None),
            ("50-DOF chain 6D: IKProblem.solve_batch", s_batch.converged.mean(), len(ST),
             "50-DOF chain 6D: loop of IKProblem.solve"),
            ("Panda 6D, first run: lm_serial", k_panda[2], len(T), None),
            ("Panda 6D, first run: lm_lanes", k_panda[3], len(T), "Panda 6D, first run: lm_serial"),
            ("50-DOF chain 6D, first run: lm_serial", k_snake[2], len(ST), None),
            ("50-DOF chain 6D, first run: lm_lanes", k_snake[3], len(ST), "50-DOF chain 6D, first run: lm_serial")]
    for clock, timer in (("wall-clock time", time.perf_counter), ("CPU time of this thread (time.thread_time: "
                                                                  "time spent waiting for a core on a loaded "
                                                                  "machine left out)", time.thread_time)):
        stats = interleaved(cases_t, rounds=args.rounds, timer=timer)
        print(f"\n{clock}; {args.rounds} rounds, interleaved; solves/s from the median round (min–max of the time "
              "per solve)\n")
        print("| case | converged | µs per solve, median (min–max) | solves/s | batch vs loop |")
        print("|---|---|---|---|---|")
        count = {name: k for name, _, k, _ in rows}
        for name, conv, k, ref in rows:
            st = stats[name]  # the ratio of the times per solve (the large batch has more problems than its loop)
            ratio = f"{stats[ref].median / count[ref] / (st.median / k):.2f}×" if ref else "–"
            print(f"| {name} | {100 * conv:.1f} % | {st.median / k * 1e6:.1f} ({st.low / k * 1e6:.1f}–"
                  f"{st.high / k * 1e6:.1f}) | {k / st.median:,.0f} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
