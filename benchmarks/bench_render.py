"""Render benchmark: one motion clip, 120 frames at 640x480, bones drawn as shaded capsules over a ground grid.

    python -m benchmarks.bench_render            # from the repository root

Paths measured, each in a fresh subprocess pinned to one CPU core (so peaks and threads don't mix):

* animkit: the NumPy renderer alone (frames consumed, nothing written), and end to end into a GIF;
* matplotlib: a stick figure on 3D axes, ``FuncAnimation`` + ``PillowWriter`` (alone: ``canvas.draw``);
* trimesh: ``Scene.save_image`` through pyglet<2 under an Xvfb this script starts (alone: the PNG per frame
  that ``save_image`` returns; end to end: those PNGs decoded and written into a GIF by Pillow).

The peers run in the benchmark's own environment, ``.bench-venv`` (see ``requirements-render.txt``); a peer that
cannot run is skipped with the reason. Memory: tracemalloc's peak (Python and NumPy allocations, a separate
traced run) and the growth of ru_maxrss over the measured part. Flatness: animkit's GIF path at 160x120 for
100 and 10,000 frames of the same clip, looped.

The clip: ``tests/data/cmu_02_01_walk.bvh`` when ``animkit.load`` reads it; otherwise a synthetic 120-frame walk
on ``scenes/humanoid.toml`` (sine waves on hips, knees, shoulders, elbows), and the output says so.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BVH = ROOT / "tests" / "data" / "cmu_02_01_walk.bvh"
VENV_PYTHON = ROOT / ".bench-venv" / "bin" / "python"
FRAMES, SIZE, FPS = 120, (640, 480), 30.0
Array = NDArray[np.float64]

# --- the clip and the capsule figure ----------------------------------------------------------------------


def load_clip(frames: int) -> tuple[Any, Array, str, str]:
    """(figure, poses (frames, D), up axis, label): the BVH walk when it loads, else a synthetic humanoid walk."""
    import animkit

    if BVH.exists():
        try:
            scene = animkit.load(str(BVH))
            clip = scene.clip()
            poses = clip.sample(np.arange(frames) / clip.fps)
            return scene.figure, poses, scene.up, f"CMU 02_01 walk (BVH, {len(scene.figure.node_names)} joints)"
        except animkit.AnimkitError as exc:
            reason = f"animkit.load could not read {BVH.name}: {exc}"
    else:
        reason = f"{BVH.relative_to(ROOT)} is not in this tree"
    scene = animkit.load(str(ROOT / "scenes" / "humanoid.toml"))
    return scene.figure, synthetic_walk(scene.figure, frames), scene.up, f"SYNTHETIC humanoid walk ({reason})"


def synthetic_walk(figure: Any, frames: int) -> Array:
    """A walk from sine waves: one stride per second at 30 fps, hips moving forward along +z."""
    t = np.arange(frames) / FPS
    w = 2 * np.pi * t
    P = np.repeat(figure.rest_pose()[None], frames, axis=0)
    d = figure.dof_index
    s = np.sin(w)
    P[:, d("hips.tz")] += 1.2 * t
    P[:, d("hips.ty")] += 0.02 * np.cos(2 * w)
    P[:, d("hips.ry")] = 0.08 * s
    P[:, d("hip_r.rx")], P[:, d("hip_l.rx")] = -0.45 * s, 0.45 * s
    P[:, d("knee_r.rx")] = 0.6 * np.clip(np.sin(w + 1.2), 0, None) + 0.05
    P[:, d("knee_l.rx")] = 0.6 * np.clip(-np.sin(w + 1.2), 0, None) + 0.05
    P[:, d("shoulder_r.rx")], P[:, d("shoulder_l.rx")] = 0.4 * s, -0.4 * s
    P[:, d("elbow_r.rx")] = -0.3 - 0.2 * np.clip(s, 0, None)
    P[:, d("elbow_l.rx")] = -0.3 - 0.2 * np.clip(-s, 0, None)
    return P


def owner_parts(mesh: Any) -> list[tuple[int, Array, NDArray[np.intp], Array]]:
    """The figure mesh split per owning node: (node index, vertices, faces, face colours), for trimesh's scene."""
    parts = []
    for node in np.unique(mesh.owner):
        vid = np.flatnonzero(mesh.owner == node)
        remap = np.full(len(mesh.owner), -1, dtype=np.intp)
        remap[vid] = np.arange(len(vid))
        keep = np.all(mesh.owner[mesh.faces] == node, axis=1)
        parts.append((int(node), mesh.vertices[vid], remap[mesh.faces[keep]], mesh.face_colors[keep]))
    return parts


