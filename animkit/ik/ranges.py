"""A person's range of motion as an IK task: the trunk's side bend and twist, the pelvis's roll and the knees over
the feet held within bounds, measured from the world frames (not per joint: a bound on the sum over every joint
that bends the trunk, however a rig splits its spine).

With x_L, x_R the upper arms, d = x_R − x_L, s = d/|d|, the pelvis's up p = R_hips p_h and left-to-right axis
h = R_hips h_h (the rest pose's world up and right in the hips' frame), g = p × h, u the world up axis:

    side bend   β = asin(s · p)              ∂β = (p · ∂s + s · ∂p) / cos β,  ∂s = (I − s sᵀ)(∂x_R − ∂x_L)/|d|
    twist       τ = atan2(d · g, d · h)      ∂τ = (X ∂Y − Y ∂X)/(X² + Y²),   X = d · h, Y = d · g
    pelvis roll ρ = asin(h · u)              ∂ρ = u · ∂h / cos ρ
    knee in     κ = asin(â · n)              â = (k − a)/|k − a| (knee, ankle), n = ±(u × (t − a))/|u × (t − a)|
                                             (toe t; the sign turns n toward the other ankle)

where ∂p = a_j × p (∂h, ∂g alike) for the revolute DOFs j that move the hips and ∂x the point Jacobians
(:func:`~animkit.ik.body.point_jacobian`). The quantities are those of
:mod:`animkit.motion.reach_measures` (the tests hold the two to each other). Each is bounded: |β| ≤ β_max,
|τ| ≤ τ_max, |ρ| ≤ ρ_max and κ ≤ κ_max (a knee may go out, not in). As an inequality (:meth:`Ranges.bounds`) the
prioritised solver holds J Δθ ≤ room = bound − |value| for the rows a step would break (an active set, above every
level: the reach gives way, not the back); as a soft task (:meth:`Ranges.compute`, weighted solvers)
e = max(0, |value| − bound) per quantity.

The bounds are an adult's active ranges (American Academy of Orthopaedic Surgeons, *Joint Motion: Method of
Measuring and Recording*, 1965; Greene & Heckman, *The Clinical Measurement of Joint Motion*, AAOS 1994):
thoracolumbar lateral flexion 35°, rotation 45° (forward flexion 80°, measured, not bounded: the joints' own limits
hold it). The pelvis and knees get tight bounds (5°): a person reaching low keeps the pelvis about level and the
knees over the feet; the front view shows anything more.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit import jit
from animkit.errors import IKError, unknown_name
from animkit.ik.body import Body, FigureState, figure_state, point_jacobians
from animkit.ik.tasks import Configuration, Task
from animkit.model.anatomy import RANGE_DEGREES
from animkit.model.figure import Figure
from animkit.model.transforms import IDENTITY3, cross3, vector_norm

__all__ = ["Ranges", "ranges_task", "RANGE_DEGREES"]

Array = NDArray[np.float64]


@dataclass(frozen=True, eq=False, kw_only=True)
class Ranges(Task):
    """The trunk's side bend and twist, the pelvis's roll and the knees within ``bounds`` (name → degrees, keys of
    RANGE_DEGREES; a missing key: not bounded) (module docstring). ``hips``, ``arms`` (left, right upper arm),
    ``pelvis`` (p_h, h_h: the world up and right at rest in the hips' frame), ``legs``: (knee, ankle, toe, other
    ankle) per leg; ``up``: the world up axis."""

    kind: ClassVar[str] = "ranges"
    inequality: ClassVar[bool] = True
    hips: str
    arms: tuple[str, str] | None = None
    pelvis: tuple[ArrayLike, ArrayLike] = ((0.0, 1.0, 0.0), (-1.0, 0.0, 0.0))
    legs: tuple[tuple[str, str, str, str], ...] = ()
    bounds_deg: Mapping[str, float] = field(default_factory=lambda: dict(RANGE_DEGREES))
    up: ArrayLike = (0.0, 1.0, 0.0)
    priority: int = 0

    @property
    def nodes(self) -> tuple[str, ...]:
        """The nodes whose frames the quantities read (a movable set that moves none of them leaves them alone)."""
        return (self.hips, *(self.arms or ()), *(n for leg in self.legs for n in leg))

    def values(self, c: Configuration) -> tuple[list[str], Array, Array]:
        """Each bounded quantity's name, value (radians) and ∂/∂θ (D,), rows in the order side bend, twist, pelvis
        roll, knees: the point Jacobians of every node read taken at once (:func:`~animkit.ik.body.point_jacobians`),
        the knees' rows side by side."""
        s, pl = c.state, self._plan(c)
        got = _native_values(c, pl)
        if got is not None:
            return got
        p, h = s.R[pl.hips] @ pl.pelvis[0], s.R[pl.hips] @ pl.pelvis[1]
        u = pl.up
        J = point_jacobians(c.figure, c.body, s, pl.points, s.p[pl.points])  # (P, 3, D)
        g = cross3(p, h) if pl.arms and "twist" in pl.names else None
        # ∂v/∂θ (3, D) of the vectors p, h, g carried by the hips
        dp, dh, *dg = (cross3(s.a[None], np.stack([p, h] if g is None else [p, h, g])[:, None]) * pl.pelvis_dofs
                       ).transpose(0, 2, 1)
        names, vals, rows = [], [], []
        if pl.arms:
            ir, il = pl.points[0], pl.points[1]
            d = s.p[ir] - s.p[il]
            Jd = J[0] - J[1]
            if "side_bend" in pl.names:
                n = vector_norm(d)
                sv = d / n
                sig = float(sv @ p)
                ds = (IDENTITY3 - np.outer(sv, sv)) @ Jd / n
                names.append("side_bend")
                vals.append(math.asin(max(-1.0, min(1.0, sig))))
                rows.append((p @ ds + sv @ dp) / max(math.sqrt(max(1.0 - sig * sig, 0.0)), 1e-9))
            if g is not None:
                X, Y = float(d @ h), float(d @ g)
                dX, dY = h @ Jd + d @ dh, g @ Jd + d @ dg[0]
                names.append("twist")
                vals.append(math.atan2(Y, X))
                rows.append((X * dY - Y * dX) / max(X * X + Y * Y, 1e-300))
        if "pelvis_roll" in pl.names:
            r = float(h @ u)
            names.append("pelvis_roll")
            vals.append(math.asin(max(-1.0, min(1.0, r))))
            rows.append((u @ dh) / max(math.sqrt(max(1.0 - r * r, 0.0)), 1e-9))
        if pl.legs:
            legs = pl.points[2 if pl.arms else 0:].reshape(-1, 3)
            v, Jk = _knees_in(s, J[2 if pl.arms else 0:].reshape(len(legs), 3, 3, -1), legs, pl.others, u)
            names += ["knee_in"] * len(v)
            vals += v
            rows += list(Jk)
        return names, np.array(vals, dtype=float), np.array(rows, dtype=float).reshape(-1, len(s.a))

    def _plan(self, c: Configuration) -> _Plan:
        """What :meth:`values` reads of the figure (node indices, the DOFs that turn the hips), found once per
        compiled figure and body."""
        got: _Plan | None = self.__dict__.get("_memo")
        if got is not None and got.compiled is c.figure.compiled and got.body is c.body:
            return got
        b = self.bounds_deg
        hip = c.node(self.hips)
        arms = self.arms is not None and ("side_bend" in b or "twist" in b)
        legs = self.legs if "knee_in" in b else ()
        points = [c.node(self.arms[1]), c.node(self.arms[0])] if arms and self.arms is not None else []
        for leg in legs:
            points += [c.node(x) for x in leg[:3]]
        u = np.asarray(self.up, dtype=float)
        side, twist = arms and "side_bend" in b, arms and "twist" in b
        plan = _Plan(compiled=c.figure.compiled, body=c.body, names=frozenset(b), hips=hip,
                     pelvis=tuple(np.asarray(v, dtype=float) for v in self.pelvis),  # type: ignore[arg-type]
                     pelvis_dofs=(c.body.moves[hip] & c.figure.compiled.dof_revolute)[:, None],
                     up=u / np.linalg.norm(u),
                     arms=arms, legs=len(legs), points=np.array(points, dtype=np.intp),
                     others=np.array([c.node(leg[3]) for leg in legs], dtype=np.intp),
                     rows=["side_bend"] * side + ["twist"] * twist + ["pelvis_roll"] * ("pelvis_roll" in b) +
                     ["knee_in"] * len(legs),
                     moves=np.ascontiguousarray(c.body.moves[np.array(points, dtype=np.intp)], dtype=np.uint8),
                     revolute=np.ascontiguousarray(c.figure.compiled.dof_revolute, dtype=np.uint8))
        object.__setattr__(self, "_memo", plan)
        return plan

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_memo"}  # the memo is found again where it is used

    def resolved(self, c: Configuration) -> Task:
        """The bounds no tighter than the start ``c``: a quantity already past its bound where the solve starts is
        bounded where it is (|v₀|; a knee's κ₀), so the active set (above every level) holds it from going further
        rather than pulling it in. CMU's skeleton stands with its knees 19.9° in (bound 5°): pulled in against the
        planted feet, the feet slid up to 12 cm over a whole-body reach's stroke (each frame's solve at its cap)."""
        names, v, _ = self.values(c)
        b = dict(self.bounds_deg)
        for n, x in zip(names, v, strict=True):
            b[n] = max(b[n], math.degrees(x if n == "knee_in" else abs(x)))
        return self if b == dict(self.bounds_deg) else replace(self, bounds_deg=b)

    def _limits(self, names: list[str]) -> Array:
        return np.radians([float(self.bounds_deg[n]) for n in names])

    def bounds(self, c: Configuration) -> tuple[Array, Array] | None:
        """J Δθ ≤ room: per quantity, J = sign(v) ∂v (the knees': ∂κ) and room = bound − |v| (κ_max − κ)."""
        names, v, J = self.values(c)
        one_sided = np.array([n == "knee_in" for n in names], dtype=bool)
        sign = np.where(one_sided | (v >= 0), 1.0, -1.0)
        return J * sign[:, None], self._limits(names) - sign * v

    def compute(self, c: Configuration) -> tuple[Array, Array]:
        """e = max(0, |v| − bound) per quantity (κ − κ_max for a knee), ∂e = sign(v) ∂v where positive, else 0."""
        J, room = self.bounds(c)  # type: ignore[misc]
        over = room < 0
        return np.where(over, -room, 0.0), J * over[:, None]

    def report(self, c: Configuration) -> float:
        """The largest excess over a bound, in degrees (0 within every bound)."""
        return float(np.degrees(np.max(self.compute(c)[0], initial=0.0)))


