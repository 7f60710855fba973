"""The body's volume as an IK task: a free limb's joints keep clear of the trunk and of its own side's thigh.

Each body part is a capsule: the segment a → b between two joints' world origins and a radius r. A limb point p
(the free arm's elbow and wrist origins) lies d = ‖p − s‖ from the segment, s = a + t (b − a) its nearest point
(t = clamp((p − a) · (b − a) / ‖b − a‖², 0, 1)), and inside the capsule widened by the clearance m by

    δ = r + m − d,   e = [δ₊] per (point, capsule),   ∂e/∂θ = −σ(δ/s) nᵀ ∂p/∂θ   (n = (p − s)/d)

with δ₊ = s ln(1 + e^(δ/s)) the softplus of the depth (:func:`soft_depth`, knee width s = :data:`SOFT`) and σ the
logistic function, its slope (only the limb's own DOFs, as :class:`~animkit.ik.hang.Hang`: the arm is moved out of
the body, the trunk is not bent away from the arm). ½ w ‖e‖² = ½ w Σ δ₊² is a soft penalty on the depth, smooth (its
gradient and that gradient's rate change continuously where a point nears and crosses the surface, so a bake stays
one smooth stroke: a plain max(0, δ)² let the arm's acceleration jump at each touch); it pulls from the null space
beside gravity (the prioritised solver's ``clear``). Radii: a drawn primitive's (:func:`drawn_radius`) or measured
from a skinned mesh's vertices (:func:`skinned_radii`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from numpy.typing import NDArray

from animkit.ik.body import point_jacobians
from animkit.ik.tasks import Configuration, Task
from animkit.model.figure import Figure
from animkit.model.geometry import Box, Capsule, Cylinder, Sphere

if TYPE_CHECKING:
    from animkit.look.mesh import Mesh
    from animkit.model.humanoid import HumanoidMap

__all__ = ["Clear", "free_arm_clear", "capsule_depth", "capsule_depths", "segment_distances", "soft_depth",
           "soft_depths", "drawn_radius", "skinned_radii", "body_capsules", "capsule_parts", "mesh_radii", "CLEARANCE",
           "SKIN_QUANTILE"]

Array = NDArray[np.float64]
CLEARANCE = 0.03  # m: the limb's own flesh around its joint centres, kept clear of the body's surface
SOFT = 0.01  # m: the width s of the soft depth's knee
START_GAP = 4.0  # the start pose is clear: no pair's radius comes nearer than this many s to its start distance
SOFT_REACH = 12.0  # pairs further than this many s outside are left out: their soft depth is below 1e-5 s
SKIN_QUANTILE = 75.0  # percentile of the part's vertices' distances from its bone taken as the capsule's radius


def capsule_depth(p: Array, a: Array, b: Array, r: float) -> tuple[float, Array, float]:
    """δ = r − ‖p − s‖ (positive inside), the outward unit normal n = (p − s)/‖p − s‖ and t, with
    s = a + t (b − a) the segment's point nearest p (t clamped to [0, 1]; n any unit vector where p = s)."""
    ab = b - a
    L2 = float(ab @ ab)
    t = min(max(float((p - a) @ ab) / L2, 0.0), 1.0) if L2 > 0 else 0.0
    v = p - (a + t * ab)
    d = math.sqrt(float(v @ v))
    n = v / d if d > 1e-12 else np.array([1.0, 0.0, 0.0])
    return r - d, n, t


def segment_distances(p: Array, a: Array, b: Array) -> Array:
    """‖p_v − s_v‖ (V,) for points p (V, 3): :func:`capsule_depth`'s distance from the segment a → b, all at once."""
    ab = b - a
    L2 = float(ab @ ab)
    t = np.clip((p - a) @ ab / L2, 0.0, 1.0) if L2 > 0 else np.zeros(len(p))
    v = p - (a + t[:, None] * ab)
    return np.sqrt(np.einsum("ij,ij->i", v, v))


