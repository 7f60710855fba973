"""A problem made of tasks (:mod:`animkit.ik.tasks`) over a movable set: the stacked, weighted error and Jacobian,
and the weighted Levenberg–Marquardt loop that minimises it.

    f(θ) = ½ Σ_k w_k ‖e_k(θ)‖² = ½ ‖e(θ)‖²   (e: every task's rows scaled by √w_k),   ∇f = Jᵀe

    (JᵀJ + λI) Δθ = −Jᵀe,   θ ← clamp(θ + Δθ) into the limits (cones projected); λ ÷ 10 on a decrease, × 10 else

Goal tasks (`Task.goal`: Reach, Plant, Balance) decide convergence: each within its tolerance; the others (Gaze,
Posture, Spread, Cost) shape the answer and settle while the goals hold. A run stops when the goals are met and
f stops falling (relative change below 1e-9), when λ grows past 10¹⁰ (no step lowers f: stalled) or at max_iter.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import IKError
from animkit.ik.problem import ChainModel
from animkit.ik.solvers import LoopOutput
from animkit.ik.tasks import Body, Configuration, FigureState, Gaze, Plant, Reach, Task, configuration
from animkit.model.figure import Figure

__all__ = ["task_anchors", "aimed_tasks", "moved_nodes",
           "TaskStack", "lm_stack", "edge_step", "edge_constraints", "solve_on_edges", "cones_moved"]

Array = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class TaskStack:
    """Tasks over the movable set ``dofs`` (pose indices) of ``figure``; DOFs outside it keep ``pose``'s values."""

    figure: Figure
    body: Body
    model: ChainModel  # the movable set compiled (its DOFs, limits and cones)
    pose: Array
    tasks: tuple[Task, ...]
    tol: float
    orientation_tol: float

    @property
    def dofs(self) -> NDArray[np.intp]:
        return self.model.dofs

    def full(self, q: Array) -> Array:
        p = self.pose.copy()
        p[self.dofs] = q
        return p

    def config(self, q: Array) -> Configuration:
        """The configuration of chain values q (n,): the frames of the nodes the chain reaches from its compiled
        links (the same values as :func:`~animkit.ik.tasks.figure_state`), the others' at ``pose``; the DOF frames
        of the DOFs outside the movable set are left zero (no column of theirs is read)."""
        m = self.model
        got = cast("tuple[Array, FigureState, NDArray[np.intp]] | None", m.memo.get("stack"))
        if got is None or got[0] is not self.pose:
            s0 = configuration(self.figure, self.pose, self.body).state
            rows = np.array([self.figure.compiled.node_names.index(e) for e in m.effectors], dtype=np.intp)
            got = m.memo["stack"] = (self.pose, s0, rows)
        _, s0, rows = got
        Re, pe, rd, ad = m.frames_one(q)
        R, p = s0.R.copy(), s0.p.copy()
        R[rows], p[rows] = Re, pe
        r, a = np.zeros_like(s0.r), np.zeros_like(s0.a)
        r[m.dofs], a[m.dofs] = rd, ad
        return Configuration(self.figure, self.body, self.full(q), FigureState(R, p, r, a))

    def evaluate(self, q: Array) -> tuple[Array, Array, Configuration]:
        """e (m,) and J = ∂e/∂θ (m, n) over the movable set, each task's rows scaled by √w; the configuration."""
        c = self.config(q)
        es, Js = [], []
        for t in self.tasks:
            e, J = t.compute(c)
            s = t.row_scale(len(e))
            es.append(e * s)
            Js.append(J[:, self.dofs] * s[:, None])
        return np.concatenate(es), np.vstack(Js), c

    def goal_errors(self, c: Configuration) -> tuple[float, float, bool]:
        """The worst position and orientation error over the goal tasks, and whether every goal is met."""
        pos = ori = 0.0
        for t in self.tasks:
            if not t.goal or t.weight == 0:  # a weight-0 task is measured, not a goal
                continue
            p, o = t.goal_error(c)
            pos, ori = max(pos, p), max(ori, o)
        return pos, ori, pos <= self.tol and ori <= self.orientation_tol

    def clamp(self, q: Array) -> Array:
        m = self.model
        return np.asarray(m.project_cones(np.clip(q, m.lower, m.upper)[None], iterated=True)[0], dtype=float)


