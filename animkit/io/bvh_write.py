"""BVH written back: any figure (one whose arcs rotate or whose DOFs scale baked by :func:`bvh_baked`, its rest
rotations folded into ``zxy`` channels over world-aligned OFFSETs), the channels in the figure's DOF order, degrees.
:mod:`animkit.io.bvh` re-exports these names; ``io.FORMATS`` names them as the ``.bvh`` writer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import AnimkitError, SceneError
from animkit.io.bvh_hierarchy import _NAME_OF, _translation
from animkit.model.figure import Figure
from animkit.model.joints import DofKind, Joint, JointKind, custom, fixed
from animkit.model.transforms import euler_intrinsic_from_matrix
from animkit.scene import Scene

Array = NDArray[np.float64]


# --- writing ------------------------------------------------------------------------------------------------


class _Sampled(Protocol):
    @property
    def fps(self) -> float: ...
    @property
    def duration(self) -> float | None: ...

    def sample(self, times: ArrayLike) -> Array: ...


def _channel_of(figure_dof: Any, joint: Joint) -> tuple[str, float]:
    """The BVH channel of a DOF and the sign its values take (an axis −e_i is channel i with −θ)."""
    axis = figure_dof.axis
    for i, letter in enumerate("xyz"):
        for sign in (1.0, -1.0):
            e = np.zeros(3)
            e[i] = sign
            if np.allclose(axis, e, atol=1e-12):
                return _NAME_OF[(figure_dof.kind, letter)], sign
    raise SceneError(f"joint {joint.name!r}: DOF {figure_dof.name!r} has axis {np.round(axis, 6).tolist()}; BVH "
                     f"channels turn or slide only along the coordinate axes x, y, z")


def _frames_of(figure: Figure, motion: _Sampled | ArrayLike, frame_time: float | None) -> tuple[Array, float]:
    if hasattr(motion, "sample") and hasattr(motion, "fps"):
        clip: Any = motion
        ft = 1.0 / float(clip.fps) if frame_time is None else float(frame_time)
        if not math.isfinite(ft) or ft <= 0:
            raise AnimkitError(f"frame time must be a positive number of seconds, got {ft}")
        n = int(math.floor(float(clip.duration) / ft + 1e-9)) + 1
        frames = np.asarray(clip.sample(np.arange(n) * ft), dtype=float)
    else:
        if frame_time is None:
            raise AnimkitError("dumps_bvh of raw frames needs frame_time (seconds per frame)")
        ft = float(frame_time)
        if not math.isfinite(ft) or ft <= 0:
            raise AnimkitError(f"frame time must be a positive number of seconds, got {frame_time!r}")
        frames = np.asarray(motion, dtype=float)
    frames = figure.check_pose(frames)
    return np.atleast_2d(frames), ft


#: the baked BVH's Euler order (CMU's): R = R_z R_x R_y
BAKED_ORDER = "zxy"


def _writable(figure: Figure) -> bool:
    """Whether every arc's L is a pure translation and every DOF turns or slides along a coordinate axis."""
    for arc in figure.arcs():
        if not np.allclose(arc.L[:3, :3], np.eye(3), atol=1e-12):
            return False
        for d in arc.joint.dofs:
            if d.kind == "scale" or d.axis_letter is None and not any(
                    np.allclose(d.axis, -np.eye(3)[i], atol=1e-12) for i in range(3)):
                return False
    return True


def _nearest_rotation(M: Array) -> Array:
    """R = U Vᵀ from M = U Σ Vᵀ (the polar factor: the rotation nearest M), for (..., 3, 3)."""
    U, _, Vt = np.linalg.svd(M)
    R = U @ Vt
    flip = np.linalg.det(R) < 0
    if flip.any():
        U = U.copy()
        U[flip, :, 2] *= -1
        R = U @ Vt
    return R


