"""lm's solve strategy for one problem, compiled: the first run, the relaxed-limits retries, the continuations of a
pose target and the reachability test of :meth:`animkit.ik.IKProblem.solve` (:mod:`.strategy`, whose NumPy functions
are this module's oracle), on :mod:`.lm_jit`'s records, behind one entry of four arrays (:func:`lm_packed`). Every
decision (the stages, their order and who runs each, the better answer, the easier tasks, the optimality test, the
limits relaxed and wrapped) is :mod:`.lm_rules`', the NumPy strategy's own, compiled from the same source, and so is
the walk of the stages (lm_rules.relaxed_stages and .continuations, compiled over this module's backend:
:func:`who_retries`, :func:`through_relaxed_limits`, :func:`continued`); this module holds only the one-problem runs.

Every constant of a chain and its options travels in one float64 array laid out by :func:`pack_serial` (numba's
dispatch costs about a microsecond an argument, and a reused 7-DOF solve takes a few tens of them);
:func:`_unpack` reads it back into a :class:`~animkit.ik.lm_jit.LoopChain` and a
:class:`~animkit.ik.lm_jit.LoopSettings` without copies.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from animkit import jit
from animkit.ik import lm_rules
from animkit.ik.constants import FOLD_CURVATURE, ORIENTATION_STAGES
from animkit.ik.lm_jit import (
    CONVERGED,
    MAX_ITERATIONS,
    Goal,
    LoopChain,
    LoopSettings,
    chain_forward,
    chain_residual,
    cholesky,
    lm_one,
    polish_one,
    settings_with,
    tiny_chain,
)
from animkit.ik.lm_rules import (
    ORIENTATION_FIRST,
    POSITION_FIRST,
    RELAXED_FROM_START,
    RELAXED_FROM_STOP,
    better,
    better_jit,
    continuation_target,
    continuation_target_jit,
    easier_task,
    easier_task_jit,
    later_history,
    later_history_jit,
    limit_coordinate,
    limit_coordinate_jit,
    out_of_reach,
    out_of_reach_jit,
    over,
    relaxed_limit,
    relaxed_limit_jit,
    retried,
    retried_jit,
    stationary,
    stationary_jit,
    stretched,
    stretched_jit,
    wrapped_angle,
    wrapped_angle_jit,
)
from animkit.jit import kernel

__all__ = ["lm_packed", "packed_entry", "pack_serial", "out_size", "warm_up", "OUT_POS", "OUT_ORI", "OUT_ITERS",
           "OUT_REASON", "OUT_VALID", "OUT_HISTORY", "UNREACHABLE", "FOLD", "fold_mask", "finish_packed"]

Array = NDArray[np.float64]
State = tuple[float, float, int, int]  # a run's answer: position and orientation errors, iterations, reason
Ctx = tuple[LoopChain, LoopChain, bool, LoopSettings, Goal]  # the backend's ctx (see answer_of)

# header slots of the packed parameters (pack_serial)
_N, _ORIENT, _TOL, _OTOL, _PATIENCE, _MAX_ITER, _DAMPING, _MAX_STEP, _WIN, _RATIO, _STALL_MIN, _PULL, _DECAY, \
    _BACKOFF, _MARGIN, _RELAX, _POLISH = range(17)
_HEAD = 17
# out (see out_size): q (n), then these slots after it, then the residual history
OUT_POS, OUT_ORI, OUT_ITERS, OUT_REASON, OUT_VALID, OUT_HISTORY = range(6)
UNREACHABLE = 3  # the packed entry's fourth reason code: shown out of reach (strategy._reachability)
FOLD = 4  # and its fifth: stationary at a fold inside the reach (the checked path escapes it: strategy.settle)
# runs of the strategy at most: first, 2 × 2 relaxed, then position first, orientation first and the orientation
# continuation: each 1 + 1 + 2 × 2 relaxed (the continuation: K − 1 + 1 + 2 × 2)
_RUNS = 5 + 6 + 6 + ORIENTATION_STAGES + 4


def _beyond(p: Array, chain: LoopChain, tol: float) -> bool:
    """strategy._beyond for one serial chain: the target lies farther from the base origin than the chain reaches."""
    dx, dy, dz = p[0] - chain.base[0], p[1] - chain.base[1], p[2] - chain.base[2]
    return math.sqrt(dx * dx + dy * dy + dz * dz) > chain.reach + tol


_beyond = kernel(_beyond) or _beyond


def _stretched(p: Array, chain: LoopChain, tol: float, pos: float) -> bool:
    """strategy._stretched for one serial chain: beyond reach and ending at the bound (lm_rules.stretched)."""
    dx, dy, dz = p[0] - chain.base[0], p[1] - chain.base[1], p[2] - chain.base[2]
    return bool(stretched(math.sqrt(dx * dx + dy * dy + dz * dz), chain.reach, pos, tol))


_stretched = kernel(_stretched, calls=(stretched_jit,)) or _stretched


def _gradient_at(chain: LoopChain, q: Array, goal: Goal, g: Array, jj: Array) -> float:
    """strategy._gradient for one problem at q: g = Jᵀ W² V (n,) and the squared norms jj (n,) of J's weighted
    columns, from the chain's frames; returns ‖W V‖."""
    n = q.shape[0]
    w = goal.w
    T, Te, V = np.empty((n, 4, 5)), np.empty((4, 4)), np.empty(6 if goal.orient else 3)
    chain_forward(q, chain.Hs, chain.Ce, T, Te, np.empty(20))
    _, _, vn = chain_residual(Te, goal.p, goal.Rt, goal.orient, w, V, np.empty((3, 3)))
    for k in range(n):
        ax, ay, az = T[k, 0, 4], T[k, 1, 4], T[k, 2, 4]
        dx, dy, dz = Te[0, 3] - T[k, 0, 3], Te[1, 3] - T[k, 1, 3], Te[2, 3] - T[k, 2, 3]
        c0, c1, c2 = (ay * dz - az * dy) * w[0], (az * dx - ax * dz) * w[1], (ax * dy - ay * dx) * w[2]
        g[k] = c0 * V[0] + c1 * V[1] + c2 * V[2]
        jj[k] = c0 * c0 + c1 * c1 + c2 * c2
        if goal.orient:
            c3, c4, c5 = ax * w[3], ay * w[4], az * w[5]
            g[k] += c3 * V[3] + c4 * V[4] + c5 * V[5]
            jj[k] += c3 * c3 + c4 * c4 + c5 * c5
    return vn


