"""The figure: a tree of nodes joined by arcs below one root arc, and its rig (named chains and effectors).

Building (``add``), structure (names, paths, DOFs, limits), the textbook traversal with a matrix stack
(:meth:`Figure.traverse`: M ← M·L·A on the way down, pop on the way up) and the batched FK of :mod:`animkit.model.fk`,
which works on the flat arrays :attr:`Figure.compiled` hands it. Nodes and arcs are :mod:`animkit.model.graph`'s.

Order: ``node_names`` is the traversal's (depth-first, pre-order; siblings in the order they were added) and
``dof_names`` follows it, each joint's DOFs in the joint's order. This is BVH's channel order too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import PoseError, SceneError, unknown_name
from animkit.model.fk import CompiledFigure, DofArrays, compile_figure, world_batch, world_positions
from animkit.model.geometry import Geometry
from animkit.model.graph import Arc, Color, Node
from animkit.model.joints import Cone, Dof, Joint, fixed
from animkit.model.transforms import homogeneous, identity

#: A figure's up axis: ``"y"`` (glTF, BVH, FBX as read, people) or ``"z"`` (URDF, robots).
UpAxis = Literal["y", "z"]
UP_AXES: tuple[UpAxis, ...] = ("y", "z")


def check_up(up: object) -> UpAxis:
    """``up`` if it is an up axis ("y" or "z"); SceneError otherwise."""
    if up == "y" or up == "z":
        return up
    raise SceneError(f"up axis {up!r}: expected 'y' or 'z'")

__all__ = ["Figure", "Rig", "UpAxis", "check_up"]


@dataclass(frozen=True, eq=False)
class _Derived:
    """A figure's structure as its accessors hand it out, for one arc order ``arcs``: node names, DOFs and their
    names, rest values (D,) and limits (D, 2) (read-only), each joint's DOF span [a, b) in the pose vector."""

    arcs: list[Arc]
    node_names: tuple[str, ...]
    dofs: tuple[Dof, ...]
    dof_names: tuple[str, ...]
    rest: NDArray[np.float64]
    limits: NDArray[np.float64]
    spans: dict[str, tuple[int, int]]

    @staticmethod
    def of(arcs: list[Arc]) -> _Derived:
        dofs = tuple(d for a in arcs for d in a.joint.dofs)
        spans: dict[str, tuple[int, int]] = {}
        i = 0
        for a in arcs:
            k = a.joint.dof_count
            spans[a.joint.name] = (i, i + k)
            i += k
        rest = np.array([d.rest for d in dofs], dtype=float)
        limits = np.array([(d.lower, d.upper) for d in dofs], dtype=float).reshape(-1, 2)
        rest.setflags(write=False)
        limits.setflags(write=False)
        return _Derived(arcs, tuple(a.child.name for a in arcs), dofs, tuple(d.name for d in dofs), rest, limits,
                        spans)

_BUILDING = threading.RLock()  # held while a deferred figure builds its objects (Figure._built)


