"""Quadruped bones: four legs, spine, neck, head and tail found from a skeleton's structure and common names.

In the spirit of :mod:`animkit.model.humanoid` (names and parents, nothing else; rest positions where names say
nothing):

1. **limbs.** A limb is a run of sided nodes (``Left…``, ``…_R``, ``.L`` …: :func:`animkit.model.humanoid.side_of`)
   hanging from an unsided parent, followed down its single-child path (upper, lower, foot, toe).
2. **front and hind.** Each side has two limbs. The hind pair hangs from the hips and the front pair from the
   chest: the pair whose attachment is an ancestor of the other's is the hind one; where both hang from the same
   node, names decide (``arm``/``hand``/``fore``/``front`` is front; ``leg``/``thigh``/``hind``/``back`` hind),
   else the rest positions (the front pair is the one further along the spine from the hips).
3. **the trunk.** The spine is the path from the hips to the chest; the neck the chest's unsided child that is not a
   limb (the one whose subtree is deepest), the head the node named ``head`` below it, else the end of its path;
   the tail the hips' unsided child away from the chest (a name with ``tail`` first).

Legs are named ``fl``, ``fr``, ``hl``, ``hr`` (front/hind, left/right); each leg's bones ``upper``, ``lower``,
``foot`` and ``toe`` (the toe where the limb has a fourth node).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from animkit.model.humanoid import side_of

if TYPE_CHECKING:
    from animkit.model.figure import Figure

__all__ = ["LEGS", "LEG_BONES", "QUADRUPED_BONES", "QuadrupedMap", "match_quadruped", "match_quadruped_figure",
           "quadruped_node_map"]

LEGS: tuple[str, ...] = ("fl", "fr", "hl", "hr")
LEG_BONES: tuple[str, ...] = ("upper", "lower", "foot", "toe")
#: Every canonical quadruped bone: the trunk, then each leg's bones (``upper_fl`` …), then the tail's first bone.
QUADRUPED_BONES: tuple[str, ...] = ("hips", "spine", "chest", "neck", "head") + tuple(
    f"{b}_{leg}" for leg in LEGS for b in LEG_BONES) + ("tail",)
_FRONT_WORDS = ("arm", "hand", "fore", "front", "wrist", "elbow", "shoulder", "clav")
_HIND_WORDS = ("leg", "thigh", "hind", "back", "knee", "foot", "hip", "ankle")


@dataclass(frozen=True)
class QuadrupedMap:
    """Canonical quadruped bone → node name, the tail's and spine's nodes in order, and what did not match."""

    bones: Mapping[str, str]
    tail: tuple[str, ...]
    spine: tuple[str, ...]
    missing: tuple[str, ...]

    def __reduce__(self) -> tuple[Any, ...]:
        return (QuadrupedMap, (dict(self.bones), self.tail, self.spine, self.missing))

    @property
    def is_quadruped(self) -> bool:
        """Whether the hips, the chest and four legs of at least upper, lower and foot bones matched."""
        return all(b in self.bones for b in ("hips", "chest")) and all(
            f"{b}_{leg}" in self.bones for leg in LEGS for b in ("upper", "lower", "foot"))

    def leg(self, leg: str) -> tuple[str, ...]:
        """The nodes of one leg (``fl``, ``fr``, ``hl``, ``hr``), upper first."""
        return tuple(self.bones[f"{b}_{leg}"] for b in LEG_BONES if f"{b}_{leg}" in self.bones)


def match_quadruped(names: Sequence[str], parents: Sequence[int], *,
                    positions: Sequence[Sequence[float]] | None = None) -> QuadrupedMap:
    """Match a skeleton (names, parent indices, optional rest positions) to the canonical quadruped bones."""
    n = len(names)
    parent = [int(p) for p in parents]
    kids: dict[int, list[int]] = {}
    for i, p in enumerate(parent):
        kids.setdefault(p, []).append(i)
    sides = [_side(nm) for nm in names]
    # 1. limbs: a sided node under an unsided parent, down its single-child path
    limbs: list[list[int]] = []
    for i in range(n):
        if sides[i] is not None and (parent[i] < 0 or sides[parent[i]] is None):
            run = [i]
            while len(kids.get(run[-1], [])) == 1:
                run.append(kids[run[-1]][0])
            if len(run) >= 3:
                limbs.append(run)
    by_side = {s: [limb for limb in limbs if sides[limb[0]] == s] for s in ("l", "r")}
    if len(by_side["l"]) != 2 or len(by_side["r"]) != 2:
        return _empty()
    # 2. front and hind, per side
    pairs = {s: _front_and_hind(by_side[s], parent, names) for s in ("l", "r")}
    left, right = pairs["l"], pairs["r"]
    if left is None or right is None:
        return _empty()
    found: dict[str, str] = {}
    for s, (front, hind) in (("l", left), ("r", right)):
        for leg, limb in ((f"f{s}", front), (f"h{s}", hind)):
            for bone, i in zip(LEG_BONES, limb, strict=False):
                found[f"{bone}_{leg}"] = names[i]
    hips_i, chest_i = parent[left[1][0]], parent[left[0][0]]
    if parent[right[1][0]] != hips_i or parent[right[0][0]] != chest_i:
        return _empty()
    found["hips"], found["chest"] = names[hips_i], names[chest_i]
    spine_path = _ancestors(parent, chest_i)
    spine: tuple[str, ...] = ()
    if hips_i in spine_path:
        between = spine_path[:spine_path.index(hips_i)][::-1]  # hips' child … chest
        spine = tuple(names[i] for i in between)
        if len(between) > 1:
            found["spine"] = names[between[0]]
    limb_tops = {limb[0] for limb in limbs}
    # 3. neck and head: the chest's other child with the deepest subtree
    others = [k for k in kids.get(chest_i, []) if k not in limb_tops and sides[k] is None]
    if others:
        found.update(_neck_and_head(others, kids, sides, names))
    # the tail: the hips' unsided child away from the chest, a name with "tail" first
    toward_chest = spine_path[spine_path.index(hips_i) - 1] if hips_i in spine_path and chest_i != hips_i else None
    rest = [k for k in kids.get(hips_i, []) if k not in limb_tops and k != toward_chest and sides[k] is None]
    tail: tuple[str, ...] = ()
    if rest:
        t0 = sorted(rest, key=lambda k: ("tail" not in names[k].lower(), -_depth_below(kids, k)))[0]
        run = [t0]
        while len(kids.get(run[-1], [])) == 1:
            run.append(kids[run[-1]][0])
        tail = tuple(names[i] for i in run)
        found["tail"] = names[t0]
    bones = {b: found[b] for b in QUADRUPED_BONES if b in found}
    return QuadrupedMap(MappingProxyType(bones), tail, spine, tuple(b for b in QUADRUPED_BONES if b not in found))


def _ancestors(parent: list[int], i: int) -> list[int]:
    """``i`` and its ancestors up to the root, nearest first (at most as many as there are nodes)."""
    out = [i]
    while parent[out[-1]] >= 0 and len(out) <= len(parent):
        out.append(parent[out[-1]])
    return out


def _depth_below(kids: dict[int, list[int]], i: int) -> int:
    """The levels of ``i``'s subtree (1 for a leaf)."""
    return 1 + max((_depth_below(kids, k) for k in kids.get(i, [])), default=0)


