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


class Lanes(NamedTuple):
    """Each lane's run (lane index innermost): its problem (``job``, −1: none), attempt (0: the given start) and
    pull μ₀; iterations, iterations without gain, λ, the pull's back-off, its decay and μ; the errors ‖p − e‖, ‖ω‖,
    ‖WV‖ now, at the start (``0``) and of the trial step (``_n``); whether the trial was kept and whether the lane
    holds a problem; ‖WV‖ after each iteration (max_iter + 1, L); θ at the start (n, L); φ, the trial φ, cos φ, sin
    of the trial φ, the wrapped trial φ and its cosine (n, L); the target p (3, L) and R_t (3, 3, L)."""

    job: NDArray[np.intp]
    att: NDArray[np.intp]
    pl: Array
    it: NDArray[np.intp]
    flat: NDArray[np.intp]
    lam: Array
    ps: Array
    decay: Array
    mu: Array
    pos: Array
    ori: Array
    e: Array
    pos0: Array
    ori0: Array
    e0: Array
    pos_n: Array
    ori_n: Array
    e_n: Array
    ok: NDArray[np.bool_]
    live: NDArray[np.bool_]
    es: Array
    qs: Array
    phi: Array
    phin: Array
    cphi: Array
    sphi: Array
    pw: Array
    cw: Array
    PL: Array
    RL: Array


class Frames(NamedTuple):
    """The lanes' frames T (n, 3, 5, L), effector Te (3, 4, L), weighted residual V (6, L) and θ (n, L): the current
    state, or the trial step's (the two swap when the lanes accept)."""

    T: Array
    Te: Array
    V: Array
    q: Array


class Work(NamedTuple):
    """The step's scratch: J_φ (n, 6, L), A (n, n, L), rhs and d (n, L), forward_lanes' loc (15, L), sn, cn (L,),
    trace, bad and jitter (L,), residual_lanes' D (3, 3, L)."""

    J: Array
    A: Array
    rhs: Array
    d: Array
    loc: Array
    sn: Array
    cn: Array
    trace: Array
    bad: Array
    jitter: Array
    D: Array


class Jobs(NamedTuple):
    """Each problem's returned error and attempt so far, its lowest converged attempt (restarts + 1: none) and its
    next attempt; the problems waiting for their next random start (a ring, each in it at most once) and whether
    each is queued; ``ctr``: the ring's head and tail, and the next new problem."""

    best: Array
    best_a: NDArray[np.intp]
    first_ok: NDArray[np.intp]
    next_a: NDArray[np.intp]
    queue: NDArray[np.intp]
    queued: NDArray[np.bool_]
    ctr: NDArray[np.intp]


class Start(NamedTuple):
    """One problem's start in lm_jit's layout: frames T1 (n, 4, 5), the effector at θ_s (Te0) and at θ(φ(θ_s))
    (Te1), V1, D1, θ_s, θ, φ, chain_forward's loc; the last start computed (cq, cos φ; ``cached``: whether there is
    one)."""

    T1: Array
    Te0: Array
    Te1: Array
    V1: Array
    D1: Array
    qs1: Array
    q1: Array
    phi1: Array
    loc1: Array
    cq: Array
    cphi1: Array
    cached: NDArray[np.bool_]


class Batch(NamedTuple):
    """The problems: starts q0 (B, n), targets P (B, 3) and R (B, 3, 3), whether R counts, the row weights w."""

    q0: Array
    P: Array
    R: Array
    orient: bool
    w: Array


