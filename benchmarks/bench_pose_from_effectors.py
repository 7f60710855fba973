"""A full body from a few effectors, on motion-capture frames the prior never saw: plain LM, the natural solver,
FABRIK and the pose prior (`animkit.pose_from_effectors`), as ProtoRes and AvatarPoser evaluate.

    cd benchmarks && OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 flock /tmp/animkit-bench.lock \
        python bench_pose_from_effectors.py [LIBRARY] [--per N] [--rounds R] [--slow S]

LIBRARY (default ../../shared/data/bvh/library) holds the CMU trials; subjects 02 and 08 are the held-out set (the
default prior, animkit/examples/pose_prior.npz, is fitted on 01, 05, 07 and 09). For each held-out trial, N frames
evenly spaced (default 3); the effectors' recorded world positions are the targets, the hips' recorded frame is the
root (given), every method starts from the rest pose with its root placed there. Measures: the mean per-joint
position error over the 21 humanoid joints (hips, spine, chest, neck, head, clavicles, shoulders, elbows, wrists,
hips' legs, knees, ankles, toes), scaled to a 1.7 m figure; the largest effector miss; the time per pose (wall clock,
and the process's CPU time beside it: on a loaded machine the wall clock waits for a core, the CPU time less so).

Each method's strongest path: plain LM and FABRIK are `IKProblem`'s solvers (one problem a frame: the root's DOFs
are folded into the chain at the frame's root, and building it is 1 % of its solve), the natural solver one
`Priors.problem` a limb (gaze and balance off: no gaze target, the hips are given), the prior `pose_from_effectors`
(its compiled loop, its chain models kept per figure). Timing is interleaved: each frame runs every method in turn
(A, B, C, D, A, B, …, so a slow spell hits them alike), R rounds a frame (default 5), the frame's time the median of
its rounds; a method whose first round took longer than S seconds (default 0.5: plain LM, natural and FABRIK with the
human ranges, whose cones are projected in NumPy at every step) runs that one round only. The table gives the median
over frames and the spread (min–max). Every method runs once on the first frame before timing (imports, numba's
compiled kernels). The figures keep the human ranges IK gives a humanoid (animkit.anatomy) for every method.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from harness import arguments, write_results

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from animkit.ik import FABRIK, IKProblem, PosePrior, pose_from_effectors  # noqa: E402
from animkit.ik.natural import Priors  # noqa: E402
from animkit.ik.prior import bind_figure  # noqa: E402
from animkit.io import load  # noqa: E402

HELD_OUT = ("02", "08")
CASES = {"hands, feet, head": ("hand_l", "hand_r", "foot_l", "foot_r", "head"),
         "hands, head (VR)": ("hand_l", "hand_r", "head")}
NATURAL_CHAIN = {"head": ("torso", "neck"), "hand_l": "arm_l", "hand_r": "arm_r", "foot_l": "leg_l",
                 "foot_r": "leg_r"}


def start_pose(fig, frame):
    """The rest pose with the root's DOFs as recorded (the root is given)."""
    q = fig.rest_pose()
    root = np.asarray(fig.joint_dofs[fig.root_arc.joint.name])
    q[root] = frame[root]
    return q


def non_root_joints(fig):
    return [j.name for j in fig.joints if j.dof_count and j.name != fig.root_arc.joint.name]


def run_lm(fig, effs, targets, q0, solver):
    p = IKProblem(fig, list(effs), non_root_joints(fig), pose=q0, solver=solver)
    return p.solve(np.stack([targets[e] for e in effs])).pose


def run_natural(fig, effs, targets, q0):
    """The natural solver (one effector a problem): the head with torso and neck first, then each limb on its own
    chain from the pose so far (gaze and balance off: no target to look at, the hips are given)."""
    q = q0.copy()
    for e in sorted(effs, key=lambda n: n != "head"):
        chain = NATURAL_CHAIN[e]
        joints = [j for c in ((chain,) if isinstance(chain, str) else chain) for j in fig.rig.chains[c]]
        if e == "head":
            joints = [j for j in joints if j in fig.rig.chains["torso"][:3] or j in fig.rig.chains["neck"]]
        prob = Priors(gaze=False, balance=False).problem(fig, e, joints, pose=q)  # NaturalProblem's, not deprecated
        q = prob.solve(targets[e]).pose
    return q


def solve(method, fig, effs, targets, q0, root, prior):
    if method == "LM (plain)":
        return run_lm(fig, effs, targets, q0, "lm")
    if method == "natural (per limb)":
        return run_natural(fig, effs, targets, q0)
    if method == "FABRIK (30 iterations)":
        return run_lm(fig, effs, targets, q0, FABRIK(max_iter=30))  # the default 200 took 12 s a pose here
    return pose_from_effectors(fig, targets, root=root, prior=prior).pose


def _ms(t: float) -> str:
    """Milliseconds, one decimal under 100 ms."""
    return f"{1e3 * t:.1f}" if t < 0.1 else f"{1e3 * t:.0f}"


