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

import math
import time
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import jit
from ..transforms import rotation_error
from .constants import (
    GAIN_ABS,
    GAIN_REL,
    HOMOTOPY_DECAY,
    LAMBDA_DOWN,
    LAMBDA_MAX,
    LAMBDA_MIN,
    LAMBDA_UP,
    PULL_BACKOFF,
    STALL_MIN_ITER,
    START_MARGIN,
)
from .lm_batch_jit import _KERNEL as _LANES_KERNEL
from .lm_batch_jit import lanes_fit, lm_lanes
from .lm_jit import _KERNEL as _LM_KERNEL
from .lm_jit import _PACKED as _PACKED_KERNEL
from .lm_jit import lm_serial, pack_serial
from .problem import ChainModel
from .solvers import LoopOutput, Options

__all__ = ["run_lm", "lanes_with_restarts", "lm_single", "packed_params", "packed_pays", "serial_chain",
           "retry_through_relaxed_limits", "keep_better", "wrap_into_limits", "HOMOTOPY_PULL", "HOMOTOPY_DECAY",
           "START_MARGIN", "stiffness_from_options", "loop_arrays", "loop_options"]

Array = NDArray[np.float64]

HOMOTOPY_PULL = Options.pull  # μ₀ (the default; a run's own is opts.pull)


class _Chain:
    """Arrays of a compiled chain laid out for the loop: (b, n, 4, 4) link frames, serial or tree."""

    def __init__(self, model: ChainModel) -> None:
        self.model = model
        self.n = model.n
        self.parent = [int(p) for p in model.parent]
        self.H0, self.H1, self.H2, self.H3 = model.H0, model.H1, model.H2, model.H3
        self.prismatic = bool((~model.revolute).any())
        self.pris = ~model.revolute
        self.axis = model.axis
        self.K = 4 if self.prismatic else 3
        Hs = np.zeros((self.n, self.K, 4, 5))
        Hs[:, 0, :, :4], Hs[:, 1, :, :4], Hs[:, 2, :, :4] = model.H0, model.H1, model.H2
        if self.prismatic:
            Hs[:, 3, :, :4] = model.H3
        Hs[:, 0, :3, 4] = np.einsum("kij,kj->ki", model.H0[:, :3, :3], model.axis)  # R_C a
        self.Hs = Hs.reshape(self.n, self.K, 20)
        self.eff_Cn = model.eff_C[:, None]
        self.eff_link = model.eff_link
        self.eff_C = model.eff_C
        E = len(model.effectors)
        self.E = E
        self.single = E == 1
        self.mask = model.eff_mask  # (E, n)
        self.rmask = (model.eff_mask & model.revolute[None]).astype(float)
        self.fmask = model.eff_mask.astype(float)
        lo, hi = model.lower, model.upper
        self.lo, self.hi = lo, hi
        self.limited = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
        lim = self.limited
        self.mid = np.where(lim, 0.5 * (np.where(lim, lo, 0.0) + np.where(lim, hi, 0.0)), 0.0)
        self.half = np.where(lim, 0.5 * (np.where(lim, hi, 1.0) - np.where(lim, lo, 0.0)), 1.0)
        self.all_limited = bool(lim.all())
        self.limf = lim.astype(float)
        # the B = 1 fast path (:func:`_run_one`): a serial chain of revolute DOFs with one effector
        # the compiled loop's constants, contiguous once (lm_jit.lm_serial takes them as they are)
        self.kHs = np.ascontiguousarray(self.Hs.reshape(self.n, self.K, 20))
        self.kCe = np.ascontiguousarray(model.eff_C[0])
        self.klim = np.ascontiguousarray(self.limited, dtype=np.bool_)
        self.klo, self.khi = np.ascontiguousarray(lo, dtype=float), np.ascontiguousarray(hi, dtype=float)
        self.kmid, self.khalf = np.ascontiguousarray(self.mid), np.ascontiguousarray(self.half)
        self.serial = E == 1 and not self.prismatic and bool(model.eff_mask[0].all()) and \
            all(p == k - 1 for k, p in enumerate(self.parent)) and int(model.eff_link[0]) == self.n - 1
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

    def buffers(self, B: int) -> tuple[Array, Array, Array]:
        """Work arrays for up to B problems, reused by every :meth:`forward` of one run (fresh large arrays on
        every call cost page faults that tripled its time at B = 500)."""
        basis = np.empty((self.n, B, self.K))
        basis[:, :, 0] = 1.0
        return basis, np.empty((self.n, B, 20)), np.empty((self.n, B, 4, 5))

    def forward(self, q: Array, buf: tuple[Array, Array, Array]) -> tuple[Array, Array, Array]:
        """DOF origins r and axes a (n, b, 3), effector frames (b, E, 4, 4).

        Link-major 4×5 frames [T_k | a_k]: C_k E_k(θ) with the constant column R_C·axis appended (E_k keeps its own
        axis), for all links as one product [1, sin θ, 1 − cos θ(, θ)] · H; then T_k = T_parent · [C_k E_k | R_C a].
        """
        b = q.shape[0]
        qt = q.T
        basis = buf[0][:, :b]
        np.sin(qt, out=basis[:, :, 1])
        np.cos(qt, out=basis[:, :, 2])
        np.subtract(1.0, basis[:, :, 2], out=basis[:, :, 2])
        if self.prismatic:
            basis[:, :, 3] = qt
        mm = np.matmul
        loc = mm(basis, self.Hs, out=buf[1][:, :b]).reshape(self.n, b, 4, 5)
        T = buf[2][:, :b]
        for k, pk in enumerate(self.parent):
            if pk < 0:
                T[k] = loc[k]
            else:
                mm(T[pk, :, :, :4], loc[k], out=T[k])
        a = T[:, :, :3, 4].copy()
        r = T[:, :, :3, 3].copy()
        if self.prismatic:
            r = r - a * (qt * self.pris[:, None])[:, :, None]
        Eff = mm(T[self.eff_link, :, :, :4], self.eff_Cn).transpose(1, 0, 2, 3)
        return r, a, Eff

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


