"""Every clip onto every humanoid character: the retarget + foot-lock results table of issue 25 §4.

    flock /tmp/animkit-bench.lock python -m benchmarks.bench_retarget_matrix [--rounds 3]

Sources: the BVH clips of ../shared/data/bvh (top level, both naming schemes: CMU's MotionBuilder and 3ds Max forms)
and tests/data, one per file name (tests/data alone when shared/ is absent; not the pose prior's held-out frames,
``*heldout*.bvh``: separate poses, not a motion). Targets: CesiumMan.glb, RiggedFigure.glb, the TOML humanoid
(animkit/examples/humanoid.toml), a character whose file is Z-up (tests/data/fbx/mixamo_zup_77.fbx, Blender's FBX
export; where ufbx is installed) and the rigs tests/retarget_rigs.py writes with animkit's glTF writer (Mixamo-style
0.01-scaled armatures turned −90°/+90°/0° about x with the hips in centimetres; a rig whose node pose differs from its
bind pose). Each pair: ``retarget_full`` then ``lock_feet`` on the character's meshes (what ``animkit retarget``
does), measured by :func:`animkit.motion.measures.measure_motion` against the source (its contacts carried to the
target), as retargeted and as locked. Writes benchmarks/results_retarget.md (earlier runs kept below,
benchmarks/harness.py).
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import dataclasses  # noqa: E402
import importlib.util  # noqa: E402
import platform  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import animkit  # noqa: E402
from animkit.keyframes import Clip  # noqa: E402
from animkit.look.surface import body_surface  # noqa: E402
from animkit.model.humanoid import match_figure  # noqa: E402
from animkit.model.quadruped import match_quadruped_figure, quadruped_node_map  # noqa: E402
from animkit.motion import MotionError, legs_of, lock_feet  # noqa: E402
from animkit.motion.measures import (  # noqa: E402
    MotionReport,
    SourceMotion,
    bone_direction_errors,
    carry_contacts,
    height_contacts,
    measure_motion,
    standing_hip_height,
)
from animkit.motion.retarget import feet_of, retarget_full  # noqa: E402
from benchmarks.harness import arguments, write_results  # noqa: E402
from tests.retarget_rigs import RIGS, write_rig  # noqa: E402
from tests.test_characters import fox_walking, reproportioned_fox  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent.parent / "shared" / "data" / "bvh"
if not SHARED.is_dir():
    SHARED = Path("/work/shared/data/bvh")


def sources() -> list[Path]:
    seen: dict[str, Path] = {}
    for folder in (SHARED, ROOT / "tests" / "data"):
        if folder.is_dir():
            for p in sorted(folder.glob("*.bvh")):
                if "heldout" not in p.name:  # the pose prior's held-out frames: single poses, not a motion
                    seen.setdefault(p.name, p)
    return list(seen.values())


@dataclass(frozen=True)
class Row:
    source: str
    target: str
    frames: int
    retargeted: MotionReport | None
    locked: MotionReport | None
    source_knee: float | None
    source_travel_hh: float | None
    dirs_no_feet: tuple[float, float] | None
    hip_m: float
    fps: float
    note: str
    retarget_fps: float = 0.0
    cpu_fps: float = 0.0


def measure_pair(src: animkit.Scene, src_name: str, tgt: animkit.Scene, tgt_name: str, rounds: int,
                 mapping: dict[str, str] | None = None) -> Row:
    clip = src.clip()
    P_s = clip.sample(clip.frame_times())
    s_report = measure_motion(src.figure, P_s, clip.fps, up=src.up)
    note = ""
    times = []
    alone = []
    cpu = []
    r = None
    poses = None
    for _ in range(rounds):
        t0, c0 = time.perf_counter(), time.process_time()
        r = retarget_full(src, tgt, mapping)
        alone.append(time.perf_counter() - t0)
        try:  # the source's contacts carried to the target, as `animkit retarget` does
            planted = carry_contacts(height_contacts(src.figure, P_s, clip.fps, up=src.up), legs_of(src.figure),
                                     legs_of(r.figure))
            poses = lock_feet(r.figure, r.poses, clip.fps, up=tgt.up, meshes=tgt.meshes, contacts=planted).poses
        except MotionError as exc:
            poses, note = None, f"not locked: {str(exc).splitlines()[0]}"
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    assert r is not None
    source = SourceMotion(src.figure, P_s, src.up, r.bone_map, src.meshes)
    before = measure_motion(r.figure, r.poses, clip.fps, up=tgt.up, meshes=tgt.meshes, source=source)
    after = (measure_motion(r.figure, poses, clip.fps, up=tgt.up, meshes=tgt.meshes, source=source)
             if poses is not None else None)
    feet = set(feet_of(r.figure))
    errs = bone_direction_errors(r.figure, poses if poses is not None else r.poses, src.figure, P_s, r.bone_map,
                                 up=tgt.up, source_up=src.up)
    kept = [np.degrees(v) for k, v in errs.items() if k.split(">")[0] not in feet]
    dirs = (float(np.median(np.concatenate(kept))), float(np.percentile(np.concatenate(kept), 90))) if kept else None
    hip_m = standing_hip_height(r.figure, r.hips[0], tgt.up, body_surface(r.figure, tgt.meshes)) \
        * before.metres_per_unit
    if r.notes:
        note = "; ".join([note] * bool(note) + [n for n in r.notes if "follows its source" not in n])
    return Row(src_name, tgt_name, len(P_s), before, after, s_report.knee_pop_deg, s_report.travel_hh, dirs, hip_m,
               len(P_s) / float(np.median(times)), note, len(P_s) / float(np.median(alone)),
               len(P_s) / float(np.median(cpu)))


def row_hips(fig: animkit.Figure) -> str:
    """The humanoid hips of a figure (its first node where none is matched)."""
    return match_figure(fig).get("hips") or fig.node_names[0]


def _f(v: float | None, spec: str = ".2f") -> str:
    return "–" if v is None else format(v, spec)


def goals(row: Row) -> list[str]:
    """The goals this row misses (on the locked result where there is one)."""
    m = row.locked or row.retargeted
    assert m is not None
    missed = []
    if row.source_travel_hh is not None and row.source_travel_hh >= 0.5:
        if m.travel_ratio is None or not 0.85 <= m.travel_ratio <= 1.15:
            missed.append("travel")
    if m.planted_height_median_mm is None or abs(m.planted_height_median_mm) > 20.0 or (
            m.planted_height_p5_mm is not None and m.planted_height_p5_mm < -25.0):
        missed.append("mesh on ground")
    if m.skate_mm_per_s is None or m.skate_mm_per_s * 0.9 / row.hip_m > 40.0:
        missed.append("skate")
    if (m.bone_direction_median_deg or 0.0) > 5.0 or (m.bone_direction_p90_deg or 0.0) > 20.0:
        missed.append("bone directions")
    if m.knee_pop_deg is not None and row.source_knee is not None and m.knee_pop_deg > row.source_knee + 1e-6:
        missed.append("knee pops")
    if row.fps < 2000:
        missed.append("fps")
    return missed


def _skate(m: MotionReport | None, hip_m: float) -> str:
    return _f(None if m is None or m.skate_mm_per_s is None else m.skate_mm_per_s * 0.9 / hip_m, ".0f")


def _low(m: MotionReport | None) -> str:
    return "–" if m is None else f"{_f(m.planted_height_median_mm, '.1f')} / {_f(m.planted_height_p5_mm, '.1f')}"


def table(rows: list[Row]) -> str:
    head = ("| source | target | frames | travel ratio | planted low median / p5, mm (retargeted → locked) | "
            "skate mm/s at 0.9 m hips (retargeted → locked) | knee pop ° source / retargeted / locked | "
            "bone dirs ° median / p90 (all bones) | same without the feet | frames/s (retarget + lock) | "
            "frames/s (retarget alone) | frames/s by CPU time (retarget + lock) | goals |")
    out = [head, "|" + "---|" * 13]
    for r in rows:
        a, b = r.retargeted, r.locked
        assert a is not None
        m = b or a
        missed = goals(r)
        travel = _f(m.travel_ratio, ".3f")
        if r.source_travel_hh is not None and r.source_travel_hh < 0.5:
            travel += " (source on the spot)"
        knee_b = None if b is None else b.knee_pop_deg
        out.append(f"| {r.source} | {r.target} | {r.frames} | {travel} | {_low(a)} → {_low(b)} | "
                   f"{_skate(a, r.hip_m)} → {_skate(b, r.hip_m)} | "
                   f"{_f(r.source_knee, '.1f')} / {_f(a.knee_pop_deg, '.1f')} / {_f(knee_b, '.1f')} | "
                   f"{_f(m.bone_direction_median_deg, '.1f')} / {_f(m.bone_direction_p90_deg, '.1f')} | "
                   f"{'–' if r.dirs_no_feet is None else f'{r.dirs_no_feet[0]:.1f} / {r.dirs_no_feet[1]:.1f}'} | "
                   f"{r.fps:,.0f} | {r.retarget_fps:,.0f} | {r.cpu_fps:,.0f} | "
                   f"{'all met' if not missed else 'missed: ' + ', '.join(missed)} |")
    return "\n".join(out)


def main() -> None:
    ap = arguments(__doc__, rounds=3, out=ROOT / "benchmarks" / "results_retarget.md")
    ap.add_argument("--sources", default="", help="only the clips whose file names contain one of these "
                    "(comma-separated; a few rows' frames/s re-run quickly)")
    ap.add_argument("--targets", default="", help="only these targets (comma-separated names as in the table; "
                    "'Fox' for the quadruped rows)")
    args = ap.parse_args()
    _load_before = os.getloadavg()[0]
    warnings.simplefilter("ignore")
    clips = [p for p in sources() if not args.sources or any(k in p.name for k in args.sources.split(","))]
    only = [t for t in args.targets.split(",") if t]
    rows: list[Row] = []
    fox_rows = 0
    source_skate: dict[str, float] = {}
    notes: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        targets: list[tuple[str, animkit.Scene]] = [
            ("CesiumMan", animkit.load(ROOT / "tests" / "data" / "CesiumMan.glb")),
            ("RiggedFigure", animkit.load(ROOT / "tests" / "data" / "RiggedFigure.glb")),
            ("humanoid.toml", animkit.load(ROOT / "animkit" / "examples" / "humanoid.toml"))]
        if importlib.util.find_spec("ufbx") is not None:  # a character whose file is Z-up, by Blender's FBX exporter
            targets.append(("FBX Z-up (Blender)", animkit.load(ROOT / "tests" / "data" / "fbx" / "mixamo_zup_77.fbx")))
        targets += [(f"rig {k}", animkit.load(write_rig(k, Path(tmp)).path)) for k in RIGS]
        targets = [(n, t) for n, t in targets if not only or n in only]
        for path in clips:
            src = animkit.load(path)
            for name, tgt in targets:
                t0 = time.perf_counter()
                row = measure_pair(src, path.name, tgt, name, args.rounds)
                rows.append(row)
                if row.note:
                    notes.setdefault(name, row.note)
                if path.name not in source_skate:
                    rep = measure_motion(src.figure, src.clip().sample_frames(), src.clip().fps, up=src.up)
                    h = standing_hip_height(src.figure, row_hips(src.figure), src.up) * rep.metres_per_unit
                    source_skate[path.name] = (rep.skate_mm_per_s or 0.0) * 0.9 / h
                print(f"{path.name} -> {name}: {', '.join(goals(row)) or 'all met'} "
                      f"({time.perf_counter() - t0:.1f} s)", flush=True)
        # quadrupeds: the Fox's own clips onto a re-proportioned Fox (legs 1.3x, spine 0.8x, every node renamed)
        fox = animkit.load(ROOT / "tests" / "data" / "Fox.glb")
        long_fox = animkit.load(reproportioned_fox(Path(tmp)))
        mapping = quadruped_node_map(match_quadruped_figure(fox.figure), match_quadruped_figure(long_fox.figure))
        for clip_name in ("Walk", "Run") if not only or "Fox" in only else ():  # carried forward at its planted
            # hind toe's speed, three cycles
            P_fox, t_fox = fox_walking(fox.figure, fox.clips[clip_name])
            walking = Clip.from_poses(fox.figure, t_fox, P_fox, name=clip_name, fps=fox.clips[clip_name].fps)
            src = dataclasses.replace(fox, clips={clip_name: walking})
            t0 = time.perf_counter()
            row = measure_pair(src, f"Fox.glb {clip_name}", long_fox, "Fox, legs 1.3x, spine 0.8x", args.rounds,
                               mapping)
            rows.append(row)
            fox_rows += 1
            if row.note:
                notes.setdefault(row.target, row.note)
            print(f"Fox {clip_name} -> long Fox: {', '.join(goals(row)) or 'all met'} "
                  f"({time.perf_counter() - t0:.1f} s)", flush=True)
    met = sum(not goals(r) for r in rows)
    missed: dict[str, int] = {}
    for r in rows:
        for g in goals(r):
            missed[g] = missed.get(g, 0) + 1
    by_goal = ", ".join(f"{g} {n}" for g, n in sorted(missed.items(), key=lambda kv: -kv[1])) or "none"
    lines = [
        "# Retargeting every clip onto every humanoid character",
        "",
        f"Command: `flock /tmp/animkit-bench.lock python -m benchmarks.bench_retarget_matrix --rounds {args.rounds}"
        + (f" --sources {args.sources}" if args.sources else "") + (f" --targets {args.targets}" if only else "")
        + "`",
        "",
        f"{len(clips)} clips × {(len(rows) - fox_rows) // max(len(clips), 1)} humanoid characters and {fox_rows} "
        f"quadruped rows; {met} of {len(rows)} rows meet every goal. Goals missed, by row: {by_goal}. "
        f"{platform.python_version()}, NumPy "
        f"{np.__version__}, one core (BLAS threads 1). Load average {_load_before:.1f} before the run and "
        f"{os.getloadavg()[0]:.1f} after it (on {os.cpu_count()} cores): frames/s are the median of "
        f"{args.rounds} runs of retarget + lock feet (the whole of `retarget_full` and `lock_feet`, on the clip's "
        "own length; the column after it times `retarget_full` alone in the same runs; the next, retarget + lock by "
        "this process's CPU time (`time.process_time`) in the same runs: the machine's other load does not wait in "
        "it, though it still slows it through the shared cores and caches; the goal is judged on the wall-clock "
        "column).",
        "",
        "Measures (animkit.motion.measures, against the source: its contacts, by height within 4 % of the hip "
        "height of each point's low and slower than 1 hip height per second, carried to the target): travel ratio = "
        "root travel in hip heights ÷ the source's (each side's own standing hip height, measured on its surface: "
        "the hips above the lowest point of the feet's mesh or drawn geometry at rest, independently of the "
        "joint-based hip height the retarget scales by, so that a wrong scale shows); "
        "planted low = the lowest point of the planted foot's surface (skinned mesh, else "
        "drawn geometry) above the ground y = 0 over its contact frames; skate = the planted feet's ground speed "
        "over 0.1 s windows, per leg its slowest foot point, scaled to a 0.9 m hip height (the source clips "
        "themselves score 24–125 mm/s: see below); knee pop = the largest frame-to-frame change of a knee angle; "
        "bone dirs = angle between world bone directions on target and source, every mapped bone and child, with a "
        "bone's left and right fixed offsets (hips → upper legs, chest → shoulders) replaced by the side vector "
        "between them and a foot compared by its turn from standing flat (both are the rigs' anatomy, not the "
        "retarget's: compared directly, a right retarget measured 23–45° there); the column after it leaves the "
        "feet out.",
        "",
        "Goals (on the locked clip): travel ratio 0.85–1.15 (not judged where the source stays on the spot, under "
        "0.5 hip heights); planted low within 20 mm (median) and none under −25 mm (5th percentile); skate ≤ "
        "40 mm/s at a 0.9 m hip height; bone directions ≤ 5° median and ≤ 20° p90; knee pops no larger than the "
        "source's; ≥ 2,000 frames/s.",
        "",
        table(rows),
        "",
        "The source clips measured alone (contacts by height and speed, skate at a 0.9 m hip height):",
        "",
        *[f"- {name}: skate {v:.0f} mm/s" for name, v in source_skate.items()],
        "",
        "Notes the retarget gave (per character, first clip):",
        "",
    ]
    lines += [f"- {k}: {v}" for k, v in notes.items()] or ["- none"]
    lines += [
        "",
        "Quadrupeds: the last rows are the Fox's own Walk and Run (in place in the file; carried forward at the speed "
        "its planted hind toe slides back, three cycles: tests/test_characters.py's `fox_walking`) onto the Fox's "
        "skeleton with legs 1.3x and the spine 0.8x as long and every node renamed (tests/test_characters.py's "
        "`reproportioned_fox`), through `animkit.model.quadruped.quadruped_node_map`; drawn bones as its surface.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    write_results(Path(args.out), text)


if __name__ == "__main__":
    main()
