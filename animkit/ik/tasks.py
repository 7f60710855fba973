"""Task objects (as mink's): each reads a :class:`Configuration` (one pose and its world frames) and gives its error
e(θ) (zero when the task is met: the current value minus the wanted one) and its Jacobian ∂e/∂θ (m, D) over every
DOF of the figure; a problem keeps the columns of its movable set and weighs each task's rows by √weight:

    Reach      e = [p − t, log(R R_tᵀ)^∨]     ∂e = [∂p, J_l⁻¹(e_o) ∂ω]     (position rows; orientation with a pose)
    Gaze       e = f − d                        (the head's forward axis against the direction to the target)
    Plant      e = [p − p₀, log(R R₀ᵀ)^∨]       (a node keeps a frame: a planted foot)
    Balance    e = [max(0, m₀ − m(B c))]        (the centre of mass at least m₀ inside the support polygon)
    Posture    e = θ_S − θc_S                   (a comfort pose on the DOFs S)
    Spread     e = r_j − mean(r) per group      (the spine's bend shared; r_j a turn from rest; animkit.ik.spread)
    Cost       e = [√(2 c(θ))], ∂e = ∇cᵀ / e    (any cost with its gradient, e.g. a pose prior: ½e² = c)

J_l⁻¹(φ) = I − ½[φ]× + (1/|φ|² − (1 + cos|φ|)/(2|φ| sin|φ|)) [φ]×²: SO(3)'s inverse left Jacobian (derivations.md).

What the prioritised (natural) solver reads of a task, as mink's tasks carry their gain and damping: a level task's
:meth:`Task.velocity` (J, V = −e shortened to ``step_limit``, the level's damping λ = ``damping``) and a null-space
task's :meth:`Task.gradient` ∇(½ w ‖e‖²) = w Jᵀe. A new task is one class (e.g. :class:`animkit.ik.hang.Hang`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import AnimkitError, IKError
from animkit.ik.body import (
    DENSITY,
    Body,
    FigureState,
    body_from_figure,
    centres,
    com_jacobian,
    figure_state,
    gaze_angle,
    gaze_error,
    gaze_jacobian,
    ground_basis,
    head_forward,
    margin_gradient,
    point_jacobian,
    polygon_margin,
    smooth_margin,
    support_at,
    support_from_feet,
    support_polygon,
)
from animkit.ik.head_aim import pitch_shared_aim, shift_shared_aim
from animkit.model.figure import Figure
from animkit.model.transforms import IDENTITY3, rotation_vector_from_matrix, vector_norm

__all__ = ["Body", "body_from_figure", "FigureState", "figure_state", "point_jacobian", "com_jacobian", "centres",
           "gaze_error", "gaze_jacobian", "gaze_angle", "support_polygon", "polygon_margin", "ground_basis",
           "DENSITY", "Configuration", "configuration", "Task", "Reach", "Gaze", "Plant", "Balance", "Posture",
           "Cost", "left_jacobian_inverse", "margin_gradient", "support_from_feet",
           "support_at", "head_forward"]

Array = NDArray[np.float64]
BALANCE_HOLD = 0.005  # Balance.velocity: a centre of mass this far inside the margin is held, not released
BALANCE_BAND = 0.25  # Balance.bounds: a centre of mass this far inside the margin or nearer gives its row
BALANCE_SMOOTH = 0.005  # Balance.bounds: τ of the smooth margin (m): at most τ ln K below the plain one (K edges)


def left_jacobian_inverse(phi: Array) -> Array:
    """J_l⁻¹(φ) = I − ½[φ]× + (1/θ² − (1 + cos θ)/(2θ sin θ)) [φ]×², θ = |φ| (→ 1/12 at θ = 0)."""
    t = vector_norm(phi)
    K = np.array([[0.0, -phi[2], phi[1]], [phi[2], 0.0, -phi[0]], [-phi[1], phi[0], 0.0]])
    c = 1.0 / 12.0 + t * t / 720.0 if t < 1e-4 else 1.0 / (t * t) - (1.0 + math.cos(t)) / (2.0 * t * math.sin(t))
    return IDENTITY3 - 0.5 * K + c * (K @ K)


@dataclass(frozen=True, eq=False)
class Configuration:
    """One pose of a figure with what every task reads: its world frames and the figure's segment masses."""

    figure: Figure
    body: Body
    pose: Array
    state: FigureState
    memo: dict[object, tuple[Array, Array]] = field(default_factory=dict, repr=False)  # task → its (e, J) here
    residuals: dict[object, Array] = field(default_factory=dict, repr=False)  # task → its e alone (a goal's)

    def node(self, name: str) -> int:
        """The index (figure.compiled order) of a node or rig effector, checked."""
        try:
            return self.figure.compiled.node_names.index(self.figure.effector(name))
        except AnimkitError as exc:
            raise IKError(str(exc)) from None

    def com(self) -> tuple[Array, Array]:
        """The centre of mass (3,) and ∂c/∂θ (3, D) (:func:`com_jacobian`), found once per configuration (shared)."""
        if "com" not in self.memo:
            self.memo["com"] = com_jacobian(self.figure, self.body, self.state)
        return self.memo["com"]

    def angular_jacobian(self, node: int) -> Array:
        """∂ω/∂θ (3, D) of a node's world frame: a_j for the revolute DOFs above it, zero elsewhere."""
        rev = self.figure.compiled.dof_revolute
        return np.ascontiguousarray((self.state.a * (self.body.moves[node] & rev)[:, None]).T)


