"""Whole-figure task quantities and their Jacobians: points on segments, the centre of mass, gaze, support.

For a point x fixed to node i and a DOF j with world origin r_j and axis a_j (B_ij = 1 when j's node is i or
one of i's ancestors):

    ∂x/∂θ_j = B_ij (a_j × (x − r_j))  (revolute),  B_ij a_j  (prismatic)

Centre of mass c = Σ_i m_i c_i / M, so its Jacobian column is, with S_j = Σ_i B_ij m_i c_i and m_j = Σ_i B_ij m_i,

    ∂c/∂θ_j = (a_j × (S_j − m_j r_j)) / M  (revolute),   m_j a_j / M  (prismatic).

Gaze: the head's forward axis f = R_h f_h against the unit direction d = (t − p_h)/ρ, ρ = |t − p_h|; the task
value g = f − d (zero when the head looks at t) has the Jacobian

    ∂g/∂θ_j = B_hj (a_j × f) + (I − d dᵀ)/ρ · ∂p_h/∂θ_j     (revolute; prismatic: the second term only).

Segment masses come from the drawn geometry (density × volume, centroid placed by the node's T); a figure that
draws nothing gets one unit mass at the middle of each bone (node origin to child origin). The support polygon is
the convex hull of the feet's contact points projected on the ground; the margin of the centre of mass is its
signed distance to the hull's boundary (positive inside). See docs/derivations.md ("Natural reaching").

Task objects (as mink's): each reads a :class:`Configuration` (one pose and its world frames) and gives its error
e(θ) (zero when the task is met: the current value minus the wanted one) and its Jacobian ∂e/∂θ (m, D) over every
DOF of the figure; a problem keeps the columns of its movable set and weighs each task's rows by √weight:

    Reach      e = [p − t, log(R R_tᵀ)^∨]     ∂e = [∂p, J_l⁻¹(e_o) ∂ω]     (position rows; orientation with a pose)
    Gaze       e = f − d                        (the head's forward axis against the direction to the target)
    Plant      e = [p − p₀, log(R R₀ᵀ)^∨]       (a node keeps a frame: a planted foot)
    Balance    e = [max(0, m₀ − m(B c))]        (the centre of mass at least m₀ inside the support polygon)
    Posture    e = θ_S − θc_S                   (a comfort pose on the DOFs S)
    Spread     e = θ_g − mean(θ_g) per group    (a bend shared over the spine's joints)
    Cost       e = [√(2 c(θ))], ∂e = ∇cᵀ / e    (any cost with its gradient, e.g. a pose prior: ½e² = c)

J_l⁻¹(φ) = I − ½[φ]× + (1/|φ|² − (1 + cos|φ|)/(2|φ| sin|φ|)) [φ]×² is the inverse left Jacobian of SO(3): the
exact derivative of the log map under a world-frame turn ω (docs/derivations.md, "Tasks").
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import AnimkitError, IKError
from ..figure import Figure
from ..fk import forward
from ..geometry import Box, Capsule, Cylinder, Sphere
from ..transforms import cross3, rotation_vector_from_matrix

__all__ = ["Body", "body_from_figure", "FigureState", "figure_state", "point_jacobian", "com_jacobian",
           "gaze_error", "gaze_jacobian", "gaze_angle", "support_polygon", "polygon_margin", "ground_basis",
           "DENSITY", "Configuration", "configuration", "Task", "Reach", "Gaze", "Plant", "Balance", "Posture",
           "Spread", "Cost", "left_jacobian_inverse", "margin_gradient", "support_from_feet", "support_at",
           "head_forward"]

Array = NDArray[np.float64]
DENSITY = 1000.0  # kg/m³ (water): a figure in metres gets masses in kilograms


@dataclass(frozen=True, eq=False)
class Body:
    """Segments of a figure: node index, mass and centroid in the node's frame; B (N, D): DOF j moves node i."""

    node: NDArray[np.intp]  # (S,) node index (figure.compiled order) of each segment
    mass: Array  # (S,)
    centroid: Array  # (S, 3) in the node's frame
    moves: NDArray[np.bool_]  # (N, D) B_ij

    @property
    def total(self) -> float:
        return float(self.mass.sum())


