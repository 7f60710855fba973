"""The IK problem object, :class:`IKProblem`: checked and compiled once, then one target, a batch or a bake (the
strategy around each solver's run: :mod:`animkit.ik.strategy`)."""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit import jit
from animkit.errors import AnimkitError, IKError, unknown_name
from animkit.ik.lm import packed_pays
from animkit.ik.lm_strategy_jit import FOLD, OUT_HISTORY, OUT_VALID, finish_packed, lm_packed, out_size, packed_entry
from animkit.ik.methods import LM, Setup, Solver
from animkit.ik.problem import ChainModel, all_rigid, check_effectors, compile_chain, movable_dofs, parse_targets
from animkit.ik.registry import solver_from_name
from animkit.ik.result import IKBatchResult, IKResult, Reason
from animkit.ik.solvers import LoopOutput, Options
from animkit.ik.stack import TaskStack, aimed_tasks, moved_nodes, stack_tasks, task_anchors
from animkit.ik.strategy import (
    RESTART_MAX_ITER,
    RESTART_PULL,
    RESTART_STALL,
    _batch_restarts,
    _reachability,
    _relax,
    _restart,
    _run_chunked,
    settle,
)
from animkit.ik.tasks import Reach, Task, body_from_figure, configuration
from animkit.model.figure import Figure

__all__ = ["IKProblem"]

Array = NDArray[np.float64]


def _check_figure(figure: Figure) -> Figure:
    if not isinstance(figure, Figure):
        raise IKError(f"expected a Figure, got {type(figure).__name__}")
    return figure


def _positive(name: str, value: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise IKError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise IKError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def _as_tasks(value: object) -> tuple[Task, ...] | None:
    """``value`` as a tuple of tasks when it is a task or a non-empty sequence of them, else None (a chain)."""
    if isinstance(value, Task):
        return (value,)
    if isinstance(value, (list, tuple)) and value and all(isinstance(t, Task) for t in value):
        return tuple(value)
    if isinstance(value, (list, tuple)) and any(isinstance(t, Task) for t in value):
        raise IKError(f"tasks: expected Task objects only, got {[type(t).__name__ for t in value]}")
    return None


def _solver_object(solver: Solver | str | None) -> Solver:
    if solver is None:
        return LM()
    if isinstance(solver, Solver):
        return solver
    return solver_from_name(solver)


def _one_target(t: Array, orientation: bool) -> tuple[Array, Array | None] | None:
    """One effector's target as (1, 3) and (1, 3, 3) when it is a well-formed array of the problem's kind
    (finite; a 4×4 rigid: |RRᵀ − I| ≤ 1e-6, det R > 0, last row 0 0 0 1), else None (the full check then says
    what is wrong). In Python floats: on small arrays each NumPy call costs more than this whole check."""
    if orientation:
        if t.shape != (4, 4):
            return None
        (a, b, c, x), (d, e, f, y), (g, h, i, z), last = t.tolist()
        if not (math.isfinite(x + y + z) and last == [0.0, 0.0, 0.0, 1.0]):  # NaN/inf in R fail the test below
            return None
        for u, v, ref in ((a * a + b * b + c * c, 0.0, 1.0), (d * d + e * e + f * f, 0.0, 1.0),
                          (g * g + h * h + i * i, 0.0, 1.0), (a * d + b * e + c * f, 0.0, 0.0),
                          (a * g + b * h + c * i, 0.0, 0.0), (d * g + e * h + f * i, 0.0, 0.0)):
            if not abs(u + v - ref) <= 1e-6:
                return None
        if not a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g) > 0:
            return None
        return np.array([[x, y, z]]), np.array([[[a, b, c], [d, e, f], [g, h, i]]])
    if t.shape != (3,):
        return None
    x, y, z = t.tolist()
    if not math.isfinite(x + y + z):
        return None
    return np.array([[x, y, z]]), None


def _row_weights(E: int, weights: ArrayLike | None, orientation_weight: float, orientation: bool) -> Array:
    """√w per task row: each effector's weight, its orientation rows times the orientation weight."""
    ow = _positive("orientation_weight", orientation_weight)
    if weights is None:
        wv = np.ones(E)
    else:
        wv = np.asarray(weights, dtype=float).reshape(-1)
        if wv.shape != (E,) or not np.all(np.isfinite(wv)) or np.any(wv <= 0):
            raise IKError(f"weights: expected {E} positive numbers (one per effector), got {weights!r}")
    return np.concatenate([math.sqrt(w) * np.array([1.0, 1.0, 1.0] + ([ow] * 3 if orientation else [])) for w in wv])


