"""The default solver's loop (:mod:`.lm_jit`) for many problems at once: problems in lock-step SIMD lanes.

    θ_j = m_j + h_j sin φ_j,   (J_φᵀ W² J_φ + λI + μ_k D) Δφ = J_φᵀ W² V − μ_k D φ,   μ_k = μ₀ γᵏ βʳ min(1, ‖WV‖²)

The same iteration, acceptance and stopping rules as :func:`~animkit.ik.lm_jit.lm_serial`, with the same
floating-point operations in the same order (a problem gets the same bits whichever path solves it), laid out for
SIMD: ``LANES`` problems iterate together, every array holds the lane index innermost (structure of arrays:
frames (n, 3, 5, LANES), J (n, m, LANES), A (n, n, LANES)), so the loops of forward kinematics, the Jacobian, the
normal equations and the Cholesky solve run across problems and LLVM turns them into vector instructions (AVX2:
four doubles at a time; the scalar loop's sums are dependent chains, the lanes' are independent). Each lane keeps
its own damping, pull, stall window and counters; a step is accepted or rejected per lane (a select); a lane whose
problem converged, stalled or ran out of iterations writes its answer and takes the next problem at once, so the
lanes stay full until the last problems. Nothing is allocated per iteration; the lanes' building blocks live in
:mod:`.lanes_jit`, the stopping and acceptance rules are :mod:`.lm_jit`'s own. Used by :func:`~animkit.ik.lm.run_lm`
for batches when :func:`animkit.jit.enabled`; the residual (a rotation's log, with its branches near π) runs lane by
lane.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from animkit import jit
from animkit.ik.lanes_jit import (
    LANES,
    forward_lanes,
    jacobian_lanes,
    phi_lanes,
    residual_lanes,
    restore_lanes,
    solve_spd_lanes,
    step_lanes,
    step_scratch,
    theta_lanes,
)
from animkit.ik.lm_jit import (
    CONVERGED,
    RUNNING,
    LoopChain,
    LoopOut,
    LoopSettings,
    _phi,
    _theta,
    accept_step,
    call_loop,
    chain_forward,
    chain_residual,
    stop_reason,
    tiny_chain,
)
from animkit.jit import kernel

__all__ = ["LANES", "lm_lanes", "restart_start", "lanes_fit", "warm_up", "forward_lanes", "solve_spd_lanes"]

Array = NDArray[np.float64]



_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)


def _splitmix(z: np.uint64) -> np.uint64:
    """z ← z + φ·2⁶⁴; z ← (z ⊕ z≫30)·c₁; z ← (z ⊕ z≫27)·c₂; z ⊕ z≫31 (SplitMix64's finaliser, mod 2⁶⁴)."""
    z = z + _GOLDEN
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


_splitmix = kernel(_splitmix) or _splitmix


def restart_start(seed: int, b: int, a: int, q0: Array, lo: Array, hi: Array,
                  limited: NDArray[np.bool_] | Array, out: Array) -> None:
    """θ_j = lo_j + u_j (hi_j − lo_j) for limited DOFs, θ0_j + (2u_j − 1)π otherwise (radians; scene units for
    an unlimited slider), u_j = h(seed, b, a, j)/2⁶⁴ by SplitMix64: attempt ``a`` ≥ 1's random start for problem
    ``b`` (``q0``: its given start), a pure function of (seed, b, a, j) — the same whichever lane, order or path
    (compiled lanes, NumPy rounds, a single solve's restarts: problem 0) draws it. Scalar unsigned arithmetic,
    wrapping mod 2⁶⁴ (NumPy warns of the wrap where this runs uncompiled: callers silence it)."""
    z = _splitmix(_splitmix(_splitmix(np.uint64(seed)) + np.uint64(b)) + np.uint64(a))
    for j in range(q0.shape[0]):
        u = np.float64(_splitmix(z + np.uint64(j)) >> _S11) * (1.0 / 9007199254740992.0)
        out[j] = lo[j] + u * (hi[j] - lo[j]) if limited[j] else q0[j] + (2.0 * u - 1.0) * math.pi


restart_start = kernel(restart_start, calls=(_splitmix,)) or restart_start


class _Batch(NamedTuple):
    """The batch the lanes solve: starts q0 (B, n), targets P (B, 3) and R (B, 3, 3; read when ``orient``), row
    weights w (3 or 6), and the restarts (count, seed, μ₀ of a restart, the first problem's index)."""

    q0: Array
    P: Array
    R: Array
    orient: bool
    w: Array
    restart: tuple[int, int, float, int]


class _Schedule(NamedTuple):
    """Which lane runs what: each lane's problem (−1: none) and attempt (0: the given start); per problem its
    returned error and attempt so far, its lowest converged attempt (restarts + 1: none) and its next attempt; the
    problems waiting for their next random start (a ring: each is in it at most once) and the counters [head, tail,
    next new problem]."""

    job: NDArray[np.intp]
    att: NDArray[np.intp]
    best: Array
    best_a: NDArray[np.intp]
    first_ok: NDArray[np.intp]
    next_a: NDArray[np.intp]
    queue: NDArray[np.intp]
    queued: NDArray[np.bool_]
    ctr: NDArray[np.intp]


class _Runs(NamedTuple):
    """Each lane's run (L,): errors at the start (pos0, ori0, e0) and now (pos, ori, e), λ, the pull's μ₀ and its
    back-off scale, the homotopy's decay, iterations without gain, iterations, and ‖WV‖ after each iteration
    (max_iter + 1, L)."""

    pos0: Array
    ori0: Array
    e0: Array
    pos: Array
    ori: Array
    e: Array
    lam: Array
    pl: Array
    ps: Array
    decay: Array
    flat: NDArray[np.intp]
    it: NDArray[np.intp]
    es: Array


class _Iterate(NamedTuple):
    """The lanes' iterate (lane index innermost): the start qs, θ, φ and cos φ (n, L), the frames T (n, 3, 5, L),
    the effector Te (3, 4, L), the residual V (6, L) and the targets PL (3, L), RL (3, 3, L)."""

    qs: Array
    q: Array
    phi: Array
    cphi: Array
    T: Array
    Te: Array
    V: Array
    PL: Array
    RL: Array


class _Start(NamedTuple):
    """One problem's start in lm_jit's one-problem layout: the start θs, θ and φ inside the limits and cos φ, the
    frames at θ, the effector at θs and at θ, the residual and scratch; cq and cached: the last start's θs (a batch
    from one pose computes its start once)."""

    qs1: Array
    q1: Array
    phi1: Array
    cphi1: Array
    T1: Array
    Te0: Array
    Te1: Array
    V1: Array
    D1: Array
    loc1: Array
    cq: Array
    cached: NDArray[np.bool_]


def _schedule(B: int, restarts: int) -> _Schedule:
    """An empty schedule: no lane busy, no problem started."""
    return _Schedule(np.full(LANES, -1, dtype=np.intp), np.zeros(LANES, dtype=np.intp), np.zeros(B),
                     np.zeros(B, dtype=np.intp), np.full(B, restarts + 1, dtype=np.intp), np.zeros(B, dtype=np.intp),
                     np.zeros(max(B, 1), dtype=np.intp), np.zeros(B, dtype=np.bool_), np.zeros(3, dtype=np.intp))


def _runs(max_iter: int) -> _Runs:
    """Every lane's run at zero (lanes without a problem compute on harmless numbers)."""
    L = LANES
    return _Runs(np.zeros(L), np.zeros(L), np.zeros(L), np.zeros(L), np.zeros(L), np.zeros(L), np.zeros(L),
                 np.zeros(L), np.zeros(L), np.zeros(L), np.zeros(L, dtype=np.intp), np.zeros(L, dtype=np.intp),
                 np.zeros((max_iter + 1, L)))


def _start_scratch(n: int, m: int) -> _Start:
    """:class:`_Start`'s arrays for an n-DOF chain and m residual rows."""
    return _Start(np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros((n, 4, 5)), np.zeros((4, 4)),
                  np.zeros((4, 4)), np.zeros(m), np.zeros((3, 3)), np.zeros(20), np.zeros(n),
                  np.zeros(1, dtype=np.bool_))


def _lane_reason(s: LoopSettings, es: Array, lane: int, k: int, pos: float, ori: float, e: float, lam: float,
                 flat: int) -> int:
    """The stop code of a lane after k iterations by :func:`~animkit.ik.lm_jit.stop_reason` (the stall window read
    from its history es; scalars, not the lanes' record: it runs for every lane every iteration)."""
    e_win = es[k - s.win, lane] if s.win > 0 and k >= max(s.win, s.stall_min) else math.inf
    return stop_reason(s, pos, ori, e, lam, flat, k, e_win)


def _finish(lane: int, why: int, restarts: int, sc: _Schedule, r: _Runs, x: _Iterate, out: LoopOut) -> None:
    """The lane's run has stopped (``why``): its answer is written when it is the one returned (the lowest converged
    attempt, else the lowest error, the lower attempt on a tie; a run that ends above its start returns the start),
    and an unconverged problem with random starts left joins the ring; the lane is free."""
    b, a, k, el = sc.job[lane], sc.att[lane], r.it[lane], r.e[lane]
    done = why == CONVERGED
    back = (not done) and el >= r.e0[lane]
    ef = r.e0[lane] if back else el
    if a == 0 or done or (sc.first_ok[b] > restarts and (ef < sc.best[b] or (ef == sc.best[b] and a < sc.best_a[b]))):
        sc.best[b], sc.best_a[b] = ef, a
        for j in range(x.q.shape[0]):
            out.q[b, j] = x.qs[j, lane] if back else x.q[j, lane]
        out.pos[b] = r.pos0[lane] if back else r.pos[lane]
        out.ori[b] = r.ori0[lane] if back else r.ori[lane]
        out.history[0, b] = r.e0[lane]  # then the returned pose's: the start's unless beaten
        for t in range(1, k):
            out.history[t, b] = min(r.es[t, lane], r.e0[lane])
        for t in range(k, out.history.shape[0]):
            out.history[t, b] = ef
        out.iters[b], out.reason[b] = k, why
    if done:
        sc.first_ok[b] = a
    elif sc.first_ok[b] > restarts and sc.next_a[b] <= restarts and not sc.queued[b]:
        sc.queue[sc.ctr[1] % sc.queue.shape[0]], sc.queued[b] = b, True
        sc.ctr[1] += 1
    sc.job[lane] = -1


def _take(sc: _Schedule, batch: _Batch, chain: LoopChain, qs1: Array) -> tuple[int, int]:
    """The next work for a free lane, its start written into qs1: a problem's next random start first (hard problems
    start early), else a new problem; (−1, 0) when none is left."""
    B = sc.first_ok.shape[0]
    restarts, seed, _, index0 = batch.restart
    ctr = sc.ctr
    while ctr[0] < ctr[1]:
        c = sc.queue[ctr[0] % B]
        ctr[0] += 1
        sc.queued[c] = False
        if sc.first_ok[c] <= restarts or sc.next_a[c] > restarts:
            continue  # converged, or its last start is out already
        a = sc.next_a[c]
        sc.next_a[c] += 1
        if ctr[2] == B and sc.next_a[c] <= restarts:  # no new problems left: idle lanes take its next start at once,
            sc.queue[ctr[1] % B], sc.queued[c] = c, True  # side by side (the answer depends only on which attempts
            ctr[1] += 1  # converge, not on the order they run in)
        restart_start(seed, index0 + c, a, batch.q0[c], chain.lo, chain.hi, chain.limited, qs1)
        return c, a
    if ctr[2] == B:
        return -1, 0
    b = ctr[2]
    ctr[2] += 1
    sc.next_a[b] = 1
    for j in range(qs1.shape[0]):
        qs1[j] = min(max(batch.q0[b, j], chain.lo[j]), chain.hi[j])
    return b, 0


def _start_frames(chain: LoopChain, s: LoopSettings, one: _Start) -> None:
    """The start's frames, φ, θ and the frames there by lm_jit's one-problem functions (the same operations),
    computed once for consecutive problems with the same start (a batch from one pose): the same numbers either
    way."""
    fresh = not one.cached[0]
    for j in range(one.qs1.shape[0]):
        if fresh or one.qs1[j] != one.cq[j]:
            fresh = True
            break
    if fresh:
        chain_forward(one.qs1, chain.Hs, chain.Ce, one.T1, one.Te0, one.loc1)
        _phi(one.qs1, chain.mid, chain.half, chain.limited, s.margin, one.phi1)
        _theta(one.phi1, chain.mid, chain.half, chain.limited, chain.lo, chain.hi, one.q1)
        chain_forward(one.q1, chain.Hs, chain.Ce, one.T1, one.Te1, one.loc1)
        for j in range(one.qs1.shape[0]):
            one.cq[j] = one.qs1[j]
            one.cphi1[j] = math.cos(one.phi1[j])
        one.cached[0] = True


def _start_lane(lane: int, b: int, a: int, chain: LoopChain, s: LoopSettings, batch: _Batch, sc: _Schedule,
                r: _Runs, x: _Iterate, one: _Start, out: LoopOut) -> None:
    """Problem b's attempt a (its start in one.qs1) into the lane; a start that meets the target already is the
    answer (as lm_jit.lm_one), written at once, and leaves the lane free."""
    sc.job[lane], sc.att[lane] = b, a
    r.pl[lane] = s.pull if a == 0 else batch.restart[2]
    p, Rt = batch.P[b], batch.R[b]
    for i in range(3):
        x.PL[i, lane] = p[i]
        for j in range(3):
            x.RL[i, j, lane] = Rt[i, j]
    n = one.qs1.shape[0]
    for j in range(n):
        x.qs[j, lane] = one.qs1[j]
    _start_frames(chain, s, one)
    r.pos0[lane], r.ori0[lane], r.e0[lane] = chain_residual(one.Te0, p, Rt, batch.orient, batch.w, one.V1, one.D1)
    if r.pos0[lane] <= s.tol and r.ori0[lane] <= s.otol:
        if a < sc.first_ok[b]:
            for j in range(n):
                out.q[b, j] = one.qs1[j]
            out.pos[b], out.ori[b], out.iters[b], out.reason[b] = r.pos0[lane], r.ori0[lane], 0, CONVERGED
            for t in range(out.history.shape[0]):
                out.history[t, b] = r.e0[lane]
            sc.first_ok[b] = a
        sc.job[lane] = -1
        return
    r.pos[lane], r.ori[lane], r.e[lane] = chain_residual(one.Te1, p, Rt, batch.orient, batch.w, one.V1, one.D1)
    for k in range(n):
        x.q[k, lane], x.phi[k, lane], x.cphi[k, lane] = one.q1[k], one.phi1[k], one.cphi1[k]
        for i in range(3):
            for j in range(5):
                x.T[k, i, j, lane] = one.T1[k, i, j]
    for i in range(3):
        for j in range(4):
            x.Te[i, j, lane] = one.Te1[i, j]
    for i in range(one.V1.shape[0]):
        x.V[i, lane] = one.V1[i]
    r.es[0, lane] = r.e[lane]
    r.lam[lane], r.flat[lane], r.ps[lane], r.decay[lane], r.it[lane] = s.damping, 0, 1.0, 1.0, 0


def _serve(lane: int, chain: LoopChain, s: LoopSettings, batch: _Batch, sc: _Schedule, r: _Runs, x: _Iterate,
           one: _Start, out: LoopOut) -> int:
    """A lane whose run stopped, or that has none: the answer written (:func:`_finish`), then the next work taken
    (:func:`_take`) and started (:func:`_start_lane`) until the lane runs one; 1 when it does, 0 when none is
    left."""
    restarts = batch.restart[0]
    while True:
        b = sc.job[lane]
        if b >= 0:
            if sc.att[lane] > sc.first_ok[b]:  # a lower attempt of this problem converged: this one cannot be returned
                sc.job[lane] = -1
            else:
                why = _lane_reason(s, r.es, lane, r.it[lane], r.pos[lane], r.ori[lane], r.e[lane], r.lam[lane],
                                   r.flat[lane])
                if why == RUNNING:
                    return 1
                _finish(lane, why, restarts, sc, r, x, out)
        b, a = _take(sc, batch, chain, one.qs1)
        if b < 0:
            return 0
        _start_lane(lane, b, a, chain, s, batch, sc, r, x, one, out)


def _accept_lanes(backoff: float, live: NDArray[np.bool_], e_n: Array, e: Array, lam: Array, flat: NDArray[np.intp],
                  ps: Array, ok: NDArray[np.bool_]) -> bool:
    """Every lane holding a problem: the trial (‖WV‖ = e_n) kept or refused by
    :func:`~animkit.ik.lm_jit.accept_step`, which also updates λ, the gainless count and the pull's scale (the
    damping update). Returns whether every such lane kept its trial."""
    every = True
    for lane in range(LANES):
        if not live[lane]:
            ok[lane] = False
            continue
        good, lam[lane], flat[lane], ps[lane] = accept_step(e_n[lane], e[lane], lam[lane], flat[lane], ps[lane],
                                                            backoff)
        ok[lane] = good
        every = every and good
    return every


_accept_lanes = kernel(_accept_lanes, calls=(accept_step,), error_model="numpy", slp=True) or _accept_lanes


def _lm_lanes(chain: LoopChain, s: LoopSettings, q0: Array, P: Array, R: Array, orient: bool, w: Array, poly: bool,
              restart: tuple[int, int, float, int], out: LoopOut, tries: Array) -> None:
    """The lanes' loop: free lanes take work (:func:`_serve`), then one iteration of every lane: the step
    (:func:`jacobian_lanes`, :func:`step_lanes`), the trial θ, frames and residual, its acceptance and the damping
    update (:func:`_accept_lanes`), the state kept or restored (:func:`restore_lanes`) and φ (:func:`phi_lanes`)."""
    B, n = q0.shape
    L, lo, hi, mid, half, limited = LANES, chain.lo, chain.hi, chain.mid, chain.half, chain.limited
    batch, sc, r, one, st = _Batch(q0, P, R, orient, w, restart), _schedule(B, restart[0]), _runs(s.max_iter), \
        _start_scratch(n, w.shape[0]), step_scratch(n)
    T, Tn, Te, Ten = np.zeros((n, 3, 5, L)), np.zeros((n, 3, 5, L)), np.zeros((3, 4, L)), np.zeros((3, 4, L))
    V, Vn, q, qn, qs = np.zeros((6, L)), np.zeros((6, L)), np.zeros((n, L)), np.zeros((n, L)), np.zeros((n, L))
    phi, phin, cphi, sphi, pw, cw = np.zeros((n, L)), np.zeros((n, L)), np.zeros((n, L)), np.zeros((n, L)), \
        np.zeros((n, L)), np.zeros((n, L))
    PL, RL, loc, sn, cn, D = np.zeros((3, L)), np.zeros((3, 3, L)), np.zeros((15, L)), np.zeros(L), np.zeros(L), \
        np.zeros((3, 3, L))
    pos_n, ori_n, e_n, ok = np.zeros(L), np.zeros(L), np.zeros(L), np.zeros(L, dtype=np.bool_)
    job, att, first_ok, ctr, live, mu, d = sc.job, sc.att, sc.first_ok, sc.ctr, st.live, st.mu, st.d
    pos, ori, e, pl, ps, decay, lam, flat, it, es = r.pos, r.ori, r.e, r.pl, r.ps, r.decay, r.lam, r.flat, r.it, r.es
    while True:
        running = 0
        for lane in range(L):
            b = job[lane]
            if b >= 0 and att[lane] <= first_ok[b] and RUNNING == _lane_reason(
                    s, es, lane, it[lane], pos[lane], ori[lane], e[lane], lam[lane], flat[lane]):
                running += 1
            elif b >= 0 or ctr[0] < ctr[1] or ctr[2] < B:
                running += _serve(lane, chain, s, batch, sc, r, _Iterate(qs, q, phi, cphi, T, Te, V, PL, RL), one,
                                  out)
        if running == 0:
            for b in range(B):  # the random starts run: up to the converged one, else all
                tries[b] = first_ok[b] if first_ok[b] <= restart[0] else sc.next_a[b] - 1
            return
        for lane in range(L):
            live[lane] = job[lane] >= 0
            mu[lane] = pl[lane] * decay[lane] * ps[lane] * min(1.0, e[lane] * e[lane])
        jacobian_lanes(T, Te, half, limited, cphi, w, orient, st.J)
        step_lanes(V, lam, phi, limited, chain.kappa, s.max_step, st)
        for i in range(n):
            for lane in range(L):
                phin[i, lane] = phi[i, lane] + d[i, lane]
        theta_lanes(phin, mid, half, limited, lo, hi, qn, sphi, live, poly, pw, cw)
        forward_lanes(qn, chain.Hs, chain.Ce, Tn, Ten, loc, sn, cn, live, poly)
        residual_lanes(Ten, PL, RL, orient, w, Vn, D, pos_n, ori_n, e_n, live)
        every = _accept_lanes(s.backoff, live, e_n, e, lam, flat, ps, ok)
        for lane in range(L):  # the iteration counted, its ‖WV‖ recorded, the homotopy decayed
            if live[lane]:
                if ok[lane]:
                    pos[lane], ori[lane], e[lane] = pos_n[lane], ori_n[lane], e_n[lane]
                it[lane] += 1
                es[it[lane], lane] = e[lane]
                decay[lane] *= s.decay
        T, Tn, Te, Ten, V, Vn, q, qn = Tn, T, Ten, Te, Vn, V, qn, q  # the trial becomes the state
        if not every:
            restore_lanes(ok, live, q, qn, T, Tn, Te, Ten, V, Vn)
        phi_lanes(poly, limited, ok, phin, sphi, pw, cw, phi, cphi)


_lane_reason = kernel(_lane_reason, calls=(stop_reason,)) or _lane_reason
_finish = kernel(_finish) or _finish
_take = kernel(_take, calls=(restart_start,)) or _take
_start_frames = kernel(_start_frames, calls=(chain_forward, _phi, _theta)) or _start_frames
_start_lane = kernel(_start_lane, calls=(_start_frames, chain_residual)) or _start_lane
_serve = kernel(_serve, calls=(_lane_reason, _finish, _take, _start_lane)) or _serve
_schedule = kernel(_schedule) or _schedule
_runs = kernel(_runs) or _runs
_start_scratch = kernel(_start_scratch) or _start_scratch
step_scratch = kernel(step_scratch) or step_scratch

_KERNEL = kernel(_lm_lanes, slp=True, error_model="numpy",
                 calls=(forward_lanes, residual_lanes, theta_lanes, _schedule, _runs, _start_scratch, step_scratch,
                        _lane_reason, _serve, jacobian_lanes, step_lanes, _accept_lanes, restore_lanes,
                        phi_lanes))


def lanes_fit(Hs: Array, Ce: Array) -> bool:
    """Whether a serial chain's link blocks Hs (n, 3, 20) and effector offset Ce (4, 4) are rigid (last rows
    [0, 0, 0, 1 | 0] and 0), the layout :func:`lm_lanes` assumes."""
    last = np.array([0.0, 0.0, 0.0, 1.0, 0.0])
    return bool(Hs.shape[1] == 3 and np.array_equal(Hs[:, 0, 15:], np.broadcast_to(last, (Hs.shape[0], 5)))
                and not Hs[:, 1:, 15:].any() and np.array_equal(Ce[3], last[:4]))


def lm_lanes(chain: LoopChain, s: LoopSettings, q0: Array, P: Array, R: Array | None, w: Array, *, poly: bool = True,
             restarts: int = 0, seed: int = 0, restart_pull: float = 0.1, index0: int = 0,
             tries: NDArray[np.intp] | None = None
             ) -> tuple[Array, NDArray[np.intp], NDArray[np.intp], Array, Array, Array]:
    """:func:`~animkit.ik.lm_jit.lm_serial` (same arguments and outputs, no ``first_success``) by the lanes: B
    problems, q0 (B, n), P (B, 3), R (B, 3, 3) or None, on a chain for which :func:`lanes_fit` holds. Needs
    :func:`animkit.jit.enabled`. ``poly`` (the default): the iterations' sines and cosines by
    :mod:`.poly_trig` (vectorised, ≤ 2 ulp from the library's), so a problem's iterates differ from lm_serial's by
    rounding, which can change the path of a run that wanders; False: the C library's, and lm_serial's bits.

    ``restarts`` > 0: a problem whose run ends unconverged runs again in its lane at once, from
    :func:`restart_start` (attempt 1, 2, …, pull μ₀ = ``restart_pull``), until one converges or ``restarts`` random
    starts have run; it returns the first run's answer unless a restart converged or ended lower (its iterations and
    history are that run's), and ``tries`` (B,), when given, receives the random starts each problem ran. Problem b
    draws its starts as problem ``index0`` + b (a chunk of a larger batch draws what the whole batch would)."""
    assert _KERNEL is not None
    return call_loop(_KERNEL, poly, chain, s, q0, P, R, w, restart=(restarts, seed, restart_pull, index0),
                     tries=tries)


def warm_up() -> None:
    """Compile (or load from numba's disk cache) the lanes now, e.g. before timing; nothing when numba is off."""
    if _KERNEL is not None and jit.enabled():
        chain, s = tiny_chain()
        for R in (np.eye(3)[None], None):
            lm_lanes(chain, s, np.zeros((1, 1)), np.ones((1, 3)), R, np.ones(6 if R is not None else 3))