def _volume_centroid(shape: object) -> tuple[float, Array] | None:
    """Volume and centroid (in the shape's own frame) of a primitive; None for shapes without a closed form."""
    if isinstance(shape, Box):
        sx, sy, sz = shape.size
        return sx * sy * sz, np.zeros(3)
    if isinstance(shape, Sphere):
        return 4.0 / 3.0 * math.pi * shape.radius ** 3, np.zeros(3)
    if isinstance(shape, Capsule):
        r, h = shape.radius, shape.length
        return math.pi * r * r * h + 4.0 / 3.0 * math.pi * r ** 3, np.array([0.0, 0.0, h / 2.0])
    if isinstance(shape, Cylinder):
        return math.pi * shape.radius ** 2 * shape.length, np.array([0.0, 0.0, shape.length / 2.0])
    return None


def body_from_figure(figure: Figure, density: float = DENSITY) -> Body:
    """m_i = density · volume of node i's primitive (box, sphere, capsule, cylinder), centroid T·c_shape.

    Mesh files and nodes drawing nothing have no mass; if the whole figure has none, each bone (node origin →
    child origin) gets unit mass at its middle (the documented default for skeletons from BVH files)."""
    c = figure.compiled
    N, D = c.node_count, c.dof_count
    nodes, masses, cents = [], [], []
    for i, name in enumerate(c.node_names):
        data = figure.node(name).data
        vc = _volume_centroid(data) if data is not None else None
        if vc is None:
            continue
        vol, cen = vc
        T = c.T[i]
        nodes.append(i)
        masses.append(density * vol)
        cents.append(T[:3, :3] @ cen + T[:3, 3])
    if not nodes:
        for i in range(N):
            if c.parent[i] >= 0:
                nodes.append(int(c.parent[i]))
                masses.append(1.0)
                cents.append(0.5 * c.L[i, :3, 3])
    moves = np.zeros((N, D), dtype=bool)
    for j in range(D):
        moves[int(c.dof_node[j]), j] = True
    for i in range(N):  # parents come first: inherit the parent's DOFs
        p = int(c.parent[i])
        if p >= 0:
            moves[i] |= moves[p]
    return Body(np.array(nodes, dtype=np.intp), np.array(masses, dtype=float),
                np.array(cents, dtype=float).reshape(-1, 3), moves)


@dataclass(frozen=True)
class FigureState:
    """World frames of one pose: node rotations R (N, 3, 3) and origins p (N, 3) in node order, DOF r, a (D, 3)."""

    R: Array
    p: Array
    r: Array
    a: Array


def figure_state(figure: Figure, pose: Array) -> FigureState:
    """FK of one pose (D,) with every DOF's world origin and axis (:func:`animkit.fk.forward`)."""
    c = figure.compiled
    M, r, a = forward(c, np.asarray(pose, dtype=float)[None], with_dof_frames=True)
    assert r is not None and a is not None
    W = M[c.row, :, :, 0]
    return FigureState(W[:, :, :3], W[:, :, 3], r[:, :, 0], a[:, :, 0])


def point_jacobian(figure: Figure, body: Body, s: FigureState, node: int, x: Array) -> Array:
    """∂x/∂θ (3, D) for a world point x fixed to ``node``: a_j × (x − r_j) (revolute) or a_j, zero off the path."""
    rev = figure.compiled.dof_revolute
    J = np.where(rev[:, None], cross3(s.a, x - s.r), s.a) * body.moves[node][:, None]
    return np.ascontiguousarray(J.T)


def centres(body: Body, s: FigureState) -> Array:
    """World centroids c_i (S, 3) of the segments."""
    return np.einsum("sij,sj->si", s.R[body.node], body.centroid) + s.p[body.node]


