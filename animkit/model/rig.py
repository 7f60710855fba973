"""Rigs found from a figure's structure and names (the :class:`~animkit.model.figure.Rig` value lives with the figure).

Loaders fill a figure's rig: a TOML scene's ``[chains]`` / ``[effectors]``, :func:`leaf_rig` for robots (one
chain from the base to each leaf, duplicates merged), :func:`humanoid_rig` for BVH and glTF characters (chains and
effectors found from joint names by :mod:`animkit.model.humanoid`). Every call that takes a figure resolves names
through it.
"""

from __future__ import annotations

from collections.abc import Sequence

from animkit.model.anatomy import humanoid_limits
from animkit.model.figure import Figure, Rig
from animkit.model.graph import Arc
from animkit.model.humanoid import HumanoidMap, match_figure
from animkit.model.quadruped import LEGS, QuadrupedMap, match_quadruped_figure

__all__ = ["Rig", "character_rig", "humanoid_rig", "leaf_rig", "quadruped_rig", "rig_from_humanoid",
           "rig_from_quadruped"]


def _joints_on_path(figure: Figure, top: str, bottom: str) -> list[str]:
    """Members of the arcs from node ``top`` (its own arc included) down to node ``bottom`` (joints with DOFs).

    A skeleton's chains turn joints and keep bone lengths (clips still play every DOF): a joint whose DOFs all
    rotate is named whole, one that also translates or scales (a glTF node whose file keys translation or scale,
    a BVH joint with position channels) by its revolute DOFs alone, and one that does not rotate is left out.
    """
    path: list[Arc] = figure.path_to(bottom)
    names = [a.child.name for a in path]
    out: list[str] = []
    for a in path[names.index(top):]:
        turns = [d.name for d in a.joint.dofs if d.kind == "revolute"]
        out += [a.joint.name] if turns and len(turns) == a.joint.dof_count else turns
    return out


def rig_from_humanoid(figure: Figure, bones: HumanoidMap) -> Rig:
    """Chains and effectors of a humanoid from its matched bones (whatever of them matched).

    arm_s: upper arm → hand; leg_s: upper leg → foot; torso: spine → chest and both arms; hips-up: everything
    above the hips on the way to the hands and the head (clavicles and neck included); neck: neck → head;
    whole-body: the hips' own translation (where the rig has it) and turn, and every joint from the hips to the
    head, both hands and both feet (:func:`_whole_body`; the built-in humanoid's whole-body set, whose natural
    reach plants the feet: :func:`animkit.ik.stance.stance_priors`).
    Effectors hand_s, foot_s and head are those bones' nodes. Joints without rotation DOFs are left out and
    joints that rotate and also translate or scale are named by their rotation DOFs only (bone lengths stay fixed).
    Limits: the human ranges of :func:`animkit.model.anatomy.humanoid_limits` on joints without limits of their own (IK
    keeps to them; clips play as they are).
    """
    b = bones.bones
    chains: dict[str, tuple[str, ...]] = {}

    def span(top: str, bottom: str) -> list[str]:
        return _joints_on_path(figure, b[top], b[bottom]) if top in b and bottom in b else []

    for s in ("l", "r"):
        if arm := span(f"upper_arm_{s}", f"hand_{s}"):
            chains[f"arm_{s}"] = tuple(arm)
    for s in ("l", "r"):
        if leg := span(f"upper_leg_{s}", f"foot_{s}"):
            chains[f"leg_{s}"] = tuple(leg)
    spine = span("spine", "chest")
    if spine:
        torso = spine + [j for s in ("l", "r") for j in chains.get(f"arm_{s}", ())]
        chains["torso"] = tuple(dict.fromkeys(torso))
        up = span("spine", "head") + span("spine", "hand_l") + span("spine", "hand_r")
        chains["hips-up"] = tuple(dict.fromkeys(up))
    if neck := span("neck", "head"):
        chains["neck"] = tuple(neck)
    if body := _whole_body(figure, bones):
        chains["whole-body"] = body
    effectors = {name: b[bone] for name, bone in (("hand_l", "hand_l"), ("hand_r", "hand_r"), ("foot_l", "foot_l"),
                                                  ("foot_r", "foot_r"), ("head", "head")) if bone in b}
    nodes = set(figure.node_names)
    effectors = {k: v for k, v in effectors.items() if k == v or k not in nodes}  # never shadow a node name
    return Rig(chains, effectors, humanoid_limits(figure, bones))


def _whole_body(figure: Figure, bones: HumanoidMap) -> tuple[str, ...]:
    """The whole body's movable set: the hips' translation and rotation DOFs (not their scale; the translation
    where the rig has it) and every joint from the hips to the head, both hands and both feet, as
    :func:`_joints_on_path` names them; empty unless the hips, spine, head, both hands and both feet matched."""
    b = bones.bones
    ends = ("head", "hand_l", "hand_r", "foot_l", "foot_r")
    if any(k not in b for k in ("hips", "spine", *ends)):
        return ()
    hips = figure.path_to(b["hips"])[-1].joint
    root = [d.name for d in hips.dofs if d.kind in ("prismatic", "revolute")]
    rest = [j for e in ends for j in _joints_on_path(figure, b["hips"], b[e])[len(_own(figure, b["hips"])):]]
    return tuple(dict.fromkeys(root + rest))


