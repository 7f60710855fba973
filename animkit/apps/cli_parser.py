"""The ``animkit`` command's arguments: :func:`build_parser`, one small function per subcommand. Parsing only:
what each command does is :mod:`animkit.apps.commands`' work, called by :mod:`animkit.apps.cli` (``args.command`` names
it).
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["build_parser", "SCENE_HELP", "add_camera_options"]

SCENE_HELP = ("a .toml scene, .bvh motion capture, .urdf robot, .gltf/.glb/.fbx character, or an example's name "
              "(humanoid, walk, wave, ...)")

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


def _info(sub: Any, gltf: argparse.ArgumentParser) -> None:
    p = sub.add_parser("info", parents=[gltf],
                       help="print a scene's tree: nodes, joints, DOFs with limits, chains, effectors, clips")
    p.add_argument("scene", help=SCENE_HELP)
    p.add_argument("--contacts", action="store_true", help="the clip's foot contacts (heel and toe, in frames)")
    p.add_argument("--motion", action="store_true", help="foot skate, penetration and knee pops, as is and with "
                   "the feet locked")
    p.add_argument("--json", default=None, help="with --motion: also write the measures as JSON")
    p.add_argument("--clip", default=None, help="which clip (default: the first)")
    _add_ground_option(p)


def _render(sub: Any, gltf: argparse.ArgumentParser) -> None:
    p = sub.add_parser("render", parents=[gltf], help="render a clip of a scene (or a .bvh) to GIF, MP4 or PNG frames")
    p.add_argument("scene", help=SCENE_HELP)
    p.add_argument("--clip", "--animation", dest="clip", default=None,
                   help="which clip (glTF: animation) by name (default: the first)")
    p.add_argument("--loops", type=int, default=1, help="play N cycles, each carrying on from where the last "
                   "ended (root position and heading)")
    p.add_argument("--lock-feet", action="store_true", help="hold the feet where they land during contacts")
    _add_ground_option(p)
    _add_output_options(p)


def _retarget(sub: Any, gltf: argparse.ArgumentParser) -> None:
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
    _add_keys_option(p)


def _reach(sub: Any, gltf: argparse.ArgumentParser) -> None:
    p = sub.add_parser("reach", parents=[gltf], help="bake an IK reach into a clip and render it")
    p.add_argument("scene", help=SCENE_HELP)
    _add_reach_options(p)
    p.add_argument("--chain", default=None, help="movable set: a chain name or joints (default: root to effector)")
    p.add_argument("--solver", default=None, help="IK solver (default: the robust default); see docs/derivations.md")
    p.add_argument("--save", default=None, help="also save the baked clip with the scene: clip.toml, clip.bvh, "
                   "reach.glb or reach.gltf")
    p.add_argument("--json", default=None, help="also write the reach's metrics as JSON (a hand's distances from "
                   "its surface: surface_error, clip_surface_error)")
    _add_output_options(p)
    _add_keys_option(p)


def _compare(sub: Any, gltf: argparse.ArgumentParser) -> None:
    p = sub.add_parser("compare", parents=[gltf],
                       help="one reach per movable set (and solver), side by side, with metrics")
    p.add_argument("scene", help=SCENE_HELP + " with [chains] (and usually [reach])")
    _add_reach_options(p)
    p.add_argument("--chains", default=None, help="comma-separated chain names (default: the scene's [reach])")
    p.add_argument("--solvers", default=None, help="comma-separated solver names (one panel per set and solver), "
                   "'natural' among them for the scene's natural reaching (the default when it has [reach.priors] or "
                   "is a character matched as a humanoid: glTF, BVH, FBX; 'lm' for plain LM)")
    p.add_argument("--json", default=None, help="also write the metrics as JSON")
    p.add_argument("--plot", default=None, help="also plot error against iteration (needs animkit[plot])")
    p.add_argument("--save", default=None, help="also save the reaches: compare.glb / .gltf (one animation per "
                   "panel) or .toml (one clip per panel)")
    _add_output_options(p)
    _add_keys_option(p)


def _workspace(sub: Any, gltf: argparse.ArgumentParser) -> None:
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


def _convert(sub: Any, gltf: argparse.ArgumentParser) -> None:
    p = sub.add_parser("convert", parents=[gltf],
                       help="convert a scene and its clips: any input to .glb/.gltf, .toml or .bvh")
    p.add_argument("input", help="a .toml scene, .bvh motion capture, .urdf robot or .gltf/.glb character")
    p.add_argument("output", help="out.glb, out.gltf (with out.bin beside it), out.toml or out.bvh")
    p.add_argument("--clip", default=None, help="only this clip (BVH holds one: the first unless named)")
    p.add_argument("--no-meshes", action="store_true", help="to .bvh/.toml: leave a character's meshes out "
                   "(those formats hold only the skeleton and its motion)")
    p.add_argument("--buffers", choices=["external", "embedded"], default=None,
                   help=".gltf only: binary data in a .bin beside it (external, the default) or in the JSON")
    _add_keys_option(p)


def _batch(sub: Any, gltf: argparse.ArgumentParser) -> None:
    from animkit.apps.batch import COMMANDS

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


def _prior(sub: Any, gltf: argparse.ArgumentParser) -> None:
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


def _view(sub: Any, gltf: argparse.ArgumentParser) -> None:
    p = sub.add_parser("view", parents=[gltf], help="play a scene's clip in a window: space plays, arrows step, "
                       "drag orbits, scroll zooms, w wireframe, a axes")
    p.add_argument("scene", help=SCENE_HELP)
    p.add_argument("--clip", default=None, help="which clip (default: the first, or the rest pose)")
    p.add_argument("--size", default="800x600", help="window size WIDTHxHEIGHT")
    p.add_argument("--scale", type=float, default=1.0, help="render at this fraction of the window size")
    p.add_argument("--no-target", action="store_true", help="do not mark the scene's [reach] target")
    p.add_argument("--html", default=None, metavar="OUT.html", help="write the interactive viewer as one "
                   "self-contained HTML file instead of opening a window (no display needed)")


def _add_keys_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keys", choices=["auto", "linear"], default=None,
                   help=".glb/.gltf output: auto (exact keys, cubic where the clip is) or linear (resampled at the "
                   "frames with LINEAR keys, for importers that mishandle CUBICSPLINE)")


def add_camera_options(p: argparse.ArgumentParser) -> None:
    """--fov, --view, --azimuth, --elevation, --distance, --follow (``animkit render``'s camera options)."""
    _add_camera_options(p)


_SUBCOMMANDS = (_info, _render, _retarget, _reach, _compare, _workspace, _convert, _batch, _prior, _view)


def build_parser() -> argparse.ArgumentParser:
    """The ``animkit`` parser: a subcommand each; ``args.command`` names the one given."""
    parser = argparse.ArgumentParser(prog="animkit", description="Hierarchical character animation: scene graphs, "
                                     "keyframes, inverse kinematics, headless rendering to GIF/MP4.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    gltf = argparse.ArgumentParser(add_help=False)
    gltf.add_argument("--scene", dest="scene_index", type=int, default=None, metavar="N",
                      help="for a .gltf/.glb file: read its scene N (default: the file's own default scene)")
    for add in _SUBCOMMANDS:
        add(sub, gltf)
    return parser
