"""Humanoid bone names: one canonical name per bone, and a matcher from a skeleton's node names to them.

A skeleton (names and parent indices, nothing else) is matched in two passes:

1. **limbs by name.** Each name loses its namespace (``mixamorig:``), its side (``Left``, ``R``, ``_l``,
   ``.R`` …) and its separators, and the rest is looked up in a table of the common conventions: CMU/cgspeed
   BVH in its MotionBuilder form (``LeftShoulder`` is the clavicle, ``LeftArm`` the upper arm) and its 3ds Max
   form (``LeftCollar`` the clavicle, ``LeftShoulder`` the upper arm, ``LeftWrist`` the hand), Mixamo, this
   project's scenes (``shoulder_r``, ``elbow_r``, ``wrist_r``, ``hip_r``, ``knee_r``, ``ankle_r``) and generic
   numbered limbs such as the glTF sample characters' ``leg_joint_L_1`` … ``leg_joint_L_5`` (a side's ``arm``
   or ``leg`` bones in depth order: upper, lower, hand/foot, toe).
2. **the trunk by structure.** The chest is where the two arms meet (their lowest common ancestor), the hips
   where the legs and the chest meet (a node named ``hips``/``pelvis`` on that path wins), the spine is the
   hips' child towards the chest, the neck the chest's child that is not an arm, the head the node named
   ``head`` below it, else the end of the neck's single path.

Sides come from names; where a limb's name carries no side, the side of the body it lies on at rest decides
(``positions`` and the figure's facing, optional). The result is a frozen :class:`HumanoidMap`: canonical bone →
node name, what did not match, and a short report.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from animkit.errors import SceneError, unknown_name

if TYPE_CHECKING:
    from animkit.model.figure import Figure

__all__ = ["BONES", "LIMB_BONES", "HumanoidMap", "match_humanoid", "match_figure", "node_map", "side_of"]

Side = Literal["l", "r"]

TRUNK_BONES: tuple[str, ...] = ("hips", "spine", "chest", "neck", "head")
_ARM = ("clavicle", "upper_arm", "forearm", "hand")
_LEG = ("upper_leg", "lower_leg", "foot", "toe")
LIMB_BONES: tuple[str, ...] = _ARM + _LEG
#: Every canonical bone, trunk first, then each side's arm and leg.
BONES: tuple[str, ...] = TRUNK_BONES + tuple(f"{b}_{s}" for s in ("l", "r") for b in LIMB_BONES)
#: What every humanoid must have for :attr:`HumanoidMap.is_humanoid` (clavicles and toes are optional).
ESSENTIAL: tuple[str, ...] = ("hips", "chest", "head") + tuple(
    f"{b}_{s}" for s in ("l", "r") for b in ("upper_arm", "forearm", "hand", "upper_leg", "lower_leg", "foot"))

# name (namespace, side and separators removed, lower case) -> limb bone. "shoulder" is decided per skeleton.
_LIMB_WORDS: dict[str, str] = {
    "collar": "clavicle", "clavicle": "clavicle", "clav": "clavicle",
    "arm": "upper_arm", "upperarm": "upper_arm", "uparm": "upper_arm", "humerus": "upper_arm",
    "forearm": "forearm", "lowerarm": "forearm", "loarm": "forearm", "elbow": "forearm",
    "hand": "hand", "wrist": "hand",
    "upleg": "upper_leg", "upperleg": "upper_leg", "thigh": "upper_leg", "hip": "upper_leg", "femur": "upper_leg",
    "leg": "lower_leg", "lowerleg": "lower_leg", "loleg": "lower_leg", "knee": "lower_leg", "shin": "lower_leg",
    "calf": "lower_leg",
    "foot": "foot", "ankle": "foot",
    "toe": "toe", "toes": "toe", "toebase": "toe", "ball": "toe",
}
_HIPS_WORDS = {"hips", "pelvis"}
_LIMB_PREFIX = ("hand", "fing", "thumb", "hip", "foot", "toe", "arm", "leg", "collar", "clav", "shoulder",
                "elbow", "wrist", "knee", "ankle", "upleg", "uparm", "forearm", "index", "middle", "ring",
                "pinky")


@dataclass(frozen=True)
class HumanoidMap:
    """Canonical bone → node name for one skeleton, and what did not match.

    ``bones`` follows :data:`BONES` order and holds only what was found; ``missing`` the canonical bones not
    found; ``unused`` the skeleton's nodes no bone maps to (fingers, twist bones, end sites, extra spine joints).
    """

    bones: Mapping[str, str]
    missing: tuple[str, ...]
    unused: tuple[str, ...]

    def __reduce__(self) -> tuple[Any, ...]:  # mapping proxies do not pickle; the dict they wrap does
        return (HumanoidMap, (dict(self.bones), self.missing, self.unused))

    def node(self, bone: str) -> str:
        """The node of canonical ``bone``; SceneError listing the bones found when it is not there."""
        try:
            return self.bones[bone]
        except KeyError:
            if bone in BONES:
                raise SceneError(f"this skeleton has no {bone!r} (no node matched it); found: "
                                 f"{', '.join(self.bones) or 'nothing'}") from None
            raise SceneError(unknown_name("humanoid bone", bone, BONES)) from None

    def get(self, bone: str) -> str | None:
        """The node of ``bone``, or None where it did not match."""
        return self.bones.get(bone)

    def bone_of(self, node: str) -> str | None:
        """The canonical bone that ``node`` is, or None."""
        for bone, n in self.bones.items():
            if n == node:
                return bone
        return None

    @property
    def is_humanoid(self) -> bool:
        """Whether the trunk, both arms (upper arm, forearm, hand) and both legs (upper, lower, foot) matched."""
        return all(b in self.bones for b in ESSENTIAL)

    def report(self) -> str:
        """A few lines: the bones found, those missing, and how many nodes are left over."""
        lines = [f"humanoid: {'yes' if self.is_humanoid else 'no'} ({len(self.bones)} of {len(BONES)} bones)"]
        lines += [f"  {b:<12} {n}" for b, n in self.bones.items()]
        if self.missing:
            lines.append(f"  missing: {', '.join(self.missing)}")
        if self.unused:
            lines.append(f"  unused nodes ({len(self.unused)}): {', '.join(self.unused)}")
        return "\n".join(lines)


def node_map(source: HumanoidMap, target: HumanoidMap) -> dict[str, str]:
    """Source node → target node for every canonical bone both skeletons have (a retargeting bone map)."""
    return {n: target.bones[b] for b, n in source.bones.items() if b in target.bones}


# --- names -------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8192)  # a pure function of the name, asked again for every match of a skeleton
def _split_side(name: str) -> tuple[Side | None, str]:
    """(side, the rest of the name without side, namespace and separators, lower case)."""
    base = re.split(r"[:|]", name)[-1]
    side: Side | None = None
    m = re.match(r"(?i)^(left|right)(.*)$", base)
    if m:
        side, base = ("l" if m.group(1).lower() == "left" else "r"), m.group(2)
    else:
        m = re.match(r"^([LR])(?=[A-Z_.\-])(.*)$", base) or re.match(
            r"^([lr])(?=(?:" + "|".join(_LIMB_PREFIX) + "))(.*)$", base)
        if m:
            side, base = ("l" if m.group(1).lower() == "l" else "r"), m.group(2)
    tokens = [t for t in re.split(r"[_.\-\s]+", base) if t]
    if len(tokens) > 1 and re.fullmatch(r"0\d\d", tokens[-1]):  # Blender's duplicate suffix, '.001'
        tokens.pop()
    if side is None:
        for i, t in enumerate(tokens):
            if t.lower() in ("l", "left", "r", "right"):
                side = "l" if t.lower() in ("l", "left") else "r"
                del tokens[i]
                break
    return side, "".join(tokens).lower()


def side_of(name: str) -> Side | None:
    """"l", "r" or None: the side a bone's name says (``LeftArm``, ``arm_l``, ``LHipJoint``)."""
    return _split_side(name)[0]


