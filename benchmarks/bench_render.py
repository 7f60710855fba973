"""Render benchmark: animkit's software rasteriser against trimesh drawing into ONE reused pyglet window.

    .bench-venv/bin/python -m benchmarks.bench_render          # from the repository root (see README: benchmarks)

Every timing goes through :func:`benchmarks.harness.interleaved` (rounds A, B, A, B, …; medians of ≥ 5, min–max
shown), one CPU core (this process pins itself to one core; Mesa's llvmpipe gets LP_NUM_THREADS=1):

* **figure** — 120 frames of the CMU 02_01 walk (38 joints) drawn as shaded capsules over a ground grid, at
  640x480 and at 1920x1080. animkit: :class:`FigureRenderer` with NumPy visibility and with the compiled kernel.
  trimesh (the strongest path a Python user has without a GPU): one ``SceneViewer`` window kept open under Xvfb
  (Mesa llvmpipe), each frame the bones' node transforms updated, ``on_draw`` and ``glReadPixels`` into one
  reused buffer — the same capsules, colours, camera and grid lines;
* **first frame** — a fresh renderer's first frame (backdrop and grid drawn) against a steady frame, by the wall
  clock and by the thread's CPU time;
* **memory** — peak resident memory (VmHWM) of a fresh process rendering the 1080p clip, per path;
* **character** — the skinned, textured CesiumMan (glTF), 24 frames over its walk at 640x480 (skinning +
  drawing); peers Blender as a Python module (``bpy``, Workbench, background) and f3d's Python bindings
  (offscreen) where they import.

Peers that cannot run are listed with the reason. The machine is shared: absolute numbers are lower bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("LP_NUM_THREADS", "1")  # llvmpipe: one rasteriser thread (set before Mesa loads)
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import Stats, arguments, interleaved, markdown_table, ratio  # noqa: E402

BVH = ROOT / "tests" / "data" / "cmu_02_01_walk.bvh"
CHARACTER = ROOT / "tests" / "data" / "CesiumMan.glb"
FRAMES = 120
CHARACTER_FRAMES = 24  # evenly spaced over the walk (the peers draw about one frame a second)
Array = NDArray[np.float64]


# --- the clip and the capsule figure ----------------------------------------------------------------------------


def setup(size: tuple[int, int], frames: int = FRAMES) -> dict[str, Any]:
    import animkit
    from animkit.render.frames import clip_camera
    from animkit.render.placed import figure_mesh, framing_points
    from animkit.scene import CameraSpec

    scene = animkit.load(str(BVH))
    clip = scene.clip()
    poses = clip.sample(np.arange(frames) / clip.fps)
    figure = scene.figure
    mesh = figure_mesh(figure, bones=True, bone_radius=0.04 * figure.size())
    camera = clip_camera(CameraSpec(), scene.up, framing_points(figure, mesh, poses), size=size)
    return {"figure": figure, "poses": poses, "up": scene.up, "mesh": mesh, "camera": camera,
            "world": figure.world_batch(poses)}


def animkit_renderer(ctx: dict[str, Any], jit: bool) -> Any:
    from animkit.render.frames import FigureRenderer, Style

    return FigureRenderer(ctx["figure"], ctx["camera"], up=ctx["up"], style=Style(grid=True), mesh=ctx["mesh"],
                          jit=jit)


def animkit_case(ctx: dict[str, Any], jit: bool) -> Callable[[], None]:
    r = animkit_renderer(ctx, jit)
    world = ctx["world"]

    def run() -> None:
        for w in world:
            r.frame(w)
    return run


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


class TrimeshWindow:
    """trimesh's SceneViewer kept open: per frame, node transforms updated, on_draw, glReadPixels (one buffer)."""

    def __init__(self, ctx: dict[str, Any]) -> None:
        import math

        import pyglet
        import trimesh
        from pyglet import gl
        from trimesh.viewer.windowed import SceneViewer

        from animkit.render.frames import FigureRenderer, Style

        if int(pyglet.version.split(".")[0]) >= 2:
            raise RuntimeError(f"trimesh's SceneViewer needs pyglet<2, found {pyglet.version}")
        self.gl = gl
        cam = ctx["camera"]
        self.w, self.h = cam.width, cam.height
        scene = trimesh.Scene()
        self.owners = []
        for k, (parent, v, f, colors) in enumerate(owner_parts(ctx["mesh"])):
            m = trimesh.Trimesh(v, f, process=False)
            m.visual.face_colors = (np.c_[colors, np.ones(len(colors))] * 255).astype(np.uint8)
            name = f"bone{k}"
            scene.add_geometry(m, node_name=name, geom_name=name)
            self.owners.append((name, parent))
        # the ground grid animkit draws: the same lines (spacing, extent, centre), 1 px
        spacing, extent, center = FigureRenderer(ctx["figure"], cam, up=ctx["up"], style=Style(),
                                                 mesh=ctx["mesh"]).ground()
        ua, va = (np.array([1.0, 0, 0]), np.array([0, 0, 1.0])) if ctx["up"] == "y" else \
            (np.array([1.0, 0, 0]), np.array([0, 1.0, 0]))
        kmax = int(math.floor(extent / spacing + 1e-9))
        o = round(float(center @ ua) / spacing) * spacing * ua + round(float(center @ va) / spacing) * spacing * va
        c = np.arange(-kmax, kmax + 1) * spacing
        segs = np.concatenate([np.stack([o + c[:, None] * ua - extent * va, o + c[:, None] * ua + extent * va], 1),
                               np.stack([o + c[:, None] * va - extent * ua, o + c[:, None] * va + extent * ua], 1)])
        grid = trimesh.load_path(segs)
        grid.colors = np.tile([199, 199, 204, 255], (len(grid.entities), 1))
        scene.add_geometry(grid, node_name="grid", geom_name="grid")
        scene.camera.resolution = (self.w, self.h)
        fy = cam.fov_y_deg
        fx = math.degrees(2 * math.atan(math.tan(math.radians(fy) / 2) * self.w / self.h))
        scene.camera.fov = (fx, fy)
        scene.camera.z_near, scene.camera.z_far = cam.near, cam.far
        scene.camera_transform = np.linalg.inv(cam.view_matrix())
        self.scene = scene
        self.viewer = SceneViewer(scene, start_loop=False, visible=True, resolution=(self.w, self.h),
                                  background=[255, 255, 255, 255])
        self.buf = np.empty((self.h, self.w, 3), np.uint8)
        self.world = ctx["world"]

    def frame(self, W: Array) -> NDArray[np.uint8]:
        for name, parent in self.owners:
            self.scene.graph.update(frame_to=name, matrix=W[parent])
        v = self.viewer
        v.switch_to()
        v.dispatch_events()
        v.on_draw()
        gl = self.gl
        gl.glReadPixels(0, 0, self.w, self.h, gl.GL_RGB, gl.GL_UNSIGNED_BYTE, self.buf.ctypes.data)
        return self.buf[::-1]

    def run(self) -> None:
        for w in self.world:
            self.frame(w)


