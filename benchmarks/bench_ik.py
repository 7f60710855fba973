"""IK benchmark: animkit's solvers on two real arms (Franka Panda, UR5) and the humanoid's chains, against ikpy.

    python -m benchmarks.bench_ik                      # from the repository root; ikpy if importable
    .bench-venv/bin/python -m benchmarks.bench_ik      # the venv of benchmarks/requirements-ik.txt has ikpy

Protocol: 500 seeded reachable targets per case (FK of configurations drawn uniformly inside the limits),
one fixed start pose (the zero pose clipped into the limits), position-only and 6D tasks. A solve succeeds when
the position error is < 1e-4 m, the orientation error < 1e-3 rad and every joint is inside its limits. Reported:
success rate, median and p95 time per solve (single solves), batched throughput (all targets in one
``solve_batch``), the TRAC-IK protocol (random restarts inside a 5 ms budget per target) and ikpy on the same
targets in the same run.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import animkit
from animkit.ik import rotation_error, solve, solve_batch
from animkit.io.urdf import MissingMeshWarning
from animkit.model.figure import Figure

ROOT = Path(__file__).resolve().parent.parent

DATA = Path(__file__).resolve().parent / "data"
POS_OK, ORI_OK = 1e-4, 1e-3


def load_robot(path: Path) -> Figure:
    """A URDF's figure through ``animkit.load`` (its rig holds ``arm`` = the trunk's movable joints)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingMeshWarning)  # the benchmark draws nothing
        scene = animkit.load(path)
    return scene.figure


# --- cases ------------------------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    figure: Figure
    effector: str
    chain: object  # chain name of the figure's rig / joint names / None
    urdf: Path | None
    start: np.ndarray
    dofs: np.ndarray
    targets: np.ndarray  # (n, 4, 4)


def make_case(name: str, fig: Figure, effector: str, chain, urdf, n: int, seed: int) -> Case:
    from animkit.model.chains import dof_indices

    lim = fig.dof_limits()
    start = np.clip(np.zeros(fig.dof_count), lim[:, 0], lim[:, 1])
    idx = dof_indices(fig, chain, effector=effector)
    rng = np.random.default_rng(seed)
    lo = np.where(np.isfinite(lim[idx, 0]), lim[idx, 0], -math.pi)
    hi = np.where(np.isfinite(lim[idx, 1]), lim[idx, 1], math.pi)
    poses = np.repeat(start[None], n, 0)
    poses[:, idx] = rng.uniform(lo, hi, size=(n, len(idx)))
    c = fig.compiled
    k = c.node_names.index(effector)
    from animkit.model.fk import world_batch

    targets = world_batch(c, poses)[:, k]
    return Case(name, fig, effector, chain, urdf, start, idx, targets)


def check(case: Case, pose: np.ndarray, target: np.ndarray, six: bool) -> bool:
    lim = case.figure.dof_limits()
    if np.any(pose < lim[:, 0] - 1e-9) or np.any(pose > lim[:, 1] + 1e-9) or not np.all(np.isfinite(pose)):
        return False
    W = case.figure.world(pose)[case.effector]
    if np.linalg.norm(W[:3, 3] - target[:3, 3]) >= POS_OK:
        return False
    return not six or float(np.linalg.norm(rotation_error(target[:3, :3], W[:3, :3]))) < ORI_OK


@dataclass
class Row:
    case: str
    task: str
    method: str
    success: float
    median_ms: float
    p95_ms: float
    throughput: float
    note: str = ""


def run_single(case: Case, six: bool, **kw) -> tuple[Row, list[bool]]:
    T0 = case.targets[0]
    solve(case.figure, case.start, case.effector, T0 if six else T0[:3, 3], chain=case.chain)
    times, ok = [], []  # after one warm-up solve (the compiled loop loads, or compiles, once per process)
    for T in case.targets:
        t0 = time.perf_counter()
        r = solve(case.figure, case.start, case.effector, T if six else T[:3, 3], chain=case.chain,
                  tol=1e-5, orientation_tol=1e-4, **kw)
        times.append(time.perf_counter() - t0)
        ok.append(check(case, r.pose, T, six))
    t = np.array(times) * 1e3
    label = "animkit lm" + (f" + restarts ({kw['time_budget'] * 1e3:g} ms budget)" if "restarts" in kw else "")
    return Row(case.name, "6D" if six else "position", label, 100 * np.mean(ok), float(np.median(t)),
               float(np.percentile(t, 95)), 1e3 / float(np.mean(t))), ok


def run_batch(case: Case, six: bool) -> Row:
    T = case.targets if six else case.targets[:, :3, 3]
    solve_batch(case.figure, case.start, case.effector, T[:8], chain=case.chain)  # warm-up
    t0 = time.perf_counter()
    b = solve_batch(case.figure, case.start, case.effector, T, chain=case.chain, tol=1e-5,
                    orientation_tol=1e-4)
    dt = time.perf_counter() - t0
    ok = [check(case, b.poses[i], case.targets[i], six) for i in range(len(b))]
    n = len(b)
    return Row(case.name, "6D" if six else "position", f"animkit solve_batch (B={n})", 100 * np.mean(ok),
               float("nan"), float("nan"), n / dt, f"{dt * 1e3:.0f} ms for all, {int(b.iterations.max())} iterations")