def _group(key: str) -> str | None:
    """``arm``/``leg`` for generic numbered limb names (``skeletonarmjoint2``, ``legjoint5``), else None."""
    word = re.sub(r"\d+", "", key)
    for g in ("arm", "leg"):
        if word != g and (word.startswith(g) or g + "joint" in word or word.endswith(g)):
            return g
    return None


# --- matching ----------------------------------------------------------------------------------------------


# complexity: a matcher: one rule per naming convention and fallback, read top to bottom
def match_humanoid(names: Sequence[str], parents: Sequence[int], *,
                   positions: Sequence[Sequence[float]] | None = None,
                   right: Sequence[float] | None = None) -> HumanoidMap:
    """Match a skeleton to the canonical humanoid bones.

    ``names[i]`` is node i's name and ``parents[i]`` its parent's index (−1 for a root). ``positions`` (rest
    world positions, one per node) and ``right`` (the figure's rightward direction at rest) let the side of an
    unsided limb come from the side of the body it lies on: s = sign((p − p_hips)·right).
    """
    n = len(names)
    if len(parents) != n:
        raise SceneError(f"match_humanoid: {n} names but {len(parents)} parents")
    parent = [int(p) for p in parents]
    depth = _depths(names, parent)
    sides: list[Side | None] = []
    keys: list[str] = []
    for nm in names:
        s, k = _split_side(nm)
        sides.append(s)
        keys.append(k)
    limbs: dict[str, int] = {}
    for side in ("l", "r"):
        idx = [i for i in range(n) if sides[i] == side]
        if positions is not None and right is not None:
            idx += _unsided_by_position(n, sides, keys, positions, right, side)
        limbs.update(_limbs_of_side(side, idx, keys, depth, parent))
    found = _trunk(limbs, keys, depth, parent)
    found.update(limbs)
    bones = {b: names[found[b]] for b in BONES if b in found}
    used = set(found.values())
    return HumanoidMap(bones=MappingProxyType(bones), missing=tuple(b for b in BONES if b not in found),
                       unused=tuple(names[i] for i in range(n) if i not in used))


