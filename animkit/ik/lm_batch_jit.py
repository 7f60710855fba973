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
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from animkit import jit
from animkit.ik.lanes_jit import (
    LANES,
    forward_lanes,
    normal_equations_lanes,
    residual_lanes,
    solve_spd_lanes,
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
from animkit.ik.poly_trig import sincos
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


class Batch(NamedTuple):
    """The problems a lanes kernel solves: starts q0 (B, n), targets P (B, 3) and R (B, 3, 3) (read when ``orient``),
    row weights w, the sines' switch ``poly``, and the random restarts (how many, seed, μ₀ of a restart, the first
    problem's index: :func:`restart_start`)."""

    q0: Array
    P: Array
    R: Array
    orient: bool
    w: Array
    poly: bool
    restarts: int
    seed: int
    r_pull: float
    index0: int


class Lanes(NamedTuple):
    """Every lane's iteration state, the lane index innermost (zeros: lanes without a problem compute on harmless
    numbers): the step's J (n, 6, L), A, its right-hand side and solution d, φ and the trial's, cos φ, sin φ and the
    polynomial sines' results, the targets, ‖WV‖ after each iteration ``es``, scratch, the problem and attempt in
    each lane (job −1: none), errors at the start, now and at the trial, λ, the pull's factors, counters."""

    J: Array
    A: Array
    rhs: Array
    d: Array
    phi: Array
    phin: Array
    cphi: Array
    sphi: Array
    pw: Array
    cw: Array
    PL: Array
    RL: Array
    es: Array
    loc: Array
    sn: Array
    cn: Array
    trace: Array
    bad: Array
    jitter: Array
    D: Array
    qs: Array
    job: NDArray[np.intp]
    att: NDArray[np.intp]
    pl: Array
    pos: Array
    ori: Array
    e: Array
    pos0: Array
    ori0: Array
    e0: Array
    pos_n: Array
    ori_n: Array
    e_n: Array
    lam: Array
    ps: Array
    decay: Array
    mu: Array
    ok: NDArray[np.bool_]
    live: NDArray[np.bool_]
    flat: NDArray[np.intp]
    it: NDArray[np.intp]


class Frames(NamedTuple):
    """The lanes' link frames T (n, 3, 5, L), effector frame Te (3, 4, L), weighted residual V (6, L) and θ (n, L):
    the current state's and the trial's (two of them, swapped when the steps are taken)."""

    T: Array
    Te: Array
    V: Array
    q: Array


class Start(NamedTuple):
    """One problem's start in lm_jit's layout (frames, residual, θ_s, θ, φ), and the last start's, reused for the
    next problem from the same pose (``cached``[0])."""

    T1: Array
    Te1: Array
    V1: Array
    D1: Array
    qs1: Array
    q1: Array
    phi1: Array
    loc1: Array
    Te0: Array
    cq: Array
    cphi1: Array
    cached: NDArray[np.bool_]


class Queue(NamedTuple):
    """Per problem: its returned error and attempt so far, its lowest converged attempt (restarts + 1: none), its
    next attempt; the problems waiting for their next random start (a ring: each is in it at most once) and
    ``at`` = [head, tail, next new problem]."""

    best: Array
    best_a: NDArray[np.intp]
    first_ok: NDArray[np.intp]
    next_a: NDArray[np.intp]
    ring: NDArray[np.intp]
    queued: NDArray[np.bool_]
    at: NDArray[np.intp]


def _lanes_of(n: int, rows: int) -> Lanes:
    L = LANES
    f, z = np.zeros, np.zeros(L, dtype=np.intp)
    return Lanes(f((n, 6, L)), f((n, n, L)), f((n, L)), f((n, L)), f((n, L)), f((n, L)), f((n, L)), f((n, L)),
                 f((n, L)), f((n, L)), f((3, L)), f((3, 3, L)), f((rows, L)), f((15, L)), f(L), f(L), f(L), f(L),
                 f(L), f((3, 3, L)), f((n, L)), np.full(L, -1, dtype=np.intp), z.copy(), f(L), f(L), f(L), f(L),
                 f(L), f(L), f(L), f(L), f(L), f(L), f(L), f(L), f(L), f(L), np.zeros(L, dtype=np.bool_),
                 np.zeros(L, dtype=np.bool_), z.copy(), z.copy())


def _frames_of(n: int) -> Frames:
    return Frames(np.zeros((n, 3, 5, LANES)), np.zeros((3, 4, LANES)), np.zeros((6, LANES)), np.zeros((n, LANES)))


def _start_of(n: int, m: int) -> Start:
    return Start(np.zeros((n, 4, 5)), np.zeros((4, 4)), np.zeros(m), np.zeros((3, 3)), np.zeros(n), np.zeros(n),
                 np.zeros(n), np.zeros(20), np.zeros((4, 4)), np.zeros(n), np.zeros(n), np.zeros(1, dtype=np.bool_))


def _queue_of(B: int, restarts: int) -> Queue:
    return Queue(np.zeros(B), np.zeros(B, dtype=np.intp), np.full(B, restarts + 1, dtype=np.intp),
                 np.zeros(B, dtype=np.intp), np.zeros(max(B, 1), dtype=np.intp), np.zeros(B, dtype=np.bool_),
                 np.zeros(3, dtype=np.intp))


def _finish(s: LoopSettings, bt: Batch, ln: Lanes, cur: Frames, qu: Queue, out: LoopOut, lane: int) -> bool:
    """Lane ``lane``'s problem: True while it runs on; else its answer written (the lowest converged attempt, else
    the lowest error, the lower attempt on a tie), a restart queued where one is due, and the lane freed."""
    b, a = ln.job[lane], ln.att[lane]
    first_ok, n = qu.first_ok, cur.q.shape[0]
    if a > first_ok[b]:  # a lower attempt of this problem converged: this one cannot be returned
        ln.job[lane] = -1
        return False
    k, el = ln.it[lane], ln.e[lane]
    e_win = ln.es[k - s.win, lane] if s.win > 0 and k >= max(s.win, s.stall_min) else math.inf
    why = stop_reason(s, ln.pos[lane], ln.ori[lane], el, ln.lam[lane], ln.flat[lane], k, e_win)
    if why == RUNNING:
        return True
    done = why == CONVERGED
    back = (not done) and el >= ln.e0[lane]
    ef = ln.e0[lane] if back else el
    if a == 0 or done or (first_ok[b] > bt.restarts and (ef < qu.best[b] or (ef == qu.best[b] and a < qu.best_a[b]))):
        qu.best[b], qu.best_a[b] = ef, a
        for j in range(n):
            out.q[b, j] = ln.qs[j, lane] if back else cur.q[j, lane]
        out.pos[b] = ln.pos0[lane] if back else ln.pos[lane]
        out.ori[b] = ln.ori0[lane] if back else ln.ori[lane]
        history = out.history
        history[b, 0] = ln.e0[lane]  # then the returned pose's: the start's unless beaten
        for r in range(1, k):
            history[b, r] = min(ln.es[r, lane], ln.e0[lane])
        for r in range(k, history.shape[1]):
            history[b, r] = ef
        out.iters[b] = k
        out.reason[b] = why
    if done:
        first_ok[b] = a
    elif first_ok[b] > bt.restarts and qu.next_a[b] <= bt.restarts and not qu.queued[b]:
        B = qu.queued.shape[0]
        qu.ring[qu.at[1] % B], qu.queued[b] = b, True
        qu.at[1] += 1
    ln.job[lane] = -1
    return False


def _take(chain: LoopChain, bt: Batch, qu: Queue, qs1: Array) -> tuple[int, int]:
    """The next work (problem, attempt), its start in ``qs1``: a problem's next random start first (hard problems
    start early), else a new problem (attempt 0); problem −1 when there is none."""
    B = qu.queued.shape[0]
    at, first_ok, next_a = qu.at, qu.first_ok, qu.next_a
    while at[0] < at[1]:
        c = qu.ring[at[0] % B]
        at[0] += 1
        qu.queued[c] = False
        if first_ok[c] <= bt.restarts or next_a[c] > bt.restarts:
            continue  # converged, or its last start is out already
        a = next_a[c]
        next_a[c] += 1
        if at[2] == B and next_a[c] <= bt.restarts:  # no new problems left: idle lanes take its next start at
            qu.ring[at[1] % B], qu.queued[c] = c, True  # once, side by side (the answer depends only on which
            at[1] += 1  # attempts converge, not on the order they run in)
        restart_start(bt.seed, bt.index0 + c, a, bt.q0[c], chain.lo, chain.hi, chain.limited, qs1)
        return c, a
    if at[2] == B:
        return -1, 0
    b = at[2]
    at[2] += 1
    next_a[b] = 1
    for j in range(qs1.shape[0]):
        qs1[j] = min(max(bt.q0[b, j], chain.lo[j]), chain.hi[j])
    return b, 0


def _start_frames(chain: LoopChain, s: LoopSettings, st: Start) -> None:
    """The start's frames, φ, θ and the frames there, in ``st``: computed once for consecutive problems with the
    same start (a batch from one pose), the same numbers either way."""
    n = st.qs1.shape[0]
    fresh = not st.cached[0]
    for j in range(n):
        if fresh or st.qs1[j] != st.cq[j]:
            fresh = True
            break
    if fresh:
        chain_forward(st.qs1, chain.Hs, chain.Ce, st.T1, st.Te0, st.loc1)
        _phi(st.qs1, chain.mid, chain.half, chain.limited, s.margin, st.phi1)
        _theta(st.phi1, chain.mid, chain.half, chain.limited, chain.lo, chain.hi, st.q1)
        chain_forward(st.q1, chain.Hs, chain.Ce, st.T1, st.Te1, st.loc1)
        for j in range(n):
            st.cq[j] = st.qs1[j]
            st.cphi1[j] = math.cos(st.phi1[j])
        st.cached[0] = True


def _load(chain: LoopChain, s: LoopSettings, bt: Batch, ln: Lanes, cur: Frames, qu: Queue, st: Start,
          out: LoopOut, lane: int, b: int, a: int) -> bool:
    """Problem ``b``'s attempt ``a`` from st.qs1 into the lane, by lm_jit's own one-problem functions (the same
    operations); False where the start meets the target (the answer, written; the lane stays free)."""
    n = cur.q.shape[0]
    ln.job[lane], ln.att[lane] = b, a
    ln.pl[lane] = s.pull if a == 0 else bt.r_pull
    p, Rt = bt.P[b], bt.R[b]
    for i in range(3):
        ln.PL[i, lane] = p[i]
        for j in range(3):
            ln.RL[i, j, lane] = Rt[i, j]
    for j in range(n):
        ln.qs[j, lane] = st.qs1[j]
    _start_frames(chain, s, st)
    ln.pos0[lane], ln.ori0[lane], ln.e0[lane] = chain_residual(st.Te0, p, Rt, bt.orient, bt.w, st.V1, st.D1)
    if ln.pos0[lane] <= s.tol and ln.ori0[lane] <= s.otol:  # as lm_jit._lm_one: the start is the answer
        if a < qu.first_ok[b]:
            for j in range(n):
                out.q[b, j] = st.qs1[j]
            out.pos[b], out.ori[b], out.iters[b], out.reason[b] = ln.pos0[lane], ln.ori0[lane], 0, CONVERGED
            for r in range(out.history.shape[1]):
                out.history[b, r] = ln.e0[lane]
            qu.first_ok[b] = a
        ln.job[lane] = -1
        return False
    ln.pos[lane], ln.ori[lane], ln.e[lane] = chain_residual(st.Te1, p, Rt, bt.orient, bt.w, st.V1, st.D1)
    for k in range(n):
        cur.q[k, lane] = st.q1[k]
        ln.phi[k, lane] = st.phi1[k]
        ln.cphi[k, lane] = st.cphi1[k]
        for i in range(3):
            for j in range(5):
                cur.T[k, i, j, lane] = st.T1[k, i, j]
    for i in range(3):
        for j in range(4):
            cur.Te[i, j, lane] = st.Te1[i, j]
    for i in range(st.V1.shape[0]):
        cur.V[i, lane] = st.V1[i]
    ln.es[0, lane] = ln.e[lane]
    ln.lam[lane], ln.flat[lane], ln.ps[lane], ln.decay[lane], ln.it[lane] = s.damping, 0, 1.0, 1.0, 0
    return True


def _fill(chain: LoopChain, s: LoopSettings, bt: Batch, ln: Lanes, cur: Frames, qu: Queue, st: Start,
          out: LoopOut) -> int:
    """Lanes whose problem is done write its answer and take the next work (:func:`_finish`, :func:`_take`,
    :func:`_load`); returns the lanes running, and marks them ``live``."""
    running = 0
    for lane in range(LANES):
        while True:  # a lane just loaded is tested at once too (its start, moved inside the limits, may meet it)
            if ln.job[lane] >= 0 and _finish(s, bt, ln, cur, qu, out, lane):
                running += 1
                break
            b, a = _take(chain, bt, qu, st.qs1)
            if b < 0:
                break
            _load(chain, s, bt, ln, cur, qu, st, out, lane, b, a)
    for lane in range(LANES):
        ln.live[lane] = ln.job[lane] >= 0
    return running


def _jacobian(chain: LoopChain, bt: Batch, ln: Lanes, cur: Frames) -> None:
    """J_φ (n, 6, L): [a × (e − r), a] · h cos φ · W."""
    T, Te, J, w, half, limited = cur.T, cur.Te, ln.J, bt.w, chain.half, chain.limited
    for k in range(J.shape[0]):
        hk = half[k] if limited[k] else 1.0
        for lane in range(LANES):
            sc = hk * ln.cphi[k, lane] if limited[k] else 1.0
            axx, ayy, azz = T[k, 0, 4, lane], T[k, 1, 4, lane], T[k, 2, 4, lane]
            dx = Te[0, 3, lane] - T[k, 0, 3, lane]
            dy = Te[1, 3, lane] - T[k, 1, 3, lane]
            dz = Te[2, 3, lane] - T[k, 2, 3, lane]
            J[k, 0, lane] = (ayy * dz - azz * dy) * sc * w[0]
            J[k, 1, lane] = (azz * dx - axx * dz) * sc * w[1]
            J[k, 2, lane] = (axx * dy - ayy * dx) * sc * w[2]
        if bt.orient:
            for lane in range(LANES):
                sc = hk * ln.cphi[k, lane] if limited[k] else 1.0
                J[k, 3, lane] = T[k, 0, 4, lane] * sc * w[3]
                J[k, 4, lane] = T[k, 1, 4, lane] * sc * w[4]
                J[k, 5, lane] = T[k, 2, 4, lane] * sc * w[5]


def _step(chain: LoopChain, s: LoopSettings, ln: Lanes, cur: Frames) -> None:
    """Every lane's step: the normal equations solved (lm_jit's fallback where Cholesky fails: a relative jitter on
    the diagonal, then again; a zero step if that fails too), scaled to max_step, φ_n = φ + d."""
    n, L, d = cur.q.shape[0], LANES, ln.d
    for lane in range(L):
        el = ln.e[lane]
        ln.mu[lane] = ln.pl[lane] * ln.decay[lane] * ln.ps[lane] * min(1.0, el * el)
        ln.jitter[lane] = 0.0
    normal_equations_lanes(ln.J, cur.V, ln.lam, ln.mu, chain.limited, ln.phi, ln.jitter, chain.kappa, ln.A, ln.rhs,
                           ln.trace)
    solve_spd_lanes(ln.A, ln.rhs, d, ln.bad)
    retry = False
    for lane in range(L):
        if ln.job[lane] >= 0 and ln.bad[lane] != 0.0:
            ln.jitter[lane] = 1e-12 * (ln.trace[lane] / n + 1.0)
            retry = True
    if retry:
        normal_equations_lanes(ln.J, cur.V, ln.lam, ln.mu, chain.limited, ln.phi, ln.jitter, chain.kappa, ln.A,
                               ln.rhs, ln.trace)
        solve_spd_lanes(ln.A, ln.rhs, d, ln.bad)
        for lane in range(L):
            if ln.jitter[lane] != 0.0 and ln.bad[lane] != 0.0:
                for i in range(n):
                    d[i, lane] = 0.0
    if s.max_step > 0.0:
        for lane in range(L):
            big = 0.0
            for i in range(n):
                big = max(big, abs(d[i, lane]))
            if big > s.max_step:
                f = s.max_step / big
                for i in range(n):
                    d[i, lane] *= f
    for i in range(n):
        for lane in range(L):
            ln.phin[i, lane] = ln.phi[i, lane] + d[i, lane]


def _try(chain: LoopChain, s: LoopSettings, bt: Batch, ln: Lanes, trial: Frames) -> bool:
    """The trial state at φ_n in ``trial`` and each lane's acceptance (lm_jit.accept_step); whether every lane
    took its step."""
    theta_lanes(ln.phin, chain.mid, chain.half, chain.limited, chain.lo, chain.hi, trial.q, ln.sphi, ln.live, bt.poly,
                ln.pw, ln.cw)
    forward_lanes(trial.q, chain.Hs, chain.Ce, trial.T, trial.Te, ln.loc, ln.sn, ln.cn, ln.live, bt.poly)
    residual_lanes(trial.Te, ln.PL, ln.RL, bt.orient, bt.w, trial.V, ln.D, ln.pos_n, ln.ori_n, ln.e_n, ln.live)
    every = True
    for lane in range(LANES):
        if ln.job[lane] < 0:
            ln.ok[lane] = False
            continue
        en, el = ln.e_n[lane], ln.e[lane]
        good, ln.lam[lane], ln.flat[lane], ln.ps[lane] = accept_step(en, el, ln.lam[lane], ln.flat[lane],
                                                                     ln.ps[lane], s.backoff)
        ln.ok[lane] = good
        every = every and good
        if good:
            ln.pos[lane], ln.ori[lane], ln.e[lane] = ln.pos_n[lane], ln.ori_n[lane], en
            el = en
        ln.it[lane] += 1
        ln.es[ln.it[lane], lane] = el
        ln.decay[lane] *= s.decay
    return every


def _restore(ln: Lanes, cur: Frames, old: Frames) -> None:
    """The lanes that refused their step copy their state back from the old buffers (refusals are the rarer case)."""
    n = cur.q.shape[0]
    for lane in range(LANES):
        if ln.ok[lane] or ln.job[lane] < 0:
            continue
        for k in range(n):
            cur.q[k, lane] = old.q[k, lane]
            for i in range(3):
                for j in range(5):
                    cur.T[k, i, j, lane] = old.T[k, i, j, lane]
        for i in range(3):
            for j in range(4):
                cur.Te[i, j, lane] = old.Te[i, j, lane]
        for i in range(6):
            cur.V[i, lane] = old.V[i, lane]


def _keep_phi(chain: LoopChain, poly: bool, ln: Lanes) -> None:
    """φ of the lanes that took their step: φ and π − φ give the same θ, kept in [−π/2, π/2] (where the pull
    toward 0 is the short way), and cos φ."""
    phi, cphi, limited = ln.phi, ln.cphi, chain.limited
    for i in range(phi.shape[0]):
        if poly:
            if limited[i]:
                for lane in range(LANES):
                    if ln.ok[lane]:
                        phi[i, lane] = ln.pw[i, lane]
                        cphi[i, lane] = ln.cw[i, lane]
            else:
                for lane in range(LANES):
                    if ln.ok[lane]:
                        phi[i, lane] = ln.phin[i, lane]
                        cphi[i, lane] = sincos(ln.phin[i, lane])[1]
        elif limited[i]:
            for lane in range(LANES):
                if ln.ok[lane]:
                    phi[i, lane] = math.asin(ln.sphi[i, lane])
                    cphi[i, lane] = math.cos(phi[i, lane])
        else:
            for lane in range(LANES):
                if ln.ok[lane]:
                    phi[i, lane] = ln.phin[i, lane]
                    cphi[i, lane] = math.cos(ln.phin[i, lane])


def _lm_lanes(chain: LoopChain, s: LoopSettings, q0: Array, P: Array, R: Array, orient: bool, w: Array, poly: bool,
              restart: tuple[int, int, float, int], out: LoopOut, tries: Array) -> None:
    """The lanes' loop: fill the lanes (:func:`_fill`), then one iteration of every lane (:func:`_jacobian`,
    :func:`_step`, :func:`_try`; the trial becomes the current state, :func:`_restore` where a lane refused its
    step, :func:`_keep_phi`), until no lane runs."""
    B, n = q0.shape
    bt = Batch(q0, P, R, orient, w, poly, restart[0], restart[1], restart[2], restart[3])
    ln, cur, trial = _lanes_of(n, s.max_iter + 1), _frames_of(n), _frames_of(n)
    st, qu = _start_of(n, w.shape[0]), _queue_of(B, restart[0])
    while _fill(chain, s, bt, ln, cur, qu, st, out) > 0:
        _jacobian(chain, bt, ln, cur)
        _step(chain, s, ln, cur)
        every = _try(chain, s, bt, ln, trial)
        cur, trial = trial, cur
        if not every:
            _restore(ln, cur, trial)
        _keep_phi(chain, poly, ln)
    for b in range(B):  # the random starts run: up to the converged one, else all
        tries[b] = qu.first_ok[b] if qu.first_ok[b] <= bt.restarts else qu.next_a[b] - 1


def _part(fn: Any, *calls: Any) -> Any:
    """A part of the lanes' loop compiled as the loop is (SLP, NumPy's error model), for other kernels only."""
    return kernel(fn, calls=calls, slp=True, error_model="numpy", internal=True) or fn


_lanes_of, _frames_of, _start_of, _queue_of = _part(_lanes_of), _part(_frames_of), _part(_start_of), _part(_queue_of)
_finish = _part(_finish, stop_reason)
_take = _part(_take, restart_start)
_start_frames = _part(_start_frames, chain_forward, _phi, _theta)
_load = _part(_load, chain_residual, _start_frames)
_fill = _part(_fill, _finish, _take, _load)
_jacobian = _part(_jacobian)
_step = _part(_step, normal_equations_lanes, solve_spd_lanes)
_try = _part(_try, theta_lanes, forward_lanes, residual_lanes, accept_step)
_restore = _part(_restore)
_keep_phi = _part(_keep_phi, sincos)
_KERNEL = kernel(_lm_lanes, slp=True, error_model="numpy",
                 calls=(_lanes_of, _frames_of, _start_of, _queue_of, _fill, _jacobian, _step, _try, _restore,
                        _keep_phi))


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