def _own(figure: Figure, node: str) -> list[str]:
    """How :func:`_joints_on_path` names ``node``'s own joint (nothing, the joint, or its rotation DOFs)."""
    return _joints_on_path(figure, node, node)


def humanoid_rig(figure: Figure) -> Rig:
    """The rig of a humanoid figure, its bones found by :func:`animkit.model.humanoid.match_figure`; empty if none
    match."""
    return rig_from_humanoid(figure, match_figure(figure))


def rig_from_quadruped(figure: Figure, bones: QuadrupedMap) -> Rig:
    """Chains and effectors of a quadruped from its matched bones.

    leg_fl, leg_fr, leg_hl, leg_hr: upper → foot; spine: the hips' child → chest; neck: neck → head; tail: its
    joints. Effectors foot_fl … foot_hr (each leg's last node: the toe where there is one, else the foot), head
    and tail (the tail's tip). Joints as in :func:`rig_from_humanoid` (rotation DOFs only).
    """
    b = bones.bones
    chains: dict[str, tuple[str, ...]] = {}
    effectors: dict[str, str] = {}
    for leg in LEGS:
        if f"upper_{leg}" in b and f"foot_{leg}" in b:
            if joints := _joints_on_path(figure, b[f"upper_{leg}"], b[f"foot_{leg}"]):
                chains[f"leg_{leg}"] = tuple(joints)
            effectors[f"foot_{leg}"] = b.get(f"toe_{leg}", b[f"foot_{leg}"])
    if bones.spine and "chest" in b:
        if joints := _joints_on_path(figure, bones.spine[0], b["chest"]):
            chains["spine"] = tuple(joints)
    if "neck" in b and "head" in b:
        if joints := _joints_on_path(figure, b["neck"], b["head"]):
            chains["neck"] = tuple(joints)
        effectors["head"] = b["head"]
    if bones.tail:
        if joints := _joints_on_path(figure, bones.tail[0], bones.tail[-1]):
            chains["tail"] = tuple(joints)
        effectors["tail"] = bones.tail[-1]
    nodes = set(figure.node_names)
    effectors = {k: v for k, v in effectors.items() if k == v or k not in nodes}  # never shadow a node name
    return Rig(chains, effectors)


def quadruped_rig(figure: Figure) -> Rig:
    """The rig of a quadruped, its bones found by :func:`animkit.model.quadruped.match_quadruped_figure`; empty if
    none."""
    bones = match_quadruped_figure(figure)
    return rig_from_quadruped(figure, bones) if bones.is_quadruped else Rig()


def character_rig(figure: Figure) -> Rig:
    """A loaded character's rig: a humanoid's (:func:`humanoid_rig`) when it is one, else a quadruped's
    (:func:`quadruped_rig`) when it is one, else what the humanoid matcher found (maybe nothing)."""
    h = match_figure(figure)
    if not h.is_humanoid:
        q = match_quadruped_figure(figure)
        if q.is_quadruped:
            return rig_from_quadruped(figure, q)
    return rig_from_humanoid(figure, h)


def leaf_rig(figure: Figure, *, leaves: Sequence[str] | None = None, trunk: str = "arm") -> Rig:
    """One chain from the root to each leaf node (its joints with DOFs); an effector at every leaf.

    ``leaves`` replaces the figure's leaf nodes (a URDF's leaf links, without the nodes that carry extra visuals).

    Chains with the same joints are merged: the one holding the figure's serial trunk (the joints before the
    first branch that moves) is named ``trunk``, the others ``to_<leaf>`` after their first leaf.
    """
    if leaves is None:
        leaves = [a.child.name for a in figure.arcs() if a.child.first_arc is None]
    seen: dict[tuple[str, ...], str] = {}
    for leaf in leaves:
        joints = tuple(a.joint.name for a in figure.path_to(leaf) if a.joint.dof_count)
        if joints and joints not in seen:
            seen[joints] = f"to_{leaf}"
    serial = _serial_trunk(figure)
    chains: dict[str, tuple[str, ...]] = {}
    for joints, name in seen.items():
        chains[trunk if joints == serial or len(seen) == 1 else name] = joints
    chains = dict(sorted(chains.items(), key=lambda kv: kv[0] != trunk))  # the trunk first
    return Rig(chains, {leaf: leaf for leaf in leaves})


def _serial_trunk(figure: Figure) -> tuple[str, ...]:
    """Joints with DOFs from the root down to the first node where more than one branch moves."""
    moves: dict[str, bool] = {}
    for arc in reversed(figure.arcs()):
        moves[arc.child.name] = bool(arc.joint.dof_count) or any(moves[c.child.name] for c in arc.child.arcs())
    out: list[str] = [figure.root_arc.joint.name] if figure.root_arc.joint.dof_count else []
    node = figure.root
    while True:
        live = [c for c in node.arcs() if moves[c.child.name]]
        if len(live) != 1:
            return tuple(out)
        if live[0].joint.dof_count:
            out.append(live[0].joint.name)
        node = live[0].child