@dataclass(frozen=True)
class Rig:
    """Chains: chain name → joint (or DOF) names, root first. Effectors: effector name → node name. Limits: joint
    name → :class:`~animkit.model.joints.Cone`, the range IK keeps that joint in where the joint has no limits of its
    own (a figure matched as a humanoid gets :mod:`animkit.model.anatomy`'s; clips play unlimited)."""

    chains: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    effectors: Mapping[str, str] = field(default_factory=dict)
    limits: Mapping[str, Cone] = field(default_factory=dict)

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
        limits = dict(self.limits)
        for name, cone in limits.items():
            if not isinstance(name, str) or not isinstance(cone, Cone):
                raise SceneError(f"a rig's limits map a joint name to a Cone, got {name!r} -> {cone!r}")
        object.__setattr__(self, "chains", MappingProxyType(chains))
        object.__setattr__(self, "effectors", MappingProxyType(effectors))
        object.__setattr__(self, "limits", MappingProxyType(limits))

    def __reduce__(self) -> tuple[Any, ...]:  # mapping proxies do not pickle; the dicts they wrap do
        return (Rig, (dict(self.chains), dict(self.effectors), dict(self.limits)))

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
        """This rig with ``other``'s chains, effectors and limits added (``other`` wins where names repeat)."""
        return Rig({**self.chains, **other.chains}, {**self.effectors, **other.effectors},
                   {**self.limits, **other.limits})

    def check(self, figure: Figure) -> Rig:
        """``self`` if every name resolves on ``figure``: chain members are joints or DOFs, effectors nodes."""
        joints, dofs, nodes = set(figure.joint_names), set(figure.dof_names), set(figure.node_names)
        for name, members in self.chains.items():
            for j in members:
                if j not in joints and j not in dofs:
                    raise SceneError(f"chain {name!r}: {unknown_name('joint', j, figure.joint_names)}")
        for j in self.limits:
            if j not in joints:
                raise SceneError(f"limits: {unknown_name('joint', j, figure.joint_names)}")
        for name, node in self.effectors.items():
            if node not in nodes:
                raise SceneError(f"effector {name!r}: {unknown_name('node', node, figure.node_names)}")
            if name in nodes and name != node:
                raise SceneError(f"effector {name!r} -> {node!r}: {name!r} is another node of the figure; "
                                 f"an effector may not shadow a node name")
        return self


