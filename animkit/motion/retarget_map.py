"""Which target bone follows which source bone: the bone map of a retarget (:func:`bone_map`: humanoid
names matched on both sides, equal names, a user's map; :func:`read_bone_map` reads one from a file), and the
retarget's error. Re-exported by :mod:`animkit.motion.retarget`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from animkit.errors import AnimkitError, ParseError, unknown_name
from animkit.model.figure import Figure
from animkit.model.humanoid import HumanoidMap, match_figure

if TYPE_CHECKING:
    pass

__all__ = ["RetargetError", "BoneMap", "bone_map", "read_bone_map"]

Array = NDArray[np.float64]


class RetargetError(AnimkitError):
    """A retarget that cannot be done: a bone that matters without a source, a joint kind it cannot drive."""


@dataclass(frozen=True)
class BoneMap:
    """Target node → source node, with what stayed unmapped on either side and how the map was made."""

    pairs: Mapping[str, str]
    unmapped_target: tuple[str, ...] = ()
    unmapped_source: tuple[str, ...] = ()
    scheme: str = "names"

    def report(self) -> str:
        """What mapped and what did not, one line each."""
        lines = [f"bone map ({self.scheme}): {len(self.pairs)} bones mapped"]
        lines += [f"  {t} <- {s}" for t, s in self.pairs.items()]
        if self.unmapped_target:
            lines.append("  target bones left at rest: " + ", ".join(self.unmapped_target))
        if self.unmapped_source:
            lines.append("  source bones not used: " + ", ".join(self.unmapped_source))
        return "\n".join(lines)


def read_bone_map(path: str | os.PathLike[str]) -> dict[str, str]:
    """A user map from TOML: ``[bones]`` with ``target_bone = "source_bone"`` lines."""
    import tomllib

    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ParseError(str(p), f"cannot read bone map ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ParseError(str(p), f"bone map is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ParseError(str(p), f"not valid TOML: {exc}") from None
    bones = data.get("bones")
    if not isinstance(bones, dict):
        raise ParseError(str(p), "expected a [bones] table of target_bone = \"source_bone\"", key="bones")
    out: dict[str, str] = {}
    for k, v in bones.items():
        if not isinstance(v, str):
            raise ParseError(str(p), f"expected a source bone name (a string), got {v!r}", key=f"bones.{k}")
        out[str(k)] = v
    return out


def _moving(fig: Figure) -> list[str]:
    """Nodes whose arc has DOFs (joints that move), in traversal order."""
    return [a.child.name for a in fig.arcs() if a.joint.dof_count]


#: Canonical bones a target cannot do without when it has them: they carry everything below them.
MATTERS: tuple[str, ...] = ("hips", "spine", "upper_arm_l", "upper_arm_r", "upper_leg_l", "upper_leg_r")


#: match_figure's answers by the skeleton's node names and parents (all it reads when not given ``right``), a few
#: skeletons at a time: the retarget and the foot lock ask for the same figure's, or a copy with DOFs added, often
_HUMANOID: dict[tuple[tuple[str, ...], tuple[int, ...]], HumanoidMap] = {}


def _humanoid_of(fig: Figure) -> HumanoidMap:
    """:func:`animkit.model.humanoid.match_figure` of ``fig`` (a frozen map), found once per skeleton."""
    c = fig.compiled
    key = (tuple(c.node_names), tuple(c.parent.tolist()))
    found = _HUMANOID.get(key)
    if found is None:
        if len(_HUMANOID) >= 64:
            _HUMANOID.clear()
        found = _HUMANOID[key] = match_figure(fig)
    return found


def bone_map(source: Figure, target: Figure, user: Mapping[str, str] | None = None) -> BoneMap:
    """Target → source bones: canonical humanoid bones (:mod:`animkit.model.humanoid`), then equal names, then the
    user's.

    RetargetError when the target has a bone that matters (hips, spine, a limb root: :data:`MATTERS`) and the
    source has none for it, or a name in the user's map is not a node.
    """
    src_names, tgt_names = source.node_names, target.node_names
    hs, ht = _humanoid_of(source), _humanoid_of(target)
    pairs = {ht.bones[b]: n for b, n in hs.bones.items() if b in ht.bones}
    scheme = "humanoid" if pairs else "names"
    used = set(pairs.values())
    moving_t = _moving(target)
    for n in moving_t:  # equal names fill in the rest (fingers, extra spine joints, a copy of the source)
        if n not in pairs and n in src_names and n not in used:
            pairs[n] = n
            used.add(n)
    if user:
        for t, s in user.items():
            if t not in tgt_names:
                raise RetargetError("bone map: " + unknown_name("target bone", t, tgt_names))
            if s not in src_names:
                raise RetargetError(f"bone map: target bone {t!r}: " + unknown_name("source bone", s, src_names))
        pairs = {**{t: s for t, s in pairs.items() if s not in set(user.values())}, **user}
        scheme += " + user map"
    for b in MATTERS:
        node = ht.bones.get(b)
        if node is not None and node not in pairs:
            raise RetargetError(f"source {source.name!r} has no {b} for target bone {node!r} (found: "
                                f"{', '.join(hs.bones) or 'no humanoid bones'}); map it: {node} = \"<source bone>\"")
    if not pairs:
        raise RetargetError(f"no bone of {target.name!r} matches a bone of {source.name!r}; give a map "
                            f"(target bone = source bone), e.g. for {moving_t[:3]}")
    ordered = {n: pairs[n] for n in tgt_names if n in pairs}
    used = set(ordered.values())
    return BoneMap(ordered, tuple(n for n in moving_t if n not in ordered),
                   tuple(n for n in _moving(source) if n not in used), scheme)
