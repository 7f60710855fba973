"""A fresh process's first call of each compiled path, on an empty numba cache (cold) and on a filled one (cached).

    python -m benchmarks.bench_first_call --rounds 5                       # writes results_first_call.md
    python -m benchmarks.bench_first_call --rounds 5 --against /work/main  # also another tree, interleaved

Protocol: every sample is a new Python process (``python -c``) that imports animkit, builds its inputs (untimed:
the "setup" column) and times its first call, then a second one (the warm time, for scale). "cold": numba's cache
is an empty temporary folder (NUMBA_CACHE_DIR), as on CI's fresh clone or a user's first run; "cached": a folder
that an untimed run of the same case filled before the rounds. Rounds interleave every case, tree and cache state
(A cold, A cached, B cold, B cached, …) so a slow spell of the shared machine hits them alike; medians with the
min–max. The cases: FABRIK and LM on the humanoid's arm (``IKProblem(...).solve``; FABRIK also with its compiled
solve forced from the first call, ``jit.ALWAYS``: its compile or load time), a natural reach (the humanoid
scene's priors, :meth:`Priors.problem` on the torso), skinning CesiumMan's whole clip (``Mesh.positions``),
reading a CMU BVH clip (``animkit.load``) and one rendered frame of the humanoid (``FigureRenderer.frame``).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .harness import MIN_ROUNDS, arguments, stats_of, write_results

ROOT = Path(__file__).resolve().parent.parent

_CLOCK = "import time, json\nt0 = time.perf_counter()\n"
_TIME = """
t1 = time.perf_counter()
first()
t2 = time.perf_counter()
first()
t3 = time.perf_counter()
print(json.dumps({"setup": t1 - t0, "first": t2 - t1, "second": t3 - t2}))
"""
_ARM = """
import numpy as np
import animkit
from animkit.ik import {solver}, IKProblem
fig = animkit.load("scenes/humanoid.toml").figure
start = fig.rest_pose()
start[fig.dof_index("elbow_r.rx")] = -0.6
target = np.array([-0.25, 1.2, 0.35])
problem = IKProblem(fig, "hand_r", "arm", solver={solver}(), tol=1e-4)
first = lambda: problem.solve(target, start)
"""
CASES = {
    "FABRIK solve": _ARM.format(solver="FABRIK"),
    "FABRIK kernel forced (jit.ALWAYS)": "from animkit import jit\njit.ALWAYS = True\n" + _ARM.format(solver="FABRIK"),
    "LM solve": _ARM.format(solver="LM"),
    "natural reach": """
import numpy as np
import animkit
from animkit.ik.natural import Priors
fig = animkit.load("scenes/humanoid.toml").figure
problem = Priors().problem(fig, "hand_r", "torso")
first = lambda: problem.solve(np.array([-0.3, 1.25, 0.45]))
""",
    "skin": """
import animkit
ch = animkit.load("tests/data/CesiumMan.glb")
W = ch.figure.world_batch(ch.clip().sample_frames())
first = lambda: ch.meshes[0].positions(W)
""",
    "BVH read": """
import animkit
first = lambda: animkit.load("tests/data/cmu_02_01_walk.bvh")
""",
    "render frame": """
import animkit
from animkit.render import FigureRenderer, look_at
fig = animkit.load("scenes/humanoid.toml").figure
W = fig.world_batch(fig.rest_pose()[None])[0]
renderer = FigureRenderer(fig, look_at((2.0, 1.4, 3.0), (0.0, 1.0, 0.0)))
first = lambda: renderer.frame(W)
""",
}


def sample(tree: Path, code: str, cache: str) -> dict[str, float]:
    """One fresh process: the case's set-up, first and second call (seconds), with numba's cache in ``cache``."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(tree))
    env.pop("ANIMKIT_JIT", None)
    out = subprocess.run([sys.executable, "-c", _CLOCK + code + _TIME], cwd=tree, env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _commit(tree: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def main() -> None:
    ap = arguments(__doc__, against="append", out=Path(__file__).with_name("results_first_call.md"))
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated subset of: " + ", ".join(CASES))
    args = ap.parse_args()
    if args.rounds < MIN_ROUNDS:
        raise SystemExit(f"--rounds must be >= {MIN_ROUNDS}")
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    trees = {"this tree": ROOT, **{f"{t} ({_commit(t)})": t for t in args.against}}
    samples: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        warm = {t: str(Path(tmp, f"cached{i}")) for i, t in enumerate(trees)}
        for tname, tree in trees.items():  # fill the cached folders (untimed)
            for c in cases:
                sample(tree, CASES[c], warm[tname])
        for r in range(args.rounds):
            for c in cases:
                for tname, tree in trees.items():
                    with tempfile.TemporaryDirectory(dir=tmp) as cold:
                        samples.setdefault((c, tname, "cold"), []).append(sample(tree, CASES[c], cold))
                    samples.setdefault((c, tname, "cached"), []).append(sample(tree, CASES[c], warm[tname]))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    load1 = os.getloadavg()
    rows = ["| case | tree | numba cache | first call (s) | set-up incl. import (s) | second call (ms) |",
            "|---|---|---|---|---|---|"]
    for (c, tname, state), ss in samples.items():
        first, setup = stats_of(c, [s["first"] for s in ss]), stats_of(c, [s["setup"] for s in ss])
        second = stats_of(c, [s["second"] for s in ss])
        rows.append(f"| {c} | {tname} | {state} | {first.spread()} | {setup.spread()} | {second.spread(1e3)} |")
    text = (f"# First calls in a fresh process: empty and filled numba cache\n\n"
            f"`python -m benchmarks.bench_first_call --rounds {args.rounds}"
            + (f' --cases "{args.cases}"' if cases != list(CASES) else "")
            + "".join(f" --against {t}" for t in args.against)
            + f"` on {platform.machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; commit "
            f"{_commit(ROOT)}; load average {load0[0]:.1f} before and {load1[0]:.1f} after (2 cores shared with "
            f"other work: rounds interleaved, medians with min–max).\n\n" + "\n".join(rows) + "\n")
    print(text)
    write_results(args.out, text)


if __name__ == "__main__":
    main()