_gradient_at = kernel(_gradient_at, calls=(chain_forward, chain_residual)) or _gradient_at


def _stationary(chain: LoopChain, q: Array, goal: Goal, free: NDArray[np.bool_]) -> bool:
    """strategy._reachability's optimality test at q (:func:`~animkit.ik.lm_rules.stationary`, from
    :func:`_gradient_at`); ``free`` (n,) set to the DOFs free to move."""
    n = q.shape[0]
    g, jj = np.empty(n), np.empty(n)
    vn = _gradient_at(chain, q, goal, g, jj)
    return stationary(g, jj, q, chain.lo, chain.hi, vn, free)


_stationary = kernel(_stationary, calls=(_gradient_at, stationary_jit)) or _stationary


def _fold(chain: LoopChain, q: Array, goal: Goal, free: NDArray[np.bool_]) -> bool:
    """strategy._descent_directions' test for one problem at a stationary q: whether ∇²f of f = ½‖W V‖² over the
    ``free`` DOFs (central differences of ∇f = −Jᵀ W² V, h = 1e-4, symmetrised) has an eigenvalue below
    −FOLD_CURVATURE · ‖J_F‖_F², i.e. whether H_FF + FOLD_CURVATURE ‖J_F‖_F² I is not positive definite (its
    Cholesky factorisation fails)."""
    n = q.shape[0]
    h = 1e-4
    H, gp, gm, jj, qq = np.empty((n, n)), np.empty(n), np.empty(n), np.empty(n), q.copy()
    for j in range(n):
        qq[j] = q[j] + h
        _gradient_at(chain, qq, goal, gp, jj)
        qq[j] = q[j] - h
        _gradient_at(chain, qq, goal, gm, jj)
        qq[j] = q[j]
        for i in range(n):
            H[j, i] = (gm[i] - gp[i]) / (2.0 * h)
    _gradient_at(chain, q, goal, gp, jj)
    idx = np.flatnonzero(free)
    f = idx.shape[0]
    if f == 0:
        return False
    c = 0.0
    for a in range(f):
        c += jj[idx[a]]
    A = np.empty((f, f))
    for a in range(f):
        for b in range(f):
            A[a, b] = 0.5 * (H[idx[a], idx[b]] + H[idx[b], idx[a]])
        A[a, a] += FOLD_CURVATURE * c
    return not cholesky(A)