def _depths(names: Sequence[str], parent: list[int]) -> list[int]:
    """Each node's depth (0 at a root); parents may come in any order: walk up to a node of known depth (linear in
    all). SceneError naming a node whose parents form a cycle."""
    n = len(names)
    depth = [-1] * n
    for i in range(n):
        walk: list[int] = []
        j = i
        while j >= 0 and depth[j] < 0:
            walk.append(j)
            if len(walk) > n:
                raise SceneError(f"match_humanoid: the parents of {names[i]!r} form a cycle")
            j = parent[j]
        d = depth[j] if j >= 0 else -1
        for m in reversed(walk):
            d += 1
            depth[m] = d
    return depth


def _ancestors(parent: list[int], i: int) -> list[int]:
    """``i`` and its ancestors up to the root, nearest first."""
    out = [i]
    while parent[out[-1]] >= 0:
        out.append(parent[out[-1]])
    return out


def _limbs_of_side(side: str, idx: list[int], keys: list[str], depth: list[int], parent: list[int]
                   ) -> dict[str, int]:
    """``bone_side`` → node for one side's arm and leg, from the nodes ``idx`` on that side: by limb words, else
    generic numbered limbs in depth order; a bone not below its predecessor along the limb is dropped."""
    by_bone: dict[str, list[int]] = {}
    has_clavicle = any(_LIMB_WORDS.get(keys[i]) == "clavicle" for i in idx)
    has_upper_arm = any(_LIMB_WORDS.get(keys[i]) == "upper_arm" for i in idx)
    groups: dict[str, list[int]] = {"arm": [], "leg": []}
    for i in idx:
        k = keys[i]
        if k == "shoulder":  # MotionBuilder/Mixamo: the clavicle; 3ds Max and ours: the upper arm
            bone = "upper_arm" if has_clavicle or not has_upper_arm else "clavicle"
        elif k in _LIMB_WORDS:
            bone = _LIMB_WORDS[k]
        else:
            g = _group(k)
            if g is not None:
                groups[g].append(i)
            continue
        by_bone.setdefault(bone, []).append(i)
    # "wrist" beats "hand" (3ds Max: LeftWrist is the hand's joint, lhand a stub below it)
    if "hand" in by_bone and len(by_bone["hand"]) > 1:
        wrists = [i for i in by_bone["hand"] if keys[i] == "wrist"]
        by_bone["hand"] = wrists or by_bone["hand"]
    for g, members in groups.items():  # generic numbered limbs: depth order along the limb
        members.sort(key=lambda i: depth[i])
        slots = (_ARM if len(members) >= 4 else _ARM[1:]) if g == "arm" else _LEG
        for i, bone in zip(members, slots, strict=False):
            by_bone.setdefault(bone, []).append(i)
    limbs = {f"{bone}_{side}": min(cands, key=lambda i: (depth[i], i)) for bone, cands in by_bone.items()}
    # the limb must run down the tree: drop a bone that is not below its predecessor
    for chain in (_ARM, _LEG):
        prev: int | None = None
        for bone in chain:
            at = limbs.get(f"{bone}_{side}")
            if at is None:
                continue
            if prev is not None and prev not in _ancestors(parent, at):
                del limbs[f"{bone}_{side}"]
                continue
            prev = at
    return limbs


def _lca(parent: list[int], items: list[int]) -> int | None:
    """The lowest common ancestor of ``items`` (None for none, or no common one)."""
    if not items:
        return None
    common = _ancestors(parent, items[0])
    for i in items[1:]:
        a = set(_ancestors(parent, i))
        common = [c for c in common if c in a]
    return common[0] if common else None


