"""The NumPy solve strategy around a solver's run (what :class:`~animkit.ik.ik_problem.IKProblem` calls after the first
run): batches in chunks, lm's deterministic retries (relaxed limits, position first, orientation first, the
orientation continuation), random restarts, escapes from folds and the reachability test, on batches and any chain.
Its decisions (which retry runs when and for whom, the better answer, the easier tasks, the optimality test) are
:mod:`animkit.ik.lm_rules`', run here on arrays; the walk of the retry stages is lm_rules' too
(:func:`~animkit.ik.lm_rules.relaxed_stages`, :func:`~animkit.ik.lm_rules.continuations`), run here over this
module's batched backend and in :mod:`animkit.ik.lm_strategy_jit` over a compiled one for one problem."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from animkit import jit
from animkit.ik.constants import (  # module globals here too: tests and callers set them on this module
    BATCH_CHUNK,
    FOLD_CURVATURE,
    FOLD_ESCAPES,
    FOLD_STEP,
    ORIENTATION_STAGES,
    RESTART_BATCH,
    RESTART_MAX_ITER,
    RESTART_PULL,
    RESTART_STALL,
)
from animkit.ik.jacobian import rotation_error
from animkit.ik.lm import keep_better, loop_chain, polish, retry_through_relaxed_limits, run_lm, serial_chain
from animkit.ik.lm_batch_jit import restart_start
from animkit.ik.lm_cones import cone_stationary, gradient, lagrangian_curvature, slide, tangent_basis
from animkit.ik.lm_rules import (
    CONTINUATIONS,
    ORIENTATION_FIRST,
    POSITION_FIRST,
    RELAXED_FROM_START,
    RELAXED_FROM_STOP,
    better,
    continuation_target,
    continuations,
    easier_task,
    out_of_reach,
    over,
    relaxed_stages,
    retried,
    stationary,
    stretched,
)
from animkit.ik.lm_strategy_jit import _FOLDS, fold_mask
from animkit.ik.methods import Solver
from animkit.ik.problem import ChainModel, Frames
from animkit.ik.solvers import LoopOutput, Options
from animkit.progress import progress

__all__ = ["retry_position_first", "retry_orientation_first", "retry_orientation_continuation", "BATCH_CHUNK",
           "RESTART_MAX_ITER", "RESTART_STALL", "RESTART_PULL", "FOLD_ESCAPES", "FOLD_STEP", "FOLD_CURVATURE",
           "settle"]

Array = NDArray[np.float64]

def _run_chunked(B: int, solve_chunk: Callable[[int, int], tuple[LoopOutput, NDArray[np.intp]]], quiet: bool
                 ) -> tuple[LoopOutput, NDArray[np.intp]]:
    """``solve_chunk(a, b)`` (problems a … b − 1: their output and restarts used) over chunks of
    :data:`BATCH_CHUNK` problems, joined; errors are held at each problem's last value."""
    if B <= BATCH_CHUNK:
        return solve_chunk(0, B)
    parts = []
    bar = progress(B, "solving", enabled=False if quiet else None)
    for a in range(0, B, BATCH_CHUNK):
        b = min(a + BATCH_CHUNK, B)
        parts.append(solve_chunk(a, b))
        bar.update(b - a)
    bar.close()
    outs = [p[0] for p in parts]
    return _joined(outs), np.concatenate([p[1] for p in parts])


def _held(errors: Array, rows: int) -> Array:
    """errors (r, B) with rows r … ``rows`` − 1 added, each column holding its last value (a copy when it grows)."""
    if len(errors) >= rows:
        return errors
    return np.concatenate([errors, np.repeat(errors[-1:], rows - len(errors), 0)])


def _joined(parts: Sequence[LoopOutput]) -> LoopOutput:
    """Outputs of disjoint sets of problems side by side; each ``errors`` column held at its last value."""
    rows = max(len(p.errors) for p in parts)
    errors = np.concatenate([_held(p.errors, rows) for p in parts], axis=1)
    return LoopOutput(np.concatenate([p.q for p in parts]), np.concatenate([p.iterations for p in parts]),
                      [w for p in parts for w in p.reason], np.concatenate([p.position_error for p in parts]),
                      np.concatenate([p.orientation_error for p in parts]), errors)