def configuration(figure: Figure, pose: ArrayLike, body: Body | None = None) -> Configuration:
    """The :class:`Configuration` of one pose (D,) (``body``: reuse the figure's masses)."""
    p = np.asarray(pose, dtype=float)
    return Configuration(figure, body_from_figure(figure) if body is None else body, p, figure_state(figure, p))


def _frame_residual(c: Configuration, node: int, position: Array, rotation: Array | None) -> Array:
    """e = [p − t, log(R R_tᵀ)^∨] alone (orientation rows only with a rotation)."""
    ep = c.state.p[node] - position
    if rotation is None:
        return ep
    return np.concatenate([ep, rotation_vector_from_matrix(c.state.R[node] @ rotation.T)])


def _frame_error(c: Configuration, node: int, position: Array, rotation: Array | None, e: Array | None = None
                 ) -> tuple[Array, Array]:
    """e = [p − t, log(R R_tᵀ)^∨] and ∂e/∂θ = [∂p, J_l⁻¹(e_o) ∂ω] (orientation rows with a rotation; ``e``: given)."""
    s = c.state
    if e is None:
        e = _frame_residual(c, node, position, rotation)
    Jp = point_jacobian(c.figure, c.body, s, node, s.p[node])
    if rotation is None:
        return e, Jp
    Jo = left_jacobian_inverse(e[3:]) @ c.angular_jacobian(node)
    return e, np.vstack([Jp, Jo])


def _goal_residual(task: Task, c: Configuration, node: int, position: Array, rotation: Array | None) -> Array:
    """A frame task's e at ``c`` (:func:`_frame_residual`) once per configuration, kept for :func:`_frame_error`."""
    got = c.memo.get(task)
    if got is not None:
        return got[0]
    e = c.residuals.get(task)
    if e is None:
        e = c.residuals[task] = _frame_residual(c, node, position, rotation)
    return e