def com_jacobian(figure: Figure, body: Body, s: FigureState) -> tuple[Array, Array]:
    """The centre of mass c = Σ m_i c_i / M (3,) and ∂c/∂θ (3, D): (a_j × (S_j − m_j r_j)) / M (revolute),
    m_j a_j / M (prismatic), with S_j = Σ_i B_ij m_i c_i and m_j = Σ_i B_ij m_i."""
    ci = centres(body, s)
    m = body.mass
    M = float(m.sum())
    B = body.moves[body.node].astype(float)  # (S, D)
    mj = B.T @ m  # (D,)
    Sj = B.T @ (m[:, None] * ci)  # (D, 3)
    rev = figure.compiled.dof_revolute
    J = np.where(rev[:, None], cross3(s.a, Sj - mj[:, None] * s.r), mj[:, None] * s.a) / M
    return (m @ ci) / M, np.ascontiguousarray(J.T)


def gaze_error(s: FigureState, head: int, forward_local: Array, target: Array) -> tuple[Array, Array, Array, float]:
    """g = f − d with f = R_h f_h and d = (t − p_h)/ρ; returns g, f, d and ρ."""
    f = s.R[head] @ forward_local
    v = target - s.p[head]
    rho = float(np.linalg.norm(v))
    d = v / max(rho, 1e-12)
    return f - d, f, d, rho


def gaze_angle(s: FigureState, head: int, forward_local: Array, target: Array) -> float:
    """The angle between the head's forward axis and the direction to the target: atan2(|f × d|, f·d) (radians)."""
    _, f, d, _ = gaze_error(s, head, forward_local, target)
    return float(math.atan2(float(np.linalg.norm(np.cross(f, d))), float(f @ d)))


def gaze_jacobian(figure: Figure, body: Body, s: FigureState, head: int, forward_local: Array, target: Array
                  ) -> tuple[Array, Array]:
    """g (3,) and ∂g/∂θ (3, D) = B_hj (a_j × f) + (I − d dᵀ)/ρ · ∂p_h/∂θ_j (the first term for revolute DOFs)."""
    g, f, d, rho = gaze_error(s, head, forward_local, target)
    rev = figure.compiled.dof_revolute
    Jf = (cross3(s.a, f) * (body.moves[head] & rev)[:, None]).T  # (3, D)
    Jp = point_jacobian(figure, body, s, head, s.p[head])
    Jd = -((np.eye(3) - np.outer(d, d)) / max(rho, 1e-12)) @ Jp
    return g, Jf - Jd


def ground_basis(up: Array) -> Array:
    """Two unit vectors (2, 3) spanning the ground plane, orthogonal to ``up`` (a right-handed pair)."""
    u = np.asarray(up, dtype=float)
    u = u / np.linalg.norm(u)
    ref = np.array([0.0, 0.0, 1.0]) if abs(u[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    e1 = np.cross(u, ref)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(e1, u)
    return np.stack([e1, e2])


def support_polygon(points: Array) -> Array:
    """The convex hull (K, 2), counter-clockwise, of ground points (P, 2) (Andrew's monotone chain)."""
    pts = sorted({(float(x), float(y)) for x, y in np.asarray(points, dtype=float)})
    if len(pts) < 3:
        return np.array(pts, dtype=float).reshape(-1, 2)

    def cross(o: tuple[float, float], a: tuple[float, float], b: tuple[float, float]) -> float:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: list[tuple[float, float]] = []
    for q in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], q) <= 0:
            lower.pop()
        lower.append(q)
    upper: list[tuple[float, float]] = []
    for q in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], q) <= 0:
            upper.pop()
        upper.append(q)
    return np.array(lower[:-1] + upper[:-1], dtype=float)


def polygon_margin(hull: Array, x: Sequence[float] | Array) -> float:
    """Signed distance from the 2D point x to the boundary of a convex counter-clockwise polygon: the smallest
    distance to an edge line inside (positive), minus the distance to the polygon outside."""
    q = np.asarray(x, dtype=float)
    a = hull
    b = np.roll(hull, -1, axis=0)
    e = b - a
    n = np.stack([-e[:, 1], e[:, 0]], axis=1) / np.linalg.norm(e, axis=1)[:, None]  # inward normals (CCW)
    inside = np.sum((q - a) * n, axis=1)
    if np.all(inside >= 0):
        return float(inside.min())
    t = np.clip(np.sum((q - a) * e, axis=1) / np.sum(e * e, axis=1), 0.0, 1.0)
    nearest = a + t[:, None] * e
    return -float(np.min(np.linalg.norm(q - nearest, axis=1)))