# cross(a, d) = (a ⊗ d).ravel() · _EPS for a, d in R³ (a ⊗ d flattened row-major: index 3i + j holds a_i d_j)
_EPS = np.zeros((9, 3))
_EPS[5, 0], _EPS[7, 0], _EPS[6, 1], _EPS[2, 1], _EPS[1, 2], _EPS[3, 2] = 1.0, -1.0, 1.0, -1.0, 1.0, -1.0


def _rotvec_py(rt: list[list[float]], t: list[list[float]], Rt: Array, Rc: Array) -> tuple[float, float, float]:
    """log(R_t R_cᵀ)^∨ in Python floats (B = 1): rt = R_t, t = the effector frame, both as nested lists."""
    r0, r1, r2 = rt
    c0, c1, c2 = t[0], t[1], t[2]
    d00 = r0[0] * c0[0] + r0[1] * c0[1] + r0[2] * c0[2]
    d11 = r1[0] * c1[0] + r1[1] * c1[1] + r1[2] * c1[2]
    d22 = r2[0] * c2[0] + r2[1] * c2[1] + r2[2] * c2[2]
    d21 = r2[0] * c1[0] + r2[1] * c1[1] + r2[2] * c1[2]
    d12 = r1[0] * c2[0] + r1[1] * c2[1] + r1[2] * c2[2]
    d02 = r0[0] * c2[0] + r0[1] * c2[1] + r0[2] * c2[2]
    d20 = r2[0] * c0[0] + r2[1] * c0[1] + r2[2] * c0[2]
    d10 = r1[0] * c0[0] + r1[1] * c0[1] + r1[2] * c0[2]
    d01 = r0[0] * c1[0] + r0[1] * c1[1] + r0[2] * c1[2]
    vx, vy, vz = 0.5 * (d21 - d12), 0.5 * (d02 - d20), 0.5 * (d10 - d01)
    cos = 0.5 * (d00 + d11 + d22 - 1.0)
    sin = math.sqrt(vx * vx + vy * vy + vz * vz)
    if cos < 0.0 and sin < 1e-6:  # near π: the axis from the symmetric part
        w = rotation_error(Rt, Rc).tolist()
        return w[0], w[1], w[2]
    if sin <= 1e-12:
        return vx, vy, vz
    f = math.atan2(sin, min(cos, 1.0)) / sin
    return vx * f, vy * f, vz * f


