"""The default solver's own loop: Levenberg–Marquardt on limit-free coordinates, with a homotopy out of the start.

    θ_j = m_j + h_j sin φ_j          (m, h: mid-range and half-range of DOF j; θ_j = φ_j when unlimited)
    (J_φᵀ W² J_φ + λI + μ_k D) Δφ = J_φᵀ W² V − μ_k D φ,      J_φ = J · diag(h cos φ)
    μ_k = μ₀ · γᵏ · βʳ · min(1, ‖W V‖²),   D = diag(1 for limited DOFs, 0 for unlimited ones)
    (r: the problem's rejected steps so far, β = 0.1: a pull that points uphill must not block every step)

Every φ maps into the limits, so the optimiser never clamps and never stalls on a limit's corner. The μ term, a
Tikhonov pull toward mid-range (φ = 0), fades with the iteration count (γ = 0.95) and with the residual: the first
iterations solve an easier, better-conditioned problem that leaves the start's limits and singularities, the last
ones the exact task (μ → 0 as V → 0, so the pull never biases the solution). A step is kept when it lowers ‖W V‖
(λ ÷ 10), else λ × 10. All B problems iterate together; a finished problem leaves the working set at once.
See docs/derivations.md ("lm").
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from animkit import jit
from animkit.ik.constants import (
    GAIN_ABS,
    GAIN_REL,
    HOMOTOPY_DECAY,
    LAMBDA_DOWN,
    LAMBDA_MAX,
    LAMBDA_MIN,
    LAMBDA_UP,
    POLISH_DAMPING,
    PULL_BACKOFF,
    STALL_MIN_ITER,
    START_MARGIN,
)
from animkit.ik.lm_batch_jit import _KERNEL as _LANES_KERNEL
from animkit.ik.lm_batch_jit import lanes_fit
from animkit.ik.lm_jit import _KERNEL as _LM_KERNEL
from animkit.ik.lm_jit import LoopChain, LoopSettings, call_loop, lm_serial
from animkit.ik.lm_rules import better, history_row, limit_coordinates, relaxed_limits, stationary, wrap_into_limits
from animkit.ik.lm_strategy_jit import _PACKED as _PACKED_KERNEL
from animkit.ik.lm_strategy_jit import pack_serial
from animkit.ik.problem import ChainBuffers, ChainModel
from animkit.ik.solvers import LoopOutput, Options
from animkit.model.transforms import rotation_error

__all__ = ["run_lm", "lanes_with_restarts", "lm_single", "packed_params", "packed_pays", "serial_chain",
           "retry_through_relaxed_limits", "keep_better", "wrap_into_limits", "HOMOTOPY_PULL", "HOMOTOPY_DECAY",
           "START_MARGIN", "stiffness_from_options", "loop_chain", "loop_settings", "polish", "polishes"]

Array = NDArray[np.float64]

HOMOTOPY_PULL = Options.pull  # μ₀ (the default; a run's own is opts.pull)


class _Chain:
    """Arrays of a compiled chain laid out for the loop (its FK is the model's :meth:`ChainModel.forward`), serial or
    tree."""

    def __init__(self, model: ChainModel) -> None:
        self.model = model
        self.n = model.n
        self.prismatic = bool((~model.revolute).any())
        self.pris = ~model.revolute
        self.Hs = model.Hs  # (n, K, 20): K = 4 with a prismatic link (ChainModel.forward's layout)
        self.eff_C = model.eff_C
        E = len(model.effectors)
        self.E = E
        self.single = E == 1
        self.mask = model.eff_mask  # (E, n)
        self.rmask = (model.eff_mask & model.revolute[None]).astype(float)
        self.fmask = model.eff_mask.astype(float)
        lo, hi = model.lower, model.upper
        self.lo, self.hi = lo, hi
        self.limited, self.mid, self.half = limit_coordinates(lo, hi)
        lim = self.limited
        self.all_limited = bool(lim.all())
        self.limf = lim.astype(float)
        # the compiled loop's constants, contiguous once (lm_jit.lm_serial takes them as they are)
        self.kHs = self.Hs
        self.kCe = np.ascontiguousarray(model.eff_C[0])
        self.klim = np.ascontiguousarray(self.limited, dtype=float)  # 1.0 where limited (LoopChain.limited)
        self.klo, self.khi = np.ascontiguousarray(lo, dtype=float), np.ascontiguousarray(hi, dtype=float)
        self.kmid, self.khalf = np.ascontiguousarray(self.mid), np.ascontiguousarray(self.half)
        self.serial = E == 1 and not self.prismatic and bool(model.eff_mask[0].all()) and not model.cones and \
            all(p == k - 1 for k, p in enumerate(model.parents)) and int(model.eff_link[0]) == self.n - 1
        # (cones: the compiled loops know only per-DOF limits; NumPy's loop projects a coned chain each step)
        self.lanes = self.serial and lanes_fit(self.kHs, self.kCe)  # lm_batch_jit's lanes take batches

    def theta(self, phi: Array) -> Array:
        q = self.mid + self.half * np.sin(phi)
        if not self.all_limited:
            q = np.where(self.limited, q, phi)
        return np.minimum(np.maximum(q, self.lo), self.hi)

    def phi(self, q: Array, margin: float) -> Array:
        s = np.clip((q - self.mid) / self.half, -1.0 + 2.0 * margin, 1.0 - 2.0 * margin)
        p = np.arcsin(s)
        return p if self.all_limited else np.where(self.limited, p, q)

    def dtheta(self, phi: Array) -> Array:
        d = self.half * np.cos(phi)
        return d if self.all_limited else np.where(self.limited, d, 1.0)

    def buffers(self, B: int) -> ChainBuffers:
        """Work arrays for up to B problems, reused by every :meth:`forward` of one run."""
        return self.model.buffers(B)

    def jacobian_t(self, r: Array, a: Array, p: Array, orient: bool) -> Array:
        """Jᵀ (b, n, m) from r, a (n, b, 3): row k holds DOF k's column, for every effector (3 or 6 rows each)."""
        rows = 6 if orient else 3
        Jn = np.empty((self.n, r.shape[1], rows * self.E))
        a1, a2, a0 = a[:, :, 1], a[:, :, 2], a[:, :, 0]
        for j in range(self.E):
            d = p[None, :, j] - r
            d0, d1, d2 = d[:, :, 0], d[:, :, 1], d[:, :, 2]
            o = rows * j
            Jn[:, :, o] = a1 * d2 - a2 * d1
            Jn[:, :, o + 1] = a2 * d0 - a0 * d2
            Jn[:, :, o + 2] = a0 * d1 - a1 * d0
            if self.prismatic:
                Jn[:, :, o: o + 3] = np.where(self.pris[:, None, None], a, Jn[:, :, o: o + 3])
            if not self.single or not self.mask[0].all():
                Jn[:, :, o: o + 3] *= self.fmask[j][:, None, None]
            if orient:
                Jn[:, :, o + 3: o + 6] = a * self.rmask[j][:, None, None]
        return Jn.transpose(1, 0, 2)


def serial_chain(model: ChainModel) -> _Chain:
    """The loop's layout of ``model``, built once and kept on the model."""
    ch = model.memo.get("lm")
    if ch is None:
        ch = model.memo["lm"] = _Chain(model)
    assert isinstance(ch, _Chain)
    return ch


def _residual(Eff: Array, P: Array, R: Array | None) -> tuple[Array, Array, Array]:
    """V (b, m) unweighted, worst position and orientation error over effectors."""
    b = Eff.shape[0]
    Vp = P - Eff[:, :, :3, 3]
    pos = np.sqrt(np.einsum("bei,bei->be", Vp, Vp).max(1))
    if R is None:
        return Vp.reshape(b, -1), pos, np.zeros(b)
    Vo = rotation_error(R, Eff[:, :, :3, :3])
    ori = np.sqrt(np.einsum("bei,bei->be", Vo, Vo).max(1))
    return np.concatenate([Vp, Vo], axis=2).reshape(b, -1), pos, ori


_REASONS = ("converged", "stalled", "max_iterations")


def _run_compiled(ch: _Chain, q0: Array, P: Array, R: Array | None, opts: Options, first_success: bool
                  ) -> LoopOutput:
    """:func:`run_lm` on a serial revolute chain with one effector, by the compiled loop (:mod:`.lm_jit`)."""
    q, iters, why, pos, ori, history = lm_serial(loop_chain(ch, opts), loop_settings(opts), q0, P[:, 0],
                                                 None if R is None else R[:, 0], opts.row_weights,
                                                 first_success=first_success)
    return LoopOutput(q, iters, [_REASONS[k] for k in why.tolist()], pos, ori, history)


def _run_lanes(ch: _Chain, q0: Array, P: Array, R: Array | None, opts: Options, *, restarts: int = 0,
               seed: int = 0, restart_pull: float = 0.1, index0: int = 0, tries: NDArray[np.intp] | None = None,
               polish: int = 0) -> LoopOutput:
    """:func:`run_lm` on a batch, serial revolute chain with one effector, by the compiled lanes
    (:mod:`.lm_batch_jit`): the same iteration, bit for bit, as :func:`_run_compiled`; with ``restarts``, the
    lanes' random restarts (:func:`~animkit.ik.lm_batch_jit.lm_lanes`), then, with ``polish``, the answers left short
    finished in θ (:func:`~animkit.ik.lm_jit.polish_batch`, the lanes' loop untouched: lm_lanes' call with it)."""
    assert _LANES_KERNEL is not None
    q, iters, why, pos, ori, history = call_loop(
        _LANES_KERNEL, True, loop_chain(ch, opts), loop_settings(opts), q0, P[:, 0], None if R is None else R[:, 0],
        opts.row_weights, restart=(restarts, seed, restart_pull, index0), tries=tries, polish=polish)
    return LoopOutput(q, iters, [_REASONS[k] for k in why.tolist()], pos, ori, history)


def lanes_with_restarts(model: ChainModel, q0: Array, P: Array, R: Array | None, opts: Options, restarts: int,
                        seed: int, restart_pull: float, index0: int = 0
                        ) -> tuple[LoopOutput, NDArray[np.intp]] | None:
    """:func:`run_lm` with random restarts inside the lanes: a problem whose run ends unconverged runs again from
    :func:`~animkit.ik.lm_batch_jit.restart_start` in the same lane at once (the lanes stay full; no return to
    Python between rounds), up to ``restarts`` times, the answers left short then finished in θ (:func:`polish`'s
    compiled twin); returns the output and the random starts each problem ran.
    None where the lanes do not take this batch (not a serial revolute chain with one effector, fewer than
    :data:`LANES_MIN` problems, a deadline, or numba off or not yet worth loading)."""
    ch = serial_chain(model)
    B = len(q0)
    if not _lanes_take(ch, B, opts):
        return None
    tries = np.zeros(B, dtype=np.intp)
    return _run_lanes(ch, q0, P, R, opts, restarts=restarts, seed=seed, restart_pull=restart_pull, index0=index0,
                      tries=tries, polish=opts.polish if polishes(model, opts) else 0), tries


# The compiled loop runs an iteration in about 1 µs, NumPy's in 30–70 µs; numba's start-up and loading the cached
# kernels cost 0.5–1 s a process: below ~20k iterations (B problems × max_iter, an upper bound) NumPy finishes first.
LM_JIT_MIN = 20_000
LANES_MIN = 2  # from this many problems a batch runs in the compiled lanes (lm_batch_jit), one at a time below: on
# the Panda's 500-target benchmark (lm's retries run batches of 2–30 problems) 2 beat 3–12 (CPU time, 29.7 against
# 31.3 µs a solve); a step of the lanes costs little more for 8 problems than for 1 (the vector work is shared, only
# the sines and cosines are per problem)


def _lanes_take(ch: _Chain, B: int, opts: Options) -> bool:
    """Whether the compiled lanes run a batch of B problems: a serial revolute chain with one effector that fits
    them, at least :data:`LANES_MIN` problems, no deadline, and the kernel loaded or worth loading."""
    return ch.lanes and B >= LANES_MIN and opts.deadline is None and \
        jit.pays(_LANES_KERNEL, B * opts.max_iter, LM_JIT_MIN)


def _compiled_pays(B: int, opts: Options) -> bool:
    return jit.pays(_LM_KERNEL, B * opts.max_iter, LM_JIT_MIN)


def stiffness_from_options(opts: Options, n: int) -> Array:
    """The stiffness damping κ (n,) for the compiled loop (zeros when none)."""
    return np.zeros(n) if opts.stiffness is None else np.ascontiguousarray(opts.stiffness, dtype=float)


def loop_chain(ch: _Chain, opts: Options) -> LoopChain:
    """The compiled loops' record of the chain (lm_serial, lm_lanes, pack_serial): link blocks Hs, effector offset
    Ce, limits lo and hi, mid-range m, half-range h, limited, stiffness κ, base origin and reach. The base origin is
    the first link's constant translation (a revolute link turns about its own origin)."""
    m = ch.model
    limited: Array = ch.klim  # 0/1 floats: the kernels read it as a flag
    return LoopChain(ch.kHs, ch.kCe, ch.klo, ch.khi, ch.kmid, ch.khalf, limited, stiffness_from_options(opts, ch.n),
                     np.ascontiguousarray(m.H0[int(m.base_link[0]), :3, 3], dtype=float), float(m.reach[0]))


def loop_settings(opts: Options) -> LoopSettings:
    """The compiled loops' settings for ``opts`` (tolerances, caps, damping, the stall test, μ₀) with lm's own
    constants (stall_min, γ, β, the start's margin)."""
    return LoopSettings(float(opts.tol), float(opts.orientation_tol), int(opts.patience), int(opts.max_iter),
                        float(opts.damping), -1.0 if opts.max_step is None else float(opts.max_step),
                        int(opts.stall_window), float(opts.stall_ratio), STALL_MIN_ITER, float(opts.pull),
                        HOMOTOPY_DECAY, PULL_BACKOFF, START_MARGIN)


def packed_params(model: ChainModel, opts: Options, orient: bool, relax: bool) -> Array | None:
    """The one parameter array of :func:`~animkit.ik.lm_jit.lm_packed` (one problem, the compiled loop) for
    ``model`` and ``opts``; None where that path does not apply (not a serial revolute chain with one effector,
    priority, a pole, a deadline)."""
    ch = serial_chain(model)
    if not ch.serial or opts.priority or opts.pole is not None or opts.deadline is not None:
        return None
    return pack_serial(loop_chain(ch, opts), loop_settings(opts), opts.row_weights, orient=orient, relax=relax,
                       polish=opts.polish if polishes(model, opts) else 0)


def packed_pays(opts: Options, spent: int) -> bool:
    """Whether one problem runs compiled now: the packed loop (or the one-problem loop) is loaded in this process,
    or ``spent`` (the iterations a reused problem has asked for so far, max_iter a solve) has reached
    :data:`LM_JIT_MIN` — loading it then pays for itself over the solves still to come."""
    return jit.pays(_PACKED_KERNEL, spent, LM_JIT_MIN) or _compiled_pays(1, opts)


def lm_single(model: ChainModel, opts: Options) -> bool:
    """Whether one problem on ``model`` runs NumPy's loop (:func:`_run_batched`, with the stall test): restarts
    then run one at a time. The compiled loop (:mod:`.lm_jit`) applies the stall test to every problem of a batch."""
    return serial_chain(model).serial and not opts.priority and opts.pole is None and not _compiled_pays(1, opts)


def run_lm(model: ChainModel, q0: Array, P: Array, R: Array | None, opts: Options, *,
           first_success: bool = False) -> LoopOutput:
    """Solve B problems: starts q0 (B, n), targets P (B, E, 3) and R (B, E, 3, 3) or None.

    Kept steps only lower ‖W V‖, so the last pose is the best one, except against the start itself (it is moved
    ``START_MARGIN`` inside its limits first): a problem that does not converge returns the start when that was
    better. ``errors`` holds the residual of the pose that would be returned, before the first step and after
    every iteration. With ``first_success`` the loop stops as soon as one problem has converged (restarts).
    """
    ch = serial_chain(model)
    B, n = q0.shape
    if not first_success and _lanes_take(ch, B, opts):
        return _run_lanes(ch, q0, P, R, opts)
    if ch.serial and _compiled_pays(B, opts):
        return _run_compiled(ch, q0, P, R, opts, first_success)
    return _run_batched(ch, q0, P, R, opts, first_success)


def _relaxed(model: ChainModel) -> ChainModel | None:
    """``model`` with the limits of its revolute DOFs lifted (angles on the whole circle); None if none had any.
    Built once and kept on the model."""
    if "relaxed" in model.memo:
        return model.memo["relaxed"]  # type: ignore[return-value]
    lower, upper, lifted = relaxed_limits(model.lower, model.upper, model.revolute)
    free = replace(model, lower=lower, upper=upper) if lifted else None
    model.memo["relaxed"] = free
    return free


def retry_through_relaxed_limits(model: ChainModel, starts: Array, P: Array, R: Array | None, opts: Options,
                            out: LoopOutput, fail: NDArray[np.intp]) -> LoopOutput:
    """The second strategy for the problems ``fail`` (indices into ``out``, the first run), from the same starts:

        1. solve with the revolute limits lifted (θ on the whole circle; prismatic limits kept),
        2. wrap that answer into the limits (θ ≡ θ + 2π; an angle in the gap goes to the nearer limit),
        3. solve with the limits from there.

    The limit-free coordinates θ = m + h sin φ never let an iterate through the gap of a joint's range, and a run
    can end pressed on a limit (a true local minimum of the box-constrained problem); IK needs a final pose inside
    the limits, not a path that stays inside, and step 1 is free to take the short way round. The answer of step 3
    replaces the first run's when it converged or ends closer. Iterations add up; ``errors`` holds the first run's
    best until step 3 beats it (the poses of step 1 may lie outside the limits: none of them is ever returned).
    """
    free = _relaxed(model)
    if free is None:
        return out
    Pf, Rf = P[fail], None if R is None else R[fail]
    # the run through the relaxed limits gets every iteration (the stall test would end it before it leaves the
    # start's basin); the run back inside them keeps the stall test (a hopeless one stops early: on 500 targets
    # Panda/UR5/arm 6D, 28 % fewer iterations on failing targets for one target fewer converged on Panda and arm)
    u = run_lm(free, starts[fail], Pf, Rf, replace(opts, stall_window=0))
    start = wrap_into_limits(u.q, model.lower, model.upper, model.revolute)
    c = run_lm(model, start, Pf, Rf, opts)
    return keep_better(out, fail, c, u.iterations)


def keep_better(out: LoopOutput, fail: NDArray[np.intp], c: LoopOutput, before: NDArray[np.intp]) -> LoopOutput:
    """``out`` with the answers of a later run ``c`` (on the problems ``fail``) where that run converged or ends
    closer (e_c < e_out). ``before`` (len(fail),) counts the iterations spent between the two runs (an earlier
    stage); iterations add up, and ``errors`` holds ``out``'s best until ``c``'s answer beats it. ``out`` is used
    up: its ``errors`` grow in place where their buffer has spare rows (see :func:`_grown`)."""
    best_a = out.errors[-1, fail]
    take = better(np.array(c.reason) == "converged", c.errors[-1], best_a)
    iters = out.iterations.copy()
    iters[fail] += before + c.iterations
    ea = out.errors
    errors = _grown(ea, int(iters.max()) + 1)
    won = fail[take]
    if won.size:  # rows before c's run hold the first run's best (errors[-1] above); c's by history_row
        Hc, it_c = c.errors[:, take], c.iterations[take]
        k0 = out.iterations[won] + before[take] + 1  # the row of c's first iteration
        k = np.arange(len(errors))[:, None]
        hc = np.take_along_axis(Hc, np.clip(1 + k - k0, 0, len(Hc) - 1), 0)
        errors[:, won] = history_row(errors[:, won], k, k0, it_c, hc, best_a[take], Hc[it_c, np.arange(won.size)])
    q, pos, ori = out.q.copy(), out.position_error.copy(), out.orientation_error.copy()
    q[won], pos[won], ori[won] = c.q[take], c.position_error[take], c.orientation_error[take]
    reason = list(out.reason)
    for i, why in zip(won.tolist(), np.array(c.reason)[take].tolist(), strict=True):
        reason[i] = why
    return LoopOutput(q, iters, reason, pos, ori, errors)


def _grown(ea: Array, rows: int) -> Array:
    """ea (r, B) extended to ``rows`` ≥ r rows, each column's last value repeated: in the spare rows of the buffer
    ``ea`` is a leading view of, where it has enough (no copy of ea's r rows: a batch's retry stages each add a few
    hundred rows of B columns), otherwise in a new buffer with as many spare rows."""
    r, B = ea.shape
    base = ea
    while isinstance(base.base, np.ndarray):
        base = base.base
    if base is not ea and base.ndim == 2 and base.shape[1] == B and base.shape[0] >= rows and \
            base.strides == ea.strides and base.ctypes.data == ea.ctypes.data:
        out = base[:rows]
    else:
        out = np.empty((2 * rows, B))[:rows]
        out[:r] = ea
    out[r:] = ea[-1]
    return out


@dataclass
class _Work:
    """The working set of :func:`_run_batched`: the problems still running (``ids`` into the batch) and their state:
    φ, θ, DOF origins r and axes a (n, b, 3), effector frames, weighted residual, errors, λ, steps without gain, the
    pull's scale, and their targets."""

    ids: NDArray[np.intp]
    phi: Array
    q: Array
    r: Array
    a: Array
    Eff: Array
    Vw: Array
    pos: Array
    ori: Array
    e: Array
    e0: Array
    lam: Array
    flat: NDArray[np.intp]
    ps: Array
    P: Array
    R: Array | None

    def keep(self, sel: NDArray[np.bool_], P: Array, R: Array | None) -> None:
        """Drop the problems where ``sel`` is False (they left the working set)."""
        for name in ("ids", "phi", "q", "Eff", "Vw", "pos", "ori", "e", "e0", "lam", "flat", "ps"):
            setattr(self, name, getattr(self, name)[sel])
        self.r, self.a = self.r[:, sel], self.a[:, sel]
        self.P, self.R = P[self.ids], None if R is None else R[self.ids]


def _errors(ch: _Chain, q: Array, P: Array, R: Array | None, opts: Options, buf: ChainBuffers
            ) -> tuple[Array, Array, Array, Array, Array, Array, Array]:
    """r, a, effector frames, W V, ‖p − e‖, ‖ω‖ and ‖W V‖ at θ = q (b, n)."""
    _, r, a, Eff = ch.model.forward(q, buf)
    V, pos, ori = _residual(Eff, P, R)
    Vw = V * opts.row_weights
    return r, a, Eff, Vw, pos, ori, np.sqrt(np.einsum("bi,bi->b", Vw, Vw))


def _first_state(ch: _Chain, q_start: Array, P: Array, R: Array | None, opts: Options,
                 buf: ChainBuffers) -> tuple[_Work, Array, Array, Array]:
    """The working set at the first iterate (θ moved START_MARGIN inside the limits), and the start's own errors
    ‖p − e‖, ‖ω‖, ‖W V‖: a start that meets its target keeps its own state (it is the answer, 0 iterations)."""
    B = len(q_start)
    pos0, ori0, err0 = _errors(ch, q_start, P, R, opts, buf)[4:]
    phi = ch.phi(q_start, START_MARGIN)
    q = ch.theta(phi)
    r, a, Eff, Vw, pos, ori, e = _errors(ch, q, P, R, opts, buf)
    there = (pos0 <= opts.tol) & (ori0 <= opts.orientation_tol)
    if there.any():
        q = np.where(there[:, None], q_start, q)
        pos, ori, e = np.where(there, pos0, pos), np.where(there, ori0, ori), np.where(there, err0, e)
    w = _Work(np.arange(B), phi, q, r, a, Eff, Vw, pos, ori, e, err0, np.full(B, opts.damping),
              np.zeros(B, dtype=np.intp), np.ones(B), P, R)
    return w, pos0, ori0, err0


def _step(ch: _Chain, w: _Work, opts: Options, it: int) -> Array:
    """Δφ (b, n) from (J_φᵀ W² J_φ + λ(I + K) + μ_k D) Δφ = J_φᵀ W² V − μ_k D φ (a relative jitter on the diagonal
    where that is singular), each row scaled so that |Δφ_j| ≤ max_step."""
    n = ch.n
    Jt = ch.jacobian_t(w.r, w.a, w.Eff[:, :, :3, 3], w.R is not None)
    Jt *= ch.dtheta(w.phi)[:, :, None] * opts.row_weights
    A = Jt @ np.swapaxes(Jt, 1, 2)
    g = (Jt @ w.Vw[:, :, None])[:, :, 0]
    mu = (opts.pull * HOMOTOPY_DECAY ** it) * (w.ps * np.minimum(1.0, w.e * w.e))[:, None] * ch.limf
    eye = np.eye(n)
    A += (w.lam[:, None] * (1.0 if opts.stiffness is None else 1.0 + opts.stiffness) + mu)[:, :, None] * eye
    rhs = g - mu * w.phi
    try:
        d = np.linalg.solve(A, rhs[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        A += (1e-12 * (np.trace(A, axis1=1, axis2=2) / n + 1.0))[:, None, None] * eye
        d = np.linalg.solve(A, rhs[:, :, None])[:, :, 0]
    if opts.max_step is not None:
        big = np.abs(d).max(1)
        d *= np.minimum(1.0, opts.max_step / np.maximum(big, 1e-300))[:, None]
    return d


def _try_step(ch: _Chain, w: _Work, d: Array, opts: Options, buf: ChainBuffers) -> None:
    """Take φ + Δφ where it lowers ‖W V‖ (λ ÷ 10), else keep φ (λ × 10, the pull's scale × β): lm_jit.accept_step's
    rule on the whole working set."""
    phi_n = w.phi + d
    q_n = ch.theta(phi_n)
    rn, an, En, Vnw, pos_n, ori_n, e_n = _errors(ch, q_n, w.P, w.R, opts, buf)
    ok = e_n < w.e  # NaN compares False: a step that produced NaN is rejected
    w.flat = np.where(ok & (e_n < w.e * (1.0 - GAIN_REL) - GAIN_ABS), 0, w.flat + 1)
    w.lam = np.where(ok, np.maximum(w.lam * LAMBDA_DOWN, LAMBDA_MIN), w.lam * LAMBDA_UP)
    w.ps = np.where(ok, w.ps, w.ps * PULL_BACKOFF)
    if not ok.any():
        return
    o1, on, o3 = ok[:, None], ok[None, :, None], ok[:, None, None, None]
    w.phi, w.q, w.Vw = np.where(o1, phi_n, w.phi), np.where(o1, q_n, w.q), np.where(o1, Vnw, w.Vw)
    w.r, w.a, w.Eff = np.where(on, rn, w.r), np.where(on, an, w.a), np.where(o3, En, w.Eff)
    w.pos, w.ori, w.e = np.where(ok, pos_n, w.pos), np.where(ok, ori_n, w.ori), np.where(ok, e_n, w.e)
    # φ and π − φ give the same θ: keep φ in [−π/2, π/2], where the pull toward 0 is the short way
    w.phi = np.arcsin(np.sin(w.phi)) if ch.all_limited else np.where(ch.limited, np.arcsin(np.sin(w.phi)), w.phi)


def _run_batched(ch: _Chain, q0: Array, P: Array, R: Array | None, opts: Options, first_success: bool
                 ) -> LoopOutput:
    """NumPy's loop over B problems at once: the reference of the compiled kernels (:mod:`.lm_jit`, whose tests hold
    them to it) and the path of trees, several effectors, prismatic DOFs, or no numba. A problem leaves the working
    set when it converged or stalled (lm_jit.stop_reason's rule); with ``first_success`` all stop at the first
    converged one."""
    B = len(q0)
    buf = ch.buffers(B)
    q_start = np.minimum(np.maximum(q0, ch.lo), ch.hi)
    w, pos0, ori0, err0 = _first_state(ch, q_start, P, R, opts, buf)
    q_out, pos_out, ori_out = q_start.copy(), pos0.copy(), ori0.copy()
    iters = np.zeros(B, dtype=np.intp)
    reason = ["max_iterations"] * B
    history, last = [err0.copy()], err0.copy()
    win, it = opts.stall_window, 0
    es = np.empty((opts.max_iter + 1, B)) if win > 0 else None  # ‖WV‖ after each iteration (the stall test)
    if es is not None:
        es[0] = w.e
    while True:
        done = (w.pos <= opts.tol) & (w.ori <= opts.orientation_tol)
        stalled = (w.lam > LAMBDA_MAX) | (w.flat >= opts.patience)
        if es is not None and it >= max(win, STALL_MIN_ITER):
            stalled |= w.e > opts.stall_ratio * es[it - win, w.ids]
        leave = done | stalled
        stop = it == opts.max_iter or opts.deadline is not None and time.perf_counter() > opts.deadline or \
            first_success and bool(done.any())
        if stop or leave.any():
            leave |= stop
            sel = w.ids[leave]
            back = ~done[leave] & (w.e[leave] >= w.e0[leave])  # not converged and no better than the start
            q_out[sel] = np.where(back[:, None], q_start[sel], w.q[leave])
            pos_out[sel] = np.where(back, pos0[sel], w.pos[leave])
            ori_out[sel] = np.where(back, ori0[sel], w.ori[leave])
            history[-1][sel] = np.where(back, w.e0[leave], w.e[leave])
            for i, k in zip(sel.tolist(), np.where(done[leave], 0, np.where(stalled[leave], 1, 2)).tolist(),
                            strict=True):
                reason[i] = _REASONS[k]
            if stop or leave.all():
                break
            w.keep(~leave, P, R)
        iters[w.ids] += 1
        _try_step(ch, w, _step(ch, w, opts, it), opts, buf)
        last[w.ids] = np.minimum(w.e, w.e0)
        history.append(last.copy())
        it += 1
        if es is not None:
            es[it, w.ids] = w.e
    return LoopOutput(q_out, iters, reason, pos_out, ori_out, np.array(history))


def polishes(model: ChainModel, opts: Options) -> bool:
    """Whether lm's answers on ``model`` are finished by :func:`polish`: ``opts.polish`` > 0, lm's own loop (no
    priority, pole or cone) and a limited DOF (where θ = m + h sin φ and the pull toward mid-range bend a run)."""
    return opts.polish > 0 and not opts.priority and opts.pole is None and not model.cones and \
        bool(serial_chain(model).limited.any())


def polish(model: ChainModel, P: Array, R: Array | None, opts: Options, out: LoopOutput, *, stage: bool = False
           ) -> LoopOutput:
    """The strategy's answers that did not converge, finished by projected Levenberg–Marquardt in θ:

        (J_Fᵀ W² J_F + λ(I + K)) Δθ = J_Fᵀ W² V,   θ ← clip(θ + Δθ, l, u)   (kept where ‖W V‖ falls: λ ÷ 10, else × 10)

    J_F: J with the columns of the DOFs held at a limit zeroed (a DOF on a limit whose descent direction points
    outward: :func:`~animkit.ik.lm_rules.stationary`'s active set). It stops at convergence, at a first-order optimum
    (stationary's test), when λ passes LAMBDA_MAX or ``patience`` steps gain nothing, or after ``opts.polish`` steps,
    never past ``max_iter`` counted iterations. lm's coordinates flatten the error at a limit (∂θ/∂φ = 0) and the
    pull toward mid-range holds a DOF of short range whose target lies beyond reach, so the stall test stops a run
    short of an optimum on a limit (the limit-bound two-hinge arm: 3.8 mm short, the elbow mid-range); in θ the held
    DOF drops out and the rest is Gauss–Newton's. The NumPy reference of the compiled polish
    (:func:`animkit.ik.lm_jit.polish_one`, run by the packed strategy and the lanes with restarts); kept by
    :func:`keep_better`. ``stage``: the strategy's last stage (:func:`~animkit.ik.strategy.settle`), a run of its
    own as each retry is: ``opts.polish`` steps for every answer not stopped at its run's cap (after the retries
    have spent max_iter, an answer held on a limit is still finished)."""
    if not polishes(model, opts):
        return out
    idx = np.flatnonzero([why != "converged" for why in out.reason])
    budget = np.minimum(opts.polish, opts.max_iter - out.iterations[idx]) if not stage else \
        np.array([0 if out.reason[i] == "max_iterations" else opts.polish for i in idx.tolist()], dtype=np.intp)
    idx, budget = idx[budget > 0], budget[budget > 0]
    if idx.size == 0:
        return out
    c = _polish_rows(serial_chain(model), out.q[idx], P[idx], None if R is None else R[idx], opts, budget,
                     [out.reason[i] for i in idx.tolist()])
    return keep_better(out, idx, c, np.zeros(idx.size, dtype=np.intp))


def _polish_rows(ch: _Chain, q: Array, P: Array, R: Array | None, opts: Options, budget: NDArray[np.intp],
                 reasons: list[str]) -> LoopOutput:
    """:func:`polish`'s loop on b problems from q (b, n), each at most ``budget`` steps (its reason kept unless it
    converges)."""
    b, n = q.shape
    buf = ch.buffers(b)
    q = q.copy()
    r, a, Eff, Vw, pos, ori, e = _errors(ch, q, P, R, opts, buf)
    lam, flat, steps = np.full(b, POLISH_DAMPING), np.zeros(b, dtype=np.intp), np.zeros(b, dtype=np.intp)
    damp = 1.0 if opts.stiffness is None else 1.0 + opts.stiffness
    live = np.ones(b, dtype=bool)
    history = [e.copy()]
    while True:
        live &= ((pos > opts.tol) | (ori > opts.orientation_tol)) & (steps < budget)
        s = np.flatnonzero(live)
        if s.size == 0:
            break
        Jt = ch.jacobian_t(r[:, s], a[:, s], Eff[s][:, :, :3, 3], R is not None) * opts.row_weights  # (s, n, m)
        g = (Jt @ Vw[s][:, :, None])[:, :, 0]
        free = np.empty((s.size, n), dtype=bool)
        optimal = np.asarray(stationary(g, np.einsum("bkm,bkm->bk", Jt, Jt), q[s], ch.lo, ch.hi, e[s], free))
        live[s[optimal]] = False
        go = ~optimal
        s, Jt, free = s[go], Jt[go] * free[go][:, :, None], free[go]
        if s.size == 0:
            break
        A = Jt @ np.swapaxes(Jt, 1, 2) + (lam[s][:, None] * damp)[:, :, None] * np.eye(n)
        d = np.linalg.solve(A, Jt @ Vw[s][:, :, None])[:, :, 0]
        if opts.max_step is not None:
            d *= np.minimum(1.0, opts.max_step / np.maximum(np.abs(d).max(1), 1e-300))[:, None]
        qn = np.minimum(np.maximum(q[s] + d, ch.lo), ch.hi)
        rn, an, En, Vn, pn, on, en = _errors(ch, qn, P[s], None if R is None else R[s], opts, buf)
        ok = en < e[s]  # lm_jit.accept_step's rule
        flat[s] = np.where(ok & (en < e[s] * (1.0 - GAIN_REL) - GAIN_ABS), 0, flat[s] + 1)
        lam[s] = np.where(ok, np.maximum(lam[s] * LAMBDA_DOWN, LAMBDA_MIN), lam[s] * LAMBDA_UP)
        k = s[ok]
        q[k], r[:, k], a[:, k], Eff[k], Vw[k] = qn[ok], rn[:, ok], an[:, ok], En[ok], Vn[ok]
        pos[k], ori[k], e[k] = pn[ok], on[ok], en[ok]
        steps[s] += 1
        history.append(e.copy())
        live[s] &= (lam[s] <= LAMBDA_MAX) & (flat[s] < opts.patience)
    done = (pos <= opts.tol) & (ori <= opts.orientation_tol)
    reason = ["converged" if c else why for c, why in zip(done.tolist(), reasons, strict=True)]
    return LoopOutput(q, steps, reason, pos, ori, np.array(history))