def margin_gradient(hull: Array, x: Array) -> Array:
    """∇m (2,) of :func:`polygon_margin` at x: the inward normal of the nearest edge line inside; outside, the unit
    vector from x toward its nearest point on the polygon."""
    q = np.asarray(x, dtype=float)
    a = hull
    e = np.roll(hull, -1, axis=0) - a
    n = np.stack([-e[:, 1], e[:, 0]], axis=1) / np.linalg.norm(e, axis=1)[:, None]
    inside = np.sum((q - a) * n, axis=1)
    if np.all(inside >= 0):
        return np.asarray(n[int(np.argmin(inside))], dtype=float)
    t = np.clip(np.sum((q - a) * e, axis=1) / np.sum(e * e, axis=1), 0.0, 1.0)
    nearest = a + t[:, None] * e
    d = np.linalg.norm(q - nearest, axis=1)
    k = int(np.argmin(d))
    return np.asarray((nearest[k] - q) / max(float(d[k]), 1e-300), dtype=float)


def left_jacobian_inverse(phi: Array) -> Array:
    """J_l⁻¹(φ) = I − ½[φ]× + (1/θ² − (1 + cos θ)/(2θ sin θ)) [φ]×², θ = |φ| (→ 1/12 at θ = 0)."""
    t = float(np.linalg.norm(phi))
    K = np.array([[0.0, -phi[2], phi[1]], [phi[2], 0.0, -phi[0]], [-phi[1], phi[0], 0.0]])
    c = 1.0 / 12.0 + t * t / 720.0 if t < 1e-4 else 1.0 / (t * t) - (1.0 + math.cos(t)) / (2.0 * t * math.sin(t))
    return np.eye(3) - 0.5 * K + c * (K @ K)


@dataclass(frozen=True, eq=False)
class Configuration:
    """One pose of a figure with what every task reads: its world frames and the figure's segment masses."""

    figure: Figure
    body: Body
    pose: Array
    state: FigureState

    def node(self, name: str) -> int:
        """The index (figure.compiled order) of a node or rig effector, checked."""
        try:
            return self.figure.compiled.node_names.index(self.figure.effector(name))
        except AnimkitError as exc:
            raise IKError(str(exc)) from None

    def angular_jacobian(self, node: int) -> Array:
        """∂ω/∂θ (3, D) of a node's world frame: a_j for the revolute DOFs above it, zero elsewhere."""
        rev = self.figure.compiled.dof_revolute
        return np.ascontiguousarray((self.state.a * (self.body.moves[node] & rev)[:, None]).T)


def configuration(figure: Figure, pose: ArrayLike, body: Body | None = None) -> Configuration:
    """The :class:`Configuration` of one pose (D,) (``body``: reuse the figure's masses)."""
    p = np.asarray(pose, dtype=float)
    return Configuration(figure, body_from_figure(figure) if body is None else body, p, figure_state(figure, p))


def _frame_error(c: Configuration, node: int, position: Array, rotation: Array | None) -> tuple[Array, Array]:
    """e = [p − t, log(R R_tᵀ)^∨] and ∂e/∂θ = [∂p, J_l⁻¹(e_o) ∂ω] (orientation rows only with a rotation)."""
    s = c.state
    ep = s.p[node] - position
    Jp = point_jacobian(c.figure, c.body, s, node, s.p[node])
    if rotation is None:
        return ep, Jp
    eo = rotation_vector_from_matrix(s.R[node] @ rotation.T)
    Jo = left_jacobian_inverse(eo) @ c.angular_jacobian(node)
    return np.concatenate([ep, eo]), np.vstack([Jp, Jo])


