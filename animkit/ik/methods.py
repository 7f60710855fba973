"""Solver objects: each IK method with the options it, and only it, takes.

    LM()                      Δθ = (JᵀJ + λI)⁻¹JᵀV, λ adapted (the default; animkit.ik.lm)
    Pseudoinverse()          Δθ = α J⁺V            (the seeds' update; "lu": Jᵀ(JJᵀ)⁻¹V by LU)
    DLS(damping)              Δθ = α Jᵀ(JJᵀ + λ²I)⁻¹V  (adaptive=True: λ from the smallest singular value)
    Transpose()               Δθ = α JᵀV  (α = Buss's best step when not given)
    NullSpace(alpha, comfort) Δθ = J⁺V + (I − J⁺J) z,  z = −α ∂(θ − θc)²/∂θ = 2α(θc − θ)   (α > 0 pulls toward θc)
    CCD()                     one DOF at a time, outermost first
    TwoBone(pole)             analytic, law of cosines
    FABRIK()                  forward-and-backward reaching on joint positions (Aristidou & Lasenby 2011)

A solver is a frozen value: build it once, hand it to :class:`~animkit.ik.IKProblem` (or to
:func:`~animkit.ik.solve`), reuse it. An option a solver does not take is not a field of it, so it cannot be given
to the wrong one. The Jacobian solvers share the seeds' step options: ``alpha`` (θ += α·d), ``normalised``
(seed 000: the task-space step α·V/|V|, so the effector moves α toward the goal to first order), ``clamp`` (the
task-space error is shortened to at most this length before the step:
the seed's "pull the goal toward the end effector", which lets the pseudoinverse stretch toward a target out of
reach instead of stepping wildly at the stretched singularity; None: no clamp) and ``max_step`` (the largest
|Δθ_j| per iteration; None, the default: no cap). See docs/derivations.md for the equations.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import ClassVar, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import IKError, unknown_name
from animkit.ik.analytic import two_bone_step
from animkit.ik.constants import POLISH_ITERS
from animkit.ik.fabrik import check_fabrik, fabrik_params, fabrik_step, solve_compiled, solve_packed
from animkit.ik.lm import lanes_with_restarts, lm_single, packed_params, run_lm
from animkit.ik.problem import ChainModel, elbow_link
from animkit.ik.solvers import (
    LoopOutput,
    Options,
    StepInput,
    run,
    step_ccd,
    step_dls,
    step_dls_adaptive,
    step_lm,
    step_nullspace,
    step_pinv,
    step_pinv_lu,
    step_transpose,
)
from animkit.ik.stack import TaskStack, lm_stack
from animkit.model.figure import Figure

__all__ = ["Setup", "Solver", "SteppedSolver", "LM", "Pseudoinverse", "DLS", "Transpose", "NullSpace", "CCD", "TwoBone",
           "FABRIK"]

Array = NDArray[np.float64]


def _number(owner: str, name: str, value: object, *, allow_zero: bool = False, allow_negative: bool = False
            ) -> float:
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise IKError(f"{owner}: {name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or (not allow_negative and (v < 0 or (v == 0 and not allow_zero))):
        bound = "" if allow_negative else " >= 0" if allow_zero else " > 0"
        raise IKError(f"{owner}: {name} must be a finite number{bound}, got {value!r}")
    return v


def _iterations(owner: str, value: object) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise IKError(f"{owner}: max_iter must be an integer >= 1, got {value!r}")
    return int(value)


def _vector3(owner: str, name: str, value: ArrayLike | None) -> Array | None:
    if value is None:
        return None
    v = np.asarray(value, dtype=float)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise IKError(f"{owner}: {name} must be a finite 3-vector, got {value!r}")
    return v


@dataclass(frozen=True)
class Setup:
    """What a solver reads of a problem when it makes its loop settings (:meth:`Solver.setup`)."""

    figure: Figure
    model: ChainModel
    orientation: bool
    row_weights: Array
    tol: float
    orientation_tol: float


@dataclass(frozen=True, eq=False, kw_only=True)
class Solver(ABC):
    """Base of the solver objects: ``name`` (the method), ``max_iter``, and a check of the fields.

    Each solver makes its own loop settings from the problem (:meth:`setup`) and runs (:meth:`run`): the shared loop
    :func:`animkit.ik.solvers.run` with its own step (:class:`SteppedSolver`), or a loop of its own (BFGS and
    conjugate gradients, :class:`~animkit.ik.objective.DescentSolver`). A new solver is one class in one file."""

    name: ClassVar[str]
    jacobian: ClassVar[bool] = True
    takes_tasks: ClassVar[bool] = False  # True: every problem runs through solve_stack (the task objects themselves)
    max_iter: int = 100

    @property
    def step_name(self) -> str:
        """The method's name in results and tables."""
        return self.name

    def setup(self, s: Setup) -> Options:
        """The loop's settings for this problem (checked against it)."""
        return Options(tol=s.tol, orientation_tol=s.orientation_tol, max_iter=self.max_iter,
                       row_weights=s.row_weights, alpha=1.0 if self.jacobian else None)

    @abstractmethod
    def run(self, model: ChainModel, q0: Array, P: Array, R: Array | None, opts: Options, *,
            first_success: bool = False) -> LoopOutput:
        """Iterate from q0 (B, n) toward P (B, E, 3) and R (B, E, 3, 3) or None."""

    def solve_stack(self, stack: TaskStack, q0: Array) -> LoopOutput:
        """Minimise a problem made of tasks beyond reaches (:mod:`animkit.ik.stack`) from q0 (n,)."""
        raise IKError(f"{type(self).__name__} solves reach tasks only; for Gaze, Plant, Balance, Posture, Spread or "
                      f"Cost tasks use LM, BFGS or CG")

    def relaxes(self, model: ChainModel) -> bool:
        """Whether a run that did not converge is retried through relaxed limits (LM's strategy)."""
        return False

    def packed(self, model: ChainModel, opts: Options, orientation: bool) -> Array | None:
        """The compiled single-solve path's parameters (None: this solver has none)."""
        return None

    #: True: :meth:`packed`'s parameters run through :meth:`run_packed` (the solver's own compiled call), not LM's
    own_packed: ClassVar[bool] = False

    def run_packed(self, params: Array, target: Array, q0: Array) -> tuple[Array, float, int, Array] | None:
        """One problem from q0 (n,) by the solver's own packed compiled call: (values, position error, iterations,
        error history) where it converged, else None (the checked path runs it)."""
        return None

    def serial(self, model: ChainModel, opts: Options) -> bool:
        """Whether random restarts run one at a time (each stops early when it stalls) rather than 8 at once."""
        return False

    def _check(self) -> None:
        owner = type(self).__name__
        object.__setattr__(self, "max_iter", _iterations(owner, self.max_iter))
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("damping", "rcond"):
                object.__setattr__(self, f.name, _number(owner, f.name, v, allow_zero=True))
            elif f.name in ("alpha", "clamp", "max_step", "tolerance") and v is not None:
                object.__setattr__(self, f.name, _number(owner, f.name, v))
            elif f.name == "pole":
                object.__setattr__(self, f.name, _vector3(owner, f.name, v))