def setup(frames: int, size: tuple[int, int]) -> dict[str, Any]:
    from animkit.render.clip import clip_camera
    from animkit.render.scene import figure_mesh, framing_points
    from animkit.scene import CameraSpec

    figure, poses, up, label = load_clip(frames)
    radius = 0.04 * figure.size()
    mesh = figure_mesh(figure, bones=True, bone_radius=radius)  # the skeleton as capsules, as animkit draws it
    camera = clip_camera(CameraSpec(), up, framing_points(figure, mesh, poses), size=size)
    return {"figure": figure, "poses": poses, "up": up, "label": label, "mesh": mesh, "camera": camera,
            "radius": radius}


def loop_poses(poses: Array, n: int) -> Array:
    return poses[np.arange(n) % len(poses)]


# --- the cases (each runs in its own subprocess) --------------------------------------------------------------


def case_animkit_render(ctx: dict[str, Any], out: Path) -> int:
    from animkit.render.clip import FigureRenderer, Style

    r = FigureRenderer(ctx["figure"], ctx["camera"], up=ctx["up"], style=Style(grid=True), mesh=ctx["mesh"])
    n = 0
    for _ in r.frames(ctx["poses"]):
        n += 1
    return n


def case_animkit_gif(ctx: dict[str, Any], out: Path) -> int:
    from animkit.render.clip import Style, render_poses

    rep = render_poses(ctx["figure"], ctx["poses"], out / "animkit.gif", fps=FPS, camera=ctx["camera"],
                       up=ctx["up"], style=Style(grid=True), quiet=True, mesh=ctx["mesh"])
    return rep.frames


def _mpl(ctx: dict[str, Any], out: Path, save: bool) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation, PillowWriter

    from animkit.render.scene import BONE_COLOR

    figure, poses, cam = ctx["figure"], ctx["poses"], ctx["camera"]
    pos = figure.world_positions(poses)  # (F, N, 3)
    index = {n: i for i, n in enumerate(figure.node_names)}
    pairs = [(index[a.parent.name], index[a.child.name]) for a in figure.arcs() if a.parent is not None]
    if ctx["up"] == "y":  # matplotlib's 3D axes are z-up
        pos = pos[..., [0, 2, 1]]
    w, h = cam.width, cam.height
    fig = plt.figure(figsize=(w / 100, h / 100), dpi=100)
    ax = fig.add_subplot(projection="3d")
    lo, hi = pos.reshape(-1, 3).min(0), pos.reshape(-1, 3).max(0)
    c, r = (lo + hi) / 2, (hi - lo).max() / 2
    ax.set(xlim=(c[0] - r, c[0] + r), ylim=(c[1] - r, c[1] + r), zlim=(c[2] - r, c[2] + r))
    lines = [ax.plot([], [], [], lw=3, color=BONE_COLOR)[0] for _ in pairs]

    def update(f: int) -> list[Any]:
        for line, (a, b) in zip(lines, pairs, strict=True):
            seg = pos[f, [a, b]]
            line.set_data_3d(seg[:, 0], seg[:, 1], seg[:, 2])
        return lines

    if save:
        anim = FuncAnimation(fig, update, frames=len(poses), blit=False)
        anim.save(out / "mpl.gif", writer=PillowWriter(fps=FPS))
    else:
        for f in range(len(poses)):
            update(f)
            fig.canvas.draw()
            np.asarray(fig.canvas.buffer_rgba())
    plt.close(fig)
    return len(poses)