def _batch_restarts(model: ChainModel, method: Solver, q0: Array, P: Array, R: Array | None, opts: Options,
                    restarts: int, seed: int, index0: int) -> tuple[LoopOutput, NDArray[np.intp]]:
    """A batch with random restarts (:meth:`IKProblem.solve_batch`): in the compiled lanes where they take it
    (:func:`~animkit.ik.lm.lanes_with_restarts`), else in rounds: every problem still unconverged after attempt
    a − 1 runs attempt a from :func:`~animkit.ik.lm_batch_jit.restart_start`, all of them together; the same rule
    picks the answer (a restart's where it converged or ended lower), and lm's answers left short are finished in θ
    (:func:`~animkit.ik.lm.polish`, as the lanes do)."""
    lanes = getattr(method, "lanes", None)  # LM: the compiled lanes where they take the batch
    done = None if lanes is None else lanes(model, q0, P, R, opts, restarts, seed, RESTART_PULL, index0)
    if done is not None:
        return done
    out = method.run(model, q0, P, R, opts)
    B = len(q0)
    used = np.zeros(B, dtype=np.intp)
    ro = replace(opts, pull=RESTART_PULL)
    q, iters, errors = out.q.copy(), out.iterations.copy(), out.errors.copy()
    pos, ori = out.position_error.copy(), out.orientation_error.copy()
    reason = np.array(out.reason, dtype=object)
    best = errors[iters, np.arange(B)]  # each problem's returned error so far
    for a in range(1, restarts + 1):
        fail = np.flatnonzero(reason != "converged")
        if fail.size == 0:
            break
        starts = _restart_starts(model, seed, index0 + fail, np.full(fail.size, a), q0[fail])
        o = method.run(model, starts, P[fail], None if R is None else R[fail], ro)
        used[fail] = a
        last = o.errors[o.iterations, np.arange(fail.size)]
        why = np.array(o.reason, dtype=object)
        take = better(why == "converged", last, best[fail])
        won = fail[take]
        q[won], iters[won], reason[won] = o.q[take], o.iterations[take], why[take]
        pos[won], ori[won], best[won] = o.position_error[take], o.orientation_error[take], last[take]
        rows = max(len(errors), len(o.errors))
        errors = _held(errors, rows)
        errors[:, won] = _held(o.errors, rows)[:, take]
    errors = errors[: int(iters.max()) + 1]
    return polish(model, P, R, opts, LoopOutput(q, iters, reason.tolist(), pos, ori, errors)), used


def _relax(model: ChainModel, q0: Array, P: Array, R: Array | None, opts: Options, out: LoopOutput, *,
           position_first: bool = True) -> LoopOutput:
    """lm's further strategies for the problems the first run left neither converged nor shown out of reach (a
    target beyond reach has no better answer), all deterministic, from the same start (no pose is drawn: these
    are the same local method on easier problems, not restarts):

    1. through the relaxed limits from the start pose, then, for those still left, from where the first run
       stopped (:func:`~animkit.ik.lm.retry_through_relaxed_limits`);
    2. with an orientation target, for those still not converged: position first, then the full task
       (:func:`retry_position_first`)."""
    ctx = _Batch(model, P, R, opts)
    out = _relaxed_stages(ctx, q0, out)
    return _continuations(ctx, q0, out) if position_first else out


class _Batch(NamedTuple):
    """The NumPy backend's ``ctx`` for :func:`~animkit.ik.lm_rules.relaxed_stages` and its sibling: the problems'
    chain, targets and options (its ``state``: a :class:`LoopOutput`; ``who``: indices into it)."""

    model: ChainModel
    P: Array
    R: Array | None
    opts: Options


def _answer_of(out: LoopOutput) -> Array:
    return out.q


