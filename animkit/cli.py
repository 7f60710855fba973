"""The ``animkit`` command: info, render, reach, compare, batch, view.

Errors animkit raises on purpose print one line (``animkit: error: ...``) and exit 2;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import atexit
import math
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

import numpy as np

from .errors import AnimkitError, IKError, unknown_name
from .scene import describe_scene

if TYPE_CHECKING:
    from .keyframes import Clip
    from .reach import Comparison
    from .render.frames import Style
    from .scene import CameraSpec, Scene

__all__ = ["main", "console_main", "describe_scene", "load_scene", "camera_from_args", "build_parser"]

SCENE_HELP = ("a .toml scene, .bvh motion capture, .urdf robot, .gltf/.glb/.fbx character, or an example's name "
              "(humanoid, walk, wave, ...)")


def load_scene(path_or_name: str, scene_index: int | None = None) -> Scene:
    """A scene file, or an example shipped with animkit by name (``humanoid``, ``walk``; see animkit.examples);
    ``scene_index`` picks a glTF file's scene."""
    from .examples import load_file_or_example

    return load_file_or_example(path_or_name, scene=scene_index)


def _cmd_info(args: argparse.Namespace) -> int:
    scene = load_scene(args.scene, args.scene_index)
    if not (args.contacts or args.motion):
        if args.json:
            raise AnimkitError("--json goes with --motion (the measures as JSON)")
        describe_scene(scene, sys.stdout)
        print(_units_line(scene))
        return 0
    from .motion import MotionError, detect_contacts, lock_feet
    from .motion_measures import height_contacts, measure_motion

    clip = scene.clip(args.clip)
    poses = clip.sample_frames()
    if args.contacts:
        contacts = detect_contacts(scene.figure, poses, clip.fps, up=scene.up, ground=args.ground)
        print(f"{clip.name}: {len(poses)} frames at {clip.fps:g} fps; " + contacts.table(clip.fps))
    if args.motion:
        fig, g = scene.figure, 0.0 if args.ground is None else float(args.ground)
        try:
            planted = height_contacts(fig, poses, clip.fps, up=scene.up, ground=g)
        except MotionError:
            planted = None  # no legs: the measures that need none
        asis = measure_motion(fig, poses, clip.fps, up=scene.up, meshes=scene.meshes, ground=g, contacts=planted)
        result, why = None, ""
        if planted is not None:
            try:
                result = lock_feet(fig, poses, clip.fps, up=scene.up, ground=g, meshes=scene.meshes)
            except MotionError as exc:
                why = f"feet not locked: {exc}"
        locked = None if result is None else measure_motion(fig, result.poses, clip.fps, up=scene.up,
                                                             meshes=scene.meshes, ground=g, contacts=planted)
        print(f"{clip.name}: {len(poses)} frames, {asis.contact_frames} with a foot planted (from height), "
              f"{asis.metres_per_unit:.4g} m per unit, ground {g:g}, surface: {asis.surface}")
        print(f"  {'measure':<40s}{'as is':>10s}{'feet locked':>14s}")
        for label, key in _MOTION_ROWS:
            a, b = getattr(asis, key), None if locked is None else getattr(locked, key)
            print(f"  {label:<40s}{_num(a):>10s}{_num(b):>14s}")
        for note in (result.unlocked if result is not None else [why] if why else []):
            print(f"  {note}")
        if args.json:
            import json

            from .io import atomic_path

            data = {"clip": clip.name, "frames": len(poses), "fps": clip.fps, "ground": g, "as_is": asis.to_dict(),
                    "locked": None if locked is None else locked.to_dict(),
                    "unlocked": list(result.unlocked) if result is not None else [why] if why else []}
            with atomic_path(args.json) as tmp:
                tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0


_MOTION_ROWS = (("skate (mm/s, planted feet)", "skate_mm_per_s"), ("penetration (mm, surface)", "penetration_mm"),
                ("planted foot's lowest point (mm, median)", "planted_height_median_mm"),
                ("knee pop (largest change, deg)", "knee_pop_deg"),
                ("fastest joint turn (deg/s)", "angular_speed_peak_deg_per_s"),
                ("limit violations (frame x DOF)", "limit_violations"), ("root travel (hip heights)", "travel_hh"))


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def _units_line(scene: Scene) -> str:
    """What the figure's numbers are in: scene units (metres by animkit's convention; a BVH file's own unit,
    often centimetres or inches), the size fig.size() reports and, for a figure with legs, metres per unit from
    its hip height (as the motion measures use)."""
    from .motion import hip_height, legs_of, metres_per_unit

    fig = scene.figure
    line = (f"units: scene units (metres unless the source used another unit); size {fig.size():.4g} units "
            f"(fig.size(): the largest distance of any node from the root at rest)")
    try:
        legs = legs_of(fig)
    except AnimkitError:
        return line
    H = hip_height(fig, legs[0].hip, scene.up)
    m = metres_per_unit(fig, legs, scene.up)
    return line + (f"; hips {H:.4g} units high: " + ("metres" if m == 1.0 else f"{m:.4g} m per unit (read as an "
                                                     "adult's 0.95 m hips)"))


def _motion_clip(scene: Scene, clip: Clip, *, fps: float | None, loops: int, lock: bool, ground: float | None
                 ) -> Clip:
    """The clip as frames: ``loops`` cycles one after another (root offset and heading carried on), feet locked."""
    from .keyframes import Clip as ClipType
    from .motion import lock_feet, loop_poses

    assert clip.duration is not None
    d = float(clip.duration)
    rate = float(fps if fps is not None else clip.fps)
    n = max(1, int(round(d * rate)))
    times = np.linspace(0.0, d, n + 1)
    poses = loop_poses(scene.figure, clip.sample(times), loops, up=scene.up)
    eff = n / d if d > 0 else rate
    if lock:
        poses = lock_feet(scene.figure, poses, eff, up=scene.up, ground=ground).poses
    t = np.arange(len(poses)) / eff
    return ClipType.from_poses(scene.figure, t, poses, name=clip.name, fps=eff)


