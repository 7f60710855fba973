"""The stance a matched humanoid stands in for a natural reach: its feet planted, its knees and hips eased.

A rig matched by :mod:`animkit.model.humanoid` (a glTF, BVH or FBX character) brings no ``[reach.priors]`` of its
own; :func:`stance_priors` gives it what the built-in humanoid's scene declares for its whole-body reach: both
feet planted (the rig's ``foot_l`` and ``foot_r`` effectors: :class:`~animkit.ik.tasks.Plant` keeps each foot's
frame, and :class:`~animkit.ik.tasks.Balance` the centre of mass over them, wherever the movable set moves the
legs) and a comfort pose with the knees bent :data:`KNEE_BEND` and the hips flexed :data:`HIP_FLEX` (the
humanoid's ``preferred`` knee_s.rx = 50°, hip_s.rx = −10°: with it, a low reach shares its bend between the
hips, knees and spine about as CMU 02_06's bend-scoop-reach does, and lowers the head so that it pitches
within a person's 45–55° on the README's main job), and its spine as stiff as the humanoid's: each joint from
the spine bone to the chest bone at :data:`SPINE_STIFFNESS` (the humanoid's ``stiffness`` spine = chest = 0.9; its
further 0.97 on the spine's twist and side bend names DOF axes a rig's Euler angles do not share), and the joints
between the hips and each thigh (a BVH's LHipJoint and RHipJoint: bones of the pelvis, which a person cannot turn)
at :data:`PELVIS_STIFFNESS`. Left as free as its hips, a glTF rig's spine twisted 40–41° and bent 35° sideways on
a low reach (a person: 10° and 23°, CMU 02_06 at its lowest), which carried the free shoulder over the belly; held
out of the body there (:class:`~animkit.ik.clear.Clear`) the free arm stood 56–57° from hanging (now 37–38°).
The natural solver's other weights are the :class:`~animkit.ik.natural.Priors` defaults.
:func:`animkit.motion.reach.compare` takes these priors for a scene without ``[reach.priors]`` whose panels are
natural (``solvers=["natural"]``, ``--solvers natural``; such a scene's panels are plain LM otherwise, which plants
nothing).

A rig's knee and hip DOFs are Euler angles in each joint's own frame and order, so the comfort pose is made by
turning the joint's child frame in the world about the body's side axis and reading the joint's angles back:

    A′ = A · R_cᵀ · Rot(a, φ) · R_c     (R_c: the node's world rotation at rest, A = A(θ_rest), then θ′ from A′)

with the side axis s = the line from the left upper leg to the right, laid level, forward f = u × s, and a = u × f
for the knee (φ > 0 swings the shin back, its flexion), a = −(u × f) for the hip (the thigh forward).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.ik.natural import Priors
from animkit.model.figure import Figure
from animkit.model.humanoid import HumanoidMap, match_figure
from animkit.model.joints import euler_angles_near
from animkit.model.transforms import matrix_about_axis

__all__ = ["KNEE_BEND", "HIP_FLEX", "SPINE_STIFFNESS", "PELVIS_STIFFNESS", "stance_priors", "trunk_stiffness",
           "comfort_bend", "stands", "natural_by_default"]

Array = NDArray[np.float64]

#: The comfort pose's knee flexion (the built-in humanoid's preferred knee_s.rx, radians).
KNEE_BEND = math.radians(50.0)
#: The comfort pose's hip flexion (the built-in humanoid's preferred hip_s.rx = −10°: the thigh forward).
HIP_FLEX = math.radians(10.0)
#: The stiffness of each spine joint (the built-in humanoid's ``stiffness`` spine = chest = 0.9).
SPINE_STIFFNESS = 0.9
#: The stiffness of a joint between the hips and a thigh (a bone of the pelvis, turned by no muscle).
PELVIS_STIFFNESS = 0.99
COS_25 = math.cos(math.radians(25.0))


def stance_priors(figure: Figure, up: ArrayLike = (0.0, 1.0, 0.0)) -> Priors:
    """The default :class:`~animkit.ik.natural.Priors` for ``figure`` (module docstring): with its feet planted, the
    comfort pose's legs bent and its spine stiff (:func:`trunk_stiffness`) where the rig has a ``whole-body`` chain
    and both foot effectors, else the plain defaults."""
    a = np.asarray(up, dtype=float)
    u = (float(a[0]), float(a[1]), float(a[2]))
    if not stands(figure):
        return Priors(up=u)
    return Priors(up=u, planted=("foot_l", "foot_r"), preferred=comfort_bend(figure, up=u),
                  stiffness=trunk_stiffness(figure))


def trunk_stiffness(figure: Figure, bones: HumanoidMap | None = None) -> dict[str, float]:
    """Joint name → :data:`SPINE_STIFFNESS` for each joint on the path from the humanoid's spine bone to its chest
    bone, both included (the joints :class:`~animkit.ik.spread.Spread` spreads a bend over), and → PELVIS_STIFFNESS
    for each joint strictly between the hips bone and a thigh bone; a part the rig does not map (or whose lower bone
    does not hang below the upper) left out."""
    b = match_figure(figure) if bones is None else bones
    out: dict[str, float] = {}
    for top, bottom, inner, s in (("spine", "chest", False, SPINE_STIFFNESS),
                                  ("hips", "upper_leg_l", True, PELVIS_STIFFNESS),
                                  ("hips", "upper_leg_r", True, PELVIS_STIFFNESS)):
        a, z = b.get(top), b.get(bottom)
        if a is None or z is None:
            continue
        path = list(figure.path_to(z))
        names = [arc.child.name for arc in path]
        if a in names:
            out.update({arc.joint.name: s for arc in path[names.index(a) + inner: len(path) - inner]})
    return out


def stands(figure: Figure) -> bool:
    """Whether ``figure`` reaches as a person standing on both feet: its rig has a ``whole-body`` chain and both foot
    effectors (a matched humanoid's rig: :func:`~animkit.model.rig.rig_from_humanoid`). Such a figure's natural reach
    plants its feet (:func:`stance_priors`), and :func:`animkit.motion.reach.compare` reaches naturally by default."""
    rig = figure.rig
    return "whole-body" in rig.chains and {"foot_l", "foot_r"} <= set(rig.effectors)


def natural_by_default(figure: Figure) -> bool:
    """Whether :func:`animkit.motion.reach.compare` reaches on ``figure`` naturally by default: it :func:`stands` and
    its nodes' world frames are rigid at rest (a natural reach keeps planted feet's frames, which a scaled frame, an
    FBX armature's ×100 in centimetres, cannot give: those rigs keep LM, ``solvers=["natural"]`` on request)."""
    if not stands(figure):
        return False
    W = figure.world_batch(figure.rest_pose()[None])[0, :, :3, :3]
    return bool(np.allclose(np.einsum("nij,nik->njk", W, W), np.eye(3), atol=1e-6))


def comfort_bend(figure: Figure, *, up: ArrayLike = (0.0, 1.0, 0.0), bones: HumanoidMap | None = None,
                 knee: float = KNEE_BEND, hip: float = HIP_FLEX) -> dict[str, float]:
    """DOF name → value of the rest pose with each knee flexed ``knee`` and each hip ``hip`` (radians; module
    docstring): the joints :func:`_turned` can turn."""
    b = match_figure(figure) if bones is None else bones
    need = [f"{k}_{s}" for s in "lr" for k in ("upper_leg", "lower_leg")]
    if any(b.get(n) is None for n in need):
        return {}
    u = np.asarray(up, dtype=float)
    u = u / np.linalg.norm(u)
    pose = figure.rest_pose()
    names = figure.node_names
    W = figure.world_batch(pose[None])[0]
    side = W[names.index(b.node("upper_leg_r")), :3, 3] - W[names.index(b.node("upper_leg_l")), :3, 3]
    side = side - (side @ u) * u
    if np.linalg.norm(side) < 1e-9:
        return {}
    forward = np.cross(u, side / np.linalg.norm(side))
    knee_axis = np.cross(u, forward)
    out: dict[str, float] = {}
    for part, axis, angle in (("upper_leg", -knee_axis, hip), ("lower_leg", knee_axis, knee)):
        for s in "lr":
            node = b.node(f"{part}_{s}")
            out.update(_turned(figure, pose, W[names.index(node), :3, :3], node, axis, angle))
    return out


def _turned(figure: Figure, pose: Array, Rw: Array, node: str, axis: Array, angle: float) -> dict[str, float]:
    """The joint into ``node`` turned so its child frame turns by ``angle`` about the world ``axis``: three turning
    DOFs in an Euler order (a ball joint's, a glTF node's between its translation and scale) by
    R′ = R R_cᵀ Rot(axis, angle) R_c, their values read back near the rest's; one (a hinge) by ± ``angle`` where its
    axis lies along ``axis`` (within 25°); any other joint is left as it is."""
    joint = figure.path_to(node)[-1].joint
    idx = figure.joint_dofs[joint.name]
    turns = [(i, d) for i, d in zip(idx, joint.dofs, strict=True) if d.kind == "revolute"]
    Rc = Rw / np.linalg.norm(Rw, axis=0)  # a scaled node's world frame: its rotation
    if len(turns) == 1:
        (i, d), = turns
        along = float((Rc @ d.axis) @ axis)  # a hinge's world axis: R_c k (its own turn leaves k where it is)
        return {figure.dof_names[i]: float(pose[i] + math.copysign(angle, along))} if abs(along) > COS_25 else {}
    if len(turns) != 3 or joint.order is None:
        return {}
    rows = [i for i, _ in turns]
    R = np.eye(3)
    for i, d in turns:
        R = R @ d.matrix(pose[i])[:3, :3]
    values = euler_angles_near(R @ Rc.T @ matrix_about_axis(axis, angle) @ Rc, pose[rows], joint.order)
    return {figure.dof_names[i]: float(v) for i, v in zip(rows, values, strict=True)}