def _who_retries(ctx: _Batch, stage: int, out: LoopOutput) -> NDArray[np.intp]:
    """The problems that run ``stage`` (:func:`_retried`); none for a continuation without an orientation target."""
    if stage in CONTINUATIONS and ctx.R is None:
        return np.zeros(0, dtype=np.intp)
    return _retried(stage, ctx.model, out, ctx.P, ctx.R, ctx.opts)


def _none_of(who: NDArray[np.intp]) -> bool:
    return who.size == 0


def _through_relaxed_limits(ctx: _Batch, start: Array, who: NDArray[np.intp], out: LoopOutput) -> LoopOutput:
    return retry_through_relaxed_limits(ctx.model, start, ctx.P, ctx.R, ctx.opts, out, who)


def _continued(ctx: _Batch, stage: int, start: Array, who: NDArray[np.intp], out: LoopOutput) -> LoopOutput:
    """Continuation ``stage`` for the problems ``who`` (:func:`retry_position_first` and its siblings)."""
    assert ctx.R is not None
    strategy = retry_position_first if stage == POSITION_FIRST else retry_orientation_first \
        if stage == ORIENTATION_FIRST else retry_orientation_continuation
    return strategy(ctx.model, start, ctx.P, ctx.R, ctx.opts, out, who)


def _retried(stage: int, model: ChainModel, out: LoopOutput, P: Array, R: Array | None, opts: Options
             ) -> NDArray[np.intp]:
    """The problems of ``out`` that run retry ``stage`` (:func:`~animkit.ik.lm_rules.retried`; indices; the tests,
    an FK or two, run on the unconverged ones only: on a 100-problem batch of a 50-link chain the reach test cost
    more than the solve)."""
    idx = np.flatnonzero([why != "converged" for why in out.reason])
    if idx.size == 0:
        return idx
    q, Pi = out.q[idx], P[idx]
    if stage == RELAXED_FROM_STOP:
        beyond, minimum, _ = _verdicts(model, q, Pi, None if R is None else R[idx], opts)
    else:
        beyond, minimum = _beyond(model, q, Pi, opts.tol), np.zeros(idx.size, dtype=bool)
    settled = _stretched(model, q, Pi, opts.tol) if stage == RELAXED_FROM_START else beyond
    return idx[retried(stage, np.zeros(idx.size, dtype=bool), beyond, minimum, settled)]


def retry_position_first(model: ChainModel, q0: Array, P: Array, R: Array, opts: Options, out: LoopOutput,
                         fail: NDArray[np.intp]) -> LoopOutput:
    """A continuation in the task: min ‖W_p V_p‖² from the start (orientation dropped), then min ‖W V‖² (the full
    6D task, with the relaxed-limits retries) from that answer; kept where it converged or ends closer.

    From a start whose hand is far from the target, the 6D residual's orientation rows can hold the chain in a
    local minimum (the humanoid's arm pressed on its shoulder and elbow limits, the UR5 stretched at its elbow
    singularity); the position task alone has fewer such minima, and its answer puts the hand where the wrist only
    has to turn. See docs/derivations.md ("lm: position first")."""
    return _retry_easier_task(POSITION_FIRST, model, q0, P, R, opts, out, fail)


def retry_orientation_first(model: ChainModel, q0: Array, P: Array, R: Array, opts: Options, out: LoopOutput,
                            fail: NDArray[np.intp]) -> LoopOutput:
    """The mirror of :func:`retry_position_first`: min ‖W_o V‖² from the start with the position rows weighted by
    ``ORIENTATION_FIRST_WEIGHT`` (converged on the orientation alone), then the full task (with the relaxed-limits
    retries) from that answer; kept where it converged or ends closer. The wrist's branch is then chosen by the
    target's orientation before the position pulls the arm (UR5 targets near the edge of its reach, where the
    position task alone leaves the stretched elbow between two branches). See docs/derivations.md."""
    return _retry_easier_task(ORIENTATION_FIRST, model, q0, P, R, opts, out, fail)