def bvh_baked(figure: Figure, frames: ArrayLike) -> tuple[Figure, Array]:
    """Any figure and its frames (F, D) as a BVH-shaped figure (OFFSETs only, ``zxy`` rotations) and its frames.

    Rest frames become world-aligned: with W_j(t) the world matrix of node j and W_j⁰ its rest, the baked joint
    turns by G_j = W_j W_j⁰⁻¹ (rotation part; the rest rotation is baked into the channels), its OFFSET is
    p_j⁰ − p_parent⁰ (world axes) and its channels hold R_j = G_parentᵀ G_j, so
    p_j(t) = p_parent(t) + G_parent(t) OFFSET_j wherever the node's own translation does not move; a node whose
    position leaves that (an animated translation) gets position channels holding G_parentᵀ (p_j − p_parent) − OFFSET.
    The root gets six channels. Leaves that never move off their rest offset become End Sites. A static root with
    one child (glTF's ``world``) is left out. SceneError where a node's world matrix is not a rotation times its
    rest (an animated scale).
    """
    F = np.atleast_2d(figure.check_pose(frames))
    W = figure.world_batch(F)
    W0 = figure.world_batch(figure.rest_pose()[None])[0]
    names = figure.node_names
    index = {n: i for i, n in enumerate(names)}
    parent = [-1 if (up := figure.parent_of(n)) is None else index[up] for n in names]
    size = max(figure.size(), 1e-9)
    G = W[:, :, :3, :3] @ np.linalg.inv(W0[:, :3, :3])
    R = _nearest_rotation(G)
    bad = np.abs(G - R).max(axis=(0, 2, 3))
    if (bad > 1e-5).any():
        j = int(np.argmax(bad))
        raise SceneError(f"node {names[j]!r}: its world matrix is not a turn of its rest (an animated scale, off by "
                         f"{bad[j]:.3g}); BVH channels hold turns and positions only")
    p = W[:, :, :3, 3]
    p0 = W0[:, :3, 3]
    skip_root = (not figure.root_arc.joint.dofs and np.allclose(W0[0], np.eye(4), atol=1e-12)
                 and len(list(figure.root.arcs())) == 1)
    first = 1 if skip_root else 0
    kids: dict[int, list[int]] = {}
    for i in range(first + 1, len(names)):
        kids.setdefault(parent[i], []).append(i)
    cols: list[Array] = []
    root = first
    root_chans: list[tuple[DofKind, str]] = [("prismatic", "x"), ("prismatic", "y"), ("prismatic", "z")]
    root_chans += [("revolute", a) for a in BAKED_ORDER]
    fig = Figure(names[root], joint=custom(names[root], root_chans, kind="free", order=BAKED_ORDER),
                 L=_translation(p0[root]), name=figure.name)
    cols += [p[:, root] - p0[root], euler_intrinsic_from_matrix(R[:, root], BAKED_ORDER)]
    todo = list(reversed(kids.get(root, [])))
    while todo:
        j = todo.pop()
        pj = parent[j]
        offset = p0[j] - p0[pj]
        local = np.einsum("fji,fj->fi", R[:, pj], p[:, j] - p[:, pj])  # G_parentᵀ (p_j − p_parent)
        moves = np.abs(local - offset).max() > 1e-9 * size
        rel = np.swapaxes(R[:, pj], 1, 2) @ R[:, j]
        leaf = j not in kids
        chans: list[tuple[DofKind, str]] = []
        if moves:
            chans += [("prismatic", "x"), ("prismatic", "y"), ("prismatic", "z")]
            cols.append(local - offset)
        if not leaf or moves:
            chans += [("revolute", a) for a in BAKED_ORDER]
            cols.append(euler_intrinsic_from_matrix(rel, BAKED_ORDER))
        kind: JointKind = "free" if moves else "ball"
        fig.add(names[j], names[pj], offset=offset,
                joint=custom(names[j], chans, kind=kind, order=BAKED_ORDER) if chans else fixed(names[j]))
        todo.extend(reversed(kids.get(j, [])))
    out = np.concatenate([c.reshape(len(F), -1) for c in cols], axis=1) if cols else np.zeros((len(F), 0))
    # continuity: each angle moved by whole turns toward the previous frame's
    rev = np.array([d.kind == "revolute" for d in fig.dofs])
    if len(F) > 1 and rev.any():
        out[:, rev] = np.unwrap(out[:, rev], axis=0)
    return fig, out


def bvh_files(path: Path, scene: Scene, clips: Sequence[Any], *, frame_time: float | None = None,
              precision: int | None = None) -> list[tuple[Path, bytes]]:
    """The one file a ``.bvh`` save writes (the format registry's writer, :data:`animkit.io.FORMATS`): the given
    clip, else the scene's first; a BVH file holds one."""
    if len(clips) > 1:
        raise AnimkitError(f"{path}: a BVH file holds one clip, got {len(clips)} "
                           f"({', '.join(c.name for c in clips)}); save each to its own file")
    text = dumps_bvh(scene.figure, clips[0] if clips else scene.clip(), frame_time=frame_time, precision=precision)
    return [(path, text.encode("utf-8"))]


