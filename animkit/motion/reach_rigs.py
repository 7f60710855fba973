"""The figure a natural reach drives on a humanoid a user brings (issue 21 §3, issue 25 §2): its hips free to drop,
its lengths in metres.

:func:`reaching_figure`: a matched humanoid whose hips never translate in its file (RiggedFigure: its own clip never
moves them) gets the hips' translation DOFs the retarget gives such a target
(:func:`animkit.motion.retarget_rest.drivable`), in its ``whole-body`` chain, so that the hips can drop over planted
feet and the knees bend (with the pelvis held in place the hip-to-ankle span cannot shorten).
:func:`in_metres`: a figure in its file's own units (a CMU BVH: 15.8 units to the hips) scaled to metres by
k = :func:`~animkit.motion.legs.metres_per_unit`, x′ = k x for every offset and translation, angles unchanged, so
that the natural reach's lengths in metres (clearances, margins, tolerances) hold at the figure's size and the reach
is the one the same skeleton in metres makes. :func:`rigid_frames`: a figure whose world frames carry a uniform scale
(an FBX or Mixamo armature ×0.01 or ×100) rebuilt with rigid frames and the same world positions, its skins with it,
since the natural reach's tasks read unit DOF axes and rigid frames (a planted foot's, the head's forward).
:func:`reaching_scene` does all three for :func:`animkit.motion.reach.compare` and ``animkit reach``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.ik.stance import stands
from animkit.model.figure import Figure, Rig
from animkit.model.humanoid import match_figure
from animkit.model.joints import Joint
from animkit.model.rig import rig_from_humanoid
from animkit.motion.legs import legs_of, metres_per_unit
from animkit.motion.retarget_rest import drivable
from animkit.scene import Scene

__all__ = ["in_metres", "frame_scales", "rigid_frames", "reaching_figure", "reaching_pose", "reaching_scene",
           "reaching_inputs"]

Array = NDArray[np.float64]


def in_metres(figure: Figure) -> tuple[Figure, float]:
    """(``figure`` in metres, metres per unit k): a matched humanoid in its file's own units (a CMU BVH's, 15.8 units
    to its hips) scaled by k = :func:`animkit.motion.legs.metres_per_unit` (0.95 m hips), so that the natural
    reach's lengths in metres (clearances, margins, planted feet's tolerance) hold at the figure's size: every arc's
    L offset, every node's T offset and every translation DOF's rest and limits times k; angles, names, DOF order
    and rig as they were. (``figure``, 1.0) for a figure in metres, one without legs, or one with drawn geometry of
    its own (its shapes would need scaling too)."""
    if not stands(figure) or any(n.data is not None for n in figure.nodes()):
        return figure, 1.0
    k = metres_per_unit(figure, legs_of(figure))
    if k == 1.0:
        return figure, 1.0
    return _rescaled(figure, k, {n: k for n in figure.node_names}), k


def frame_scales(figure: Figure) -> dict[str, float] | None:
    """Node name → s, the uniform scale of its world frame at rest (|column| of its world rotation, 1 for a rigid
    frame: an FBX armature's ×100 gives 100 to every bone below it), or None where a frame's scale is not uniform
    (its columns' lengths more than 1e-6 apart, relative) or none is scaled."""
    W = figure.world_batch(figure.rest_pose()[None])[0, :, :3, :3]
    n = np.linalg.norm(W, axis=1)  # (N, 3): each column's length
    if np.allclose(n, 1.0, rtol=0.0, atol=1e-6) or not np.allclose(n, n[:, :1], rtol=1e-6, atol=0.0):
        return None
    return {name: float(v) for name, v in zip(figure.node_names, n.mean(axis=1), strict=True)}


def _rescaled(figure: Figure, k: float, d: Mapping[str, float]) -> Figure:
    """The figure whose world frames are M′ = K M D⁻¹ (K = diag(k, k, k, 1), D = diag(d, d, d, 1) with d = k s, s
    the node's frame scale): positions times k, frames rigid (the scale taken out). Arc by arc, M′_c = M′_p L′ A′(θ′)
    with L′ = D_p L D_c⁻¹ (its rotation part the turn alone, its offset d_p times) and A′ = D_c A D_c⁻¹ (a
    translation DOF's rest and limits times d_c; turns unchanged); the root's parent is the world (d = k); a node's T
    (its drawing's frame) D_c T D_c⁻¹. With every d = k (a rigid figure): lengths times k."""

    def conj(M: ArrayLike | None, a: float, b: float) -> Array | None:  # diag(a) M diag(b)⁻¹
        if M is None:
            return None
        out = np.array(M, dtype=float)
        out[:3, :3] *= a / b
        out[:3, 3] *= a
        return out

    def scaled(j: Joint, f: float) -> Joint:
        dofs = tuple(replace(dof, rest=dof.rest * f, lower=dof.lower * f, upper=dof.upper * f)
                     if dof.kind == "prismatic" else dof for dof in j.dofs)
        return replace(j, dofs=dofs)

    out: Figure | None = None
    for arc in figure.arcs():
        node = arc.child
        dc = d[node.name]
        dp = k if arc.parent is None else d[arc.parent.name]
        T = conj(node.T, dc, dc)
        if out is None:
            out = Figure(node.name, T=T, color=node.color, joint=scaled(arc.joint, dc), L=conj(arc.L, dp, dc),
                         name=figure.name, up=figure.up)
        else:
            assert arc.parent is not None
            out.add(node.name, arc.parent.name, L=conj(arc.L, dp, dc), joint=scaled(arc.joint, dc), T=T,
                    color=node.color)
    assert out is not None
    out.rig = figure.rig
    return out


def rigid_frames(scene: Scene) -> tuple[Scene, dict[str, float]]:
    """(``scene`` with rigid world frames, node name → d): a figure whose frames carry a uniform scale (an FBX
    armature scaled ×100, its bones in centimetres: :func:`frame_scales`) rebuilt by :func:`_rescaled` (k = 1) so
    that every world position is the same and every frame a turn (a planted foot's frame, a DOF's unit axis, the
    head's forward: what the natural reach's tasks read), its meshes with it: a skin's inverse bind matrices
    IBM′_j = D_j IBM_j and a rigid mesh's rest positions times d, so every skinned vertex lands where it did. A
    translation DOF's value reads times d of its node (:func:`reaching_pose`). (``scene``, {}) where the frames are
    rigid, a scale is not uniform, or the figure has drawn geometry of its own."""
    fig = scene.figure
    d = frame_scales(fig)
    if d is None or any(n.data is not None for n in fig.nodes()):
        return scene, {}
    meshes = []
    for m in scene.meshes:
        if m.skin is not None:
            D = np.array([[d[j]] * 3 + [1.0] for j in m.skin.joints])
            m = replace(m, skin=replace(m.skin, inverse_bind=np.asarray(m.skin.inverse_bind) * D[:, :, None]))
        else:
            m = replace(m, rest_positions=np.asarray(m.rest_positions) * d[m.node])
        meshes.append(m)
    return replace(scene, figure=_rescaled(fig, 1.0, d), meshes=tuple(meshes)), d


def reaching_pose(figure: Figure, reaching: Figure, pose: ArrayLike, unit: float = 1.0) -> Array:
    """``pose`` of ``figure`` on ``reaching`` (its :func:`reaching_figure` in metres, ``unit`` metres per unit, its
    frames made rigid by :func:`rigid_frames`): by DOF name, a translation times ``unit`` and its node's frame scale
    (:func:`frame_scales`), DOFs ``figure`` lacks at their rest."""
    s = frame_scales(figure) or {}
    c = figure.compiled
    f = {d.name: unit * s.get(c.node_names[int(c.dof_node[i])], 1.0) for i, d in enumerate(figure.dofs)
         if d.kind == "prismatic"}
    return reaching.pose_from({n: v * f[n] if n in f else v for n, v in figure.pose_dict(pose).items()})


def reaching_figure(figure: Figure) -> Figure:
    """The figure a reach on ``figure`` drives: ``figure`` itself, or, where it is a matched humanoid with a
    ``whole-body`` chain whose hips have no translation DOF, a copy whose hips get three (before their turn, rest
    values their file's offset: :func:`~animkit.motion.retarget_rest.drivable`, as a retarget gives such a target)
    and whose ``whole-body`` chain holds them (:func:`~animkit.model.rig.rig_from_humanoid`'s). The copy has the same
    nodes, rest geometry, effectors and limits; a pose of ``figure`` reads on it by DOF name
    (``copy.pose_from(figure.pose_dict(pose))``, the hips' translation at rest). ``figure`` itself is never changed:
    its clips play on it as loaded."""
    if not stands(figure):
        return figure
    rig, bones = figure.rig, match_figure(figure)
    hips = bones.get("hips")
    if hips is None or any(d.kind == "prismatic" for d in figure.path_to(hips)[-1].joint.dofs):
        return figure
    out, failed = drivable(figure, (), (hips,))
    if failed or out is figure:
        return figure
    body = rig_from_humanoid(out, bones).chains.get("whole-body")
    if body is not None:
        out.rig = rig.merged(Rig({"whole-body": body}))
    return out


def reaching_scene(scene: Scene) -> tuple[Scene, float]:
    """(``scene`` with the figure :func:`animkit.motion.reach.compare` reaches on, metres per unit of ``scene``): its
    frames made rigid (:func:`rigid_frames`, the meshes with them), its figure :func:`in_metres`, then
    :func:`reaching_figure`'s (its meshes hang on the same nodes); ``scene`` itself where that is its own figure."""
    rigid, _ = rigid_frames(scene)
    metres, unit = in_metres(rigid.figure)
    fig = reaching_figure(metres)
    return (scene, unit) if fig is scene.figure else (replace(rigid, figure=fig), unit)


def reaching_inputs(given: Figure, fig: Figure, unit: float, pose: Array, goal: Array) -> tuple[Array, Array]:
    """(``pose`` of ``given`` on ``fig``, ``goal`` (3,) or (4, 4) in ``given``'s units in ``fig``'s), ``fig`` and
    ``unit`` from :func:`reaching_scene`: p′ = k p for positions, rotations unchanged."""
    if fig is not given:
        pose = reaching_pose(given, fig, pose, unit)
    if unit != 1.0:
        goal = goal.copy()
        if goal.shape == (3,):
            goal *= unit
        else:
            goal[:3, 3] *= unit
    return pose, goal