def _retry_easier_task(task: int, model: ChainModel, q0: Array, P: Array, R: Array, opts: Options,
                       out: LoopOutput, fail: NDArray[np.intp]) -> LoopOutput:
    """The easier ``task`` (:func:`~animkit.ik.lm_rules.easier_task`) from the start, then the full task from its
    answer (:func:`_full_task_after`)."""
    w, orient, tol, otol = easier_task(opts.row_weights, task, opts.tol, opts.orientation_tol)
    Pf, Rf = P[fail], R[fail]
    u = run_lm(model, q0[fail], Pf, Rf if orient else None, replace(opts, row_weights=w, tol=tol,
                                                                    orientation_tol=otol))
    return _full_task_after(model, u.q, Pf, Rf, opts, out, fail, u.iterations)


def retry_orientation_continuation(model: ChainModel, q0: Array, P: Array, R: Array, opts: Options,
                                   out: LoopOutput, fail: NDArray[np.intp]) -> LoopOutput:
    """A continuation in the target's orientation: R_k = exp((k/K) ω) R_s, ω = log(R_t R_sᵀ)^∨ (R_s: the start's
    effector frame; the geodesic from it to the target's), the position held at the target, k = 1 … K
    (``ORIENTATION_STAGES``), each stage solved from the answer of the one before, the last (the target itself) with
    the relaxed-limits retries; kept where it converged or ends closer."""
    Pf, Rf = P[fail], R[fail]
    q = q0[fail]
    Rs = model.frames(np.clip(q, model.lower, model.upper)).R
    omega = rotation_error(Rf, Rs).reshape(-1, 3)
    before = np.zeros(len(fail), dtype=np.intp)
    for k in range(1, ORIENTATION_STAGES):
        Rk = continuation_target(omega, k / ORIENTATION_STAGES, Rs.reshape(-1, 3, 3)).reshape(Rs.shape)
        u = run_lm(model, q, Pf, Rk, opts)
        q, before = u.q, before + u.iterations
    return _full_task_after(model, q, Pf, Rf, opts, out, fail, before)


def _full_task_after(model: ChainModel, q: Array, Pf: Array, Rf: Array, opts: Options, out: LoopOutput,
                     fail: NDArray[np.intp], before: NDArray[np.intp]) -> LoopOutput:
    """The last stage of every continuation: the full task from the partial task's answer ``q`` (``before`` its
    iterations), with the relaxed-limits retries, kept in ``out`` at ``fail`` where it converged or ends closer."""
    c = _relaxed_stages(_Batch(model, Pf, Rf, opts), q, run_lm(model, q, Pf, Rf, opts))
    return keep_better(out, fail, c, before)


class Judged(NamedTuple):
    """The tests of a solve's answers that did not converge (rows ``open_`` of its output), computed once for
    :func:`_escape_folds` and :func:`_reachability`: per open row, whether its target lies beyond reach, whether
    it is stationary (:func:`~animkit.ik.lm_rules.stationary`), whether it is a fold (stationary with a direction
    of negative curvature: :func:`_folded`, tested on every stationary row) and the DOFs free to move."""

    open_: NDArray[np.intp]
    beyond: NDArray[np.bool_]
    optimal: NDArray[np.bool_]
    fold: NDArray[np.bool_]
    free: NDArray[np.bool_]


def _judge(model: ChainModel, out: LoopOutput, P: Array, R: Array | None, opts: Options) -> Judged:
    """:class:`Judged` for ``out``: one FK, gradient and stationarity test of its unconverged rows, the fold test
    on the stationary ones only."""
    idx = np.flatnonzero([why != "converged" for why in out.reason])
    none = np.zeros(idx.size, dtype=bool)
    if idx.size == 0:
        return Judged(idx, none, none, none, np.zeros((0, model.n), dtype=bool))
    q, Pi, Ri = out.q[idx], P[idx], None if R is None else R[idx]
    g, J, vn, fr = gradient(model, q, Pi, Ri, opts.row_weights)
    optimal, free = _stationary_rows(model, g, J, q, vn)
    fold = np.zeros(idx.size, dtype=bool)
    check = np.flatnonzero(optimal)
    if check.size:
        fold[check] = _folded(model, q[check], Pi[check], None if Ri is None else Ri[check], opts, free[check])
    return Judged(idx, _beyond(model, q, Pi, opts.tol, fr), optimal, fold, free)