def dumps_bvh(figure: Figure, clip_or_frames: _Sampled | ArrayLike, *, frame_time: float | None = None,
              precision: int | None = None) -> str:
    """BVH text for ``figure`` and its motion: a clip (sampled every 1/fps s) or raw frames (F, D) in radians.

    Every arc's L must be a pure translation (its OFFSET) and every DOF turn or slide along a coordinate
    axis (a DOF along −x is written as ``Xrotation``/``Xposition`` with its values negated). A leaf with a
    fixed joint becomes an End Site (its name is not stored: it reads back as ``<parent>_end``) and any
    other fixed joint a JOINT with ``CHANNELS 0``. animkit and bvhio read ``CHANNELS 0``; pybvh 0.9 and
    fairmotion 0.0.4 accept only the usual layout (6 channels on the root, 3 rotations on every JOINT),
    which figures read from such files keep. Angles are written in degrees, everything with ``precision``
    decimals (the default 6 keeps world positions within 1e-6 of the figure's size for sizes above ~1).

    Any other figure (a glTF character: rest rotations in its nodes, scale channels) is written baked
    (:func:`bvh_baked`): world-aligned rest frames, each node's rest rotation folded into its channels, so the
    written file's FK gives the figure's world positions at every frame; its ``precision`` defaults to
    max(6, ⌈8 − log₁₀ size⌉) decimals, which keeps them within 1e-6 of the figure's size.
    """
    if precision is not None and (not isinstance(precision, int) or precision < 1):
        raise AnimkitError(f"precision must be a positive whole number of decimals, got {precision!r}")
    frames, ft = _frames_of(figure, clip_or_frames, frame_time)
    if not _writable(figure):
        if precision is None:
            precision = max(6, math.ceil(8.0 - math.log10(max(figure.size(), 1e-9))))
        figure, frames = bvh_baked(figure, frames)
    precision = 6 if precision is None else precision
    fmt = f"{{:.{precision}f}}"
    out = ["HIERARCHY"]
    columns: list[tuple[int, float, bool]] = []  # (DOF index, sign, revolute)
    dof_index = 0
    # depth-first with an explicit stack: ("open", arc, depth) / ("close", depth)
    todo: list[tuple[str, Any, int]] = [("open", figure.root_arc, 0)]
    while todo:
        what, arc, depth = todo.pop()
        ind = "\t" * depth
        if what == "close":
            out.append(ind + "}")
            continue
        L = arc.L
        if not np.allclose(L[:3, :3], np.eye(3), atol=1e-12):
            raise SceneError(f"node {arc.child.name!r}: its arc's L has a rotation; BVH stores only an OFFSET "
                             f"(a translation), so it cannot store this figure")
        offset = " ".join(fmt.format(v + 0.0) for v in L[:3, 3])
        children = list(arc.child.arcs())
        joint: Joint = arc.joint
        if arc.parent is not None and not joint.dofs and not children:
            out += [ind + "End Site", ind + "{", ind + "\tOFFSET " + offset, ind + "}"]
            continue
        names = []
        for d in joint.dofs:
            channel, sign = _channel_of(d, joint)
            names.append(channel)
            columns.append((dof_index, sign, d.revolute))
            dof_index += 1
        head = "ROOT" if arc.parent is None else "JOINT"
        out += [f"{ind}{head} {arc.child.name}", ind + "{", f"{ind}\tOFFSET {offset}",
                f"{ind}\tCHANNELS {len(names)}" + "".join(" " + n for n in names)]
        todo.append(("close", None, depth))
        todo.extend(("open", c, depth + 1) for c in reversed(children))
    values = frames.copy()
    for i, sign, revolute in columns:
        values[:, i] = sign * (np.rad2deg(values[:, i]) if revolute else values[:, i])
    values += 0.0  # -0.0 + 0.0 is +0.0
    out += ["MOTION", f"Frames: {values.shape[0]}", f"Frame Time: {ft:.10g}"]
    if values.shape[1]:
        row = " ".join([f"%.{precision}f"] * values.shape[1])
        out.extend(row % tuple(r) for r in values.tolist())
    else:
        out.extend("" for _ in range(values.shape[0]))
    return "\n".join(out) + "\n"
