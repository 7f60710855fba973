"""The default solver's own loop: Levenberg–Marquardt on limit-free coordinates, with a homotopy out of the start.

    θ_j = m_j + h_j sin φ_j          (m, h: mid-range and half-range of DOF j; θ_j = φ_j when unlimited)
    (J_φᵀ W_k² J_φ + (λ + μ_k) I) Δφ = J_φᵀ W_k² V − μ_k φ,      J_φ = J · diag(h cos φ)
    μ_k = μ₀ · γᵏ · min(1, ‖W_k V‖)  (limited DOFs only),   W_k = row weights, orientation rows × (1 − (1 − ω₀) γᵏ)

Every φ maps into the limits, so the optimiser never clamps and never stalls on a limit's corner. The μ term
(a Tikhonov pull toward mid-range, φ = 0) and the orientation rows' ramp from ω₀ to 1 fade geometrically
(γ = 0.9): the first iterations solve an easier, better-conditioned problem that leaves the start's limits and
singularities, the last ones the exact task (μ → 0, W_k → W). A step is kept when it lowers ‖W_k V‖ (λ ÷ 10),
else λ × 10. All B problems iterate together; a finished problem leaves the working set at once.
See docs/derivations.md ("lm").
"""

from __future__ import annotations

import time

import numpy as np
from numpy.typing import NDArray

from .jacobian import rotation_error
from .problem import ChainModel
from .solvers import LoopOutput, Options

__all__ = ["run_lm", "HOMOTOPY_PULL", "HOMOTOPY_DECAY", "ORIENTATION_RAMP", "START_MARGIN"]

Array = NDArray[np.float64]

HOMOTOPY_PULL = 1.0  # μ₀
HOMOTOPY_DECAY = 0.9  # γ
ORIENTATION_RAMP = 0.3  # ω₀: the orientation rows' weight factor at the first iteration
START_MARGIN = 0.02  # the start is moved this fraction of a DOF's range inside its limits (cos φ ≠ 0)
_DOWN, _UP = 0.1, 10.0


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

    def theta(self, phi: Array) -> Array:
        q = self.mid + self.half * np.sin(phi)
        if not self.all_limited:
            q = np.where(self.limited, q, phi)
        return np.clip(q, self.lo, self.hi)

    def phi(self, q: Array, margin: float) -> Array:
        s = np.clip((q - self.mid) / self.half, -1.0 + 2.0 * margin, 1.0 - 2.0 * margin)
        p = np.arcsin(s)
        return p if self.all_limited else np.where(self.limited, p, q)

    def dtheta(self, phi: Array) -> Array:
        d = self.half * np.cos(phi)
        return d if self.all_limited else np.where(self.limited, d, 1.0)

    def forward(self, q: Array) -> tuple[Array, Array, Array, Array]:
        """Link frames T (b, n, 4, 4), DOF origins r and axes a (b, n, 3), effector frames (b, E, 4, 4)."""
        s = np.sin(q)[:, :, None, None]
        c = (1.0 - np.cos(q))[:, :, None, None]
        loc = self.H0 + s * self.H1 + c * self.H2
        if self.prismatic:
            loc = loc + q[:, :, None, None] * self.H3
        T = np.empty_like(loc)
        mm = np.matmul
        for k, pk in enumerate(self.parent):
            if pk < 0:
                T[:, k] = loc[:, k]
            else:
                mm(T[:, pk], loc[:, k], out=T[:, k])
        a = np.einsum("bkij,kj->bki", T[:, :, :3, :3], self.axis)
        r = T[:, :, :3, 3]
        if self.prismatic:
            r = r - a * (q * self.pris)[:, :, None]
        Eff = mm(T[:, self.eff_link], self.eff_C)
        return T, r, a, Eff

    def jacobian_t(self, r: Array, a: Array, p: Array, orient: bool) -> Array:
        """Jᵀ (b, n, m): row k holds DOF k's column, for every effector (3 or 6 rows each)."""
        b = r.shape[0]
        rows = 6 if orient else 3
        Jt = np.empty((b, self.n, rows * self.E))
        a1, a2, a0 = a[:, :, 1], a[:, :, 2], a[:, :, 0]
        for j in range(self.E):
            d = p[:, j, None, :] - r
            d0, d1, d2 = d[:, :, 0], d[:, :, 1], d[:, :, 2]
            o = rows * j
            Jt[:, :, o] = a1 * d2 - a2 * d1
            Jt[:, :, o + 1] = a2 * d0 - a0 * d2
            Jt[:, :, o + 2] = a0 * d1 - a1 * d0
            if self.prismatic:
                Jt[:, :, o: o + 3] = np.where(self.pris[None, :, None], a, Jt[:, :, o: o + 3])
            if not self.single or not self.mask[0].all():
                Jt[:, :, o: o + 3] *= self.fmask[j][None, :, None]
            if orient:
                Jt[:, :, o + 3: o + 6] = a * self.rmask[j][None, :, None]
        return Jt


