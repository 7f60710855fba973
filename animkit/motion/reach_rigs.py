"""The figure a natural reach drives on a humanoid a user brings (issue 21 §3, issue 25 §2): its hips free to drop,
its lengths in metres.

:func:`reaching_figure`: a matched humanoid whose hips never translate in its file (RiggedFigure: its own clip never
moves them) gets the hips' translation DOFs the retarget gives such a target
(:func:`animkit.motion.retarget_rest.drivable`), in its ``whole-body`` chain, so that the hips can drop over planted
feet and the knees bend (with the pelvis held in place the hip-to-ankle span cannot shorten).
:func:`in_metres`: a figure in its file's own units (a CMU BVH: 15.8 units to the hips) scaled to metres by
k = :func:`~animkit.motion.legs.metres_per_unit`, x′ = k x for every offset and translation, angles unchanged, so
that the natural reach's lengths in metres (clearances, margins, tolerances) hold at the figure's size and the reach
is the one the same skeleton in metres makes. :func:`reaching_scene` does both for :func:`animkit.motion.reach.compare`.
"""

from __future__ import annotations

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

__all__ = ["in_metres", "reaching_figure", "reaching_pose", "reaching_scene", "reaching_inputs"]

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

    def moved(M: Array | None) -> Array | None:
        if M is None:
            return None
        out = np.array(M, dtype=float)
        out[:3, 3] *= k
        return out

    def scaled(j: Joint) -> Joint:
        dofs = tuple(replace(d, rest=d.rest * k, lower=d.lower * k, upper=d.upper * k) if d.kind == "prismatic"
                     else d for d in j.dofs)
        return replace(j, dofs=dofs)

    out: Figure | None = None
    for arc in figure.arcs():
        node = arc.child
        if out is None:
            out = Figure(node.name, T=moved(node.T), color=node.color, joint=scaled(arc.joint), L=moved(arc.L),
                         name=figure.name, up=figure.up)
        else:
            assert arc.parent is not None
            out.add(node.name, arc.parent.name, L=moved(arc.L), joint=scaled(arc.joint), T=moved(node.T),
                    color=node.color)
    assert out is not None
    out.rig = figure.rig
    return out, k


def reaching_pose(figure: Figure, reaching: Figure, pose: ArrayLike, unit: float = 1.0) -> Array:
    """``pose`` of ``figure`` on ``reaching`` (its :func:`reaching_figure` in metres, ``unit`` metres per unit): by
    DOF name, translations times ``unit``, DOFs ``figure`` lacks at their rest."""
    kinds = {d.name: d.kind for d in figure.dofs}
    values = {n: v * unit if kinds[n] == "prismatic" else v for n, v in figure.pose_dict(pose).items()}
    return reaching.pose_from(values)


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
    figure :func:`in_metres`, then :func:`reaching_figure`'s (its meshes hang on the same nodes); ``scene`` itself
    where that is its own figure."""
    metres, unit = in_metres(scene.figure)
    fig = reaching_figure(metres)
    return (scene, unit) if fig is scene.figure else (replace(scene, figure=fig), unit)


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