def _style(args: argparse.Namespace) -> Style:
    from .render.frames import Style

    return Style(supersample=args.supersample, grid=not args.no_grid, joint_axes=args.axes,
                 bones=getattr(args, "bones", False))


def _add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", required=True, help="out.gif, out.mp4, a folder/ (PNG per frame), sheet.png or "
                   "out.html (the interactive viewer in one file)")
    p.add_argument("--size", default=None, help="WIDTHxHEIGHT in pixels, per panel for compare "
                   "(default: the scene's camera, 640x480; compare: 360x360)")
    p.add_argument("--fps", type=float, default=None, help="frame rate (default: the clip's)")
    _add_camera_options(p)
    p.add_argument("--supersample", type=int, default=1, choices=[1, 2, 3, 4], help="anti-aliasing factor")
    p.add_argument("--no-grid", action="store_true", help="no ground grid")
    p.add_argument("--axes", action="store_true", help="draw each joint's axes")
    p.add_argument("--bones", action="store_true", help="over a character's meshes, draw its skeleton")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar or notices")
    p.add_argument("--overwrite", action="store_true", help="write PNG frames into a folder that is not empty "
                   "(its frame_*.png files are replaced)")


def _add_camera_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fov", type=float, default=None, help="vertical field of view in degrees (default: the scene's)")
    p.add_argument("--view", default=None, choices=["front", "side", "top", "three-quarter"],
                   help="a named camera direction (default: the scene's, three-quarter)")
    p.add_argument("--azimuth", type=float, default=None, help="camera azimuth in degrees about the up axis "
                   "(0: from the front, +z or -y; 90: from +x); overrides --view's")
    p.add_argument("--elevation", type=float, default=None, help="camera elevation in degrees above the ground "
                   "(-89..89); overrides --view's")
    p.add_argument("--distance", type=float, default=None, help="camera distance from the framed centre "
                   "(scene units; default: fitted so the figure fills the frame)")
    p.add_argument("--follow", action="store_true", help="move the camera with the root across the ground "
                   "(a long walk stays in view)")


def _check_outputs(args: argparse.Namespace, *others: str | None) -> None:
    """Fail before any work when an output cannot be written (missing or read-only folder, a non-empty
    folder without --overwrite)."""
    from .render.writers import check_output

    check_output(args.output, overwrite=args.overwrite, render=not _is_html(args.output))
    for path in others:
        if path:
            check_output(path, render=False)


def _is_html(path: str | None) -> bool:
    """An output for the interactive viewer (``animkit.html_view``) rather than frames."""
    return bool(path) and str(path).lower().endswith((".html", ".htm"))


def _write_page(page: str, path: str, quiet: bool, follow: bool = False) -> None:
    from .html_view import write_html

    if follow and not quiet:
        print("animkit: the HTML viewer does not follow the root: its camera is framed over the whole clip (orbit "
              "and pan it in the page)", file=sys.stderr)
    report = write_html(page, path)
    if not quiet:
        print(f"wrote {report.path} (interactive viewer, {report.bytes / 1e6:.2f} MB)")


def _load_for_render(args: argparse.Namespace) -> Scene:
    """The scene, with its camera changed by the camera options given."""
    import dataclasses

    scene = load_scene(args.scene, args.scene_index)
    return dataclasses.replace(scene, camera=camera_from_args(scene.camera, args))


def camera_from_args(spec: CameraSpec, args: argparse.Namespace) -> CameraSpec:
    """``spec`` with --fov, --view, --azimuth, --elevation, --distance and --follow applied
    (:func:`animkit.render.frames.camera_spec_with`)."""
    from .render.frames import camera_spec_with

    return camera_spec_with(spec, fov=args.fov, view=args.view, azimuth=args.azimuth, elevation=args.elevation,
                            distance=args.distance, follow=args.follow)


def _cmd_render(args: argparse.Namespace) -> int:
    from .keyframes import Clip as ClipType
    from .render.frames import parse_size, render_clip

    _check_outputs(args)
    scene = _load_for_render(args)
    size = parse_size(args.size) if args.size else None
    if not scene.clips:
        if args.clip:
            scene.clip(args.clip)  # the error names the scene and says it has no clips
        from .keyframes import Clip

        still = Clip.from_poses(scene.figure, [0.0], scene.figure.rest_pose()[None], name="rest")
        if not args.quiet:
            print(f"animkit: {scene.source} has no clips: rendering the rest pose", file=sys.stderr)
        if _is_html(args.output):
            from .html_view import scene_html

            _write_page(scene_html(scene, still, size=size, style=_style(args)), args.output, args.quiet)
            return 0
        report = render_clip(scene, args.output, clip=still, size=size, fps=args.fps, style=_style(args),
                             quiet=args.quiet, overwrite=args.overwrite)
    else:
        clip: str | Clip | None = args.clip
        if args.loops != 1 or args.lock_feet:
            if args.loops < 1:
                raise AnimkitError(f"--loops {args.loops}: expected a whole number of cycles ≥ 1")
            clip = _motion_clip(scene, scene.clip(args.clip), fps=args.fps, loops=args.loops, lock=args.lock_feet,
                                ground=args.ground)
        if _is_html(args.output):
            from .html_view import scene_html

            page = scene_html(scene, clip, size=size, fps=None if isinstance(clip, ClipType) else args.fps,
                              style=_style(args))
            _write_page(page, args.output, args.quiet, scene.camera.follow)
            return 0
        report = render_clip(scene, args.output, clip=clip, size=size,
                             fps=None if isinstance(clip, ClipType) else args.fps, style=_style(args), quiet=args.quiet,
                             overwrite=args.overwrite)
    if not args.quiet:
        print(f"wrote {report.path} ({report.frames} frames, {report.size[0]}x{report.size[1]}, "
              f"{report.fps:g} fps) in {report.seconds:.1f} s")
    return 0


def _vector(text: str) -> list[float]:
    try:
        v = [float(x) for x in text.replace(" ", "").split(",")]
    except ValueError:
        v = []
    if len(v) != 3 or not all(math.isfinite(x) for x in v):
        raise AnimkitError(f"target {text!r}: expected three numbers X,Y,Z, e.g. 0.3,1.2,0.5")
    return v


def _names(text: str | None) -> list[str] | None:
    return None if text is None else [n for n in text.split(",") if n]


def _moving_leaves(figure: Any) -> list[str]:
    """The leaf nodes with at least one DOF between them and the root (the ends an IK target can move)."""
    moving: dict[str, bool] = {}
    out = []
    for arc in figure.arcs():
        above = moving.get(arc.parent.name, False) if arc.parent is not None else False
        moving[arc.child.name] = above or arc.joint.dof_count > 0
        if arc.child.first_arc is None and moving[arc.child.name]:
            out.append(arc.child.name)
    return out


def _cmd_reach(args: argparse.Namespace) -> int:
    from . import save
    from .notebook import panel_label
    from .reach import bake_reach
    from .render.frames import Panel, parse_size, render_panels

    _check_outputs(args, args.save)
    scene = _load_for_render(args)
    spec = scene.reach
    effector = args.effector or (spec.effector if spec else None)
    if effector is None:
        leaves = _moving_leaves(scene.figure)
        if len(leaves) != 1:
            raise AnimkitError("give --effector (the scene has no [reach] section naming one" +
                               (f"; its moving leaves: {', '.join(leaves[:8])})" if leaves else ")"))
        effector = leaves[0]  # a robot arm's only end: what "reach this target" can only mean
        if not args.quiet:
            print(f"animkit: effector {effector} (the figure's only moving leaf)", file=sys.stderr)
    target = _vector(args.target) if args.target else (list(spec.target) if spec else None)
    if target is None:
        raise AnimkitError("give --target X,Y,Z (the scene has no [reach] section naming one)")
    result = bake_reach(scene.figure, effector, target, chain=args.chain, solver=args.solver,
                        duration=args.duration, hold=args.hold, fps=args.fps or (spec.fps if spec else 30.0),
                        label=args.chain or "root to effector", quiet=args.quiet)
    size = parse_size(args.size) if args.size else (scene.camera.width, scene.camera.height)
    panel = Panel(scene.figure, result.poses, panel_label(result), targets=np.asarray([target]), trail=result.trail)
    if _is_html(args.output):
        from .html_view import panels_html, write_html

        report: Any = write_html(panels_html([panel], fps=result.clip.fps, up=scene.up, camera_spec=scene.camera,
                                             size=size, style=_style(args), title=result.label), args.output)
    else:
        report = render_panels([panel], args.output, fps=result.clip.fps, up=scene.up, camera_spec=scene.camera,
                               size=size, style=_style(args), quiet=args.quiet, overwrite=args.overwrite)
    if args.save:
        save(args.save, scene, result.clip, **_keys_option(args, Path(args.save).suffix.lower()))
    r = result.result
    print(f"{result.label}: {'reached' if r.converged else 'not reached'} (error {r.position_error:.3g} m, "
          f"reachable {r.reachable}, {r.iterations} iterations, {r.time_s * 1e3:.1f} ms, solver {r.solver}); "
          f"wrote {report.path}" + (f" and {args.save}" if args.save else ""))
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    import json

    from .io import atomic_path
    from .notebook import comparison_panels
    from .reach import compare
    from .render.frames import parse_size, render_panels

    if args.plot:
        _matplotlib()  # fail before the work, not after it
    _check_outputs(args, args.json, args.plot)
    scene = _load_for_render(args)
    comparison = compare(scene, effector=args.effector, target=_vector(args.target) if args.target else None,
                         chains=_names(args.chains), solvers=_names(args.solvers), duration=args.duration,
                         hold=args.hold, fps=args.fps, quiet=args.quiet)
    panels = comparison_panels(scene.figure, comparison, meshes=scene.meshes)
    size = parse_size(args.size) if args.size else (360, 360)
    print(comparison.table())
    if _is_html(args.output):
        from .html_view import panels_html

        _write_page(panels_html(panels, fps=comparison.fps, up=scene.up, camera_spec=scene.camera, size=size,
                                style=_style(args), title=f"animkit compare: {comparison.effector}"),
                    args.output, args.quiet, scene.camera.follow)
        report = None
    else:
        report = render_panels(panels, args.output, fps=comparison.fps, up=scene.up, camera_spec=scene.camera,
                               size=size, style=_style(args), quiet=args.quiet, overwrite=args.overwrite)
    if args.json:
        data = comparison.metrics()
        for panel, row in zip(comparison.panels, data["panels"], strict=True):
            row["motion"] = _reach_motion(scene, panel.poses, comparison.fps)
        with atomic_path(args.json) as tmp:
            tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    if args.plot:
        _plot_errors(comparison, args.plot)
    if args.save:
        from . import save

        save(args.save, scene, _panel_clips(comparison), **_keys_option(args, Path(args.save).suffix.lower()))
    if not args.quiet:
        extra = "".join(f", {p}" for p in (args.json, args.plot, args.save) if p)
        if report is not None:
            print(f"wrote {report.path} ({report.frames} frames, {report.size[0]}x{report.size[1]}){extra}")
        elif extra:
            print(f"wrote {extra[2:]}")
    return 0


#: The motion measures of a reach that make sense for it (a reach does not travel, and has no source).
REACH_MOTION = ("angular_speed_peak_deg_per_s", "angular_speed_peak_joint", "angular_speed_by_joint_deg_per_s",
                "limit_violations", "limit_excess_by_dof", "penetration_mm", "skate_mm_per_s", "knee_pop_deg")


def _reach_motion(scene: Scene, poses: np.ndarray, fps: float) -> dict[str, Any] | None:
    """A reach's joint speeds, limit violations, surface under the ground and (with legs) its feet's skate and knee
    pops (:func:`animkit.motion_measures.measure_motion`); None for a clip under 3 frames."""
    from .motion_measures import measure_motion

    if len(poses) < 3:
        return None
    m = measure_motion(scene.figure, poses, fps, up=scene.up, meshes=scene.meshes).to_dict()
    return {k: m[k] for k in REACH_MOTION}


def _cmd_workspace(args: argparse.Namespace) -> int:
    import json

    from .ik.workspace import workspace
    from .io import atomic_path
    from .render.clouds import render_clouds

    if not str(args.output).lower().endswith(".png"):
        raise IKError(f"workspace: the picture is a PNG; got --output {args.output}")
    scene = load_scene(args.scene, args.scene_index)
    fig = scene.figure
    effector = args.effector or (scene.reach.effector if scene.reach else None)
    if effector is None:
        raise IKError(f"{args.scene}: no effector given (--effector) and the scene has no [reach] effector")
    chains = _names(args.chains) or list(scene.reach.chains if scene.reach and scene.reach.chains
                                         else fig.rig.chains)
    rows, clouds, metrics = [], [], []
    for c in chains:
        w = workspace(fig, c, effector, points=args.points, orientations=args.orientations, seed=args.seed)
        rows.append(f"{c:<16}{w.reachable_l:>12.1f} ± {w.reachable_err_l:<8.1f}{w.dexterous_l:>12.1f} ± "
                    f"{w.dexterous_err_l:<8.1f}")
        clouds.append((f"{c}: {w.reachable_l:.0f} L reach, {w.dexterous_l:.0f} L dexterous",
                       [(w.reachable, (0.35, 0.6, 0.95)), (w.dexterous, (0.95, 0.45, 0.2))]))
        metrics.append({"chain": c, "effector": w.effector, "reachable_l": w.reachable_l,
                        "reachable_err_l": w.reachable_err_l, "dexterous_l": w.dexterous_l,
                        "dexterous_err_l": w.dexterous_err_l, "points": len(w.points)})
    print(f"{'movable set':<16}{'reachable (L)':>23}{'dexterous (L)':>23}")
    print("\n".join(rows))
    out = render_clouds(fig, fig.rest_pose(), clouds, args.output, up=scene.up)
    if args.json:
        with atomic_path(args.json) as tmp:
            tmp.write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    if not args.quiet:
        print(f"wrote {out}" + (f", {args.json}" if args.json else ""))
    return 0


def _panel_clips(comparison: Comparison) -> list[Clip]:
    """One clip per panel, named after the panel's label (a name each: labels repeat only with solvers)."""
    import dataclasses

    out: list[Clip] = []
    for p in comparison.panels:
        name = p.label
        n = 2
        while name in {c.name for c in out}:
            name, n = f"{p.label} ({n})", n + 1
        out.append(dataclasses.replace(p.clip, name=name))
    return out


def _print_retarget_measures(source: Scene, target: Scene, r: Any, poses: np.ndarray) -> None:
    """One line of :func:`animkit.motion_measures.measure_motion` against the source (its contacts carried over)."""
    from .motion_measures import SourceMotion, measure_motion

    if len(poses) < 3:
        return
    src = SourceMotion(source.figure, source.clip().sample(r.times), source.up, r.bone_map)
    m = measure_motion(target.figure, poses, r.clip.fps, up=target.up, meshes=target.meshes, source=src)

    def num(x: float | None, fmt: str) -> str:
        return "-" if x is None else format(x, fmt)

    print(f"measured ({m.surface} surface, the source's contacts): skate {num(m.skate_mm_per_s, '.0f')} mm/s, "
          f"penetration {m.penetration_mm:.1f} mm, planted foot's lowest point {num(m.planted_height_median_mm, '.1f')}"
          f" mm (median), travel ratio {num(m.travel_ratio, '.3f')}, bone directions "
          f"{num(m.bone_direction_median_deg, '.1f')} deg median / {num(m.bone_direction_p90_deg, '.1f')} deg p90")


def _cmd_retarget(args: argparse.Namespace) -> int:
    import dataclasses

    from . import save
    from .keyframes import Clip as ClipType
    from .motion import MotionError, lock_feet
    from .retarget import read_bone_map, retarget_full

    source, target = load_scene(args.source), load_scene(args.target)
    if args.clip:
        source = dataclasses.replace(source, clips={args.clip: source.clip(args.clip)})
    user = read_bone_map(args.map) if args.map else None
    r = retarget_full(source, target, user)
    if not args.quiet:
        print(r.bone_map.report())
        from .retarget import hip_height

        h_s = hip_height(source.figure, r.hips[1], source.up)
        unit = " m" if Path(args.target).suffix.lower() in (".glb", ".gltf") else ""
        print(f"hips {r.hips[1]} -> {r.hips[0]}, root translation scaled by {r.scale:.6g} (hip heights above the "
              f"lowest foot point standing: {h_s:.4g} -> {r.scale * h_s:.4g}{unit})")
    for note in r.notes:
        print(f"animkit: {note}", file=sys.stderr if note.startswith("NOT DRIVEN") else sys.stdout)
    target = dataclasses.replace(target, figure=r.figure)
    poses = r.poses
    if not args.no_lock:
        try:
            from .motion import legs_of
            from .motion_measures import carry_contacts, height_contacts

            planted = carry_contacts(height_contacts(source.figure, source.clip().sample(r.times), r.clip.fps,
                                                     up=source.up), legs_of(source.figure), legs_of(target.figure))
            locked = lock_feet(target.figure, poses, r.clip.fps, up=target.up, ground=args.ground,
                               meshes=target.meshes, contacts=planted)  # the source's contacts, carried
        except MotionError as exc:
            print(f"animkit: feet not locked: {exc}", file=sys.stderr)
        else:
            poses = locked.poses
            b, a = locked.before, locked.after
            print(f"feet locked: skate {b.skate_mm:.2f} -> {a.skate_mm:.2f} mm per contact frame, penetration "
                  f"{b.penetration_mm:.2f} -> {a.penetration_mm:.2f} mm, knee pop {b.knee_pop_deg:.1f} -> "
                  f"{a.knee_pop_deg:.1f} deg")
            for note in locked.unlocked:
                print(f"  {note}")
    _print_retarget_measures(source, target, r, poses)
    clip = ClipType.from_poses(target.figure, r.times, poses, name=r.clip.name, fps=r.clip.fps, loop=r.clip.loop)
    out = dataclasses.replace(target, clips={clip.name: clip})
    save(args.output, out, **_keys_option(args, Path(args.output).suffix.lower()))
    print(f"wrote {args.output} ({len(poses)} frames on {target.figure.name!r})")
    if args.render and _is_html(args.render):
        from .html_view import scene_html

        _write_page(scene_html(out, clip, style=_style(args)), args.render, False)
    elif args.render:
        from .render.frames import render_clip

        report = render_clip(out, args.render, clip=clip, style=_style(args), quiet=args.quiet)
        print(f"wrote {report.path} ({report.frames} frames)")
    return 0


def _keys_option(args: argparse.Namespace, suffix: str) -> dict[str, Any]:
    """``save``'s ``keys`` from ``--keys`` (glTF output only; an error naming the suffix for any other)."""
    if args.keys is None:
        return {}
    if suffix not in (".glb", ".gltf"):
        raise AnimkitError(f"--keys applies to .glb/.gltf output, not {suffix or '(no suffix)'}")
    return {"keys": args.keys}


def _cmd_convert(args: argparse.Namespace) -> int:
    import dataclasses

    from . import save
    from .io import FORMATS

    src, dst = Path(args.input), Path(args.output)
    if dst.suffix.lower() not in FORMATS or not FORMATS[dst.suffix.lower()].writes:
        from .io import SAVERS

        raise AnimkitError(unknown_name("output file type", dst.suffix.lower() or "(no suffix)", SAVERS))
    scene = load_scene(args.input, args.scene_index)
    clips = [scene.clip(args.clip)] if args.clip else list(scene.clips.values())
    suffix = dst.suffix.lower()
    if scene.meshes and suffix in (".bvh", ".toml"):
        if not args.no_meshes:
            names = ", ".join(m.name for m in scene.meshes[:4]) + (", …" if len(scene.meshes) > 4 else "")
            raise AnimkitError(f"{src} has {len(scene.meshes)} mesh(es) ({names}) and a {suffix} file holds no "
                               "meshes; convert it to .glb or .gltf, or give --no-meshes to keep only the skeleton")
        scene = dataclasses.replace(scene, meshes=())
    if suffix == ".bvh" and len(clips) > 1:
        raise AnimkitError(f"{src} has {len(clips)} clips ({', '.join(c.name for c in clips)}) and a BVH file "
                           "holds one: pick one with --clip")
    options: dict[str, Any] = _keys_option(args, suffix)
    if args.buffers is not None:
        if suffix != ".gltf":
            raise AnimkitError(f"--buffers applies to .gltf output, not {suffix}")
        options["buffers"] = args.buffers
    save(dst, dataclasses.replace(scene, clips={c.name: c for c in clips}), **options)
    extra = "" if suffix != ".gltf" or args.buffers == "embedded" else f" and {dst.with_suffix('.bin').name}"
    print(f"wrote {dst}{extra} ({len(clips)} clip{'s' if len(clips) != 1 else ''})")
    return 0


def _matplotlib() -> ModuleType:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise AnimkitError("--plot needs matplotlib, which is not installed: pip install 'animkit[plot]'") from None
    return plt


def _plot_errors(comparison: Comparison, path: str) -> None:
    """Error against iteration, one line per panel (matplotlib: the optional extra animkit[plot])."""
    plt = _matplotlib()
    from .io import atomic_path

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    for p in comparison.panels:
        e = np.maximum(np.asarray(p.result.errors, dtype=float), 1e-12)
        ax.semilogy(np.arange(len(e)), e, marker=".", label=p.label)
    ax.set_xlabel("iteration")
    ax.set_ylabel("position error (m)")
    ax.set_title(f"{comparison.effector}: error against iteration")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    suffix = Path(path).suffix.lstrip(".").lower() or "png"
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=suffix)
    plt.close(fig)