def _run_one(ch: _Chain, q0: Array, P: Array, R: Array | None, opts: Options) -> LoopOutput:
    """:func:`run_lm` for one problem on a serial revolute chain with one effector, with few NumPy calls.

    The same iteration as the batched loop (same equations, same acceptance and stopping rules), laid out for
    B = 1, where every NumPy call costs ~1 µs whatever its size: the frames live in two preallocated (n, 4, 5)
    buffers (the current pose and the trial step, swapped on acceptance), the Jacobian comes from one outer
    product and one product with the Levi-Civita matrix, and the residual, its norms and the step control are
    Python floats.
    """
    n = ch.n
    w = opts.row_weights
    unit_w = bool(np.all(w == 1.0))
    wl = w.tolist()
    orient = R is not None
    tol, otol, patience = opts.tol, opts.orientation_tol, opts.patience
    max_step = opts.max_step
    deadline = opts.deadline
    px, py, pz = P[0, 0].tolist()
    Rt = np.eye(3) if R is None else R[0, 0]
    rt = Rt.tolist()
    Ce = ch.eff_C[0]
    lo, hi, mid, half, lim, alll = ch.lo, ch.hi, ch.mid, ch.half, ch.limited, ch.all_limited
    basis = np.empty((n, 1, ch.K))
    basis[:, 0, 0] = 1.0
    bs, bc = basis[:, 0, 1], basis[:, 0, 2]
    loc = np.empty((n, 1, 20))
    L = loc.reshape(n, 4, 5)
    Hs = ch.Hs
    m = 6 if orient else 3
    Jt = np.empty((n, m))
    outer = np.empty((n, 3, 3))
    dvec = np.empty((n, 3))
    Jv = np.empty((n, 3))

    def forward(q: Array, T: Array) -> Array:
        np.sin(q, out=bs)
        np.cos(q, out=bc)
        np.subtract(1.0, bc, out=bc)
        np.matmul(basis, Hs, out=loc)
        T[0] = L[0]
        for k in range(1, n):
            np.matmul(T[k - 1, :, :4], L[k], out=T[k])
        return T[n - 1, :, :4] @ Ce

    def residual(Te: Array) -> tuple[list[float], float, float, float]:
        t = Te.tolist()
        vx, vy, vz = px - t[0][3], py - t[1][3], pz - t[2][3]
        pos = math.sqrt(vx * vx + vy * vy + vz * vz)
        if not orient:
            V = [vx, vy, vz]
            ori = 0.0
        else:
            ox, oy, oz = _rotvec_py(rt, t, Rt, Te[:3, :3])
            V = [vx, vy, vz, ox, oy, oz]
            ori = math.sqrt(ox * ox + oy * oy + oz * oz)
        if not unit_w:
            V = [v * wi for v, wi in zip(V, wl, strict=True)]
        e = math.sqrt(sum(v * v for v in V))
        return V, pos, ori, e

    def theta(phi: Array) -> Array:
        q = np.sin(phi)
        q *= half
        q += mid
        if not alll:
            q = np.where(lim, q, phi)
        np.maximum(q, lo, out=q)
        np.minimum(q, hi, out=q)
        return q

    Tc, Tn = np.empty((n, 4, 5)), np.empty((n, 4, 5))
    q_start = np.minimum(np.maximum(q0[0], lo), hi)
    _, pos0, ori0, e0 = residual(forward(q_start, Tc))
    if pos0 <= tol and ori0 <= otol:  # the start meets the target already: it is the answer
        return LoopOutput(q_start[None].copy(), np.zeros(1, dtype=np.intp), ["converged"], np.array([pos0]),
                          np.array([ori0]), np.array([[e0]]))
    phi = ch.phi(q_start, START_MARGIN)
    q = theta(phi)
    Te = forward(q, Tc)
    Vw, pos, ori, e = residual(Te)
    history = [e0]
    es = [e]  # ‖WV‖ of the current pose after each iteration (the stall test)
    win, ratio = opts.stall_window, opts.stall_ratio
    lam = opts.damping
    kappa = opts.stiffness
    flat = 0
    ps = 1.0
    it = 0
    decay = 1.0  # γᵏ
    while True:
        done = pos <= tol and ori <= otol
        stalled = lam > LAMBDA_MAX or flat >= patience or win > 0 and it >= max(win, STALL_MIN_ITER) and \
            e > ratio * es[it - win]
        if done or stalled or it == opts.max_iter or deadline is not None and time.perf_counter() > deadline:
            back = not done and e >= e0
            history[-1] = e0 if back else e
            reason = "converged" if done else "stalled" if stalled else "max_iterations"
            return LoopOutput((q_start if back else q)[None].copy(), np.array([it], dtype=np.intp), [reason],
                              np.array([pos0 if back else pos]), np.array([ori0 if back else ori]),
                              np.array(history)[:, None])
        # J_φᵀ (n, m): rows [a × (p − r), a] · h cos φ (· W)
        a = Tc[:, :3, 4]
        np.subtract(Te[:3, 3], Tc[:, :3, 3], out=dvec)
        np.multiply(a[:, :, None], dvec[:, None, :], out=outer)
        np.matmul(outer.reshape(n, 9), _EPS, out=Jv)
        Jt[:, :3] = Jv
        if orient:
            Jt[:, 3:] = a
        sc = np.cos(phi)
        sc *= half
        if not alll:
            sc = np.where(lim, sc, 1.0)
        Jt *= sc[:, None]
        if not unit_w:
            Jt *= w
        A = Jt @ Jt.T
        Vwa = np.array(Vw)
        g = Jt @ Vwa
        mu = opts.pull * decay * ps * min(1.0, e * e)
        diag = A.ravel()[:: n + 1]
        if kappa is not None:
            diag += lam * kappa  # the damping's metric λ(I + K): stiffness weighs, never stops (LM docstring)
        if alll:
            diag += lam + mu
            rhs = g - mu * phi
        else:
            diag += lam + mu * ch.limf
            rhs = g - (mu * ch.limf) * phi
        try:
            d = np.linalg.solve(A, rhs)
        except np.linalg.LinAlgError:
            diag += 1e-12 * (float(diag.sum()) / n + 1.0)
            d = np.linalg.solve(A, rhs)
        if max_step is not None:
            big = float(np.abs(d).max())
            if big > max_step:
                d *= max_step / big
        phi_n = phi + d
        q_n = theta(phi_n)
        Te_n = forward(q_n, Tn)
        Vn, pos_n, ori_n, e_n = residual(Te_n)
        ok = e_n < e  # NaN compares False: a step that produced NaN is rejected
        flat = 0 if ok and e_n < e * (1.0 - GAIN_REL) - GAIN_ABS else flat + 1
        if ok:
            lam = max(lam * LAMBDA_DOWN, LAMBDA_MIN)
            Tc, Tn = Tn, Tc
            q, Te, Vw, pos, ori, e = q_n, Te_n, Vn, pos_n, ori_n, e_n
            # φ and π − φ give the same θ: keep φ in [−π/2, π/2], where the pull toward 0 is the short way
            phi = np.arcsin(np.sin(phi_n)) if alll else np.where(lim, np.arcsin(np.sin(phi_n)), phi_n)
        else:
            lam *= LAMBDA_UP
            ps *= PULL_BACKOFF
        history.append(min(e, e0))
        es.append(e)
        it += 1
        decay *= HOMOTOPY_DECAY


