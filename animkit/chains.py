"""Movable sets: which DOFs may move, named as chains (sets of joints), never boolean masks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
from numpy.typing import NDArray

from .errors import SceneError, unknown_name
from .graph import Figure

__all__ = ["dof_indices", "chain_to", "joints_between"]


def dof_indices(figure: Figure, movable: str | Iterable[str] | None, *,
                chains: Mapping[str, Iterable[str]] | None = None, effector: str | None = None
                ) -> NDArray[np.intp]:
    """Pose indices of a movable set, sorted.

    ``movable`` is a chain name (looked up in ``chains``), or names of joints, nodes or single DOFs
    (``"elbow_r"``, ``"elbow_r.rz"``); None means every DOF from the root to ``effector``.
    """
    if movable is None:
        if effector is None:
            return np.arange(figure.dof_count, dtype=np.intp)
        names: list[str] = [a.joint.name for a in figure.path_to(effector)]
    elif isinstance(movable, str):
        if chains is not None and movable in chains:
            names = list(chains[movable])
        elif _known(figure, movable):
            names = [movable]
        else:
            raise SceneError(unknown_name("chain", movable, list(chains or {}) + figure.joint_names))
    else:
        names = list(movable)
    joint_dofs = figure.joint_dofs
    node_joint = {a.child.name: a.joint.name for a in figure.arcs()}
    dof_names = figure.dof_names
    out: set[int] = set()
    for n in names:
        if n in joint_dofs:
            out.update(joint_dofs[n])
        elif n in node_joint:
            out.update(joint_dofs[node_joint[n]])
        elif n in dof_names:
            out.add(dof_names.index(n))
        else:
            raise SceneError(unknown_name("joint or DOF", n, figure.joint_names + dof_names))
    return np.array(sorted(out), dtype=np.intp)


def _known(figure: Figure, name: str) -> bool:
    return name in figure.joint_names or name in figure.node_names or name in figure.dof_names


def chain_to(figure: Figure, node: str) -> list[str]:
    """Joint names from the root arc down to (and including) the arc into ``node``."""
    return [a.joint.name for a in figure.path_to(node)]


def joints_between(figure: Figure, top: str, bottom: str) -> list[str]:
    """Joint names on the path from node ``top`` (its own arc included) down to node ``bottom``."""
    path = figure.path_to(bottom)
    names = [a.child.name for a in path]
    if top not in names:
        raise SceneError(f"node {top!r} is not an ancestor of {bottom!r}")
    return [a.joint.name for a in path[names.index(top):]]