_fold = kernel(_fold, calls=(_gradient_at, cholesky)) or _fold


def _folds(chain: LoopChain, q: Array, P: Array, R: Array, orient: bool, w: Array, out: NDArray[np.bool_]) -> None:
    for b in range(q.shape[0]):
        goal = Goal(P[b], R[b], orient, w)
        free = np.empty(q.shape[1], dtype=np.bool_)
        out[b] = _stationary(chain, q[b], goal, free) and _fold(chain, q[b], goal, free)


_FOLDS = kernel(_folds, calls=(_stationary, _fold))


def fold_mask(chain: LoopChain, q: Array, P: Array, R: Array | None, w: Array) -> NDArray[np.bool_]:
    """Per problem (q (b, n), P (b, 3), R (b, 3, 3) or None, row weights w): whether q is stationary at a fold
    (:func:`_fold`, strategy._descent_directions' test compiled), for the NumPy strategy's batches on a serial
    chain. Needs :func:`animkit.jit.enabled`."""
    assert _FOLDS is not None
    b = q.shape[0]
    out = np.zeros(b, dtype=np.bool_)
    Rk = np.ascontiguousarray(R, dtype=float) if R is not None else np.zeros((b, 3, 3))
    _FOLDS(chain, np.ascontiguousarray(q, dtype=float), np.ascontiguousarray(P, dtype=float), Rk, R is not None, w,
           out)
    return out


def _keep_better(q: Array, H: Array, st: State, qc: Array, Hc: Array, st_c: State, before: int) -> State:
    """lm.keep_better for one problem: the state (q, H[: it + 1], st = (pos, ori, it, why)) takes a later run's
    answer (qc, Hc[: it_c + 1], st_c) by :func:`~animkit.ik.lm_rules.better` (its history by
    :func:`~animkit.ik.lm_rules.later_history`); ``before`` iterations were spent between them. Updates q and H in
    place; returns the new state."""
    pos, ori, it, why = st
    it_c, why_c = st_c[2], st_c[3]
    best = H[it]
    total = it + before + it_c
    H[it + 1:total + 1] = best
    if not better(why_c == CONVERGED, Hc[it_c], best):
        return pos, ori, total, why
    later_history(H[:total + 1], it + before + 1, Hc, it_c, best)
    q[:] = qc
    return st_c[0], st_c[1], total, why_c


_keep_better = kernel(_keep_better, calls=(better_jit, later_history_jit)) or _keep_better


def _relaxed(chain: LoopChain) -> tuple[LoopChain, bool]:
    """``chain`` with the limits of its limited DOFs lifted (:func:`~animkit.ik.lm_rules.relaxed_limits`, its limit
    coordinates by :func:`~animkit.ik.lm_rules.limit_coordinates`), and whether any were."""
    n = chain.lo.shape[0]
    lo_r, hi_r, mid_r, half_r, lim_r = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    lifted = False
    for j in range(n):
        lo_r[j], hi_r[j], lift = relaxed_limit(chain.lo[j], chain.hi[j], True)
        lim, mid_r[j], half_r[j] = limit_coordinate(lo_r[j], hi_r[j])
        lim_r[j] = 1.0 if lim else 0.0
        lifted = lifted or lift
    return LoopChain(chain.Hs, chain.Ce, lo_r, hi_r, mid_r, half_r, lim_r, chain.kappa, chain.base, chain.reach), lifted


_relaxed = kernel(_relaxed, calls=(relaxed_limit_jit, limit_coordinate_jit)) or _relaxed


# The compiled backend of lm_rules' one walk of the stages (relaxed_stages, continuations) for one problem:
# ctx = (chain, free: the chain with its limits relaxed, lifted: whether any were, settings, goal),
# state = (q, H, st): the answer, its residual history and its state; who: whether the problem runs the stage.
def answer_of(state: tuple[Array, Array, State]) -> Array:
    return state[0].copy()