@dataclass(frozen=True, eq=False)
class _Plan:
    """What :meth:`Ranges.values` reads of one compiled figure and body: the bounds' names, the hips' node, the
    pelvis's axes in the hips' frame, the DOFs that turn the hips (D, 1), the unit up, whether the arms are read,
    the legs read, the nodes whose point Jacobians are taken ((right arm, left arm) if read, then (knee, ankle, toe)
    per leg) and each leg's other ankle."""

    compiled: object
    body: Body
    names: frozenset[str]
    hips: int
    pelvis: tuple[Array, Array]
    pelvis_dofs: NDArray[np.bool_]
    up: Array
    arms: bool
    legs: int
    points: NDArray[np.intp]
    others: NDArray[np.intp]
    rows: list[str]  # the quantities' names, in :meth:`Ranges.values`' order
    moves: NDArray[np.uint8]  # (P, D): the DOFs that move each point
    revolute: NDArray[np.uint8]  # (D,): the revolute DOFs


def _native_values(c: Configuration, pl: _Plan) -> tuple[list[str], Array, Array] | None:
    """:meth:`Ranges.values` by ``animkit._native.ranges_values`` (the same arithmetic in one call: to NumPy's
    ~1e-15), or None where the extension is off (ANIMKIT_JIT=0) or not built."""
    fn = getattr(jit.native_kernels(), "ranges_values", None)
    if fn is None:
        return None
    s, D, f64 = c.state, len(c.state.a), np.float64
    M = len(pl.rows)
    vals, rows = np.empty(M), np.empty((M, D))
    fn(np.ascontiguousarray(s.p[pl.points], dtype=f64), np.ascontiguousarray(s.p[pl.others], dtype=f64),
       np.ascontiguousarray(s.R[pl.hips], dtype=f64), pl.pelvis[0], pl.pelvis[1], pl.up,
       np.ascontiguousarray(s.a, dtype=f64), np.ascontiguousarray(s.r, dtype=f64), pl.revolute, pl.moves,
       np.ascontiguousarray(pl.pelvis_dofs[:, 0], dtype=np.uint8), vals, rows, len(pl.points), pl.legs, D,
       "side_bend" in pl.rows, "twist" in pl.rows, "pelvis_roll" in pl.rows)
    return list(pl.rows), vals, rows