def _pose_target(value: ArrayLike | None, owner: str) -> tuple[Array | None, Array | None]:
    """A target as (position (3,), rotation (3, 3) or None); (None, None) for none given."""
    if value is None:
        return None, None
    t = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(t)) or t.shape not in ((3,), (4, 4)):
        raise IKError(f"{owner}: a target is a finite 3-vector or a 4x4 pose, got {np.asarray(value)!r}")
    if t.shape == (3,):
        return t, None
    R = t[:3, :3]
    if not np.allclose(R @ R.T, np.eye(3), atol=1e-6) or np.linalg.det(R) <= 0:
        raise IKError(f"{owner}: a 4x4 target must be rigid (orthonormal rotation, det +1)")
    return t[:3, 3].copy(), R.copy()


@dataclass(frozen=True, eq=False, kw_only=True)
class Task(ABC):
    """One term of an IK problem: its error e(θ) (m,) and Jacobian ∂e/∂θ (m, D) at a :class:`Configuration`.

    ``weight`` w: the problem minimises Σ w ‖e‖² (weighted solvers; each task's rows scaled by √w); ``priority``: its
    level for the prioritised solver (0 first; the null-space tasks, Posture and Spread, come last whatever it says).
    Tasks are frozen values: :meth:`with_target` and :meth:`with_weight` give changed copies."""

    kind: ClassVar[str] = "task"
    weight: float = 1.0
    priority: int = 1

    def __post_init__(self) -> None:
        w = self.weight
        if not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
            raise IKError(f"{type(self).__name__}: weight must be a finite number >= 0, got {w!r}")

    @property
    def name(self) -> str:
        """The task's name in a problem (``kind`` and the node it acts on)."""
        return self.kind

    def error(self, c: Configuration) -> Array:
        """e(θ) (m,)."""
        return self.compute(c)[0]

    def jacobian(self, c: Configuration) -> Array:
        """∂e/∂θ (m, D)."""
        return self.compute(c)[1]

    @abstractmethod
    def compute(self, c: Configuration) -> tuple[Array, Array]:
        """e (m,) and ∂e/∂θ (m, D) together (one FK's worth of work)."""

    def row_scale(self, m: int) -> Array:
        """√weight for each of the task's m rows (Reach scales its orientation rows by its orientation weight)."""
        return np.full(m, math.sqrt(self.weight))


    def resolved(self, c: Configuration) -> Task:
        """This task with what it leaves open taken from the start ``c`` (a Plant's frame, a Posture's pose)."""
        return self

    def with_target(self, target: ArrayLike) -> Task:
        """A copy aiming at ``target`` (what a target is depends on the task)."""
        raise IKError(f"{type(self).__name__} takes no target")

    def with_weight(self, weight: float) -> Task:
        return replace(self, weight=weight)


@dataclass(frozen=True, eq=False, kw_only=True)
class Reach(Task):
    """An effector to a point (3,) or a pose (4, 4): e = [p − t, log(R R_tᵀ)^∨]; ``target`` None: given per solve.

    ``orientation_weight`` scales the orientation rows (radians against scene units)."""

    kind: ClassVar[str] = "reach"
    effector: str
    target: ArrayLike | None = None
    orientation_weight: float = 1.0
    priority: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.effector, str):
            raise IKError(f"Reach: effector must be a node or effector name, got {self.effector!r}")
        _pose_target(self.target, "Reach")

    @property
    def name(self) -> str:
        return f"reach {self.effector}"

    @property
    def orientation(self) -> bool:
        return self.target is not None and np.shape(self.target) == (4, 4)


    def row_scale(self, m: int) -> Array:
        w = math.sqrt(self.weight)
        return np.array([w] * 3 + [w * self.orientation_weight] * (m - 3))

    def with_target(self, target: ArrayLike) -> Task:
        return replace(self, target=np.asarray(target, dtype=float))

    def compute(self, c: Configuration) -> tuple[Array, Array]:
        p, R = _pose_target(self.target, "Reach")
        if p is None:
            raise IKError(f"Reach {self.effector!r}: no target (give one to the task or to solve)")
        return _frame_error(c, c.node(self.effector), p, R)