def _lane_records(n: int, m: int, max_iter: int, B: int, restarts: int
                  ) -> tuple[Lanes, Frames, Frames, Work, Jobs, Start]:
    """The lanes' records, zeroed (lanes without a problem compute on harmless numbers)."""
    L, z = LANES, np.zeros
    i = np.intp
    ln = Lanes(np.full(L, -1, dtype=i), z(L, dtype=i), z(L), z(L, dtype=i), z(L, dtype=i), z(L), z(L), z(L), z(L),
               z(L), z(L), z(L), z(L), z(L), z(L), z(L), z(L), z(L), z(L, dtype=np.bool_), z(L, dtype=np.bool_),
               z((max_iter + 1, L)), z((n, L)), z((n, L)), z((n, L)), z((n, L)), z((n, L)), z((n, L)), z((n, L)),
               z((3, L)), z((3, 3, L)))
    cur = Frames(z((n, 3, 5, L)), z((3, 4, L)), z((6, L)), z((n, L)))
    trial = Frames(z((n, 3, 5, L)), z((3, 4, L)), z((6, L)), z((n, L)))
    wk = Work(z((n, 6, L)), z((n, n, L)), z((n, L)), z((n, L)), z((15, L)), z(L), z(L), z(L), z(L), z(L),
              z((3, 3, L)))
    jobs = Jobs(z(B), z(B, dtype=i), np.full(B, restarts + 1, dtype=i), z(B, dtype=i), z(max(B, 1), dtype=i),
                z(B, dtype=np.bool_), z(3, dtype=i))
    st = Start(z((n, 4, 5)), z((4, 4)), z((4, 4)), z(m), z((3, 3)), z(n), z(n), z(n), z(20), z(n), z(n),
               z(1, dtype=np.bool_))
    return ln, cur, trial, wk, jobs, st


def _answer(lane: int, b: int, why: int, back: bool, ln: Lanes, cur: Frames, out: LoopOut) -> None:
    """Problem b's outputs from the lane's run: θ (the start's where ``back``), its errors, its history (the start's
    ‖WV‖, then each iteration's, never above the start's, then the returned one's, held), iterations and reason."""
    k, e0 = ln.it[lane], ln.e0[lane]
    for j in range(ln.qs.shape[0]):
        out.q[b, j] = ln.qs[j, lane] if back else cur.q[j, lane]
    out.pos[b] = ln.pos0[lane] if back else ln.pos[lane]
    out.ori[b] = ln.ori0[lane] if back else ln.ori[lane]
    out.history[b, 0] = e0
    for r in range(1, k):
        out.history[b, r] = min(ln.es[r, lane], e0)
    for r in range(k, out.history.shape[1]):
        out.history[b, r] = e0 if back else ln.e[lane]
    out.iters[b] = k
    out.reason[b] = why


def _finish(s: LoopSettings, restarts: int, lane: int, ln: Lanes, cur: Frames, jobs: Jobs, out: LoopOut) -> bool:
    """The lane's stopping test (:func:`~animkit.ik.lm_jit.stop_reason`): True while it runs. A finished run is
    returned (:func:`_answer`) when it is the first attempt, converged, or (no attempt converged yet) ended lower than
    the answer so far (the lower attempt on a tie); unconverged, the problem queues for its next random start. A run
    above the problem's lowest converged attempt stops at once (it cannot be returned). The lane is then free."""
    b, a = ln.job[lane], ln.att[lane]
    if a <= jobs.first_ok[b]:
        k, el = ln.it[lane], ln.e[lane]
        e_win = ln.es[k - s.win, lane] if s.win > 0 and k >= max(s.win, s.stall_min) else math.inf
        why = stop_reason(s, ln.pos[lane], ln.ori[lane], el, ln.lam[lane], ln.flat[lane], k, e_win)
        if why == RUNNING:
            return True
        done = why == CONVERGED
        back = (not done) and el >= ln.e0[lane]
        ef = ln.e0[lane] if back else el
        if a == 0 or done or (jobs.first_ok[b] > restarts and
                              (ef < jobs.best[b] or (ef == jobs.best[b] and a < jobs.best_a[b]))):
            jobs.best[b], jobs.best_a[b] = ef, a
            _answer(lane, b, why, back, ln, cur, out)
        if done:
            jobs.first_ok[b] = a
        elif jobs.first_ok[b] > restarts and jobs.next_a[b] <= restarts and not jobs.queued[b]:
            _enqueue(jobs, b)
    ln.job[lane] = -1
    return False