@dataclass(frozen=True, eq=False, kw_only=True)
class SteppedSolver(Solver):
    """A solver that takes its own step, Δθ = step(s), in the shared loop :func:`animkit.ik.solvers.run` (every
    solver here but BFGS and CG; LM also has compiled loops of its own)."""

    @abstractmethod
    def step(self, s: StepInput) -> Array:
        """Δθ (b, n) of one iteration of the shared loop."""

    def run(self, model: ChainModel, q0: Array, P: Array, R: Array | None, opts: Options, *,
            first_success: bool = False) -> LoopOutput:
        """The shared loop with :meth:`step`, from q0 (B, n) toward P (B, E, 3) and R (B, E, 3, 3) or None."""
        return run(model, self.step, q0, P, R, opts, jacobian=self.jacobian)


def _secondary_tasks(sv: Solver, s: Setup, o: Options) -> Options:
    """The options of the secondary tasks a solver takes: ``priority`` (needs two effectors) and ``pole``."""
    priority = bool(getattr(sv, "priority", False))
    if priority and len(s.model.effectors) < 2:
        raise IKError(f"{type(sv).__name__}(priority=True) needs two or more effectors, got {len(s.model.effectors)}")
    pole = getattr(sv, "pole", None)
    return replace(o, priority=priority, pole=pole, elbow_link=-1 if pole is None else elbow_link(s.model))


