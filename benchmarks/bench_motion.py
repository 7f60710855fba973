"""Retarget + lock the feet of a 2,000-frame clip onto a glTF character, on one core.

    flock /tmp/animkit-bench.lock python -m benchmarks.bench_motion [--frames 2000] [--rounds 7]

The source is the CMU walk (tests/data/cmu_02_01_walk.bvh, 120 fps) looped with its root motion carried on
(``animkit.motion.root_motion.loop_poses``) to ``--frames`` frames; the target is CesiumMan.glb (the Khronos sample
character). Cases, interleaved round by round (benchmarks/harness.py): retargeting alone (``retarget_full``, what
``animkit retarget`` runs: the map, the bind pose, DOFs where needed, the surface on the ground), foot locking alone
(contacts, measures before and after, the two-bone IK over all frames at once), and both. The anchor is
three.js's SkeletonUtils.retargetClip under Node (tests/node/threejs_retarget.mjs, when
``npm install --prefix tests/node`` has been run), in the same rounds; it retargets only, on its strongest options
(:data:`FAST_OPTIONS`: the same clip with less work, checked by a digest of every value). The first retarget + lock
in a fresh process is timed beside its second (a compile on first use would show). The leg IK is also timed
batched and called once per frame from Python (the cost of a loop over frames). Goals (issues 24, 25): ≥ 2,000
frames per second for retarget + lock, and retarget + lock ≥ 2× three.js's retargetClip (retarget only).
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import dataclasses  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import animkit  # noqa: E402
from animkit.io.bvh import dumps_bvh  # noqa: E402
from animkit.keyframes import Clip  # noqa: E402
from animkit.model.transforms import quaternion_from_matrix  # noqa: E402
from animkit.motion import detect_contacts, lock_feet, loop_poses  # noqa: E402
from animkit.motion.leg_ik import HeldLeg, held_leg_ik  # noqa: E402
from animkit.motion.measures import SourceMotion, measure_motion  # noqa: E402
from animkit.motion.retarget import retarget_full  # noqa: E402

from .harness import Stats, arguments, interleaved, markdown_table, stats_of, write_results  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
THREE = "three.js retargetClip (Node, no foot locking)"
#: retargetClip's options that write the same clip with less work (no whole-skeleton matrix refresh before and after
#: each frame, no inverse of the target's world matrix per bone, no bone positions copied back): its strongest path
#: here; :func:`threejs_options_agree` checks that the clip is the same as with the defaults
FAST_OPTIONS = {"useTargetMatrix": True, "preserveBoneMatrix": False, "preserveBonePositions": False}
#: Node rounds per process: the first warms the JIT up; the fastest of the others is taken
NODE_ROUNDS = 4
DATA = ROOT / "tests" / "data"


def source_poses(frames: int) -> tuple[animkit.Scene, np.ndarray]:
    walk = animkit.load(DATA / "cmu_02_01_walk.bvh")
    cycle = walk.clip().sample_frames()[1:]  # frame 0 is the T-pose of CMU's conversions
    loops = int(np.ceil((frames - 1) / (len(cycle) - 1)))
    return walk, loop_poses(walk.figure, cycle, loops)[:frames]


def threejs_inputs(walk: animkit.Scene, P: np.ndarray, target: animkit.Scene, pairs: dict[str, str],
                   folder: Path) -> tuple[Path, Path]:
    """The looped source as BVH and the target's rest skeleton and bone names as JSON, for three.js."""
    src = folder / "source.bvh"
    src.write_text(dumps_bvh(walk.figure, P, frame_time=1 / walk.clip().fps), encoding="utf-8")
    fig = target.figure
    names, rest, starts = fig.node_names, fig.rest_pose(), fig.joint_dofs
    bones = []
    for arc in fig.arcs():
        M = arc.L @ arc.joint.matrix(rest[starts[arc.joint.name]])
        q = quaternion_from_matrix(M[:3, :3])
        bones.append({"name": arc.child.name, "parent": -1 if arc.parent is None else names.index(arc.parent.name),
                      "position": M[:3, 3].tolist(), "quaternion": [q[1], q[2], q[3], q[0]]})
    spec = folder / "target.json"
    spec.write_text(json.dumps({"bones": bones, "names": pairs, "hip": walk.figure.root.name}), encoding="utf-8")
    return src, spec