@dataclass(frozen=True, eq=False, kw_only=True)
class Plant(Task):
    """A node keeps a frame (a planted foot): e = [p − p₀, log(R R₀ᵀ)^∨]; ``frame`` None: its frame at the start."""

    kind: ClassVar[str] = "plant"
    node: str
    frame: ArrayLike | None = None
    priority: int = 0

    @property
    def name(self) -> str:
        return f"plant {self.node}"


    def resolved(self, c: Configuration) -> Task:
        if self.frame is not None:
            return self
        i = c.node(self.node)
        M = np.eye(4)
        M[:3, :3], M[:3, 3] = c.state.R[i], c.state.p[i]
        return replace(self, frame=M)

    def with_target(self, target: ArrayLike) -> Task:
        return replace(self, frame=np.asarray(target, dtype=float))

    def compute(self, c: Configuration) -> tuple[Array, Array]:
        p, R = _pose_target(self.resolved(c).frame, "Plant")  # type: ignore[attr-defined]
        assert p is not None
        if R is None:
            raise IKError(f"Plant {self.node!r}: the frame must be a 4x4 pose")
        return _frame_error(c, c.node(self.node), p, R)


@dataclass(frozen=True, eq=False, kw_only=True)
class Gaze(Task):
    """The head's forward axis f = R_h f_h toward a point: e = f − (t − p_h)/|t − p_h| (3 rows).

    ``forward``: f_h in the head's frame (:func:`head_forward` finds it from the figure)."""

    kind: ClassVar[str] = "gaze"
    head: str
    forward: ArrayLike = (0.0, 0.0, 1.0)
    target: ArrayLike | None = None
    priority: int = 2


    def with_target(self, target: ArrayLike) -> Task:
        t = np.asarray(target, dtype=float)
        return replace(self, target=t[:3, 3] if t.shape == (4, 4) else t)

    def compute(self, c: Configuration) -> tuple[Array, Array]:
        if self.target is None:
            raise IKError("Gaze: no target (give one to the task or to solve)")
        f = np.asarray(self.forward, dtype=float)
        return gaze_jacobian(c.figure, c.body, c.state, c.node(self.head), f / np.linalg.norm(f),
                             np.asarray(self.target, dtype=float))


@dataclass(frozen=True, eq=False, kw_only=True)
class Balance(Task):
    """The ground-projected centre of mass at least ``margin`` inside the support polygon ``support`` (K, 2)
    (ground coordinates B c, B = ``basis`` (2, 3)): e = [max(0, margin − m(B c))], ∂e = −∇mᵀ B ∂c where active."""

    kind: ClassVar[str] = "balance"
    support: ArrayLike
    basis: ArrayLike
    margin: float = 0.02
    priority: int = 0


    def compute(self, c: Configuration) -> tuple[Array, Array]:
        hull = np.asarray(self.support, dtype=float)
        B = np.asarray(self.basis, dtype=float)
        com, Jc = com_jacobian(c.figure, c.body, c.state)
        x = B @ com
        gap = self.margin - polygon_margin(hull, x)
        if gap <= 0:
            return np.zeros(1), np.zeros((1, c.figure.dof_count))
        return np.array([gap]), -(margin_gradient(hull, x) @ (B @ Jc))[None]


@dataclass(frozen=True, eq=False, kw_only=True)
class Posture(Task):
    """A comfort pose on DOFs S: e = θ_S − θc_S; ``pose`` None: the start pose; ``dofs`` None: every DOF (the
    problem keeps its movable columns)."""

    kind: ClassVar[str] = "posture"
    pose: ArrayLike | None = None
    dofs: Sequence[int] | None = None
    priority: int = 3


    def resolved(self, c: Configuration) -> Task:
        return self if self.pose is not None else replace(self, pose=c.pose.copy())

    def with_target(self, target: ArrayLike) -> Task:
        return replace(self, pose=np.asarray(target, dtype=float))

    def compute(self, c: Configuration) -> tuple[Array, Array]:
        D = c.figure.dof_count
        pose = c.pose if self.pose is None else np.asarray(self.pose, dtype=float)
        idx = np.arange(D) if self.dofs is None else np.asarray(self.dofs, dtype=np.intp)
        J = np.zeros((len(idx), D))
        J[np.arange(len(idx)), idx] = 1.0
        return c.pose[idx] - pose[idx], J