answer_of = kernel(answer_of, internal=True) or answer_of


def none_of(who: bool) -> bool:
    return not who


none_of = kernel(none_of, internal=True) or none_of


def who_retries(ctx: Ctx, stage: int, state: tuple[Array, Array, State]) -> bool:
    """Whether the problem runs ``stage`` (:func:`~animkit.ik.lm_rules.retried`, as strategy._retried): the relaxed
    stages only where a limit was lifted, the continuations only for a pose target."""
    chain, _, lifted, s, goal = ctx
    q, _, st = state
    if not (lifted if stage == RELAXED_FROM_START or stage == RELAXED_FROM_STOP else goal.orient):
        return False
    conv, far = st[3] == CONVERGED, _beyond(goal.p, chain, s.tol)
    minimum = stage == RELAXED_FROM_STOP and not conv and not far and \
        _stationary(chain, q, goal, np.empty(q.shape[0], dtype=np.bool_))
    settled = _stretched(goal.p, chain, s.tol, st[0]) if stage == RELAXED_FROM_START else far
    return bool(retried(stage, conv, far, minimum, settled))


who_retries = kernel(who_retries, calls=(_beyond, _stretched, _stationary, retried_jit), internal=True) or who_retries


def through_relaxed_limits(ctx: Ctx, start: Array, who: bool, state: tuple[Array, Array, State]
                           ) -> tuple[Array, Array, State]:
    """lm.retry_through_relaxed_limits for one problem: through the relaxed limits from ``start`` (every iteration),
    wrapped back into the limits, then inside them (with the stall test); kept when better."""
    chain, free, _, s, goal = ctx
    q, H, st = state
    n = q.shape[0]
    qu, qw, qc = np.empty(n), np.empty(n), np.empty(n)
    Hu, Hc = np.empty(s.max_iter + 1), np.empty(s.max_iter + 1)
    it_u = lm_one(free, settings_with(s, s.tol, s.otol, 0, 0.5), goal, start, qu, Hu)[2]
    for j in range(n):
        qw[j] = wrapped_angle(qu[j], chain.lo[j], chain.hi[j], True)
    st_c = lm_one(chain, s, goal, qw, qc, Hc)
    return q, H, _keep_better(q, H, st, qc, Hc, st_c, it_u)


through_relaxed_limits = kernel(through_relaxed_limits, calls=(lm_one, wrapped_angle_jit, _keep_better, settings_with),
                                internal=True) or through_relaxed_limits
relaxed_stages = over(lm_rules.relaxed_stages, answer_of=answer_of, who_retries=who_retries, none_of=none_of,
                      through_relaxed_limits=through_relaxed_limits)  # plain Python where numba fell back
_RELAXED_STAGES = kernel(lm_rules.relaxed_stages, calls=(answer_of, who_retries, none_of, through_relaxed_limits),
                         internal=True) or relaxed_stages


def _full_task(ctx: Ctx, start: Array, before: int, state: tuple[Array, Array, State]) -> tuple[Array, Array, State]:
    """The second half of every continuation (strategy._full_task_after): the full task from ``start`` (the answer of
    an easier problem that took ``before`` iterations), with the relaxed-limits stages, kept over ``state`` by
    :func:`_keep_better`."""
    chain, _, _, s, goal = ctx
    q, H, st = state
    qc, Hc = np.empty(q.shape[0]), np.empty(_RUNS * (s.max_iter + 1))
    st_c = relaxed_stages(ctx, start, (qc, Hc, lm_one(chain, s, goal, start, qc, Hc)))[2]
    return q, H, _keep_better(q, H, st, qc, Hc, st_c, before)


_full_task = kernel(_full_task, calls=(lm_one, _RELAXED_STAGES, _keep_better), internal=True) or _full_task