def _cmd_view(args: argparse.Namespace) -> int:
    from .render.frames import parse_size

    if args.html:
        from .render.writers import check_output

        check_output(args.html, render=False)
    scene = load_scene(args.scene, args.scene_index)
    if args.clip is not None:
        scene.clip(args.clip)  # an unknown name fails here, listing the clips
    if args.html:
        from .html_view import scene_html

        _write_page(scene_html(scene, args.clip, size=parse_size(args.size), target=not args.no_target), args.html,
                    False)
        return 0
    from .render.viewer import view

    targets = None
    if not args.no_target and scene.reach is not None:
        targets = np.asarray([scene.reach.target[:3]])
    view(scene, args.clip, targets=targets, size=parse_size(args.size), render_scale=args.scale)
    return 0


def _cmd_batch(args: argparse.Namespace) -> int:
    from .batch import COMMANDS, run_batch, start_local_workers

    if args.scheduler is None and (args.workers is None or args.workers >= 1):
        start_local_workers(args.command_name, args.inputs, args.workers)  # their imports overlap what follows
    from .render.frames import Style, parse_size
    from .scene import CameraSpec

    options: dict[str, object] = {"suffix": COMMANDS[args.command_name].suffix}
    if args.format:
        from .io import SAVERS

        formats = {"render": (".gif", ".mp4", ".png"), "convert": SAVERS, "retarget": SAVERS}.get(args.command_name, ())
        suffix = "." + args.format.lower().lstrip(".")
        if suffix not in formats:
            raise AnimkitError(unknown_name(f"{args.command_name} format", args.format,
                                            [f.lstrip(".") for f in formats] or ["(none: it has one format)"]))
        options["suffix"] = suffix
    if args.size:
        options["size"] = parse_size(args.size)
    if args.fps is not None:
        options["fps"] = args.fps
    options["camera"] = camera_from_args(CameraSpec(), args)
    if args.to is not None:
        options["target"] = args.to
    if args.no_lock:
        options["lock"] = False
    if args.keys is not None:
        if args.command_name not in ("convert", "retarget") or options["suffix"] not in (".glb", ".gltf"):
            raise AnimkitError(f"--keys applies to convert/retarget with glb/gltf output, not {args.command_name} "
                               f"to {options['suffix']}")
        options["keys"] = args.keys
    options["style"] = Style(grid=not args.no_grid)
    from .progress import progress

    bar = None

    def tick(done: int, total: int, row: object) -> None:
        nonlocal bar
        if bar is None:
            bar = progress(total, f"batch {args.command_name}", enabled=False if args.quiet else None)
        bar.update(done - bar.n)

    try:
        report = run_batch(args.command_name, args.inputs, args.output, workers=args.workers,
                           scheduler=args.scheduler, options=options, on_progress=tick)
    finally:
        if bar is not None:
            bar.close()
    if not args.quiet:
        print(report.table())
    c = report.counts
    print(f"{c.get('ok', 0)} done, {c.get('skipped', 0)} skipped (already complete), {c.get('error', 0)} failed "
          f"in {report.seconds:.1f} s on {report.workers} worker(s); summary: {report.summary}")
    return 1 if c.get("error", 0) else 0