def _enqueue(jobs: Jobs, b: int) -> None:
    """Problem b waits for its next random start (at the ring's tail)."""
    jobs.queue[jobs.ctr[1] % jobs.queued.shape[0]], jobs.queued[b] = b, True
    jobs.ctr[1] += 1


def _take(chain: LoopChain, restart: tuple[int, int, float, int], q0: Array, jobs: Jobs, qs1: Array
          ) -> tuple[int, int]:
    """The next work for a free lane, its start θ_s written in qs1: a queued problem's next random start first (hard
    problems start early; :func:`restart_start`), else the next new problem from its given start (clipped into the
    limits); (−1, 0) when there is none. With no new problems left, a problem taken from the queue queues again at
    once, so idle lanes run its next starts side by side (the answer depends only on which attempts converge)."""
    restarts, seed, _, index0 = restart
    B, ctr = q0.shape[0], jobs.ctr
    while ctr[0] < ctr[1]:
        c = jobs.queue[ctr[0] % B]
        ctr[0] += 1
        jobs.queued[c] = False
        if jobs.first_ok[c] <= restarts or jobs.next_a[c] > restarts:
            continue  # converged, or its last start is out already
        a = jobs.next_a[c]
        jobs.next_a[c] += 1
        if ctr[2] == B and jobs.next_a[c] <= restarts:
            _enqueue(jobs, c)
        restart_start(seed, index0 + c, a, q0[c], chain.lo, chain.hi, chain.limited, qs1)
        return c, a
    if ctr[2] == B:
        return -1, 0
    b = ctr[2]
    ctr[2] += 1
    jobs.next_a[b] = 1
    for j in range(q0.shape[1]):
        qs1[j] = min(max(q0[b, j], chain.lo[j]), chain.hi[j])
    return b, 0


def _start_frames(chain: LoopChain, margin: float, st: Start) -> None:
    """The start's frames at θ_s (Te0), φ(θ_s), θ(φ) and the frames there (T1, Te1), by lm_jit's one-problem
    functions (the same operations): computed once for consecutive problems with the same start (a batch from one
    pose), the same numbers either way."""
    n = st.qs1.shape[0]
    fresh = not st.cached[0]
    for j in range(n):
        if fresh or st.qs1[j] != st.cq[j]:
            fresh = True
            break
    if fresh:
        chain_forward(st.qs1, chain.Hs, chain.Ce, st.T1, st.Te0, st.loc1)
        _phi(st.qs1, chain.mid, chain.half, chain.limited, margin, st.phi1)
        _theta(st.phi1, chain.mid, chain.half, chain.limited, chain.lo, chain.hi, st.q1)
        chain_forward(st.q1, chain.Hs, chain.Ce, st.T1, st.Te1, st.loc1)
        for j in range(n):
            st.cq[j] = st.qs1[j]
            st.cphi1[j] = math.cos(st.phi1[j])
        st.cached[0] = True


def _start(chain: LoopChain, s: LoopSettings, pb: Batch, r_pull: float, lane: int, b: int, a: int, ln: Lanes,
           cur: Frames, jobs: Jobs, st: Start, out: LoopOut) -> None:
    """The lane takes attempt a of problem b from θ_s = st.qs1: its target, start and state copied in. A start that
    meets the target already is the answer (as in lm_jit.lm_one; returned unless a lower attempt converged), and
    leaves the lane free."""
    ln.job[lane], ln.att[lane] = b, a
    ln.pl[lane] = s.pull if a == 0 else r_pull
    p, Rt, n = pb.P[b], pb.R[b], st.qs1.shape[0]
    for i in range(3):
        ln.PL[i, lane] = p[i]
        for j in range(3):
            ln.RL[i, j, lane] = Rt[i, j]
    for j in range(n):
        ln.qs[j, lane] = st.qs1[j]
    _start_frames(chain, s.margin, st)
    ln.pos0[lane], ln.ori0[lane], ln.e0[lane] = chain_residual(st.Te0, p, Rt, pb.orient, pb.w, st.V1, st.D1)
    if ln.pos0[lane] <= s.tol and ln.ori0[lane] <= s.otol:
        if a < jobs.first_ok[b]:
            for j in range(n):
                out.q[b, j] = st.qs1[j]
            out.pos[b], out.ori[b], out.iters[b], out.reason[b] = ln.pos0[lane], ln.ori0[lane], 0, CONVERGED
            for r in range(out.history.shape[1]):
                out.history[b, r] = ln.e0[lane]
            jobs.first_ok[b] = a
        ln.job[lane] = -1
        return
    ln.pos[lane], ln.ori[lane], ln.e[lane] = chain_residual(st.Te1, p, Rt, pb.orient, pb.w, st.V1, st.D1)
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