def _pose_target(value: ArrayLike | None, owner: str, check: bool = True) -> tuple[Array | None, Array | None]:
    """A target as (position (3,), rotation (3, 3) or None); (None, None) for none given; ``check``: that it is
    finite and rigid (the tasks check theirs when made)."""
    if value is None:
        return None, None
    t = np.asarray(value, dtype=float)
    if not check:
        return (t, None) if t.shape == (3,) else (t[:3, 3], t[:3, :3])
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
    inequality: ClassVar[bool] = False  # held by :meth:`bounds` (J Δθ ≤ room) in the prioritised solver
    goal: ClassVar[bool] = False  # its tolerance decides convergence (:meth:`goal_error`); the others are preferences
    weight: float = 1.0
    priority: int = 1
    damping: float = 0.0  # λ of its level in the prioritised solver (mink's lm_damping)
    step_limit: float = math.inf  # the most the prioritised solver asks of its error in one iteration (‖V‖)

    def __post_init__(self) -> None:
        for name in ("weight", "damping", "step_limit"):
            w = getattr(self, name)
            if not isinstance(w, (int, float)) or math.isnan(w) or w < 0 or (name == "weight" and math.isinf(w)):
                raise IKError(f"{type(self).__name__}: {name} must be a finite number >= 0, got {w!r}")

    @property
    def name(self) -> str:
        """The task's name in a problem (``kind`` and the node it acts on)."""
        return self.kind

    def error(self, c: Configuration) -> Array:
        """e(θ) (m,)."""
        return self.computed(c)[0]

    def jacobian(self, c: Configuration) -> Array:
        """∂e/∂θ (m, D)."""
        return self.computed(c)[1]

    def computed(self, c: Configuration) -> tuple[Array, Array]:
        """:meth:`compute` once per configuration (a frozen task's e and J at ``c``, shared: not to be written)."""
        if self not in c.memo:
            c.memo[self] = self.compute(c)
        return c.memo[self]

    def goal_error(self, c: Configuration) -> tuple[float, float]:
        """A goal's (position, orientation) error held to the solver's tolerances: (‖e[:3]‖, ‖e[3:]‖)."""
        e = self.error(c)
        return vector_norm(e[:3]), vector_norm(e[3:]) if len(e) > 3 else 0.0

    @abstractmethod
    def compute(self, c: Configuration) -> tuple[Array, Array]:
        """e (m,) and ∂e/∂θ (m, D) together (one FK's worth of work)."""

    def row_scale(self, m: int) -> Array:
        """√weight for each of the task's m rows (Reach scales its orientation rows by its orientation weight)."""
        return np.full(m, math.sqrt(self.weight))

    def velocity(self, c: Configuration) -> tuple[Array, Array, float]:
        """What the prioritised solver asks of this task in one iteration: J, V = −e shortened to ``step_limit``
        (both rows scaled by √weight) and the level's damping λ."""
        e, J = self.computed(c)
        n = vector_norm(e)
        V = -e * min(1.0, self.step_limit / n) if n > 0 else -e
        s = self.row_scale(len(e))
        return J * s[:, None], V * s, self.damping

    def bounds(self, c: Configuration) -> tuple[Array, Array] | None:
        """An inequality task's rows J (m, D) and room (m,): the prioritised solver keeps J Δθ ≤ room (an active
        set above its levels, :mod:`animkit.ik.ranges`); None for an equality task (the default)."""
        return None

    def gradient(self, c: Configuration) -> Array:
        """∇(½ w ‖e‖²) = w Jᵀe (D,): a null-space task's pull in the prioritised solver."""
        e, J = self.computed(c)
        return np.asarray(self.weight * (J.T @ e), dtype=float)

    def report(self, c: Configuration) -> float:
        """The task's measure at ``c`` for a result's report: ‖e‖ (a Gaze gives degrees, a Balance its margin)."""
        return float(np.linalg.norm(self.error(c)))

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
    goal: ClassVar[bool] = True
    effector: str
    target: ArrayLike | None = None
    orientation_weight: float = 1.0
    priority: int = 1
    damping: float = 0.01  # the largest λ: λ = min(damping, ‖p − t‖), nearly exact close to the target
    step_limit: float = 0.1
    orientation_step_limit: ClassVar[float] = 0.3  # radians asked of the orientation rows in one iteration

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
        _pose_target(target, "Reach")
        return replace(self, target=np.asarray(target, dtype=float))

    def compute(self, c: Configuration) -> tuple[Array, Array]:
        p, R = _pose_target(self.target, "Reach", check=False)
        if p is None:
            raise IKError(f"Reach {self.effector!r}: no target (give one to the task or to solve)")
        return _frame_error(c, c.node(self.effector), p, R, c.residuals.get(self))

    def error(self, c: Configuration) -> Array:
        p, R = _pose_target(self.target, "Reach", check=False)
        if p is None:
            raise IKError(f"Reach {self.effector!r}: no target (give one to the task or to solve)")
        return _goal_residual(self, c, c.node(self.effector), p, R)

    def velocity(self, c: Configuration) -> tuple[Array, Array, float]:
        """V = −e with the position rows shortened to ``step_limit`` and the orientation rows to 0.3 rad; damped far
        from the target, nearly exact close to it: λ = min(damping, max(‖p − t‖, 1e-6))."""
        e, J = self.computed(c)
        V = -e.copy()
        dist = vector_norm(e[:3])
        V[:3] *= min(1.0, self.step_limit / max(dist, 1e-300))
        if len(e) > 3:
            V[3:] *= min(1.0, self.orientation_step_limit / max(vector_norm(e[3:]), 1e-300))
        s = self.row_scale(len(e))
        return J * s[:, None], V * s, min(self.damping, max(dist, 1e-6))