def continued(ctx: Ctx, stage: int, start: Array, who: bool, state: tuple[Array, Array, State]
              ) -> tuple[Array, Array, State]:
    """Continuation ``stage`` from ``start``, then the full task (:func:`_full_task`): position first
    (strategy.retry_position_first: the position rows alone), orientation first (strategy.retry_orientation_first:
    the position rows weighted down), or the orientation continuation (strategy.retry_orientation_continuation:
    R_k = exp((k/K) ω) R_s, position held)."""
    chain, _, _, s, goal = ctx
    n = start.shape[0]
    qu, Hu = np.empty(n), np.empty(s.max_iter + 1)
    if stage == POSITION_FIRST or stage == ORIENTATION_FIRST:
        ws, orient, tol, otol = easier_task(goal.w, stage, s.tol, s.otol)
        it_u = lm_one(chain, settings_with(s, tol, otol, s.win, s.ratio), Goal(goal.p, goal.Rt, orient, ws), start,
                      qu, Hu)[2]
        return _full_task(ctx, qu, it_u, state)
    qk = np.empty(n)
    for j in range(n):
        qk[j] = min(max(start[j], chain.lo[j]), chain.hi[j])
    Ts, Tes, Vs = np.empty((n, 4, 5)), np.empty((4, 4)), np.empty(6)
    chain_forward(qk, chain.Hs, chain.Ce, Ts, Tes, np.empty(20))
    chain_residual(Tes, goal.p, goal.Rt, True, np.ones(6), Vs, np.empty((3, 3)))  # Vs[3:] = ω = log(R_t R_sᵀ)^∨
    qk[:] = start
    omega, Rs, Rk = Vs[3:].copy().reshape((1, 3)), np.ascontiguousarray(Tes[:3, :3]).reshape((1, 3, 3)), \
        np.empty((3, 3))
    before = 0
    for k in range(1, ORIENTATION_STAGES):
        Rk[:, :] = continuation_target(omega, k / ORIENTATION_STAGES, Rs)[0]
        before += lm_one(chain, s, Goal(goal.p, Rk, goal.orient, goal.w), qk, qu, Hu)[2]
        qk[:] = qu
    return _full_task(ctx, qk, before, state)


continued = kernel(continued, calls=(lm_one, _full_task, continuation_target_jit, chain_forward, chain_residual,
                                     settings_with, easier_task_jit), internal=True) or continued
continuations = over(lm_rules.continuations, who_retries=who_retries, none_of=none_of, continued=continued)
_CONTINUATIONS = kernel(lm_rules.continuations, calls=(who_retries, none_of, continued), internal=True) or continuations


def _unpack(prm: Array) -> tuple[LoopChain, LoopSettings, bool, bool]:
    """:func:`pack_serial`'s array read back: the chain, the settings, whether the target is a pose and whether
    lm's retries run (views into ``prm``, no copies)."""
    n = int(prm[_N])
    s = LoopSettings(prm[_TOL], prm[_OTOL], int(prm[_PATIENCE]), int(prm[_MAX_ITER]), prm[_DAMPING], prm[_MAX_STEP],
                     int(prm[_WIN]), prm[_RATIO], int(prm[_STALL_MIN]), prm[_PULL], prm[_DECAY], prm[_BACKOFF],
                     prm[_MARGIN])
    o = _HEAD
    Hs = prm[o:o + 60 * n].reshape((n, 3, 20))
    o += 60 * n
    Ce = prm[o:o + 16].reshape((4, 4))
    o += 16
    chain = LoopChain(Hs, Ce, prm[o:o + n], prm[o + n:o + 2 * n], prm[o + 2 * n:o + 3 * n], prm[o + 3 * n:o + 4 * n],
                      prm[o + 4 * n:o + 5 * n], prm[o + 5 * n:o + 6 * n], prm[o + 6 * n + 6:o + 6 * n + 9],
                      prm[o + 6 * n + 9])
    return chain, s, prm[_ORIENT] != 0.0, prm[_RELAX] != 0.0


_unpack = kernel(_unpack) or _unpack