def capsule_depths(p: Array, a: Array, b: Array, r: Array) -> tuple[Array, Array]:
    """:func:`capsule_depth` for every point p (K, 3) and segment a → b (a, b: (C, 3)) at once, with radii r (K, C):
    δ (K, C) and the unit normals n (K, C, 3) (+x where p lies on the segment)."""
    ab = b - a
    L2 = (ab * ab).sum(axis=1)
    w = p[:, None, :] - a
    t = np.minimum(np.maximum((w * ab).sum(axis=2) / np.where(L2 > 0, L2, 1.0), 0.0), 1.0)  # 0 on a point's
    v = w - t[:, :, None] * ab
    d = np.sqrt((v * v).sum(axis=2))
    n = v / np.maximum(d, 1e-12)[:, :, None]
    on = d <= 1e-12
    if on.any():
        n[on] = (1.0, 0.0, 0.0)
    return r - d, n


def soft_depths(depth: Array, s: float) -> tuple[Array, Array]:
    """:func:`soft_depth` elementwise: δ₊ = s ln(1 + e^(δ/s)) and its slope 1/(1 + e^(−δ/s)) (δ itself and 1 where
    δ/s > 30; δ/s below −700, past any pair that counts, is taken as −700: e^700 is still finite)."""
    z = depth / s
    zc = np.minimum(np.maximum(z, -700.0), 30.0)
    deep = z > 30.0
    return np.where(deep, depth, s * np.log1p(np.exp(zc))), np.where(deep, 1.0, 1.0 / (1.0 + np.exp(-zc)))


def soft_depth(depth: float, s: float) -> tuple[float, float]:
    """δ₊ = s ln(1 + e^(δ/s)) (softplus: δ well inside, 0 well outside, s ln 2 on the surface) and dδ₊/dδ =
    1/(1 + e^(−δ/s))."""
    z = depth / s
    if z > 30.0:
        return depth, 1.0
    return s * math.log1p(math.exp(z)), 1.0 / (1.0 + math.exp(-z))


@dataclass(frozen=True, eq=False, kw_only=True)
class Clear(Task):
    """A free limb's ``points`` (node names; their origins) kept ``clearance`` outside ``capsules`` ((a, b, r):
    node names of the segment's ends and its radius): e = [δ₊] per pair, moved by the DOFs at and below ``top``
    only (the module docstring). The pose a reach starts from is clear by the figure's own drawing: a pair whose
    start distance d₀ is less than r + m takes d₀ − START_GAP s as its radius (a wrist that starts touching a part,
    as the humanoid's hangs beside its thigh, is not pushed out before anything moves)."""

    kind: ClassVar[str] = "clear"
    top: str
    points: tuple[str, ...]
    capsules: tuple[tuple[str, str, float], ...]
    clearance: float = CLEARANCE
    soft: float = SOFT
    start: tuple[float, ...] | None = None  # each (point, capsule) pair's distance where the reach starts
    priority: int = 3

    @property
    def name(self) -> str:
        return f"clear {self.top}"

    def compute(self, c: Configuration) -> tuple[Array, Array]:
        """e and J over every (point, capsule) pair at once (row k · capsules + j), the module docstring's δ₊ and
        −σ(δ/s) nᵀ ∂p/∂θ; a pair more than SOFT_REACH · s outside gives a zero row."""
        pts, caps, own = self._plan(c)
        m = len(pts) * len(caps)
        if m == 0:
            return np.zeros(0), np.zeros((0, c.figure.compiled.dof_count))
        P = c.state.p
        ends, R = self.__dict__["_memo"][2]
        Jp = point_jacobians(c.figure, c.body, c.state, pts, P[pts])  # (points, 3, D)
        depth, n = capsule_depths(P[pts], P[ends[0]], P[ends[1]], R)
        near = depth > -SOFT_REACH * self.soft
        soft, slope = soft_depths(depth, self.soft)
        rows = (np.where(near, -slope, 0.0)[:, :, None] * (n @ Jp)).reshape(m, -1)
        return np.where(near, soft, 0.0).reshape(m), np.where(own, rows, 0.0)

    def radii(self, points: int, r: Sequence[float]) -> Array:
        """R (points, capsules): each pair's r + m, at most its distance at the start less START_GAP · s."""
        R = np.broadcast_to(np.asarray(r, dtype=float) + self.clearance, (points, len(r)))
        if self.start is None:
            return R
        return np.minimum(R, np.reshape(self.start, R.shape) - START_GAP * self.soft)

    def resolved(self, c: Configuration) -> Task:
        """With no ``start``: each pair's distance d at ``c`` (the pose a solve or a bake starts from)."""
        if self.start is not None:
            return self
        pts, caps, _ = self._plan(c)
        P = c.state.p
        d = [r - capsule_depth(P[i], P[a], P[b], r)[0] for i in pts for a, b, r in caps]
        return replace(self, start=tuple(d))

    def _plan(self, c: Configuration) -> tuple[NDArray[np.intp], list[tuple[int, int, float]], NDArray[np.bool_]]:
        """The points' and capsules' node indices and the limb's own DOFs, found once per compiled figure (and kept
        with the capsules' ends (2, C) and :meth:`radii`, the pairs' fixed part for :meth:`compute`)."""
        got = self.__dict__.get("_memo")
        if got is not None and got[0] is c.figure.compiled:
            return got[1]
        cf = c.figure.compiled
        top = c.node(self.top)
        below = np.zeros(cf.node_count, dtype=bool)
        below[top] = True
        for i in range(top + 1, cf.node_count):
            below[i] = bool(cf.parent[i] >= 0 and below[cf.parent[i]])
        plan = (np.array([c.node(n) for n in self.points], dtype=np.intp),
                [(c.node(a), c.node(b), float(r)) for a, b, r in self.capsules], below[cf.dof_node])
        ends = np.array([(a, b) for a, b, _ in plan[1]], dtype=np.intp).reshape(-1, 2).T  # (2, capsules)
        object.__setattr__(self, "_memo", (cf, plan, (ends, self.radii(len(plan[0]), [r for *_, r in plan[1]]))))
        return plan

    def __getstate__(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k != "_memo"}  # found again where it is used