def run_ikpy(case: Case, six: bool, limit: int | None) -> Row | None:
    try:
        from ikpy.chain import Chain
    except ImportError:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        elements = _ikpy_elements(case)
        chain = Chain.from_urdf_file(str(case.urdf), base_elements=elements, base_element_type="link")
        mask = [lk.joint_type != "fixed" for lk in chain.links]
        mask[0] = False
        chain = Chain.from_urdf_file(str(case.urdf), base_elements=elements, base_element_type="link",
                                     active_links_mask=mask)
    names = [lk.name for lk in chain.links]
    col = {name: i for i, name in enumerate(names)}
    fig_names = case.figure.dof_names
    targets = case.targets if limit is None else case.targets[:limit]
    init = np.zeros(len(chain.links))
    for d, name in enumerate(fig_names):
        if name in col:
            init[col[name]] = case.start[d]
    times, ok = [], []
    for T in targets:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            if six:
                sol = chain.inverse_kinematics_frame(T, initial_position=init, orientation_mode="all")
            else:
                sol = chain.inverse_kinematics(T[:3, 3], initial_position=init)
            times.append(time.perf_counter() - t0)
        pose = case.start.copy()
        for d, name in enumerate(fig_names):
            if name in col:
                pose[d] = sol[col[name]]
        ok.append(check(case, pose, T, six))
    t = np.array(times) * 1e3
    return Row(case.name, "6D" if six else "position", "ikpy", 100 * np.mean(ok), float(np.median(t)),
               float(np.percentile(t, 95)), 1e3 / float(np.mean(t)),
               "" if limit is None else f"first {len(targets)} targets")


def _ikpy_elements(case: Case) -> list[str]:
    """Alternating link and joint names from the root down to the effector (ikpy's base_elements)."""
    path = case.figure.path_to(case.effector)
    out = [case.figure.root.name]
    for arc in path[1:]:
        out += [arc.joint.name, arc.child.name]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=500, help="targets per case (default 500)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ikpy-n", type=int, default=None, help="run ikpy on the first N targets only (it is slow)")
    ap.add_argument("--skip-restarts", action="store_true")
    ap.add_argument("--budget-ms", type=float, action="append", default=None,
                    help="restart time budget per target in ms (repeatable; default 5, the TRAC-IK protocol)")
    ap.add_argument("--cases", default=None, help="comma-separated case names to run (default: all)")
    ap.add_argument("--tasks", default="position,6D", help="position, 6D or both (default)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    from animkit.ik.lm_jit import warm_up

    warm_up()
    first = time.perf_counter() - t0
    try:
        import ikpy  # noqa: F401

        have_ikpy = True
    except ImportError:
        have_ikpy = False
        print("ikpy is not importable: skipping the ikpy comparison (pip install -r benchmarks/requirements-ik.txt "
              "into .bench-venv and run with .bench-venv/bin/python)", file=sys.stderr)
    cases = []
    for file, eff in (("franka_panda.urdf", "panda_grasptarget"), ("ur5_robot.urdf", "ee_link")):
        fig = load_robot(DATA / file)
        cases.append(make_case(file.split(".")[0], fig, eff, "arm", DATA / file, args.n, args.seed))
    hum = animkit.load(ROOT / "scenes" / "humanoid.toml")
    for ch in ("arm", "torso", "hips-up"):
        cases.append(make_case(f"humanoid {ch}", hum.figure, "hand_r", ch, None, args.n,
                               args.seed))
    if args.cases:
        keep = set(args.cases.split(","))
        cases = [c for c in cases if c.name in keep]
    budgets = args.budget_ms or [5.0]
    tasks = [t == "6D" for t in args.tasks.split(",")]
    rows: list[Row] = []
    for case in cases:
        for six in tasks:
            row, _ = run_single(case, six)
            rows.append(row)
            if not args.skip_restarts:
                for ms in budgets:
                    rows.append(run_single(case, six, restarts=10 ** 6, time_budget=ms / 1e3)[0])
            rows.append(run_batch(case, six))
            if have_ikpy and case.urdf is not None:
                r = run_ikpy(case, six, args.ikpy_n)
                if r is not None:
                    rows.append(r)
            print(f"  done {case.name} {'6D' if six else 'position'}", file=sys.stderr)
    print(f"\n{args.n} targets per case, seed {args.seed}; success: position < {POS_OK:g} m, orientation < "
          f"{ORI_OK:g} rad, inside limits; the compiled loop's one-off start in this process (numba: load from its "
          f"disk cache, or compile): {first * 1e3:.0f} ms, before any timing\n")
    print("| case | task | method | success | median ms | p95 ms | solves/s | note |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        med = "–" if math.isnan(r.median_ms) else f"{r.median_ms:.2f}"
        p95 = "–" if math.isnan(r.p95_ms) else f"{r.p95_ms:.2f}"
        print(f"| {r.case} | {r.task} | {r.method} | {r.success:.1f} % | {med} | {p95} | {r.throughput:,.0f} | "
              f"{r.note} |")


if __name__ == "__main__":
    main()
