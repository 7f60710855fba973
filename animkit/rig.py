"""A figure's rig: named chains (sets of joints) and named effectors (nodes), held by the figure.

Loaders fill it: a TOML scene's ``[chains]`` / ``[effectors]``, :func:`leaf_rig` for robots (one chain from the
base to each leaf, duplicates merged), :func:`humanoid_rig` for BVH and glTF characters (chains and effectors
found from joint names by :mod:`animkit.humanoid`). Every call that takes a figure resolves names through it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .errors import SceneError, unknown_name
from .humanoid import HumanoidMap, match_figure

if TYPE_CHECKING:
    from .graph import Arc, Figure

__all__ = ["Rig", "humanoid_rig", "leaf_rig", "rig_from_humanoid"]


@dataclass(frozen=True)
class Rig:
    """Chains: chain name → joint (or DOF) names, root first. Effectors: effector name → node name."""

    chains: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    effectors: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        chains: dict[str, tuple[str, ...]] = {}
        for name, joints in dict(self.chains).items():
            if not isinstance(name, str) or not name:
                raise SceneError(f"chain names must be non-empty strings, got {name!r}")
            if isinstance(joints, str) or not all(isinstance(j, str) for j in joints):
                raise SceneError(f"chain {name!r}: expected a list of joint names, got {joints!r}")
            chains[name] = tuple(joints)
            if not chains[name]:
                raise SceneError(f"chain {name!r} is empty: expected at least one joint name")
        effectors: dict[str, str] = {}
        for name, node in dict(self.effectors).items():
            if not isinstance(name, str) or not name or not isinstance(node, str):
                raise SceneError(f"an effector maps a name to a node name, got {name!r} -> {node!r}")
            effectors[name] = node
        object.__setattr__(self, "chains", MappingProxyType(chains))
        object.__setattr__(self, "effectors", MappingProxyType(effectors))

    def __reduce__(self) -> tuple[Any, ...]:  # mapping proxies do not pickle; the dicts they wrap do
        return (Rig, (dict(self.chains), dict(self.effectors)))

    def chain(self, name: str) -> tuple[str, ...]:
        """The joint names of chain ``name``; SceneError listing the chain names (close matches first)."""
        try:
            return self.chains[name]
        except KeyError:
            if not self.chains:
                raise SceneError(f"unknown chain {name!r}: this figure has no named chains (its rig is empty); "
                                 f"give joint names instead") from None
            raise SceneError(unknown_name("chain", name, self.chains)) from None

    def merged(self, other: Rig) -> Rig:
        """This rig with ``other``'s chains and effectors added (``other`` wins where names repeat)."""
        return Rig({**self.chains, **other.chains}, {**self.effectors, **other.effectors})

    def check(self, figure: Figure) -> Rig:
        """``self`` if every name resolves on ``figure``: chain members are joints or DOFs, effectors nodes."""
        joints, dofs, nodes = set(figure.joint_names), set(figure.dof_names), set(figure.node_names)
        for name, members in self.chains.items():
            for j in members:
                if j not in joints and j not in dofs:
                    raise SceneError(f"chain {name!r}: {unknown_name('joint', j, figure.joint_names)}")
        for name, node in self.effectors.items():
            if node not in nodes:
                raise SceneError(f"effector {name!r}: {unknown_name('node', node, figure.node_names)}")
            if name in nodes and name != node:
                raise SceneError(f"effector {name!r} -> {node!r}: {name!r} is another node of the figure; "
                                 f"an effector may not shadow a node name")
        return self


def _joints_on_path(figure: Figure, top: str, bottom: str) -> list[str]:
    """Joint names (with DOFs) of the arcs from node ``top`` (its own arc included) down to node ``bottom``."""
    path: list[Arc] = figure.path_to(bottom)
    names = [a.child.name for a in path]
    return [a.joint.name for a in path[names.index(top):] if a.joint.dof_count]


def rig_from_humanoid(figure: Figure, bones: HumanoidMap) -> Rig:
    """Chains and effectors of a humanoid from its matched bones (whatever of them matched).

    arm_s: upper arm → hand; leg_s: upper leg → foot; torso: spine → chest and both arms; hips-up: everything
    above the hips on the way to the hands and the head (clavicles and neck included); neck: neck → head.
    Effectors hand_s, foot_s and head are those bones' nodes. Joints without DOFs are left out.
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
    effectors = {name: b[bone] for name, bone in (("hand_l", "hand_l"), ("hand_r", "hand_r"), ("foot_l", "foot_l"),
                                                  ("foot_r", "foot_r"), ("head", "head")) if bone in b}
    nodes = set(figure.node_names)
    effectors = {k: v for k, v in effectors.items() if k == v or k not in nodes}  # never shadow a node name
    return Rig(chains, effectors)


def humanoid_rig(figure: Figure) -> Rig:
    """The rig of a humanoid figure, its bones found by :func:`animkit.humanoid.match_figure`; empty if none match."""
    return rig_from_humanoid(figure, match_figure(figure))


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