def _read_target(target: Array, orient: bool, p: Array, Rt: Array) -> bool:
    """p (3,) and Rt (3, 3) from a target (16,): a 4×4 pose row-major, or (3,): a position; False when it is
    malformed (not finite; a pose not rigid within 1e-6 or whose last row is not 0 0 0 1)."""
    if target.shape[0] != (16 if orient else 3):
        return False
    if not orient:
        for i in range(3):
            p[i] = target[i]
        return math.isfinite(p[0] + p[1] + p[2])
    for i in range(3):
        p[i] = target[4 * i + 3]
        for j in range(3):
            Rt[i, j] = target[4 * i + j]
    valid = math.isfinite(p[0] + p[1] + p[2]) and target[12] == 0.0 and target[13] == 0.0 and \
        target[14] == 0.0 and target[15] == 1.0
    for i in range(3):
        for j in range(i + 1):
            dot = Rt[i, 0] * Rt[j, 0] + Rt[i, 1] * Rt[j, 1] + Rt[i, 2] * Rt[j, 2]
            if not abs(dot - (1.0 if i == j else 0.0)) <= 1e-6:
                valid = False
    det = Rt[0, 0] * (Rt[1, 1] * Rt[2, 2] - Rt[1, 2] * Rt[2, 1]) - \
        Rt[0, 1] * (Rt[1, 0] * Rt[2, 2] - Rt[1, 2] * Rt[2, 0]) + \
        Rt[0, 2] * (Rt[1, 0] * Rt[2, 1] - Rt[1, 1] * Rt[2, 0])
    return valid and det > 0.0


_read_target = kernel(_read_target) or _read_target


def _lm_packed(prm: Array, target: Array, q0: Array, out: Array) -> None:
    """One problem: out[n + OUT_VALID] = 0 when the target is malformed (:func:`_read_target`), then nothing is
    solved. Otherwise the whole of :meth:`animkit.ik.IKProblem.solve`'s strategy for lm without restarts runs here:
    the first run (:func:`~animkit.ik.lm_jit.lm_one`); with ``relax``, the relaxed-limits retries and, for a pose
    target, the continuations (strategy._relax); then the reachability test (reason UNREACHABLE). An answer that did
    not converge is then finished by :func:`finish_packed` (a kernel of its own: in this one it slowed every solve)."""
    chain, s, orient, relax = _unpack(prm)
    n = chain.lo.shape[0]
    p, Rt = np.empty(3), np.zeros((3, 3))
    valid = _read_target(target, orient, p, Rt)
    out[n + OUT_VALID] = 1.0 if valid else 0.0
    if not valid:
        return
    goal = Goal(p, Rt, orient, _weights(prm))
    q, H = out[:n], out[n + OUT_HISTORY:]
    st = lm_one(chain, s, goal, q0, q, H)
    if st[3] != CONVERGED and relax:  # lm_rules' walk of the retry stages, over this module's backend
        free, lifted = _relaxed(chain)
        ctx = (chain, free, lifted, s, goal)
        st = continuations(ctx, q0, relaxed_stages(ctx, q0, (q, H, st)))[2]
    pos, ori, it, why = st
    if why != CONVERGED:
        far = _beyond(p, chain, s.tol)
        if out_of_reach(far, not far and _stationary(chain, q, goal, np.empty(n, dtype=np.bool_))):
            why = UNREACHABLE
    out[n + OUT_POS], out[n + OUT_ORI], out[n + OUT_ITERS], out[n + OUT_REASON] = pos, ori, it, why


def _weights(prm: Array) -> Array:
    """The row weights (6,) in :func:`pack_serial`'s array."""
    n = int(prm[_N])
    o = _HEAD + 60 * n + 16 + 6 * n
    return prm[o:o + 6]


_weights = kernel(_weights) or _weights

_PACKED = kernel(_lm_packed, calls=(_unpack, _read_target, _weights, lm_one, _relaxed, _RELAXED_STAGES,
                                    _CONTINUATIONS, _beyond, _stationary, out_of_reach_jit))