@dataclass(frozen=True, eq=False, kw_only=True)
class _JacobianStep(SteppedSolver):
    """The seeds' step options shared by the pseudoinverse family (see the module docstring)."""

    alpha: float = 1.0
    normalised: bool = False
    clamp: float | None = None
    max_step: float | None = None
    pole: ArrayLike | None = None  # bend-plane hint for effector 0's elbow/knee (a secondary task)
    priority: bool = False  # later effectors in the null space of the first

    def setup(self, s: Setup) -> Options:
        return replace(_secondary_tasks(self, s, super().setup(s)), alpha=self.alpha, normalised=self.normalised,
                       clamp=self.clamp, max_step=self.max_step)


@dataclass(frozen=True, eq=False, kw_only=True)
class LM(SteppedSolver):
    """Levenberg–Marquardt on limit-free coordinates with a homotopy out of the start (animkit.ik.lm); ``damping``
    is the starting λ; ``relax`` retries a run that did not converge through the relaxed revolute limits and, for a 6D
    target, position first and then the full task (turn it off where poses must stay near the start, e.g. the
    frames of a bake). ``stall`` = (k, r): a run on a serial chain
    stops when its error fell by less than the factor r over k iterations (a run that will not converge hands over
    to the next strategy sooner: on the Panda 6D benchmark, 30 % fewer iterations for 0.5 % fewer converged;
    None: off). ``stiffness`` (Blender's ik_stiffness): joint or DOF name → s in [0, 1); it is the metric of the
    damping: each step solves (J_φᵀJ_φ + λ(I + K) + μD)Δφ = J_φᵀV − μDφ with K = diag(s/(1 − s)), which for a
    redundant chain is the K-weighted damped least-squares step W⁻¹J_φᵀ(J_φW⁻¹J_φᵀ + λI)⁻¹V (W = I + K): a stiff
    DOF takes a smaller share of every step, as λ → 0 too, while the step stays Gauss–Newton's on the task, so a
    reachable target is reached as fast as without stiffness."""

    name: ClassVar[str] = "lm"
    damping: float = 1.0
    relax: bool = True
    max_iter: int = 100
    stall: tuple[int, float] | None = (20, 0.5)  # stop a run when ‖WV‖ fell by less than half over 20 iterations
    stiffness: Mapping[str, float] | None = None  # joint (or DOF) name → s in [0, 1): how much it prefers to stay
    max_step: float | None = None
    pole: ArrayLike | None = None
    priority: bool = False

    def __post_init__(self) -> None:
        self._check()
        if self.stiffness is not None:
            for k, v in dict(self.stiffness).items():
                if not isinstance(k, str) or not 0.0 <= _number("LM", f"stiffness[{k!r}]", v, allow_zero=True) < 1.0:
                    raise IKError(f"LM: stiffness[{k!r}] must be in [0, 1), got {v!r}")

    def setup(self, s: Setup) -> Options:
        kappa = None
        if self.stiffness:
            fig = s.figure
            per_dof = np.zeros(fig.dof_count)
            for name, v in self.stiffness.items():
                if name in fig.joint_dofs:
                    per_dof[fig.joint_dofs[name]] = float(v)
                elif name in fig.dof_names:
                    per_dof[fig.dof_index(name)] = float(v)
                else:
                    raise IKError(unknown_name("stiffness joint", name, list(fig.joint_names) + list(fig.dof_names)))
            sc = per_dof[s.model.dofs]
            kappa = sc / (1.0 - sc)
        stall = self.stall if self.stall is not None else (0, 0.5)
        return replace(_secondary_tasks(self, s, super().setup(s)), damping=self.damping, max_step=self.max_step,
                       stall_window=int(stall[0]), stall_ratio=float(stall[1]), stiffness=kappa,
                       polish=POLISH_ITERS)

    def step(self, s: StepInput) -> Array:
        return step_lm(s)

    def _own_loop(self, model: ChainModel, opts: Options) -> bool:
        """Neither priority nor a pole nor a cone: LM runs its own loop (:mod:`animkit.ik.lm`)."""
        return not opts.priority and opts.pole is None and not model.cones

    def run(self, model: ChainModel, q0: Array, P: Array, R: Array | None, opts: Options, *,
            first_success: bool = False) -> LoopOutput:
        if self._own_loop(model, opts):
            return run_lm(model, q0, P, R, opts, first_success=first_success)
        return run(model, step_lm, q0, P, R, opts, damped=True)

    def solve_stack(self, stack: TaskStack, q0: Array) -> LoopOutput:
        return lm_stack(stack, q0, self.max_iter)

    def relaxes(self, model: ChainModel) -> bool:
        return self.relax and not model.cones  # cones: the shared loop projects

    def packed(self, model: ChainModel, opts: Options, orientation: bool) -> Array | None:
        return packed_params(model, opts, orientation, self.relaxes(model))

    def serial(self, model: ChainModel, opts: Options) -> bool:
        return lm_single(model, opts)

    def lanes(self, model: ChainModel, q0: Array, P: Array, R: Array | None, opts: Options, restarts: int,
              seed: int, pull: float, index0: int) -> tuple[LoopOutput, NDArray[np.intp]] | None:
        """A batch with restarts in the compiled lanes (None where they do not take it)."""
        if not self._own_loop(model, opts):
            return None
        return lanes_with_restarts(model, q0, P, R, opts, restarts, seed, pull, index0)


