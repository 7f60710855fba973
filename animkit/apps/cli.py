"""The ``animkit`` command: info, render, reach, compare, batch, view.

Errors animkit raises on purpose print one line (``animkit: error: ...``) and exit 2;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import functools
import math
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

import numpy as np

from animkit.apps import commands
from animkit.apps.cli_parser import build_parser
from animkit.apps.commands import load_scene
from animkit.atomic import guard_interrupts
from animkit.errors import AnimkitError, IKError, unknown_name
from animkit.scene import describe_scene

if TYPE_CHECKING:
    from animkit.keyframes import Clip
    from animkit.model.figure import Figure
    from animkit.motion.reach import ReachResult
    from animkit.render.frames import Panel, Style
    from animkit.scene import CameraSpec, Scene

__all__ = ["main", "console_main", "describe_scene", "load_scene", "camera_from_args", "build_parser"]

_MOTION_ROWS = (("skate (mm/s, planted feet)", "skate_mm_per_s"), ("penetration (mm, surface)", "penetration_mm"),
                ("planted foot's lowest point (mm, median)", "planted_height_median_mm"),
                ("knee pop (largest change, deg)", "knee_pop_deg"),
                ("fastest joint turn (deg/s)", "angular_speed_peak_deg_per_s"),
                ("limit violations (frame x DOF)", "limit_violations"), ("root travel (hip heights)", "travel_hh"))


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def _style(args: argparse.Namespace) -> Style:
    from animkit.render.frames import Style

    return Style(supersample=args.supersample, grid=not args.no_grid, joint_axes=args.axes,
                 bones=getattr(args, "bones", False))


def _check_outputs(args: argparse.Namespace, *others: str | None) -> None:
    """Fail before any work when an output cannot be written (missing or read-only folder, a non-empty
    folder without --overwrite)."""
    from animkit.render.writers import check_output

    check_output(args.output, overwrite=args.overwrite, render=not commands.is_html(args.output))
    for path in others:
        if path:
            check_output(path, render=False)


def _write_page(page: str, path: str, quiet: bool, follow: bool = False) -> None:
    from animkit.apps.html_view import write_html

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
    from animkit.render.frames import camera_spec_with

    return camera_spec_with(spec, fov=args.fov, view=args.view, azimuth=args.azimuth, elevation=args.elevation,
                            distance=args.distance, follow=args.follow)


def _cmd_info(args: argparse.Namespace) -> int:
    scene = load_scene(args.scene, args.scene_index)
    if not (args.contacts or args.motion):
        if args.json:
            raise AnimkitError("--json goes with --motion (the measures as JSON)")
        describe_scene(scene, sys.stdout)
        print(commands.units_line(scene))
        return 0
    if args.contacts:
        from animkit.motion import detect_contacts

        clip = scene.clip(args.clip)
        poses = clip.sample_frames()
        contacts = detect_contacts(scene.figure, poses, clip.fps, ground=args.ground)
        print(f"{clip.name}: {len(poses)} frames at {clip.fps:g} fps; " + contacts.table(clip.fps))
    if args.motion:
        m = commands.motion_report(scene, args.clip, args.ground)
        print(f"{m.clip}: {m.frames} frames, {m.as_is.contact_frames} with a foot planted (from height), "
              f"{m.as_is.metres_per_unit:.4g} m per unit, ground {m.ground:g}, surface: {m.as_is.surface}")
        print(f"  {'measure':<40s}{'as is':>10s}{'feet locked':>14s}")
        for label, key in _MOTION_ROWS:
            a, b = getattr(m.as_is, key), None if m.locked is None else getattr(m.locked, key)
            print(f"  {label:<40s}{_num(a):>10s}{_num(b):>14s}")
        for note in m.unlocked:
            print(f"  {note}")
        if args.json:
            _write_json(args.json, m.to_dict())
    return 0


def _write_json(path: str, data: Any) -> None:
    import json

    from animkit.atomic import atomic_path

    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _say_wrote(report: Any, quiet: bool, follow: bool = False) -> None:
    """The line a render prints: frames, size and time, or the viewer page's size."""
    if quiet:
        return
    if not hasattr(report, "frames"):  # the interactive viewer's page
        if follow:
            print("animkit: the HTML viewer does not follow the root: its camera is framed over the whole clip (orbit "
                  "and pan it in the page)", file=sys.stderr)
        print(f"wrote {report.path} (interactive viewer, {report.bytes / 1e6:.2f} MB)")
        return
    print(f"wrote {report.path} ({report.frames} frames, {report.size[0]}x{report.size[1]}, "
          f"{report.fps:g} fps) in {report.seconds:.1f} s")