# --- the character -----------------------------------------------------------------------------------------------


def character_case(size: tuple[int, int], jit: bool) -> tuple[Callable[[], None], int]:
    import animkit
    from animkit.render.frames import FigureRenderer, Style, clip_camera, mesh_framing_points

    scene = animkit.load(str(CHARACTER))
    clip = scene.clip()
    assert clip.duration is not None
    poses = clip.sample(np.linspace(0.0, clip.duration, CHARACTER_FRAMES))
    cam = clip_camera(scene.camera, scene.up, mesh_framing_points(scene.meshes, scene.figure, poses), size=size)
    r = FigureRenderer(scene.figure, cam, up=scene.up, style=Style(), meshes=scene.meshes, jit=jit)
    figure = scene.figure

    def run() -> None:
        for w in figure.world_batch(poses):
            r.frame(w)
    return run, len(poses)


def f3d_case(size: tuple[int, int]) -> tuple[Callable[[], None], int]:
    import f3d

    eng = f3d.Engine.create(True)  # offscreen
    eng.window.size = size
    eng.scene.add(str(CHARACTER))
    lo, hi = eng.scene.animation.get_time_range()
    times = np.linspace(lo, hi, CHARACTER_FRAMES)

    def run() -> None:
        for t in times:
            eng.scene.animation.load_time(float(t))
            eng.window.render_to_image()
    return run, len(times)


def bpy_case(size: tuple[int, int]) -> tuple[Callable[[], None], int]:
    import tempfile

    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_scene.gltf(filepath=str(CHARACTER))
    sc = bpy.context.scene
    sc.render.engine = "BLENDER_WORKBENCH"
    sc.render.resolution_x, sc.render.resolution_y = size
    sc.render.resolution_percentage = 100
    cam = bpy.data.objects.new("cam", bpy.data.cameras.new("cam"))
    sc.collection.objects.link(cam)
    sc.camera = cam
    cam.location = (0.0, -4.0, 1.0)
    cam.rotation_euler = (1.4, 0.0, 0.0)
    out = tempfile.mkdtemp() + "/f.png"
    sc.render.filepath = out
    n = CHARACTER_FRAMES
    frames = np.linspace(sc.frame_start, sc.frame_end, n).round().astype(int)

    def run() -> None:
        for f in frames:
            sc.frame_set(int(f))
            bpy.ops.render.render(write_still=False)
    return run, n