@dataclass(frozen=True, eq=False, kw_only=True)
class Pseudoinverse(_JacobianStep):
    """θ += α J⁺V; ``method`` "svd" (J⁺ = VΣ⁺Uᵀ, singular values below rcond·σ_max dropped) or "lu"
    (Jᵀ(JJᵀ)⁻¹V, the system solved by LU, no inverse formed). By default the error is clamped to 0.05 (scene units)
    and singular values below 1 % of the largest are dropped (svd), so that a target out of reach is stretched
    toward instead of stepped around wildly at the stretched singularity (the humanoid's arm case: 0.163 m from
    the target, the closest possible), and no DOF turns more than 0.5 rad per iteration (an exact inverse of a
    square J near a singularity asks for huge turns: LU on the three-axis arm converges on 1 of 12 targets
    without it, 10 with it). ``Pseudoinverse(clamp=None, rcond=1e-6, max_step=None)`` is the bare seed.
    A run that does not converge returns the best pose it visited."""

    name: ClassVar[str] = "pinv"
    method: Literal["svd", "lu"] = "svd"
    clamp: float | None = 0.05
    max_step: float | None = 0.5
    rcond: float = 1e-2
    max_iter: int = 200

    def __post_init__(self) -> None:
        if self.method not in ("svd", "lu"):
            raise IKError(unknown_name("pseudoinverse method", str(self.method), ["svd", "lu"]))
        self._check()

    @property
    def step_name(self) -> str:
        return "pinv" if self.method == "svd" else "pinv-lu"

    def setup(self, s: Setup) -> Options:
        return replace(super().setup(s), rcond=self.rcond)

    def step(self, s: StepInput) -> Array:
        return step_pinv(s) if self.method == "svd" else step_pinv_lu(s)