def drawn_radius(figure: Figure, node: str, toward: str) -> float | None:
    """The radius of the primitive ``node`` draws, as a capsule along node → ``toward``: a capsule's, cylinder's or
    sphere's radius; a box's √(h₁ h₂) over its two half sizes across the bone (its most aligned axis left out);
    None where the node draws nothing of these."""
    data = figure.node(node).data
    if isinstance(data, (Capsule, Cylinder, Sphere)):
        return float(data.radius)
    if isinstance(data, Box):
        cf = figure.compiled
        i, j = cf.node_names.index(node), cf.node_names.index(toward)
        W = figure.world_batch(figure.rest_pose()[None])[0]
        along = W[i, :3, :3].T @ (W[j, :3, 3] - W[i, :3, 3])  # the bone in the node's frame
        h = np.asarray(data.size, dtype=float) / 2.0
        across = np.delete(h, int(np.argmax(np.abs(along))))
        return float(math.sqrt(across[0] * across[1]))
    return None


def body_capsules(figure: Figure, bones: HumanoidMap, radii: Mapping[str, float] | None = None,
                  arm: str | None = None) -> tuple[tuple[str, str, float], ...]:
    """The parts the free arm hanging from ``arm`` (its clavicle or upper arm node; None: the trunk alone) keeps
    clear of (:func:`capsule_parts`) as capsules (a, b, r): r from ``radii`` (node name → m, e.g.
    :func:`skinned_radii`) where given, else :func:`drawn_radius`; parts with neither left out."""
    side = None if arm is None else "l" if arm in (bones.get("clavicle_l"), bones.get("upper_arm_l")) else "r"
    out = []
    for a, b in capsule_parts(figure, bones, () if side is None else (side,)):
        r = (radii or {}).get(a)
        r = drawn_radius(figure, a, b) if r is None else r
        if r is not None and r > 0:
            out.append((a, b, float(r)))
    return tuple(out)


