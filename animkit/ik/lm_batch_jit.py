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
    accept_step,
    call_loop,
    chain_forward,
    chain_residual,
    stop_reason,
    theta_of,
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


# complexity: a numba kernel: the whole LM loop flat, with no calls in the hot path
def _lm_lanes(chain: LoopChain, s: LoopSettings, q0: Array, P: Array, R: Array, orient: bool,  # noqa: C901
              w: Array, poly: bool, restart: tuple[int, int, float, int], out: LoopOut, tries: Array) -> None:
    Hs, Ce, lo, hi, mid, half, limited, kappa = chain.Hs, chain.Ce, chain.lo, chain.hi, chain.mid, chain.half, \
        chain.limited, chain.kappa
    tol, otol, max_iter, damping, max_step = s.tol, s.otol, s.max_iter, s.damping, s.max_step
    win, stall_min, pull, decay_rate, backoff, margin = s.win, s.stall_min, s.pull, s.decay, s.backoff, s.margin
    restarts, seed, r_pull, index0 = restart
    q_out, iters, reason, pos_out, ori_out, history = out.q, out.iters, out.reason, out.pos, out.ori, out.history
    B, n = q0.shape
    L = LANES
    # the state of every lane (zeros: lanes without a problem compute on harmless numbers)
    T, Tn = np.zeros((n, 3, 5, L)), np.zeros((n, 3, 5, L))
    Te, Ten = np.zeros((3, 4, L)), np.zeros((3, 4, L))
    V, Vn = np.zeros((6, L)), np.zeros((6, L))
    # one problem's start (lm_jit's layout)
    T1, Te1, V1, D1 = np.zeros((n, 4, 5)), np.zeros((4, 4)), np.zeros(w.shape[0]), np.zeros((3, 3))
    qs1, q1, phi1, loc1 = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(20)
    Te0, cq, cphi1, cached = np.zeros((4, 4)), np.zeros(n), np.zeros(n), False  # the last start's (see below)
    J = np.zeros((n, 6, L))
    A = np.zeros((n, n, L))
    rhs, d = np.zeros((n, L)), np.zeros((n, L))
    qs, q, qn = np.zeros((n, L)), np.zeros((n, L)), np.zeros((n, L))
    phi, phin, cphi, sphi = np.zeros((n, L)), np.zeros((n, L)), np.zeros((n, L)), np.zeros((n, L))
    pw, cw = np.zeros((n, L)), np.zeros((n, L))
    PL, RL = np.zeros((3, L)), np.zeros((3, 3, L))
    es = np.zeros((max_iter + 1, L))  # ‖WV‖ after each iteration, per lane
    loc, sn, cn = np.zeros((15, L)), np.zeros(L), np.zeros(L)
    trace, bad, jitter = np.zeros(L), np.zeros(L), np.zeros(L)
    D = np.zeros((3, 3, L))
    job = np.full(L, -1, dtype=np.intp)  # the problem in each lane; −1: none
    pos, ori, e = np.zeros(L), np.zeros(L), np.zeros(L)
    pos0, ori0, e0 = np.zeros(L), np.zeros(L), np.zeros(L)
    pos_n, ori_n, e_n = np.zeros(L), np.zeros(L), np.zeros(L)
    lam, ps, decay, mu = np.zeros(L), np.zeros(L), np.zeros(L), np.zeros(L)
    ok, live = np.zeros(L, dtype=np.bool_), np.zeros(L, dtype=np.bool_)
    flat, it = np.zeros(L, dtype=np.intp), np.zeros(L, dtype=np.intp)
    att, pl = np.zeros(L, dtype=np.intp), np.zeros(L)  # each lane's attempt (0: the given start) and its μ₀
    # each problem's returned error and attempt so far, its lowest converged attempt (restarts + 1: none), its next
    # attempt; problems waiting for their next random start (a ring: each is in it at most once)
    best, best_a = np.zeros(B), np.zeros(B, dtype=np.intp)
    first_ok, next_a = np.full(B, restarts + 1, dtype=np.intp), np.zeros(B, dtype=np.intp)
    queue, queued = np.zeros(max(B, 1), dtype=np.intp), np.zeros(B, dtype=np.bool_)
    q_head = q_tail = 0
    nxt = 0
    while True:
        # lanes whose problem is done write its answer and take the next problem: its start by lm_jit's own
        # one-problem functions (the same operations), copied into the lane
        running = 0
        for lane in range(L):
            while True:
                b = job[lane]
                if b >= 0:
                    a = att[lane]
                    if a > first_ok[b]:  # a lower attempt of this problem converged: this one cannot be returned
                        job[lane] = -1
                    else:
                        k = it[lane]
                        el = e[lane]
                        e_win = es[k - win, lane] if win > 0 and k >= max(win, stall_min) else math.inf
                        why = stop_reason(s, pos[lane], ori[lane], el, lam[lane], flat[lane], k, e_win)
                        if why == RUNNING:
                            running += 1
                            break
                        done = why == CONVERGED
                        back = (not done) and el >= e0[lane]
                        ef = e0[lane] if back else el
                        # returned: the lowest converged attempt, else the lowest error (the lower attempt on a tie)
                        if a == 0 or done or (first_ok[b] > restarts and
                                              (ef < best[b] or (ef == best[b] and a < best_a[b]))):
                            best[b], best_a[b] = ef, a
                            for j in range(n):
                                q_out[b, j] = qs[j, lane] if back else q[j, lane]
                            pos_out[b] = pos0[lane] if back else pos[lane]
                            ori_out[b] = ori0[lane] if back else ori[lane]
                            history[b, 0] = e0[lane]  # then the returned pose's: the start's unless beaten
                            for r in range(1, k):
                                history[b, r] = min(es[r, lane], e0[lane])
                            for r in range(k, history.shape[1]):
                                history[b, r] = ef
                            iters[b] = k
                            reason[b] = why
                        if done:
                            first_ok[b] = a
                        elif first_ok[b] > restarts and next_a[b] <= restarts and not queued[b]:
                            queue[q_tail % B], queued[b] = b, True
                            q_tail += 1
                        job[lane] = -1
                # take work: a problem's next random start first (hard problems start early), else a new problem
                b, a = -1, 0
                while q_head < q_tail:
                    c = queue[q_head % B]
                    q_head += 1
                    queued[c] = False
                    if first_ok[c] <= restarts or next_a[c] > restarts:
                        continue  # converged, or its last start is out already
                    b, a = c, next_a[c]
                    next_a[c] += 1
                    if nxt == B and next_a[c] <= restarts:  # no new problems left: idle lanes take its next start
                        queue[q_tail % B], queued[c] = c, True  # at once, side by side (the answer depends only on
                        q_tail += 1  # which attempts converge, not on the order they run in)
                    restart_start(seed, index0 + b, a, q0[b], lo, hi, limited, qs1)
                    break
                if b < 0:
                    if nxt == B:
                        break
                    b = nxt
                    nxt += 1
                    next_a[b] = 1
                    for j in range(n):
                        qs1[j] = min(max(q0[b, j], lo[j]), hi[j])
                job[lane], att[lane] = b, a
                pl[lane] = pull if a == 0 else r_pull
                p, Rt = P[b], R[b]
                for i in range(3):
                    PL[i, lane] = p[i]
                    for j in range(3):
                        RL[i, j, lane] = Rt[i, j]
                for j in range(n):
                    qs[j, lane] = qs1[j]
                # the start's frames, φ, θ and the frames there: computed once for consecutive problems with the
                # same start (a batch from one pose), the same numbers either way
                fresh = not cached
                for j in range(n):
                    if fresh or qs1[j] != cq[j]:
                        fresh = True
                        break
                if fresh:
                    chain_forward(qs1, Hs, Ce, T1, Te0, loc1)
                    _phi(qs1, mid, half, limited, margin, phi1)
                    theta_of(phi1, mid, half, limited, lo, hi, q1, cphi1)  # cphi1: sin φ, then cos φ below
                    chain_forward(q1, Hs, Ce, T1, Te1, loc1)
                    for j in range(n):
                        cq[j] = qs1[j]
                        cphi1[j] = math.cos(phi1[j])
                    cached = True
                pos0[lane], ori0[lane], e0[lane] = chain_residual(Te0, p, Rt, orient, w, V1, D1)
                if pos0[lane] <= tol and ori0[lane] <= otol:  # as lm_jit._lm_one: the start is the answer
                    if a < first_ok[b]:
                        for j in range(n):
                            q_out[b, j] = qs1[j]
                        pos_out[b], ori_out[b], iters[b], reason[b] = pos0[lane], ori0[lane], 0, CONVERGED
                        for r in range(history.shape[1]):
                            history[b, r] = e0[lane]
                        first_ok[b] = a
                    job[lane] = -1
                    continue
                pos[lane], ori[lane], e[lane] = chain_residual(Te1, p, Rt, orient, w, V1, D1)
                for k in range(n):
                    q[k, lane] = q1[k]
                    phi[k, lane] = phi1[k]
                    cphi[k, lane] = cphi1[k]
                    for i in range(3):
                        for j in range(5):
                            T[k, i, j, lane] = T1[k, i, j]
                for i in range(3):
                    for j in range(4):
                        Te[i, j, lane] = Te1[i, j]
                for i in range(V1.shape[0]):
                    V[i, lane] = V1[i]
                es[0, lane] = e[lane]
                lam[lane], flat[lane], ps[lane], decay[lane], it[lane] = damping, 0, 1.0, 1.0, 0
        if running == 0:
            for b in range(B):  # the random starts run: up to the converged one, else all
                tries[b] = first_ok[b] if first_ok[b] <= restarts else next_a[b] - 1
            return
        for lane in range(L):
            live[lane] = job[lane] >= 0
        # one iteration of every lane. J_φ (n, 6, L): [a × (e − r), a] · h cos φ · W
        for k in range(n):
            hk = half[k] if limited[k] else 1.0
            for lane in range(L):
                sc = hk * cphi[k, lane] if limited[k] else 1.0
                axx, ayy, azz = T[k, 0, 4, lane], T[k, 1, 4, lane], T[k, 2, 4, lane]
                dx = Te[0, 3, lane] - T[k, 0, 3, lane]
                dy = Te[1, 3, lane] - T[k, 1, 3, lane]
                dz = Te[2, 3, lane] - T[k, 2, 3, lane]
                J[k, 0, lane] = (ayy * dz - azz * dy) * sc * w[0]
                J[k, 1, lane] = (azz * dx - axx * dz) * sc * w[1]
                J[k, 2, lane] = (axx * dy - ayy * dx) * sc * w[2]
            if orient:
                for lane in range(L):
                    sc = hk * cphi[k, lane] if limited[k] else 1.0
                    J[k, 3, lane] = T[k, 0, 4, lane] * sc * w[3]
                    J[k, 4, lane] = T[k, 1, 4, lane] * sc * w[4]
                    J[k, 5, lane] = T[k, 2, 4, lane] * sc * w[5]
        for lane in range(L):
            el = e[lane]
            mu[lane] = pl[lane] * decay[lane] * ps[lane] * min(1.0, el * el)
            jitter[lane] = 0.0
        normal_equations_lanes(J, V, lam, mu, limited, phi, jitter, kappa, A, rhs, trace)
        solve_spd_lanes(A, rhs, d, bad)
        retry = False
        for lane in range(L):
            if job[lane] >= 0 and bad[lane] != 0.0:
                # lm_jit's fallback: a relative jitter on the diagonal, then solve again
                jitter[lane] = 1e-12 * (trace[lane] / n + 1.0)
                retry = True
        if retry:
            normal_equations_lanes(J, V, lam, mu, limited, phi, jitter, kappa, A, rhs, trace)
            solve_spd_lanes(A, rhs, d, bad)
            for lane in range(L):
                if jitter[lane] != 0.0 and bad[lane] != 0.0:
                    for i in range(n):
                        d[i, lane] = 0.0
        if max_step > 0.0:
            for lane in range(L):
                big = 0.0
                for i in range(n):
                    big = max(big, abs(d[i, lane]))
                if big > max_step:
                    f = max_step / big
                    for i in range(n):
                        d[i, lane] *= f
        for i in range(n):
            for lane in range(L):
                phin[i, lane] = phi[i, lane] + d[i, lane]
        theta_lanes(phin, mid, half, limited, lo, hi, qn, sphi, live, poly, pw, cw)
        forward_lanes(qn, Hs, Ce, Tn, Ten, loc, sn, cn, live, poly)
        residual_lanes(Ten, PL, RL, orient, w, Vn, D, pos_n, ori_n, e_n, live)
        every = True
        for lane in range(L):
            b = job[lane]
            if b < 0:
                ok[lane] = False
                continue
            en, el = e_n[lane], e[lane]
            good, lam[lane], flat[lane], ps[lane] = accept_step(en, el, lam[lane], flat[lane], ps[lane], backoff)
            ok[lane] = good
            every = every and good
            if good:
                pos[lane], ori[lane], e[lane] = pos_n[lane], ori_n[lane], en
                el = en
            it[lane] += 1
            k = it[lane]
            es[k, lane] = el
            decay[lane] *= decay_rate
        # the trial becomes the current state (the buffers swap); a lane that refused its step copies its own
        # state back from the old buffers (refusals are the rarer case)
        T, Tn = Tn, T
        Te, Ten = Ten, Te
        V, Vn = Vn, V
        q, qn = qn, q
        if not every:
            for lane in range(L):
                if ok[lane] or job[lane] < 0:
                    continue
                for k in range(n):
                    q[k, lane] = qn[k, lane]
                    for i in range(3):
                        for j in range(5):
                            T[k, i, j, lane] = Tn[k, i, j, lane]
                for i in range(3):
                    for j in range(4):
                        Te[i, j, lane] = Ten[i, j, lane]
                for i in range(6):
                    V[i, lane] = Vn[i, lane]
        # φ and π − φ give the same θ: keep φ in [−π/2, π/2], where the pull toward 0 is the short way
        for i in range(n):
            if poly:
                if limited[i]:
                    for lane in range(L):
                        if ok[lane]:
                            phi[i, lane] = pw[i, lane]
                            cphi[i, lane] = cw[i, lane]
                else:
                    for lane in range(L):
                        if ok[lane]:
                            phi[i, lane] = phin[i, lane]
                            cphi[i, lane] = sincos(phin[i, lane])[1]
            elif limited[i]:
                for lane in range(L):
                    if ok[lane]:
                        phi[i, lane] = math.asin(sphi[i, lane])
                        cphi[i, lane] = math.cos(phi[i, lane])
            else:
                for lane in range(L):
                    if ok[lane]:
                        phi[i, lane] = phin[i, lane]
                        cphi[i, lane] = math.cos(phin[i, lane])


_KERNEL = kernel(_lm_lanes, slp=True, error_model="numpy",
                 calls=(forward_lanes, residual_lanes, theta_lanes, normal_equations_lanes, solve_spd_lanes,
                        chain_forward, chain_residual, _phi, theta_of, sincos, restart_start, stop_reason, accept_step))


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