def _fill_lanes(chain: LoopChain, s: LoopSettings, pb: Batch, restart: tuple[int, int, float, int], ln: Lanes,
                cur: Frames, jobs: Jobs, st: Start, out: LoopOut) -> int:
    """Lanes whose run is done return it (:func:`_finish`) and take the next work (:func:`_take`, :func:`_start`);
    returns how many lanes run."""
    running = 0
    for lane in range(LANES):
        while True:
            if ln.job[lane] >= 0 and _finish(s, restart[0], lane, ln, cur, jobs, out):
                running += 1
                break
            b, a = _take(chain, restart, pb.q0, jobs, st.qs1)
            if b < 0:
                break
            _start(chain, s, pb, restart[2], lane, b, a, ln, cur, jobs, st, out)
    return running


def _jacobian_lanes(chain: LoopChain, w: Array, orient: bool, cphi: Array, cur: Frames, J: Array) -> None:
    """Every lane: J_φ (n, 6, L) = [a × (e − r), a] · h cos φ · W (lm_jit._jacobian_phi's operations)."""
    T, Te = cur.T, cur.Te
    for k in range(T.shape[0]):
        lim = chain.limited[k]
        hk = chain.half[k] if lim else 1.0
        for lane in range(LANES):
            sc = hk * cphi[k, lane] if lim else 1.0
            axx, ayy, azz = T[k, 0, 4, lane], T[k, 1, 4, lane], T[k, 2, 4, lane]
            dx = Te[0, 3, lane] - T[k, 0, 3, lane]
            dy = Te[1, 3, lane] - T[k, 1, 3, lane]
            dz = Te[2, 3, lane] - T[k, 2, 3, lane]
            J[k, 0, lane] = (ayy * dz - azz * dy) * sc * w[0]
            J[k, 1, lane] = (azz * dx - axx * dz) * sc * w[1]
            J[k, 2, lane] = (axx * dy - ayy * dx) * sc * w[2]
        if orient:
            for lane in range(LANES):
                sc = hk * cphi[k, lane] if lim else 1.0
                J[k, 3, lane] = T[k, 0, 4, lane] * sc * w[3]
                J[k, 4, lane] = T[k, 1, 4, lane] * sc * w[4]
                J[k, 5, lane] = T[k, 2, 4, lane] * sc * w[5]


def _solve_lanes(chain: LoopChain, max_step: float, ln: Lanes, V: Array, wk: Work) -> None:
    """d = Δφ from the normal equations for every lane (μ = μ₀ γᵏ βʳ min(1, ‖WV‖²)); a lane whose A is not positive
    definite solves again with a relative jitter on its diagonal, then takes d = 0 (lm_jit._damped_step's
    fallback); |d| capped at ``max_step`` (scaled as a whole)."""
    n, lim = ln.phi.shape[0], chain.limited
    for lane in range(LANES):
        el = ln.e[lane]
        ln.mu[lane] = ln.pl[lane] * ln.decay[lane] * ln.ps[lane] * min(1.0, el * el)
        wk.jitter[lane] = 0.0
    normal_equations_lanes(wk.J, V, ln.lam, ln.mu, lim, ln.phi, wk.jitter, chain.kappa, wk.A, wk.rhs, wk.trace)
    solve_spd_lanes(wk.A, wk.rhs, wk.d, wk.bad)
    retry = False
    for lane in range(LANES):
        if ln.job[lane] >= 0 and wk.bad[lane] != 0.0:
            wk.jitter[lane] = 1e-12 * (wk.trace[lane] / n + 1.0)
            retry = True
    if retry:
        normal_equations_lanes(wk.J, V, ln.lam, ln.mu, lim, ln.phi, wk.jitter, chain.kappa, wk.A, wk.rhs, wk.trace)
        solve_spd_lanes(wk.A, wk.rhs, wk.d, wk.bad)
        for lane in range(LANES):
            if wk.jitter[lane] != 0.0 and wk.bad[lane] != 0.0:
                for i in range(n):
                    wk.d[i, lane] = 0.0
    if max_step > 0.0:
        for lane in range(LANES):
            big = 0.0
            for i in range(n):
                big = max(big, abs(wk.d[i, lane]))
            if big > max_step:
                f = max_step / big
                for i in range(n):
                    wk.d[i, lane] *= f