def _cmd_render(args: argparse.Namespace) -> int:
    from animkit.render.frames import parse_size

    _check_outputs(args)
    scene = _load_for_render(args)
    size = parse_size(args.size) if args.size else None
    clip: str | Clip | None = args.clip
    if not scene.clips:
        if args.clip:
            scene.clip(args.clip)  # the error names the scene and says it has no clips
        if not args.quiet:
            print(f"animkit: {scene.source} has no clips: rendering the rest pose", file=sys.stderr)
    elif args.loops != 1 or args.lock_feet:
        clip = commands.motion_clip(scene, scene.clip(args.clip), fps=args.fps, loops=args.loops,
                                    lock=args.lock_feet, ground=args.ground)
    report = commands.render(scene, args.output, clip=clip, size=size, fps=args.fps, style=_style(args),
                             quiet=args.quiet, overwrite=args.overwrite)
    _say_wrote(report, args.quiet, bool(scene.clips) and scene.camera.follow)
    return 0


def _cmd_reach(args: argparse.Namespace) -> int:
    from animkit.apps.reach_panels import reach_panel
    from animkit.render.frames import parse_size

    _check_outputs(args, args.save, args.json)
    scene = _load_for_render(args)
    effector, guessed = commands.reach_effector(scene, args.effector)
    if guessed and not args.quiet:
        print(f"animkit: effector {effector} (the figure's only moving leaf)", file=sys.stderr)
    target = _vector(args.target) if args.target else (list(scene.reach.target) if scene.reach else None)
    scene, result = commands.reach(scene, effector, target, chain=args.chain, solver=args.solver,
                                   duration=args.duration, hold=args.hold, fps=args.fps, quiet=args.quiet)
    size = parse_size(args.size) if args.size else (scene.camera.width, scene.camera.height)
    panel = reach_panel(scene.figure, result, result.trail[-1] if target is None else result.target, scene.meshes)
    report = _draw_panels([panel], args, scene, result.clip.fps, size, result.title)
    if args.save:
        commands.save_clip(args.save, scene, result.clip, args.keys)
    if args.json:
        _write_json(args.json, {**result.metrics(), "effector": result.effector,
                                "target": [float(x) for x in np.ravel(result.target)],
                                "motion": commands.reach_motion(scene, result.poses, result.clip.fps)})
    r = result.result
    print(f"{result.title}: {'reached' if result.reached else 'not reached'} ({_reach_error(result)}, "
          f"reachable {r.reachable}, {r.iterations} iterations, {r.time_s * 1e3:.1f} ms, solver {r.solver}); "
          f"wrote {report.path}" + "".join(f" and {p}" for p in (args.save, args.json) if p))
    return 0


def _reach_error(result: ReachResult) -> str:
    """How far the direct solve leaves the target: from the hand's surface in cm where the reach measured it (a
    humanoid's hand, :attr:`~animkit.motion.reach.ReachResult.surface_error`), else the effector's error in m."""
    if result.surface_error is None:
        return f"error {result.result.position_error:.3g} m"
    return f"{result.surface_error * 100:.1f} cm from the hand's surface"


def _draw_panels(panels: list[Panel], args: argparse.Namespace, scene: Scene, fps: float, size: tuple[int, int],
                 title: str) -> Any:
    """Panels to ``args.output``: frames (:func:`animkit.render.frames.render_panels`) or the viewer's page."""
    from animkit.apps.panel_forks import forked_rows
    from animkit.render.frames import render_panels

    if commands.is_html(args.output):
        from animkit.apps.html_view import panels_html, write_html

        return write_html(panels_html(panels, fps=fps, camera_spec=scene.camera, size=size,
                                      style=_style(args), title=title), args.output)
    return render_panels(panels, args.output, fps=fps, camera_spec=scene.camera, size=size,
                         style=_style(args), quiet=args.quiet, overwrite=args.overwrite,
                         rows=lambda streams, n: forked_rows(streams, n, (size[1], size[0], 3)))


