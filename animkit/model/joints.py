"""Joints: the articulation ``A`` of an arc, built from degrees of freedom.

A DOF is *revolute* (A = R_a(θ), a rotation by θ about the unit axis a),
*prismatic* (A = L(θ a), a translation by θ along a) or *scale* (A = I + (θ − 1) a aᵀ, a scale by
the factor θ along a; rest 1; glTF's animated scale). A joint is an ordered
sequence of DOFs and its articulation is their product, in order:

    A(θ₁ … θ_k) = E₁(θ₁) E₂(θ₂) … E_k(θ_k)

so a ball joint of intrinsic order ``"zyx"`` is A = R_z(θ_rz) R_y(θ_ry) R_x(θ_rx),
and a BVH joint's channels map one to one onto DOFs in the file's order.

DOF names are ``<joint>.<suffix>``: ``rx``/``ry``/``rz`` for a rotation about a
coordinate axis, ``tx``/``ty``/``tz`` for a translation along one, ``sx``/``sy``/``sz`` for a scale
along one, ``r``/``t``/``s``
(or ``r0``, ``r1``...) for any other axis. A single-DOF joint may instead carry
its joint's bare name (URDF joints do).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import AnimkitError, SceneError, unknown_name
from animkit.model.transforms import (
    axis_vector,
    drotation_about_axis,
    euler_intrinsic_from_matrix,
    identity,
    matrix_from_euler_intrinsic,
    matrix_from_swing_twist,
    rotation_about_axis,
    swing_twist_from_matrix,
    translation,
)

__all__ = [
    "dof_suffixes",
    "DofKind",
    "DOF_KINDS",
    "JointKind",
    "JOINT_KINDS",
    "Dof",
    "Joint",
    "Cone",
    "euler_angles_near",
    "project_euler_to_cone",
    "fixed",
    "hinge",
    "slider",
    "universal",
    "ball",
    "planar",
    "free",
    "custom",
    "make_joint",
]

DofKind = Literal["revolute", "prismatic", "scale"]
DOF_KINDS: tuple[str, ...] = get_args(DofKind)
JointKind = Literal["fixed", "hinge", "slider", "universal", "ball", "planar", "free", "custom"]
JOINT_KINDS: tuple[str, ...] = get_args(JointKind)

Limits = tuple[float, float]


def _unit(letter: str) -> NDArray[np.float64]:
    a = np.zeros(3)
    a["xyz".index(letter)] = 1.0
    a.setflags(write=False)
    return a


#: the three positive coordinate axes as shared read-only arrays: a DOF given one skips re-normalising it
_UNIT: Final[dict[str, NDArray[np.float64]]] = {c: _unit(c) for c in "xyz"}
_UNIT_IDS: Final[dict[int, str]] = {id(a): c for c, a in _UNIT.items()}


def _axis_letter(axis: NDArray[np.float64]) -> str | None:
    """"x", "y" or "z" when the unit ``axis`` is that positive coordinate axis (to 1e-12), else None."""
    x, y, z = axis.tolist()
    for letter, (a, b, c) in (("x", (x, y, z)), ("y", (y, z, x)), ("z", (z, x, y))):
        if abs(a - 1.0) <= 1e-12 and abs(b) <= 1e-12 and abs(c) <= 1e-12:
            return letter
    return None


@dataclass(frozen=True)
class Dof:
    """One degree of freedom: E(θ) = R_a(θ) (revolute), L(θ a) (prismatic) or I + (θ − 1) a aᵀ (scale);
    θ ∈ [lower, upper]."""

    name: str
    kind: DofKind
    axis: NDArray[np.float64]
    lower: float = -math.inf
    upper: float = math.inf
    rest: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in DOF_KINDS:
            raise SceneError(unknown_name("DOF kind", str(self.kind), DOF_KINDS))
        letter = _UNIT_IDS.get(id(self.axis))
        if letter is not None:  # one of the shared unit axes: already unit and read-only
            self.__dict__["axis_letter"] = letter
        else:
            try:
                axis = axis_vector(self.axis)
            except AnimkitError as exc:
                raise SceneError(f"DOF {self.name!r}: {exc}") from None
            object.__setattr__(self, "axis", axis)
            axis.setflags(write=False)
        lo, hi, rest = float(self.lower), float(self.upper), float(self.rest)
        if math.isnan(lo) or math.isnan(hi) or not math.isfinite(rest):
            raise SceneError(f"DOF {self.name!r}: limits and rest must be numbers, got "
                             f"({self.lower}, {self.upper}) rest {self.rest}")
        if lo > hi:
            raise SceneError(f"DOF {self.name!r}: limits min > max ({lo:g} > {hi:g}); expected min <= max")
        if not lo <= rest <= hi:
            raise SceneError(f"DOF {self.name!r}: rest value {rest:g} lies outside its limits [{lo:g}, {hi:g}]")
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        object.__setattr__(self, "rest", rest)

    @functools.cached_property
    def axis_letter(self) -> str | None:
        """``"x"``, ``"y"`` or ``"z"`` when the axis is a positive coordinate axis, else None (computed once)."""
        return _axis_letter(self.axis)

    @property
    def revolute(self) -> bool:
        return self.kind == "revolute"

    @property
    def scale(self) -> bool:
        return self.kind == "scale"

    def matrix(self, value: ArrayLike) -> NDArray[np.float64]:
        """E(θ): R_a(θ) for a revolute DOF, L(θ a) for a prismatic one, I + (θ − 1) a aᵀ for a scale one;
        shape ``(..., 4, 4)``."""
        v = np.asarray(value, dtype=float)
        if self.kind == "revolute":
            return rotation_about_axis(self.axis, v)
        if self.kind == "scale":
            out = identity(v.shape)
            out[..., :3, :3] += (v[..., None, None] - 1.0) * np.outer(self.axis, self.axis)
            return out
        return translation(v[..., None] * self.axis)

    def dmatrix(self, value: ArrayLike) -> NDArray[np.float64]:
        """dE/dθ: [a]_× R_a(θ) for revolute, the pure direction [[0, a], [0, 0]] for prismatic, a aᵀ for scale."""
        v = np.asarray(value, dtype=float)
        if self.kind == "revolute":
            return drotation_about_axis(self.axis, v)
        out = np.zeros(v.shape + (4, 4))
        if self.kind == "scale":
            out[..., :3, :3] = np.outer(self.axis, self.axis)
            return out
        out[..., :3, 3] = self.axis
        return out


@dataclass(frozen=True)
class Cone:
    """A ball joint's swing–twist limit. With R = A(θ) A_refᵀ (the turn from the reference pose, in the joint's
    frame; A_ref = ``reference``, else the joint's rest rotation A(θ_rest)) split as R = exp([s]_×) R_t(τ) about
    the twist axis t (the child bone's direction at the reference):

        |s| = ∠(t, R t) ≤ swing        (a circular cone of half-angle ``swing`` about t)
        τ ∈ [twist[0], twist[1]]       (the twist about the bone)

    With ``front`` (a direction f ⊥ t in the joint's frame) and ``reach`` = (r_f, r_b, r_s, r_n) the cone is an
    ellipse per quadrant instead: the swung tip moves along u = s × t, u_f = u·f̂, u_s = u·(t × f̂), and

        (u_f / r)² + (u_s / r')² ≤ 1,   r = r_f where u_f ≥ 0 else r_b,   r' = r_s where u_s ≥ 0 else r_n

    (how far the bone may swing toward f, away from it, toward t × f and away from it: flexion, extension and the
    two sideways bends of an anatomical range); ``swing`` is then the largest of the four.

    ``axis`` is t in the joint's frame (before A); None takes the direction of the joint's child at rest, filled
    in when a figure is read (:func:`cone_axis_from_child`). Radians."""

    swing: float
    twist: tuple[float, float] = (-math.pi, math.pi)
    axis: tuple[float, float, float] | None = None
    front: tuple[float, float, float] | None = None
    reach: tuple[float, float, float, float] | None = None
    reference: tuple[tuple[float, float, float], ...] | None = None

    def __post_init__(self) -> None:
        if self.reach is not None:
            r = tuple(float(x) for x in self.reach)
            if len(r) != 4 or not all(math.isfinite(x) and 0.0 <= x <= math.pi for x in r):
                raise SceneError(f"a cone's reach must be four angles in [0, 180] degrees (toward front, back, side, "
                                 f"other side), got {self.reach!r}")
            if self.front is None:
                raise SceneError("a cone's reach needs its front direction (front=...)")
            object.__setattr__(self, "reach", r)
            object.__setattr__(self, "swing", max(r))
        sw = float(self.swing)
        if not (math.isfinite(sw) and 0.0 <= sw <= math.pi):
            raise SceneError(f"a cone's swing half-angle must lie in [0, 180] degrees, got {math.degrees(sw):g}")
        lo, hi = (float(x) for x in self.twist)
        if not (-math.pi <= lo <= hi <= math.pi):
            raise SceneError(f"a cone's twist range must satisfy -180 <= min <= max <= 180 degrees, got "
                             f"[{math.degrees(lo):g}, {math.degrees(hi):g}]")
        object.__setattr__(self, "swing", sw)
        object.__setattr__(self, "twist", (lo, hi))
        if self.axis is not None:
            try:
                t = axis_vector(self.axis)
            except AnimkitError as exc:
                raise SceneError(f"a cone's axis: {exc}") from None
            object.__setattr__(self, "axis", (float(t[0]), float(t[1]), float(t[2])))
        if self.front is not None:
            if self.reach is None:
                raise SceneError("a cone's front direction needs its reach (four angles)")
            f = np.asarray(self.front, dtype=float)
            if self.axis is not None:
                f = f - np.asarray(self.axis) * float(np.asarray(self.axis) @ f)
            n = float(np.linalg.norm(f))
            if not n > 1e-9:
                raise SceneError(f"a cone's front direction must be a non-zero vector off its axis, got {self.front!r}")
            object.__setattr__(self, "front", tuple(float(x) for x in f / n))
        if self.reference is not None:
            M = np.asarray(self.reference, dtype=float)
            if M.shape != (3, 3) or not np.allclose(M @ M.T, np.eye(3), atol=1e-6) or np.linalg.det(M) < 0:
                raise SceneError("a cone's reference must be a 3x3 rotation")
            object.__setattr__(self, "reference", tuple(tuple(float(x) for x in row) for row in M))

    def _t(self) -> NDArray[np.float64]:
        if self.axis is None:
            raise SceneError("this cone's twist axis is not set yet (it is the joint's child direction, filled in "
                             "when the figure is read): give Cone(axis=...)")
        return np.asarray(self.axis)

    def _swing_excess(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        """ρ ≥ 0 per swing s (..., 3): inside the limit iff ρ ≤ 1; s / ρ lies on its edge (|s| / swing when circular,
        the quadrant's ellipse when ``reach`` is given)."""
        if self.reach is None or self.front is None:
            return np.linalg.norm(s, axis=-1) / max(self.swing, 1e-12)
        t = self._t()
        f = np.asarray(self.front)
        u = np.cross(s, t)
        uf, us = u @ f, u @ np.cross(t, f)
        rf, rb, rs, rn = (max(x, 1e-9) for x in self.reach)
        return np.hypot(uf / np.where(uf >= 0, rf, rb), us / np.where(us >= 0, rs, rn))

    def project(self, R: ArrayLike) -> NDArray[np.float64]:
        """The nearest turn inside the limit (radially, on the swing): R' = exp([s′]_×) R_t(τ′), s′ = s / max(1, ρ)
        (ρ: :meth:`_swing_excess`; circular: the swung direction pulled along its great circle onto the cone),
        τ′ = τ clamped into the twist range. R' = R inside."""
        t = self._t()
        s, tau = swing_twist_from_matrix(R, t)
        rho = self._swing_excess(s)[..., None]
        s2 = s / np.maximum(1.0, rho)
        tau2 = np.clip(tau, self.twist[0], self.twist[1])
        inside = ((rho[..., 0] <= 1.0) & (tau == tau2))[..., None, None]
        return np.where(inside, np.asarray(R, dtype=float)[..., :3, :3], matrix_from_swing_twist(s2, tau2, t))

    def contains(self, R: ArrayLike, tol: float = 1e-9) -> NDArray[np.bool_]:
        """The swing within its limit (+ tol radians) and τ ∈ [twist] ± tol."""
        s, tau = swing_twist_from_matrix(R, self._t())
        n = np.linalg.norm(s, axis=-1)
        edge = n / np.maximum(self._swing_excess(s), 1e-300)  # the limit's swing in s's direction
        return np.asarray((n <= edge + tol) & (tau >= self.twist[0] - tol) & (tau <= self.twist[1] + tol))


def cone_axis_from_child(joint: Joint, child_offset: ArrayLike) -> tuple[float, float, float]:
    """t = A(θ_rest) o / |o|: the rest direction, in the joint's frame, of the child bone whose origin sits at
    offset o in the joint's node."""
    o = np.asarray(child_offset, dtype=float)
    n = float(np.linalg.norm(o))
    if not n > 1e-12:
        raise SceneError(f"joint {joint.name!r}: a cone needs a child bone of non-zero length to define its "
                         f"twist axis, or an explicit cone_axis")
    t = joint.matrix(joint.rest())[:3, :3] @ (o / n)
    return (float(t[0]), float(t[1]), float(t[2]))


@dataclass(frozen=True)
class Joint:
    """A joint: A(θ) = E₁(θ₁) … E_k(θ_k) over its DOFs, in order. ``order`` names a ball joint's Euler order;
    ``cone`` is a ball joint's swing–twist limit (:class:`Cone`, instead of per-axis limits)."""

    name: str
    kind: JointKind
    dofs: tuple[Dof, ...] = ()
    order: str | None = field(default=None)
    cone: Cone | None = field(default=None)

    def __post_init__(self) -> None:
        if self.kind not in JOINT_KINDS:
            raise SceneError(unknown_name("joint kind", str(self.kind), JOINT_KINDS))
        names = [d.name for d in self.dofs]
        if len(set(names)) != len(names):
            raise SceneError(f"joint {self.name!r}: DOF names repeat: {names}")
        if self.cone is not None:
            if self.kind != "ball":
                raise SceneError(f"joint {self.name!r}: only a ball joint takes a cone, this one is a {self.kind}")
            boxed = [d.name for d in self.dofs if math.isfinite(d.lower) or math.isfinite(d.upper)]
            if boxed:
                raise SceneError(f"joint {self.name!r}: a ball joint takes per-axis limits or a cone, not both "
                                 f"(limits on {boxed})")

    def rest_rotation(self) -> NDArray[np.float64]:
        """A(θ_rest), 3×3: the turn a cone is measured from (found once: the joint is a frozen value; a copy)."""
        A = self.__dict__.get("_rest_rotation")
        if A is None:
            A = self.__dict__["_rest_rotation"] = self.matrix(self.rest())[:3, :3].copy()
        return np.array(A)

    @property
    def dof_count(self) -> int:
        return len(self.dofs)

    def matrix(self, values: ArrayLike = ()) -> NDArray[np.float64]:
        """A(θ) = Π_i E_i(θ_i); ``values`` has shape ``(..., k)``; a fixed joint gives I."""
        v = np.asarray(values, dtype=float)
        if not self.dofs:
            return identity(v.shape[:-1] if v.ndim else ())
        A = self.dofs[0].matrix(v[..., 0])
        for i, dof in enumerate(self.dofs[1:], start=1):
            A = A @ dof.matrix(v[..., i])
        return A

    def rest(self) -> NDArray[np.float64]:
        return np.array([d.rest for d in self.dofs], dtype=float)

    def angles_from_matrix(self, A: ArrayLike, near: ArrayLike) -> NDArray[np.float64]:
        """A ball joint's angles (..., 3) with A(θ) = A (3×3): :func:`euler_angles_near` in its order."""
        if self.order is None:
            raise SceneError(f"joint {self.name!r} is a {self.kind} joint, not a ball joint with an Euler order")
        return euler_angles_near(A, near, self.order)

    def project_to_cone(self, values: ArrayLike) -> NDArray[np.float64]:
        """Ball angles (..., 3) whose A lies in the joint's cone (:func:`project_euler_to_cone`); unchanged inside
        the cone (or without one)."""
        v = np.asarray(values, dtype=float)
        if self.cone is None or self.order is None:
            return v
        return project_euler_to_cone(v, self.order, self.cone, self.rest_rotation())


def euler_angles_near(A: ArrayLike, near: ArrayLike, order: str) -> NDArray[np.float64]:
    """Intrinsic Euler angles (..., 3) in ``order`` with R(θ) = A (3×3): of the two branches (α, β, γ) and
    (α + π, π − β, γ + π) (proper orders: −β) the one nearest ``near``, each angle moved by whole turns to lie
    nearest its ``near`` value."""
    v = np.asarray(near, dtype=float)
    e1 = euler_intrinsic_from_matrix(A, order)
    e2 = e1 + np.array([math.pi, 0.0, math.pi])
    e2[..., 1] = math.pi - e1[..., 1] if order[0] != order[2] else -e1[..., 1]
    best, dist = v, np.full(v.shape[:-1], np.inf)
    for e in (e1, e2):
        e = e + 2 * math.pi * np.round((v - e) / (2 * math.pi))
        dd = np.sum((e - v) ** 2, axis=-1)
        best = np.where((dd < dist)[..., None], e, best)
        dist = np.minimum(dist, dd)
    return best


def project_euler_to_cone(values: ArrayLike, order: str, cone: Cone, rest: ArrayLike) -> NDArray[np.float64]:
    """Euler angles (..., 3) in ``order`` whose rotation A lies in ``cone``: A′ = P_cone(A Aᵣᵀ) Aᵣ
    (:meth:`Cone.project`) with Aᵣ the cone's ``reference`` (else ``rest``, the joint's rest rotation), re-expressed
    in ``order`` nearest the given angles; unchanged inside the cone."""
    v = np.asarray(values, dtype=float)
    Ar = np.asarray(rest, dtype=float)[:3, :3] if cone.reference is None else np.asarray(cone.reference)
    R = matrix_from_euler_intrinsic(v, order) @ Ar.T
    Rp = cone.project(R)
    inside = np.all(Rp == R, axis=(-2, -1))
    return np.where(inside[..., None], v, euler_angles_near(Rp @ Ar, v, order))


# --- factories -----------------------------------------------------------------------------------------

LimitSpec = Limits | Sequence[Limits] | dict[str, Limits] | None


def _suffix(kind: DofKind, axis: NDArray[np.float64], taken: set[str], next_free: dict[str, int]) -> str:
    """``r``/``t``/``s`` + the axis letter, or the first free ``r0``, ``r1``… (``next_free`` remembers where to
    look, so n clashing channels take O(n), not O(n²))."""
    base = {"revolute": "r", "prismatic": "t", "scale": "s"}[kind]
    letter = _UNIT_IDS.get(id(axis)) or _axis_letter(axis)
    name = base + letter if letter else base
    if name in taken:
        i = next_free.get(base, 0)
        while f"{base}{i}" in taken:
            i += 1
        next_free[base] = i + 1
        name = f"{base}{i}"
    taken.add(name)
    return name


@functools.lru_cache(maxsize=256)
def dof_suffixes(channels: tuple[tuple[DofKind, str], ...]) -> tuple[str, ...]:
    """The suffixes :func:`custom` gives DOFs along coordinate axes ("x", "y", "z"), in order: ``rx``, ``tz``…,
    a clash taking the first free ``r0``, ``r1``… (a loader that names DOFs before building joints uses this)."""
    taken: set[str] = set()
    next_free: dict[str, int] = {}
    return tuple(_suffix(kind, _UNIT[a], taken, next_free) for kind, a in channels)


def _per_dof(spec: LimitSpec | Sequence[float] | dict[str, float] | float | None, suffixes: list[str],
             what: str, joint: str) -> list:
    """Spread a limits/rest spec over DOFs: one value for all, a list in DOF order, or a table by suffix."""
    n = len(suffixes)
    if spec is None:
        return [None] * n
    if isinstance(spec, dict):
        unknown = [k for k in spec if k not in suffixes]
        if unknown:
            raise SceneError(f"joint {joint!r}: {unknown_name(what + ' key', unknown[0], suffixes)}")
        return [spec.get(s) for s in suffixes]
    if what == "limits":
        seq = list(spec)  # type: ignore[arg-type]
        if len(seq) == 2 and all(isinstance(x, (int, float)) for x in seq):
            return [tuple(seq)] * n
        if len(seq) != n:
            raise SceneError(f"joint {joint!r}: expected {n} limit pairs (one per DOF {suffixes}), got {len(seq)}")
        return seq
    if isinstance(spec, (int, float)):
        return [float(spec)] * n
    seq = list(spec)
    if len(seq) != n:
        raise SceneError(f"joint {joint!r}: expected {n} rest values (one per DOF {suffixes}), got {len(seq)}")
    return seq


def custom(name: str, channels: Sequence[tuple[DofKind, str | ArrayLike]], *, limits: LimitSpec = None,
           rest: Sequence[float] | dict[str, float] | float | None = None, kind: JointKind = "custom",
           order: str | None = None, dof_names: Sequence[str] | None = None) -> Joint:
    """A joint from ``(kind, axis)`` channels in order: A = Π E_i. Limits/rest in radians (metres)."""
    suffixes: list[str] = []
    taken: set[str] = set()
    next_free: dict[str, int] = {}
    vecs = []
    for dkind, a in channels:
        if isinstance(a, str) and a in _UNIT:
            vec = _UNIT[a]
        else:
            try:
                vec = axis_vector(a)
            except AnimkitError as exc:
                raise SceneError(f"joint {name!r}: {exc}") from None
        vecs.append(vec)
        suffixes.append(_suffix(dkind, vec, taken, next_free))
    lims = _per_dof(limits, suffixes, "limits", name)
    rests = _per_dof(rest, suffixes, "rest", name)
    if dof_names is not None and len(dof_names) != len(suffixes):
        raise SceneError(f"joint {name!r}: {len(dof_names)} DOF names for {len(suffixes)} DOFs")
    dofs = []
    for i, ((dkind, _), vec, sfx, lim, r) in enumerate(zip(channels, vecs, suffixes, lims, rests, strict=True)):
        lo, hi = (-math.inf, math.inf) if lim is None else (float(lim[0]), float(lim[1]))
        neutral = 1.0 if dkind == "scale" else 0.0
        rv = neutral if r is None else float(r)
        if r is None and not lo <= neutral <= hi:
            rv = min(max(neutral, lo), hi)
        dname = dof_names[i] if dof_names is not None else f"{name}.{sfx}"
        dofs.append(Dof(dname, dkind, vec, lo, hi, rv))
    return Joint(name, kind, tuple(dofs), order)


def fixed(name: str) -> Joint:
    """A = I: no DOF."""
    return Joint(name, "fixed", ())


def hinge(name: str, axis: str | ArrayLike = "z", *, limits: Limits | None = None, rest: float | None = None,
          dof_name: str | None = None) -> Joint:
    """A = R_a(θ): one revolute DOF about ``axis`` (rest: 0 clamped into the limits unless given)."""
    return custom(name, [("revolute", axis)], limits=limits, rest=None if rest is None else [rest], kind="hinge",
                  dof_names=None if dof_name is None else [dof_name])


def slider(name: str, axis: str | ArrayLike = "x", *, limits: Limits | None = None, rest: float | None = None,
           dof_name: str | None = None) -> Joint:
    """A = L(θ a): one prismatic DOF along ``axis`` (rest: 0 clamped into the limits unless given)."""
    return custom(name, [("prismatic", axis)], limits=limits, rest=None if rest is None else [rest], kind="slider",
                  dof_names=None if dof_name is None else [dof_name])


def universal(name: str, axes: tuple[str | ArrayLike, str | ArrayLike] = ("x", "y"), *,
              limits: LimitSpec = None, rest: Sequence[float] | dict[str, float] | None = None) -> Joint:
    """A = R_a(θ₁) R_b(θ₂): two revolute DOFs (a Hooke joint)."""
    return custom(name, [("revolute", axes[0]), ("revolute", axes[1])], limits=limits, rest=rest,
                  kind="universal")


def ball(name: str, order: str = "zyx", *, limits: LimitSpec = None,
         rest: Sequence[float] | dict[str, float] | None = None, cone: Cone | None = None) -> Joint:
    """Ball-and-socket: A = R_a(θ₁) R_b(θ₂) R_c(θ₃) for intrinsic Euler ``order`` "abc"; limited per axis
    (``limits``) or by a swing–twist ``cone``."""
    o = order.lower()
    if len(o) != 3 or any(c not in "xyz" for c in o) or len(set(o)) != 3:
        raise SceneError(f"joint {name!r}: ball joint order must be a permutation of 'xyz' "
                         f"(e.g. 'zyx', 'zxy'), got {order!r}")
    j = custom(name, [("revolute", c) for c in o], limits=limits, rest=rest, kind="ball", order=o)
    return j if cone is None else Joint(j.name, j.kind, j.dofs, j.order, cone)


def planar(name: str, normal: str = "z", *, limits: LimitSpec = None,
           rest: Sequence[float] | dict[str, float] | None = None) -> Joint:
    """Planar: A = L(θ₁ u) L(θ₂ v) R_n(θ₃) — two slides in the plane ⊥ ``normal`` and a turn about it."""
    n = normal.lower()
    if n not in ("x", "y", "z"):
        raise SceneError(f"joint {name!r}: {unknown_name('plane normal', normal, ['x', 'y', 'z'])}")
    u, v = [c for c in "xyz" if c != n]
    return custom(name, [("prismatic", u), ("prismatic", v), ("revolute", n)], limits=limits, rest=rest,
                  kind="planar")


def free(name: str, order: str = "zyx", *, limits: LimitSpec = None,
         rest: Sequence[float] | dict[str, float] | None = None) -> Joint:
    """Free (root): A = L(x, y, z) R_a R_b R_c — three slides then a ball of intrinsic ``order``."""
    o = order.lower()
    if len(o) != 3 or any(c not in "xyz" for c in o) or len(set(o)) != 3:
        raise SceneError(f"joint {name!r}: free joint order must be a permutation of 'xyz', got {order!r}")
    chans: list[tuple[DofKind, str]] = [("prismatic", "x"), ("prismatic", "y"), ("prismatic", "z")]
    chans += [("revolute", c) for c in o]
    return custom(name, chans, limits=limits, rest=rest, kind="free", order=o)


def make_joint(kind: str, name: str, **options: object) -> Joint:
    """Build a joint of ``kind`` by name (what scene files call): unknown kinds list the valid ones."""
    makers: dict[str, Callable[..., Joint]] = {"fixed": fixed, "hinge": hinge, "slider": slider,
                                               "universal": universal, "ball": ball, "planar": planar, "free": free,
                                               "custom": custom}
    if kind not in makers:
        raise SceneError(unknown_name("joint kind", kind, list(makers)))
    try:
        return makers[kind](name, **options)
    except TypeError as exc:
        raise SceneError(f"joint {name!r} of kind {kind!r}: {exc}") from None