SOFT_POLISH = 1e-6  # the second stage's factor on the weights of the tasks that are not goals


def lm_stack(stack: TaskStack, q0: Array, max_iter: int, damping: float = 1e-2) -> LoopOutput:
    """Minimise ½‖e‖² over the movable set from q0 (n,) by Levenberg–Marquardt (the module docstring); where the
    weighted optimum leaves a goal outside its tolerance (the other tasks pull against it), a second run from that
    answer with their weights × SOFT_POLISH meets the goals while staying near it. Where that fails too (the other
    tasks led the run into a minimum the goals cannot leave: a preference pulling two DOFs onto their limits stopped
    a reachable reach 15 cm short), the goals alone from q0, then the light run from their answer; kept where both
    meet the goals."""
    out = _lm_stack(stack, q0, max_iter, damping)
    soft = [not t.goal for t in stack.tasks]
    if out.reason[0] == "converged" or not any(soft):
        return out
    light = tuple(t.with_weight(t.weight * SOFT_POLISH) if s else t for t, s in zip(stack.tasks, soft, strict=True))
    second = _lm_stack(replace(stack, tasks=light), out.q[0], max_iter, damping)
    runs = [out, second]
    if second.reason[0] != "converged":  # a minimum the other tasks led into: the goals alone from the start, then
        goals = tuple(t for t, s in zip(stack.tasks, soft, strict=True) if not s)  # the light run from their answer,
        alone = _lm_stack(replace(stack, tasks=goals), q0, max_iter, damping)  # kept where it meets the goals
        if alone.reason[0] == "converged":
            third = _lm_stack(replace(stack, tasks=light), alone.q[0], max_iter, damping)
            if third.reason[0] == "converged":
                runs += [alone, third]
    last = runs[-1]
    return LoopOutput(last.q, np.sum([r.iterations for r in runs], axis=0), last.reason, last.position_error,
                      last.orientation_error, np.concatenate([out.errors] + [r.errors[1:] for r in runs[1:]]))


def _lm_stack(stack: TaskStack, q0: Array, max_iter: int, damping: float) -> LoopOutput:
    q = stack.clamp(q0)
    e, J, c = stack.evaluate(q)
    f = 0.5 * float(e @ e)
    history = [math.sqrt(2 * f)]
    lam = damping
    n = len(q)
    reason = "max_iterations"
    it = 0
    lo, hi = stack.model.lower, stack.model.upper
    while it < max_iter:
        it += 1
        g = J.T @ e
        A = J.T @ J + lam * np.eye(n)
        d = -np.linalg.solve(A, g)
        blocked = ((q + d <= lo) & (d < 0)) | ((q + d >= hi) & (d > 0))
        if blocked.any():  # clamp, then solve again without the DOFs pressed on a limit
            free = ~blocked
            d = np.zeros(n)
            Af = A[np.ix_(free, free)]
            d[free] = -np.linalg.solve(Af, g[free])
        else:
            free = np.ones(n, dtype=bool)
        qn = stack.clamp(q + d)
        if stack.model.cones:  # a step that leaves a cone is solved again on its edge's tangent (an active set)
            d, qn = edge_step(stack.model, q, np.asarray(d, dtype=float), qn, A, g, free)
        en, Jn, cn = stack.evaluate(qn)
        fn = 0.5 * float(en @ en)
        if fn < f:
            drop = f - fn
            q, e, J, c, f = qn, en, Jn, cn, fn
            lam = max(lam * 0.1, 1e-12)
            met = stack.goal_errors(c)[2]
            history.append(math.sqrt(2 * f))
            if met and drop <= 1e-9 * max(f, 1e-300) + 1e-30:
                reason = "converged"
                break
        else:
            lam *= 10.0
            history.append(math.sqrt(2 * f))
            if lam > 1e10:
                reason = "converged" if stack.goal_errors(c)[2] else "stalled"
                break
    pos, ori, met = stack.goal_errors(c)
    if reason == "max_iterations" and met:
        reason = "converged"
    return LoopOutput(q[None], np.array([it], dtype=np.intp), [reason], np.array([pos]), np.array([ori]),
                      np.array(history)[:, None])