def _knees_in(s: FigureState, J: Array, nodes: NDArray[np.intp], others: NDArray[np.intp], u: Array
              ) -> tuple[list[float], Array]:
    """κ = asin(â · n) and ∂κ/∂θ (L, D) of L legs side by side (module docstring): ``nodes`` (L, 3) each leg's knee,
    ankle and toe, ``J`` (L, 3, 3, D) their point Jacobians, ``others`` (L,) each leg's other ankle."""
    k, a, t = s.p[nodes[:, 0]], s.p[nodes[:, 1]], s.p[nodes[:, 2]]
    Jk, Ja, Jt = J[:, 0], J[:, 1], J[:, 2]
    va = k - a
    la = np.sqrt((va * va).sum(axis=1))  # |·| row by row, as a dot product sums (bit for bit)
    ah = va / la[:, None]
    m = cross3(u, t - a)
    lm = np.maximum(np.sqrt((m * m).sum(axis=1)), 1e-300)
    sign = np.where((m * (s.p[others] - a)).sum(axis=1) < 0, -1.0, 1.0)[:, None]
    n = sign * m / lm[:, None]
    eye = IDENTITY3
    dah = (eye - ah[:, :, None] * ah[:, None, :]) @ (Jk - Ja) / la[:, None, None]
    dm = cross3(u, (Jt - Ja).transpose(0, 2, 1)).transpose(0, 2, 1)  # u × ∂(t − a), column by column
    dn = sign[:, :, None] * (eye - n[:, :, None] * n[:, None, :]) @ dm / lm[:, None, None]
    x = (ah * n).sum(axis=1)
    rows = ((n[:, None] @ dah)[:, 0] + (ah[:, None] @ dn)[:, 0]) / np.maximum(np.sqrt(np.maximum(1.0 - x * x, 0.0)),
                                                                             1e-9)[:, None]
    return [math.asin(v) for v in np.clip(x, -1.0, 1.0).tolist()], rows