SCRIPT = ROOT / "tests" / "node" / "threejs_retarget.mjs"


def run_threejs(src: Path, spec: Path, rounds: int, options: dict[str, object]) -> dict[str, object]:
    """One Node process: ``rounds`` calls of retargetClip with ``options`` (its seconds per call, frames, digest)."""
    out = subprocess.run(["node", str(SCRIPT), str(src), str(spec), str(rounds), json.dumps(options)], check=True,
                         capture_output=True, text=True)
    result: dict[str, object] = json.loads(out.stdout)
    return result


def threejs_options_agree(src: Path, spec: Path) -> bool:
    """Whether retargetClip writes the same clip (its digest, a weighted sum of every value) with
    :data:`FAST_OPTIONS` as with its defaults."""
    return run_threejs(src, spec, 1, {})["digest"] == run_threejs(src, spec, 1, FAST_OPTIONS)["digest"]


def with_threejs(ours: dict[str, object], rounds: int, src: Path, spec: Path) -> dict[str, Stats] | None:
    """Interleave our cases with three.js's SkeletonUtils.retargetClip under Node (one process per round:
    :data:`NODE_ROUNDS` calls with :data:`FAST_OPTIONS`, timed inside Node, the fastest after the first taken);
    None when Node or three is missing."""
    if shutil.which("node") is None or not (ROOT / "tests" / "node" / "node_modules" / "three").is_dir():
        return None
    samples: dict[str, list[float]] = {name: [] for name in ours}
    samples[THREE] = []
    for fn in ours.values():  # warm-up
        fn()  # type: ignore[operator]
    for _ in range(rounds):
        for name, fn in ours.items():
            t0 = time.perf_counter()
            fn()  # type: ignore[operator]
            samples[name].append(time.perf_counter() - t0)
        seconds = run_threejs(src, spec, NODE_ROUNDS, FAST_OPTIONS)["seconds"]
        samples[THREE].append(min(seconds[1:]))  # type: ignore[index]
    return {name: stats_of(name, v) for name, v in samples.items()}


def inputs(frames: int) -> tuple[animkit.Scene, np.ndarray, animkit.Scene, animkit.Scene]:
    """(the walk, its looped poses, the walk as a scene whose clip is the looped poses, CesiumMan)."""
    walk, P = source_poses(frames)
    fps = walk.clip().fps
    looped = dataclasses.replace(walk, clips={"walk": Clip.from_poses(walk.figure, np.arange(len(P)) / fps, P,
                                                                      name="walk", fps=fps)})
    return walk, P, looped, animkit.load(DATA / "CesiumMan.glb")


def retarget_and_lock(looped: animkit.Scene, target: animkit.Scene) -> None:
    """What `animkit retarget` runs: retarget_full, then lock_feet on the character's meshes."""
    r = retarget_full(looped, target)
    lock_feet(r.figure, r.poses, looped.clip().fps, up=target.up, meshes=target.meshes)


#: the stages of retarget + lock timed by :func:`stage_times`: (label, "module:function" summed, module the file's stem
#: under animkit/motion or animkit/model); each stage counts what it calls (a stage inside another is counted in both)
STAGES = (
    ("retarget: rest alignment (bone map turns, planted feet)", ("retarget:_bones",)),
    ("retarget: drive, the source's turns (polar factors, aims, hinge twists)", ("retarget_drive:_turns",)),
    ("retarget: drive, joints read depth by depth (Euler reads, world turns)", ("retarget_drive:_drive_groups",)),
    ("retarget: grounding (ground plane, feet down)", ("retarget_ground:_ground_plane_of",
                                                        "retarget_ground:_source_feet_down")),
    ("lock: world matrices of the clip (FK of the nodes read)", ("leg_ik:_read_world",)),
    ("lock: contact detection", ("legs:detect_contacts",)),
    ("lock: pivot turns (held masks)", ("pivot:held_masks",)),
    ("lock: measures before and after", ("legs:measure",)),
    ("lock: goals (lock points, ease in and out)", ("foot_lock:_goal",)),
    ("lock: pelvis (offset, carried, its world matrices)", ("pelvis:pelvis_offset", "leg_ik:_carry",
                                                            "leg_ik:_carried_world")),
    ("lock: leg IK, every pass (its write-back included)", ("leg_ik:held_legs_ik",)),
    ("lock: write-back into the joints (Euler reads), every pass", ("leg_ik:_write_joints",)),
    ("lock: soles kept (FK of the legs, the IK again: its IK also in the row above)", ("foot_lock:_sole_kept",)),
    ("lock: never-worse judge", ("foot_lock:_worse_stretches",)),
    ("FK, every call (the native kernel and its tan(θ/2))", ("fk:fk_compiled",)),
)