def main() -> None:
    ap = arguments(__doc__)
    ap.add_argument("library", nargs="?", default=str(ROOT.parent.parent / "shared/data/bvh/library"))
    ap.add_argument("--per", type=int, default=3)
    ap.add_argument("--slow", type=float, default=0.5, help="seconds: a method slower than this runs one round")
    ap.add_argument("--methods", nargs="+", type=int, choices=range(4), default=[0, 1, 2, 3],
                    help="which of the four methods run (0 plain LM, 1 natural, 2 FABRIK, 3 the prior)")
    args = ap.parse_args()
    load_start = os.getloadavg()
    lib = Path(args.library)
    files = sorted(f for f in lib.glob("cmu_*.bvh") if f.name[4:6] in HELD_OUT)
    prior = PosePrior.load()
    methods = tuple(("LM (plain)", "natural (per limb)", "FABRIK (30 iterations)", "prior (pose_from_effectors)")[i]
                    for i in args.methods)
    err = {(c, m): [] for c in CASES for m in methods}
    miss = {(c, m): [] for c in CASES for m in methods}
    times = {(c, m): [] for c in CASES for m in methods}
    cpu = {(c, m): [] for c in CASES for m in methods}
    frames = 0
    warm = False
    for f in files:
        scene = load(f)
        fig = scene.figure
        P = next(iter(scene.clips.values())).sample_frames()
        b = bind_figure(fig)
        scale = 1.7 / b.height
        names = fig.compiled.node_names
        joints = np.array(sorted(set(b.node.tolist()) | {b.hips}))
        eff_node = {e: names.index(fig.rig.effectors[e]) for e in CASES["hands, feet, head"]}
        root = names.index(fig.root_arc.child.name)
        for i in np.linspace(0, len(P) - 1, args.per + 2).astype(int)[1:-1]:
            frames += 1
            W = fig.world_batch(P[i][None])[0]
            q0 = start_pose(fig, P[i])
            for case, effs in CASES.items():
                targets = {e: W[eff_node[e], :3, 3].copy() for e in effs}
                if not warm:
                    for m in methods:
                        solve(m, fig, effs, targets, q0, W[root], prior)
                    warm = True
                spent: dict[str, list[float]] = {m: [] for m in methods}
                used: dict[str, list[float]] = {m: [] for m in methods}
                result = {}
                for _ in range(args.rounds):
                    for m in methods:
                        if spent[m] and spent[m][0] > args.slow:
                            continue
                        t0, c0 = time.perf_counter(), time.process_time()
                        result[m] = solve(m, fig, effs, targets, q0, W[root], prior)
                        spent[m].append(time.perf_counter() - t0)
                        used[m].append(time.process_time() - c0)
                for m in methods:
                    times[case, m].append(statistics.median(spent[m]))
                    cpu[case, m].append(statistics.median(used[m]))
                for m in methods:
                    W2 = fig.world_batch(result[m][None])[0]
                    err[case, m].append(float(np.linalg.norm(W2[joints, :3, 3] - W[joints, :3, 3], axis=1).mean())
                                        * scale)
                    miss[case, m].append(max(float(np.linalg.norm(W2[eff_node[e], :3, 3] - targets[e])) for e in effs)
                                         * scale)
    lines = [f"Held-out CMU subjects {', '.join(HELD_OUT)}: {len(files)} trials, {frames} frames "
             f"({args.per} a trial, evenly spaced), root given, each method from the rest pose; human ranges on. "
             f"Time: per frame the median of {args.rounds} interleaved rounds (one round for a method over "
             f"{args.slow} s), then the median over frames (min–max); load average {load_start[0]:.1f} at the start, "
             f"{os.getloadavg()[0]:.1f} at the end ({os.cpu_count()} cores).", "",
             "| effectors | method | MPJPE (cm, 1.7 m figure) | worst frame (cm) | largest effector miss (cm) | "
             "time a pose, ms: median (min–max) | CPU time a pose, ms: median |", "|---|---|---|---|---|---|---|"]
    for c in CASES:
        for m in methods:
            t = times[c, m]
            lines.append(f"| {c} | {m} | {100 * np.mean(err[c, m]):.2f} | {100 * max(err[c, m]):.1f} | "
                         f"{100 * max(miss[c, m]):.2f} | {_ms(statistics.median(t))} "
                         f"({_ms(min(t))}–{_ms(max(t))}) | {_ms(statistics.median(cpu[c, m]))} |")
    table = "\n".join(lines)
    print(table)
    head = (f"# A full body from a few effectors (pose prior)\n\nCommand: `cd benchmarks && OPENBLAS_NUM_THREADS=1 "
            f"OMP_NUM_THREADS=1 flock /tmp/animkit-bench.lock python bench_pose_from_effectors.py --rounds "
            f"{args.rounds}` (library {lib.name}/, --per {args.per}, --slow {args.slow}, --methods "
            f"{' '.join(map(str, args.methods))}).\n\n")
    write_results(ROOT / "benchmarks" / "results_prior.md", head + f"Run of {time.strftime('%H:%M UTC', time.gmtime())}"
                  f":\n\n" + table + "\n")


if __name__ == "__main__":
    main()
