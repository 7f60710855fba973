"""Natural reaching: a prioritised, stiffness-weighted least-squares solver (:class:`Natural`) over a problem made of
tasks, and :class:`Priors`, which builds that task list for a human reach.

With W = diag(w_j), w_j = 1/(1 − s_j) (s_j ∈ [0, 1): joint j's stiffness, Blender's ik_stiffness), the step is
taken in scaled coordinates φ = W^½ θ, J̃ = J W^−½, and the tasks are solved level by level (their ``priority``),
each in the null space of those before it (damped by its tasks' ``damping``):

    Δφ_k = (J̃_k P_k)ᵀ (J̃_k P_k (J̃_k P_k)ᵀ + λ_k² I)⁻¹ (V_k − J̃_k Δφ_<k),   P_{k+1} = P_k − (J̃_k P_k)⁺ J̃_k P_k
    Δθ = W^−½ (Σ_k Δφ_k − ½ P_last W^−½ ∇H),     H = Σ_null w_t ½‖e_t‖²  (∇H = Σ :meth:`Task.gradient`)

V_k: each task's :meth:`~animkit.ik.tasks.Task.velocity` (−e shortened to its step limit). The tasks at priority
NULL_PRIORITY and above (Posture, Spread, Prior, Hang, Clear) form H, taken in the null space of every level with
its step bounded by NULL_STEP. For one weighted task alone, Δθ = W⁻¹Jᵀ(JW⁻¹Jᵀ + λ²I)⁻¹V, the weighted damped least
squares (:meth:`Natural.step`, what a problem of reaches alone gets). Above every level, the inequality tasks
(:meth:`Task.bounds`: J Δθ ≤ room, a person's range of motion, :mod:`animkit.ik.ranges`) are held as an active set:
the rows a step would break join as a first level asking BOUND_GAIN · room (a velocity damper), and the step is
solved again (:func:`~animkit.ik.prioritised.bounded_step`). The levels :class:`Priors` builds: (0) the planted
feet keep their start frames and the centre of mass stays ``margin`` inside the support polygon; (1) the effector's
target; (2) gaze: the head's forward axis toward the target (or a look-at point of its own) with its ear-to-ear axis
level, moved by the neck's DOFs only (those that do not move the effector); then H: the comfort pose, the spine bend
spread over the spine's joints, gravity on each free arm (:class:`~animkit.ik.hang.Hang`) with its elbow and wrist
kept outside the trunk and its thigh (:class:`~animkit.ik.clear.Clear`), and a learned pose prior. See
docs/derivations.md ("Natural reaching") and animkit/ik/tasks.py for the task Jacobians.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import IKError, unknown_name
from animkit.ik.body import body_from_figure, figure_state, ground_basis, support_at
from animkit.ik.clear import free_arm_clear
from animkit.ik.cone_rows import cone_bounds, slipped, trust_scaled
from animkit.ik.hang import Hang
from animkit.ik.methods import Setup, SteppedSolver
from animkit.ik.natural_gaze import EYE_RANGE, eyes_from, eyes_moved, gaze_task
from animkit.ik.natural_settle import adapted, fixed_point, settling
from animkit.ik.prior import PosePrior, Prior
from animkit.ik.prioritised import BOUND_GAIN, NULL_STEP, Bounds, Level, bounded_step
from animkit.ik.problem import check_effectors, movable_dofs
from animkit.ik.ranges import RANGE_DEGREES, ranges_task
from animkit.ik.solvers import LoopOutput, Options, StepInput, damped_solve
from animkit.ik.spread import Spread
from animkit.ik.stack import cones_moved
from animkit.ik.tasks import Balance, Plant, Posture, Reach, Task
from animkit.model.figure import Figure
from animkit.model.humanoid import match_figure
from animkit.model.transforms import vector_norm

if TYPE_CHECKING:
    from animkit.ik.api import IKProblem
    from animkit.ik.stack import TaskStack

__all__ = ["Natural", "Priors", "NaturalProblem"]

Array = NDArray[np.float64]
STALL = 10  # a solve stops when its best error over this many iterations (above 100 tol) fell by less than 0.1 %
NULL_PRIORITY = 3  # tasks at this priority or above are null-space terms, not levels
MAX_STEP = 0.3  # the largest change of any DOF in one iteration (radians or scene units)
FRAME_STEP = 0.1  # and in a bake's frame: its iterations follow the step field rather than leap along a tangent
# (a hanging arm reaching straight up: the waypoint climbs 5-7 cm a frame along the straight arm, a singular pose,
# and a 0.3 rad step swung the wrist 17° in one iteration and the shoulder's twist 11° and back: chatter 2.9° -> 1.7°)


@dataclass(frozen=True, eq=False, kw_only=True)
class Natural(SteppedSolver):
    """The prioritised solver (the module docstring): ``stiffness`` (joint or DOF name → s in [0, 1)) weighs the
    joints; ``settle``: go on after the goals are met until the other tasks settle (no DOF moves 1e-3 in a step;
    False, as a bake's frames: stop once the goals are met after one step, the others then advance a step a
    frame); ``track``: with ``settle`` False, go on until the levels below the goals (the gaze) are also within
    TRACK_TOL (a bake's frames: the head keeps on its look-at point while the trunk under it turns);
    ``null_steps``: k takes the null-space terms' k steps' worth in the first iteration and none after (None: a
    step every iteration; a bake's frames take 4, so the posture terms advance evenly every frame however many
    iterations the levels need: the free arm jittered 1.4° when their steps followed the iteration count)."""

    name: ClassVar[str] = "natural"
    takes_tasks: ClassVar[bool] = True
    stiffness: Mapping[str, float] = field(default_factory=dict)
    max_iter: int = 200
    settle: bool = True
    null_steps: int | None = None
    track: bool = False

    def __post_init__(self) -> None:
        self._check()
        for k, v in dict(self.stiffness).items():
            try:
                ok = isinstance(k, str) and 0.0 <= float(v) < 1.0
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise IKError(f"Natural: stiffness[{k!r}] must be a number in [0, 1), got {v!r}")

    def scale(self, figure: Figure, dofs: NDArray[np.intp]) -> Array:
        """W^−½ (n,) over the DOFs ``dofs``: 1/√w_j, w_j = 1/(1 − s_j) (IKError naming an unknown joint)."""
        w = np.ones(len(dofs))
        if not self.stiffness:
            return np.asarray(1.0 / np.sqrt(w), dtype=float)
        names, spans = figure.dof_names, figure.joint_dofs
        for key, s in dict(self.stiffness).items():
            if key in spans:
                idx = list(spans[key])
            elif key in names:
                idx = [names.index(key)]
            else:
                raise IKError(unknown_name("joint (stiffness)", key, figure.joint_names))
            for d in idx:
                w[dofs == d] = 1.0 / (1.0 - float(s))
        return np.asarray(1.0 / np.sqrt(w), dtype=float)

    def setup(self, s: Setup) -> Options:
        self.scale(s.figure, s.model.dofs)  # checks the names once, when the problem is made
        return super().setup(s)

    def step(self, s: StepInput) -> Array:
        """One weighted task alone: Δθ = W^−½ J̃ᵀ(J̃J̃ᵀ + λ²I)⁻¹V, J̃ = J W^−½, λ = min(0.01, ‖V‖)."""
        sc = self.scale(s.model.figure, s.model.dofs)
        lam = np.minimum(0.01, np.maximum(np.linalg.norm(s.V, axis=1), 1e-6))
        return sc * damped_solve(s.J * sc, s.V, lam * lam)

    def _null_bound(self, it: int) -> float:
        """The bound on iteration ``it``'s null-space step: NULL_STEP each; with ``null_steps`` = k, the k steps' worth
        k · NULL_STEP on the first and none after."""
        if self.null_steps is None:
            return NULL_STEP
        return NULL_STEP * self.null_steps if it == 0 else 0.0

    def solve_stack(self, stack: TaskStack, q0: Array) -> LoopOutput:
        """Iterate the prioritised step from q0 (n,) until the goals are met (and, with ``settle``, the other tasks
        have settled), the goals stall (STALL) or ``max_iter``."""
        sc0 = self.scale(stack.figure, stack.dofs)
        q = stack.clamp(np.asarray(q0, dtype=float))
        start = stack.config(q)
        stack = settling(stack) if self.settle else stack  # the free arms' comfort too (natural_settle)
        stack = eyes_from(stack, start)  # its tasks only: ``start`` is still this stack's configuration at q
        rounds = 0  # the times the eyes' share was reckoned again (a solve, not a bake's frame: EYE_ROUNDS)
        errors: list[float] = []
        reason = "max_iterations"
        it = 0
        pos = ori = math.inf
        adapt, gain, last, inv = self.settle and self.null_steps is None, 1.0, None, np.where(sc0 > 0, sc0, 1.0)
        for it in range(self.max_iter + 1):
            c = start if it == 0 else stack.config(q)
            pos, ori, met = stack.goal_errors(c)
            errors.append(pos)
            if it == self.max_iter:
                reason = "converged" if met else reason
                break
            if met and not self.settle and it >= 1 and (not self.track or _tracked(stack, c)):
                if self.track or not eyes_moved(stack, c, rounds):
                    reason = "converged"
                    break
                stack, rounds = eyes_from(stack, c), rounds + 1  # the eyes' share again from where the neck is
            if it >= STALL and min(errors[-STALL:]) > max(100 * stack.tol, (1.0 - 1e-3) * errors[-1 - STALL]):
                reason = "stalled"  # the target is out of reach (or the tasks above it hold the effector back)
                break
            step = partial(_step, c=c, q=q, sc0=sc0, null=self._null_bound(it), damped=self.track)
            dq = step(stack, gain=gain)
            if adapt:  # the null-space terms' gain: halved on a reversal (and the step taken again), else grown
                gain, back = adapted(gain, dq / inv, last)
                dq = step(stack, gain=gain) if back else dq
                last = dq / inv
            if met and float(np.abs(dq).max(initial=0.0)) < 1e-3:  # settling: at a fixed point of a plain step
                done, stack = fixed_point(stack, c, gain, step) if adapt else (False, stack)
                if done or not adapt and (self.track or not eyes_moved(stack, c, rounds)):
                    reason = "converged"
                    break
                if not adapt:
                    stack, rounds = eyes_from(stack, c), rounds + 1
                    dq = step(stack, gain=gain)
            q = _cone_corrected(stack, (q, dq), sc0, self._null_bound(it)) if stack.model.cones else stack.clamp(q + dq)
        return LoopOutput(q[None], np.array([it], dtype=np.intp), [reason], np.array([pos]), np.array([ori]),
                          np.array(errors)[:, None])


LIMIT_BAND, LIMIT_SHARE = 0.2, 0.25  # rad: a posture DOF's weight fades (smoothstep) over the last min(LIMIT_BAND,
# LIMIT_SHARE · its range) before the limit it moves toward (joint-limit avoidance by weighting, Chan & Dubey 1995);
# the goals' DOFs keep the stop at the limit (tapering them made a stretched arm's wrist chatter out of reach)
TRACK_TOL = 2e-3  # a bake frame's levels below the goals (a gaze: |f − d| ≈ its angle in radians) count as met here


def _tracked(stack: TaskStack, c: Any) -> bool:
    """Whether every level task that is not a goal (the gaze and its head level) is within TRACK_TOL."""
    return all(vector_norm(t.error(c)) <= TRACK_TOL for t in stack.tasks
               if t.weight > 0 and t.priority < NULL_PRIORITY and not t.goal and not t.inequality)


def _levels(stack: TaskStack, c: Any, null: bool = True, frames: bool = False
            ) -> tuple[list[Level], Array, NDArray[np.bool_], Bounds | None]:
    """The levels (J over the movable set, V, λ) by priority, ∇H over the movable set (zero without ``null``), which
    DOFs of the set no goal task moves (the posture's: a neck under a gaze, a free arm), and the inequality tasks'
    rows that the movable set can act on (None without). ``frames`` (a bake's): a Reach's λ is its ``damping``
    however near its waypoint: λ = ‖e‖ lets a step along a singular direction reach ‖e‖/2λ = 0.5 rad however small
    the error (the damping bounds the joint speed near a singularity: Nakamura & Hanafusa 1986), and the arm
    stretched out of reach flipped its elbow and wrist by 1° a frame as its last waypoints crept along it."""
    by: dict[int, list[Level]] = {}
    grad = np.zeros(len(stack.dofs))
    posture = np.ones(len(stack.dofs), dtype=bool)
    bj, broom = [], []
    for t in stack.tasks:
        if t.weight == 0:
            continue
        if t.inequality:
            got = t.bounds(c)
            if got is not None:
                bj.append(got[0][:, stack.dofs])
                broom.append(got[1])
            continue
        if t.priority >= NULL_PRIORITY:
            if null:
                grad += t.gradient(c)[stack.dofs]
            continue
        J, V, lam = t.velocity(c)
        lam = max(lam, t.damping) if frames and isinstance(t, Reach) else lam
        if not len(V):
            continue
        Jd = J[:, stack.dofs]
        by.setdefault(t.priority, []).append((Jd, V, lam))
        if t.goal:
            posture &= ~(Jd != 0).any(axis=0)
    levels = [(np.vstack([j for j, _, _ in parts]), np.concatenate([v for _, v, _ in parts]),
               max(la for _, _, la in parts)) for _, parts in sorted(by.items())]
    bounds = None
    if bj:
        J, room = np.vstack(bj), np.concatenate(broom)
        acts = (J != 0).any(axis=1)  # a bound the movable set cannot move is not its business
        bounds = (J[acts], room[acts]) if acts.any() else None
    return levels, grad, posture, bounds


def _step(stack: TaskStack, c: Any, q: Array, sc0: Array, null: float = NULL_STEP, damped: bool = False,
          gain: float = 1.0) -> Array:
    """One prioritised step (the null-space terms' bounded by ``null``, none at 0); re-solved without the DOFs
    pressed on a limit; bounded by MAX_STEP. ``damped`` (a bake's frames): bounded by FRAME_STEP, and the goals'
    DOFs' limits within LIMIT_DAMPER held as velocity dampers (:func:`_with_limits`; the posture DOFs fade their
    weight instead)."""
    levels, grad, posture, bounds = _levels(stack, c, null > 0, damped)
    grad, null = grad * gain, null * min(gain, 1.0)
    free = ~_goal_dofs(stack, c) if stack.model.cones else None  # the DOFs no goal moves (a neck, a free arm)
    bounds = _with_cones(stack, q, bounds, free, damped)
    lo, hi = stack.model.lower, stack.model.upper
    if damped:
        bounds = _with_limits(bounds, q, (lo, hi), (sc0 > 0) & ~posture)
    sc = sc0.copy()
    dq = bounded_step(levels, bounds, grad, sc, null)
    room = np.where(dq > 0, hi - q, q - lo)  # how far the DOF may still go the way the step takes it
    band = np.minimum(LIMIT_BAND, LIMIT_SHARE * (hi - lo))
    near = (room < band) & (dq != 0) & posture
    if near.any():  # a posture DOF nearing its limit hands its share to the others smoothly, not at once (no kink)
        u = (room[near] / band[near]).clip(0.0, 1.0)
        sc[near] *= u * u * (3.0 - 2.0 * u)
        dq = bounded_step(levels, bounds, grad, sc, null)
    blocked = ((q + dq <= lo) & (dq < 0)) | ((q + dq >= hi) & (dq > 0))
    if blocked.any():
        sc[blocked] = 0.0
        dq = bounded_step(levels, bounds, grad, sc, null)
    if free is not None:  # a neck or free arm on its cone's edge: a trust region (CONE_TRUST)
        dq = trust_scaled(stack.model.cones, q, dq, free, CONE_TRUST)
    if damped:  # a bake's frame: the goals' DOFs by FRAME_STEP (the posture's null-space share is not shrunk with them)
        big = float(np.abs(dq[~posture]).max(initial=0.0))
        dq = np.where(posture, dq, dq * min(1.0, FRAME_STEP / big)) if big > 0 else dq
    big = float(np.abs(dq).max(initial=0.0))
    return dq * min(1.0, MAX_STEP / big) if big > 0 else dq


LIMIT_DAMPER, LIMIT_GAIN = 0.35, 0.3  # rad: in a bake's frames, a goal's DOF nearer than LIMIT_DAMPER to a limit
# joins the inequality rows, dθ ≤ LIMIT_GAIN · room (a velocity damper, as the ranges are: it slows into the limit
# over several frames; cut off at the limit instead, the reaching clavicle stopped dead at its 20° and the elbow
# zig-zagged ±5° in two frames). At BOUND_GAIN (0.2) the torso's free arm out of reach at 1 s, 15 fps rose 45.7°


def _with_limits(bounds: Bounds | None, q: Array, lim: tuple[Array, Array], which: NDArray[np.bool_]
                 ) -> Bounds | None:
    """``bounds`` with a row ±e_j, room (hi_j − q_j or q_j − lo_j) · LIMIT_GAIN / BOUND_GAIN
    (:func:`~animkit.ik.prioritised.bounded_step` takes BOUND_GAIN of it), for each limit within LIMIT_DAMPER of a
    DOF j in ``which``."""
    lo, hi = lim
    rows, rooms = [], []
    for sign, room in ((1.0, hi - q), (-1.0, q - lo)):
        for j in np.flatnonzero((room < LIMIT_DAMPER) & which & (hi > lo)):
            r = np.zeros(len(q))
            r[j] = sign
            rows.append(r)
            rooms.append(max(float(room[j]), 0.0) * LIMIT_GAIN / BOUND_GAIN)
    if not rows:
        return bounds
    J, room = np.array(rows), np.array(rooms)
    return (J, room) if bounds is None else (np.vstack([bounds[0], J]), np.concatenate([bounds[1], room]))


CONE_ROUNDS = 3  # solves of a step that left a cone at most: each time with the joints it pushed out held
CONE_HALVINGS = 2  # a step whose projection slips more is halved (the edge's curvature error falls 4x) this often
CONE_TRUST = 0.05  # rad: the most one angle of a joint near its cone's edge moves in a step (its edge curves: a
# longer tangent step ends farther out: a two-joint neck on its rims 2-cycled ±0.3 rad, and its share of MAX_STEP
# shrank the reach's step 10x on a BVH skeleton)
CONE_SLIP = 2e-3  # rad: a projection back into a cone that moves no angle more than this is taken as it is (the
# cones' rows keep a step on the edge to first order; what is left is the edge's curvature, second order)


def _with_cones(stack: TaskStack, q: Array, bounds: Bounds | None, free: NDArray[np.bool_] | None, damped: bool
                ) -> Bounds | None:
    """``bounds`` with the cones' rows near their edges (:func:`~animkit.ik.cone_rows.cone_bounds`), held as the
    other inequality rows are (an active set, a velocity damper): a joint on its edge slides along it while the
    step's other parts go on; one that moves no goal (``free``: a neck, a free arm) keeps a trust region there
    (CONE_TRUST) and, outside a bake's frames (not ``damped``), closes its whole room in a step: slowed by
    BOUND_GAIN, a neck pressed on its rim stopped moving 1e-3 a step (settled) 0.27° inside it."""
    more = cone_bounds(stack.model.cones, q, None if damped else free, 1.0 / BOUND_GAIN)
    if more is None or bounds is None:
        return bounds if more is None else more
    return np.vstack([bounds[0], more[0]]), np.concatenate([bounds[1], more[1]])


def _goal_dofs(stack: TaskStack, c: Any) -> NDArray[np.bool_]:
    """Which DOFs of the movable set move a goal (an equality goal task: the reaching hand, a planted foot)."""
    goal = np.zeros(len(stack.dofs), dtype=bool)
    for t in stack.tasks:
        if t.goal and not t.inequality and t.weight > 0:
            goal |= (t.jacobian(c)[:, stack.dofs] != 0).any(axis=0)
    return goal


def _cone_corrected(stack: TaskStack, step: tuple[Array, Array], sc0: Array, null: float) -> Array:
    """clamp(q + Δθ) (the cones projected) for ``step`` = (q, Δθ) where the projection moves no joint more than
    CONE_SLIP: the cones' rows (:func:`_with_cones`) keep the step on an edge to first order, and what the edge's
    curvature leaves is taken back by the projection (a joint slides along its edge). Where it slips more, the
    step is halved (the curvature's error falls 4x), up to CONE_HALVINGS times: the whole step where the joint
    moves a goal (its slip would move the hand out of the null space the step was taken in), else that joint's
    part alone (a neck under a gaze, a free arm: the goals do not feel it; a slip left after the halvings is
    taken). A goal's joint still slipping after them: the step solved again with it held (:func:`_held_step`),
    from q and from q with it slid to where the projection put it, the end nearer the goals kept. Projecting a
    whole step alone undid the reach every iteration (CesiumMan's spine 2-cycled the hand 85–110 mm off); holding
    a joint at each touch of its edge froze it there (the spine left the hand 15 cm short, the neck tipped the head
    23° ear to shoulder)."""
    q, dq = step
    m = stack.model
    c = stack.config(q)
    goal = _goal_dofs(stack, c)
    met = stack.goal_errors(c)[2]
    dq = dq.copy()
    moved: list[NDArray[np.intp]] = []
    for _ in range(CONE_HALVINGS + 1):
        qn = stack.clamp(q + dq)
        raw = np.clip(q + dq, m.lower, m.upper)
        over = slipped(stack.model, raw, qn, CONE_SLIP)
        moved = [links for links in over if goal[links].any()]
        if met and not moved:  # met goals stay met: any slip of a goal's joint that unmeets them counts
            slips = [links for links in cones_moved(m, raw, qn) if goal[links].any()]
            if slips and not stack.goal_errors(stack.config(qn))[2]:
                moved = slips
        if not moved:
            if not over:
                return qn
            for links in over:
                dq[links] *= 0.5
        else:
            dq = 0.5 * dq
    if not moved:
        return qn
    slid = q.copy()
    for links in moved:
        slid[links] = qn[links]
    ends = [_held_step(stack, q, moved, sc0, null), _held_step(stack, slid, moved, sc0, null)]
    errors = [stack.goal_errors(stack.config(e))[0] for e in ends]
    return ends[int(np.argmin(errors))]


def _held_step(stack: TaskStack, q: Array, moved: list[NDArray[np.intp]], sc0: Array, null: float) -> Array:
    """The step from q with the ``moved`` joints' DOFs held, then clamped and projected; a goal's joint the step
    pushes out of its cone joins the held ones and the step is solved again, CONE_ROUNDS solves at most."""
    m = stack.model
    sc = sc0.copy()
    c = stack.config(q)
    goal = _goal_dofs(stack, c)
    qn = q
    for _ in range(CONE_ROUNDS):
        for links in moved:
            sc[links] = 0.0
        dq = _step(stack, c, q, sc, null)
        qn = stack.clamp(q + dq)
        over = slipped(m, np.clip(q + dq, m.lower, m.upper), qn, CONE_SLIP)
        moved = [links for links in over if goal[links].any()]
        if not moved:
            break
    return qn


@dataclass(frozen=True)
class Priors:
    """What makes a reach look human, as a builder of the task list (:meth:`tasks`) and of the problem
    (:meth:`problem`): ``stiffness`` (the :class:`Natural` solver's), ``comfort`` (the :class:`Posture` weight: the
    pull toward the rest pose with ``preferred``: DOF name → value, Maya's preferred angle), ``spread`` (the
    :class:`Spread` weight over the spine), ``gaze`` (a :class:`Gaze` task when the neck may move), ``planted`` (a
    :class:`Plant` per foot the movable set moves), ``balance`` (a :class:`Balance` task ``margin`` inside the feet's
    support polygon), ``up``, ``prior`` and ``prior_weight`` (a :class:`~animkit.ik.prior.Prior` task: the posture
    people take), ``hang`` (the :class:`~animkit.ik.hang.Hang` weight on each free arm), ``clear`` and ``volumes``
    (the :class:`~animkit.ik.clear.Clear` weight on each free arm, and node name → radius of the body parts it keeps
    clear of, measured from a skinned mesh, :func:`~animkit.ik.clear.mesh_radii`; parts not named take their drawn
    primitive's), ``ranges`` (name → degrees:
    the bounds of the :class:`~animkit.ik.ranges.Ranges` inequality task, a person's range of motion; missing names
    take ``RANGE_DEGREES``, an empty mapping none); ``eyes`` (the gaze's pitch the eyes carry: :data:`EYE_RANGE`,
    a person's, by default; 0: the head alone; reckoned from the head where each solve starts); ``ride``: where the
    movable set tips the head or a free arm (a torso reach: the chest carries both) without moving them itself, the
    neck's DOFs join the set for the gaze and the free arm's for gravity (posture, not the reach: :meth:`movable`)."""

    stiffness: Mapping[str, float] = field(default_factory=dict)
    preferred: Mapping[str, float] = field(default_factory=dict)  # DOF name → its comfort value (radians)
    comfort: float = 0.1
    spread: float = 1.0
    gaze: bool = True
    planted: tuple[str, ...] = ()
    balance: bool = True
    margin: float = 0.02
    up: tuple[float, float, float] = (0.0, 1.0, 0.0)
    prior: PosePrior | None = None
    prior_weight: float = 0.01
    hang: float = 1.0
    clear: float = 30.0  # its depths are metres: 30 holds a hanging arm 2-4 cm outside (10: 1.5 cm inside mid-clip)
    volumes: Mapping[str, float] = field(default_factory=dict)  # node name → its body part's radius (m)
    ride: bool = True
    ranges: Mapping[str, float] = field(default_factory=lambda: dict(RANGE_DEGREES))
    eyes: float = EYE_RANGE  # radians of a gaze's pitch the eyes may carry (0: the head alone)

    def __post_init__(self) -> None:
        Natural(stiffness=self.stiffness)  # checks the values
        if self.prior is not None and not isinstance(self.prior, PosePrior):
            raise IKError(f"Priors: prior must be a PosePrior or None, got {type(self.prior).__name__}")
        for name in ("comfort", "spread", "margin", "prior_weight", "hang", "clear"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise IKError(f"Priors: {name} must be a finite number >= 0, got {v!r}")
        u = np.asarray(self.up, dtype=float)
        if u.shape != (3,) or not np.all(np.isfinite(u)) or np.linalg.norm(u) == 0:
            raise IKError(f"Priors: up must be a non-zero 3-vector, got {self.up!r}")
        object.__setattr__(self, "planted", tuple(self.planted))
        rng = {} if self.ranges is False else self.ranges  # TOML's ranges = false: no bounds
        if not isinstance(rng, Mapping) or not all(isinstance(v, (int, float)) and 0 <= v <= 180 for v in rng.values()):
            raise IKError(f"Priors: ranges must map range names to degrees in [0, 180], got {self.ranges!r}")
        object.__setattr__(self, "ranges", {**RANGE_DEGREES, **rng} if rng else {})

    def problem(self, figure: Figure, effector: str, chain: str | Iterable[str] | None, *,
                pose: ArrayLike | None = None, tol: float = 1e-5, orientation: bool = False,
                target: ArrayLike | None = None) -> IKProblem:
        """``IKProblem(figure, chain, tasks=self.tasks(...), solver=Natural(stiffness=...))``."""
        from animkit.ik.api import IKProblem

        p0 = figure.rest_pose() if pose is None else np.asarray(pose, dtype=float)
        dofs, added = self.movable(figure, effector, chain)
        spec = chain if not added and (chain is None or isinstance(chain, str)) else \
            [figure.dof_names[d] for d in dofs]
        tasks = self.tasks(figure, effector, spec, p0, target=target, orientation=orientation)
        return IKProblem(figure, spec, tasks=tasks, pose=p0, solver=Natural(stiffness=self.stiffness), tol=tol)

    def movable(self, figure: Figure, effector: str, chain: str | Iterable[str] | None
                ) -> tuple[NDArray[np.intp], tuple[str, ...]]:
        """The natural reach's movable set: the chain's DOFs and, with ``ride``, the DOFs that carry the posture of
        what the chain tips without moving (the neck's for the gaze, ``gaze``; a free arm's for gravity, ``hang``);
        and the joints so added (none where the chain moves them itself or tips nothing)."""
        (eff,) = check_effectors(figure, effector)
        dofs = movable_dofs(figure, chain, (eff,))
        if not self.ride:
            return dofs, ()
        c = figure.compiled
        mov = np.zeros(c.dof_count, dtype=bool)
        mov[dofs] = True
        mv = body_from_figure(figure).moves
        bones = match_figure(figure)
        index = {n: i for i, n in enumerate(c.node_names)}
        extra = np.zeros(c.dof_count, dtype=bool)
        head = figure.rig.effectors.get("head") or bones.get("head")
        if self.gaze and head is not None and np.any(mv[index[head]] & mov):
            neck = mv[index[head]] & ~mv[index[eff]]
            if not np.any(neck & mov):
                extra |= neck
        if self.hang > 0:
            allowed = np.ones(c.dof_count, dtype=bool)
            for top, own in _free_arms(figure, bones, eff, allowed):
                if np.any(mv[index[top]] & mov) and not np.any(mov[list(own)]):
                    extra[list(own)] = True
        extra &= c.dof_revolute.astype(bool)  # turns only: a glTF node's translation and scale DOFs never ride along
        added = tuple(dict.fromkeys(figure.dof_names[d].split(".")[0] for d in np.flatnonzero(extra & ~mov)))
        return np.flatnonzero(mov | extra).astype(np.intp), added

    def tasks(self, figure: Figure, effector: str, chain: str | Iterable[str] | None, pose: ArrayLike, *,
              target: ArrayLike | None = None, orientation: bool = False) -> list[Task]:
        """The task list of a natural reach of ``effector`` by the movable set ``chain`` from ``pose``: only the
        tasks the movable set can act on (a gaze needs a neck in it, a plant a foot it moves)."""
        (eff,) = check_effectors(figure, effector)
        p0 = np.asarray(pose, dtype=float)
        c = figure.compiled
        index = {n: i for i, n in enumerate(c.node_names)}
        dofs = movable_dofs(figure, chain, (eff,))
        mov = np.zeros(c.dof_count, dtype=bool)
        mov[dofs] = True
        mv = body_from_figure(figure).moves
        up = np.asarray(self.up, dtype=float) / np.linalg.norm(self.up)
        bones = match_figure(figure)
        if target is None and orientation:
            target = np.eye(4)  # a placeholder of the right kind: each solve gives its own
        out: list[Task] = [Reach(effector=eff, target=target)]
        s0 = figure_state(figure, p0)
        feet = [check_effectors(figure, f)[0] for f in self.planted]
        out += [Plant(node=f) for f, n in zip(self.planted, feet, strict=True) if np.any(mv[index[n]] & mov)]
        basis = ground_basis(up)
        hull = support_at(figure, s0, [index[f] for f in feet], up, basis)
        arms = _free_arms(figure, bones, eff, mov) if self.hang > 0 else []
        arm_dofs = {d for _, ds in arms for d in ds}
        if hull is not None:  # enforced when a planted foot moves; else weight 0: measured (its report), not enforced
            out.append(Balance(support=hull, basis=basis, margin=self.margin,  # the free arms hang, no counterweight
                               dofs=tuple(d for d in dofs.tolist() if d not in arm_dofs),
                               weight=1.0 if self.balance and len(out) > 1 else 0.0))
        gaze = gaze_task(figure, bones, s0, up, (mv[index[eff]], mov), self.eyes) if self.gaze else None
        out += [gaze] if gaze is not None else []
        bounded = ranges_task(figure, bones, up, self.ranges)  # only where the movable set moves what it reads
        if bounded is not None and any(np.any(mv[index[n] if n == bounded.hips else c.parent[index[n]]] & mov)
                                       for n in bounded.nodes):  # the hips' turn, the other nodes' origins
            out.append(bounded)
        groups = _spine_groups(figure, bones, set(dofs.tolist()))
        if groups and self.spread > 0:
            out.append(Spread(joints=groups, weight=self.spread))
        out += [Hang(top=top, up=tuple(up), weight=self.hang) for top, _ in arms]
        out += [t for top, _ in arms if self.clear > 0 and (pts := _arm_points(figure, bones, top)) and
                (t := free_arm_clear(figure, bones, top, pts, s0.p, self.volumes, self.clear)) is not None]
        comfort = figure.rest_pose()
        for key, v in dict(self.preferred).items():
            if key not in figure.dof_names:
                raise IKError(unknown_name("DOF (preferred)", key, figure.dof_names))
            comfort[figure.dof_names.index(key)] = float(v)
        out.append(Posture(pose=comfort, dofs=tuple(d for d in dofs.tolist() if d not in arm_dofs),
                           weight=self.comfort))
        if self.prior is not None and self.prior_weight > 0:
            out.append(Prior(prior=self.prior, weight=self.prior_weight))
        return out


def _spine_groups(figure: Figure, bones: Any, movable: set[int]) -> tuple[tuple[str, ...], ...]:
    """The spine's joints (the nodes from the spine bone to the chest bone) that have a movable revolute DOF, as one
    group of node names for :class:`Spread` (which compares their turns from rest in one frame, whatever their rest
    turns and Euler orders); no group with fewer than two."""
    top, bottom = bones.get("spine"), bones.get("chest")
    if top is None or bottom is None:
        return ()
    path = list(figure.path_to(bottom))
    names = [a.child.name for a in path]
    if top not in names:
        return ()
    rev = figure.compiled.dof_revolute
    group = tuple(a.child.name for a in path[names.index(top):]
                  if any(d in movable and rev[d] for d in figure.joint_dofs[a.joint.name]))
    return (group,) if len(group) >= 2 else ()


def _arm_points(figure: Figure, bones: Any, top: str) -> tuple[str, ...]:
    """The joints of a free arm kept clear of the body: those on the path from below its upper arm to its hand
    (elbow and wrist)."""
    side = "l" if top in (bones.get("clavicle_l"), bones.get("upper_arm_l")) else "r"
    upper, hand = bones.get(f"upper_arm_{side}"), bones.get(f"hand_{side}")
    if upper is None or hand is None:
        return ()
    path = [a.child.name for a in figure.path_to(hand)]
    return tuple(path[path.index(upper) + 1:]) if upper in path else ()


def _free_arms(figure: Figure, bones: Any, effector: str, mov: NDArray[np.bool_]
               ) -> list[tuple[str, tuple[int, ...]]]:
    """Each free arm (the effector is not on it, some of its DOFs move): its top node (clavicle or upper arm) and its
    movable DOFs."""
    c = figure.compiled
    eff_path = {a.child.name for a in figure.path_to(effector)}
    out = []
    for side in ("l", "r"):
        top = bones.get(f"clavicle_{side}") or bones.get(f"upper_arm_{side}")
        if top is None or top in eff_path:
            continue
        i0 = c.node_names.index(top)
        below = np.zeros(c.node_count, dtype=bool)
        below[i0] = True
        for i in range(i0 + 1, c.node_count):
            below[i] = bool(c.parent[i] >= 0 and below[c.parent[i]])
        own = tuple(int(d) for d in np.flatnonzero(below[c.dof_node] & mov))
        if own:
            out.append((top, own))
    return out


def NaturalProblem(figure: Figure, effector: str, chain: str | Iterable[str] | None, priors: Priors, *,  # noqa: N802
                   pose: ArrayLike | None = None, tol: float = 1e-5, orientation: bool = False) -> IKProblem:
    """Deprecated: ``priors.problem(figure, effector, chain, pose=, tol=, orientation=)`` (an :class:`IKProblem`)."""
    warnings.warn("NaturalProblem is deprecated: use Priors.problem(figure, effector, chain, ...), an IKProblem",
                  DeprecationWarning, stacklevel=2)
    if not isinstance(priors, Priors):
        raise IKError(f"expected Priors, got {type(priors).__name__}")
    return priors.problem(figure, effector, chain, pose=pose, tol=tol, orientation=orientation)