def _cmd_prior(args: argparse.Namespace) -> int:
    """``animkit prior fit INPUT... -o prior.npz``: features per file (in this process, or on Dask with --workers),
    then EM here."""
    import tempfile

    import numpy as np

    from .batch import expand_inputs, run_batch
    from .ik.prior import DIM, PosePrior, fit_mixture, mirror_features

    files = expand_inputs(args.inputs, ("*.bvh", "*.toml", "*.glb", "*.gltf"))
    if not files:
        raise AnimkitError(f"prior fit: no motion files in {' '.join(args.inputs)}")
    if args.workers is not None or args.scheduler is not None:
        with tempfile.TemporaryDirectory(prefix="animkit-prior-") as tmp:
            report = run_batch("prior-features", files, tmp, workers=args.workers, scheduler=args.scheduler,
                               options={"every": args.every, "suffix": ".npy"})
            bad = [r for r in report.rows if r["status"] == "error"]
            if bad:
                raise AnimkitError(f"prior fit: {bad[0]['file']}: {bad[0]['error']}")
            parts = [np.load(r["output"]).astype(float) for r in report.rows]
    else:
        from .io import load

        parts = [PosePrior.features_of(load(f), every=args.every) for f in files]
    X = np.concatenate(parts) if parts else np.zeros((0, DIM))
    if not args.no_mirror:
        X = np.concatenate([X, mirror_features(X)])
    w, m, c = fit_mixture(X, args.components, iterations=args.iterations, seed=args.seed)
    names = ", ".join(Path(f).name for f in files)
    source = (f"animkit prior fit: {len(files)} files ({names}), every {args.every}th frame"
              f"{'' if args.no_mirror else ' and its mirror'}, {len(X)} poses, {args.components} component(s)")
    PosePrior(w, m, c, source).save(args.output)
    print(f"{args.output}: {args.components} component(s) fitted on {len(X)} poses from {len(files)} files")
    return 0