_REASONS = ("converged", "stalled", "max_iterations")


def _run_compiled(ch: _Chain, q0: Array, P: Array, R: Array | None, opts: Options, first_success: bool
                  ) -> LoopOutput:
    """:func:`run_lm` on a serial revolute chain with one effector, by the compiled loop (:mod:`.lm_jit`)."""
    q, iters, why, pos, ori, history = lm_serial(*loop_arrays(ch, opts), q0, P[:, 0], None if R is None else R[:, 0],
                                                 opts.row_weights, first_success=first_success, **loop_options(opts))
    return LoopOutput(q, iters, [_REASONS[k] for k in why.tolist()], pos, ori, history)


def _run_lanes(ch: _Chain, q0: Array, P: Array, R: Array | None, opts: Options, *, restarts: int = 0,
               seed: int = 0, restart_pull: float = 0.1, index0: int = 0, tries: NDArray[np.intp] | None = None
               ) -> LoopOutput:
    """:func:`run_lm` on a batch, serial revolute chain with one effector, by the compiled lanes
    (:mod:`.lm_batch_jit`): the same iteration, bit for bit, as :func:`_run_compiled`; with ``restarts``, the
    lanes' random restarts (:func:`~animkit.ik.lm_batch_jit.lm_lanes`)."""
    q, iters, why, pos, ori, history = lm_lanes(
        *loop_arrays(ch, opts), q0, P[:, 0], None if R is None else R[:, 0], opts.row_weights, restarts=restarts,
        seed=seed, restart_pull=restart_pull, index0=index0, tries=tries, **loop_options(opts))
    return LoopOutput(q, iters, [_REASONS[k] for k in why.tolist()], pos, ori, history)


