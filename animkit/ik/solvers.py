"""Solvers: one step function per method behind one shared, batched loop.

Every method computes a joint step Δθ from the chain's Jacobian J (B, m, n), the weighted task error
V (B, m) and the current values θ (B, n). The loop (:func:`run`) owns everything else: the error,
the step (α·Δθ, or α·Δθ/‖Δθ‖; the task error optionally clamped to a length; an optional cap per DOF),
joint limits (clamp, then re-solve with the DOFs stuck at a limit removed), secondary tasks in the
null space of the first (priority, pole), acceptance (Levenberg–Marquardt rejects steps that do not
reduce the error), convergence and stall detection. All B problems iterate together; a problem that
has finished is frozen and leaves the working set.

Equations (J⁺ is the Moore–Penrose pseudoinverse; see docs/derivations.md):

==============  ==========================================================================
transpose       Δθ = α JᵀV, α = ⟨V, JJᵀV⟩ / ‖JJᵀV‖²
pinv            Δθ = J⁺V, J⁺ from the SVD (singular values below rcond·σ_max dropped)
pinv-lu         Δθ = Jᵀ(JJᵀ)⁻¹V, the system solved by LU (no inverse formed)
dls             Δθ = Jᵀ(JJᵀ + λ²I)⁻¹V, fixed λ
dls-adaptive    the same, λ² = λ_max²(1 − (σ_min/ε)²) when σ_min < ε, else 0
nullspace       Δθ = J⁺V + (I − J⁺J)z, z = −α ∂(θ − θc)²/∂θ = 2α(θc − θ)  (the seeds' sign: α > 0 toward θc)
ccd             per DOF, outermost first: the angle turning (e − r)⊥a onto (t − r)⊥a
two-bone        analytic, law of cosines (animkit.ik.analytic)
fabrik          forward-and-backward reaching on joint positions, mapped back to the DOFs (animkit.ik.fabrik)
lm (default)    Δθ = (JᵀJ + λI)⁻¹JᵀV, λ adapted: ÷10 on a decrease (step kept), ×10 otherwise — the clamped form,
                used here with priority or a pole; otherwise lm runs its own loop on
                θ = m + h sin φ (:mod:`animkit.ik.lm`)
==============  ==========================================================================
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np
from numpy.typing import NDArray

from animkit.ik.constants import GAIN_ABS, GAIN_REL, LAMBDA_DOWN, LAMBDA_MAX, LAMBDA_MIN, LAMBDA_UP
from animkit.ik.jacobian import chain_jacobian, rotation_error
from animkit.ik.problem import ChainModel, Frames

__all__ = ["SolverName", "SOLVERS", "DEFAULT_SOLVER", "Options", "LoopOutput", "StepInput", "run",
           "step_transpose", "step_pinv", "step_pinv_lu", "step_dls", "step_dls_adaptive", "step_nullspace",
           "step_ccd", "step_lm", "damped_solve"]

Array = NDArray[np.float64]
SolverName = Literal["lm", "transpose", "pinv", "pinv-lu", "dls", "dls-adaptive", "nullspace", "ccd", "two-bone",
                     "fabrik", "bfgs", "cg"]
SOLVERS: tuple[str, ...] = get_args(SolverName)
DEFAULT_SOLVER = "lm"


@dataclass(frozen=True)
class Options:
    """Loop settings, validated by the caller (:func:`animkit.ik.solve`)."""

    tol: float = 1e-5
    orientation_tol: float = 1e-4
    max_iter: int = 100
    damping: float = 0.05  # dls: λ; dls-adaptive: λ_max; lm: the starting λ
    alpha: float | None = 1.0  # θ += α·Δθ (transpose: None = Buss's best α)
    normalised: bool = False  # seed 000: the task-space step α·V/‖V‖ (the effector moves α toward the goal)
    clamp: float | None = None  # the task-space error V is shortened to at most this length before the step
    max_step: float | None = None  # largest |Δθ_j| per iteration (None: no cap)
    rcond: float = 1e-6
    patience: int = 12
    priority: bool = False
    desired: Array | None = None  # nullspace: the comfort pose θc (n,)
    gains: Array | None = None  # nullspace: α (n,), z = 2α(θ − θc)
    pole: Array | None = None  # (3,) bend-plane hint for effector 0
    elbow_link: int = -1  # link whose origin the pole pulls
    pull: float = 1.0  # lm: μ₀, the homotopy pull toward mid-range at the first iteration (lm.HOMOTOPY_PULL)
    deadline: float | None = None  # time.perf_counter() value after which the loop stops (restarts)
    stall_window: int = 0  # lm (B = 1 path), restarts: stalled when ‖WV‖ fell by less than stall_ratio over this
    stall_ratio: float = 0.5  # many iterations (0: off)
    stiffness: Array | None = None  # lm: κ (n,), each DOF's extra damping (its stiffness; docs/derivations.md)
    polish: int = 0  # lm: the most projected steps in θ that finish the strategy's answer (lm.polish; 0: none)
    row_weights: Array = field(default_factory=lambda: np.ones(3))  # √w per row (m,)


@dataclass
class Work:
    """The working set: active problems only (ids into the batch), with their state."""

    ids: NDArray[np.intp]
    q: Array  # (b, n)
    P: Array  # (b, E, 3)
    R: Array | None  # (b, E, 3, 3)
    lam: Array  # (b,)
    fr: Frames
    V: Array  # (b, m) weighted
    err: Array  # (b,) ‖V‖
    pos: Array
    ori: Array
    flat: NDArray[np.intp]  # (b,) iterations without improvement


@dataclass
class StepInput:
    """What a step function sees (all for the working set)."""

    model: ChainModel
    opts: Options
    J: Array  # (b, m, n) weighted
    V: Array  # (b, m) weighted, after the step policy
    q: Array
    lam: Array
    fr: Frames
    P: Array
    R: Array | None


@dataclass(frozen=True)
class LoopOutput:
    q: Array  # (B, n)
    iterations: NDArray[np.intp]
    reason: list[str]
    position_error: Array
    orientation_error: Array
    errors: Array  # (iters + 1, B)


# --- linear algebra ----------------------------------------------------------------------------------


def damped_solve(J: Array, V: Array, lam2: Array | float) -> Array:
    """Δθ = Jᵀ(JJᵀ + λ²I)⁻¹V = (JᵀJ + λ²I)⁻¹JᵀV, through the smaller of the two systems (LU)."""
    b, m, n = J.shape
    l2 = np.broadcast_to(np.asarray(lam2, dtype=float), (b,))[:, None, None]
    Jt = np.swapaxes(J, 1, 2)
    if m <= n:
        A = J @ Jt + l2 * np.eye(m)
        y = _solve(A, V)
        return (Jt @ y[:, :, None])[:, :, 0]
    A = Jt @ J + l2 * np.eye(n)
    return _solve(A, (Jt @ V[:, :, None])[:, :, 0])


def _solve(A: Array, y: Array) -> Array:
    """Solve A x = y (batched, LU); an exactly singular system gets a ridge of 1e-12·(tr A/m + 1)."""
    try:
        x = np.linalg.solve(A, y[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        m = A.shape[-1]
        ridge = 1e-12 * (np.trace(A, axis1=1, axis2=2) / m + 1.0)
        x = np.linalg.solve(A + ridge[:, None, None] * np.eye(m), y[:, :, None])[:, :, 0]
    return np.asarray(x, dtype=np.float64)  # the stubs say floating[Any]; the values are float64 already


def _pinv(J: Array, rcond: float) -> Array:
    return np.asarray(np.linalg.pinv(J, rcond=rcond), dtype=np.float64)


# --- step functions ------------------------------------------------------------------------------------


def step_transpose(s: StepInput) -> Array:
    """Δθ = α JᵀV with α = ⟨V, JJᵀV⟩ / ‖JJᵀV‖² (the best α along JᵀV to first order; Buss 2004) when the
    solver's α is None; otherwise JᵀV (the loop multiplies by the user's α)."""
    g = (np.swapaxes(s.J, 1, 2) @ s.V[:, :, None])[:, :, 0]
    if s.opts.alpha is not None:
        return g
    JJtV = (s.J @ g[:, :, None])[:, :, 0]
    den = np.sum(JJtV * JJtV, axis=1)
    alpha = np.where(den > 1e-300, np.sum(s.V * JJtV, axis=1) / np.where(den > 1e-300, den, 1.0), 0.0)
    return alpha[:, None] * g


def step_pinv(s: StepInput) -> Array:
    """Δθ = J⁺V, J⁺ = V Σ⁺ Uᵀ from the SVD, singular values below rcond·σ_max treated as zero."""
    return (_pinv(s.J, s.opts.rcond) @ s.V[:, :, None])[:, :, 0]


def step_pinv_lu(s: StepInput) -> Array:
    """Δθ = Jᵀ(JJᵀ)⁻¹V (or (JᵀJ)⁻¹JᵀV when m > n), solved by LU without forming an inverse, over the columns that
    are not zero: a DOF held at its limit (its column zeroed by the loop's re-solve) leaves the system, which with
    it would be singular (a square J with a zero column) and give a step of rounding noise."""
    live = np.any(s.J != 0.0, axis=1)  # (b, n)
    if live.all():
        return damped_solve(s.J, s.V, 0.0)
    dq = np.zeros((s.J.shape[0], s.J.shape[2]))
    patterns, which = np.unique(live, axis=0, return_inverse=True)
    for k, cols in enumerate(patterns):
        rows = np.flatnonzero(which.reshape(-1) == k)
        if cols.any():
            dq[np.ix_(rows, np.flatnonzero(cols))] = damped_solve(s.J[rows][:, :, cols], s.V[rows], 0.0)
    return dq


def step_dls(s: StepInput) -> Array:
    """Δθ = Jᵀ(JJᵀ + λ²I)⁻¹V with a fixed damping λ (``damping``)."""
    return damped_solve(s.J, s.V, s.opts.damping ** 2)


def step_dls_adaptive(s: StepInput) -> Array:
    """Δθ = Jᵀ(JJᵀ + λ²I)⁻¹V with λ² = λ_max²(1 − (σ_min/ε)²) for σ_min < ε, else 0 (ε = 10 λ_max)."""
    sig = np.linalg.svd(s.J, compute_uv=False)
    k = min(s.J.shape[1], s.J.shape[2])
    smin = sig[:, k - 1]
    lmax = s.opts.damping
    eps = 10.0 * lmax
    lam2 = np.where(smin < eps, lmax ** 2 * (1.0 - (smin / eps) ** 2), 0.0)
    return damped_solve(s.J, s.V, lam2 + 1e-14)


def step_nullspace(s: StepInput) -> Array:
    """Δθ = J⁺V + (I − J⁺J)z with the seeds' z = −α ∂(θ − θc)²/∂θ = 2α(θc − θ).

    (I − J⁺J) projects onto the null space of J, so the term leaves the effector still to first order; z is
    −α times the gradient of the squared distance to θc: α > 0 descends it (θ moves toward θc), α < 0 climbs.
    """
    Jp = _pinv(s.J, s.opts.rcond)
    assert s.opts.desired is not None and s.opts.gains is not None
    z = 2.0 * s.opts.gains * (s.opts.desired - s.q)
    n = s.q.shape[1]
    N = np.eye(n) - Jp @ s.J
    return (Jp @ s.V[:, :, None])[:, :, 0] + (N @ z[:, :, None])[:, :, 0]


def step_lm(s: StepInput) -> Array:
    """Δθ = (JᵀJ + λI)⁻¹JᵀV with a per-problem λ that the loop adapts (Levenberg–Marquardt).

    (Chan & Dubey's weighted least norm away from the limits was tried here and removed: on the Panda benchmark it
    lowered 6D success from 34 % to 28 %, the fixed start sitting next to two limits.)
    """
    return damped_solve(s.J, s.V, s.lam)


def step_ccd(s: StepInput) -> Array:
    """Cyclic coordinate descent, outermost DOF first: each revolute DOF turns by the angle taking
    (e − r)⊥a onto (t − r)⊥a (atan2 of the projected vectors: no acos, so nothing to clamp); a
    prismatic DOF moves by a·(t − e) (the projection). With an orientation target the angle is the
    position angle and the rotation-vector error's component along a, weighted. Tiny turns are skipped.
    """
    model = s.model
    q = s.q
    b, n = q.shape
    dq = np.zeros_like(q)
    p = s.fr.p[:, 0].copy()  # (b, 3)
    Re = None if s.R is None else s.fr.R[:, 0].copy()
    t = s.P[:, 0]
    w = s.opts.row_weights
    wo = float(w[3]) ** 2 / max(float(w[0]) ** 2, 1e-300) if s.R is not None else 0.0
    links = np.flatnonzero(model.eff_mask[0])[::-1]
    for k in links:
        r = s.fr.r[:, k]
        a = s.fr.a[:, k]
        if model.revolute[k]:
            u = p - r
            v = t - r
            u = u - a * np.sum(u * a, 1, keepdims=True)
            v = v - a * np.sum(v * a, 1, keepdims=True)
            nu = np.linalg.norm(u, axis=1)
            nv = np.linalg.norm(v, axis=1)
            ok = (nu > 1e-12) & (nv > 1e-12)
            phi = np.where(ok, np.arctan2(np.sum(a * np.cross(u, v), 1), np.sum(u * v, 1)), 0.0)
            wp = nu * nv
            if Re is not None:
                assert s.R is not None
                phio = np.sum(rotation_error(s.R[:, 0], Re) * a, 1)
                phi = (wp * phi + wo * phio) / np.maximum(wp + wo, 1e-300)
        else:
            phi = np.sum(a * (t - p), 1)
        new = np.clip(q[:, k] + dq[:, k] + phi, model.lower[k], model.upper[k])
        phi = new - q[:, k] - dq[:, k]
        phi = np.where(np.abs(phi) < 1e-12, 0.0, phi)
        dq[:, k] += phi
        if model.revolute[k]:
            Rk = _rotations(a, phi)
            p = r + (Rk @ (p - r)[:, :, None])[:, :, 0]
            if Re is not None:
                Re = Rk @ Re
        else:
            p = p + a * phi[:, None]
    return dq


def _rotations(a: Array, phi: Array) -> Array:
    """Rodrigues, batched: (b, 3) axes, (b,) angles → (b, 3, 3)."""
    K = np.zeros(a.shape[:-1] + (3, 3))
    K[:, 0, 1], K[:, 0, 2] = -a[:, 2], a[:, 1]
    K[:, 1, 0], K[:, 1, 2] = a[:, 2], -a[:, 0]
    K[:, 2, 0], K[:, 2, 1] = -a[:, 1], a[:, 0]
    s = np.sin(phi)[:, None, None]
    c = (1.0 - np.cos(phi))[:, None, None]
    return np.eye(3) + s * K + c * (K @ K)


# --- the loop ------------------------------------------------------------------------------------------


def evaluate(model: ChainModel, q: Array, P: Array, R: Array | None, w: Array
             ) -> tuple[Frames, Array, Array, Array, Array]:
    """Frames, weighted error V (b, m), ‖V‖, and the worst position / orientation error over effectors."""
    fr = model.frames(q)
    Vp = P - fr.p  # (b, E, 3)
    pos = np.sqrt(np.max(np.sum(Vp * Vp, axis=2), axis=1))
    if R is None:
        V = Vp.reshape(len(q), -1)
        ori = np.zeros(len(q))
    else:
        Vo = rotation_error(R, fr.R)
        ori = np.sqrt(np.max(np.sum(Vo * Vo, axis=2), axis=1))
        V = np.concatenate([Vp, Vo], axis=2).reshape(len(q), -1)
    V = V * w
    return fr, V, np.linalg.norm(V, axis=1), pos, ori


def _secondary(model: ChainModel, opts: Options, J: Array, V: Array, fr: Frames, P: Array, dq1: Array,
               rows1: int, lam: Array | float) -> Array:
    """Δθ₂ = N (J₂N)⁺(V₂ − J₂Δθ₁), N = I − J₁⁺J₁: tasks after the first, in the first's null space."""
    J1 = J[:, :rows1]
    J2s, V2s = [], []
    if opts.priority and J.shape[1] > rows1:
        J2s.append(J[:, rows1:])
        V2s.append(V[:, rows1:])
    if opts.pole is not None and opts.elbow_link >= 0:
        Je, Ve = _pole_task(model, opts, fr, P)
        J2s.append(Je)
        V2s.append(Ve)
    if not J2s:
        return np.zeros_like(dq1)
    J2 = np.concatenate(J2s, axis=1)
    V2 = np.concatenate(V2s, axis=1)
    n = J.shape[2]
    N = np.eye(n) - _pinv(J1, 1e-6) @ J1
    J2N = J2 @ N
    rhs = V2 - (J2 @ dq1[:, :, None])[:, :, 0]
    return (N @ damped_solve(J2N, rhs, lam)[:, :, None])[:, :, 0]


def _pole_task(model: ChainModel, opts: Options, fr: Frames, P: Array) -> tuple[Array, Array]:
    """The elbow's origin pulled, about the base → target line, into the half-plane holding the pole."""
    k = opts.elbow_link
    assert opts.pole is not None
    base = fr.r[:, model.base_link[0]]
    u = P[:, 0] - base
    u = u / np.maximum(np.linalg.norm(u, axis=1, keepdims=True), 1e-300)
    e = fr.r[:, k] - base
    e_perp = e - u * np.sum(e * u, 1, keepdims=True)
    h = opts.pole - base
    h_perp = h - u * np.sum(h * u, 1, keepdims=True)
    nh = np.linalg.norm(h_perp, axis=1, keepdims=True)
    ok = nh > 1e-9
    want = base + u * np.sum(e * u, 1, keepdims=True) + np.linalg.norm(e_perp, axis=1, keepdims=True) * \
        np.where(ok, h_perp / np.where(ok, nh, 1.0), 0.0)
    want = np.where(ok, want, fr.r[:, k])
    anc = np.zeros(model.n, dtype=bool)
    j = int(model.parent[k])
    while j >= 0:
        anc[j] = True
        j = int(model.parent[j])
    d = fr.r[:, k][:, None, :] - fr.r
    Jp = np.where(model.revolute[None, :, None], np.cross(fr.a, d), fr.a) * anc[None, :, None]
    return Jp.transpose(0, 2, 1) * 0.5, (want - fr.r[:, k]) * 0.5


def run(model: ChainModel, step: Callable[[StepInput], Array], q0: Array, P: Array, R: Array | None, opts: Options,
        *, jacobian: bool = True, damped: bool = False, keep_last: bool = False) -> LoopOutput:
    """The shared loop over B problems: q0 (B, n), targets P (B, E, 3), R (B, E, 3, 3) or None; ``step`` the
    solver's; ``jacobian``: the step reads J; ``damped``: Levenberg–Marquardt's acceptance (λ adapted, a step that
    does not lower the error rejected); ``keep_last``: the step never raises its own measure (FABRIK's), so a run
    goes on while it moves and returns its last pose, not the one of least ‖V‖ it visited."""
    jac, lm = jacobian, damped
    B, n = q0.shape
    w = opts.row_weights
    orient = R is not None
    rows1 = 6 if orient else 3
    lower, upper = model.lower, model.upper
    q_out = model.project_cones(np.clip(q0, lower, upper))
    iters = np.zeros(B, dtype=np.intp)
    reason = ["max_iterations"] * B
    pos_out, ori_out = np.zeros(B), np.zeros(B)
    fr, V, err, pos, ori = evaluate(model, q_out, P, R, w)
    history = [err.copy()]
    wk = Work(np.arange(B), q_out.copy(), P, R, np.full(B, opts.damping), fr, V, err, pos, ori,
              np.zeros(B, dtype=np.intp))
    last = err.copy()

    # every step is taken (no line search: the seeds' update, overshoots included); a problem that does not
    # converge returns the best pose it visited
    best_q, best_err, best_pos, best_ori = q_out.copy(), err.copy(), pos.copy(), ori.copy()

    def finish(mask: NDArray[np.bool_], why: str) -> None:
        ids = wk.ids[mask]
        if why == "converged" or lm or keep_last or opts.priority:  # with priority ‖V‖ is not the objective
            q_out[ids] = wk.q[mask]
            pos_out[ids] = wk.pos[mask]
            ori_out[ids] = wk.ori[mask]
        else:
            q_out[ids], pos_out[ids], ori_out[ids] = best_q[ids], best_pos[ids], best_ori[ids]
        for i in ids:
            reason[i] = why

    def keep(mask: NDArray[np.bool_]) -> None:
        nonlocal wk
        f = wk.fr
        wk = Work(wk.ids[mask], wk.q[mask], wk.P[mask], None if wk.R is None else wk.R[mask], wk.lam[mask],
                  Frames(f.T[:, mask], f.r[mask], f.a[mask], f.p[mask], f.R[mask]), wk.V[mask], wk.err[mask],
                  wk.pos[mask], wk.ori[mask], wk.flat[mask])

    for it in range(opts.max_iter + 1):
        done = (wk.pos <= opts.tol) & (wk.ori <= opts.orientation_tol)
        stalled = (wk.flat >= opts.patience) & ~done
        if lm:
            stalled |= (wk.lam > LAMBDA_MAX) & ~done
        if it == opts.max_iter or opts.deadline is not None and time.perf_counter() > opts.deadline:
            finish(done, "converged")
            finish(~done, "max_iterations")
            finish(stalled, "stalled")
            break
        if done.any() or stalled.any():
            finish(done, "converged")
            finish(stalled, "stalled")
            keep(~(done | stalled))
            if len(wk.ids) == 0:
                break
        iters[wk.ids] += 1
        J = chain_jacobian(model, wk.fr, orient) * w[None, :, None] if jac else np.empty((len(wk.ids), 0, n))
        Vs = _shaped_error(wk.V, opts, rows1) if jac else wk.V
        dq = _joint_step(model, step, opts, wk, J, Vs, rows1, lm, jac)
        qn = model.project_cones(np.clip(wk.q + dq, lower, upper))  # limits, then cones (ChainModel.project_cones)
        qn = np.where(np.isfinite(qn), qn, wk.q)
        fr, V, err, pos, ori = evaluate(model, qn, wk.P, wk.R, w)
        if lm:
            better = err < wk.err
            wk.lam = np.where(better, np.maximum(wk.lam * LAMBDA_DOWN, LAMBDA_MIN), wk.lam * LAMBDA_UP)
        else:
            better = np.ones(len(err), dtype=bool)
            gain = err < best_err[wk.ids]
            gi = wk.ids[gain]
            best_q[gi], best_err[gi], best_pos[gi], best_ori[gi] = qn[gain], err[gain], pos[gain], ori[gain]
        _count_flat(wk, qn, err, opts, jac, keep_last)
        _take_better(wk, better, qn, fr, V, err, pos, ori)
        last[wk.ids] = wk.err
        history.append(last.copy())
    return LoopOutput(q_out, iters, reason, pos_out, ori_out, np.array(history))


def _shaped_error(V: Array, opts: Options, rows1: int) -> Array:
    """V pulled toward the effector: ‖V‖ ≤ clamp per task; then seed 000's task-space step α·V/‖V‖ (``normalised``;
    V itself once the goal is nearer than α: the last step lands instead of hopping over it)."""
    Vs = V
    if opts.clamp is not None:
        parts = [Vs[:, :rows1], Vs[:, rows1:]] if opts.priority else [Vs]
        Vs = np.concatenate([v * np.minimum(1.0, opts.clamp / np.maximum(np.linalg.norm(v, axis=1, keepdims=True),
                                                                         1e-300)) for v in parts], axis=1)
    if opts.normalised and opts.alpha is not None:
        Vs = Vs * np.minimum(1.0, opts.alpha / np.maximum(np.linalg.norm(Vs, axis=1, keepdims=True), 1e-300))
    return Vs


def _joint_step(model: ChainModel, step: Callable[[StepInput], Array], opts: Options, wk: Work, J: Array, Vs: Array,
                rows1: int, lm: bool, jac: bool) -> Array:
    """The solver's Δθ for the working set: with ``priority`` the first effector's rows drive it and the others go
    to the null space (as the pole's pull does); scaled (:func:`_scaled`); a DOF that would cross its limit is held
    there and the step solved again without it."""
    J_all, V_all = J, Vs
    if opts.priority:
        J, Vs = J[:, :rows1], Vs[:, :rows1]
    dq = step(StepInput(model, opts, J, Vs, wk.q, wk.lam, wk.fr, wk.P, wk.R))
    if jac and (opts.priority or opts.pole is not None):
        lam2 = np.maximum(wk.lam, 1e-6) if lm else 1e-6
        dq = dq + _secondary(model, opts, J_all, V_all, wk.fr, wk.P, dq, rows1, lam2)
    dq = _scaled(dq, opts, lm)
    if jac:
        qn = wk.q + dq
        blocked = ((qn < model.lower) & (dq < 0)) | ((qn > model.upper) & (dq > 0))
        rows: NDArray[np.bool_] = np.asarray(blocked.any(axis=1))
        if rows.any():  # clamp, then re-solve without the DOFs stuck at a limit
            sub = StepInput(model, opts, J[rows] * ~blocked[rows][:, None, :], Vs[rows], wk.q[rows],
                            wk.lam[rows], _take(wk.fr, rows), wk.P[rows], None if wk.R is None else wk.R[rows])
            dq2 = _scaled(step(sub), opts, lm)
            dq[rows] = np.where(blocked[rows], dq[rows], dq2)
    return dq


def _count_flat(wk: Work, qn: Array, err: Array, opts: Options, jac: bool, keep_last: bool) -> None:
    """wk.flat: the iterations without a gain of GAIN_REL, GAIN_ABS in ‖V‖ (patience: stalled); with ``keep_last``
    those without a move, and without a Jacobian a step that moved nothing stops the run."""
    improved = err < wk.err * (1.0 - GAIN_REL) - GAIN_ABS
    moved = np.max(np.abs(qn - wk.q), axis=1) > 1e-14
    wk.flat = np.where(improved, 0, wk.flat + 1)
    if keep_last:  # the step's own measure never rose: run while it moves
        wk.flat = np.where(moved, 0, opts.patience)
    elif not jac:
        wk.flat = np.where(moved, wk.flat, opts.patience)  # nothing moved: stop


def _take_better(wk: Work, better: NDArray[np.bool_], qn: Array, fr: Frames, V: Array, err: Array, pos: Array,
                 ori: Array) -> None:
    """The working set moves to the new pose where ``better``."""
    if better.all():
        wk.q, wk.fr, wk.V, wk.err, wk.pos, wk.ori = qn, fr, V, err, pos, ori
    elif better.any():
        wk.q = np.where(better[:, None], qn, wk.q)
        f = wk.fr
        b1, b2, b3 = better[:, None], better[:, None, None], better[:, None, None, None]
        wk.fr = Frames(np.where(better[None, :, None, None], fr.T, f.T), np.where(b2, fr.r, f.r),
                       np.where(b2, fr.a, f.a), np.where(b2, fr.p, f.p), np.where(b3, fr.R, f.R))
        wk.V = np.where(b1, V, wk.V)
        wk.err = np.where(better, err, wk.err)
        wk.pos = np.where(better, pos, wk.pos)
        wk.ori = np.where(better, ori, wk.ori)


def _scaled(dq: Array, opts: Options, lm: bool) -> Array:
    """The user's step α·Δθ (``normalised``: α already set the task-space step's length, see :func:`run`); then the
    optional cap |Δθ_j| ≤ max_step. lm sizes its own steps (λ), so α applies to the other methods only."""
    if not lm and opts.alpha is not None and not opts.normalised and opts.alpha != 1.0:
        dq = dq * opts.alpha
    if opts.max_step is not None:
        big = np.max(np.abs(dq), axis=1, keepdims=True)
        dq = dq * np.minimum(1.0, opts.max_step / np.maximum(big, 1e-300))
    return dq


def _take(f: Frames, mask: NDArray[np.bool_]) -> Frames:
    return Frames(f.T[:, mask], f.r[mask], f.a[mask], f.p[mask], f.R[mask])