_PACKED_REASONS: tuple[Reason, ...] = ("converged", "stalled", "max_iterations", "unreachable")  # lm_packed's codes


@dataclass(frozen=True)
class _Packed:
    """What :meth:`IKProblem.solve`'s compiled path keeps per chain: the parameter array (None: the path does not
    apply), the start's chain values, the chain's DOF indices, the output array's length."""

    model: ChainModel
    params: Array | None
    q0: Array
    dofs: NDArray[np.intp]
    n: int
    size: int


class IKProblem:
    """One IK problem, checked once: effectors and their target kind, the movable set, weights, limits, a solver.

        problem = IKProblem(figure, "hand_r", chain="arm", orientation=True, solver=LM())
        r = problem.solve(target)                 # one 4×4 target, from the problem's pose
        b = problem.solve_batch(targets)          # (B, 4, 4), iterating together
        k = problem.bake(frames)                  # (F, 4, 4), each frame warm-started from the one before

    The sub-chain is compiled once (everything outside the movable set folded into constants at ``pose``, the rest
    pose when None) and reused by every solve; a start pose whose frozen DOFs differ from ``pose`` recompiles it
    (and the problem keeps the new one). ``orientation`` is the target kind: False, positions (3,) per effector;
    True, poses (4, 4). ``weights`` (one per effector) and ``orientation_weight`` weight the task rows;
    ``tol`` (scene units) and ``orientation_tol`` (radians) decide convergence. ``solver`` is a solver object
    (:mod:`animkit.ik.methods`) or a name (its default options); None is :class:`~animkit.ik.LM`.
    """

    def __init__(self, figure: Figure, effector: str | Sequence[str] | None,
                 chain: str | Iterable[str] | Task | Sequence[Task] | None = None,
                 *, tasks: Sequence[Task] | None = None, pose: ArrayLike | None = None, orientation: bool = False,
                 solver: Solver | str | None = None, weights: ArrayLike | None = None,
                 orientation_weight: float = 1.0, tol: float = 1e-5, orientation_tol: float = 1e-4) -> None:
        fig = _check_figure(figure)
        self.figure = fig
        self.solver = _solver_object(solver)
        self.tasks: tuple[Task, ...] = ()
        self._stack: TaskStack | None = None
        if tasks is not None:  # IKProblem(figure, chain, tasks=[...])
            if chain is not None:
                raise IKError("IKProblem(figure, chain, tasks=[...]): the chain is the second argument")
            chain = _as_tasks(list(tasks)) or ()
            if not chain:
                raise IKError("tasks: expected a non-empty sequence of Task objects")
        given = _as_tasks(chain)
        chain_spec: str | Iterable[str] | None = chain  # type: ignore[assignment]
        if given is not None:  # IKProblem(figure, chain, tasks): the reaches become the effectors
            self.tasks = given
            chain_spec = effector
            effector, weights, orientation, orientation_weight = task_anchors(given, weights, orientation_weight)
        assert effector is not None
        names = check_effectors(fig, effector)
        self.effectors = names
        self.orientation = bool(orientation)
        try:
            p = fig.rest_pose() if pose is None else fig.check_pose(pose).astype(float)
        except AnimkitError as exc:
            raise IKError(str(exc)) from None
        if p.ndim != 1:
            raise IKError(f"pose: expected one pose ({fig.dof_count},), got shape {p.shape}")
        self.pose = p.copy()
        self.chain = chain_spec
        movable = movable_dofs(fig, chain_spec, names)
        label = "the movable set" if chain_spec is None else f"movable set {chain_spec!r}"
        self._label = label
        stacked = bool(self.tasks) and (self.solver.takes_tasks or not all(isinstance(t, Reach) for t in self.tasks))
        # a problem of tasks beyond reaches moves its whole movable set (a free arm, the neck), not only the paths
        # to its effectors: the chain is compiled out to every node the set moves
        self.model = compile_chain(fig, self.pose, movable, names + (moved_nodes(fig, movable, names)
                                                                     if stacked else ()), label)
        frozen = np.ones(fig.dof_count, dtype=bool)
        frozen[self.model.dofs] = False
        self._frozen = np.flatnonzero(frozen)
        self._row_w = _row_weights(len(names), weights, orientation_weight, self.orientation)
        self.tol = _positive("tol", tol)
        self.orientation_tol = _positive("orientation_tol", orientation_tol)
        if stacked:
            body = body_from_figure(fig)
            start = configuration(fig, self.pose, body)
            self._stack = TaskStack(fig, body, self.model, self.pose, stack_tasks(self.tasks, start), self.tol,
                                    self.orientation_tol)
        self._set_solver(self.solver)

    def __repr__(self) -> str:
        chain = "" if self.chain is None else f", chain {self.chain!r}"
        target = "poses (4, 4)" if self.orientation else "positions (3,)"
        tasks = f", tasks [{', '.join(type(t).__name__ for t in self.tasks)}]" if self.tasks else ""
        return (f"IKProblem({self.figure.name!r}{chain}: {len(self.model.dofs)} of {self.figure.dof_count} DOFs "
                f"move {', '.join(repr(e) for e in self.effectors)} to {target}{tasks}, "
                f"solver {type(self.solver).__name__})")
    def _set_solver(self, sv: Solver) -> None:
        """The loop's settings, made by the solver from the problem (:meth:`Solver.setup`)."""
        self._method = sv.step_name
        self._relax = sv.relaxes(self.model)
        self._opts = sv.setup(Setup(self.figure, self.model, self.orientation, self._row_w, self.tol,
                                    self.orientation_tol))
        self._fast: _Packed | None = None
        self._spent = 0  # iterations asked of single solves so far (when compiling the loop pays: lm.packed_pays)
        self._entry: Callable[..., None] | None = None  # lm_strategy_jit.packed_entry() once the compiled loop has run

    def using(self, solver: Solver | str) -> IKProblem:
        """The same problem (sharing its compiled chain) with another solver."""
        other = copy.copy(self)
        other.solver = _solver_object(solver)
        other._set_solver(other.solver)
        return other

    @property
    def options(self) -> Options:
        """The loop's settings as the solver made them: tolerances, iteration cap, damping, stiffness
        κ = s / (1 − s) per chain DOF, row weights (read by the compiled loops; set through the solver)."""
        return self._opts

    # --- inputs ------------------------------------------------------------------------------------------

    def _targets(self, target: ArrayLike) -> tuple[Array, Array | None]:
        if len(self.effectors) == 1 and isinstance(target, np.ndarray):  # the common case, checked in NumPy
            fast = _one_target(target, self.orientation)
            if fast is not None:
                return fast
        P, R = parse_targets(target, len(self.effectors))
        if (R is not None) != self.orientation:
            raise IKError(f"this problem's targets are {'poses (4, 4)' if self.orientation else 'positions (3,)'}"
                          f"; got {'a pose' if R is not None else 'a position'} (build the problem with "
                          f"orientation={R is not None})")
        return P, R

    def _batch_targets(self, targets: ArrayLike) -> tuple[Array, Array | None]:
        E = len(self.effectors)
        try:
            T = np.asarray(targets, dtype=float)
        except (TypeError, ValueError):
            raise IKError("targets must be an array of numbers: (B, 3) or (B, 4, 4)") from None
        if E > 1 and T.ndim >= 2 and T.shape[1] == E:
            pass
        elif E == 1 and T.ndim in (2, 3):
            T = T[:, None]
        else:
            raise IKError(f"targets must have shape (B, 3) or (B, 4, 4) (or (B, {E}, ...) for {E} effectors), "
                          f"got {T.shape}")
        want = (4, 4) if self.orientation else (3,)
        if T.shape[2:] != want:
            raise IKError(f"each target must be {want} for this problem (orientation={self.orientation}), "
                          f"got {T.shape[2:]}")
        if not np.all(np.isfinite(T)):
            raise IKError("targets hold NaN/inf")
        if T.shape[0] == 0:
            raise IKError("targets is empty: expected B >= 1 targets")
        if not self.orientation:
            return T.copy(), None
        R = T[:, :, :3, :3].copy()
        if not all_rigid(T):
            raise IKError("4x4 targets must be rigid: orthonormal rotation with det +1 and last row 0 0 0 1")
        return T[:, :, :3, 3].copy(), R

    def _starts(self, start: ArrayLike | None, B: int | None) -> Array:
        """Chain values (b, n) of the start pose(s); a full pose's frozen DOFs must match (else: recompiled)."""
        model = self.model
        if start is None:
            q = self.pose[model.dofs][None]
            return q if B is None else np.repeat(q, B, 0)
        try:
            p = self.figure.check_pose(start)
        except AnimkitError as exc:
            raise IKError(str(exc)) from None
        if p.ndim == 2 and B is None:
            raise IKError(f"solve takes one start pose (D,), got shape {p.shape}; use solve_batch for many")
        base = p if p.ndim == 1 else p[0]
        fz = self._frozen
        if fz.size and not np.array_equal(base[fz], self.pose[fz]):
            self.pose = np.asarray(base, dtype=float).copy()
            self.model = compile_chain(self.figure, self.pose, model.dofs, self.effectors, self._label)
            model = self.model
        if p.ndim == 2:
            if fz.size and not np.allclose(p[:, fz], base[fz]):
                raise IKError("solve_batch: start poses may differ only in the DOFs of the chain being solved "
                              "(the others are frozen into the compiled chain once)")
            if B is not None and p.shape[0] != B:
                raise IKError(f"{p.shape[0]} start poses for {B} targets; give one pose or one per target")
            return np.asarray(p[:, model.dofs], dtype=float)
        q = np.asarray(p[model.dofs], dtype=float)[None]
        return q if B is None else np.repeat(q, B, 0)

    def _full(self, q: Array) -> Array:
        out = np.repeat(self.pose[None], len(q), 0)
        out[:, self.model.dofs] = q
        return out

    # --- solving -----------------------------------------------------------------------------------------

    def solve(self, target: ArrayLike | None = None, start: ArrayLike | None = None, *, restarts: int = 0,
              time_budget: float | None = None, seed: int = 0, targets: Mapping[str, ArrayLike] | None = None,
              weights: Mapping[str, float] | None = None, report: bool = True) -> IKResult:
        """One target (a 3-vector or a 4×4 per effector) from ``start`` (a full pose; None: the problem's pose).

        A problem made of tasks takes its targets from its tasks: ``target`` (None: the tasks' own) replaces the
        first Reach's, ``targets`` and ``weights`` (task name → value, e.g. ``{"reach hand_r": t, "gaze": p}``)
        replace any task's for this solve; ``report`` (a problem made of tasks): fill :attr:`IKResult.tasks`.

        ``restarts`` > 0 retries from random in-limit starts when the first run does not converge, until one
        converges, ``restarts`` starts have run, or ``time_budget`` seconds (counted from the call, the first run
        included) have passed (see :func:`solve`)."""
        t0 = time.perf_counter()
        if targets is not None or weights is not None or target is None:
            if not self.tasks:
                raise IKError("solve: give a target (this problem was built from effectors, not tasks)")
            if weights is not None or self._stack is not None:
                return self.retasked(target, targets, weights)._solve_tasks(start, t0, restarts, time_budget,
                                                                             seed, report)
            target = self._reach_targets(target, targets)
        if self._stack is not None:
            return self.retasked(target, None, None)._solve_tasks(start, t0, restarts, time_budget, seed, report)
        if start is None and type(restarts) is int and restarts == 0 and time_budget is None and \
                type(target) is np.ndarray:
            done = self._solve_packed(target, t0)
            if done is not None:
                return done
        P, R = self._targets(target)
        q0 = self._starts(start, None)
        if isinstance(restarts, bool) or not isinstance(restarts, (int, np.integer)) or restarts < 0:
            raise IKError(f"restarts must be an integer >= 0, got {restarts!r}")
        if time_budget is not None:
            if restarts == 0:
                raise IKError("time_budget= bounds random restarts: give restarts= > 0 with it")
            _positive("time_budget", time_budget)
        model, method = self.model, self.solver
        P = P[None]
        R = None if R is None else R[None]
        deadline = None if time_budget is None else t0 + time_budget
        opts = self._opts if not restarts else replace(self._opts, max_iter=min(self._opts.max_iter, RESTART_MAX_ITER),
                                                       stall_window=RESTART_STALL[0], stall_ratio=RESTART_STALL[1])
        out = self.solver.run(model, q0, P, R, opts)  # never cut by the deadline
        if self._relax and out.reason[0] != "converged":
            out = _relax(model, q0, P, R, opts, out)
        used = 0
        if restarts and out.reason[0] != "converged":
            out, used = _restart(model, method, q0, P, R, replace(opts, deadline=deadline, pull=RESTART_PULL), out,
                                 restarts, deadline, seed)
        out, judged = settle(model, method, P, R, opts, out)
        reach, reasons = _reachability(model, out, P, R, self._opts, judged)
        full = self.pose.copy()
        full[model.dofs] = out.q[0]
        why: Reason = reasons[0]  # type: ignore[assignment]
        return IKResult(full, why == "converged", reach[0], int(out.iterations[0]), float(out.position_error[0]),
                        float(out.orientation_error[0]), out.errors[:, 0].copy(), why, self._method, used,
                        time.perf_counter() - t0)

    def task(self, name: str) -> Task:
        """The problem's task called ``name`` (:attr:`Task.name`)."""
        for t in self.tasks:
            if t.name == name:
                return t
        raise IKError(unknown_name("task", name, [t.name for t in self.tasks]))

    def retasked(self, target: ArrayLike | None, targets: Mapping[str, ArrayLike] | None,
                 weights: Mapping[str, float] | None) -> IKProblem:
        """The same problem (sharing its compiled chain) with tasks re-aimed and re-weighted: ``target`` for the
        first Reach, ``targets`` and ``weights`` by task name."""
        names = [t.name for t in self.tasks]
        for key in list(targets or {}) + list(weights or {}):
            if key not in names:
                raise IKError(unknown_name("task", key, names))
        tasks = aimed_tasks(self.tasks, target, targets, weights)
        other = copy.copy(self)
        other.tasks = tuple(tasks)
        reaches = [t for t in tasks if isinstance(t, Reach)]
        if self._stack is not None:
            other._stack = replace(self._stack, tasks=tuple(aimed_tasks(self._stack.tasks, target, targets, weights)))
        elif weights is not None:
            ow = self._row_w.reshape(len(reaches), -1)
            other._row_w = np.concatenate([math.sqrt(t.weight) * row / max(row[0], 1e-300)
                                           for t, row in zip(reaches, ow, strict=True)])
            other._set_solver(other.solver)
        return other

    def _reach_targets(self, target: ArrayLike | None, targets: Mapping[str, ArrayLike] | None) -> Array:
        """The Reach tasks' targets, as one target (one effector) or a stack (several)."""
        t = self.retasked(target, targets, None).tasks
        got = [r.target for r in t if isinstance(r, Reach)]
        if any(g is None for g in got):
            raise IKError(f"solve: no target for {[r.name for r in t if isinstance(r, Reach) and r.target is None]}")
        arrs = [np.asarray(g, dtype=float) for g in got]
        return arrs[0] if len(arrs) == 1 else np.stack(arrs)

    def _solve_tasks(self, start: ArrayLike | None, t0: float, restarts: int, time_budget: float | None, seed: int,
                     report: bool = True) -> IKResult:
        """Solve with the tasks as they are: a problem of reaches by the chain's loops, any other by the solver's
        :meth:`~animkit.ik.methods.Solver.solve_stack`."""
        if self._stack is None:
            return self.solve(self._reach_targets(None, None), start, restarts=restarts, time_budget=time_budget,
                              seed=seed)
        if restarts or time_budget is not None:
            raise IKError("restarts: a problem with tasks beyond reaches runs one local solve")
        q0 = self._starts(start, None)[0]
        if self._stack.model is not self.model:  # the start's frozen DOFs recompiled the chain: the stack follows
            body = self._stack.body
            self._stack = TaskStack(self.figure, body, self.model, self.pose, stack_tasks(self.tasks, configuration(
                self.figure, self.pose, body)), self.tol, self.orientation_tol)
        out = self.solver.solve_stack(self._stack, q0)
        why: Reason = out.reason[0]  # type: ignore[assignment]
        pose = self._full(out.q)[0]
        return IKResult(pose, why == "converged", True if why == "converged" else None,
                        int(out.iterations[0]), float(out.position_error[0]), float(out.orientation_error[0]),
                        out.errors[:, 0].copy(), why, self._method, 0, time.perf_counter() - t0,
                        self.report(pose) if report else None)

    def report(self, pose: ArrayLike) -> dict[str, float]:
        """Each task's measure at a full pose (D,) by name (:meth:`~animkit.ik.tasks.Task.report`; its targets as
        the problem holds them); empty for a problem built from effectors."""
        if self._stack is None:
            return {t.name: t.report(configuration(self.figure, np.asarray(pose, dtype=float))) for t in self.tasks}
        c = configuration(self.figure, np.asarray(pose, dtype=float), self._stack.body)
        return {t.name: t.report(c) for t in self._stack.tasks}

    def _packed(self) -> _Packed:
        """The packed compiled path's constants for the current chain and options (built at the first solve)."""
        f = self._fast
        if f is None or f.model is not self.model:
            model = self.model
            prm = self.solver.packed(model, self._opts, self.orientation)
            f = self._fast = _Packed(model, prm, np.ascontiguousarray(self.pose[model.dofs]), model.dofs, model.n,
                                     out_size(model.n, self._opts.max_iter))
        return f

    def _solve_packed(self, target: Array, t0: float) -> IKResult | None:
        """:meth:`solve` from the problem's pose without restarts by the packed compiled loop, in one call (the first
        run, lm's retries and the reachability test all compiled: :func:`.lm_strategy_jit.lm_packed`); None where
        that path does not apply (no compiled loop, another solver, a target not of this problem's kind: the
        checked path then says why)."""
        f = self._fast
        if f is None or f.model is not self.model:
            f = self._packed()
        if f.params is None:
            return None
        if self.solver.own_packed:  # its own compiled call (FABRIK): a run not converged takes the checked path
            got = self.solver.run_packed(f.params, target, f.q0)
            if got is None:
                return None
            full = self.pose.copy()
            full[f.dofs] = got[0]
            return IKResult(full, True, True, got[2], got[1], 0.0, got[3], "converged", self._method, 0,
                            time.perf_counter() - t0)
        run = self._entry
        if run is None or not jit.enabled():
            self._spent += self._opts.max_iter
            if not packed_pays(self._opts, self._spent):
                return None
            run = lm_packed  # the checked call: it loads (or compiles) the loop the first time
        flat = target.reshape(-1)
        if not flat.flags.c_contiguous or flat.dtype != np.float64:
            flat = np.ascontiguousarray(flat, dtype=np.float64)
        n = f.n
        out = np.empty(f.size)
        run(f.params, flat, f.q0, out)
        if self._entry is None:
            self._entry = packed_entry()
        pos, ori, iters, code, valid = out[n:n + OUT_HISTORY].tolist()
        if valid == 0.0:
            return None
        if code != 0.0:  # not converged: finished in θ, its reachability decided again (a fold: the checked path)
            finish_packed(f.params, flat, out)
            pos, ori, iters, code = out[n:n + OUT_VALID].tolist()
        it = int(iters)
        if code == FOLD:
            return None  # stationary at a fold inside the reach: the checked path escapes it (strategy.settle)
        why = _PACKED_REASONS[int(code)]
        full = self.pose.copy()
        full[f.dofs] = out[:n]
        return IKResult(full, why == "converged", True if why == "converged" else False if why == "unreachable"
                        else None, it, pos, ori, out[n + OUT_HISTORY:n + OUT_HISTORY + it + 1], why, self._method, 0,
                        time.perf_counter() - t0)

    def solve_batch(self, targets: ArrayLike, starts: ArrayLike | None = None, *, restarts: int = 0, seed: int = 0,
                    quiet: bool = False) -> IKBatchResult:
        """B targets (B, 3) or (B, 4, 4) (or (B, E, ...)) from one start pose (D,) or one each (B, D).

        Problems iterate together (vectorised or compiled) in chunks of :data:`BATCH_CHUNK`, each with its own
        damping and state; a finished problem leaves the working set. Start poses may differ only in the chain's
        DOFs. A progress bar counts solved problems when the work takes over a second on a terminal.

        ``restarts`` > 0: each problem whose first run (capped as :meth:`solve`'s with restarts) ends unconverged
        runs again from random in-limit starts, up to ``restarts`` of them, until one converges; in place of lm's
        deterministic retries (which run a batch's few hard problems stage after stage and cost most of its time).
        The starts are a pure function of (``seed``, the problem's index, the attempt): the same answers whatever
        the chunking, compiled lanes or NumPy. A problem returns its first run's answer unless a restart converged or
        ended lower (its iterations and errors are then that run's)."""
        t0 = time.perf_counter()
        P, R = self._batch_targets(targets)
        B = P.shape[0]
        q0 = self._starts(starts, B)
        if isinstance(restarts, bool) or not isinstance(restarts, (int, np.integer)) or restarts < 0:
            raise IKError(f"restarts must be an integer >= 0, got {restarts!r}")
        model, method, opts = self.model, self.solver, self._opts
        if restarts:
            ro = replace(opts, max_iter=min(opts.max_iter, RESTART_MAX_ITER), stall_window=RESTART_STALL[0],
                         stall_ratio=RESTART_STALL[1])
            out, used = _run_chunked(B, lambda a, b: _batch_restarts(model, method, q0[a:b], P[a:b],
                                                                       None if R is None else R[a:b], ro,
                                                                       int(restarts), seed, a), quiet)
        else:
            def first(a: int, b: int) -> tuple[LoopOutput, NDArray[np.intp]]:
                Ra = None if R is None else R[a:b]
                o = self.solver.run(model, q0[a:b], P[a:b], Ra, opts)
                if self._relax:
                    o = _relax(model, q0[a:b], P[a:b], Ra, opts, o)
                return o, np.zeros(b - a, dtype=np.intp)
            out, used = _run_chunked(B, first, quiet)
        out, judged = settle(model, method, P, R, opts, out, polished=bool(restarts))
        reach, reasons = _reachability(model, out, P, R, opts, judged)
        return IKBatchResult(self._full(out.q), np.array([r == "converged" for r in reasons]), tuple(reach),
                             out.iterations, out.position_error, out.orientation_error, out.errors,
                             tuple(reasons), self._method, used, time.perf_counter() - t0)  # type: ignore[arg-type]

    def bake(self, targets: ArrayLike, start: ArrayLike | None = None, *, max_step: float | None = None
             ) -> IKBatchResult:
        """F targets solved in order, each frame warm-started from the answer of the one before (a bake).

        ``max_step`` bounds every DOF's change per frame (radians or scene units); the bounded pose is the
        next frame's start. Errors and reasons are those of each frame's solve."""
        t0 = time.perf_counter()
        P, R = self._batch_targets(targets)
        F = P.shape[0]
        q = self._starts(start, None)
        model = self.model
        lo, hi = model.lower, model.upper
        qs = np.empty((F, model.n))
        outs = []
        for k in range(F):
            Rk = None if R is None else R[k:k + 1]
            out = self.solver.run(model, q, P[k:k + 1], Rk, self._opts)
            if self._relax and out.reason[0] != "converged":
                out = _relax(model, q, P[k:k + 1], Rk, self._opts, out)
            d = out.q - q
            if max_step is not None:
                big = float(np.max(np.abs(d))) if d.size else 0.0
                if big > max_step:
                    d = d * (max_step / big)
            q = np.clip(q + d, lo, hi)
            qs[k] = q[0]
            outs.append(out)
        reach = []
        reasons = []
        for k, out in enumerate(outs):
            r, w = _reachability(model, out, P[k:k + 1], None if R is None else R[k:k + 1], self._opts)
            reach.append(r[0])
            reasons.append(w[0])
        rows = max(len(o.errors) for o in outs)
        errors = np.stack([np.concatenate([o.errors[:, 0], np.repeat(o.errors[-1:, 0], rows - len(o.errors))])
                           for o in outs], axis=1)
        return IKBatchResult(self._full(qs), np.array([r == "converged" for r in reasons]), tuple(reach),
                             np.array([int(o.iterations[0]) for o in outs]),
                             np.array([float(o.position_error[0]) for o in outs]),
                             np.array([float(o.orientation_error[0]) for o in outs]), errors,
                             tuple(reasons), self._method, np.zeros(F, dtype=np.intp),  # type: ignore[arg-type]
                             time.perf_counter() - t0)
