"""Feet locked or not, judged per contact by the surface: "Locking never makes a clip worse" (issue 25 §2).

    python -m benchmarks.lock_never_worse

For each case, the clip as given and with ``animkit.motion.lock_feet`` (on a retarget: the source's contacts
carried to the target, as ``animkit retarget`` does; else the clip's own contacts from height), on the character's mesh
or drawn geometry, ground 0. Per contact (its frames and ``blend`` either side) of each leg:

* penetration: how far that foot's lowest surface point goes under the ground; locked ≤ as given (+0.1 mm);
* knee change: the leg's largest knee change between two frames; locked ≤ the largest the clip as given makes
  anywhere (no knee pops beyond the clip's own);
* knee bend: within the clip's own range for that leg (0.1° either way).

Exits 1 when any contact of any case is worse, and prints the failing contacts. Retargets drop the CMU T-pose frame
0. Not a timing: nothing is timed. The table also gives skate (mm/s, by :func:`animkit.motion.measures.measure_motion`
on the same contacts), penetration (mm), the planted foot's median lowest point (mm) and knee pops (°), and the
frames the lock reports held: how many, and the highest any held foot's lowest surface point gets above the ground
(mm; issue 25: within 1 cm).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

import animkit
from animkit.look.surface import body_surface, descendants
from animkit.motion import Contacts, LockResult, knee_angles, legs_of, lock_feet
from animkit.motion.measures import carry_contacts, height_contacts, measure_motion
from animkit.motion.retarget import retarget_full

ROOT = Path(__file__).resolve().parent.parent
CASES = (("scenes/walk.toml", None), ("tests/data/cmu_02_01_walk.bvh", "tests/data/RiggedFigure.glb"),
         ("tests/data/cmu_02_01_walk.bvh", "tests/data/CesiumMan.glb"),
         ("tests/data/cmu_131_03_hop_3dsmax.bvh", "scenes/humanoid.toml"),
         ("tests/data/cmu_131_03_hop_3dsmax.bvh", "tests/data/CesiumMan.glb"),
         ("tests/data/cmu_09_01_run.bvh", "scenes/humanoid.toml"),
         ("tests/data/cmu_09_01_run.bvh", "tests/data/RiggedFigure.glb"),
         ("tests/data/cmu_02_01_walk.bvh", "scenes/humanoid.toml"))
BLEND = 0.2


def worse_contacts(fig: animkit.Figure, P: np.ndarray, L: np.ndarray, c: Contacts, fps: float, up: str,
                   meshes: tuple) -> list[str]:
    """The contacts where ``L`` (locked) is worse than ``P`` (as given), one line each."""
    legs = legs_of(fig)
    k = "xyz".index(up)
    surface = body_surface(fig, meshes)
    groups = [descendants(fig, leg.ankle) for leg in legs]
    low0 = surface.lowest(fig.world_batch(P), k, groups)
    low1 = surface.lowest(fig.world_batch(L), k, groups)
    knee0, knee1 = knee_angles(fig, P, legs), knee_angles(fig, L, legs)
    pop0 = float(np.abs(np.diff(knee0, axis=0)).max())
    nb = max(2, int(round(BLEND * fps)))
    out = []
    for j, leg in enumerate(legs):
        lo, hi = knee0[:, j].min() - np.radians(0.1), knee0[:, j].max() + np.radians(0.1)
        mask = np.zeros(len(P), dtype=bool)
        for p in dict.fromkeys((leg.ankle, leg.toe)):
            if p in c.points:
                mask |= c.mask[:, c.points.index(p)]
        edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
        for s, e in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1), strict=True):
            a, b = max(0, s - nb), min(len(P), e + nb)
            pen0 = max(0.0, -float(np.nanmin(low0[a:b, j])))
            pen1 = max(0.0, -float(np.nanmin(low1[a:b, j])))
            kpop = float(np.abs(np.diff(knee1[a:b, j])).max(initial=0.0))
            bad = []
            if pen1 > pen0 + 1e-4:
                bad.append(f"penetration {1e3 * pen0:.1f} -> {1e3 * pen1:.1f} mm")
            if kpop > pop0 + 1e-9:
                bad.append(f"knee change {np.degrees(kpop):.1f} deg (clip's largest {np.degrees(pop0):.1f})")
            if knee1[a:b, j].min() < lo or knee1[a:b, j].max() > hi:
                bad.append(f"knee bend {np.degrees(knee1[a:b, j].min()):.1f}-{np.degrees(knee1[a:b, j].max()):.1f} "
                           f"deg outside the clip's {np.degrees(lo):.1f}-{np.degrees(hi):.1f}")
            if bad:
                out.append(f"leg {leg.side} frames {s}-{e - 1}: " + "; ".join(bad))
    return out


def held_soles(fig: animkit.Figure, locked: LockResult, up: str, meshes: tuple) -> str:
    """"count / highest": the frames × feet the lock holds and the highest lowest surface point among them (mm)."""
    if locked.held is None:
        return "0 / -"
    legs = legs_of(fig)
    low = body_surface(fig, meshes).lowest(fig.world_batch(locked.poses), "xyz".index(up),
                                           [descendants(fig, leg.ankle) for leg in legs])
    c = locked.contacts
    held = np.stack([np.logical_or.reduce([locked.held[:, c.points.index(p)]
                                           for p in dict.fromkeys((leg.ankle, leg.toe)) if p in c.points])
                     for leg in legs], axis=1)
    return f"{int(held.sum())} / {1e3 * float(np.nanmax(np.where(held, low, -np.inf))):.1f}"


def main() -> int:
    warnings.simplefilter("ignore")  # glTF sampling notes
    print("| case | contacts | as given: skate / pen / planted / knee | locked | held frames: count / highest sole "
          "(mm) | worse contacts |")
    print("|---|---|---|---|---|---|")
    failures = []
    for source, target in CASES:
        src = animkit.load(ROOT / source)
        if target is None:
            scene, clip = src, src.clip()
            P, fps, name = clip.sample_frames(), clip.fps, source
            c = height_contacts(scene.figure, P, fps, up=scene.up)
        else:
            scene = animkit.load(ROOT / target)
            r = retarget_full(src, scene)
            P, fps, name = r.poses[1:], r.clip.fps, f"{Path(source).stem} → {Path(target).name}"
            P_s = src.clip().sample(r.times)[1:]
            c = carry_contacts(height_contacts(src.figure, P_s, fps, up=src.up), legs_of(src.figure),
                               legs_of(r.figure))
        fig = r.figure if target is not None else scene.figure
        locked = lock_feet(fig, P, fps, up=scene.up, ground=0.0, meshes=scene.meshes, contacts=c)
        cells = []
        for X in (P, locked.poses):
            m = measure_motion(fig, X, fps, up=scene.up, meshes=scene.meshes, contacts=c)
            cells.append(f"{m.skate_mm_per_s:.0f} / {m.penetration_mm:.1f} / {m.planted_height_median_mm:.1f} / "
                         f"{m.knee_pop_deg:.1f}")
        worse = worse_contacts(fig, P, locked.poses, c, fps, scene.up, scene.meshes)
        runs = int((np.diff(c.mask.astype(np.int8), axis=0) == 1).sum() + c.mask[0].sum())
        print(f"| {name} | {runs} | {cells[0]} | {cells[1]} ({len(locked.unlocked)} left unlocked) | "
              f"{held_soles(fig, locked, scene.up, scene.meshes)} | {len(worse)} |")
        failures += [f"{name}: {w}" for w in worse]
    for f in failures:
        print("WORSE", f)
    print("never worse: " + ("FAILED" if failures else "passed on every contact of every case"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