def stage_times(looped: animkit.Scene, target: animkit.Scene, calls: int = 5) -> tuple[float, dict[str, float]]:
    """(CPU seconds per retarget + lock, CPU seconds per call in each of :data:`STAGES`), by process time (the
    machine's other load not counted): each stage's functions wrapped for the run (every module's name for them),
    then put back."""
    import functools
    import sys as _sys

    spent: dict[str, float] = {}
    patched: list[tuple[object, str, object]] = []
    for label, names in STAGES:
        for name in names:
            stem, _, fn = name.partition(":")
            mod = _sys.modules.get(f"animkit.motion.{stem}") or _sys.modules[f"animkit.model.{stem}"]
            orig = getattr(mod, fn)

            def timed(*a: object, _f: object = orig, _label: str = label, **kw: object) -> object:
                t = time.process_time()
                try:
                    return _f(*a, **kw)  # type: ignore[operator]
                finally:
                    spent[_label] = spent.get(_label, 0.0) + time.process_time() - t

            wrapped = functools.wraps(orig)(timed)  # type: ignore[arg-type]
            for other in list(_sys.modules.values()):
                if getattr(other, "__name__", "").startswith("animkit.") and getattr(other, fn, None) is orig:
                    patched.append((other, fn, orig))
                    setattr(other, fn, wrapped)
    try:
        retarget_and_lock(looped, target)
        spent.clear()
        t0 = time.process_time()
        for _ in range(calls):
            retarget_and_lock(looped, target)
        total = (time.process_time() - t0) / calls
    finally:
        for mod, fn, orig in patched:
            setattr(mod, fn, orig)
    return total, {label: spent.get(label, 0.0) / calls for label, _ in STAGES}


FRESH = """
import json, time
import benchmarks.bench_motion as b
_, _, looped, target = b.inputs({frames})
t0 = time.perf_counter()
b.retarget_and_lock(looped, target)
t1 = time.perf_counter()
b.retarget_and_lock(looped, target)
print(json.dumps([t1 - t0, time.perf_counter() - t1]))
"""


def fresh_first_call(frames: int) -> tuple[float, float]:
    """(seconds of the first retarget + lock in a fresh process, of its second): a compile on first use would show."""
    out = subprocess.run([sys.executable, "-c", FRESH.format(frames=frames)], check=True, capture_output=True,
                         text=True, cwd=ROOT)
    first, second = json.loads(out.stdout.strip().splitlines()[-1])
    return float(first), float(second)


#: the worker that times retarget + lock in another checkout (``--against DIR``): public names only, so that any
#: tree since the retarget existed runs it; one call per line read, its seconds printed back
AGAINST = r"""
import dataclasses, sys, time
import numpy as np
import animkit
from animkit.keyframes import Clip
from animkit.motion.retarget import retarget_full
from animkit.motion import lock_feet, loop_poses
walk, target, frames = animkit.load(sys.argv[1]), animkit.load(sys.argv[2]), int(sys.argv[3])
cycle = walk.clip().sample_frames()[1:]
P = loop_poses(walk.figure, cycle, int(np.ceil((frames - 1) / (len(cycle) - 1))))[:frames]
fps = walk.clip().fps
looped = dataclasses.replace(walk, clips={"walk": Clip.from_poses(walk.figure, np.arange(len(P)) / fps, P,
                                                                  name="walk", fps=fps)})
def both():
    r = retarget_full(looped, target)
    lock_feet(r.figure, r.poses, fps, up=target.up, meshes=target.meshes)
both()
print("ready", flush=True)
for _ in sys.stdin:
    t0 = time.perf_counter()
    both()
    print(time.perf_counter() - t0, flush=True)
"""