def lanes_with_restarts(model: ChainModel, q0: Array, P: Array, R: Array | None, opts: Options, restarts: int,
                        seed: int, restart_pull: float, index0: int = 0
                        ) -> tuple[LoopOutput, NDArray[np.intp]] | None:
    """:func:`run_lm` with random restarts inside the lanes: a problem whose run ends unconverged runs again from
    :func:`~animkit.ik.lm_batch_jit.restart_start` in the same lane at once (the lanes stay full; no return to
    Python between rounds), up to ``restarts`` times; returns the output and the random starts each problem ran.
    None where the lanes do not take this batch (not a serial revolute chain with one effector, fewer than
    :data:`LANES_MIN` problems, a deadline, or numba off or not yet worth loading)."""
    ch = serial_chain(model)
    B = len(q0)
    if not _lanes_take(ch, B, opts):
        return None
    tries = np.zeros(B, dtype=np.intp)
    return _run_lanes(ch, q0, P, R, opts, restarts=restarts, seed=seed, restart_pull=restart_pull, index0=index0,
                      tries=tries), tries


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


def loop_arrays(ch: _Chain, opts: Options) -> tuple[Array, Array, Array, Array, Array, Array, NDArray[np.bool_], Array]:
    """The compiled loops' chain arguments (lm_serial, lm_lanes, pack_serial): link blocks Hs, effector offset Ce,
    limits lo and hi, mid-range m, half-range h, limited, stiffness κ."""
    return ch.kHs, ch.kCe, ch.klo, ch.khi, ch.kmid, ch.khalf, ch.klim, stiffness_from_options(opts, ch.n)


def loop_options(opts: Options) -> dict[str, Any]:
    """The compiled loops' keyword arguments for ``opts`` (tolerances, caps, damping, the stall test, μ₀) with lm's
    own constants (stall_min, γ, β, the start's margin)."""
    return dict(tol=opts.tol, otol=opts.orientation_tol, patience=opts.patience, max_iter=opts.max_iter,
                damping=opts.damping, max_step=opts.max_step, win=opts.stall_window, ratio=opts.stall_ratio,
                stall_min=STALL_MIN_ITER, pull=opts.pull, decay=HOMOTOPY_DECAY, backoff=PULL_BACKOFF,
                margin=START_MARGIN)


def packed_params(model: ChainModel, opts: Options, orient: bool, relax: bool) -> Array | None:
    """The one parameter array of :func:`~animkit.ik.lm_jit.lm_packed` (one problem, the compiled loop) for
    ``model`` and ``opts``; None where that path does not apply (not a serial revolute chain with one effector,
    priority, a pole, a deadline). The base origin is the first link's constant translation (a revolute link turns
    about its own origin)."""
    ch = serial_chain(model)
    if not ch.serial or opts.priority or opts.pole is not None or opts.deadline is not None:
        return None
    return pack_serial(*loop_arrays(ch, opts), opts.row_weights, model.H0[int(model.base_link[0]), :3, 3],
                       float(model.reach[0]), orient=orient, relax=relax, **loop_options(opts))


def packed_pays(opts: Options, spent: int) -> bool:
    """Whether one problem runs compiled now: the packed loop (or the one-problem loop) is loaded in this process,
    or ``spent`` (the iterations a reused problem has asked for so far, max_iter a solve) has reached
    :data:`LM_JIT_MIN` — loading it then pays for itself over the solves still to come."""
    return jit.pays(_PACKED_KERNEL, spent, LM_JIT_MIN) or _compiled_pays(1, opts)