# --- children: memory and the character peers in fresh processes -------------------------------------------------


def child(kind: str, size: tuple[int, int]) -> dict[str, Any]:
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    if kind.startswith("animkit"):
        ctx = setup(size)
        run = animkit_case(ctx, jit=kind == "animkit-compiled")
    else:
        ctx = setup(size)
        run = TrimeshWindow(ctx).run
    t0 = time.perf_counter()
    run()
    return {"kind": kind, "seconds": time.perf_counter() - t0, "rss_peak_mib": peak_rss_mib()}


def peak_rss_mib() -> float:
    """This process's peak resident memory, VmHWM (ru_maxrss would carry the parent's peak across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_child(kind: str, size: tuple[int, int]) -> dict[str, Any]:
    p = subprocess.run([sys.executable, "-m", "benchmarks.bench_render", "--child", kind, "--size",
                        f"{size[0]}x{size[1]}"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        return {"kind": kind, "error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def start_xvfb() -> tuple[subprocess.Popen[bytes] | None, str]:
    if os.environ.get("DISPLAY"):
        return None, ""
    if shutil.which("Xvfb") is None:
        return None, "Xvfb is not installed"
    for n in range(110, 200):
        if Path(f"/tmp/.X11-unix/X{n}").exists() or Path(f"/tmp/.X{n}-lock").exists():
            continue
        proc = subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", "2048x1200x24", "-nolisten", "tcp"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(300):
            if Path(f"/tmp/.X11-unix/X{n}").exists():
                os.environ["DISPLAY"] = f":{n}"
                return proc, ""
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        proc.kill()
        proc.wait()
    return None, "Xvfb did not start"


def fps_row(name: str, s: Stats, frames: int) -> str:
    return f"| {name} | {frames / s.median:.1f} ({frames / s.high:.1f}–{frames / s.low:.1f}) |"


def main() -> None:
    ap = arguments(__doc__)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--size", default="640x480", help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="640x480,1920x1080")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--skip-character", action="store_true")
    ap.add_argument("--out", type=Path, default=None, help="save each path's first frame here (PNG)")
    args = ap.parse_args()
    xvfb, why_x = start_xvfb()
    try:
        if args.child:
            w, h = (int(v) for v in args.size.split("x"))
            print(json.dumps(child(args.child, (w, h))))
            return
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        report(args, why_x)
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait()


def report(args: argparse.Namespace, why_x: str) -> None:
    from PIL import Image

    print("# Render benchmark\n\nCommand: `flock /tmp/animkit-bench.lock .bench-venv/bin/python -m "
          f"benchmarks.bench_render` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average before the "
          f"run "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores — the machine is shared, absolute numbers are lower "
          f"bounds; ratios come from one interleaved run).\n")
    summary = []
    for size_text in [s for s in args.sizes.split(",") if s and s != "none"]:
        size = tuple(int(v) for v in size_text.split("x"))
        ctx = setup(size)  # type: ignore[arg-type]
        cases: dict[str, Callable[[], None]] = {"animkit, NumPy": animkit_case(ctx, False),
                                                "animkit, compiled": animkit_case(ctx, True)}
        why_t = why_x
        if not why_t:
            try:
                tw = TrimeshWindow(ctx)
                cases["trimesh, one pyglet window + glReadPixels"] = tw.run
                if args.out:
                    Image.fromarray(tw.frame(ctx["world"][0]).copy()).save(args.out / f"trimesh_{size_text}.png")
            except Exception as exc:  # noqa: BLE001 - a peer that cannot run is reported, not fatal
                why_t = f"{type(exc).__name__}: {exc}"
        if args.out:
            Image.fromarray(animkit_renderer(ctx, True).frame(ctx["world"][0])).save(
                args.out / f"animkit_{size_text}.png")
        stats = interleaved(cases, rounds=args.rounds)
        print(f"## Figure: {FRAMES} frames of the CMU 02_01 walk (38 joints, {len(ctx['mesh'].faces)} triangles "
              f"of capsules) over a ground grid, {size_text}, one core\n")
        print(markdown_table(stats, unit="s", scale=1.0,
                             baseline="trimesh, one pyglet window + glReadPixels" if not why_t else None))
        print("\n| path | frames per second, median (min–max) |\n|---|---|")
        for name, s in stats.items():
            print(fps_row(name, s, FRAMES))
        if why_t:
            print(f"\ntrimesh skipped: {why_t}")
        else:
            t = stats["trimesh, one pyglet window + glReadPixels"]
            summary.append((f"rendering alone at {size_text}: compiled vs trimesh (goal ≥ 2×)",
                            f"{ratio(t, stats['animkit, compiled']):.2f}×"))
            summary.append((f"rendering alone at {size_text}: NumPy vs trimesh",
                            f"{ratio(t, stats['animkit, NumPy']):.2f}×"))
        # first frame: a fresh renderer (backdrop cache emptied) against a steady frame of a warm one
        from animkit.render import frames as rclip

        warm = animkit_renderer(ctx, True)
        warm.frame(ctx["world"][0])

        def first(c: dict[str, Any] = ctx) -> None:
            rclip._BACKDROPS.clear()
            animkit_renderer(c, True).frame(c["world"][1])

        def steady(r: Any = warm, c: dict[str, Any] = ctx) -> None:
            r.frame(c["world"][1])
        ff = {"first frame (fresh renderer, backdrop drawn)": first, "steady frame": steady}
        fs = interleaved(ff, rounds=max(args.rounds, 15))
        fc = interleaved(ff, rounds=max(args.rounds, 15), timer=time.thread_time)
        print(f"\n### First frame against a steady frame, {size_text} (compiled)\n")
        print("Wall clock:\n")
        print(markdown_table(fs, unit="ms", scale=1e3))
        print("\nCPU time of the rendering thread (the same cases, a second interleaved run: on a loaded machine a "
              "longer call is preempted more often, which the wall clock charges to it):\n")
        print(markdown_table(fc, unit="ms", scale=1e3))
        summary.append((f"first frame / steady frame at {size_text} (goal ≤ 2), wall clock",
                        f"{ratio(fs['first frame (fresh renderer, backdrop drawn)'], fs['steady frame']):.2f}"))
        summary.append((f"first frame / steady frame at {size_text}, CPU time",
                        f"{ratio(fc['first frame (fresh renderer, backdrop drawn)'], fc['steady frame']):.2f}"))
        print()
    if not args.skip_memory:
        print("## Peak memory: a fresh process rendering the 120 frames at 1920x1080 (VmHWM, set-up included)\n")
        print("| path | peak RSS (MiB) | seconds |\n|---|---|---|")
        mem = {}
        for kind in ("animkit-numpy", "animkit-compiled", "trimesh"):
            r = run_child(kind, (1920, 1080))
            mem[kind] = r
            if "error" in r:
                print(f"| {kind} | failed: {r['error']} | |")
            else:
                print(f"| {kind} | {r['rss_peak_mib']:.0f} | {r['seconds']:.2f} |")
        if all("error" not in mem[k] for k in mem):
            for k in ("animkit-numpy", "animkit-compiled"):
                summary.append((f"peak memory at 1080p, {k} / trimesh (goal ≤ 1.5)",
                                f"{mem[k]['rss_peak_mib'] / mem['trimesh']['rss_peak_mib']:.2f}"))
        print()
    if not args.skip_character:
        size = (640, 480)
        cases = {}
        notes = []
        n_frames = 0
        for name, make in (("animkit, NumPy", lambda: character_case(size, False)),
                           ("animkit, compiled", lambda: character_case(size, True)),
                           ("f3d offscreen (Python bindings)", lambda: f3d_case(size)),
                           ("Blender bpy, Workbench, background", lambda: bpy_case(size))):
            try:
                run, n = make()
                cases[name] = run
                n_frames = n_frames or n
            except Exception as exc:  # noqa: BLE001 - a peer that cannot run is reported
                notes.append(f"{name}: not run ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")
        stats = interleaved(cases, rounds=args.rounds)
        print(f"## Character: CesiumMan (glTF, skinned, textured), {n_frames} frames at 640x480, skinning + "
              "drawing, one core\n")
        print(markdown_table(stats, unit="s", scale=1.0))
        print("\n| path | frames per second, median (min–max) |\n|---|---|")
        for name, s in stats.items():
            print(fps_row(name, s, n_frames))
        for n in notes:
            print(f"\n{n}")
        best = max(n_frames / s.median for k, s in stats.items() if k.startswith("animkit"))
        summary.append(("skinned textured character at 640x480 (goal ≥ 60 fps)", f"{best:.0f} fps"))
        print()
    print("## Goals\n\n| goal | measured |\n|---|---|")
    for k, v in summary:
        print(f"| {k} | {v} |")


if __name__ == "__main__":
    main()
