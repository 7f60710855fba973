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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit import jit
from animkit.model.figure import Figure
from animkit.model.fk import forward
from animkit.model.geometry import Box, Capsule, Cylinder, Sphere
from animkit.model.transforms import IDENTITY3, cross3, vector_norm

__all__ = ["Body", "body_from_figure", "FigureState", "figure_state", "point_jacobian", "centres", "com_jacobian",
           "gaze_error", "gaze_jacobian", "gaze_angle", "support_polygon", "polygon_margin", "ground_basis",
           "DENSITY", "static_effort", "margin_gradient", "support_from_feet", "support_at", "head_forward",
           "point_jacobians", "edge_distances", "smooth_margin"]

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


#: the node :mod:`animkit.motion.reach_surface` hangs on a hand to mark where it touches: a point, not a bone, so the
#: skeleton's default masses leave it out (the figure weighs what it weighed without it)
SITE_NODE = "reach_site"


def body_from_figure(figure: Figure, density: float = DENSITY) -> Body:
    """m_i = density · volume of node i's primitive (box, sphere, capsule, cylinder), centroid T·c_shape.

    Mesh files and nodes drawing nothing have no mass; if the whole figure has none, each bone (node origin →
    child origin) gets unit mass at its middle (the documented default for skeletons from BVH files), a reach's
    :data:`SITE_NODE` excepted."""
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
            if c.parent[i] >= 0 and c.node_names[i] != SITE_NODE:  # a reach's site is a point on a hand, no bone
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
    """FK of one pose (D,) with every DOF's world origin and axis (:func:`animkit.model.fk.forward`)."""
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


def point_jacobians(figure: Figure, body: Body, s: FigureState, nodes: NDArray[np.intp], x: Array) -> Array:
    """:func:`point_jacobian` of P points x (P, 3) fixed to ``nodes`` (P,) at once: (P, 3, D), the same numbers."""
    rev = figure.compiled.dof_revolute
    J = np.where(rev[:, None], cross3(s.a, x[:, None] - s.r), s.a) * body.moves[nodes][:, :, None]
    return np.ascontiguousarray(J.transpose(0, 2, 1))


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
    rho = vector_norm(v)
    d = v / max(rho, 1e-12)
    return f - d, f, d, rho


def gaze_angle(s: FigureState, head: int, forward_local: Array, target: Array) -> float:
    """The angle between the head's forward axis and the direction to the target: atan2(|f × d|, f·d) (radians)."""
    _, f, d, _ = gaze_error(s, head, forward_local, target)
    return float(math.atan2(float(np.linalg.norm(np.cross(f, d))), float(f @ d)))


def gaze_jacobian(figure: Figure, body: Body, s: FigureState, head: int, forward_local: Array, target: Array,
                  ear: ArrayLike | None = None, up: ArrayLike | None = None) -> tuple[Array, Array]:
    """g (3,) and ∂g/∂θ (3, D) = B_hj (a_j × f) + (I − d dᵀ)/ρ · ∂p_h/∂θ_j (the first term for revolute DOFs); with
    ``ear`` (the head's ear-to-ear axis in its frame) and ``up``, a fourth row e · u, e = R_h ear, ∂ = (a_j × e) · u
    for the revolute DOFs that move the head (the head kept level). ``animkit._native.gaze_rows`` takes the same
    arithmetic in one call where it is built (:func:`_native_gaze`); this is its reference."""
    got = _native_gaze(figure, body, s, head, (forward_local, target), (ear, up))
    if got is not None:
        return got
    g, f, d, rho = gaze_error(s, head, forward_local, target)
    rev = figure.compiled.dof_revolute
    Jf = (cross3(s.a, f) * (body.moves[head] & rev)[:, None]).T  # (3, D)
    Jp = point_jacobian(figure, body, s, head, s.p[head])
    Jd = -((IDENTITY3 - np.outer(d, d)) / max(rho, 1e-12)) @ Jp
    J = Jf - Jd
    if ear is not None:
        u = np.asarray(up, dtype=float)
        e = s.R[head] @ np.asarray(ear, dtype=float)
        g = np.concatenate([g, [float(e @ u)]])
        J = np.vstack([J, (cross3(s.a, e) @ u) * (body.moves[head] & rev)])
    return g, J