@dataclass(frozen=True, eq=False, kw_only=True)
class Plant(Task):
    """A node keeps a frame (a planted foot): e = [p − p₀, log(R R₀ᵀ)^∨]; ``frame`` None: its frame at the start."""

    kind: ClassVar[str] = "plant"
    goal: ClassVar[bool] = True
    node: str
    frame: ArrayLike | None = None
    priority: int = 0
    damping: float = 1e-3

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

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.frame is not None and np.shape(self.frame) != (4, 4):
            raise IKError(f"Plant {self.node!r}: the frame must be a 4x4 pose")
        _pose_target(self.frame, "Plant")

    def with_target(self, target: ArrayLike) -> Task:
        return replace(self, frame=np.asarray(target, dtype=float))

    def report(self, c: Configuration) -> float:
        """How far the node's origin is from its planted frame's."""
        return float(np.linalg.norm(self.error(c)[:3]))

    def _frame(self, c: Configuration) -> tuple[Array, Array]:
        p, R = _pose_target(self.resolved(c).frame, "Plant", check=False)  # type: ignore[attr-defined]
        assert p is not None and R is not None
        return p, R

    def compute(self, c: Configuration) -> tuple[Array, Array]:
        return _frame_error(c, c.node(self.node), *self._frame(c), c.residuals.get(self))

    def error(self, c: Configuration) -> Array:
        return _goal_residual(self, c, c.node(self.node), *self._frame(c))