class Figure:
    """An articulated figure: a tree of nodes joined by arcs, below one root arc.

    Build it in code::

        fig = Figure("base")
        fig.add("upper", parent="base", offset=(0, 0, 1), joint=hinge("upper", "x"))
    """

    def __init__(self, root: str = "root", *, data: Geometry | None = None, T: ArrayLike | None = None,
                 color: Color | None = None, joint: Joint | None = None, L: ArrayLike | None = None,
                 name: str = "figure", up: UpAxis = "y") -> None:
        self.name = name
        self.up = up
        self._check_name(root)
        self.root = Node(root, data, T, color)
        self.root_arc = Arc(L, joint if joint is not None else fixed(root), self.root, None)
        self.root.parent_arc = self.root_arc
        self._nodes: dict[str, Node] = {root: self.root}
        self._joint_names: set[str] = {self.root_arc.joint.name}
        self._dof_names: set[str] = {d.name for d in self.root_arc.joint.dofs}
        self._compiled: CompiledFigure | None = None
        self._order: list[Arc] | None = None
        self._rig = Rig()
        self._rig_maker: Callable[[Figure], Rig] | None = None

    # --- deferred building: a loader's figure known by its FK arrays until its nodes are asked for ------------

    #: what a deferred figure builds on first use (its build function fills exactly these)
    _BUILT = ("root", "root_arc", "_nodes", "_joint_names", "_dof_names", "_order")

    @classmethod
    def deferred(cls, name: str, compiled: CompiledFigure, build: Callable[[], Figure], up: UpAxis = "y") -> Figure:
        """A figure given by its compiled arrays, its nodes, arcs, joints and DOFs made by ``build()`` on first use.

        ``compiled`` must equal what ``build().compiled`` would be: ``world_positions``, ``world_batch``,
        ``node_names``, ``dof_names`` and ``dof_count`` then need no objects (a BVH reader that is asked only for
        world positions never builds ~30 joints' Dof, Joint, Node and Arc objects). Anything else builds them once.
        """
        fig = cls.__new__(cls)
        fig.name = name
        fig.up = up
        fig._compiled = compiled
        fig._rig = Rig()
        fig._rig_maker = None
        fig.__dict__["_build"] = build
        return fig

    @property
    def built(self) -> bool:
        """Whether the figure's nodes, arcs, joints and DOFs exist as objects: always for a figure made with
        ``add``; for a :meth:`deferred` one, once something other than its compiled arrays was asked for."""
        return "_build" not in self.__dict__

    def _built(self) -> Figure:
        """Build a deferred figure's objects now (nothing for a figure built with ``add``); returns self."""
        if "_build" in self.__dict__:
            with _BUILDING:  # two threads touching one deferred figure build it once
                build = self.__dict__.get("_build")
                if build is not None:
                    made = build()
                    for attr in self._BUILT:
                        self.__dict__[attr] = made.__dict__[attr]
                    del self.__dict__["_build"]
        return self

    if not TYPE_CHECKING:  # hidden from mypy, which would otherwise accept any attribute name on a Figure
        def __getattr__(self, attr: str) -> Any:
            """Only for attributes not found: a deferred figure's objects, built on first use."""
            if attr in Figure._BUILT and "_build" in self.__dict__:
                return getattr(self._built(), attr)
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {attr!r}")

    def __getstate__(self) -> dict[str, Any]:
        return dict(self._built().__dict__)  # a deferred figure pickles (and copies) as a built one

    @property
    def up(self) -> UpAxis:
        """The figure's up axis, ``"y"`` or ``"z"``: set by its reader (glTF, BVH, FBX: y; URDF: z; a TOML scene:
        its ``up`` key) or by a :class:`~animkit.scene.Scene` made with ``up=``; what renders, motion measures and
        foot locking take as up when not told otherwise."""
        return self.__dict__.get("_up", "y")

    @up.setter
    def up(self, up: UpAxis) -> None:
        self.__dict__["_up"] = check_up(up)

    # --- the rig: named chains and effectors -----------------------------------------------------------

    @property
    def rig(self) -> Rig:
        """The figure's named chains and effectors (empty unless a loader or the user set them)."""
        if self._rig_maker is not None:
            make, self._rig_maker = self._rig_maker, None
            self.rig = make(self)
        return self._rig

    @rig.setter
    def rig(self, rig: Rig) -> None:
        if not isinstance(rig, Rig):
            raise SceneError(f"a figure's rig is a Rig, got {type(rig).__name__}")
        self._rig_maker = None
        self._rig = rig.check(self)

    def defer_rig(self, make: Callable[[Figure], Rig]) -> None:
        """Set the rig to ``make(self)`` on its first use (or before the next :meth:`add`, so it sees the figure
        as it is now): a loader's name matching costs nothing for callers who never ask for chains."""
        self._rig_maker = make

    def chain(self, name: str) -> tuple[str, ...]:
        """The joint names of chain ``name``; SceneError listing the chain names (close matches first)."""
        return self.rig.chain(name)

    def effector(self, name: str) -> str:
        """The node effector ``name`` stands for; a node name stands for itself."""
        node = self.rig.effectors.get(name)
        if node is not None:
            return node
        if name in self._nodes:
            return name
        raise SceneError(unknown_name("effector", name, list(self.rig.effectors) + self.node_names))

    # --- building ------------------------------------------------------------------------------------

    def _check_name(self, name: str) -> None:
        if not isinstance(name, str) or name.split() != [name]:  # empty, or holds whitespace
            raise SceneError(f"node names must be non-empty strings without spaces, got {name!r}")

    def add(self, name: str, parent: str, *, offset: ArrayLike | None = None, rotation: ArrayLike | None = None,
            L: ArrayLike | None = None, joint: Joint | None = None, data: Geometry | None = None,
            T: ArrayLike | None = None, color: Color | None = None) -> Node:
        """Add node ``name`` under ``parent`` through a new arc (the parent's last).

        L is given whole, or as ``offset`` (translation) and ``rotation`` (3×3), L = [[rotation, offset], [0, 1]].
        The joint defaults to fixed.
        """
        if self._rig_maker is not None:
            self.rig  # noqa: B018 -- a deferred rig is made from the figure as it was before this node
        self._check_name(name)
        if name in self._nodes:
            raise SceneError(f"duplicate node name {name!r}: node names must be unique")
        if parent not in self._nodes:
            raise SceneError(f"node {name!r}: {unknown_name('parent', parent, self._nodes)}")
        if L is not None and (offset is not None or rotation is not None):
            raise SceneError(f"node {name!r}: give L, or offset/rotation, not both")
        if L is None:
            p = np.zeros(3) if offset is None else np.asarray(offset, dtype=float)
            if p.shape != (3,) or not np.all(np.isfinite(p)):
                raise SceneError(f"node {name!r}: offset must be 3 finite numbers, got {offset!r}")
            if rotation is None:  # a pure translation (every BVH joint): no rotation block to build
                L = identity()
                L[:3, 3] = p
            else:
                R = np.asarray(rotation, dtype=float)
                if R.shape != (3, 3):
                    raise SceneError(f"node {name!r}: rotation must be 3x3, got shape {R.shape}")
                L = homogeneous(R, p)
        joint = joint if joint is not None else fixed(name)
        if joint.name in self._joint_names:
            raise SceneError(f"duplicate joint name {joint.name!r} (at node {name!r}): joint names must be unique")
        for d in joint.dofs:
            if d.name in self._dof_names:
                raise SceneError(f"duplicate DOF name {d.name!r} (at node {name!r})")
        node = Node(name, data, T, color)
        parent_node = self._nodes[parent]
        arc = Arc(L, joint, node, parent_node)
        node.parent_arc = arc
        if parent_node.first_arc is None:
            parent_node.first_arc = arc
        else:
            last = parent_node.last_arc
            if last is None or last.sibling is not None:  # a node whose arcs were linked by hand
                last = parent_node.first_arc
                while last.sibling is not None:
                    last = last.sibling
            last.sibling = arc
        parent_node.last_arc = arc
        self._nodes[name] = node
        self._joint_names.add(joint.name)
        self._dof_names.update(d.name for d in joint.dofs)
        self._compiled = None
        self._order = None
        return node

    # --- structure -----------------------------------------------------------------------------------

    def arcs(self) -> list[Arc]:
        """Every arc in traversal order (depth-first, pre-order), the root arc first."""
        if self._order is None:
            order: list[Arc] = []
            stack = [self.root_arc]
            while stack:
                arc = stack.pop()
                order.append(arc)
                stack.extend(reversed(list(arc.child.arcs())))
            self._order = order
        return self._order

    def _derived(self) -> _Derived:
        """What the structure's accessors hand out, found once per arc order (:meth:`arcs` is a new list after every
        :meth:`add`; arcs, joints and DOFs are not edited in place): names, DOFs, rest values, limits, joint spans."""
        arcs = self.arcs()
        known: _Derived | None = self.__dict__.get("_derived_of")
        if known is None or known.arcs is not arcs:
            known = self.__dict__["_derived_of"] = _Derived.of(arcs)
        return known

    @property
    def node_names(self) -> list[str]:
        if "_build" in self.__dict__:
            return list(self._compiled.node_names)  # type: ignore[union-attr]
        return list(self._derived().node_names)

    def node(self, name: str) -> Node:
        try:
            return self._nodes[name]
        except KeyError:
            raise SceneError(unknown_name("node", name, self.node_names)) from None

    def nodes(self) -> list[Node]:
        return [a.child for a in self.arcs()]

    @property
    def joints(self) -> list[Joint]:
        return [a.joint for a in self.arcs()]

    @property
    def joint_names(self) -> list[str]:
        return [a.joint.name for a in self.arcs()]

    def joint(self, name: str) -> Joint:
        for j in self.joints:
            if j.name == name:
                return j
        raise SceneError(unknown_name("joint", name, self.joint_names))

    @property
    def dofs(self) -> list[Dof]:
        return list(self._derived().dofs)

    @property
    def dof_names(self) -> list[str]:
        if "_build" in self.__dict__:
            return list(self._compiled.dof_names)  # type: ignore[union-attr]
        return list(self._derived().dof_names)

    @property
    def dof_count(self) -> int:
        if "_build" in self.__dict__:
            return self._compiled.dof_count  # type: ignore[union-attr]
        return len(self._derived().dofs)

    def dof_index(self, name: str) -> int:
        names = self.dof_names
        try:
            return names.index(name)
        except ValueError:
            raise SceneError(unknown_name("DOF", name, names)) from None

    @property
    def joint_dofs(self) -> dict[str, list[int]]:
        """Joint name → indices of its DOFs in the pose vector (a new dict; the spans found once per arc order)."""
        return {name: list(range(a, b)) for name, (a, b) in self._derived().spans.items()}

    @property
    def joint_orders(self) -> dict[str, str]:
        """Ball joint name → its intrinsic Euler order (its three rotation DOFs, in that order).

        Ball joints, and custom joints with an order (a glTF node's translation, rotation and scale).
        """
        return {j.name: j.order for j in self.joints if j.kind in ("ball", "custom") and j.order is not None}

    def rest_pose(self) -> NDArray[np.float64]:
        """The rest value of every DOF, shape (D,) (a new array)."""
        return self._derived().rest.copy()

    def dof_limits(self) -> NDArray[np.float64]:
        """(D, 2): lower and upper limit of every DOF (±inf where unlimited; a new array)."""
        return self._derived().limits.copy()

    def parent_of(self, name: str) -> str | None:
        arc = self.node(name).parent_arc
        assert arc is not None
        return None if arc.parent is None else arc.parent.name

    def path_to(self, name: str) -> list[Arc]:
        """Arcs from the root arc down to the arc into ``name``."""
        arcs: list[Arc] = []
        arc = self.node(name).parent_arc
        while arc is not None:
            arcs.append(arc)
            arc = None if arc.parent is None else arc.parent.parent_arc
        return arcs[::-1]

    def size(self) -> float:
        """A length scale: the largest distance of any node from the root at rest (≥ 1e-9); computed once per
        :attr:`compiled` figure (the look, the camera's framing and each renderer all ask for it)."""
        c = self.compiled
        known = getattr(self, "_size_of", None)
        if known is not None and known[0] is c:
            return float(known[1])
        W = self.world_batch(self.rest_pose()[None])[0]
        p = W[:, :3, 3]
        size = float(max(np.linalg.norm(p - p[0], axis=1).max(), 1e-9))
        self._size_of = (c, size)
        return size

    # --- poses ---------------------------------------------------------------------------------------

    def check_pose(self, pose: ArrayLike) -> NDArray[np.float64]:
        """A pose as float array (D,) or (F, D); PoseError for a wrong length or NaN/inf."""
        try:
            p = np.asarray(pose, dtype=float)
        except (TypeError, ValueError):
            raise PoseError(f"a pose must be numbers, got {type(pose).__name__}") from None
        D = self.dof_count
        if p.ndim not in (1, 2) or p.shape[-1] != D:
            raise PoseError(f"pose of shape {p.shape} for figure {self.name!r}: expected ({D},) or (F, {D}), "
                            f"one value per DOF in dof_names order")
        with np.errstate(over="ignore", invalid="ignore"):  # a finite sum: all finite (one pass, no mask)
            finite = bool(np.isfinite(p.sum()))
        if not finite and not np.all(np.isfinite(p)):
            bad = np.argwhere(~np.isfinite(p))[0]
            raise PoseError(f"pose holds NaN/inf at DOF {self.dof_names[bad[-1]]!r}")
        return p

    def clip_to_limits(self, pose: ArrayLike) -> NDArray[np.float64]:
        """θ clamped into [lower, upper] per DOF."""
        lim = self.dof_limits()
        return np.clip(np.asarray(pose, dtype=float), lim[:, 0], lim[:, 1])

    def pose_dict(self, pose: ArrayLike) -> dict[str, float]:
        p = self.check_pose(pose)
        return dict(zip(self.dof_names, map(float, p), strict=True))

    def pose_from(self, values: dict[str, float], base: ArrayLike | None = None) -> NDArray[np.float64]:
        """A pose from {DOF name: value}, other DOFs from ``base`` (default: rest)."""
        p = self.rest_pose() if base is None else self.check_pose(base).copy()
        for k, v in values.items():
            p[self.dof_index(k)] = float(v)
        return p

    # --- forward kinematics --------------------------------------------------------------------------

    def traverse(self, pose: ArrayLike, visit: Callable[[Node, NDArray[np.float64]], None]) -> None:
        """Depth-first traversal with an explicit matrix stack; ``visit(node, M)`` for every node.

        Going down an arc: push M, M ← M·L·A(θ). Visit the node (its data is drawn with M·T).
        Descend into its first arc. Coming back up: pop M, move to the sibling arc.
        """
        p = self.check_pose(pose)
        if p.ndim != 1:
            raise PoseError(f"traverse takes one pose (D,), got shape {p.shape}; use world_batch for many")
        start = self._dof_starts()
        stack: list[tuple[NDArray[np.float64], Arc]] = []  # (M before the arc, the arc)
        M = identity()
        arc: Arc | None = self.root_arc
        while arc is not None:
            stack.append((M, arc))  # push
            s = start[id(arc)]
            M = M @ arc.L @ arc.joint.matrix(p[s:s + arc.joint.dof_count])
            visit(arc.child, M)
            if arc.child.first_arc is not None:  # descend
                arc = arc.child.first_arc
                continue
            arc = None
            while stack:  # come back up until an arc has a sibling
                M, done = stack.pop()
                if done.sibling is not None:
                    arc = done.sibling
                    break

    def _dof_starts(self) -> dict[int, int]:
        out, i = {}, 0
        for a in self.arcs():
            out[id(a)] = i
            i += a.joint.dof_count
        return out

    def world(self, pose: ArrayLike) -> dict[str, NDArray[np.float64]]:
        """World matrix M of every node's frame (after L and A, before T), by :meth:`traverse`."""
        out: dict[str, NDArray[np.float64]] = {}
        self.traverse(pose, lambda node, M: out.__setitem__(node.name, M))
        return out

    @property
    def compiled(self) -> CompiledFigure:
        """The figure as flat arrays (topological order, parent index, L, DOF axes), built once."""
        if self._compiled is None:
            arcs = self.arcs()
            index = {a.child.name: i for i, a in enumerate(arcs)}
            dofs = self.dofs
            self._compiled = compile_figure(
                node_names=[a.child.name for a in arcs],
                parent=[-1 if a.parent is None else index[a.parent.name] for a in arcs],
                L=np.stack([a.L for a in arcs]), T=np.stack([a.child.T for a in arcs]),
                dof_counts=[a.joint.dof_count for a in arcs], dofs=DofArrays(
                    names=[d.name for d in dofs], revolute=[d.revolute for d in dofs],
                    axis=np.array([d.axis for d in dofs]).reshape(-1, 3),
                    letter=[-1 if d.axis_letter is None else "xyz".index(d.axis_letter) for d in dofs],
                    lower=[d.lower for d in dofs], upper=[d.upper for d in dofs], rest=[d.rest for d in dofs],
                    scale=[d.scale for d in dofs]))
        return self._compiled

    def world_batch(self, poses: ArrayLike) -> NDArray[np.float64]:
        """World matrices (F, N, 4, 4) in ``node_names`` order for poses (F, D), vectorised over F."""
        p = self.check_pose(poses)
        return world_batch(self.compiled, np.atleast_2d(p))

    def world_positions(self, poses: ArrayLike, *, dtype: type = np.float64,
                        out: NDArray[Any] | None = None) -> NDArray[Any]:
        """World positions (F, N, 3) of every node's frame origin for poses (F, D); ``dtype=np.float32`` halves
        the output (values computed in float64, rounded once). ``out``: a C-contiguous (F, N, 3) array of
        ``dtype`` to write into and return (reusing one buffer avoids a fresh array's page faults)."""
        if np.dtype(dtype) not in (np.dtype(np.float64), np.dtype(np.float32)):
            raise SceneError(f"world_positions: dtype must be float64 or float32, got {dtype!r}")
        p = self.check_pose(poses)
        return world_positions(self.compiled, np.atleast_2d(p), dtype, out)

    def __repr__(self) -> str:
        moving = sum(1 for j in self.joints if j.dof_count)
        return f"Figure({self.name!r}, {len(self._nodes)} nodes, {moving} joints, {self.dof_count} DOFs)"