def _render_imports(figure: Figure | None = None) -> None:
    """The modules drawing the panels will need, imported while the bake's other processes finish, and
    ``figure``'s look (:func:`animkit.render.placed.prepare_look`)."""
    import PIL.GifImagePlugin
    import PIL.ImageDraw
    import PIL.ImageFont  # noqa: F401

    import animkit.apps.panel_forks
    import animkit.render.frames
    import animkit.render.writers  # noqa: F401
    from animkit.render.placed import prepare_look

    if figure is not None:
        prepare_look(figure)


def _cmd_compare(args: argparse.Namespace) -> int:
    if args.plot:
        commands.matplotlib_pyplot()  # fail before the work, not after it
    _check_outputs(args, args.json, args.plot)
    scene = _load_for_render(args)
    look = None if scene.meshes or commands.is_html(args.output) else scene.figure  # drawn by its look
    comparison = commands.compare(scene, effector=args.effector,
                                  target=_vector(args.target) if args.target else None, chains=_names(args.chains),
                                  solvers=_names(args.solvers), duration=args.duration, hold=args.hold, fps=args.fps,
                                  quiet=args.quiet, prepare=functools.partial(_render_imports, look))
    if comparison.figure is not None and comparison.figure is not scene.figure:  # reached in metres, hips moving,
        from animkit.motion.reach_rigs import rigid_frames

        scene = dataclasses.replace(rigid_frames(scene)[0], figure=comparison.figure)  # frames rigid (its skins too)
    from animkit.apps.reach_panels import comparison_panels
    from animkit.render.frames import parse_size  # after the bakes: the renderer's imports are prepare's (meanwhile)

    panels = comparison_panels(scene.figure, comparison, meshes=scene.meshes)
    size = parse_size(args.size) if args.size else (360, 360)
    print(comparison.table())
    report = _draw_panels(panels, args, scene, comparison.fps, size, f"animkit compare: {comparison.effector}")
    if args.json:
        data = comparison.metrics()
        for panel, row in zip(comparison.panels, data["panels"], strict=True):
            row["motion"] = commands.reach_motion(scene, panel.poses, comparison.fps)
        _write_json(args.json, data)
    if args.plot:
        commands.plot_errors(comparison, args.plot)
    if args.save:
        commands.save_clip(args.save, scene, commands.panel_clips(comparison), args.keys)
    if not args.quiet:
        extra = "".join(f", {p}" for p in (args.json, args.plot, args.save) if p)
        if hasattr(report, "frames"):
            print(f"wrote {report.path} ({report.frames} frames, {report.size[0]}x{report.size[1]}){extra}")
        else:
            _say_wrote(report, False, scene.camera.follow)
            if extra:
                print(f"wrote {extra[2:]}")
    return 0


def _cmd_workspace(args: argparse.Namespace) -> int:
    from animkit.render.clouds import render_clouds

    if not str(args.output).lower().endswith(".png"):
        raise IKError(f"workspace: the picture is a PNG; got --output {args.output}")
    scene = load_scene(args.scene, args.scene_index)
    found = commands.workspaces(scene, _names(args.chains), args.effector, points=args.points,
                                orientations=args.orientations, seed=args.seed)
    print(f"{'movable set':<16}{'reachable (L)':>23}{'dexterous (L)':>23}")
    for c, w in found:
        print(f"{c:<16}{w.reachable_l:>12.1f} ± {w.reachable_err_l:<8.1f}{w.dexterous_l:>12.1f} ± "
              f"{w.dexterous_err_l:<8.1f}")
    clouds = [(f"{c}: {w.reachable_l:.0f} L reach, {w.dexterous_l:.0f} L dexterous",
               [(w.reachable, (0.35, 0.6, 0.95)), (w.dexterous, (0.95, 0.45, 0.2))]) for c, w in found]
    out = render_clouds(scene.figure, scene.figure.rest_pose(), clouds, args.output)
    if args.json:
        _write_json(args.json, [{"chain": c, "effector": w.effector, "reachable_l": w.reachable_l,
                                 "reachable_err_l": w.reachable_err_l, "dexterous_l": w.dexterous_l,
                                 "dexterous_err_l": w.dexterous_err_l, "points": len(w.points)} for c, w in found])
    if not args.quiet:
        print(f"wrote {out}" + (f", {args.json}" if args.json else ""))
    return 0


