"""Humanoid rigs with the structures real exporters write, made with animkit's own glTF writer, and the measures a
retarget onto them is judged by (used by tests/test_retarget_rigs.py and benchmarks/bench_retarget_matrix.py).

Rigs (every one a skinned glTF character):

* ``mixamo_-90`` / ``mixamo_+90`` / ``mixamo_0``: Mixamo's layout: ``mixamorig:``-named bones under an ``Armature``
  node scaled 0.01 and turned −90° / +90° / not at all about x, every offset and the hips' keyed translation in
  centimetres;
* ``bind_differs``: plain names in metres, whose nodes stand in another pose (knees and hips bent, arms down) than
  the T-pose its skin was bound in (the inverse bind matrices), as some exporters leave them, and whose hips its
  own clip turns but never translates;
* each rig's left forearm is never animated by its clip (the loaded figure has no DOF there).

The measures are written here from their definitions (issue 25 §1), independently of animkit.retarget: root travel
against the source's times the ratio of hip heights known from the rig's construction, the lowest mesh point while
the source has a foot planted, skate of the target's feet over the source's contact frames, knee pops, and world
bone directions against the source's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import animkit
from animkit.keyframes import Clip
from animkit.look.drawn import figure_mesh
from animkit.model.figure import Figure
from animkit.model.geometry import Capsule
from animkit.model.joints import ball, free
from animkit.model.transforms import homogeneous, matrix_about_axis, matrix_aligning_z_to
from animkit.motion import detect_contacts, knee_angles, legs_of
from animkit.scene import Scene

#: the standing rig in metres, Y up, facing +z, its left at +x: node → (parent, offset from the parent)
_BONES: tuple[tuple[str, str | None, tuple[float, float, float]], ...] = (
    ("Hips", None, (0.0, 0.94, 0.0)),
    ("Spine", "Hips", (0.0, 0.10, 0.0)),
    ("Spine1", "Spine", (0.0, 0.12, 0.0)),
    ("Spine2", "Spine1", (0.0, 0.14, 0.0)),
    ("Neck", "Spine2", (0.0, 0.16, 0.0)),
    ("Head", "Neck", (0.0, 0.10, 0.02)),
    ("HeadTop_End", "Head", (0.0, 0.18, 0.0)),
    ("LeftShoulder", "Spine2", (0.06, 0.12, 0.0)),
    ("LeftArm", "LeftShoulder", (0.12, 0.0, 0.0)),
    ("LeftForeArm", "LeftArm", (0.27, 0.0, 0.0)),
    ("LeftHand", "LeftForeArm", (0.25, 0.0, 0.0)),
    ("LeftHandEnd", "LeftHand", (0.08, 0.0, 0.0)),
    ("RightShoulder", "Spine2", (-0.06, 0.12, 0.0)),
    ("RightArm", "RightShoulder", (-0.12, 0.0, 0.0)),
    ("RightForeArm", "RightArm", (-0.27, 0.0, 0.0)),
    ("RightHand", "RightForeArm", (-0.25, 0.0, 0.0)),
    ("RightHandEnd", "RightHand", (-0.08, 0.0, 0.0)),
    ("LeftUpLeg", "Hips", (0.09, -0.05, 0.0)),
    ("LeftLeg", "LeftUpLeg", (0.0, -0.41, 0.0)),
    ("LeftFoot", "LeftLeg", (0.0, -0.40, 0.0)),
    ("LeftToeBase", "LeftFoot", (0.0, -0.06, 0.12)),
    ("LeftToe_End", "LeftToeBase", (0.0, 0.0, 0.07)),
    ("RightUpLeg", "Hips", (-0.09, -0.05, 0.0)),
    ("RightLeg", "RightUpLeg", (0.0, -0.41, 0.0)),
    ("RightFoot", "RightLeg", (0.0, -0.40, 0.0)),
    ("RightToeBase", "RightFoot", (0.0, -0.06, 0.12)),
    ("RightToe_End", "RightToeBase", (0.0, 0.0, 0.07)),
)
#: hips above the lowest foot joint (the toes, 0.02 m up) when standing, metres: the rig's hip height by construction
HIP_HEIGHT = 0.94 - 0.02
NEVER_ANIMATED = "LeftForeArm"
RIGS = ("mixamo_-90", "mixamo_+90", "mixamo_0", "bind_differs")


@dataclass(frozen=True)
class Rig:
    """A written rig: its file, its hips node, its hip height in metres (by construction)."""

    name: str
    path: Path
    hips: str
    hip_height: float = HIP_HEIGHT


def _figure(prefix: str, scale: float, turn_x: float, hips_move: bool) -> tuple[Figure, str]:
    """The rig's figure: ``world`` → (``Armature`` scaled and turned, when ``scale`` ≠ 1) → bones in the armature's
    units. Every bone a ball joint; the hips a free joint when ``hips_move`` (keyed in the armature's units)."""
    fig = Figure("world", name=f"rig_{prefix or 'plain'}")
    top = "world"
    R = matrix_about_axis(np.array([1.0, 0.0, 0.0]), np.radians(turn_x))
    if scale != 1.0 or turn_x:
        L = np.eye(4)
        L[:3, :3] = scale * R
        fig.add("Armature", "world", L=L)
        top = "Armature"
    to_local = R.T / scale  # metres, Y up → the armature's frame and units
    first_child = {}
    for _name, parent, off in _BONES:
        if parent is not None:
            first_child.setdefault(parent, to_local @ np.asarray(off))
    for name, parent, off in _BONES:
        data, T = None, None
        if name in first_child:  # a capsule along the bone to its first child (the feet thinner)
            d = first_child[name]
            radius = (0.025 if "Foot" in name or "Toe" in name else 0.035) / scale
            data, T = Capsule(radius, float(np.linalg.norm(d))), homogeneous(matrix_aligning_z_to(d))
        fig.add(prefix + name, top if parent is None else prefix + parent, offset=to_local @ np.asarray(off),
                joint=(free if hips_move and parent is None else ball)(prefix + name, "zyx"), data=data, T=T)
    return fig, prefix + "Hips"


def _clip(fig: Figure, never: str) -> Clip:
    """Two seconds of a gentle sway on every ball joint but ``never``'s (a clip keys the bones to give them DOFs)."""
    t = np.arange(61) / 30.0
    P = np.repeat(fig.rest_pose()[None], len(t), axis=0)
    for k, name in enumerate(fig.dof_names):
        if name.startswith(never + "."):
            continue
        amplitude = 3.0 if name.split(".")[-1].startswith("t") else 0.05  # centimetres where the hips move
        P[:, k] += amplitude * np.sin(2 * np.pi * t / 2.0 + 0.7 * k)
    return Clip.from_poses(fig, t, P, name="sway", fps=30.0)


def write_rig(kind: str, folder: Path) -> Rig:
    """Write rig ``kind`` (one of :data:`RIGS`) under ``folder`` with animkit's glTF writer; see the module's doc."""
    folder.mkdir(parents=True, exist_ok=True)
    if kind.startswith("mixamo_"):
        fig, hips = _figure("mixamorig:", 0.01, float(kind.split("_")[1]), True)
        path = folder / f"{kind}.glb"
        animkit.save(path, Scene(fig), _clip(fig, "mixamorig:" + NEVER_ANIMATED))
        return Rig(kind, path, hips)
    if kind != "bind_differs":
        raise ValueError(f"unknown rig {kind!r}; expected one of {RIGS}")
    fig, hips = _figure("", 1.0, 0.0, False)
    path = folder / f"{kind}.gltf"
    animkit.save(path, Scene(fig), _clip(fig, NEVER_ANIMATED), buffers="embedded")
    doc = json.loads(path.read_text(encoding="utf-8"))
    # the exporter's "current pose": knees and hips bent, arms down; the skin stays bound in the T-pose
    bent = {"LeftUpLeg": ("x", -60.0), "RightUpLeg": ("x", -60.0), "LeftLeg": ("x", 110.0), "RightLeg": ("x", 110.0),
            "LeftArm": ("z", -75.0), "RightArm": ("z", 75.0), "Spine1": ("x", 15.0)}
    for node in doc["nodes"]:
        if node.get("name") in bent:
            axis, deg = bent[node["name"]]
            a = np.radians(deg) / 2
            q = {"x": [np.sin(a), 0.0, 0.0], "z": [0.0, 0.0, np.sin(a)]}[axis] + [np.cos(a)]
            node["rotation"] = [float(v) for v in q]
    path.write_text(json.dumps(doc), encoding="utf-8")
    return Rig(kind, path, hips)


# --- measures ----------------------------------------------------------------------------------------------------


def _up(scene: Scene) -> int:
    return 1 if scene.up == "y" else 2


def surface_low(scene: Scene, figure: Figure, poses: np.ndarray) -> np.ndarray:
    """The lowest point of the surface per frame (F,): the skinned meshes, else the drawn geometry."""
    W = figure.world_batch(poses)
    k = _up(scene)
    if scene.meshes:
        return np.min([m.positions(W)[..., k].min(axis=1) for m in scene.meshes], axis=0)
    fm = figure_mesh(figure)
    M = W[:, fm.owner]
    return (np.einsum("fvj,vj->fv", M[:, :, k, :3], fm.vertices) + M[:, :, k, 3]).min(axis=1)


def feet_below(fig: Figure) -> list[str]:
    """The humanoid feet and every node below them."""
    from animkit.model.humanoid import match_figure

    h = match_figure(fig)
    out: list[str] = []
    for s in ("l", "r"):
        todo = [h.node(f"foot_{s}")]
        while todo:
            n = todo.pop()
            out.append(n)
            todo += [a.child.name for a in fig.node(n).arcs()]
    return out


def standing_hip_height(scene: Scene) -> float:
    """Hips above the lowest foot joint (the foot and the nodes below it) at the node rest pose."""
    from animkit.model.humanoid import match_figure

    fig = scene.figure
    W = fig.world_batch(fig.rest_pose()[None])[0]
    names = fig.node_names
    feet = [names.index(n) for n in feet_below(fig)]
    k = _up(scene)
    return float(W[names.index(match_figure(fig).node("hips")), k, 3] - W[feet, k, 3].min())


@dataclass(frozen=True)
class Measures:
    travel_ratio: float
    low_median_m: float
    low_p5_m: float
    skate_mm_s: float
    knee_pop_deg: float
    source_knee_pop_deg: float
    dir_median_deg: float
    dir_p90_deg: float


def measure_retarget(source: Scene, target: Scene, figure: Figure, poses: np.ndarray, pairs: dict[str, str],
                     source_hip: float, target_hip: float) -> Measures:
    """The §1 measures of ``poses`` on ``figure`` (the target's, metres) against the source's clip (see the module)."""
    clip = source.clip()
    P_s = clip.sample(clip.frame_times())
    fs, ft = source.figure, figure
    kt = _up(target)
    G = np.eye(3) if source.up == target.up else np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])
    if source.up == "z" and target.up == "y":
        G = G.T
    Xs = fs.world_positions(P_s)
    Xt = ft.world_positions(poses)
    ns, nt = fs.node_names, ft.node_names
    # root travel against the source's, times the hip heights' ratio
    hs, ht = ns.index(pairs[_hips(pairs, fs)]), nt.index(_hips(pairs, fs))
    flat_s = np.delete(Xs[[0, -1], hs] @ G.T, kt, axis=1)
    flat_t = np.delete(Xt[[0, -1], ht], kt, axis=1)
    travel = float(np.linalg.norm(flat_t[1] - flat_t[0]) /
                   (np.linalg.norm(flat_s[1] - flat_s[0]) * target_hip / source_hip))
    # the source's contacts, carried to the target's feet by the bone map
    c = detect_contacts(fs, P_s, clip.fps, up=source.up)
    planted = c.mask.any(axis=1)
    low = surface_low(target, ft, poses)[planted]
    back = {s: t for t, s in pairs.items()}
    speeds = []
    for j, p in enumerate(c.points):
        if p not in back:
            continue
        both = c.mask[1:, j] & c.mask[:-1, j]
        step = np.linalg.norm(np.delete(np.diff(Xt[:, nt.index(back[p])], axis=0), kt, axis=1), axis=1)
        speeds.append(step[both] * clip.fps)
    skate = float(np.mean(np.concatenate(speeds))) * 1000.0 * 0.9 / target_hip if speeds else float("nan")
    knee_t = np.degrees(np.abs(np.diff(knee_angles(ft, poses, legs_of(ft)), axis=0))).max()
    knee_s = np.degrees(np.abs(np.diff(knee_angles(fs, P_s, legs_of(fs)), axis=0))).max()
    # world bone directions: each mapped bone with one nearest mapped descendant, against its source bone's; not the
    # feet, whose ankle → toe line is no anatomical direction (CesiumMan's points 64° down, CMU's 14°): they are
    # judged by the mesh on the ground
    angles = []
    feet = set(feet_below(ft))
    for t, s in pairs.items():
        if t in feet:
            continue
        kids = _nearest_mapped(ft, t, pairs)
        if len(kids) != 1 or not _below(fs, pairs[kids[0]], s):
            continue
        dt = Xt[:, nt.index(kids[0])] - Xt[:, nt.index(t)]
        ds = (Xs[:, ns.index(pairs[kids[0]])] - Xs[:, ns.index(s)]) @ G.T
        cos = np.einsum("fi,fi->f", dt, ds) / (np.linalg.norm(dt, axis=1) * np.linalg.norm(ds, axis=1))
        angles.append(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))))
    a = np.concatenate(angles)
    return Measures(travel, float(np.median(low)), float(np.percentile(low, 5)), skate, float(knee_t),
                    float(knee_s), float(np.median(a)), float(np.percentile(a, 90)))


def _hips(pairs: dict[str, str], source: Figure) -> str:
    return min(pairs, key=lambda t: len(source.path_to(pairs[t])))


def _nearest_mapped(fig: Figure, node: str, pairs: dict[str, str]) -> list[str]:
    out, todo = [], [a.child.name for a in fig.node(node).arcs()]
    while todo:
        n = todo.pop()
        if n in pairs:
            out.append(n)
        else:
            todo += [a.child.name for a in fig.node(n).arcs()]
    return out


def _below(fig: Figure, node: str, ancestor: str) -> bool:
    return any(a.parent is not None and a.parent.name == ancestor for a in fig.path_to(node))
