"""Human joint ranges for IK: a documented limit profile per canonical humanoid bone, fitted to a figure.

Each bone's range is a swing–twist :class:`~animkit.model.joints.Cone` about the bone's own axis, measured from the
anatomical neutral pose (standing, arms hanging at the sides: 0° in the clinical tables) rather than the figure's
rest (a T-pose rests at 90° of shoulder abduction):

    R = A(θ) A_refᵀ = exp([s]_×) R_t(τ),   u = s × t   (where the bone's tip swings)
    (u_f / r)² + (u_s / r')² ≤ 1,   τ ∈ [−τ_max, τ_max]

t is the bone at neutral (joint → child joint), f the direction its flexion carries the tip (front for the spine,
neck, shoulder and hip; back for the knee; up for the ankle, toes and clavicle), r its flexion (toward f) or
extension (away) and r' its sideways bend (toward the body's outside or inside; the trunk bends alike both ways).
Where a region spans several joints (the thoracolumbar spine from the spine bone to the chest, the cervical spine
from the neck to the head) its range is shared equally among them. Values in degrees, from the American Academy of
Orthopaedic Surgeons' tables (Greene & Heckman, *The Clinical Measurement of Joint Motion*, AAOS 1994; the same
values as Norkin & White, *Measurement of Joint Motion*, 5th ed., 2016, Appendix A) unless noted; see
``docs/limits.md``.

The body's axes come from the matched bones at rest: up = hips → head, right = left hip → right hip made ⊥ up,
front = up × right.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from animkit.model.figure import Figure
from animkit.model.humanoid import HumanoidMap, match_figure
from animkit.model.joints import Cone, Joint

__all__ = ["BoneRange", "HUMAN_RANGES", "RANGE_DEGREES", "humanoid_limits", "has_own_limits"]

Toward = Literal["front", "back", "up"]
Array = NDArray[np.float64]

#: A person's ranges of the whole body's posture (degrees; the same AAOS tables): thoracolumbar lateral flexion
#: (``side_bend``) 35° and rotation (``twist``) 45°; the pelvis's roll and a knee's inward lean (``pelvis_roll``,
#: ``knee_in``) 5°, what a person reaching low keeps. The bounds of :class:`animkit.ik.ranges.Ranges`; a scene's
#: ``[reach.priors] ranges`` overrides them by name.
RANGE_DEGREES: Mapping[str, float] = MappingProxyType(
    {"side_bend": 35.0, "twist": 45.0, "pelvis_roll": 5.0, "knee_in": 5.0})


@dataclass(frozen=True)
class BoneRange:
    """One bone's range in degrees: ``flexion`` toward ``toward`` and ``extension`` away from it, ``outward`` and
    ``inward`` sideways (the trunk's are alike), ``twist`` each way about the bone; ``region``: the joints that
    share it ("trunk": spine … chest; "neck": neck … head); ``source``: where the numbers come from."""

    toward: Toward
    flexion: float
    extension: float
    outward: float
    inward: float
    twist: float
    region: str | None = None
    source: str = "AAOS 1994"


#: The profile (degrees). Shoulder 170/60/170/30: AAOS flexion 180, extension 60, abduction 180 (170 kept off the
#: antipode, where a swing has no direction), adduction 30 across the body; internal/external rotation 70/90 → ±80.
#: Elbow: flexion 150, no extension (+5 of slack), ±20 sideways (the carrying angle, 10–15°, and how far the bend
#: plane read from a slightly bent rest may be off), pronation/supination 80/80 on the forearm. Wrist: flexion 80,
#: extension 70, radial/ulnar deviation 20/30 (the palm's plane is not known from a skeleton: 75° every way).
#: Hip: flexion 120, extension 30, abduction 45, adduction 30, rotation 45/45. Knee: flexion 135, no extension
#: (+5), tibial rotation ±10. Ankle: dorsiflexion 20, plantarflexion 50, forefoot abduction/adduction 15,
#: inversion/eversion 35/15 → twist ±25. Great toe MTP: extension 70 (toward up), flexion 45. Thoracolumbar spine:
#: flexion 80, extension 25, lateral bending 35, rotation 45. Cervical spine: flexion 45, extension 45, lateral
#: bending 45, rotation 60. Clavicle (sternoclavicular; Ludewig et al., J Bone Joint Surg Am 91:378, 2009: ≈ 15°
#: elevation, 15–20° retraction, ≈ 30° posterior rotation over full arm elevation).
HUMAN_RANGES: dict[str, BoneRange] = {
    "spine": BoneRange("front", 80, 25, 35, 35, 45, region="trunk"),
    "chest": BoneRange("front", 80, 25, 35, 35, 45, region="trunk"),
    "neck": BoneRange("front", 45, 45, 45, 45, 60, region="neck"),
    "head": BoneRange("front", 45, 45, 45, 45, 60, region="neck"),
    "clavicle": BoneRange("up", 15, 5, 20, 20, 30, source="Ludewig et al. 2009"),
    "upper_arm": BoneRange("front", 170, 60, 170, 30, 80),
    "forearm": BoneRange("front", 150, 5, 20, 20, 80),
    "hand": BoneRange("front", 75, 75, 75, 75, 10),
    "upper_leg": BoneRange("front", 120, 30, 45, 30, 45),
    "lower_leg": BoneRange("back", 135, 5, 5, 5, 10),
    "foot": BoneRange("up", 20, 50, 15, 15, 25),
    "toe": BoneRange("up", 70, 45, 10, 10, 5),
}


def has_own_limits(joint: Joint) -> bool:
    """Whether a joint carries limits of its own: a cone, or a finite bound on any of its DOFs."""
    return joint.cone is not None or any(math.isfinite(d.lower) or math.isfinite(d.upper) for d in joint.dofs)


def _unit(v: Array) -> Array | None:
    n = float(np.linalg.norm(v))
    return v / n if n > 1e-9 else None


def _turn(a: Array, b: Array) -> Array:
    """The shortest rotation carrying unit a onto unit b (Rodrigues)."""
    v = np.cross(a, b)
    c = float(a @ b)
    if c < -1.0 + 1e-12:  # opposite: half a turn about any axis ⊥ a
        e = np.eye(3)[int(np.argmin(np.abs(a)))]
        k = np.cross(a, e)
        k /= np.linalg.norm(k)
        return 2.0 * np.outer(k, k) - np.eye(3)
    K = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
    return np.eye(3) + K + K @ K / (1.0 + c)


def humanoid_limits(figure: Figure, bones: HumanoidMap | None = None) -> dict[str, Cone]:
    """Joint name → :class:`~animkit.model.joints.Cone` from :data:`HUMAN_RANGES` for every matched bone of a humanoid
    (and every joint between the spine and the chest, and between the neck and the head) whose joint turns as a
    ball (three rotation DOFs with an Euler order) and has no limits of its own; {} when the figure is not a
    humanoid. The shoulder's range is centred on the arm hanging down; every other bone's on its rest direction."""
    bones = match_figure(figure) if bones is None else bones
    if not bones.is_humanoid:
        return {}
    b = bones.bones
    W = figure.world_batch(figure.rest_pose()[None])[0]
    index = {n: i for i, n in enumerate(figure.node_names)}
    P = W[:, :3, 3]

    def at(bone: str) -> Array:
        return P[index[b[bone]]]

    up = _unit(at("head") - at("hips"))
    across = at("upper_leg_r") - at("upper_leg_l")
    if up is None:
        return {}
    right = _unit(across - up * float(across @ up))
    if right is None:
        return {}
    front = np.cross(up, right)

    # each limited node: (bone, the region's joint count, side, the bone's tip at rest)
    def path(top: str, bottom: str) -> list[str]:
        names = [a.child.name for a in figure.path_to(b[bottom])]
        return names[names.index(b[top]):] if b[top] in names else []

    entries: dict[str, tuple[str, int, str | None]] = {}
    for top, bottom in (("spine", "chest"), ("neck", "head")):
        if top in b and bottom in b:
            nodes = [n for n in path(top, bottom) if _ball(figure.node(n).parent_arc.joint)]  # type: ignore[union-attr]
            for n in nodes:
                entries[n] = (bottom if n == b[bottom] else top, len(nodes), None)
    for bone, node in b.items():
        base = bone[:-2] if bone.endswith(("_l", "_r")) else bone
        if base in HUMAN_RANGES and HUMAN_RANGES[base].region is None:
            entries[node] = (base, 1, bone[-1] if bone.endswith(("_l", "_r")) else None)
    out: dict[str, Cone] = {}
    for node, (base, share, side) in entries.items():
        arc = figure.node(node).parent_arc
        assert arc is not None
        j = arc.joint
        if not _ball(j) or has_own_limits(j):
            continue
        tip = _tip(figure, node, bones, P, index, front)
        d = _unit(tip - P[index[node]]) if tip is not None else None
        parent = figure.parent_of(node)
        if d is None and parent is not None:  # a bone of no length (CMU's chest at its neck): on from its parent
            d = _unit(P[index[node]] - P[index[parent]])
        if d is None:
            continue
        rng = HUMAN_RANGES[base]
        neutral = -up if base == "upper_arm" else d
        toward: Array | None = {"front": front, "back": -front, "up": up}[rng.toward]
        upper = _unit(P[index[node]] - P[index[figure.parent_of(node) or node]])
        if base == "lower_leg" and upper is not None:
            neutral = upper  # a straight leg is the knee's 0°, however bent it rests
        if base == "forearm":  # the elbow bends in the plane it is bent in at rest, when it is (else: any way)
            bend = None if upper is None else _unit(d - upper * float(d @ upper))
            if upper is None or bend is None or float(d @ upper) > math.cos(math.radians(5)):
                toward = None
            else:
                toward, neutral = bend, upper
        cone = _cone(W[index[node]][:3, :3], j, rng, share, side, neutral, d, toward, right)
        if cone is not None:
            out[j.name] = cone
    return out


def _ball(joint: Joint) -> bool:
    """Three rotation DOFs about distinct coordinate axes in an Euler order (BVH, glTF and TOML ball joints)."""
    rot = [d for d in joint.dofs if d.kind == "revolute"]
    return joint.order is not None and len(rot) == 3 and "".join(d.axis_letter or "?" for d in rot) == joint.order


def _tip(figure: Figure, node: str, bones: HumanoidMap, P: Array, index: dict[str, int], front: Array
         ) -> Array | None:
    """Where the bone of ``node`` points at rest: its canonical successor, else its children's mean, else on from
    its parent (a hand, a head or a toe without a child)."""
    succ = {"hips": "spine", "clavicle": "upper_arm", "upper_arm": "forearm", "forearm": "hand", "upper_leg":
            "lower_leg", "lower_leg": "foot", "foot": "toe"}
    bone = bones.bone_of(node)
    if bone is not None:
        base, side = (bone[:-2], bone[-2:]) if bone.endswith(("_l", "_r")) else (bone, "")
        nxt = bones.get(succ[base] + side) if base in succ else None
        if nxt is not None:
            return P[index[nxt]]
    kids = [a.child.name for a in figure.node(node).arcs()]
    if bone is not None and bone.startswith("chest") and bones.get("neck") is not None:
        return P[index[bones.bones["neck"]]]
    if kids and not (bone or "").startswith(("hand", "head")):
        return np.mean([P[index[k]] for k in kids], axis=0)
    parent = figure.parent_of(node)
    if parent is None:
        return None
    return P[index[node]] + (P[index[node]] - P[index[parent]])


def _cone(W: Array, joint: Joint, rng: BoneRange, share: int, side: str | None, neutral: Array,
          rest_dir: Array, toward: Array | None, right: Array) -> Cone | None:
    """The range as a Cone in the joint's frame J = W_node · A_rest⁻¹ (W: the node's world 3×3 at rest), measured
    from A_ref = Q A_rest with Q the shortest turn from the rest direction to the neutral one (both in the joint's
    frame)."""
    from animkit.model.transforms import matrix_from_euler_intrinsic

    rot = [d for d in joint.dofs if d.kind == "revolute"]
    assert joint.order is not None
    A_rest = matrix_from_euler_intrinsic(np.array([d.rest for d in rot]), joint.order)
    J = W @ np.linalg.inv(A_rest)  # the joint's frame before its turn, in the world (scale included)
    Jinv = np.linalg.inv(J)

    def local(v: Array) -> Array | None:
        return _unit(Jinv @ v)

    t, d = local(neutral), local(rest_dir)
    if t is None or d is None:
        return None
    ref = _turn(d, t) @ A_rest
    k = 1.0 / share
    twist = math.radians(rng.twist * k)
    if toward is None:  # any direction alike: the largest of the four
        return Cone(math.radians(max(rng.flexion, rng.extension, rng.outward, rng.inward) * k), (-twist, twist),
                    tuple(t), reference=tuple(map(tuple, ref)))
    f = local(toward - neutral * float(toward @ neutral))
    if f is None:
        return None
    side_dir = np.cross(t, f)  # t × f in the joint's frame; outward in the world is ±right by the side
    out_world = right if side == "r" else -right if side == "l" else right
    outward_is_side = float((J @ side_dir) @ out_world) >= 0.0
    rs, rn = (rng.outward, rng.inward) if outward_is_side else (rng.inward, rng.outward)
    reach = tuple(math.radians(x * k) for x in (rng.flexion, rng.extension, rs, rn))
    return Cone(max(reach), (-twist, twist), tuple(t), front=tuple(f), reach=reach,  # type: ignore[arg-type]
                reference=tuple(map(tuple, ref)))