def case_mpl_render(ctx: dict[str, Any], out: Path) -> int:
    return _mpl(ctx, out, save=False)


def case_mpl_gif(ctx: dict[str, Any], out: Path) -> int:
    return _mpl(ctx, out, save=True)


def _trimesh(ctx: dict[str, Any], out: Path, save: bool) -> int:
    import io
    import math

    import pyglet
    import trimesh
    from PIL import Image

    if int(pyglet.version.split(".")[0]) >= 2:
        raise RuntimeError(f"trimesh's Scene.save_image needs pyglet<2, found {pyglet.version}")
    figure, poses, cam = ctx["figure"], ctx["poses"], ctx["camera"]
    scene = trimesh.Scene()
    owners = []
    for k, (parent, v, f, colors) in enumerate(owner_parts(ctx["mesh"])):
        mesh = trimesh.Trimesh(v, f, process=False)
        mesh.visual.face_colors = (np.c_[colors, np.ones(len(colors))] * 255).astype(np.uint8)
        name = f"bone{k}"
        scene.add_geometry(mesh, node_name=name, geom_name=name)
        owners.append((name, parent))
    # ground grid, as animkit draws it (lines on the ground plane)
    ext = 1.5 * figure.size()
    ticks = np.linspace(-ext, ext, 13)
    segs = []
    for t in ticks:
        a, b = (t, 0.0, -ext), (t, 0.0, ext)
        c, d = (-ext, 0.0, t), (ext, 0.0, t)
        segs += [(a, b), (c, d)]
    segs_a = np.asarray(segs)
    if ctx["up"] == "z":
        segs_a = segs_a[..., [0, 2, 1]]
    scene.add_geometry(trimesh.load_path(segs_a), node_name="grid", geom_name="grid")
    scene.camera.resolution = (cam.width, cam.height)
    fy = cam.fov_y_deg
    fx = math.degrees(2 * math.atan(math.tan(math.radians(fy) / 2) * cam.width / cam.height))
    scene.camera.fov = (fx, fy)
    scene.camera_transform = np.linalg.inv(cam.view_matrix())
    frames = []
    blank = 0
    for f in range(len(poses)):
        W = figure.world_batch(poses[f:f + 1])[0]
        for name, parent in owners:
            scene.graph.update(frame_to=name, matrix=W[parent])
        png = scene.save_image(resolution=(cam.width, cam.height), visible=True)
        if save or f == 0:
            img = Image.open(io.BytesIO(png)).convert("RGB")
            if f == 0:
                img.save(out / "trimesh_first.png")
                blank = int(np.asarray(img).max() < 8)
            if save:
                frames.append(img)
    if blank:
        raise RuntimeError("trimesh's first frame read back black")
    if save:
        frames[0].save(out / "trimesh.gif", save_all=True, append_images=frames[1:], duration=int(1000 / FPS),
                       loop=0)
    return len(poses)


def case_trimesh_render(ctx: dict[str, Any], out: Path) -> int:
    return _trimesh(ctx, out, save=False)


def case_trimesh_gif(ctx: dict[str, Any], out: Path) -> int:
    return _trimesh(ctx, out, save=True)


CASES: dict[str, Callable[[dict[str, Any], Path], int]] = {
    "animkit-render": case_animkit_render, "animkit-gif": case_animkit_gif,
    "mpl-render": case_mpl_render, "mpl-gif": case_mpl_gif,
    "trimesh-render": case_trimesh_render, "trimesh-gif": case_trimesh_gif,
}