def _add_reach_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--effector", default=None, help="effector or node name (default: the scene's [reach])")
    p.add_argument("--target", default=None, help="X,Y,Z in world coordinates (default: the scene's [reach])")
    p.add_argument("--duration", type=float, default=None if p.prog.endswith("compare") else 2.0,
                   help="seconds to travel to the target")
    p.add_argument("--hold", type=float, default=None if p.prog.endswith("compare") else 0.5,
                   help="seconds to hold at the end")


def _add_ground_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ground", type=float, default=None, help="the ground's height (default: found, the feet's "
                   "lowest points)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="animkit", description="Hierarchical character animation: scene graphs, "
                                     "keyframes, inverse kinematics, headless rendering to GIF/MP4.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    gltf = argparse.ArgumentParser(add_help=False)
    gltf.add_argument("--scene", dest="scene_index", type=int, default=None, metavar="N",
                      help="for a .gltf/.glb file: read its scene N (default: the file's own default scene)")
    p = sub.add_parser("info", parents=[gltf],
                       help="print a scene's tree: nodes, joints, DOFs with limits, chains, effectors, clips")
    p.add_argument("scene", help=SCENE_HELP)
    p.add_argument("--contacts", action="store_true", help="the clip's foot contacts (heel and toe, in frames)")
    p.add_argument("--motion", action="store_true", help="foot skate, penetration and knee pops, as is and with "
                   "the feet locked")
    p.add_argument("--json", default=None, help="with --motion: also write the measures as JSON")
    p.add_argument("--clip", default=None, help="which clip (default: the first)")
    _add_ground_option(p)
    p.set_defaults(run=_cmd_info)
    p = sub.add_parser("render", parents=[gltf], help="render a clip of a scene (or a .bvh) to GIF, MP4 or PNG frames")
    p.add_argument("scene", help=SCENE_HELP)
    p.add_argument("--clip", "--animation", dest="clip", default=None,
                   help="which clip (glTF: animation) by name (default: the first)")
    p.add_argument("--loops", type=int, default=1, help="play N cycles, each carrying on from where the last "
                   "ended (root position and heading)")
    p.add_argument("--lock-feet", action="store_true", help="hold the feet where they land during contacts")
    _add_ground_option(p)
    _add_output_options(p)
    p.set_defaults(run=_cmd_render)

    p = sub.add_parser("retarget", help="put a clip on another skeleton (and lock its feet)")
    p.add_argument("source", help="the motion: .bvh, .glb/.gltf or .toml with a clip")
    p.add_argument("target", help="the figure to move: .glb/.gltf character, .toml, .bvh")
    p.add_argument("-o", "--output", required=True, help="out.glb (the target's own mesh animated), out.bvh or "
                   "out.toml")
    p.add_argument("--map", default=None, help="a bone map in TOML: [bones] target_bone = \"source_bone\"")
    p.add_argument("--clip", default=None, help="which clip of the source (default: the first)")
    p.add_argument("--no-lock", action="store_true", help="leave the feet as retargeted (no foot locking)")
    p.add_argument("--render", default=None, help="also render the result: out.gif, out.mp4, out.html")
    p.add_argument("--supersample", type=int, default=1, choices=[1, 2, 3, 4], help="anti-aliasing factor")
    p.add_argument("--no-grid", action="store_true", help="no ground grid")
    p.add_argument("--axes", action="store_true", help="draw each joint's axes")
    p.add_argument("-q", "--quiet", action="store_true", help="no bone map report or progress bar")
    _add_ground_option(p)
    p.add_argument("--keys", choices=["auto", "linear"], default=None,
                   help=".glb/.gltf output: auto (exact keys, cubic where the clip is) or linear (resampled at the "
                   "frames with LINEAR keys, for importers that mishandle CUBICSPLINE)")
    p.set_defaults(run=_cmd_retarget)

    p = sub.add_parser("reach", parents=[gltf], help="bake an IK reach into a clip and render it")
    p.add_argument("scene", help=SCENE_HELP)
    _add_reach_options(p)
    p.add_argument("--chain", default=None, help="movable set: a chain name or joints (default: root to effector)")
    p.add_argument("--solver", default=None, help="IK solver (default: the robust default); see docs/derivations.md")
    p.add_argument("--save", default=None, help="also save the baked clip with the scene: clip.toml, clip.bvh, "
                   "reach.glb or reach.gltf")
    _add_output_options(p)
    p.add_argument("--keys", choices=["auto", "linear"], default=None,
                   help=".glb/.gltf output: auto (exact keys, cubic where the clip is) or linear (resampled at the "
                   "frames with LINEAR keys, for importers that mishandle CUBICSPLINE)")
    p.set_defaults(run=_cmd_reach)

    p = sub.add_parser("compare", parents=[gltf],
                       help="one reach per movable set (and solver), side by side, with metrics")
    p.add_argument("scene", help=SCENE_HELP + " with [chains] (and usually [reach])")
    _add_reach_options(p)
    p.add_argument("--chains", default=None, help="comma-separated chain names (default: the scene's [reach])")
    p.add_argument("--solvers", default=None, help="comma-separated solver names (one panel per set and solver), "
                   "'natural' among them for the scene's natural reaching (the default when it has [reach.priors])")
    p.add_argument("--json", default=None, help="also write the metrics as JSON")
    p.add_argument("--plot", default=None, help="also plot error against iteration (needs animkit[plot])")
    p.add_argument("--save", default=None, help="also save the reaches: compare.glb / .gltf (one animation per "
                   "panel) or .toml (one clip per panel)")
    _add_output_options(p)
    p.add_argument("--keys", choices=["auto", "linear"], default=None,
                   help=".glb/.gltf output: auto (exact keys, cubic where the clip is) or linear (resampled at the "
                   "frames with LINEAR keys, for importers that mishandle CUBICSPLINE)")
    p.set_defaults(run=_cmd_compare)

    p = sub.add_parser("workspace", parents=[gltf],
                       help="reachable and dexterous workspaces (litres) per movable set, drawn as point clouds")
    p.add_argument("scene", help=SCENE_HELP + " with [chains]")
    p.add_argument("--chains", default=None, help="comma-separated chain names (default: the scene's [reach])")
    p.add_argument("--effector", default=None, help="effector (default: the scene's [reach] effector)")
    p.add_argument("--points", type=int, default=2000, help="test points in the box (the volume's error ~ 1/√N)")
    p.add_argument("--orientations", type=int, default=12, help="orientations tested per reachable point "
                   "(dexterous; 0: skip)")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--json", default=None, help="also write the volumes as JSON")
    p.add_argument("-o", "--output", required=True, help="the picture: out.png")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the table")
    p.set_defaults(run=_cmd_workspace)

    p = sub.add_parser("convert", parents=[gltf],
                       help="convert a scene and its clips: any input to .glb/.gltf, .toml or .bvh")
    p.add_argument("input", help="a .toml scene, .bvh motion capture, .urdf robot or .gltf/.glb character")
    p.add_argument("output", help="out.glb, out.gltf (with out.bin beside it), out.toml or out.bvh")
    p.add_argument("--clip", default=None, help="only this clip (BVH holds one: the first unless named)")
    p.add_argument("--no-meshes", action="store_true", help="to .bvh/.toml: leave a character's meshes out "
                   "(those formats hold only the skeleton and its motion)")
    p.add_argument("--buffers", choices=["external", "embedded"], default=None,
                   help=".gltf only: binary data in a .bin beside it (external, the default) or in the JSON")
    p.add_argument("--keys", choices=["auto", "linear"], default=None,
                   help=".glb/.gltf output: auto (exact keys, cubic where the clip is) or linear (resampled at the "
                   "frames with LINEAR keys, for importers that mishandle CUBICSPLINE)")
    p.set_defaults(run=_cmd_convert)


    from .batch import COMMANDS

    p = sub.add_parser("batch", help="run a command on many files on a Dask cluster (one task per file), resumable, "
                       "with a summary table")
    p.add_argument("command_name", metavar="COMMAND", choices=sorted(COMMANDS),
                   help="; ".join(f"{c.name}: {c.help}" for c in COMMANDS.values()))
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="files, or folders of .bvh/.toml/.urdf/.glb files")
    p.add_argument("-o", "--output", required=True, help="output folder (outputs, summary.csv, records of work done)")
    p.add_argument("--workers", type=int, default=None, help="local worker processes (default: one per core)")
    p.add_argument("--scheduler", default=None, help="a running dask.distributed scheduler, e.g. tcp://host:8786 "
                   "(default: a LocalCluster here)")
    p.add_argument("--format", default=None, help="the outputs' format: render gif, mp4 or png (a contact sheet); "
                   "convert bvh, toml, glb")
    p.add_argument("--size", default=None, help="render: WIDTHxHEIGHT (default 160x120)")
    p.add_argument("--fps", type=float, default=None, help="render: frame rate (default: the clip's)")
    p.add_argument("--no-grid", action="store_true", help="render: no ground grid")
    p.add_argument("--to", default=None, help="retarget: the target skeleton (a file or an example's name)")
    p.add_argument("--no-lock", action="store_true", help="retarget: leave the feet as retargeted (no foot lock)")
    p.add_argument("--keys", choices=["auto", "linear"], default=None,
                   help="convert/retarget to glb/gltf: linear resamples cubic keys at the frames (LINEAR)")
    _add_camera_options(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar or table")
    p.set_defaults(run=_cmd_batch)

    p = sub.add_parser("prior", help="pose priors: 'prior fit INPUT... -o prior.npz' fits one on motion files")
    p.add_argument("action", choices=["fit"], help="fit: a prior from motion files (docs/prior.md)")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="files, or folders of .bvh/.toml/.glb files")
    p.add_argument("-o", "--output", required=True, help="the prior (.npz)")
    p.add_argument("--components", type=int, default=1, help="mixture components (default 1: docs/prior.md)")
    p.add_argument("--every", type=int, default=4, help="use every N-th frame (default 4)")
    p.add_argument("--iterations", type=int, default=100, help="EM iterations at most (default 100)")
    p.add_argument("--seed", type=int, default=0, help="the k-means++ start's seed")
    p.add_argument("--no-mirror", action="store_true", help="do not add each frame's mirror pose")
    p.add_argument("--workers", type=int, default=None, help="read the files on a local Dask cluster of N workers")
    p.add_argument("--scheduler", default=None, help="read the files on a running dask.distributed scheduler")
    p.set_defaults(run=_cmd_prior)

    p = sub.add_parser("view", parents=[gltf], help="play a scene's clip in a window: space plays, arrows step, "
                       "drag orbits, scroll zooms, w wireframe, a axes")
    p.add_argument("scene", help=SCENE_HELP)
    p.add_argument("--clip", default=None, help="which clip (default: the first, or the rest pose)")
    p.add_argument("--size", default="800x600", help="window size WIDTHxHEIGHT")
    p.add_argument("--scale", type=float, default=1.0, help="render at this fraction of the window size")
    p.add_argument("--no-target", action="store_true", help="do not mark the scene's [reach] target")
    p.add_argument("--html", default=None, metavar="OUT.html", help="write the interactive viewer as one "
                   "self-contained HTML file instead of opening a window (no display needed)")
    p.set_defaults(run=_cmd_view)
    return parser