def _residual(Eff: Array, P: Array, R: Array | None) -> tuple[Array, Array, Array]:
    """V (b, m) unweighted, worst position and orientation error over effectors."""
    b = Eff.shape[0]
    Vp = P - Eff[:, :, :3, 3]
    pos = np.sqrt(np.max(np.einsum("bei,bei->be", Vp, Vp), axis=1))
    if R is None:
        return Vp.reshape(b, -1), pos, np.zeros(b)
    Vo = rotation_error(R, Eff[:, :, :3, :3])
    ori = np.sqrt(np.max(np.einsum("bei,bei->be", Vo, Vo), axis=1))
    return np.concatenate([Vp, Vo], axis=2).reshape(b, -1), pos, ori


def run_lm(model: ChainModel, q0: Array, P: Array, R: Array | None, opts: Options, *,
           first_success: bool = False) -> LoopOutput:
    """Solve B problems: starts q0 (B, n), targets P (B, E, 3) and R (B, E, 3, 3) or None.

    Returns the converged pose, else the best one seen (by ‖W V‖, the final weights): never worse than the
    start. ``errors`` holds that best ‖W V‖ before the first step and after every iteration. With
    ``first_success`` the loop stops as soon as one problem has converged (random restarts).
    """
    ch = _Chain(model)
    B, n = q0.shape
    orient = R is not None
    w = opts.row_weights
    m = w.shape[0]
    ramp_rows = np.zeros(m, dtype=bool)
    if orient:
        ramp_rows.reshape(-1, 6)[:, 3:] = True
    q_start = np.clip(q0, ch.lo, ch.hi)
    _, _, _, Eff = ch.forward(q_start)
    V, pos, ori = _residual(Eff, P, R)
    err0 = np.linalg.norm(V * w, axis=1)
    # outputs, written when a problem leaves the working set
    q_out = q_start.copy()
    pos_out, ori_out, best_out = pos.copy(), ori.copy(), err0.copy()
    iters = np.zeros(B, dtype=np.intp)
    reason = ["max_iterations"] * B
    history = [err0.copy()]
    last = err0.copy()
    # the working set
    ids = np.arange(B)
    phi = ch.phi(q_start, START_MARGIN)
    q = ch.theta(phi)
    T, r, a, Eff = ch.forward(q)
    V, pos, ori = _residual(Eff, P, R)
    Pw, Rw = P, R
    lam = np.full(B, opts.damping)
    flat = np.zeros(B, dtype=np.intp)
    best_q, best_err, best_pos, best_ori = q_start.copy(), err0.copy(), pos_out.copy(), ori_out.copy()
    e_true = np.linalg.norm(V * w, axis=1)
    better0 = e_true < best_err
    best_q[better0], best_err[better0] = q[better0], e_true[better0]
    best_pos[better0], best_ori[better0] = pos[better0], ori[better0]
    pull = ch.limf
    it = 0
    while True:
        done = (pos <= opts.tol) & (ori <= opts.orientation_tol)
        stalled = ~done & ((lam > 1e10) | (flat >= opts.patience))
        out_of_time = opts.deadline is not None and time.perf_counter() > opts.deadline
        stop = it == opts.max_iter or out_of_time or first_success and bool(done.any())
        leave = done | stalled if not stop else np.ones(len(ids), dtype=bool)
        if leave.any():
            sel = ids[leave]
            conv = done[leave]
            q_out[sel] = np.where(conv[:, None], q[leave], best_q[leave])
            pos_out[sel] = np.where(conv, pos[leave], best_pos[leave])
            ori_out[sel] = np.where(conv, ori[leave], best_ori[leave])
            best_out[sel] = np.where(conv, e_true[leave], best_err[leave])
            history[-1][sel] = best_out[sel]  # the residual of the pose returned
            for i, c, s in zip(sel.tolist(), conv.tolist(), stalled[leave].tolist(), strict=True):
                reason[i] = "converged" if c else "stalled" if s else "max_iterations"
            if stop or leave.all():
                break
            keep = ~leave
            ids = ids[keep]
            phi, q, T, r, a, Eff, V, pos, ori = (x[keep] for x in (phi, q, T, r, a, Eff, V, pos, ori))
            lam, flat, e_true = lam[keep], flat[keep], e_true[keep]
            best_q, best_err, best_pos, best_ori = best_q[keep], best_err[keep], best_pos[keep], best_ori[keep]
            Pw = P[ids]
            Rw = None if R is None else R[ids]
        iters[ids] += 1
        g_k = HOMOTOPY_DECAY ** it
        wk = np.where(ramp_rows, w * (1.0 - (1.0 - ORIENTATION_RAMP) * g_k), w) if orient else w
        Vw = V * wk
        e_cur = np.sqrt(np.einsum("bi,bi->b", Vw, Vw))
        Jt = ch.jacobian_t(r, a, Eff[:, :, :3, 3], orient) * wk
        Jt *= ch.dtheta(phi)[:, :, None]
        A = Jt @ np.swapaxes(Jt, 1, 2)
        g = np.einsum("bkm,bm->bk", Jt, Vw)
        mu = (HOMOTOPY_PULL * g_k) * np.minimum(1.0, e_cur)
        diag = lam[:, None] + mu[:, None] * pull
        idx = np.arange(n)
        A[:, idx, idx] += diag
        rhs = g - (mu[:, None] * pull) * phi
        try:
            d = np.linalg.solve(A, rhs[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            ridge = 1e-12 * (np.trace(A, axis1=1, axis2=2) / n + 1.0)
            A[:, idx, idx] += ridge[:, None]
            d = np.linalg.solve(A, rhs[:, :, None])[:, :, 0]
        if opts.max_step is not None:
            big = np.max(np.abs(d), axis=1)
            d *= np.minimum(1.0, opts.max_step / np.maximum(big, 1e-300))[:, None]
        phi_n = phi + d
        q_n = ch.theta(phi_n)
        Tn, rn, an, En = ch.forward(q_n)
        Vn, pos_n, ori_n = _residual(En, Pw, Rw)
        Vnw = Vn * wk
        e_new = np.sqrt(np.einsum("bi,bi->b", Vnw, Vnw))
        ok = np.isfinite(e_new) & (e_new < e_cur)
        improved = ok & (e_new < e_cur * (1.0 - 1e-9) - 1e-15)
        flat = np.where(improved, 0, flat + 1)
        lam = np.where(ok, np.maximum(lam * _DOWN, 1e-9), lam * _UP)
        if ok.all():
            phi, q, T, r, a, Eff, V, pos, ori = phi_n, q_n, Tn, rn, an, En, Vn, pos_n, ori_n
        elif ok.any():
            o1, o2, o3 = ok[:, None], ok[:, None, None], ok[:, None, None, None]
            phi, q, V = np.where(o1, phi_n, phi), np.where(o1, q_n, q), np.where(o1, Vn, V)
            T, Eff = np.where(o3, Tn, T), np.where(o3, En, Eff)
            r, a = np.where(o2, rn, r), np.where(o2, an, a)
            pos, ori = np.where(ok, pos_n, pos), np.where(ok, ori_n, ori)
        if ok.any():
            # φ and π − φ give the same θ: keep φ in [−π/2, π/2], where the pull toward 0 is the short way
            if ch.all_limited:
                phi = np.arcsin(np.sin(phi))
            else:
                phi = np.where(ch.limited, np.arcsin(np.sin(phi)), phi)
        e_true = np.sqrt(np.einsum("bi,bi->b", V * w, V * w))
        nb = e_true < best_err
        if nb.any():
            best_q = np.where(nb[:, None], q, best_q)
            best_err = np.where(nb, e_true, best_err)
            best_pos, best_ori = np.where(nb, pos, best_pos), np.where(nb, ori, best_ori)
        last[ids] = best_err
        history.append(last.copy())
        it += 1
    return LoopOutput(q_out, iters, reason, pos_out, ori_out, np.array(history))