@dataclass(frozen=True, eq=False, kw_only=True)
class DLS(_JacobianStep):
    """Damped least squares θ += α Jᵀ(JJᵀ + λ²I)⁻¹V; ``adaptive``: λ² = λ_max²(1 − (σ_min/ε)²) when σ_min < ε
    (ε = 10 λ_max), else 0, with λ_max = ``damping``."""

    name: ClassVar[str] = "dls"
    damping: float = None  # type: ignore[assignment]  # λ; None: 0.05, or λ_max = 0.1 when adaptive
    adaptive: bool = False
    clamp: float | None = 0.1
    max_iter: int = 300

    def __post_init__(self) -> None:
        if self.damping is None:
            object.__setattr__(self, "damping", 0.1 if self.adaptive else 0.05)
        self._check()

    @property
    def step_name(self) -> str:
        return "dls-adaptive" if self.adaptive else "dls"

    def setup(self, s: Setup) -> Options:
        return replace(super().setup(s), damping=self.damping)

    def step(self, s: StepInput) -> Array:
        return step_dls_adaptive(s) if self.adaptive else step_dls(s)


@dataclass(frozen=True, eq=False, kw_only=True)
class Transpose(_JacobianStep):
    """θ += α JᵀV; without ``alpha`` (None) the step is Buss's best along JᵀV: ⟨V, JJᵀV⟩ / ‖JJᵀV‖², which grows
    without bound as JJᵀV → 0 at a stretched chain: hence the visible default ``max_step`` = 0.5 rad."""

    name: ClassVar[str] = "transpose"
    alpha: float | None = None  # type: ignore[assignment]
    max_step: float | None = 0.5
    max_iter: int = 3000

    def __post_init__(self) -> None:
        self._check()

    def step(self, s: StepInput) -> Array:
        return step_transpose(s)


@dataclass(frozen=True, eq=False, kw_only=True)
class NullSpace(_JacobianStep):
    """Δθ = J⁺V + (I − J⁺J) z with the seeds' z = −α ∂(θ − θc)²/∂θ = 2α(θc − θ).

    Sign (the seeds'): z is −α times the gradient of the squared distance to the comfort pose θc, so α > 0 (the
    default 0.05) moves θ toward θc inside the null space and α < 0 away from it. ``alpha`` is one number or one per
    DOF of the figure (a stiffer DOF: a larger α). ``comfort``: a full pose (None: mid-range of each limited DOF, the
    rest pose for the others). Here ``alpha`` is the seed's null-space α; the step itself is taken whole
    (``normalised``, ``clamp`` and ``max_step`` apply as for the other Jacobian solvers)."""

    name: ClassVar[str] = "nullspace"
    alpha: float | ArrayLike = 0.05  # type: ignore[assignment]
    comfort: ArrayLike | None = None
    clamp: float | None = 0.05
    rcond: float = 1e-2
    max_iter: int = 300

    def __post_init__(self) -> None:
        a = np.asarray(self.alpha, dtype=float)
        if not np.all(np.isfinite(a)) or a.ndim > 1:
            raise IKError(f"NullSpace: alpha must be a finite number or a vector, got {self.alpha!r}")
        for name in ("clamp", "max_step"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, _number("NullSpace", name, v))
        object.__setattr__(self, "max_iter", _iterations("NullSpace", self.max_iter))
        object.__setattr__(self, "pole", _vector3("NullSpace", "pole", self.pole))

    def setup(self, s: Setup) -> Options:
        model, fig = s.model, s.figure
        if self.comfort is None:
            lo, hi = model.lower, model.upper
            finite = np.isfinite(lo) & np.isfinite(hi)
            des = np.where(finite, 0.5 * (np.where(finite, lo, 0.0) + np.where(finite, hi, 0.0)),
                           fig.rest_pose()[model.dofs])
        else:
            d = np.asarray(self.comfort, dtype=float)
            if d.shape != (fig.dof_count,) or not np.all(np.isfinite(d)):
                raise IKError(f"NullSpace: comfort must be a full pose ({fig.dof_count},) of finite numbers, "
                              f"got shape {d.shape}")
            des = d[model.dofs]
        gv = np.asarray(self.alpha, dtype=float)
        if gv.ndim == 1 and gv.shape == (fig.dof_count,):
            gv = gv[model.dofs]
        g = np.broadcast_to(gv, (model.n,)).astype(float) if gv.ndim == 0 else gv
        if g.shape != (model.n,):
            raise IKError(f"NullSpace: alpha must be one number or one per DOF ({fig.dof_count},), got {self.alpha!r}")
        return replace(super().setup(s), alpha=1.0, rcond=self.rcond, desired=des, gains=g)

    def step(self, s: StepInput) -> Array:
        return step_nullspace(s)