def cones_moved(model: ChainModel, before: Array, after: Array) -> list[NDArray[np.intp]]:
    """The link indices (3,) of each coned joint whose angles differ between ``before`` and ``after`` (n,)."""
    out = []
    for c in model.cones:
        links = np.asarray(c.links, dtype=np.intp)
        if np.any(before[links] != after[links]):
            out.append(links)
    return out


def edge_constraints(q: Array, inside: Array, outside: Array, moved: Sequence[NDArray[np.intp]],
                     column: NDArray[np.intp]) -> tuple[Array, Array]:
    """Constraints Nᵀ Δ = β (N (m, k)) that keep a step on the tangent planes of the ranges a projection moved it
    back into: per joint, its unit normal n (in its three angles) from the projected angles ``inside`` toward where
    the step put them (``outside``) and β = n·(θ_edge − θ). ``column`` maps an index of q to its column in the step
    (−1: not in it: that joint is left out)."""
    m = int(column.max(initial=-1)) + 1
    cols_n, beta = [], []
    for idx in moved:
        cols = column[idx]
        if cols.min() < 0:
            continue
        nvec = outside[idx] - inside[idx]
        nn = float(np.linalg.norm(nvec))
        if not nn > 1e-15:
            continue
        nvec = nvec / nn
        col = np.zeros(m)
        col[cols] = nvec
        cols_n.append(col)
        beta.append(float(nvec @ (inside[idx] - q[idx])))
    return np.array(cols_n).reshape(-1, m).T, np.array(beta)


def solve_on_edges(solve: Callable[[Array], Array], rhs: Array, N: Array, beta: Array) -> Array | None:
    """argmin ½ΔᵀAΔ − rhsᵀΔ subject to NᵀΔ = β, given ``solve`` (B ↦ A⁻¹B, A symmetric positive definite):
    Δ = Δ₀ + A⁻¹N μ, (NᵀA⁻¹N) μ = β − NᵀΔ₀, Δ₀ = A⁻¹ rhs (the KKT system by its Schur complement). None where it
    cannot be solved."""
    out = solve(rhs)
    if N.shape[1]:
        AN = solve(N)
        S = N.T @ AN
        S[np.diag_indices_from(S)] += 1e-12 * max(float(np.trace(S)), 1e-300)
        try:
            out = out + AN @ np.linalg.solve(S, beta - N.T @ out)
        except np.linalg.LinAlgError:
            return None
    return out if bool(np.all(np.isfinite(out))) else None


EDGE_ROUNDS = 4  # solves of one step at most: the free step, then with each newly hit range's tangent plane


def edge_step(model: ChainModel, q: Array, d: Array, qn: Array, A: Array, g: Array, free: NDArray[np.bool_]
              ) -> tuple[Array, Array]:
    """The step d (and its clamped, projected end qn) solved again while it leaves a cone: each newly hit joint's
    tangent plane at the edge becomes an equality constraint (:func:`edge_constraints`, :func:`solve_on_edges`)
    on the free DOFs, up to EDGE_ROUNDS solves; a joint's first edge only (a thin range, the knee's, curves away
    from its tangent, and a second plane would pin it to a corner). Returns the last step that could be solved."""
    moved = cones_moved(model, np.clip(q + d, model.lower, model.upper), qn)
    if not moved:
        return d, qn
    column = np.full(len(q), -1, dtype=np.intp)
    column[free] = np.arange(int(free.sum()))
    Af = A[np.ix_(free, free)]
    try:
        L = np.linalg.cholesky(Af)
    except np.linalg.LinAlgError:
        return d, qn

    def solve(B: Array) -> Array:
        return np.asarray(np.linalg.solve(L.T, np.linalg.solve(L, B)), dtype=float)

    N, beta = np.zeros((int(free.sum()), 0)), np.zeros(0)
    held: set[int] = set()
    for _ in range(EDGE_ROUNDS - 1):
        fresh = [m for m in moved if int(m[0]) not in held]
        if not fresh:
            break
        held.update(int(m[0]) for m in fresh)
        raw = np.clip(q + d, model.lower, model.upper)
        Nk, bk = edge_constraints(q, qn, raw, fresh, column)
        N, beta = np.hstack([N, Nk]), np.concatenate([beta, bk])
        df = solve_on_edges(solve, -g[free], N, beta)
        if df is None:
            break
        d = np.zeros(len(q))
        d[free] = df
        raw = np.clip(q + d, model.lower, model.upper)
        qn = np.asarray(model.project_cones(raw[None], iterated=True)[0], dtype=float)
        moved = cones_moved(model, raw, qn)
        if not moved:
            break
    return d, qn


