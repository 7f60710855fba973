"""Feet locked or not, judged by the surface: the table "Locking never makes a clip worse" of results_motion.md.

    python -m benchmarks.lock_never_worse

For each case: the clip as given and with ``animkit.motion.lock_feet``, both measured by
``animkit.motion_measures.measure_motion`` on the same contacts (from height, of the clip as given), the character's
mesh or the drawn geometry, ground 0. Retargets drop the CMU T-pose frame 0. Not a timing: nothing is timed.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import animkit
from animkit.motion import lock_feet
from animkit.motion_measures import height_contacts, measure_motion
from animkit.retarget import retarget_full

ROOT = Path(__file__).resolve().parent.parent
CASES = (("scenes/walk.toml", None), ("tests/data/cmu_02_01_walk.bvh", "tests/data/RiggedFigure.glb"),
         ("tests/data/cmu_02_01_walk.bvh", "tests/data/CesiumMan.glb"),
         ("tests/data/cmu_131_03_hop_3dsmax.bvh", "scenes/humanoid.toml"),
         ("tests/data/cmu_09_01_run.bvh", "scenes/humanoid.toml"),
         ("tests/data/cmu_02_01_walk.bvh", "scenes/humanoid.toml"))


def main() -> None:
    warnings.simplefilter("ignore")  # glTF sampling notes
    print("| case | as given: skate / pen / planted / knee | locked (contacts left unlocked) |")
    print("|---|---|---|")
    for source, target in CASES:
        src = animkit.load(ROOT / source)
        if target is None:
            scene, clip = src, src.clip()
            P, fps, name = clip.sample_frames(), clip.fps, source
        else:
            scene = animkit.load(ROOT / target)
            r = retarget_full(src, scene)
            P, fps, name = r.poses[1:], r.clip.fps, f"{Path(source).stem} → {Path(target).name}"
        fig = scene.figure
        locked = lock_feet(fig, P, fps, up=scene.up, ground=0.0, meshes=scene.meshes)
        c = height_contacts(fig, P, fps, up=scene.up)
        cells = []
        for X in (P, locked.poses):
            m = measure_motion(fig, X, fps, up=scene.up, meshes=scene.meshes, contacts=c)
            cells.append(f"{m.skate_mm_per_s:.0f} / {m.penetration_mm:.1f} / {m.planted_height_median_mm:.1f} / "
                         f"{m.knee_pop_deg:.1f}")
        print(f"| {name} | {cells[0]} | {cells[1]} ({len(locked.unlocked)}) |")


if __name__ == "__main__":
    main()