@dataclass(frozen=True, eq=False, kw_only=True)
class CCD(SteppedSolver):
    """Cyclic coordinate descent: each DOF, outermost first, turns the effector toward the target."""

    name: ClassVar[str] = "ccd"
    jacobian: ClassVar[bool] = False
    max_iter: int = 500

    def __post_init__(self) -> None:
        self._check()

    def step(self, s: StepInput) -> Array:
        return step_ccd(s)


@dataclass(frozen=True, eq=False, kw_only=True)
class TwoBone(SteppedSolver):
    """Analytic two-bone IK (law of cosines); ``pole`` picks the bend plane."""

    name: ClassVar[str] = "two-bone"
    jacobian: ClassVar[bool] = False
    pole: ArrayLike | None = None
    max_iter: int = 10

    def __post_init__(self) -> None:
        self._check()

    def setup(self, s: Setup) -> Options:
        return _secondary_tasks(self, s, super().setup(s))

    def step(self, s: StepInput) -> Array:
        return two_bone_step(s.model, s.q, s.P, s.R, s.opts.pole)


@dataclass(frozen=True, eq=False, kw_only=True)
class FABRIK(SteppedSolver):
    """Forward-and-backward reaching IK (Aristidou & Lasenby 2011): the paper's passes on joint positions, each joint
    turned the shortest way toward its children's new positions (no spin about a bone), with its constrained version
    inside the passes (hinge planes, cones, then the DOF limits); several effectors on a tree (sub-bases at the
    centroid of their branches). A hinge fits its one angle to every point below it; an iteration that gains less
    than 80 % of the distance (a joint held at a limit) takes the least-squares fit of each joint's whole subtree
    instead where that does better. ``published=False``: the subtree fit every iteration (the earlier default: it
    spins bones)."""

    name: ClassVar[str] = "fabrik"
    jacobian: ClassVar[bool] = False
    max_iter: int = 200
    published: bool = True  # the paper's forward pass (each joint toward its children); False: the subtree fit

    def __post_init__(self) -> None:
        self._check()

    def setup(self, s: Setup) -> Options:
        check_fabrik(s.model, s.orientation)
        return super().setup(s)

    def step(self, s: StepInput) -> Array:
        return fabrik_step(s.model, s.q, s.fr, s.P, published=self.published)

    own_packed: ClassVar[bool] = True

    def packed(self, model: ChainModel, opts: Options, orientation: bool) -> Array | None:
        return None if orientation else fabrik_params(model, opts, self.published)

    def run_packed(self, params: Array, target: Array, q0: Array) -> tuple[Array, float, int, Array] | None:
        return solve_packed(params, target, q0)

    def run(self, model: ChainModel, q0: Array, P: Array, R: Array | None, opts: Options, *,
            first_success: bool = False) -> LoopOutput:
        """The shared loop, returning each run's last pose (its steps never move the effectors away); compiled
        (:mod:`.fabrik_jit`) where kernels run and the chain has no cones."""
        if R is None:
            out = solve_compiled(model, q0, P, opts, self.published)
            if out is not None:
                return out
        return run(model, self.step, q0, P, R, opts, jacobian=False, keep_last=True)