def child(case: str, frames: int, size: tuple[int, int], trace: bool, out: Path) -> dict[str, Any]:
    """Run one case here (a fresh process): set up, then measure the case alone."""
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    ctx = setup(FRAMES, size)
    if frames != len(ctx["poses"]):
        ctx["poses"] = loop_poses(ctx["poses"], frames)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    n = CASES[case](ctx, out)
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] if trace else None
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"case": case, "frames": n, "seconds": seconds, "fps": n / seconds, "label": ctx["label"],
            "tracemalloc_peak_mb": None if peak is None else peak / 2**20, "rss_growth_mb": (rss1 - rss0) / 1024,
            "rss_peak_mb": rss1 / 1024, "cpu": cpu}


# --- the orchestrator -------------------------------------------------------------------------------------


def run_child(python: Path | str, case: str, *, frames: int = FRAMES, size: tuple[int, int] = SIZE,
              trace: bool = False, env: dict[str, str] | None = None, out: Path) -> dict[str, Any]:
    cmd = [str(python), "-m", "benchmarks.bench_render", "--child", case, "--frames", str(frames),
           "--size", f"{size[0]}x{size[1]}", "--out", str(out)] + (["--trace"] if trace else [])
    e = dict(os.environ if env is None else env)
    e.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", LP_NUM_THREADS="1")
    p = subprocess.run(cmd, cwd=ROOT, env=e, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"case": case, "error": tail}
    return json.loads(p.stdout.strip().splitlines()[-1])


def start_xvfb() -> tuple[subprocess.Popen[bytes] | None, str | None, str]:
    if shutil.which("Xvfb") is None:
        return None, None, "Xvfb is not installed"
    for n in range(110, 200):
        if Path(f"/tmp/.X11-unix/X{n}").exists() or Path(f"/tmp/.X{n}-lock").exists():
            continue
        proc = subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(300):
            if Path(f"/tmp/.X11-unix/X{n}").exists():
                return proc, f":{n}", ""
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        proc.kill()
        proc.wait()
    return None, None, "Xvfb did not start"


def peer_python() -> tuple[Path | None, str]:
    if not VENV_PYTHON.exists():
        return None, (f"no {VENV_PYTHON.parent.parent.name}: python -m venv --system-site-packages .bench-venv && "
                      ".bench-venv/bin/pip install -r benchmarks/requirements-render.txt")
    return VENV_PYTHON, ""