def _one_line_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                      file: TextIO | None = None, line: str | None = None) -> None:
    print(f"animkit: warning: {message}", file=sys.stderr)


def _one_line(text: str) -> str:
    """The message on one line: line breaks (a name holding one, a multi-line cause) shown as ``\\n``."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


_VECTOR_OPTIONS = ("--target",)


def _vectors_joined(argv: list[str]) -> list[str]:
    """``--target -0.3,1.2,0.5`` as ``--target=-0.3,1.2,0.5``: argparse takes a value that starts with "-" and is not
    one plain number for an option, so a vector with a negative first component would be refused."""
    out: list[str] = []
    it = iter(range(len(argv)))
    for i in it:
        a = argv[i]
        if a in _VECTOR_OPTIONS and i + 1 < len(argv) and argv[i + 1][:1] == "-" and argv[i + 1][1:2] in "0123456789.":
            out.append(f"{a}={argv[i + 1]}")
            next(it, None)
        else:
            out.append(a)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """The ``animkit`` command on ``argv`` (default: ``sys.argv[1:]``): its exit status. Returns normally, whatever
    the command; :func:`console_main` is the installed command, which may end the process sooner."""
    return _dispatch(argv)[0]


def console_main() -> NoReturn:
    """The installed ``animkit`` command and ``python -m animkit``: :func:`main`, then the end of the process.

    After a ``batch`` command that returned (its cluster closed, every output and the summary renamed into place),
    the process ends at once: stdout and stderr flushed, the ``atexit`` handlers run (multiprocessing's finalizers
    among them: its temporary folder, its semaphores), then ``os._exit``, skipping the interpreter's teardown of
    the ~2,000 modules dask, pandas and pyarrow brought in (≈0.2 s a command, of ≈1 s of fixed cost:
    benchmarks/results_batch.md). Not while a non-daemon thread still runs: Python would wait for it.
    """
    code, done = _dispatch(None)
    if done and not any(t.is_alive() and not t.daemon and t is not threading.main_thread()
                        for t in threading.enumerate()):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe or stream: nothing more can reach it
                pass
        atexit._run_exitfuncs()
        os._exit(code)
    sys.exit(code)


def _dispatch(argv: Sequence[str] | None) -> tuple[int, bool]:
    """The command's exit status, and whether the process may end at once (a batch command that returned)."""
    import warnings

    warnings.showwarning = _one_line_warning
    parser = build_parser()
    args = parser.parse_args(_vectors_joined(sys.argv[1:] if argv is None else list(argv)))
    try:
        code = int(args.run(args))
    except AnimkitError as exc:
        print(_one_line(f"animkit: error: {exc}"), file=sys.stderr)
        return 2, False
    except BrokenPipeError:
        return 0, False
    except OSError as exc:  # the environment: permissions, a full disk, a missing folder
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(_one_line(f"animkit: error: {where}{exc.strerror or exc}"), file=sys.stderr)
        return 2, False
    except MemoryError:
        print("animkit: error: out of memory (the input asks for more than this machine has)", file=sys.stderr)
        return 2, False
    except KeyboardInterrupt:
        print("animkit: interrupted", file=sys.stderr)
        return 130, False
    return code, args.run is _cmd_batch or (args.run is _cmd_prior and (args.workers or args.scheduler) is not None)


if __name__ == "__main__":  # pragma: no cover
    console_main()