def _trunk(limbs: dict[str, int], keys: list[str], depth: list[int], parent: list[int]) -> dict[str, int]:
    """The trunk by structure: chest where the arms meet, hips where the legs (and chest) meet (a node named like
    hips above it preferred), the spine just below the chest, then the neck and head."""
    found: dict[str, int] = {}
    arm_roots = [next(limbs[f"{b}_{s}"] for b in _ARM if f"{b}_{s}" in limbs)
                 for s in ("l", "r") if any(f"{b}_{s}" in limbs for b in _ARM)]
    leg_roots = [next(limbs[f"{b}_{s}"] for b in _LEG if f"{b}_{s}" in limbs)
                 for s in ("l", "r") if any(f"{b}_{s}" in limbs for b in _LEG)]
    limb_nodes = set(limbs.values())
    chest = _lca(parent, arm_roots) if len(arm_roots) == 2 else None
    if chest is not None and chest not in limb_nodes:
        found["chest"] = chest
    hips = _lca(parent, leg_roots + ([chest] if chest is not None else [])) if len(leg_roots) == 2 else None
    if hips is not None:
        named = [i for i in _ancestors(parent, chest if chest is not None else hips) if keys[i] in _HIPS_WORDS]
        hips = named[0] if named else hips
        if hips not in limb_nodes:
            found["hips"] = hips
    if "hips" in found and "chest" in found and found["hips"] != found["chest"]:
        path = _ancestors(parent, found["chest"])
        found["spine"] = path[path.index(found["hips"]) - 1]
    if "chest" in found:
        found.update(_neck_and_head(found["chest"], arm_roots, keys, depth, parent))
    return found


def _neck_and_head(c: int, arm_roots: list[int], keys: list[str], depth: list[int], parent: list[int]
                   ) -> dict[str, int]:
    """Below the chest ``c``: the neck (towards a node named head, else the one child that is no arm's) and the
    head (that node, else the end of the neck's single-child run)."""
    n = len(parent)
    found: dict[str, int] = {}
    arm_tops = set()
    for r in arm_roots:
        path = _ancestors(parent, r)
        arm_tops.add(path[path.index(c) - 1])
    others = [i for i in range(n) if parent[i] == c and i not in arm_tops]
    heads = [i for i in range(n) if keys[i] == "head" and c in _ancestors(parent, i) and i != c]
    if heads:
        h = min(heads, key=lambda i: depth[i])
        path = _ancestors(parent, h)
        found["neck"] = path[path.index(c) - 1]
        if found["neck"] != h:
            found["head"] = h
    elif len(others) == 1:
        found["neck"] = others[0]
        j = others[0]
        while True:
            kids = [i for i in range(n) if parent[i] == j]
            if len(kids) != 1:
                break
            j = kids[0]
        if j != others[0]:
            found["head"] = j
    return found


def _unsided_by_position(n: int, sides: list[Side | None], keys: list[str], positions: Sequence[Sequence[float]],
                         right: Sequence[float], side: Side) -> list[int]:
    """Nodes whose name names a limb bone but no side, on ``side`` of the body by s = (p − p̄)·right."""
    xs = [sum(float(a) * float(b) for a, b in zip(positions[i], right, strict=True)) for i in range(n)]
    mid = sum(xs) / max(n, 1)
    out = []
    for i in range(n):
        if sides[i] is None and (keys[i] in _LIMB_WORDS or keys[i] == "shoulder" or _group(keys[i])):
            s: Side = "r" if xs[i] > mid else "l"
            if s == side:
                out.append(i)
    return out


def match_figure(figure: Figure, *, right: Sequence[float] | None = None) -> HumanoidMap:
    """:func:`match_humanoid` on a figure's nodes (its rest positions decide unsided limbs when ``right`` is given)."""
    names = figure.node_names
    index = {nm: i for i, nm in enumerate(names)}
    parents = [-1 if (p := figure.parent_of(nm)) is None else index[p] for nm in names]
    if right is None:  # names and parents decide: matched once per skeleton (HumanoidMap is immutable)
        return _match_names(tuple(names), tuple(parents))
    positions = figure.world_positions(figure.rest_pose()[None])[0].tolist()
    return match_humanoid(names, parents, positions=positions, right=right)


@functools.lru_cache(maxsize=256)
def _match_names(names: tuple[str, ...], parents: tuple[int, ...]) -> HumanoidMap:
    return match_humanoid(names, parents)
