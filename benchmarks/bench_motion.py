"""Retarget + lock the feet of a 2,000-frame clip onto a glTF character, on one core.

    flock /tmp/animkit-bench.lock python -m benchmarks.bench_motion [--frames 2000] [--rounds 7]

The source is the CMU walk (tests/data/cmu_02_01_walk.bvh, 120 fps) looped with its root motion carried on
(``animkit.motion.loop_poses``) to ``--frames`` frames; the target is CesiumMan.glb (the Khronos sample
character). Cases, interleaved round by round (benchmarks/harness.py): retargeting alone, foot locking alone
(contacts, measures before and after, the two-bone IK over all frames at once), and both. The per-frame
baseline is the same leg IK done frame by frame in Python (``lock_feet`` called on one frame's window at a
time is not the same algorithm, so the baseline solves one frame per call of the batched kernel: the
cost of a Python loop over frames). Goal: ≥ 2,000 frames per second for retarget + lock.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import animkit  # noqa: E402
from animkit.motion import _leg_ik, detect_contacts, lock_feet, loop_poses  # noqa: E402
from animkit.retarget import bone_map, retarget_poses  # noqa: E402

from .harness import interleaved, markdown_table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"


def source_poses(frames: int) -> tuple[animkit.Scene, np.ndarray]:
    walk = animkit.load(DATA / "cmu_02_01_walk.bvh")
    cycle = walk.clip().sample_frames()[1:]  # frame 0 is the T-pose of CMU's conversions
    loops = int(np.ceil((frames - 1) / (len(cycle) - 1)))
    return walk, loop_poses(walk.figure, cycle, loops)[:frames]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--frames", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results_motion.md"))
    args = ap.parse_args()
    walk, P = source_poses(args.frames)
    target = animkit.load(DATA / "CesiumMan.glb")
    fps = walk.clip().fps
    bm = bone_map(walk.figure, target.figure)
    T, _, _ = retarget_poses(walk.figure, P, target.figure, bm, source_up=walk.up, target_up=target.up)
    F = len(P)

    def do_retarget() -> None:
        retarget_poses(walk.figure, P, target.figure, bm, source_up=walk.up, target_up=target.up)

    def do_lock() -> None:
        lock_feet(target.figure, T, fps, up=target.up)

    def do_both() -> None:
        Q, _, _ = retarget_poses(walk.figure, P, target.figure, bm, source_up=walk.up, target_up=target.up)
        lock_feet(target.figure, Q, fps, up=target.up)

    # the per-frame baseline: the leg IK of one leg called once per frame (a Python loop over frames)
    fig = target.figure
    r = lock_feet(fig, T, fps, up=target.up)
    leg = r.legs[0]
    W = fig.world_batch(T)
    goal = W[:, fig.node_names.index(leg.ankle), :3, 3] + 0.01
    eye = np.broadcast_to(np.eye(3), (F, 3, 3))
    reach = float(np.linalg.norm(W[:, fig.node_names.index(leg.ankle), :3, 3]
                                 - W[:, fig.node_names.index(leg.hip), :3, 3], axis=1).max())
    active = np.ones(F, dtype=bool)
    n_loop = min(F, 200)

    def leg_batched() -> None:
        _leg_ik(fig, T, W, leg, goal, active, eye, reach)

    def leg_per_frame() -> None:
        for f in range(n_loop):
            _leg_ik(fig, T[f:f + 2], W[f:f + 2], leg, goal[f:f + 2], active[:2], eye[:2], reach)

    stats = interleaved({"retarget": do_retarget, "lock feet": do_lock, "retarget + lock feet": do_both,
                         "one leg's IK, batched": leg_batched, f"one leg's IK, per frame ({n_loop} frames)":
                         leg_per_frame}, rounds=args.rounds)
    contacts = detect_contacts(fig, T, fps, up=target.up)
    lines = [
        "# Motion: retarget + foot locking",
        "",
        f"Command: `flock /tmp/animkit-bench.lock python -m benchmarks.bench_motion --frames {args.frames} "
        f"--rounds {args.rounds}`",
        "",
        f"Source: the CMU walk (02_01, {fps:g} fps) looped with its root motion to {F} frames "
        f"({len(walk.figure.node_names)} nodes); target: CesiumMan.glb ({len(fig.node_names)} nodes, "
        f"{fig.dof_count} DOFs), a glTF character. One core (BLAS threads 1); {platform.python_version()}, "
        f"NumPy {np.__version__}. The machine is shared by several engineers: absolute numbers are lower "
        "bounds. Cases interleaved round by round; medians with min–max.",
        "",
        markdown_table(stats, unit="ms", scale=1e3),
        "",
        "| case | frames per second (median) |",
        "|---|---|",
    ]
    for name in ("retarget", "lock feet", "retarget + lock feet"):
        lines.append(f"| {name} | {F / stats[name].median:,.0f} |")
    per = stats[f"one leg's IK, per frame ({n_loop} frames)"].median / n_loop
    bat = stats["one leg's IK, batched"].median / F
    lines += [
        "",
        f"Batched leg IK: {bat * 1e6:.2f} µs per frame; the same kernel called once per frame from Python: "
        f"{per * 1e6:.1f} µs per frame ({per / bat:.0f}× slower).",
        "",
        f"Goal ≥ 2,000 frames/s for retarget + lock feet: "
        f"{'met' if F / stats['retarget + lock feet'].median >= 2000 else 'NOT met'} "
        f"({F / stats['retarget + lock feet'].median:,.0f} frames/s). The locked clip: "
        f"{int(contacts.mask.any(axis=1).sum())} of {F} frames with a foot down; skate "
        f"{r.before.skate_mm:.2f} → {r.after.skate_mm:.2f} mm per contact frame, penetration "
        f"{r.before.penetration_mm:.2f} → {r.after.penetration_mm:.2f} mm, knee pop "
        f"{r.before.knee_pop_deg:.1f} → {r.after.knee_pop_deg:.1f}°.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