def _cmd_retarget(args: argparse.Namespace) -> int:
    from animkit.motion.retarget import hip_height, read_bone_map

    source, target = load_scene(args.source), load_scene(args.target)
    done = commands.retarget(source, target, clip=args.clip, bone_map=read_bone_map(args.map) if args.map else None,
                             lock=not args.no_lock, ground=args.ground)
    r = done.result
    if not args.quiet:
        print(r.bone_map.report())
        h_s = hip_height(done.source.figure, r.hips[1])
        unit = " m" if Path(args.target).suffix.lower() in (".glb", ".gltf") else ""
        print(f"hips {r.hips[1]} -> {r.hips[0]}, root translation scaled by {r.scale:.6g} (hip heights above the "
              f"lowest foot point standing: {h_s:.4g} -> {r.scale * h_s:.4g}{unit})")
    for note in r.notes:
        print(f"animkit: {note}", file=sys.stderr if note.startswith("NOT DRIVEN") else sys.stdout)
    if done.lock_note:
        print(f"animkit: feet not locked: {done.lock_note}", file=sys.stderr)
    elif done.locked is not None:
        b, a = done.locked.before, done.locked.after
        print(f"feet locked: skate {b.skate_mm:.2f} -> {a.skate_mm:.2f} mm per contact frame, penetration "
              f"{b.penetration_mm:.2f} -> {a.penetration_mm:.2f} mm, knee pop {b.knee_pop_deg:.1f} -> "
              f"{a.knee_pop_deg:.1f} deg")
        for note in done.locked.unlocked:
            print(f"  {note}")
    _print_retarget_measures(done)
    commands.save_clip(args.output, done.scene, None, args.keys)
    print(f"wrote {args.output} ({len(done.clip.sample_frames())} frames on {done.scene.figure.name!r})")
    if args.render:
        report = commands.render(done.scene, args.render, clip=done.clip, style=_style(args), quiet=args.quiet)
        if hasattr(report, "frames"):
            print(f"wrote {report.path} ({report.frames} frames)")
        else:
            _say_wrote(report, False)
    return 0


def _print_retarget_measures(done: commands.RetargetOutcome) -> None:
    """One line of :func:`animkit.motion.measures.measure_motion` against the source (its contacts carried over)."""
    from animkit.motion.measures import measure_motion

    poses, fps = done.clip.sample_frames(), done.clip.fps
    if len(poses) < 3:
        return
    m = measure_motion(done.scene.figure, poses, fps, meshes=done.scene.meshes, source=done.source)

    def num(x: float | None, fmt: str) -> str:
        return "-" if x is None else format(x, fmt)

    print(f"measured ({m.surface} surface, the source's contacts): skate {num(m.skate_mm_per_s, '.0f')} mm/s, "
          f"penetration {m.penetration_mm:.1f} mm, planted foot's lowest point {num(m.planted_height_median_mm, '.1f')}"
          f" mm (median), travel ratio {num(m.travel_ratio, '.3f')}, bone directions "
          f"{num(m.bone_direction_median_deg, '.1f')} deg median / {num(m.bone_direction_p90_deg, '.1f')} deg p90")


def _cmd_convert(args: argparse.Namespace) -> int:
    commands.check_writable(args.output)  # before the work
    scene = load_scene(args.input, args.scene_index)
    saved = commands.convert(scene, args.output, clip=args.clip, drop_meshes=args.no_meshes, keys=args.keys,
                             buffers=args.buffers)
    dst, n = Path(args.output), len(saved.clips)
    bin_file = dst.suffix.lower() == ".gltf" and args.buffers != "embedded"
    extra = f" and {dst.with_suffix('.bin').name}" if bin_file else ""
    print(f"wrote {dst}{extra} ({n} clip{'s' if n != 1 else ''})")
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