def free_arm_clear(figure: Figure, bones: HumanoidMap, arm: str, points: Sequence[str], start: Array,
                   radii: Mapping[str, float] | None = None, weight: float = 1.0) -> Clear | None:
    """The :class:`Clear` task of the free arm hanging from ``arm`` (its clavicle or upper arm node), its ``points``
    kept clear of :func:`body_capsules` (the trunk and its own side's thigh), ``start`` the nodes' world origins
    (N, 3) where the reach starts. The thigh is left out where a point starts within r + m + START_GAP · s of it
    (where the pair would already pull at the start): a hand drawn hanging against its thigh (the TOML humanoid's,
    its wrist 9.0 cm from the bone, r + m = 9 cm) cannot be held clear of it from the start, and capped at its start
    distance (as a trunk pair is) the touch turned the humanoid's whole-body reach out of reach onto another path
    (its shoulder 11.6° a frame). An A-pose's free hand (CesiumMan's, RiggedFigure's: 46-47 cm) keeps it. None with
    no part to keep clear of."""
    names = figure.compiled.node_names
    legs = (bones.get("upper_leg_l"), bones.get("upper_leg_r"))
    at = [start[names.index(q)] for q in points]
    capsules = tuple((a, b, r) for a, b, r in body_capsules(figure, bones, radii, arm)
                     if a not in legs or all(capsule_depth(x, start[names.index(a)], start[names.index(b)],
                                                           r + CLEARANCE + START_GAP * SOFT)[0] <= 0.0
                                        for x in at))
    return Clear(top=arm, points=tuple(points), capsules=capsules, weight=weight) if capsules else None


def capsule_parts(figure: Figure, bones: HumanoidMap, sides: Sequence[str] = ()) -> list[tuple[str, str]]:
    """The body parts a limb keeps clear of, as bones (a, b): each on the path hips → neck (``bones``: the figure's
    humanoid map, :func:`animkit.model.humanoid.match_figure`), and the thigh (upper → lower leg) of each of
    ``sides`` ("l", "r"): a free arm's own side's, the one its hand hangs beside."""
    get = bones.get
    segs: list[tuple[str, str]] = []
    hips, neck = get("hips"), get("neck")
    if hips is not None and neck is not None:
        path = [a.child.name for a in figure.path_to(neck)]
        if hips in path:
            trunk = path[path.index(hips):]
            segs += list(zip(trunk[:-1], trunk[1:], strict=True))
    for side in sides:
        up, low = get(f"upper_leg_{side}"), get(f"lower_leg_{side}")
        if up is not None and low is not None and up in [a.child.name for a in figure.path_to(low)]:
            segs.append((up, low))
    return segs


def skinned_radii(figure: Figure, rest_vertices: Array, owner: Sequence[str], parts: Sequence[tuple[str, str]]
                  ) -> dict[str, float]:
    """Each part a → b's radius from a skinned mesh at rest: the :data:`SKIN_QUANTILE` percentile of the distances
    from the segment of the vertices ``rest_vertices`` (V, 3, world) whose strongest joint (``owner``: node names)
    is a; parts owning no vertex left out."""
    cf = figure.compiled
    W = figure.world_batch(figure.rest_pose()[None])[0]
    own = np.asarray(owner)
    out = {}
    for a, b in parts:
        v = rest_vertices[own == a]
        if len(v) == 0:
            continue
        pa, pb = W[cf.node_names.index(a), :3, 3], W[cf.node_names.index(b), :3, 3]
        out[a] = float(np.percentile(segment_distances(v, pa, pb), SKIN_QUANTILE))
    return out


def mesh_radii(figure: Figure, mesh: Mesh, bones: HumanoidMap) -> dict[str, float]:
    """:func:`skinned_radii` of the :func:`capsule_parts` from a skinned mesh at the figure's rest pose (each vertex
    owned by its strongest joint); empty for a mesh without a skin."""
    if mesh.skin is None:
        return {}
    W = figure.world_batch(figure.rest_pose()[None])
    joints, weights = np.asarray(mesh.joints), np.asarray(mesh.weights)
    owner = np.asarray(mesh.skin.joints)[joints[np.arange(len(joints)), weights.argmax(axis=1)]]
    return skinned_radii(figure, mesh.positions(W)[0], list(owner), capsule_parts(figure, bones, ("l", "r")))
