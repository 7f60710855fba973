"""First-order optimality on a chain with ball-joint cones, and lm's finish along a cone's edge.

A cone is the inequality c(θ) ≤ 0 (:mod:`animkit.ik.cone_rows`: its swing excess ρ ≤ 1, its twist within range),
so an answer on a cone's edge is optimal when the descent direction g = Jᵀ W² V (−∇½‖WV‖²) is a non-negative
combination of the active rows' outward normals n_i = ∇c_i (Karush–Kuhn–Tucker):

    g_p = g − N_S μ,   μ = argmin_{μ ≥ 0} ‖g − N_S μ‖     (per coned joint: its ≤ 3 active rows, by their subsets)
    optimal:  ‖g_p‖ ≤ STATIONARY · ‖J_free‖_F · ‖W V‖      (lm_rules.stationary's test, with g_p for g)

A DOF on a box limit is held as in :func:`~animkit.ik.lm_rules.stationary`. The cone projection every solver applies
after a step (:meth:`~animkit.ik.problem.ChainModel.project_cones`, radial in the swing) is not the orthogonal one
in θ: a step along g leaves the edge outward and comes back about where it started, so lm stalls on an edge short of
that optimum (CesiumMan's torso toward an out-of-reach target: ‖g_p‖ = 0.13 ‖J‖‖WV‖, each projected step gains
3·10⁻⁷ of ‖g‖ per radian). :func:`slide` finishes such an answer in the tangent space of the rows that hold it:

    (Zᵀ Jᵀ W² J Z + λ I) y = Zᵀ g,   θ ← project_cones(clip(θ + Z y, l, u))   (kept where ‖W V‖ falls)

Z: an orthonormal basis of the null space of the active rows with μ > 0 and of the held DOFs' unit rows.
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from animkit.ik.cone_rows import cone_turn, swing_excess, twist_angle
from animkit.ik.constants import (
    GAIN_ABS,
    GAIN_REL,
    LAMBDA_DOWN,
    LAMBDA_MAX,
    LAMBDA_MIN,
    LAMBDA_UP,
    POLISH_DAMPING,
    SLIDE_ITERS,
)
from animkit.ik.jacobian import chain_jacobian, rotation_error
from animkit.ik.lm import keep_better
from animkit.ik.lm_rules import stationary
from animkit.ik.problem import ChainModel, ConeLink, Frames
from animkit.ik.solvers import LoopOutput, Options

__all__ = ["ACTIVE", "Held", "gradient", "cone_constraints", "projected_gradient", "held_room", "lagrangian_curvature",
           "cone_stationary", "tangent_basis", "slides", "slide"]

Array = NDArray[np.float64]
ACTIVE = 1e-5  # a cone's row holds the joint when its room (1 − ρ, or the twist's to its bound) is below this


def gradient(model: ChainModel, q: Array, P: Array, R: Array | None, w: Array) -> tuple[Array, Array, Array, Frames]:
    """Per problem at q (b, n): g = Jᵀ W² V (b, n) (−∂(½‖WV‖²)/∂θ: the descent direction), the weighted J (b, m, n),
    ‖W V‖ (b,) and the frames."""
    fr = model.frames(q)
    V = P - fr.p
    if R is not None:
        V = np.concatenate([V, rotation_error(R, fr.R)], axis=2)
    V = V.reshape(len(q), -1) * w
    J = chain_jacobian(model, fr, R is not None) * w[None, :, None]
    return (np.swapaxes(J, 1, 2) @ V[:, :, None])[:, :, 0], J, np.linalg.norm(V, axis=1), fr


class Held(NamedTuple):
    """The constraint rows that hold one problem at its answer: each row (k, n) an active cone row with μ > 0 (its
    outward normal ∇c over the chain's DOFs) or a held DOF's unit row, its room (k,), μ (k,), and where it comes
    from: ``cone`` (k,) the cone's index (−1: a box limit) and ``kind`` (k,) 0 swing, 1 twist's upper, 2 lower."""

    rows: Array
    room: Array
    mu: Array
    cone: NDArray[np.intp]
    kind: NDArray[np.intp]


def cone_constraints(link: ConeLink, values: Array) -> tuple[Array, Array]:
    """Every row of a coned joint at its angles ``values`` (3,): its outward normals (3, 3) over the angles and room
    (3,): swing (1 − ρ), twist's upper (hi − τ), twist's lower (τ − lo); a twist row's room is inf (normal 0) where
    the range is the whole circle (:func:`~animkit.ik.cone_rows.swing_excess`, :func:`~.cone_rows.twist_angle`)."""
    cone = link.cone
    R, Om = cone_turn(link, values)
    rho, gs = swing_excess(R, link.axis, cone)
    lo, hi = cone.twist
    N, room = np.zeros((3, 3)), np.array([1.0 - rho, math.inf, math.inf])
    N[0] = gs @ Om
    if hi - lo < 2.0 * math.pi:
        tau, gt = twist_angle(R, link.axis)
        N[1], N[2], room[1], room[2] = gt @ Om, -(gt @ Om), hi - tau, tau - lo
    return N, room


def _nonnegative_fit(N: Array, g: Array) -> tuple[Array, Array]:
    """min_{μ ≥ 0} ‖g − Nᵀ μ‖ over the rows N (r, k), r ≤ 3, by every subset's least squares: the residual (k,)
    and μ (r,) (0 off the best subset)."""
    best, mu_best = g, np.zeros(len(N))
    for size in range(1, len(N) + 1):
        for pick in itertools.combinations(range(len(N)), size):
            A = N[list(pick)]
            mu = np.linalg.lstsq(A.T, g, rcond=None)[0]
            if (mu > 0.0).all():
                res = g - A.T @ mu
                if res @ res < best @ best:
                    best, mu_best = res, np.zeros(len(N))
                    mu_best[list(pick)] = mu
    return best, mu_best


def projected_gradient(model: ChainModel, q: Array, g: Array, free: NDArray[np.bool_]) -> tuple[Array, list[Held]]:
    """g_p (b, n): g with the held DOFs (``free`` False) zeroed and each coned joint's part reduced by its active
    rows' non-negative fit (the module docstring); and per problem the rows that hold it (:class:`Held`)."""
    gp = np.where(free, g, 0.0)
    n = model.n
    out: list[Held] = []
    for i in range(len(q)):
        box = np.flatnonzero(~free[i])
        rows, room, mus = [np.eye(n)[box]], [np.zeros(box.size)], [np.zeros(box.size)]
        cone, kind = [np.full(box.size, -1)], [box]
        for c, link in enumerate(model.cones):
            idx = np.asarray(link.links, dtype=np.intp)
            N, r = cone_constraints(link, q[i, idx])
            on = np.flatnonzero(r < ACTIVE)
            if on.size == 0:
                continue
            gp[i, idx], mu = _nonnegative_fit(N[on] * free[i, idx], gp[i, idx])
            on, mu = on[mu > 0.0], mu[mu > 0.0]
            full = np.zeros((on.size, n))
            full[:, idx] = N[on]
            rows.append(full)
            room.append(r[on])
            mus.append(mu)
            cone.append(np.full(on.size, c))
            kind.append(on)
        out.append(Held(np.concatenate(rows), np.concatenate(room), np.concatenate(mus),
                        np.concatenate(cone).astype(np.intp), np.concatenate(kind).astype(np.intp)))
    return gp, out


def held_room(model: ChainModel, q: Array, held: Held) -> Array:
    """The room (k,) at q (n,) of the rows of ``held``: each cone row's recomputed, a held DOF's 0."""
    out = np.zeros(len(held.room))
    for k in np.flatnonzero(held.cone >= 0).tolist():
        link = model.cones[int(held.cone[k])]
        out[k] = cone_constraints(link, q[np.asarray(link.links, dtype=np.intp)])[1][int(held.kind[k])]
    return out


def lagrangian_curvature(model: ChainModel, q: Array, held: Held, h: float = 1e-5) -> Array:
    """Σ μ_i ∇²c_i (n, n) at q (n,) over the cone rows of ``held`` (central differences of their normals, h): what
    the cones' curvature adds to ∇²f in the second-order test on their edges (the Lagrangian's Hessian)."""
    out = np.zeros((model.n, model.n))
    for k in np.flatnonzero(held.cone >= 0).tolist():
        link = model.cones[int(held.cone[k])]
        idx = np.asarray(link.links, dtype=np.intp)
        D = np.empty((3, 3))
        for j in range(3):
            e = np.zeros(3)
            e[j] = h
            D[:, j] = (cone_constraints(link, q[idx] + e)[0][held.kind[k]] -
                       cone_constraints(link, q[idx] - e)[0][held.kind[k]]) / (2 * h)
        out[np.ix_(idx, idx)] += held.mu[k] * 0.5 * (D + D.T)
    return out


def cone_stationary(model: ChainModel, g: Array, J: Array, q: Array, vn: Array
                    ) -> tuple[NDArray[np.bool_], NDArray[np.bool_], list[Held]]:
    """Per problem (g, q (b, n), J (b, m, n), vn (b,)): whether it is first-order optimal under its box limits and
    cones (‖g_p‖ ≤ STATIONARY ‖J_free‖_F ‖W V‖; :func:`~animkit.ik.lm_rules.stationary` with g_p), the DOFs free of
    a box limit (b, n) and the rows that hold each (:func:`projected_gradient`)."""
    free = np.empty(q.shape, dtype=bool)
    jj = np.sum(J * J, axis=1)
    stationary(g, jj, q, model.lower, model.upper, vn, free)
    gp, held = projected_gradient(model, q, g, free)
    optimal = np.asarray(stationary(gp, jj, q, model.lower, model.upper, vn, np.empty(q.shape, dtype=bool)))
    return optimal, free, held


def tangent_basis(n: int, held: Array) -> Array:
    """Z (n, k): an orthonormal basis of the null space of the rows ``held`` (r, n)."""
    if len(held) == 0:
        return np.eye(n)
    _, s, Vt = np.linalg.svd(held)
    rank = int(np.sum(s > 1e-12 * max(float(s[0]), 1e-300)))
    return np.asarray(Vt[rank:].T)


def slides(model: ChainModel, opts: Options) -> bool:
    """Whether lm's answers on ``model`` are finished by :func:`slide`: ``opts.polish`` > 0 (lm's), lm's own loop
    (no priority or pole) on a chain with cones."""
    return opts.polish > 0 and not opts.priority and opts.pole is None and bool(model.cones)


def slide(model: ChainModel, P: Array, R: Array | None, opts: Options, out: LoopOutput) -> LoopOutput:
    """The answers of ``out`` that did not converge, finished along the cones' edges (the module docstring), each
    at most SLIDE_ITERS steps and never past ``max_iter``, stopping at convergence, at a first-order optimum
    (:func:`cone_stationary`), when λ passes LAMBDA_MAX or ``patience`` steps gain nothing; kept by
    :func:`~animkit.ik.lm.keep_better` (where they end closer)."""
    if not slides(model, opts):
        return out
    idx = np.flatnonzero([why != "converged" for why in out.reason])
    budget = np.minimum(SLIDE_ITERS, opts.max_iter - out.iterations[idx])
    idx, budget = idx[budget > 0], budget[budget > 0]
    if idx.size == 0:
        return out
    runs = [_slide_one(model, out.q[i:i + 1], P[i:i + 1], None if R is None else R[i:i + 1], opts, int(k))
            for i, k in zip(idx.tolist(), budget.tolist(), strict=True)]
    q = np.concatenate([r[0] for r in runs])
    fr = model.frames(q)
    pos = np.max(np.linalg.norm(P[idx] - fr.p, axis=2), axis=1)
    ori = np.zeros(idx.size) if R is None else np.max(np.linalg.norm(rotation_error(R[idx], fr.R), axis=2), axis=1)
    rows = max(len(r[1]) for r in runs)
    hist = np.array([np.concatenate([r[1], np.repeat(r[1][-1:], rows - len(r[1]))]) for r in runs]).T
    reason = ["converged" if r[2] else out.reason[i] for r, i in zip(runs, idx.tolist(), strict=True)]
    steps = np.array([len(r[1]) - 1 for r in runs], dtype=np.intp)
    return keep_better(out, idx, LoopOutput(q, steps, reason, pos, ori, hist), np.zeros(idx.size, dtype=np.intp))


def _slide_one(model: ChainModel, q: Array, P: Array, R: Array | None, opts: Options, budget: int
               ) -> tuple[Array, Array, bool]:
    """:func:`slide`'s loop on one problem q (1, n): the answer, its ‖W V‖ after each step (the first: the start's)
    and whether it converged."""
    w = opts.row_weights
    g, J, e, fr = gradient(model, q, P, R, w)
    lam, flat = POLISH_DAMPING, 0
    history = [float(e[0])]
    while len(history) <= budget and not _met(fr, P, R, opts):
        optimal, _, held = cone_stationary(model, g, J, q, e)
        if optimal[0]:
            break
        N = held[0].rows
        Z = tangent_basis(model.n, N)
        JZ = J[0] @ Z
        y = np.linalg.solve(JZ.T @ JZ + lam * np.eye(Z.shape[1]), Z.T @ g[0])
        qn = q + (Z @ y)[None]
        for _ in range(2 if len(N) else 0):  # back onto the edges it slid along (Newton: N Δ = their room at qn)
            qn = qn + (np.linalg.pinv(N) @ held_room(model, qn[0], held[0]))[None]
        qn = model.project_cones(np.clip(qn, model.lower, model.upper))
        gn, Jn, en, frn = gradient(model, qn, P, R, w)
        if en[0] < e[0]:  # lm_jit.accept_step's rule
            flat = 0 if en[0] < e[0] * (1.0 - GAIN_REL) - GAIN_ABS else flat + 1
            q, g, J, e, fr = qn, gn, Jn, en, frn
            lam = max(lam * LAMBDA_DOWN, LAMBDA_MIN)
        else:
            flat += 1
            lam *= LAMBDA_UP
        history.append(float(e[0]))
        if lam > LAMBDA_MAX or flat >= opts.patience:
            break
    return q, np.array(history), _met(fr, P, R, opts)


def _met(fr: Frames, P: Array, R: Array | None, opts: Options) -> bool:
    """Whether every effector meets its target within the tolerances."""
    if float(np.max(np.linalg.norm(P - fr.p, axis=2))) > opts.tol:
        return False
    return R is None or float(np.max(np.linalg.norm(rotation_error(R, fr.R), axis=2))) <= opts.orientation_tol