def _native_gaze(figure: Figure, body: Body, s: FigureState, head: int, aim: tuple[Array, Array],
                 level: tuple[ArrayLike | None, ArrayLike | None]) -> tuple[Array, Array] | None:
    """:func:`gaze_jacobian` by ``animkit._native.gaze_rows`` (to NumPy's ~1e-15), or None where the extension is off
    (ANIMKIT_JIT=0) or not built. ``aim``: the forward axis and the target; ``level``: the ear axis and up."""
    fn = getattr(jit.native_kernels(), "gaze_rows", None)
    if fn is None:
        return None
    f64, D = np.float64, len(s.a)
    ear = level[0] is not None
    g, J = np.empty(3 + ear), np.empty((3 + ear, D))
    e, u = (np.asarray(v, dtype=f64) for v in (level if ear else (_ZERO3, _ZERO3)))
    fn(np.ascontiguousarray(s.R[head], dtype=f64), np.ascontiguousarray(s.p[head], dtype=f64),
       np.ascontiguousarray(aim[0], dtype=f64), np.ascontiguousarray(aim[1], dtype=f64),
       np.ascontiguousarray(s.a, dtype=f64), np.ascontiguousarray(s.r, dtype=f64),
       np.ascontiguousarray(figure.compiled.dof_revolute, dtype=np.bool_), np.ascontiguousarray(body.moves[head]),
       np.ascontiguousarray(e), np.ascontiguousarray(u), np.ones(D, dtype=np.bool_), g, J, D, int(ear))
    return g, J


_ZERO3 = np.zeros(3)


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


def edge_distances(hull: Array, x: Sequence[float] | Array) -> tuple[Array, Array]:
    """s_i = n_i · (x − a_i) (K,) and n_i (K, 2): the 2D point x's signed distance to each edge line a_i a_{i+1} of a
    convex counter-clockwise polygon and the edges' inward unit normals; x is ``d`` inside the polygon iff every
    s_i ≥ d, K linear inequalities in x (the minimum of them, :func:`polygon_margin`, has a kink where the nearest
    edge changes)."""
    q = np.asarray(x, dtype=float)
    n = _inward_normals(_edges(hull))
    return np.asarray(np.sum((q - hull) * n, axis=1), dtype=float), n


def _edges(hull: Array) -> Array:
    """e_i = a_{i+1} − a_i (K, 2), the last edge closing the polygon (np.roll's numbers without its overhead)."""
    return np.concatenate([hull[1:], hull[:1]]) - hull


def _inward_normals(e: Array) -> Array:
    """n_i = (−e_iy, e_ix) / |e_i| (K, 2): a counter-clockwise polygon's inward unit edge normals."""
    n = np.empty(e.shape)
    n[:, 0], n[:, 1] = -e[:, 1], e[:, 0]
    return np.asarray(n / np.linalg.norm(e, axis=1)[:, None], dtype=float)


def smooth_margin(hull: Array, x: Sequence[float] | Array, tau: float) -> tuple[float, Array]:
    """m_τ = −τ ln Σ_i exp(−s_i/τ) and ∇m_τ = Σ_i w_i n_i, w = softmax(−s/τ) (2,): the soft minimum of the signed
    distances s_i to a convex polygon's edge lines (:func:`edge_distances`), smooth where the nearest edge changes;
    min s − τ ln K ≤ m_τ ≤ min s (K edges), and m_τ ≥ d implies x at least d inside."""
    s, n = edge_distances(hull, x)
    lo = float(s.min())
    z = np.exp(-(s - lo) / tau)
    return lo - tau * math.log(float(z.sum())), np.asarray((z / z.sum()) @ n, dtype=float)


def polygon_margin(hull: Array, x: Sequence[float] | Array) -> float:
    """Signed distance from the 2D point x to the boundary of a convex counter-clockwise polygon: the smallest
    distance to an edge line inside (positive), minus the distance to the polygon outside."""
    q = np.asarray(x, dtype=float)
    a = hull
    e = _edges(hull)
    inside = np.sum((q - a) * _inward_normals(e), axis=1)
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
    e = _edges(hull)
    n = _inward_normals(e)
    inside = np.sum((q - a) * n, axis=1)
    if np.all(inside >= 0):
        return np.asarray(n[int(np.argmin(inside))], dtype=float)
    t = np.clip(np.sum((q - a) * e, axis=1) / np.sum(e * e, axis=1), 0.0, 1.0)
    nearest = a + t[:, None] * e
    d = np.linalg.norm(q - nearest, axis=1)
    k = int(np.argmin(d))
    return np.asarray((nearest[k] - q) / max(float(d[k]), 1e-300), dtype=float)


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


def static_effort(figure: Figure, pose: ArrayLike, up: ArrayLike = (0.0, 1.0, 0.0), gravity: float = 9.81) -> float:
    """Σ_j |τ_j| over the DOFs of every joint but the root's: the static torque that holds the pose against gravity,
    τ_j = M g ∂(u·c)/∂θ_j (virtual work; u the up axis, c the centre of mass), in N·m for a figure in metres with
    masses in kg."""
    body = body_from_figure(figure)
    u = np.asarray(up, dtype=float)
    _, Jc = com_jacobian(figure, body, figure_state(figure, np.asarray(pose, dtype=float)))
    tau = body.total * gravity * ((u / np.linalg.norm(u)) @ Jc)
    keep = np.ones(len(tau), dtype=bool)
    keep[np.asarray(figure.joint_dofs[figure.root_arc.joint.name], dtype=np.intp)] = False
    return float(np.sum(np.abs(tau[keep])))