def _reachability(model: ChainModel, out: LoopOutput, P: Array, R: Array | None, opts: Options,
                  judged: Judged | None = None) -> tuple[list[bool | None], list[str]]:
    """True converged; False shown out of reach; None undecided.

    Out of reach: an effector's target lies beyond the chain's reach from its base, or the result is first-order
    optimal with the error above tolerance: the gradient of ½‖W V‖² over the DOFs free to move (a DOF at a limit
    counts only toward its inside) vanishes, relative to ‖J‖ ‖W V‖ — no small change of the movable set brings
    the effector closer (the stretched arm pointing at the target is such a point). Decided from the result's
    optimality, not from the distance alone. ``judged``: :func:`_judge` of this very ``out`` where the caller has
    it (:func:`settle`'s), else computed here."""
    reasons = list(out.reason)
    reach: list[bool | None] = [True] * len(reasons)
    if judged is None:
        judged = _judge(model, out, P, R, opts)
    if judged.open_.size == 0:
        return reach, reasons
    fold = judged.fold & ~judged.beyond  # beyond reach: shown so, fold or not
    shown = np.asarray(out_of_reach(judged.beyond, judged.optimal & ~fold))
    for k, i in enumerate(judged.open_.tolist()):
        reach[i] = False if shown[k] else None
        if shown[k]:
            reasons[i] = "unreachable"
        elif fold[k]:
            reasons[i] = "stalled"  # a fold (a saddle or a maximum of the error): not shown out of reach
    return reach, reasons


def _verdicts(model: ChainModel, q: Array, P: Array, R: Array | None, opts: Options
              ) -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]]:
    """Per problem at q (b, n), not converged: whether its target lies beyond reach, whether q is a local minimum
    (first-order optimal, :func:`~animkit.ik.lm_rules.stationary`, and not a fold) and whether it is a fold
    (stationary with a direction of negative curvature: :func:`_descent_directions`)."""
    w = opts.row_weights
    g, J, vn, fr = gradient(model, q, P, R, w)
    optimal, free = _stationary_rows(model, g, J, q, vn)
    beyond = _beyond(model, q, P, opts.tol, fr)
    fold = np.zeros(len(q), dtype=bool)
    check = np.flatnonzero(optimal & ~beyond)
    if check.size:
        fold[check] = _folded(model, q[check], P[check], None if R is None else R[check], opts, free[check])
    return beyond, optimal & ~fold, fold


def _folded(model: ChainModel, q: Array, P: Array, R: Array | None, opts: Options, free: NDArray[np.bool_]
            ) -> NDArray[np.bool_]:
    """Per stationary problem: whether it is a fold (:func:`_descent_directions` finds a direction of negative
    curvature), compiled (:func:`~animkit.ik.lm_strategy_jit.fold_mask`) on a serial revolute chain with one
    effector in a process where compiled kernels run already (NumPy's test is the reference)."""
    ch = serial_chain(model)
    if ch.serial and _FOLDS is not None and jit.WARM and jit.enabled():
        return fold_mask(loop_chain(ch, opts), q, P[:, 0], None if R is None else R[:, 0], opts.row_weights)
    return np.asarray(np.any(_descent_directions(model, q, P, R, opts.row_weights, free) != 0.0, axis=1))


def settle(model: ChainModel, method: Solver, P: Array, R: Array | None, opts: Options, out: LoopOutput, *,
           polished: bool = False) -> tuple[LoopOutput, Judged]:
    """What every solve does after its runs: lm's answers left short finished in θ (:func:`~animkit.ik.lm.polish`;
    not again where the runs did it: ``polished``), then the folds left (:func:`_escape_folds`); returns the answers
    and their tests (:class:`Judged`, for :func:`_reachability`)."""
    out = out if polished else polish(model, P, R, opts, out, stage=True)
    return _escape_folds(model, method, P, R, opts, slide(model, P, R, opts, out))