def ranges_task(figure: Figure, bones: Any, up: ArrayLike, bounds: Mapping[str, float]) -> Ranges | None:
    """The :class:`Ranges` task of a humanoid (``bones``: its :class:`~animkit.model.humanoid.HumanoidMap`) with
    ``bounds`` (name → degrees; absolute: a person's ranges from standing, whatever the start): the pelvis's up
    and right (from the left to the right upper arm, or upper leg, laid level) in the hips' frame; the knees where
    the legs have knees, feet and toes. None without hips or any bound."""
    hips = bones.get("hips")
    if hips is None or not bounds:
        return None
    unknown = set(bounds) - set(RANGE_DEGREES)
    if unknown:
        raise IKError(unknown_name("range", sorted(unknown)[0], list(RANGE_DEGREES)))
    u = np.asarray(up, dtype=float)
    u = u / np.linalg.norm(u)
    rest = figure_state(figure, figure.rest_pose())
    names = figure.compiled.node_names
    right = None
    for a, b in (("upper_arm_l", "upper_arm_r"), ("upper_leg_l", "upper_leg_r")):
        na, nb = bones.get(a), bones.get(b)
        if na is not None and nb is not None:
            v = rest.p[names.index(nb)] - rest.p[names.index(na)]
            v = v - u * (v @ u)
            if np.linalg.norm(v) > 1e-9:
                right = v / np.linalg.norm(v)
                break
    if right is None:
        return None
    Rh = rest.R[names.index(hips)]
    arms = (bones.get("upper_arm_l"), bones.get("upper_arm_r"))
    legs = []
    for side, other in (("l", "r"), ("r", "l")):
        leg = (bones.get(f"lower_leg_{side}"), bones.get(f"foot_{side}"), bones.get(f"toe_{side}"),
               bones.get(f"foot_{other}"))
        if all(x is not None for x in leg):
            legs.append(leg)
    return Ranges(hips=hips, arms=arms if None not in arms else None, pelvis=(tuple(Rh.T @ u), tuple(Rh.T @ right)),
                  legs=tuple(legs), bounds_deg=dict(bounds), up=tuple(u))