def _cmd_view(args: argparse.Namespace) -> int:
    from animkit.render.frames import parse_size

    if args.html:
        from animkit.render.writers import check_output

        check_output(args.html, render=False)
    scene = load_scene(args.scene, args.scene_index)
    if args.clip is not None:
        scene.clip(args.clip)  # an unknown name fails here, listing the clips
    if args.html:
        from animkit.apps.html_view import scene_html

        _write_page(scene_html(scene, args.clip, size=parse_size(args.size), target=not args.no_target), args.html,
                    False)
        return 0
    from animkit.render.viewer import view

    targets = None
    if not args.no_target and scene.reach is not None:
        targets = np.asarray([scene.reach.target[:3]])
    view(scene, args.clip, targets=targets, size=parse_size(args.size), render_scale=args.scale)
    return 0


def _cmd_batch(args: argparse.Namespace) -> int:
    from animkit.apps.batch import COMMANDS, run_batch, start_local_workers

    if args.scheduler is None and (args.workers is None or args.workers >= 1):
        start_local_workers(args.command_name, args.inputs, args.workers)  # their imports overlap what follows
    from animkit.render.frames import Style, parse_size
    from animkit.scene import CameraSpec

    options: dict[str, object] = {"suffix": COMMANDS[args.command_name].suffix}
    if args.format:
        from animkit.io import SAVERS

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
    from animkit.progress import progress

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

    from animkit.apps.batch import expand_inputs, run_batch
    from animkit.ik.prior import DIM, PosePrior, fit_mixture, mirror_features
    from animkit.ik.prior_poses import pose_set

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
        from animkit.io import load

        parts = [PosePrior.features_of(load(f), every=args.every) for f in files]
    X = np.concatenate(parts) if parts else np.zeros((0, DIM))
    if not args.no_mirror:
        X = np.concatenate([X, mirror_features(X)])
    w, m, c = fit_mixture(X, args.components, iterations=args.iterations, seed=args.seed)
    names = ", ".join(Path(f).name for f in files)
    source = (f"animkit prior fit: {len(files)} files ({names}), every {args.every}th frame"
              f"{'' if args.no_mirror else ' and its mirror'}, {len(X)} poses, {args.components} component(s)")
    PosePrior(w, m, c, source, pose_set(X)).save(args.output)  # with its poses: pose_from_effectors' centre
    print(f"{args.output}: {args.components} component(s) fitted on {len(X)} poses from {len(files)} files")
    return 0


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
    benchmarks/results_batch.md); likewise after ``compare`` (its GIF written and renamed into place, its bake
    processes reaped), whose teardown is the main job's last few hundredths of a second; and after an interrupt (its
    outputs taken back), where a JIT compile cut short leaves llvmlite objects whose teardown prints a traceback
    (``AttributeError: 'PassBuilder' object has no attribute '_as_parameter_'``). Not while a non-daemon thread
    still runs: Python would wait for it.
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
        with guard_interrupts():  # a Ctrl-C the JIT compiler's callbacks swallow still ends the command
            code = int(HANDLERS[args.command](args))
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
    except KeyboardInterrupt:  # every output already taken back as the stack unwound (atomic writes)
        print("animkit: interrupted", file=sys.stderr)
        return 130, True  # and ended at once: a compile cut short leaves llvmlite objects whose teardown prints
    return code, args.command in ("batch", "compare") or \
        (args.command == "prior" and (args.workers or args.scheduler) is not None)


#: The function behind each subcommand (``args.command``).
HANDLERS = {"info": _cmd_info, "render": _cmd_render, "retarget": _cmd_retarget, "reach": _cmd_reach,
            "compare": _cmd_compare, "workspace": _cmd_workspace, "convert": _cmd_convert, "batch": _cmd_batch,
            "prior": _cmd_prior, "view": _cmd_view}


if __name__ == "__main__":  # pragma: no cover
    console_main()