def _escape_folds(model: ChainModel, method: Solver, P: Array, R: Array | None, opts: Options, out: LoopOutput
                  ) -> tuple[LoopOutput, Judged]:
    """Problems left at a fold (stationary, not converged, the Hessian of ½‖WV‖² indefinite: a saddle or a maximum,
    e.g. an arm stretched straight away from its target) run again from θ + FOLD_STEP·v (v: the direction of
    negative curvature), up to FOLD_ESCAPES times (lm's runs finished by :func:`~animkit.ik.lm.polish`); a run is
    kept where it converged or ends closer. Returns the answers and the tests of the last (:func:`_judge`)."""
    for _ in range(FOLD_ESCAPES):
        judged = _judge(model, out, P, R, opts)
        k = np.flatnonzero(judged.fold)
        if k.size == 0:
            return out, judged
        fail = judged.open_[k]
        Pf, Rf = P[fail], None if R is None else R[fail]
        d = _descent_directions(model, out.q[fail], Pf, Rf, opts.row_weights, judged.free[k])
        starts = model.project_cones(np.clip(out.q[fail] + FOLD_STEP * d, model.lower, model.upper))
        c = polish(model, Pf, Rf, opts, method.run(model, starts, Pf, Rf, opts))
        out = keep_better(out, fail, c, np.zeros(len(fail), dtype=np.intp))
    return out, _judge(model, out, P, R, opts)


def _descent_directions(model: ChainModel, q: Array, P: Array, R: Array | None, w: Array, free: NDArray[np.bool_]
                        ) -> Array:
    """Per problem (b, n): a unit direction of negative curvature of f = ½‖W V‖² over the free DOFs where the
    Hessian (central differences of ∇f = −Jᵀ W² V, h = 1e-4) has an eigenvalue below −FOLD_CURVATURE ‖J‖_F²
    (a fold: the first-order test cannot tell it from the optimum), zero where the point is a local minimum."""

    b, n = q.shape
    h = 1e-4
    E = np.eye(n)
    qq = np.concatenate([q[:, None] + h * E[None], q[:, None] - h * E[None]], axis=1).reshape(-1, n)
    rep = np.repeat(np.arange(b), 2 * n)
    g = -gradient(model, qq, P[rep], None if R is None else R[rep], w)[0].reshape(b, 2, n, n)  # ∇f
    H = (g[:, 0] - g[:, 1]) / (2 * h)  # H[:, j] = ∂∇f/∂θ_j
    H = 0.5 * (H + np.swapaxes(H, 1, 2))
    g0, J, vn, _ = gradient(model, q, P, R, w)
    held = cone_stationary(model, g0, J, q, vn)[2] if model.cones else None
    out = np.zeros((b, n))
    for i in range(b):
        Z = np.eye(n)[:, free[i]]
        if held is not None:  # on the cones' edges: their tangents, and the Lagrangian's Hessian (lm_cones)
            Z = tangent_basis(n, held[i].rows)
            H[i] += lagrangian_curvature(model, q[i], held[i])
        if Z.shape[1] == 0:
            continue
        vals, vecs = np.linalg.eigh(Z.T @ H[i] @ Z)
        if vals[0] < -FOLD_CURVATURE * float(np.sum((J[i] @ Z) ** 2)):
            out[i] = Z @ vecs[:, 0]
    return out


def _stationary_rows(model: ChainModel, g: Array, J: Array, q: Array, vn: Array
                     ) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """:func:`~animkit.ik.lm_rules.stationary` of each problem (g, q (b, n), J (b, m, n), vn (b,)): whether it is
    first-order optimal (b,), and the DOFs free to move (b, n)."""
    if model.cones:  # the Karush–Kuhn–Tucker test on the cones' active rows (lm_cones)
        return cone_stationary(model, g, J, q, vn)[:2]
    jj = np.sum(J * J, axis=1)
    free = np.empty(q.shape, dtype=bool)
    return np.asarray(stationary(g, jj, q, model.lower, model.upper, vn, free), dtype=bool), free