def _trial_lanes(chain: LoopChain, s: LoopSettings, pb: Batch, poly: bool, ln: Lanes, cur: Frames, trial: Frames,
                 wk: Work) -> None:
    """One step of every lane into ``trial``: J_φ, Δφ (:func:`_solve_lanes`), φ + Δφ, θ, the frames and the
    residual there."""
    n, lim = ln.phi.shape[0], chain.limited
    for lane in range(LANES):
        ln.live[lane] = ln.job[lane] >= 0
    _jacobian_lanes(chain, pb.w, pb.orient, ln.cphi, cur, wk.J)
    _solve_lanes(chain, s.max_step, ln, cur.V, wk)
    for i in range(n):
        for lane in range(LANES):
            ln.phin[i, lane] = ln.phi[i, lane] + wk.d[i, lane]
    theta_lanes(ln.phin, chain.mid, chain.half, lim, chain.lo, chain.hi, trial.q, ln.sphi, ln.live, poly, ln.pw, ln.cw)
    forward_lanes(trial.q, chain.Hs, chain.Ce, trial.T, trial.Te, wk.loc, wk.sn, wk.cn, ln.live, poly)
    residual_lanes(trial.Te, ln.PL, ln.RL, pb.orient, pb.w, trial.V, wk.D, ln.pos_n, ln.ori_n, ln.e_n, ln.live)


def _accept_lanes(s: LoopSettings, ln: Lanes) -> bool:
    """Every lane's acceptance (:func:`~animkit.ik.lm_jit.accept_step`): λ, the stall count and the pull's scale
    updated, the trial's errors kept where the step is; one more iteration and its ‖WV‖. True when every lane with a
    problem kept its step."""
    every = True
    for lane in range(LANES):
        if ln.job[lane] < 0:
            ln.ok[lane] = False
            continue
        en, el = ln.e_n[lane], ln.e[lane]
        good, ln.lam[lane], ln.flat[lane], ln.ps[lane] = accept_step(en, el, ln.lam[lane], ln.flat[lane], ln.ps[lane],
                                                                     s.backoff)
        ln.ok[lane] = good
        every = every and good
        if good:
            ln.pos[lane], ln.ori[lane], ln.e[lane] = ln.pos_n[lane], ln.ori_n[lane], en
            el = en
        ln.it[lane] += 1
        ln.es[ln.it[lane], lane] = el
        ln.decay[lane] *= s.decay
    return every


def _keep_refused(ln: Lanes, cur: Frames, old: Frames) -> None:
    """A lane that refused its step (the buffers swapped already) copies its own state back from ``old``."""
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