def against_case(tree: Path, frames: int) -> tuple[subprocess.Popen[str], object]:
    """(the worker process in ``tree``, a case calling it once: retarget + lock there, in a warm process of its own)."""
    proc = subprocess.Popen([sys.executable, "-c", AGAINST, str(DATA / "cmu_02_01_walk.bvh"),
                             str(DATA / "CesiumMan.glb"), str(frames)], cwd=tree, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(tree)})
    assert proc.stdin is not None and proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        raise RuntimeError(f"the worker in {tree} did not start")

    def call() -> None:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        float(proc.stdout.readline())
    return proc, call


def main() -> None:
    ap = arguments(__doc__, rounds=7, against="optional", out=ROOT / "benchmarks" / "results_motion.md")
    ap.add_argument("--frames", type=int, default=2000)
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    walk, P, looped, target = inputs(args.frames)
    fps = walk.clip().fps
    fresh = [fresh_first_call(args.frames) for _ in range(3)]  # before the others warm anything up
    first = retarget_full(looped, target)
    bm, T, fig = first.bone_map, first.poses, first.figure
    F = len(P)

    def do_retarget() -> None:
        retarget_full(looped, target)

    def do_lock() -> None:
        lock_feet(fig, T, fps, up=target.up, meshes=target.meshes)

    def do_both() -> None:
        retarget_and_lock(looped, target)

    # the per-frame baseline: the leg IK of one leg called once per frame (a Python loop over frames)
    r = lock_feet(fig, T, fps, up=target.up, meshes=target.meshes)
    leg = r.legs[0]
    W = fig.world_batch(T)
    goal = W[:, fig.node_names.index(leg.ankle), :3, 3] + 0.01
    eye = np.broadcast_to(np.eye(3), (F, 3, 3))
    reach = float(np.linalg.norm(W[:, fig.node_names.index(leg.ankle), :3, 3]
                                 - W[:, fig.node_names.index(leg.hip), :3, 3], axis=1).max())
    active = np.ones(F, dtype=bool)
    d_clip = np.linalg.norm(W[:, fig.node_names.index(leg.ankle), :3, 3] - W[:, fig.node_names.index(leg.hip), :3, 3],
                            axis=1)
    held = HeldLeg(leg, goal, active, eye, reach, 0.0, np.zeros(F), d_clip)  # not planted, no hip twist
    n_loop = min(F - 1, 200)  # each call takes frames f and f + 1

    def leg_batched() -> None:
        held_leg_ik(fig, T, W, held, goal, active)

    def leg_per_frame() -> None:
        for f in range(n_loop):
            one = HeldLeg(leg, goal[f:f + 2], active[:2], eye[:2], reach, 0.0, np.zeros(2), d_clip[f:f + 2])
            held_leg_ik(fig, T[f:f + 2], W[f:f + 2], one, goal[f:f + 2], active[:2])

    cases = {"retarget": do_retarget, "lock feet": do_lock, "retarget + lock feet": do_both,
             "one leg's IK, batched": leg_batched, f"one leg's IK, per frame ({n_loop} frames)": leg_per_frame}
    worker = None
    if args.against is not None:
        worker, cases[f"retarget + lock feet, in {args.against}"] = against_case(args.against.resolve(), F)
    with tempfile.TemporaryDirectory() as tmp:
        src, spec = threejs_inputs(walk, P, target, dict(bm.pairs), Path(tmp))
        agree = threejs_options_agree(src, spec) if shutil.which("node") else None
        three = with_threejs(cases, args.rounds, src, spec)  # type: ignore[arg-type]
    stats = three if three is not None else interleaved(cases, rounds=args.rounds)  # type: ignore[arg-type]
    if worker is not None:
        assert worker.stdin is not None
        worker.stdin.close()
        worker.wait()
    cpu, stages = stage_times(looped, target)
    contacts = detect_contacts(fig, T, fps, up=target.up)
    source = SourceMotion(walk.figure, P, walk.up, bm, walk.meshes)  # surface, the source's contacts
    m0 = measure_motion(fig, T, fps, up=target.up, meshes=target.meshes, source=source)
    m1 = measure_motion(fig, r.poses, fps, up=target.up, meshes=target.meshes, source=source)
    lines = [
        "# Motion: retarget + foot locking",
        "",
        f"Command: `flock /tmp/animkit-bench.lock python -m benchmarks.bench_motion --frames {args.frames} "
        f"--rounds {args.rounds}{' --against ' + str(args.against) if args.against is not None else ''}`",
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average (1 min) {load0:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end, on {os.cpu_count()} cores: "
        f"{'a loaded machine, ' if max(load0, os.getloadavg()[0]) > 0.5 * (os.cpu_count() or 1) else ''}"
        "the ratios within a round are what carries over.",
        "",
        f"Source: the CMU walk (02_01, {fps:g} fps) looped with its root motion to {F} frames "
        f"({len(walk.figure.node_names)} nodes); target: CesiumMan.glb ({len(fig.node_names)} nodes, "
        f"{fig.dof_count} DOFs), a glTF character. One core (BLAS threads 1); {platform.python_version()}, "
        f"NumPy {np.__version__}. The machine is shared by several engineers: absolute numbers are lower "
        "bounds. Cases interleaved round by round; medians with min–max.",
        "",
        markdown_table(stats, unit="ms", scale=1e3, baseline=THREE if three is not None else None),
        "",
        ("three.js " + "SkeletonUtils.retargetClip (r170, the anchor: it retargets frame by frame through an "
         "AnimationMixer and writes a clip; it locks no feet) ran in the same rounds, one Node process per round "
         f"({NODE_ROUNDS} calls timed inside Node, the fastest after the first taken), with its strongest options "
         f"{json.dumps(FAST_OPTIONS)} (less work per frame; the clip they write "
         f"{'is the same as' if agree else 'DIFFERS from'} the defaults' clip, by a digest of every value)."
         if three is not None else
         "three.js was not run (Node or tests/node/node_modules/three missing: npm install --prefix tests/node)."),
        "",
        f"First call in a fresh process (imports and files loaded, nothing run yet): retarget + lock feet "
        f"{', '.join(f'{a:.2f} s' for a, _ in fresh)} in three processes; the second call in the same processes "
        f"{', '.join(f'{b:.2f} s' for _, b in fresh)} (a compile on first use would show as a gap).",
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
        (f"Goal retarget + lock feet ≥ 2× three.js retargetClip: "
         f"{'met' if stats[THREE].median >= 2 * stats['retarget + lock feet'].median else 'NOT met'} "
         f"({stats[THREE].median / stats['retarget + lock feet'].median:.2f}×; retarget alone "
         f"{stats[THREE].median / stats['retarget'].median:.2f}×)." if three is not None else ""),
        "",
        f"Goal ≥ 2,000 frames/s for retarget + lock feet: "
        f"{'met' if F / stats['retarget + lock feet'].median >= 2000 else 'NOT met'} "
        f"({F / stats['retarget + lock feet'].median:,.0f} frames/s). The locked clip: "
        f"{int(contacts.mask.any(axis=1).sum())} of {F} frames with a foot down; skate "
        f"{r.before.skate_mm:.2f} → {r.after.skate_mm:.2f} mm per contact frame, penetration "
        f"{r.before.penetration_mm:.2f} → {r.after.penetration_mm:.2f} mm, knee pop "
        f"{r.before.knee_pop_deg:.1f} → {r.after.knee_pop_deg:.1f}°; {len(r.unlocked)} contacts left unlocked "
        "(locking them made something worse).",
        "",
        "By `animkit.motion.measures` (the mesh's surface, the source's contacts carried over), as retargeted → "
        f"locked: skate {m0.skate_mm_per_s:.0f} → {m1.skate_mm_per_s:.0f} mm/s, penetration "
        f"{m0.penetration_mm:.1f} → {m1.penetration_mm:.1f} mm, planted foot's lowest point (median) "
        f"{m0.planted_height_median_mm:.1f} → {m1.planted_height_median_mm:.1f} mm, knee pop "
        f"{m0.knee_pop_deg:.1f} → {m1.knee_pop_deg:.1f}°, bone directions {m1.bone_direction_median_deg:.1f}° "
        f"median, {m1.bone_direction_p90_deg:.1f}° p90, travel ratio {m1.travel_ratio:.3f}.",
        "",
    ]
    lines += [
        f"Where the time goes (CPU time, not wall: {cpu * 1e3:.0f} ms per retarget + lock in the same process, 5 "
        "calls; a stage inside another counts in both; the rest is spread over many small array steps):",
        "",
        "| stage | CPU ms per call | share |",
        "|---|---|---|",
        *(f"| {label} | {sec * 1e3:.1f} | {100 * sec / cpu:.0f} % |" for label, sec in stages.items()),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    write_results(Path(args.out), text)


if __name__ == "__main__":
    main()
