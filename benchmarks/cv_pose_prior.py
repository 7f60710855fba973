"""Model selection for the pose prior's nearest-pose centre by cross-validation within the training subjects only.

    cd benchmarks && OPENBLAS_NUM_THREADS=1 python cv_pose_prior.py [LIBRARY] [--k 0 1 4 8 16 64] [--kept 4096]

Leave one subject out over the default prior's training subjects (01, 05, 07, 09; the held-out 02 and 08 are never
read): for each fold, a one-component prior with its stored poses is fitted on the other three subjects' trials (every
4th frame and its mirror, as the default), then `pose_from_effectors` completes 3 evenly spaced frames of each of the
left-out subject's trials (root given, targets the recorded effectors) for each k (the stored poses averaged; 0: no
centre, the plain prior). Prints the mean per-joint error (21 joints, 1.7 m figure) per fold and the mean over folds
(each fold weighted alike), for hands, feet and head and for hands and head (VR).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from animkit.ik import PosePrior, pose_from_effectors, prior_poses  # noqa: E402
from animkit.ik.prior import bind_figure, fit_mixture, mirror_features  # noqa: E402
from animkit.ik.prior_poses import pose_set  # noqa: E402
from animkit.io import load  # noqa: E402

TRAIN = ("01", "05", "07", "09")
CASES = {"hands, feet, head": ("hand_l", "hand_r", "foot_l", "foot_r", "head"), "hands, head (VR)":
         ("hand_l", "hand_r", "head")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("library", nargs="?", default=str(ROOT.parent.parent / "shared/data/bvh/library"))
    ap.add_argument("--k", type=int, nargs="+", default=[0, 1, 4, 8, 16, 64])
    ap.add_argument("--kept", type=int, nargs="+", default=[4096])
    ap.add_argument("--per", type=int, default=3)
    args = ap.parse_args()
    lib = Path(args.library)
    files = {s: sorted(lib.glob(f"cmu_{s}_*.bvh")) for s in TRAIN}
    feats, frames = {}, {}
    for s, fs in files.items():
        feats[s], frames[s] = [], []
        for f in fs:
            scene = load(f)
            feats[s].append(PosePrior.features_of(scene, every=4))
            P = next(iter(scene.clips.values())).sample_frames()
            idx = np.linspace(0, len(P) - 1, args.per + 2).astype(int)[1:-1]
            frames[s].append((scene.figure, P[idx]))
    res: dict[tuple[str, int, int, str], float] = {}
    for s in TRAIN:
        X = np.concatenate([x for t in TRAIN if t != s for x in feats[t]])
        X = np.concatenate([X, mirror_features(X)])

        w, m, c = fit_mixture(X, 1)
        for kept in args.kept:
            pr = PosePrior(w, m, c, f"cv fold {s}", pose_set(X, kept))
            for k in args.k:
                prior_poses.NEIGHBOURS = k
                for case, effs in CASES.items():
                    errs = []
                    for fig, P in frames[s]:
                        b = bind_figure(fig)
                        names = fig.compiled.node_names
                        joints = np.array(sorted(set(b.node.tolist()) | {b.hips}))
                        root = names.index(fig.root_arc.child.name)
                        for q in P:
                            W = fig.world_batch(q[None])[0]
                            tg = {e: W[names.index(fig.rig.effectors[e]), :3, 3] for e in effs}
                            r = pose_from_effectors(fig, tg, root=W[root], prior=pr)
                            W2 = fig.world_batch(r.pose[None])[0]
                            errs.append(np.linalg.norm(W2[joints, :3, 3] - W[joints, :3, 3], axis=1).mean()
                                        * 1.7 / b.height)
                    res[s, kept, k, case] = 100 * float(np.mean(errs))
                    print(f"fold {s} kept {kept} k {k:3d} {case}: {res[s, kept, k, case]:.2f} cm ({len(errs)} frames)",
                          flush=True)
    print("\n| kept | k | " + " | ".join(f"{c}: folds {', '.join(TRAIN)} → mean" for c in CASES) + " |")
    for kept in args.kept:
        for k in args.k:
            cells = []
            for case in CASES:
                v = [res[s, kept, k, case] for s in TRAIN]
                cells.append(" / ".join(f"{x:.2f}" for x in v) + f" → **{np.mean(v):.2f}**")
            print(f"| {kept} | {k} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
