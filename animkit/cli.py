"""The ``animkit`` command: info, render, reach, compare, view.

Errors animkit raises on purpose print one line (``animkit: error: ...``) and exit 2;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from typing import TextIO

from .errors import AnimkitError

__all__ = ["main", "describe_scene"]


def describe_scene(scene, out: TextIO) -> None:  # type: ignore[no-untyped-def]
    """Print the tree: nodes, joints, DOFs with limits, chains, effectors and clips."""
    fig = scene.figure
    dofs = fig.dofs
    n_moving = sum(1 for j in fig.joints if j.dof_count)
    print(f"{fig.name}: {len(fig.node_names)} nodes, {n_moving} movable joints, {fig.dof_count} DOFs "
          f"(source: {scene.source or 'code'}, up: {scene.up})", file=out)
    starts = {}
    i = 0
    for arc in fig.arcs():
        starts[id(arc)] = i
        i += arc.joint.dof_count
    depth = {fig.root.name: 0}
    for arc in fig.arcs():
        node = arc.child
        d = 0 if arc.parent is None else depth[arc.parent.name] + 1
        depth[node.name] = d
        shape = type(node.data).__name__.lower() if node.data is not None else "-"
        joint = arc.joint
        print(f"{'  ' * d}{node.name}  [{joint.kind}{' ' + joint.order if joint.order else ''}] data: {shape}",
              file=out)
        for k, dof in enumerate(joint.dofs):
            s = starts[id(arc)] + k
            unit, scale = ("deg", 180 / math.pi) if dof.revolute else ("", 1.0)
            lim = "unlimited" if not (math.isfinite(dof.lower) or math.isfinite(dof.upper)) else \
                f"[{dof.lower * scale:g}, {dof.upper * scale:g}]{' ' + unit if unit else ''}"
            print(f"{'  ' * d}  #{s:<3d} {dofs[s].name:<20s} {dof.kind:<9s} limits {lim}, rest "
                  f"{dof.rest * scale:g}", file=out)
    if scene.chains:
        print("chains:", file=out)
        for name, joints in scene.chains.items():
            print(f"  {name}: {', '.join(joints)}", file=out)
    if scene.effectors:
        print("effectors: " + ", ".join(f"{k} -> {v}" if k != v else k for k, v in scene.effectors.items()),
              file=out)
    for name, clip in scene.clips.items():
        print(f"clip {name}: {clip.duration:g} s at {clip.fps:g} fps ({_frame_count(clip)} frames), "
              f"loop {clip.loop}", file=out)


def _frame_count(clip) -> int:  # type: ignore[no-untyped-def]
    return int(round(clip.duration * clip.fps)) + 1


def _cmd_info(args: argparse.Namespace) -> int:
    from . import load

    describe_scene(load(args.scene), sys.stdout)
    return 0


def _style(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from .render.clip import Style

    return Style(supersample=args.supersample, grid=not args.no_grid, joint_axes=args.axes)


def _add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", required=True, help="out.gif, out.mp4, a folder/ (PNG per frame) or sheet.png")
    p.add_argument("--size", default=None, help="WIDTHxHEIGHT in pixels (default: the scene's camera, 640x480)")
    p.add_argument("--fps", type=float, default=None, help="frame rate (default: the clip's)")
    p.add_argument("--supersample", type=int, default=1, choices=[1, 2, 3, 4], help="anti-aliasing factor")
    p.add_argument("--no-grid", action="store_true", help="no ground grid")
    p.add_argument("--axes", action="store_true", help="draw each joint's axes")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar or notices")


def _cmd_render(args: argparse.Namespace) -> int:
    from . import load
    from .render.clip import parse_size, render_clip

    scene = load(args.scene)
    size = parse_size(args.size) if args.size else None
    if not scene.clips:
        if args.clip:
            scene.clip(args.clip)  # the error names the scene and says it has no clips
        from .keyframes import Clip

        still = Clip.from_poses(scene.figure, [0.0], scene.figure.rest_pose()[None], name="rest")
        if not args.quiet:
            print(f"animkit: {scene.source} has no clips: rendering the rest pose", file=sys.stderr)
        report = render_clip(scene, args.output, clip=still, size=size, fps=args.fps, style=_style(args),
                             quiet=args.quiet)
    else:
        report = render_clip(scene, args.output, clip=args.clip, size=size, fps=args.fps, style=_style(args),
                             quiet=args.quiet)
    if not args.quiet:
        print(f"wrote {report.path} ({report.frames} frames, {report.size[0]}x{report.size[1]}, "
              f"{report.fps:g} fps) in {report.seconds:.1f} s")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="animkit", description="Hierarchical character animation: scene graphs, "
                                     "keyframes, inverse kinematics, headless rendering to GIF/MP4.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("info", help="print a scene's tree: nodes, joints, DOFs with limits, chains, effectors, clips")
    p.add_argument("scene", help="a .toml scene, .bvh motion capture or .urdf robot")
    p.set_defaults(run=_cmd_info)
    p = sub.add_parser("render", help="render a clip of a scene (or a .bvh) to GIF, MP4 or PNG frames")
    p.add_argument("scene", help="a .toml scene, .bvh motion capture or .urdf robot")
    p.add_argument("--clip", default=None, help="which clip (default: the first)")
    _add_output_options(p)
    p.set_defaults(run=_cmd_render)
    return parser


def _one_line_warning(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
    print(f"animkit: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    import warnings

    warnings.showwarning = _one_line_warning
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except AnimkitError as exc:
        print(f"animkit: error: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("animkit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
