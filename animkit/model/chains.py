"""Movable sets: which DOFs may move, named as chains (sets of joints), never boolean masks."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from animkit.errors import SceneError, unknown_name
from animkit.model.figure import Figure

__all__ = ["dof_indices", "chain_to", "joints_between"]


def dof_indices(figure: Figure, movable: str | Iterable[str] | None, *,
                effector: str | Sequence[str] | None = None) -> NDArray[np.intp]:
    """Pose indices of a movable set, sorted: the one resolver of movable sets (IK, reaches, Jacobians use it).

    ``movable`` is a name or a list of names, each a chain of the figure's rig (chain names win), a joint, a
    node (its joint) or a single DOF (``"arm"``, ``"elbow_r"``, ``"elbow_r.rz"``); None means every DOF on the
    paths from the root to ``effector`` (node or effector names, one or several), or every DOF without one.
    """
    if movable is None:
        if effector is None:
            return np.arange(figure.dof_count, dtype=np.intp)
        effectors = [effector] if isinstance(effector, str) else list(effector)
        names: list[str] = [a.joint.name for e in effectors for a in figure.path_to(figure.effector(e))]
    elif isinstance(movable, str):
        names = [movable]
    else:
        names = list(movable)
    chains = figure.rig.chains
    joint_dofs = figure.joint_dofs
    node_joint = {a.child.name: a.joint.name for a in figure.arcs()}
    dof_names = figure.dof_names
    out: set[int] = set()
    for n in [m for name in names for m in (chains[name] if name in chains else (name,))]:
        if n in joint_dofs:
            out.update(joint_dofs[n])
        elif n in node_joint:
            out.update(joint_dofs[node_joint[n]])
        elif n in dof_names:
            out.add(dof_names.index(n))
        else:
            raise SceneError(unknown_name("chain, joint or DOF", n, list(chains) + figure.joint_names))
    return np.array(sorted(out), dtype=np.intp)


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
