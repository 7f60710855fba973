"""The scene graph's parts: nodes and arcs (the figure that owns them is :mod:`animkit.model.figure`).

The classic structure, kept visible:

* a **node** holds its ``data`` (geometry, may be shared), a ``T`` matrix that puts
  the data in position to be articulated, and its ``first_arc``;
* an **arc** holds ``L`` (locates the child relative to the parent), the ``joint``
  that yields ``A`` (the articulation, what animation changes), its ``child`` node
  and its next ``sibling`` arc.

A figure has one root node, placed in the world by the *root arc* (its own L and
joint; a free joint there moves the whole figure). Drawing is a depth-first
traversal with a matrix stack: going down an arc pushes M and concatenates
M·L·A; the node's data is drawn with M·T; coming back up pops M.

Order: ``node_names`` is the traversal's (depth-first, pre-order; siblings in the
order they were added) and ``dof_names`` follows it, each joint's DOFs in the
joint's order. This is BVH's channel order too.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import SceneError
from animkit.model.geometry import Geometry
from animkit.model.joints import Joint
from animkit.model.transforms import identity, is_rigid

__all__ = ["Node", "Arc", "Color", "DEFAULT_COLOR"]

Color = tuple[float, float, float]
DEFAULT_COLOR: Color = (0.72, 0.74, 0.78)


def _rigid(M: ArrayLike | None, what: str) -> NDArray[np.float64]:
    if M is None:
        return identity()
    A = np.asarray(M, dtype=float)
    if A.shape != (4, 4):
        raise SceneError(f"{what}: expected a 4x4 matrix, got shape {A.shape}")
    if not is_rigid(A, tol=1e-6):
        raise SceneError(f"{what}: expected a rigid transform (orthonormal rotation, det +1, last row "
                         f"0 0 0 1), got\n{A}")
    A = A.copy()
    A.setflags(write=False)
    return A


_LAST_ROW, _EX, _EY, _EZ = [0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]


def _affine(M: ArrayLike | None, what: str) -> NDArray[np.float64]:
    """An arc's L: rigid, or affine with scale (glTF nodes): finite, last row 0 0 0 1, invertible."""
    if M is None:
        return identity()
    A = np.asarray(M, dtype=float)
    if A.shape != (4, 4):
        raise SceneError(f"{what}: expected a 4x4 matrix, got shape {A.shape}")
    r0, r1, r2, r3 = A.tolist()
    if r3 == _LAST_ROW and r0[:3] == _EX and r1[:3] == _EY and r2[:3] == _EZ and \
            math.isfinite(r0[3] + r1[3] + r2[3]):  # a pure translation (every BVH offset): 16 scalar checks
        A = A.copy()
        A.setflags(write=False)
        return A
    if not np.all(np.isfinite(A)) or np.abs(A[3] - (0.0, 0.0, 0.0, 1.0)).max() > 1e-9:
        raise SceneError(f"{what}: expected an affine transform (finite, last row 0 0 0 1), got\n{A}")
    scale = float(np.abs(A[:3, :3]).max())
    if scale == 0.0 or not abs(np.linalg.det(A[:3, :3] / scale)) > 1e-12:
        raise SceneError(f"{what}: expected an invertible transform, got\n{A}")
    A = A.copy()
    A.setflags(write=False)
    return A


class Node:
    """A node: ``data`` drawn with M·T, and the first (and last) of its child arcs."""

    __slots__ = ("name", "data", "T", "color", "first_arc", "last_arc", "parent_arc")

    def __init__(self, name: str, data: Geometry | None = None, T: ArrayLike | None = None,
                 color: Color | None = None) -> None:
        self.name = name
        self.data = data
        self.T = _rigid(T, f"node {name!r} T")
        self.color: Color = DEFAULT_COLOR if color is None else tuple(float(c) for c in color)  # type: ignore
        self.first_arc: Arc | None = None
        self.last_arc: Arc | None = None  # where the next child arc goes (adding a child is O(1))
        self.parent_arc: Arc | None = None

    def arcs(self) -> Iterator[Arc]:
        """The child arcs, following ``first_arc`` then each ``sibling``."""
        arc = self.first_arc
        while arc is not None:
            yield arc
            arc = arc.sibling

    def __repr__(self) -> str:
        return f"Node({self.name!r}, data={type(self.data).__name__ if self.data else None})"


class Arc:
    """An arc: M_child = M_parent · L · A(θ), with A from ``joint``; ``sibling`` is the parent's next arc.

    L is rigid, or affine with scale (a glTF node's static scale); T is always rigid.
    """

    __slots__ = ("L", "joint", "child", "sibling", "parent")

    def __init__(self, L: ArrayLike | None, joint: Joint, child: Node, parent: Node | None) -> None:
        self.L = _affine(L, f"arc into {child.name!r} L")
        self.joint = joint
        self.child = child
        self.parent = parent
        self.sibling: Arc | None = None

    def __repr__(self) -> str:
        p = self.parent.name if self.parent else "<world>"
        return f"Arc({p!r} -> {self.child.name!r}, joint={self.joint.kind})"