@dataclass(frozen=True, eq=False, kw_only=True)
class Gaze(Task):
    """The head's forward axis f = R_h f_h toward a point: e = f − (t − p_h)/|t − p_h| (3 rows); with ``ear`` (e_h,
    the ear-to-ear axis in the head's frame) a fourth row e · u = (R_h e_h) · u (the head kept level: it turns by yaw
    and pitch, never ear to shoulder), ∂(e · u)/∂θ_j = u · (a_j × e).

    ``forward``: f_h in the head's frame (:func:`head_forward` finds it from the figure); ``dofs``: the DOFs that may
    turn the head (None: all; the natural builder gives the neck's, those that do not move the reaching hand);
    ``eye_range`` (E, radians; None: the head alone): the head aims at the point :meth:`aim`, the target's direction
    with up to E of the gaze shift from ``start`` (a world direction; None: of its pitch) left to the eyes
    (:mod:`.head_aim`), reckoned from ``eye_frame`` (the head's world rotation and neck base where a solve starts: the
    natural solver sets it at each solve's start, :meth:`resolved` at the problem's pose; None: the head where it is):
    the aim point is fixed within a solve, so its gaze is stationary (from the moving head: 200 iterations, not 85)."""

    kind: ClassVar[str] = "gaze"
    head: str
    forward: ArrayLike = (0.0, 0.0, 1.0)
    target: ArrayLike | None = None
    ear: ArrayLike | None = None
    up: ArrayLike = (0.0, 1.0, 0.0)
    dofs: Sequence[int] | None = None
    eye_range: float | None = None
    eye_frame: ArrayLike | None = None
    start: ArrayLike | None = None
    priority: int = 2
    damping: float = 0.05
    step_limit: float = 0.3

    def with_target(self, target: ArrayLike) -> Task:
        t = np.asarray(target, dtype=float)
        return replace(self, target=t[:3, 3] if t.shape == (4, 4) else t)

    def resolved(self, c: Configuration) -> Task:
        """With ``eye_range`` and no ``eye_frame``: the head's world rotation at the start ``c`` and the origin of the
        neck's base (the topmost node its ``dofs`` turn; the head's own without) as its ``eye_frame``. The base, not
        the head: the neck's turns move the head's origin, and where the target is nearly below, its pitch from there
        swings fast, so each frame's share fed the last frame's neck back (the low reach's neck.rx chattered 2.3°)."""
        if self.eye_range is None or self.eye_frame is not None:
            return self
        i = c.node(self.head)
        base = i if not self.dofs else int(np.min(np.asarray(c.figure.compiled.dof_node)[np.asarray(self.dofs)]))
        M = np.eye(4)
        M[:3, :3], M[:3, 3] = c.state.R[i], c.state.p[base]
        return replace(self, eye_frame=M)

    def compute(self, c: Configuration) -> tuple[Array, Array]:
        if self.target is None:
            raise IKError("Gaze: no target (give one to the task or to solve)")
        f = np.asarray(self.forward, dtype=float)
        g, J = gaze_jacobian(c.figure, c.body, c.state, c.node(self.head), f / vector_norm(f), self.aim(c), self.ear,
                             self.up)  # with the level row (the ear axis) where ``ear`` is given
        if self.dofs is not None:
            keep = np.zeros(J.shape[1], dtype=bool)
            keep[np.asarray(self.dofs, dtype=np.intp)] = True
            J = J * keep
        return g, J

    def velocity(self, c: Configuration) -> tuple[Array, Array, float]:
        """V = −e with the look-at rows shortened to ``step_limit`` (the look-at point moves smoothly); the level row
        whole."""
        e, J = self.computed(c)  # shared with error() at this configuration (computed once)
        V = -e.copy()
        V[:3] *= min(1.0, self.step_limit / max(vector_norm(e[:3]), 1e-300))
        s = self.row_scale(len(e))
        return J * s[:, None], V * s, self.damping

    def aim(self, c: Configuration) -> Array:
        """The point the head aims at: the target, or with ``eye_range`` its direction with part of the gaze shift
        from ``start`` left to the eyes (:func:`.head_aim.shift_shared_aim`; without it, of the pitch)."""
        if self.eye_range is None:
            return np.asarray(self.target, dtype=float)
        if self.eye_frame is None:  # not resolved: from the head where it is
            i = c.node(self.head)
            return self._aim_from(c.state.p[i], c.state.R[i])
        return self._held_aim

    @cached_property
    def _held_aim(self) -> Array:  # from ``eye_frame``, fixed for the (frozen) task: found once, not every iteration
        M = np.asarray(self.eye_frame, dtype=float)
        return self._aim_from(M[:3, 3], M[:3, :3])

    def _aim_from(self, p: Array, R: Array) -> Array:  # reckoned from a head at p turned by R
        t, eyes = np.asarray(self.target, dtype=float), float(self.eye_range or 0.0)
        if self.start is not None:  # the eyes' share along the gaze shift from the body's forward
            return shift_shared_aim(p, t, np.asarray(self.start, dtype=float), eyes)
        return pitch_shared_aim(p, t, np.asarray(self.up, dtype=float), R @ np.asarray(self.forward, dtype=float), eyes)

    def report(self, c: Configuration) -> float:
        """Degrees between the head's forward axis and the direction to the point it aims at (:meth:`aim`: the
        target, or with ``eye_range`` its direction with part of the pitch left to the eyes, reckoned from where the
        head and its neck's base are at ``c``, whatever ``eye_frame`` a solve held)."""
        f = np.asarray(self.forward, dtype=float)
        if self.target is None:
            return math.nan
        return math.degrees(gaze_angle(c.state, c.node(self.head), f / np.linalg.norm(f), self.aim_here(c)))

    def aim_here(self, c: Configuration) -> Array:
        """:meth:`aim` reckoned from where the head and its neck's base are at ``c``, whatever ``eye_frame`` holds."""
        here = replace(self, eye_frame=None).resolved(c)
        assert isinstance(here, Gaze)
        return here.aim(c)

    def looking_at(self, c: Configuration, distance: float) -> Array:
        """p_h + ρ R_h f_h: the point ``distance`` ahead of the head along its forward axis."""
        i = c.node(self.head)
        f = np.asarray(self.forward, dtype=float)
        return np.asarray(c.state.p[i] + distance * (c.state.R[i] @ (f / np.linalg.norm(f))), dtype=float)