def lm_single(model: ChainModel, opts: Options) -> bool:
    """Whether one problem on ``model`` runs :func:`_run_one` (NumPy's B = 1 path, with the stall test): restarts
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
    if B == 1 and ch.serial:
        return _run_one(ch, q0, P, R, opts)
    return _run_batched(ch, q0, P, R, opts, first_success)


def _relaxed(model: ChainModel) -> ChainModel | None:
    """``model`` with the limits of its revolute DOFs lifted (angles on the whole circle); None if none had any.
    Built once and kept on the model."""
    if "relaxed" in model.memo:
        return model.memo["relaxed"]  # type: ignore[return-value]
    lift = model.revolute & np.isfinite(model.lower) & np.isfinite(model.upper)
    free = None if not lift.any() else \
        replace(model, lower=np.where(lift, -np.inf, model.lower), upper=np.where(lift, np.inf, model.upper))
    model.memo["relaxed"] = free
    return free


def wrap_into_limits(q: Array, lower: Array, upper: Array, revolute: NDArray[np.bool_]) -> Array:
    """θ' = l + ((θ − l) mod 2π) for limited revolute DOFs (the same angle); one that falls in the gap (u, l + 2π)
    goes to the nearer limit on the circle. Other DOFs: clipped into their limits."""
    lim = revolute & np.isfinite(lower) & np.isfinite(upper)
    lo = np.where(lim, lower, 0.0)
    w = lo + np.mod(q - lo, 2.0 * np.pi)
    w = np.where(w > upper, np.where(w - upper < lo + 2.0 * np.pi - w, upper, lo), w)
    return np.where(lim, w, np.clip(q, lower, upper))


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
    take = (np.array(c.reason) == "converged") | (c.errors[-1] < best_a)
    iters = out.iterations.copy()
    iters[fail] += before + c.iterations
    ea = out.errors
    errors = _grown(ea, int(iters.max()) + 1)
    for j in np.flatnonzero(take).tolist():  # rows before c's run hold the first run's best (errors[-1] above)
        i, n3 = int(fail[j]), int(c.iterations[j])
        k0 = int(out.iterations[i]) + int(before[j]) + 1  # the row of c's first iteration
        # (never below the returned pose's error: a converged run may return a pose a little worse than its own
        # start, which it moved START_MARGIN inside the limits)
        errors[k0:k0 + n3, i] = np.maximum(np.minimum(c.errors[1:n3 + 1, j], best_a[j]), c.errors[n3, j])
        errors[k0 - 1 + n3:, i] = c.errors[n3, j]  # from its last iteration on: the returned pose's error
    won = fail[take]
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


def _run_batched(ch: _Chain, q0: Array, P: Array, R: Array | None, opts: Options, first_success: bool
                 ) -> LoopOutput:
    """NumPy's loop over B problems at once (trees, several effectors, prismatic DOFs, or no numba)."""
    B, n = q0.shape
    buf = ch.buffers(B)
    orient = R is not None
    w = opts.row_weights
    tol, otol, patience = opts.tol, opts.orientation_tol, opts.patience
    q_start = np.minimum(np.maximum(q0, ch.lo), ch.hi)
    Eff = ch.forward(q_start, buf)[2]
    V, pos0, ori0 = _residual(Eff, P, R)
    Vw = V * w
    err0 = np.sqrt(np.einsum("bi,bi->b", Vw, Vw))
    # outputs, written when a problem leaves the working set
    q_out = q_start.copy()
    pos_out, ori_out = pos0.copy(), ori0.copy()
    iters = np.zeros(B, dtype=np.intp)
    reason = ["max_iterations"] * B
    history = [err0.copy()]
    last = err0.copy()
    # the working set
    ids = np.arange(B)
    phi = ch.phi(q_start, START_MARGIN)
    q = ch.theta(phi)
    r, a, Eff = ch.forward(q, buf)
    V, pos, ori = _residual(Eff, P, R)
    Vw = V * w
    e = np.sqrt(np.einsum("bi,bi->b", Vw, Vw))
    Pw, Rw, e0 = P, R, err0
    lam = np.full(B, opts.damping)
    flat = np.zeros(B, dtype=np.intp)
    ps = np.ones(B)  # the pull's own scale: a rejected step shrinks it (the pull may point uphill)
    there = (pos0 <= tol) & (ori0 <= otol)  # a start that meets its target is the answer: the loop's first test
    if there.any():  # finishes it there (converged, 0 iterations)
        q = np.where(there[:, None], q_start, q)
        pos, ori, e = np.where(there, pos0, pos), np.where(there, ori0, ori), np.where(there, err0, e)
    pull = ch.limf
    eye = np.eye(n)
    it = 0
    win, ratio = opts.stall_window, opts.stall_ratio
    es = np.empty((opts.max_iter + 1, B)) if win > 0 else None  # ‖WV‖ after each iteration (the stall test)
    if es is not None:
        es[0, ids] = e
    while True:
        done = (pos <= tol) & (ori <= otol)
        stalled = (lam > LAMBDA_MAX) | (flat >= patience)
        if es is not None and it >= max(win, STALL_MIN_ITER):
            stalled |= e > ratio * es[it - win, ids]
        leave = done | stalled
        stop = it == opts.max_iter or opts.deadline is not None and time.perf_counter() > opts.deadline or \
            first_success and bool(done.any())
        if stop or leave.any():
            if stop:
                leave[:] = True
            sel = ids[leave]
            conv = done[leave]
            back = ~conv & (e[leave] >= e0[leave])  # not converged and no better than the start: the start
            q_out[sel] = np.where(back[:, None], q_start[sel], q[leave])
            pos_out[sel] = np.where(back, pos0[sel], pos[leave])
            ori_out[sel] = np.where(back, ori0[sel], ori[leave])
            history[-1][sel] = np.where(back, e0[leave], e[leave])
            why = np.where(conv, 0, np.where(stalled[leave], 1, 2)).tolist()
            for i, k in zip(sel.tolist(), why, strict=True):
                reason[i] = ("converged", "stalled", "max_iterations")[k]
            if stop or leave.all():
                break
            keep = ~leave
            ids = ids[keep]
            phi, q, Eff, V, Vw, pos, ori = (x[keep] for x in (phi, q, Eff, V, Vw, pos, ori))
            r, a = r[:, keep], a[:, keep]
            lam, flat, e, e0, ps = lam[keep], flat[keep], e[keep], e0[keep], ps[keep]
            Pw = P[ids]
            Rw = None if R is None else R[ids]
        iters[ids] += 1
        Jt = ch.jacobian_t(r, a, Eff[:, :, :3, 3], orient)
        Jt *= ch.dtheta(phi)[:, :, None] * w
        A = Jt @ np.swapaxes(Jt, 1, 2)
        g = (Jt @ Vw[:, :, None])[:, :, 0]
        mu = (opts.pull * HOMOTOPY_DECAY ** it) * (ps * np.minimum(1.0, e * e))[:, None] * pull
        A += (lam[:, None] * (1.0 if opts.stiffness is None else 1.0 + opts.stiffness) + mu)[:, :, None] * eye
        rhs = g - mu * phi
        try:
            d = np.linalg.solve(A, rhs[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            A += (1e-12 * (np.trace(A, axis1=1, axis2=2) / n + 1.0))[:, None, None] * eye
            d = np.linalg.solve(A, rhs[:, :, None])[:, :, 0]
        if opts.max_step is not None:
            big = np.abs(d).max(1)
            d *= np.minimum(1.0, opts.max_step / np.maximum(big, 1e-300))[:, None]
        phi_n = phi + d
        q_n = ch.theta(phi_n)
        rn, an, En = ch.forward(q_n, buf)
        Vn, pos_n, ori_n = _residual(En, Pw, Rw)
        Vnw = Vn * w
        e_n = np.sqrt(np.einsum("bi,bi->b", Vnw, Vnw))
        ok = e_n < e  # NaN compares False: a step that produced NaN is rejected
        flat = np.where(ok & (e_n < e * (1.0 - GAIN_REL) - GAIN_ABS), 0, flat + 1)
        lam = np.where(ok, np.maximum(lam * LAMBDA_DOWN, LAMBDA_MIN), lam * LAMBDA_UP)
        ps = np.where(ok, ps, ps * PULL_BACKOFF)
        if ok.all():
            phi, q, r, a, Eff, V, Vw, pos, ori, e = phi_n, q_n, rn, an, En, Vn, Vnw, pos_n, ori_n, e_n
        elif ok.any():
            o1, o3 = ok[:, None], ok[:, None, None, None]
            phi, q, V, Vw = np.where(o1, phi_n, phi), np.where(o1, q_n, q), np.where(o1, Vn, V), np.where(o1, Vnw, Vw)
            on = ok[None, :, None]
            r, a, Eff = np.where(on, rn, r), np.where(on, an, a), np.where(o3, En, Eff)
            pos, ori, e = np.where(ok, pos_n, pos), np.where(ok, ori_n, ori), np.where(ok, e_n, e)
        if ok.any():
            # φ and π − φ give the same θ: keep φ in [−π/2, π/2], where the pull toward 0 is the short way
            phi = np.arcsin(np.sin(phi)) if ch.all_limited else np.where(ch.limited, np.arcsin(np.sin(phi)), phi)
        last[ids] = np.minimum(e, e0)
        history.append(last.copy())
        it += 1
        if es is not None:
            es[it, ids] = e
    return LoopOutput(q_out, iters, reason, pos_out, ori_out, np.array(history))