def _finish_packed(prm: Array, target: Array, out: Array) -> None:
    n = int(prm[_N])
    chain, s, orient, _ = _unpack(prm)
    p, Rt = np.empty(3), np.zeros((3, 3))
    _read_target(target, orient, p, Rt)
    goal = Goal(p, Rt, orient, _weights(prm))
    q, H = out[:n], out[n + OUT_HISTORY:]
    pos, ori, it, why = out[n + OUT_POS], out[n + OUT_ORI], int(out[n + OUT_ITERS]), int(out[n + OUT_REASON])
    steps = 0 if why == MAX_ITERATIONS else int(prm[_POLISH])  # a stage of its own (lm.polish's stage=True)
    if steps > 0:
        pos, ori, k, done = polish_one(chain, s, goal, q, H, it, steps)
        it += k
        why = CONVERGED if done else why
    if why != CONVERGED:
        far = _beyond(p, chain, s.tol)
        movable = np.empty(n, dtype=np.bool_)
        minimum = not far and _stationary(chain, q, goal, movable)
        if minimum and _fold(chain, q, goal, movable):
            why = FOLD
        elif out_of_reach(far, minimum):
            why = UNREACHABLE
    out[n + OUT_POS], out[n + OUT_ORI], out[n + OUT_ITERS], out[n + OUT_REASON] = pos, ori, it, why


_FINISH = kernel(_finish_packed, calls=(_unpack, _read_target, _weights, polish_one, _beyond, _stationary, _fold,
                                        out_of_reach_jit))


def finish_packed(prm: Array, target: Array, out: Array) -> None:
    """:func:`lm_packed`'s answer ``out`` that did not converge, finished: in θ (lm_jit.polish_one, at most the
    polish's steps of :func:`pack_serial`, within max_iter counted iterations: strategy.settle's lm.polish), then its
    reachability test again (UNREACHABLE; FOLD where it is stationary at a fold inside the reach: the checked path
    escapes it). Needs :func:`animkit.jit.enabled`."""
    assert _FINISH is not None
    _FINISH(prm, target, out)


def pack_serial(chain: LoopChain, s: LoopSettings, w: Array, *, orient: bool, relax: bool, polish: int = 0) -> Array:
    """The one parameter array of :func:`lm_packed`: the settings, the chain (Hs (n, 3, 20): revolute DOFs only),
    the row weights w (3 or 6), whether lm's retries run (``relax``) and the most steps of the polish in θ."""
    n = len(chain.lo)
    head = np.zeros(_HEAD)
    head[:] = (n, float(orient), s.tol, s.otol, s.patience, s.max_iter, s.damping, s.max_step, s.win, s.ratio,
               s.stall_min, s.pull, s.decay, s.backoff, s.margin, float(relax), polish)
    w6 = np.ones(6)
    w6[:len(w)] = w
    return np.ascontiguousarray(np.concatenate([
        head, np.asarray(chain.Hs, dtype=float).reshape(-1), np.asarray(chain.Ce, dtype=float).reshape(-1), chain.lo,
        chain.hi, chain.mid, chain.half, np.asarray(chain.limited, dtype=float), chain.kappa, w6,
        np.asarray(chain.base, dtype=float).reshape(3), [chain.reach]]))


def out_size(n: int, max_iter: int) -> int:
    """Length of :func:`lm_packed`'s output array (the history holds every run of the strategy)."""
    return n + OUT_HISTORY + _RUNS * (max_iter + 1)


def lm_packed(prm: Array, target: Array, q0: Array, out: Array) -> None:
    """Run the compiled strategy on one problem with the parameters of :func:`pack_serial`: target (16,) or (3,)
    contiguous float64 (a pose row-major, or a position), q0 (n,), out (:func:`out_size`) written. Needs
    :func:`animkit.jit.enabled`."""
    assert _PACKED is not None
    _PACKED(prm, target, q0, out)


def packed_entry() -> Callable[..., None] | None:
    """:func:`lm_packed`'s compiled loop itself once it has run in this process (numba's dispatcher: no checks
    around it, for a hot loop of single solves), else None. Callers check :func:`animkit.jit.enabled` before each
    use (tests turn the compiled paths off)."""
    k = _PACKED
    if not isinstance(k, jit.Kernel) or not k.ready or not jit.enabled():
        return None
    entry: Callable[..., None] = k.compiled()
    return entry


def warm_up() -> None:
    """Compile (or load from numba's disk cache) the packed strategy now; nothing when numba is off."""
    if _PACKED is not None and jit.enabled():
        chain, s = tiny_chain()
        prm = pack_serial(chain, s, np.ones(6), orient=True, relax=True)
        lm_packed(prm, np.eye(4).reshape(-1), np.zeros(1), np.empty(out_size(1, 1)))