def stack_tasks(tasks: Sequence[Task], c: Configuration) -> tuple[Task, ...]:
    """The tasks with what they leave open taken from the start configuration (:meth:`Task.resolved`)."""
    return tuple(t.resolved(c) for t in tasks)


def task_anchors(given: tuple[Task, ...], weights: ArrayLike | None, orientation_weight: float
                  ) -> tuple[list[str], ArrayLike | None, bool, float]:
    """A problem of tasks' effectors (its Reach effectors, else every node a task anchors on), their weights, the
    target kind and the orientation weight."""
    reaches = [t for t in given if isinstance(t, Reach)]
    anchors = [t.effector for t in reaches] + [t.node for t in given if isinstance(t, Plant)] + \
        [t.head for t in given if isinstance(t, Gaze) and t.weight > 0]
    if not anchors:
        raise IKError("a problem made of tasks needs a Reach or a Plant task (what the movable set moves)")
    kinds = {t.orientation for t in reaches}
    if len(kinds) > 1:
        raise IKError("the Reach tasks' targets must be all positions (3,) or all poses (4, 4)")
    orientation = bool(kinds and kinds.pop())
    if reaches and len(reaches) == len(given):
        ows = {t.orientation_weight for t in reaches}
        if len(ows) > 1:
            raise IKError("the Reach tasks of one problem share one orientation_weight")
        return [t.effector for t in reaches], [t.weight for t in reaches], orientation, ows.pop()
    return list(dict.fromkeys(anchors)), weights, orientation, orientation_weight


def aimed_tasks(tasks: Sequence[Task], target: ArrayLike | None, targets: Mapping[str, ArrayLike] | None,
           weights: Mapping[str, float] | None) -> list[Task]:
    """The tasks with ``target`` for the first Reach, ``targets`` and ``weights`` by task name; a Gaze without a
    target of its own looks at the first Reach's."""
    out = list(tasks)
    first = next((i for i, t in enumerate(out) if isinstance(t, Reach)), None)
    if target is not None:
        if first is None:
            raise IKError("target: this problem has no Reach task; give targets={name: value}")
        out[first] = out[first].with_target(target)
    out = [t.with_target((targets or {})[t.name]) if t.name in (targets or {}) else t for t in out]
    aim = next((t.target for t in out if isinstance(t, Reach) and t.target is not None), None)
    if aim is not None:
        out = [t.with_target(aim) if isinstance(t, Gaze) and t.target is None else t for t in out]
    return [t.with_weight(float((weights or {})[t.name])) if t.name in (weights or {}) else t for t in out]


def moved_nodes(figure: Figure, movable: NDArray[np.intp], effectors: Sequence[str]) -> tuple[str, ...]:
    """The nodes a DOF of ``movable`` moves, beyond ``effectors`` (a problem of tasks reads all their frames)."""
    c = figure.compiled
    moved = np.zeros(c.node_count, dtype=bool)
    moved[np.asarray(c.dof_node)[movable]] = True
    for i in range(c.node_count):
        if c.parent[i] >= 0 and moved[c.parent[i]]:
            moved[i] = True
    return tuple(c.node_names[i] for i in np.flatnonzero(moved) if c.node_names[i] not in effectors)