def _front_and_hind(limbs: list[list[int]], parent: list[int], names: Sequence[str]) -> list[list[int]] | None:
    """One side's two limbs as [front, hind]: the one attached higher up the spine is the front, else the one whose
    names say arm/fore/front more than leg/hind/back; None when neither tells."""
    la, lb = limbs
    a, b = parent[la[0]], parent[lb[0]]
    if a != b:
        if a in _ancestors(parent, b):
            return [lb, la]  # front, hind
        if b in _ancestors(parent, a):
            return [la, lb]
        return None

    def score(limb: list[int]) -> int:
        text = " ".join(re.sub(r"[^a-z]", " ", names[i].lower()) for i in limb)
        return sum(w in text for w in _FRONT_WORDS) - sum(w in text for w in _HIND_WORDS)

    if score(la) != score(lb):
        return [la, lb] if score(la) > score(lb) else [lb, la]
    return None


def _neck_and_head(others: list[int], kids: dict[int, list[int]], sides: list[str | None], names: Sequence[str]
                   ) -> dict[str, str]:
    """The neck (the chest's unsided child with the deepest subtree, of ``others``) and the head (the first node
    named head down its deepest unsided path, else that path's end)."""
    found: dict[str, str] = {}
    neck = max(others, key=lambda k: _depth_below(kids, k))
    found["neck"] = names[neck]
    below = [neck]
    while len(kids.get(below[-1], [])) >= 1:
        nxt = [k for k in kids[below[-1]] if sides[k] is None]
        if not nxt:
            break
        below.append(max(nxt, key=lambda k: _depth_below(kids, k)))
    heads = [i for i in below if "head" in names[i].lower()]
    head = heads[0] if heads else below[-1]
    if head != neck:
        found["head"] = names[head]
    return found


_SIDE_WORD = re.compile(r"(?:^|[^A-Za-z])(Left|Right|left|right|LEFT|RIGHT)(?![a-z])")


def _side(name: str) -> str | None:
    """"l", "r" or None: :func:`animkit.model.humanoid.side_of`, or a ``Left``/``Right`` word after a prefix
    (``b_LeftLeg01``, the Khronos Fox's)."""
    s = side_of(name)
    if s is not None:
        return s
    m = _SIDE_WORD.search(name)
    return None if m is None else "l" if m.group(1).lower() == "left" else "r"


def _empty() -> QuadrupedMap:
    return QuadrupedMap(MappingProxyType({}), (), (), QUADRUPED_BONES)


def match_quadruped_figure(figure: Figure) -> QuadrupedMap:
    """:func:`match_quadruped` on a figure's nodes."""
    names = figure.node_names
    index = {nm: i for i, nm in enumerate(names)}
    parents = [-1 if (p := figure.parent_of(nm)) is None else index[p] for nm in names]
    return _match_names(tuple(names), tuple(parents))


@functools.lru_cache(maxsize=256)  # names and parents decide: matched once per skeleton (QuadrupedMap is immutable)
def _match_names(names: tuple[str, ...], parents: tuple[int, ...]) -> QuadrupedMap:
    return match_quadruped(names, parents)


def quadruped_node_map(source: QuadrupedMap, target: QuadrupedMap) -> dict[str, str]:
    """Target node → source node for every canonical bone both skeletons have, and their spines' and tails' nodes
    paired from the hips out (a retargeting map, :func:`animkit.motion.retarget.bone_map`'s ``user``)."""
    out = {t: source.bones[b] for b, t in target.bones.items() if b in source.bones}
    for ts, ss in ((target.spine, source.spine), (target.tail, source.tail)):
        for t, s in zip(ts, ss, strict=False):
            out.setdefault(t, s)
    return out