def fmt(v: float | None, spec: str = ".1f") -> str:
    return "-" if v is None else format(v, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", choices=sorted(CASES), help=argparse.SUPPRESS)
    ap.add_argument("--frames", type=int, default=FRAMES)
    ap.add_argument("--size", default=f"{SIZE[0]}x{SIZE[1]}")
    ap.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--skip-flatness", action="store_true", help="skip the 100 vs 10,000 frame memory check")
    args = ap.parse_args()
    w, h = (int(v) for v in args.size.split("x"))
    if args.child:
        print(json.dumps(child(args.child, args.frames, (w, h), args.trace, args.out)))
        return

    out = Path(tempfile.mkdtemp(prefix="animkit-bench-"))
    venv, why_venv = peer_python()
    xvfb, display, why_x = start_xvfb()
    rows: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    try:
        for case in CASES:
            python: Path | str = sys.executable
            env = None
            if not case.startswith("animkit"):
                if venv is None:
                    rows[case] = {"case": case, "error": why_venv}
                    continue
                python = venv
            if case.startswith("trimesh"):
                if display is None:
                    rows[case] = {"case": case, "error": why_x}
                    continue
                env = dict(os.environ, DISPLAY=display)
            print(f"running {case} ...", file=sys.stderr, flush=True)
            timed = run_child(python, case, size=(w, h), env=env, out=out)
            if "error" not in timed:
                traced = run_child(python, case, size=(w, h), env=env, out=out, trace=True)
                timed["tracemalloc_peak_mb"] = traced.get("tracemalloc_peak_mb")
            rows[case] = timed
        flat: list[dict[str, Any]] = []
        if not args.skip_flatness:
            for n in (100, 10_000):
                print(f"running animkit-gif, {n} frames at 160x120 (memory) ...", file=sys.stderr, flush=True)
                flat.append(run_child(sys.executable, "animkit-gif", frames=n, size=(160, 120), trace=True, out=out))
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait()

    label = next((r["label"] for r in rows.values() if "label" in r), "?")
    print(f"## Render benchmark: {FRAMES} frames, {w}x{h}, one CPU core per run\n")
    print(f"Clip: {label}.  Bones drawn as shaded capsules over a ground grid (matplotlib: a stick figure).\n")
    print("| path | frames | seconds | fps | tracemalloc peak MB | ru_maxrss growth MB |")
    print("|---|---:|---:|---:|---:|---:|")
    names = {"animkit-render": "animkit, rendering alone", "animkit-gif": "animkit, end to end (GIF)",
             "mpl-render": "matplotlib 3D, canvas.draw alone", "mpl-gif": "matplotlib 3D, FuncAnimation+PillowWriter",
             "trimesh-render": "trimesh save_image (pyglet<2, Xvfb)", "trimesh-gif": "trimesh save_image + Pillow GIF"}
    for case, r in rows.items():
        if "error" in r:
            print(f"| {names[case]} | skipped: {r['error']} | | | | |")
            continue
        print(f"| {names[case]} | {r['frames']} | {r['seconds']:.2f} | {r['fps']:.1f} | "
              f"{fmt(r.get('tracemalloc_peak_mb'))} | {r['rss_growth_mb']:.1f} |")

    def fps(case: str) -> float | None:
        r = rows.get(case, {})
        return r.get("fps")

    print("\n| goal | measured | met |")
    print("|---|---:|:---:|")
    a_r, a_g, m_g, t_r = fps("animkit-render"), fps("animkit-gif"), fps("mpl-gif"), fps("trimesh-render")
    goals = [("rendering alone >= 30 fps (one core)", a_r, 30.0, "fps"),
             ("rendering alone >= 5x trimesh's frame rate", None if a_r is None or t_r is None else a_r / t_r, 5.0,
              "x"),
             ("end to end >= 3x matplotlib's", None if a_g is None or m_g is None else a_g / m_g, 3.0, "x")]
    for name, value, goal, unit in goals:
        met = "-" if value is None else ("yes" if value >= goal else "NO")
        print(f"| {name} | {fmt(value)} {unit} | {met} |")
    if flat and all("error" not in f for f in flat):
        a, b = flat
        growth = b["tracemalloc_peak_mb"] - a["tracemalloc_peak_mb"]
        print(f"| memory flat in clip length (animkit GIF, 160x120: 100 vs 10,000 frames) | "
              f"tracemalloc peak {a['tracemalloc_peak_mb']:.1f} -> {b['tracemalloc_peak_mb']:.1f} MB, "
              f"ru_maxrss growth {a['rss_growth_mb']:.1f} -> {b['rss_growth_mb']:.1f} MB | "
              f"{'yes' if growth < 16 else 'see note'} |")
        notes.append(f"flatness runs took {a['seconds']:.1f} s and {b['seconds']:.1f} s (traced); peak growth "
                     f"{growth:+.1f} MB for 100x the frames (threshold 16 MB: the writer's own buffer)")
    elif flat:
        notes.append(f"flatness check failed: {[f.get('error') for f in flat]}")
    if "SYNTHETIC" in label:
        notes.append("the clip is SYNTHETIC (no BVH loader or file in this tree); switch to the BVH when merged")
    for n in notes:
        print(f"\nNote: {n}")
    print(f"\nOutputs (GIFs, trimesh's first frame) in {out}")


if __name__ == "__main__":
    main()