@dataclass(frozen=True, eq=False, kw_only=True)
class Spread(Task):
    """A bend shared over joints: for each group g of DOFs (about one axis), e = θ_g − mean(θ_g)."""

    kind: ClassVar[str] = "spread"
    groups: tuple[tuple[int, ...], ...] = ()
    priority: int = 3


    def compute(self, c: Configuration) -> tuple[Array, Array]:
        D = c.figure.dof_count
        es, Js = [np.zeros(0)], [np.zeros((0, D))]
        for g in self.groups:
            idx = np.asarray(g, dtype=np.intp)
            k = len(idx)
            es.append(c.pose[idx] - c.pose[idx].mean())
            J = np.zeros((k, D))
            J[:, idx] = np.eye(k) - 1.0 / k
            Js.append(J)
        return np.concatenate(es), np.vstack(Js)


@dataclass(frozen=True, eq=False, kw_only=True)
class Cost(Task):
    """Any smooth cost c(θ) ≥ 0 with its gradient, as a task: e = [√(2c)], ∂e = ∇cᵀ/√(2c) (so ½‖e‖² = c, and a
    Gauss–Newton step on it is a Newton step on √c). ``function``: full pose (D,) → (c, ∇c (D,)) (a pose prior)."""

    kind: ClassVar[str] = "cost"
    function: Callable[[Array], tuple[float, Array]]
    label: str = "cost"
    priority: int = 3

    @property
    def name(self) -> str:
        return self.label


    def compute(self, c: Configuration) -> tuple[Array, Array]:
        v, g = self.function(c.pose)
        e = math.sqrt(max(2.0 * float(v), 0.0))
        return np.array([e]), (np.asarray(g, dtype=float) / max(e, 1e-12))[None]


def head_forward(figure: Figure, head: str, pose: ArrayLike, up: ArrayLike, right: ArrayLike) -> Array:
    """f_h: the head's forward axis in its own frame, up × right at ``pose`` (unit)."""
    s = figure_state(figure, np.asarray(pose, dtype=float))
    i = figure.compiled.node_names.index(figure.effector(head))
    ahead = np.cross(np.asarray(up, dtype=float), np.asarray(right, dtype=float))
    return np.asarray(s.R[i].T @ (ahead / np.linalg.norm(ahead)), dtype=float)


def support_from_feet(figure: Figure, feet: Sequence[str], pose: ArrayLike, up: ArrayLike) -> Array | None:
    """The support polygon (K, 2) (ground coordinates :func:`ground_basis`) of the feet (effector names) at ``pose``
    (:func:`support_at`); None with fewer than 3 points."""
    c = figure.compiled
    u = np.asarray(up, dtype=float)
    u = u / np.linalg.norm(u)
    s = figure_state(figure, np.asarray(pose, dtype=float))
    return support_at(figure, s, [c.node_names.index(figure.effector(f)) for f in feet], u, ground_basis(u))


def support_at(figure: Figure, s: FigureState, feet: Sequence[int], up: Array, basis: Array) -> Array | None:
    """The support polygon (K, 2) in ``basis`` coordinates of the feet (node rows) in state ``s``: their geometry's
    points (box corners, other shapes' origins; each foot and its parent: the sole has both) within 2 cm of the
    lowest along the unit ``up``, hulled; None with fewer than 3 points."""
    c = figure.compiled
    pts = []
    for i in feet:
        nodes = [i] + ([int(c.parent[i])] if c.parent[i] >= 0 else [])
        for k in nodes:
            data = figure.node(c.node_names[k]).data
            M = np.eye(4)
            M[:3, :3], M[:3, 3] = s.R[k], s.p[k]
            M = M @ c.T[k]
            size = getattr(data, "size", None)
            if size is not None:
                h = 0.5 * np.asarray(size, dtype=float)
                corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * h
                pts.extend(corners @ M[:3, :3].T + M[:3, 3])
            else:
                pts.append(M[:3, 3])
    if not pts:
        return None
    P = np.array(pts)
    height = P @ up
    low = P[height <= height.min() + 0.02]
    hull = support_polygon(low @ basis.T)
    return hull if len(hull) >= 3 else None