def _wrap_phi(limited: Array, poly: bool, ln: Lanes) -> None:
    """φ ← the kept trial φ and its cosine. φ and π − φ give the same θ: a limited DOF's φ is kept in
    [−π/2, π/2] (asin(sin φ), or poly_trig's wrap), where the pull toward 0 is the short way."""
    phi, phin, cphi, ok = ln.phi, ln.phin, ln.cphi, ln.ok
    for i in range(phi.shape[0]):
        if poly:
            if limited[i]:
                for lane in range(LANES):
                    if ok[lane]:
                        phi[i, lane] = ln.pw[i, lane]
                        cphi[i, lane] = ln.cw[i, lane]
            else:
                for lane in range(LANES):
                    if ok[lane]:
                        phi[i, lane] = phin[i, lane]
                        cphi[i, lane] = sincos(phin[i, lane])[1]
        elif limited[i]:
            for lane in range(LANES):
                if ok[lane]:
                    phi[i, lane] = math.asin(ln.sphi[i, lane])
                    cphi[i, lane] = math.cos(phi[i, lane])
        else:
            for lane in range(LANES):
                if ok[lane]:
                    phi[i, lane] = phin[i, lane]
                    cphi[i, lane] = math.cos(phin[i, lane])


def _lm_lanes(chain: LoopChain, s: LoopSettings, q0: Array, P: Array, R: Array, orient: bool, w: Array, poly: bool,
              restart: tuple[int, int, float, int], out: LoopOut, tries: Array) -> None:
    """The lanes' loop: free lanes return their run and take the next (:func:`_fill_lanes`), then every lane steps
    (:func:`_trial_lanes`), accepts or refuses (:func:`_accept_lanes`; the buffers swap, a refusing lane copies its
    state back) and updates φ, until no lane runs; ``tries`` (B,): the random starts each problem ran."""
    pb = Batch(q0, P, R, orient, w)
    restarts = restart[0]
    ln, cur, trial, wk, jobs, st = _lane_records(q0.shape[1], w.shape[0], s.max_iter, q0.shape[0], restarts)
    while _fill_lanes(chain, s, pb, restart, ln, cur, jobs, st, out) > 0:
        _trial_lanes(chain, s, pb, poly, ln, cur, trial, wk)
        every = _accept_lanes(s, ln)
        cur, trial = trial, cur
        if not every:
            _keep_refused(ln, cur, trial)
        _wrap_phi(chain.limited, poly, ln)
    for b in range(q0.shape[0]):  # the random starts run: up to the converged one, else all
        tries[b] = jobs.first_ok[b] if jobs.first_ok[b] <= restarts else jobs.next_a[b] - 1


# the lanes' helpers compile inlined into the loop (numba's inline="always"): one function to LLVM, as written flat
_answer = kernel(_answer, inline=True) or _answer
_enqueue = kernel(_enqueue, inline=True) or _enqueue
_finish = kernel(_finish, calls=(stop_reason, _answer, _enqueue), inline=True) or _finish
_take = kernel(_take, calls=(_enqueue, restart_start), inline=True) or _take
_start_frames = kernel(_start_frames, calls=(chain_forward, _phi, _theta), inline=True) or _start_frames
_start = kernel(_start, calls=(_start_frames, chain_residual), inline=True) or _start
_fill_lanes = kernel(_fill_lanes, calls=(_finish, _take, _start), inline=True) or _fill_lanes
_jacobian_lanes = kernel(_jacobian_lanes, inline=True) or _jacobian_lanes
_solve_lanes = kernel(_solve_lanes, calls=(normal_equations_lanes, solve_spd_lanes), inline=True) or _solve_lanes
_trial_lanes = kernel(_trial_lanes, calls=(_jacobian_lanes, _solve_lanes, theta_lanes, forward_lanes, residual_lanes),
                      inline=True) or _trial_lanes
_accept_lanes = kernel(_accept_lanes, calls=(accept_step,), inline=True) or _accept_lanes
_keep_refused = kernel(_keep_refused, inline=True) or _keep_refused
_wrap_phi = kernel(_wrap_phi, calls=(sincos,), inline=True) or _wrap_phi
_lane_records = kernel(_lane_records, inline=True) or _lane_records
_KERNEL = kernel(_lm_lanes, slp=True, error_model="numpy",
                 calls=(_lane_records, _fill_lanes, _trial_lanes, _accept_lanes, _keep_refused, _wrap_phi))


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