@dataclass(frozen=True, eq=False, kw_only=True)
class Balance(Task):
    """The ground-projected centre of mass at least ``margin`` inside the support polygon ``support`` (K, 2)
    (ground coordinates B c, B = ``basis`` (2, 3)): e = [max(0, margin − m(B c))], ∂e = −∇mᵀ B ∂c where active;
    ``dofs``: the DOFs that may move the centre of mass (None: all; the natural builder leaves out the free arms,
    which a person lets hang rather than swing up as a counterweight)."""

    kind: ClassVar[str] = "balance"
    goal: ClassVar[bool] = True
    inequality: ClassVar[bool] = True  # the prioritised solver holds it by :meth:`bounds`
    support: ArrayLike
    basis: ArrayLike
    margin: float = 0.02
    dofs: Sequence[int] | None = None
    priority: int = 0
    damping: float = 1e-3

    def goal_error(self, c: Configuration) -> tuple[float, float]:
        """The goal is the centre of mass inside the polygon (e − margin ≤ tol); the margin itself is a preference."""
        return float(self.error(c)[0]) - self.margin, 0.0

    def compute(self, c: Configuration) -> tuple[Array, Array]:
        hull = np.asarray(self.support, dtype=float)
        B = np.asarray(self.basis, dtype=float)
        com, Jc = c.com()
        x = B @ com
        gap = self.margin - polygon_margin(hull, x)
        if gap <= 0:
            return np.zeros(1), np.zeros((1, c.figure.compiled.dof_count))
        return np.array([gap]), -(margin_gradient(hull, x) @ (B @ self._kept(Jc)))[None]

    def _kept(self, J: Array) -> Array:
        """J with the columns outside ``dofs`` zeroed (J itself without ``dofs``)."""
        if self.dofs is None:
            return J
        keep = np.zeros(J.shape[1], dtype=bool)
        keep[np.asarray(self.dofs, dtype=np.intp)] = True
        return J * keep

    def velocity(self, c: Configuration) -> tuple[Array, Array, float]:
        """Where the margin is short: the ground-projected centre of mass B c moved toward the polygon's centroid by
        the gap plus 1 mm, J = B ∂c (2 rows: the push does not slide sideways); within BALANCE_HOLD past the margin,
        held where it is (V = 0); farther inside, no rows."""
        hull = np.asarray(self.support, dtype=float)
        B = np.asarray(self.basis, dtype=float)
        com, Jc = c.com()
        x = B @ com
        gap = self.margin - polygon_margin(hull, x)
        if gap <= -BALANCE_HOLD:
            return np.zeros((0, c.figure.compiled.dof_count)), np.zeros(0), self.damping
        d = hull.mean(axis=0) - x
        d = d / max(vector_norm(d), 1e-12)
        w = math.sqrt(self.weight)  # within BALANCE_HOLD past the margin: held where it is (no on-off chatter)
        return w * (B @ self._kept(Jc)), w * d * max(gap + 1e-3, 0.0), self.damping

    def bounds(self, c: Configuration) -> tuple[Array, Array] | None:
        """Within BALANCE_BAND of the margin: one row −∇m_τ(B c)ᵀ B ∂c Δθ ≤ m_τ(B c) − margin, m_τ the support
        polygon's smooth margin (:func:`smooth_margin`, τ = BALANCE_SMOOTH: the edges' signed distances' soft
        minimum, never above the margin itself), the margin kept to first order; the prioritised solver's velocity
        damper slows the centre of mass into it, and it slides along the edge; farther inside, None. The nearest
        edge's normal alone (∇ of the plain minimum) turned by 90° where the nearest edge changed: near a corner a
        step slid along one edge through the other, the centre of mass 9 mm past the margin, and the whole-body
        solve circled at 5e-5 m for 200 iterations. Held as an equality level (:meth:`velocity`) the centre of mass
        froze in both ground directions the frame it came within BALANCE_HOLD, and the legs kinked 0.6° that
        frame."""
        hull = np.asarray(self.support, dtype=float)
        B = np.asarray(self.basis, dtype=float)
        com, Jc = c.com()
        m, grad = smooth_margin(hull, B @ com, BALANCE_SMOOTH)
        room = m - self.margin
        if room > BALANCE_BAND:
            return None
        return -(grad @ (B @ self._kept(Jc)))[None], np.array([room])

    def report(self, c: Configuration) -> float:
        """The margin m(B c): the ground-projected centre of mass's signed distance to the support polygon's edge."""
        com, _ = c.com()
        return polygon_margin(np.asarray(self.support, dtype=float), np.asarray(self.basis, dtype=float) @ com)


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
        D = c.figure.compiled.dof_count
        pose = c.pose if self.pose is None else np.asarray(self.pose, dtype=float)
        idx = np.arange(D) if self.dofs is None else np.asarray(self.dofs, dtype=np.intp)
        J = np.zeros((len(idx), D))
        J[np.arange(len(idx)), idx] = 1.0
        return c.pose[idx] - pose[idx], J


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