def _beyond(model: ChainModel, q: Array, P: Array, tol: float, fr: Frames | None = None) -> NDArray[np.bool_]:
    """Per problem: some effector's target lies farther from its base than the chain reaches (no pose can meet
    it)."""
    fr = model.frames(q) if fr is None else fr
    base = fr.r[:, model.base_link]  # (b, E, 3)
    return np.asarray(np.any(np.linalg.norm(P - base, axis=2) > model.reach + tol, axis=1))


def _stretched(model: ChainModel, q: Array, P: Array, tol: float) -> NDArray[np.bool_]:
    """Per problem: some effector's target lies beyond reach and every such one ends at the closed-form bound
    (:func:`~animkit.ik.lm_rules.stretched`): no pose ends closer, so no retry runs."""
    fr = model.frames(q)
    dist = np.linalg.norm(P - fr.r[:, model.base_link], axis=2)  # (b, E)
    pos = np.linalg.norm(P - fr.p, axis=2)
    far = dist > model.reach + tol
    return np.asarray(far.any(axis=1) & np.all(~far | stretched(dist, model.reach, pos, tol), axis=1))


def _restart(model: ChainModel, method: Solver, q0: Array, P: Array, R: Array | None, opts: Options,
             out: LoopOutput, restarts: int, deadline: float | None, seed: int) -> tuple[LoopOutput, int]:
    """Random in-limit starts (attempts 1, 2, … of problem 0: :func:`_restart_starts`), 8 at a time (1 on NumPy's
    B = 1 path), until one converges, ``restarts`` ran, or the deadline passed; the best result so far is kept."""
    single = method.serial(model, opts)  # one at a time: each stops early when it stalls
    best_err = out.errors[-1, 0]
    used = 0
    while used < restarts and (deadline is None or time.perf_counter() < deadline):
        k = min(1 if single else RESTART_BATCH, restarts - used)
        starts = _restart_starts(model, seed, np.zeros(k, dtype=np.intp), np.arange(used + 1, used + k + 1),
                                 np.repeat(q0, k, 0))
        o = method.run(model, starts, np.repeat(P, k, 0), None if R is None else np.repeat(R, k, 0), opts,
                       first_success=True)
        conv = [i for i, r in enumerate(o.reason) if r == "converged"]
        pick = conv[0] if conv else int(np.argmin(o.errors[-1]))
        used += pick + 1 if conv else k
        if better(bool(conv), o.errors[-1, pick], best_err):
            best_err = o.errors[-1, pick]
            out = LoopOutput(o.q[pick:pick + 1], o.iterations[pick:pick + 1], [o.reason[pick]],
                             o.position_error[pick:pick + 1], o.orientation_error[pick:pick + 1],
                             o.errors[:, pick:pick + 1])
        if conv:
            break
    return out, used


def _restart_starts(model: ChainModel, seed: int, problems: NDArray[np.intp], attempts: NDArray[np.intp], q0: Array
                    ) -> Array:
    """The random starts (k, n) of attempt ``attempts[i]`` of problem ``problems[i]`` (starts q0 (k, n)), by
    :func:`~animkit.ik.lm_batch_jit.restart_start`: single solves and batches draw from the one definition."""
    limited = (np.isfinite(model.lower) & np.isfinite(model.upper) & (model.upper > model.lower)).astype(float)  # 0/1
    out = np.empty((len(problems), model.n))
    with np.errstate(over="ignore"):  # SplitMix64 wraps mod 2⁶⁴ (uncompiled, NumPy's scalars say so)
        for i, (b, a) in enumerate(zip(problems.tolist(), attempts.tolist(), strict=True)):
            restart_start(seed, b, a, q0[i], model.lower, model.upper, limited, out[i])
    return out


# the stages' one walk (lm_rules), over this module's batched backend
_BACKEND: dict[str, Callable[..., Any]] = {"answer_of": _answer_of, "who_retries": _who_retries, "none_of": _none_of,
            "through_relaxed_limits": _through_relaxed_limits, "continued": _continued}
_relaxed_stages = over(relaxed_stages, **_BACKEND)
_continuations = over(continuations, **_BACKEND)
