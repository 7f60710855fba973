"""The foot lock's cost per call on three cases, this tree against another (interleaved A, B, B, A):

    python -m benchmarks.bench_lock_calls --against /tmp/base-tree [--rounds 7] [--calls 3] [--cases fox,hop,walk]
        [--retarget]

Cases (each input built once per process, then ``lock_feet`` timed alone): **walk**, CMU 02_01 looped to 2,000 frames
retargeted onto CesiumMan and locked on its meshes (what ``animkit retarget`` and benchmarks/bench_motion.py run);
**hop**, CMU 131_03 (1,102 frames) onto the TOML humanoid with the source's contacts carried over (a row of
benchmarks/bench_retarget_matrix.py); **fox**, the Fox's Walk (51 frames) onto the re-proportioned Fox (the matrix's
quadruped row); **foxrun**, the Fox's Run (84 frames) likewise. ``--retarget``: each call is retarget + lock
(``retarget_full``, the source's contacts carried over, ``lock_feet``: what the matrix times for its frames/s column;
the walk's contacts found on its clip, as benchmarks/bench_motion.py does). Each tree runs in its own process
(``--against``: a checkout with its ``animkit/_native*.so`` built);
per round each process times ``--calls`` calls, CPU (``time.process_time``) and wall; printed: medians over rounds with
the range, and the median and range of the per-round ratio this tree ÷ the other. Prints only (no results file).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks.harness import arguments

ROOT = Path(__file__).resolve().parent.parent

WORKER = r'''
import os, sys, time, json, dataclasses, warnings, tempfile
for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(v, "1")
tree, case, data, mode = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
sys.path.insert(0, tree)
os.chdir(tree)
warnings.simplefilter("ignore")
from pathlib import Path
import numpy as np
import animkit
from animkit.keyframes import Clip
from animkit.motion import legs_of, lock_feet, loop_poses
from animkit.motion.measures import carry_contacts, height_contacts
from animkit.motion.retarget import retarget_full

DATA = Path(data)

def carried(src, tgt, mapping=None):
    clip = src.clip()
    P_s = clip.sample(clip.frame_times())
    def both():
        r = retarget_full(src, tgt, mapping)
        c = carry_contacts(height_contacts(src.figure, P_s, clip.fps, up=src.up), legs_of(src.figure),
                           legs_of(r.figure))
        return lambda: lock_feet(r.figure, r.poses, clip.fps, up=tgt.up, meshes=tgt.meshes, contacts=c)
    return (lambda: both()()) if mode == "rt" else both()

if case == "walk":
    walk = animkit.load(DATA / "cmu_02_01_walk.bvh")
    cycle = walk.clip().sample_frames()[1:]
    P = loop_poses(walk.figure, cycle, int(np.ceil((2000 - 1) / (len(cycle) - 1))))[:2000]
    fps = walk.clip().fps
    looped = dataclasses.replace(walk, clips={"walk": Clip.from_poses(walk.figure, np.arange(len(P)) / fps, P,
                                                                      name="walk", fps=fps)})
    target = animkit.load(DATA / "CesiumMan.glb")
    r = retarget_full(looped, target)
    call = lambda: lock_feet(r.figure, r.poses, fps, up=target.up, meshes=target.meshes)
    if mode == "rt":
        call = lambda: lock_feet(*(lambda r: (r.figure, r.poses))(retarget_full(looped, target)), fps, up=target.up,
                                 meshes=target.meshes)
elif case == "hop":
    call = carried(animkit.load(DATA / "cmu_131_03_hop_3dsmax.bvh"),
                   animkit.load(Path(tree) / "animkit" / "examples" / "humanoid.toml"))
else:
    from animkit.model.quadruped import match_quadruped_figure, quadruped_node_map
    from tests.test_characters import fox_walking, reproportioned_fox
    fox = animkit.load(DATA / "Fox.glb")
    long_fox = animkit.load(reproportioned_fox(Path(tempfile.mkdtemp())))
    mapping = quadruped_node_map(match_quadruped_figure(fox.figure), match_quadruped_figure(long_fox.figure))
    name = "Run" if case == "foxrun" else "Walk"
    P_fox, t_fox = fox_walking(fox.figure, fox.clips[name])
    walking = Clip.from_poses(fox.figure, t_fox, P_fox, name=name, fps=fox.clips[name].fps)
    call = carried(dataclasses.replace(fox, clips={name: walking}), long_fox, mapping)
call(); call()
print("ready", flush=True)
for line in sys.stdin:
    n = int(line)
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(n):
        call()
    print(json.dumps([(time.process_time() - c0) / n, (time.perf_counter() - w0) / n]), flush=True)
'''


def compare(case: str, trees: dict[str, Path], rounds: int, calls: int, mode: str = "lock") -> str:
    procs = {k: subprocess.Popen([sys.executable, "-c", WORKER, str(t), case, str(ROOT / "tests" / "data"), mode],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for k, t in trees.items()}
    for p in procs.values():
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    res: dict[str, list[list[float]]] = {k: [] for k in trees}
    for i in range(rounds):
        for k in ("this", "other") if i % 2 == 0 else ("other", "this"):
            p = procs[k]
            assert p.stdin is not None and p.stdout is not None
            p.stdin.write(f"{calls}\n")
            p.stdin.flush()
            res[k].append(json.loads(p.stdout.readline()))
    for p in procs.values():
        assert p.stdin is not None
        p.stdin.close()
        p.wait()
    out = []
    for j, what in enumerate(("CPU", "wall")):
        a, b = [r[j] for r in res["other"]], [r[j] for r in res["this"]]
        q = [y / x for x, y in zip(a, b, strict=True)]
        out.append(f"{case} {what}: other {1e3 * statistics.median(a):.1f} ms [{1e3 * min(a):.1f}–{1e3 * max(a):.1f}], "
                   f"this {1e3 * statistics.median(b):.1f} ms [{1e3 * min(b):.1f}–{1e3 * max(b):.1f}], this/other "
                   f"{statistics.median(q):.3f} [{min(q):.3f}–{max(q):.3f}]")
    return "\n".join(out)


def main() -> None:
    ap = arguments(__doc__, rounds=7, against="required")
    ap.add_argument("--calls", type=int, default=3, help="lock_feet calls per round and tree")
    ap.add_argument("--cases", default="fox,hop,walk", help="of fox, foxrun, hop, walk")
    ap.add_argument("--retarget", action="store_true", help="time retarget + lock per call (else the lock alone)")
    args = ap.parse_args()
    trees = {"this": ROOT, "other": Path(args.against).resolve()}
    for case in args.cases.split(","):
        print(compare(case, trees, args.rounds, args.calls, "rt" if args.retarget else "lock"), flush=True)


if __name__ == "__main__":
    main()
