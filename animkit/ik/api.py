"""Entry points: :func:`solve` (one problem) and :func:`solve_batch` (B problems iterating together)."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import AnimkitError, IKError, unknown_name
from ..figure import Figure
from ..progress import progress
from .lm import lm_single, retry_through_relaxed_limits, run_lm
from .problem import ChainModel, check_effectors, compile_chain, movable_dofs, parse_targets
from .result import IKBatchResult, IKResult, Reason
from .solvers import DEFAULT_SOLVER, JACOBIAN_SOLVERS, SOLVERS, LoopOutput, Options, SolverName, StepPolicy, run

__all__ = ["solve", "solve_batch", "DEFAULT_MAX_ITER", "DEFAULT_MAX_STEP"]

Array = NDArray[np.float64]

DEFAULT_MAX_ITER = {"lm": 100, "transpose": 3000, "pinv": 200, "pinv-lu": 200, "dls": 300, "dls-adaptive": 300,
                    "nullspace": 300, "ccd": 500, "two-bone": 10}
_RESTART_BATCH = 8  # random restarts run this many starts at once (vectorised), unless the B = 1 path applies
RESTART_MAX_ITER = 100  # iteration cap of each run (the first included) when restarts are on
RESTART_STALL = (8, 0.7)  # with restarts, lm's B = 1 runs stop when ‖WV‖ fell < 30 % over 8 iterations
RESTART_PULL = 0.1  # lm's μ₀ for the random restarts (the first run keeps Options.pull = 1): a random start is
# already away from the limits, and a strong pull keeps it from solutions near them (Panda 6D, the hardest of 500
# targets: a median 183 restarts to converge with μ₀ = 1, 14.5 with 0.1, 10 with 0 at twice the time per restart)
DEFAULT_MAX_STEP = 0.5  # radians (scene units for prismatic DOFs) per iteration, Jacobian solvers
_DAMPING = {"lm": 1.0, "dls": 0.05, "dls-adaptive": 0.1}


@dataclass(frozen=True)
class _Setup:
    figure: Figure
    pose: Array
    model: ChainModel
    method: str
    opts: Options
    P: Array  # (E, 3) or (B, E, 3)
    R: Array | None
    relax: bool  # lm: retry what did not converge (and is not shown out of reach) through the relaxed limits


def _check_figure(figure: Figure) -> Figure:
    if not isinstance(figure, Figure):
        raise IKError(f"expected a Figure, got {type(figure).__name__}")
    return figure


def _positive(name: str, value: float, *, allow_zero: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise IKError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise IKError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0, got {value!r}")
    return v


def _setup(figure: Figure, pose: ArrayLike, effector: str | Sequence[str], target: ArrayLike, *,
           batched: bool, chain: str | Iterable[str] | None, solver: SolverName | None, tol: float,
           orientation_tol: float, max_iter: int | None, orientation_weight: float, weights: ArrayLike | None,
           priority: bool,
           pole: ArrayLike | None, damping: float | None, step: StepPolicy, step_size: float | None,
           max_step: float | None, desired: ArrayLike | None, gains: float | ArrayLike | None,
           relax: bool = True) -> _Setup:
    fig = _check_figure(figure)
    method = DEFAULT_SOLVER if solver is None else solver
    if method not in SOLVERS:
        raise IKError(unknown_name("solver", str(method), SOLVERS))
    names = check_effectors(fig, effector)
    try:
        p = fig.check_pose(pose)
    except AnimkitError as exc:
        raise IKError(str(exc)) from None
    if p.ndim == 2 and not batched:
        raise IKError(f"solve takes one start pose (D,), got shape {p.shape}; use solve_batch for many")
    base_pose = p if p.ndim == 1 else p[0]
    movable = movable_dofs(fig, chain, names)
    label = "the movable set" if chain is None else f"movable set {chain!r}"
    model = _compiled_chain(fig, base_pose, movable, names, label)
    if p.ndim == 2:
        frozen = np.setdiff1d(np.arange(fig.dof_count), model.dofs)
        if frozen.size and not np.allclose(p[:, frozen], base_pose[frozen]):
            raise IKError("solve_batch: start poses may differ only in the DOFs of the chain being solved "
                          "(the others are frozen into the compiled chain once)")
    # targets
    E = len(names)
    if batched:
        try:
            T = np.asarray(target, dtype=float)
        except (TypeError, ValueError):
            raise IKError("targets must be an array of numbers: (B, 3) or (B, 4, 4)") from None
        if E > 1 and T.ndim >= 2 and T.shape[1] == E:
            pass
        elif E == 1 and T.ndim in (2, 3):
            T = T[:, None]
        else:
            raise IKError(f"targets must have shape (B, 3) or (B, 4, 4) (or (B, {E}, ...) for {E} effectors), "
                          f"got {T.shape}")
        if T.shape[2:] not in ((3,), (4, 4)):
            raise IKError(f"each target must be (3,) or (4, 4), got {T.shape[2:]}")
        if not np.all(np.isfinite(T)):
            raise IKError("targets hold NaN/inf")
        if T.shape[0] == 0:
            raise IKError("targets is empty: expected B >= 1 targets")
        if T.shape[2:] == (3,):
            P, R = T.copy(), None
        else:
            R = T[:, :, :3, :3].copy()
            P = T[:, :, :3, 3].copy()
            orth = np.abs(R @ np.swapaxes(R, -1, -2) - np.eye(3)).max()
            if orth > 1e-6 or np.any(np.linalg.det(R) < 0):
                raise IKError("4x4 targets must be rigid: orthonormal rotation with det +1")
        if p.ndim == 2 and p.shape[0] != T.shape[0]:
            raise IKError(f"{p.shape[0]} start poses for {T.shape[0]} targets; give one pose or one per target")
    else:
        P, R = parse_targets(target, E)
    orient = R is not None
    # weights
    ow = _positive("orientation_weight", orientation_weight)
    if weights is None:
        wv = np.ones(E)
    else:
        wv = np.asarray(weights, dtype=float).reshape(-1)
        if wv.shape != (E,) or not np.all(np.isfinite(wv)) or np.any(wv <= 0):
            raise IKError(f"weights: expected {E} positive numbers (one per effector), got {weights!r}")
    per = [math.sqrt(w) * np.array([1.0, 1.0, 1.0] + ([ow] * 3 if orient else [])) for w in wv]
    row_w = np.concatenate(per)
    # options that only some solvers take
    jac = method in JACOBIAN_SOLVERS
    if priority and (E < 2 or not jac):
        raise IKError("priority needs two or more effectors and a Jacobian solver "
                      f"({sorted(JACOBIAN_SOLVERS)}), got {E} effector(s) and solver {method!r}")
    if (desired is not None or gains is not None) and method != "nullspace":
        raise IKError(f"desired= and gains= apply to solver 'nullspace' only, not {method!r}")
    if damping is not None and method not in _DAMPING:
        raise IKError(f"damping= applies to solvers {sorted(_DAMPING)}, not {method!r}")
    if step not in ("full", "fixed"):
        raise IKError(unknown_name("step policy", str(step), ["full", "fixed"]))
    if step == "fixed" and not jac:
        raise IKError(f"step='fixed' applies to Jacobian solvers, not {method!r}")
    if step_size is not None and step != "fixed":
        raise IKError("step_size= applies with step='fixed' only")
    if pole is not None and method == "ccd":
        raise IKError("solver 'ccd' takes no pole; use a Jacobian solver or 'two-bone'")
    n = model.n
    des = g = None
    if method == "nullspace":
        lo, hi = model.lower, model.upper
        if desired is None:
            finite = np.isfinite(lo) & np.isfinite(hi)
            mid = np.where(finite, 0.5 * (np.where(finite, lo, 0.0) + np.where(finite, hi, 0.0)),
                           fig.rest_pose()[model.dofs])
            des = mid
        else:
            d = np.asarray(desired, dtype=float)
            if d.shape != (fig.dof_count,) or not np.all(np.isfinite(d)):
                raise IKError(f"desired: expected a full pose ({fig.dof_count},) of finite numbers, got shape "
                              f"{d.shape}")
            des = d[model.dofs]
        gv = np.asarray(0.1 if gains is None else gains, dtype=float)
        if gv.ndim == 1 and gv.shape == (fig.dof_count,):
            gv = gv[model.dofs]
        g = np.broadcast_to(gv, (n,)).astype(float) if gv.ndim == 0 else gv
        if g.shape != (n,) or not np.all(np.isfinite(g)) or np.any(g < 0):
            raise IKError(f"gains: expected one number >= 0 or a full vector ({fig.dof_count},), got {gains!r}")
    pole_v = None
    elbow = -1
    if pole is not None:
        pole_v = np.asarray(pole, dtype=float)
        if pole_v.shape != (3,) or not np.all(np.isfinite(pole_v)):
            raise IKError(f"pole must be a finite 3-vector, got {pole!r}")
        elbow = _elbow_link(model)
    mi = DEFAULT_MAX_ITER[method] if max_iter is None else max_iter
    if not isinstance(mi, (int, np.integer)) or isinstance(mi, bool) or mi < 1:
        raise IKError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    if max_step is not None and not jac:
        raise IKError(f"max_step= applies to Jacobian solvers, not {method!r}")
    if max_step is not None and max_step == math.inf:
        ms = None  # no cap
    else:
        ms = (DEFAULT_MAX_STEP if jac else None) if max_step is None else _positive("max_step", max_step)
    opts = Options(tol=_positive("tol", tol), orientation_tol=_positive("orientation_tol", orientation_tol),
                   max_iter=int(mi), damping=_DAMPING.get(method, 0.0) if damping is None else
                   _positive("damping", damping, allow_zero=True), step=step,
                   step_size=0.1 if step_size is None else _positive("step_size", step_size), max_step=ms,
                   priority=priority, desired=des, gains=g, pole=pole_v, elbow_link=elbow, row_weights=row_w)
    return _Setup(fig, p, model, method, opts, P, R, bool(relax) and method == "lm")


_CHAIN_CACHE: dict[tuple[object, ...], tuple[object, ChainModel]] = {}
_CHAIN_CACHE_SIZE = 64


def _compiled_chain(fig: Figure, pose: Array, movable: NDArray[np.intp], names: tuple[str, ...],
                    label: str) -> ChainModel:
    """:func:`compile_chain`, cached for repeated solves on one figure, effector set, movable set and frozen pose.

    Keyed by the figure's compiled state (a new object after any edit of the figure), the effectors, the movable
    DOFs and the values of every other DOF (they are folded into the chain's constants).
    """
    compiled = fig.compiled
    frozen = np.ones(fig.dof_count, dtype=bool)
    frozen[movable] = False
    key = (id(compiled), names, movable.tobytes(), pose[frozen].tobytes())
    hit = _CHAIN_CACHE.get(key)
    if hit is not None and hit[0] is compiled:
        return hit[1]
    model = compile_chain(fig, pose, movable, names, label)
    if len(_CHAIN_CACHE) >= _CHAIN_CACHE_SIZE:
        _CHAIN_CACHE.pop(next(iter(_CHAIN_CACHE)))
    _CHAIN_CACHE[key] = (compiled, model)
    return model


def _elbow_link(model: ChainModel) -> int:
    """The joint the pole bends: on effector 0's path, the joint farthest (along the chain) from both ends."""
    links = [int(k) for k in np.flatnonzero(model.eff_mask[0])]
    along = np.cumsum([0.0] + [float(np.linalg.norm(model.H0[k, :3, 3])) for k in links[1:]])
    total = along[-1] + float(np.linalg.norm(model.eff_C[0, :3, 3]))
    best, score = -1, 0.0
    for k, s in zip(links, along, strict=True):
        if model.link_node[k] == model.link_node[links[0]]:
            continue
        sc = min(s, total - s)
        if sc > score + 1e-12:
            best, score = k, sc
    if best < 0:
        raise IKError(f"a pole needs a chain with an elbow/knee: a joint between the base "
                      f"{model.link_node[links[0]]!r} and effector {model.effectors[0]!r}")
    return best


def _run(model: ChainModel, method: str, q0: Array, P: Array, R: Array | None, opts: Options, *,
         first_success: bool = False) -> LoopOutput:
    """LM with neither priority, pole nor fixed steps runs its own loop (:mod:`.lm`); the rest the shared one."""
    if method == "lm" and not opts.priority and opts.pole is None and opts.step == "full":
        return run_lm(model, q0, P, R, opts, first_success=first_success)
    return run(model, method, q0, P, R, opts)


BATCH_CHUNK = 4096  # problems iterated together: bounds memory, and lets the progress bar move


def _run_chunked(model: ChainModel, method: str, q0: Array, P: Array, R: Array | None, opts: Options, *,
                 quiet: bool) -> LoopOutput:
    """:func:`_run` over chunks of :data:`BATCH_CHUNK` problems; errors are held at each problem's last value."""
    B = len(q0)
    if B <= BATCH_CHUNK:
        return _run(model, method, q0, P, R, opts)
    parts = []
    bar = progress(B, "solving", enabled=False if quiet else None)
    for a in range(0, B, BATCH_CHUNK):
        b = min(a + BATCH_CHUNK, B)
        parts.append(_run(model, method, q0[a:b], P[a:b], None if R is None else R[a:b], opts))
        bar.update(b - a)
    bar.close()
    rows = max(len(p.errors) for p in parts)
    errors = np.concatenate([np.concatenate([p.errors, np.repeat(p.errors[-1:], rows - len(p.errors), 0)])
                             for p in parts], axis=1)
    return LoopOutput(np.concatenate([p.q for p in parts]), np.concatenate([p.iterations for p in parts]),
                      [w for p in parts for w in p.reason], np.concatenate([p.position_error for p in parts]),
                      np.concatenate([p.orientation_error for p in parts]), errors)


def _relax(model: ChainModel, q0: Array, P: Array, R: Array | None, opts: Options, out: LoopOutput) -> LoopOutput:
    """lm's second and third strategies (:func:`~animkit.ik.lm.retry_through_relaxed_limits`) for the problems
    the first run left neither converged nor shown out of reach (a target beyond reach has no better answer):
    through the relaxed limits from the start pose, then, for those still left, from where the first run stopped.
    No other start pose is drawn: these are the same local method on a relaxed problem, not restarts."""
    stopped = out.q
    for starts in (q0, stopped):
        if all(why == "converged" for why in out.reason):
            break
        reach, _ = _reachability(model, out, out.q, P, opts.tol)
        fail = np.flatnonzero(reach < 0)
        if fail.size == 0:
            break
        out = retry_through_relaxed_limits(model, starts, P, R, opts, out, fail)
    return out


def _reachability(model: ChainModel, out: LoopOutput, q: Array, P: Array, tol: float
                  ) -> tuple[NDArray[np.int8], list[str]]:
    """1 converged, 0 shown out of reach (beyond reach, or stretched toward it and stopped), −1 undecided."""
    reach = np.full(len(q), -1, dtype=np.int8)
    reasons = list(out.reason)
    if all(why == "converged" for why in reasons):
        reach[:] = 1
        return reach, reasons
    conv = np.array([why == "converged" for why in reasons])
    reach[conv] = 1
    open_ = np.flatnonzero(~conv)
    fr = model.frames(q[open_])  # only the problems still undecided
    for k, i in enumerate(open_.tolist()):
        for j in range(len(model.effectors)):
            base = fr.r[k, model.base_link[j]]
            to_t = P[i, j] - base
            to_e = fr.p[k, j] - base
            dt = float(np.linalg.norm(to_t))
            de = float(np.linalg.norm(to_e))
            beyond = dt > model.reach[j] + tol
            cos = float(to_t @ to_e) / max(dt * de, 1e-300)
            stretched = de >= (1.0 - 1e-3) * model.reach[j] and cos > 0.999 and dt > de
            if beyond or stretched:
                reach[i] = 0
                reasons[i] = "unreachable"
                break
    return reach, reasons


def _random_starts(model: ChainModel, q: Array, k: int, rng: np.random.Generator) -> Array:
    lo = np.where(np.isfinite(model.lower), model.lower, q - np.where(model.revolute, math.pi, 1.0))
    hi = np.where(np.isfinite(model.upper), model.upper, q + np.where(model.revolute, math.pi, 1.0))
    return rng.uniform(lo, hi, size=(k, model.n))


def solve(figure: Figure, pose: ArrayLike, effector: str | Sequence[str], target: ArrayLike, *,
          chain: str | Iterable[str] | None = None, solver: SolverName | None = None, tol: float = 1e-5,
          orientation_tol: float = 1e-4, max_iter: int | None = None, orientation_weight: float = 1.0,
          weights: ArrayLike | None = None, priority: bool = False,
          pole: ArrayLike | None = None, restarts: int = 0, time_budget: float | None = None, seed: int = 0,
          damping: float | None = None, step: StepPolicy = "full", step_size: float | None = None,
          max_step: float | None = None, desired: ArrayLike | None = None,
          gains: float | ArrayLike | None = None, relax: bool = True) -> IKResult:
    """Move the DOFs of ``chain`` so that ``effector`` reaches ``target``; everything else stays as in ``pose``.

    ``target`` is a 3-vector (position) or a 4×4 matrix (position and orientation); several effectors take a
    sequence of targets (with ``weights``, or ``priority`` = later effectors in the null space of the first).
    ``effector`` names nodes or the figure's rig effectors. ``chain`` is a chain name of the figure's rig, or
    joint/node/DOF names (chain names allowed among them); None means every DOF from the root to the
    effector(s). ``solver`` is one of ``SOLVERS``; None is Levenberg–Marquardt ("lm").
    ``relax`` (lm only, on by default): a run that does not converge gets a second strategy from the same start —
    solve with the revolute limits lifted, wrap the answer into the limits (θ ≡ θ + 2π), solve with them from
    there (see docs/derivations.md); turn it off where poses must stay near the start (the frames of a bake).
    ``restarts`` > 0 retries from random in-limit starts when the first run does not converge, until one
    converges, ``restarts`` starts have run, or ``time_budget`` seconds (counted from the call, the first run
    included) have passed. The first run is never cut by the budget; with restarts on, each run stops after at most
    ``RESTART_MAX_ITER`` iterations (or ``max_iter`` if smaller), and on a serial chain with one effector (lm) at
    a stall (``RESTART_STALL``). Restarts run 8 at a time (the compiled loop, or NumPy vectorised), one at a time
    on NumPy's B = 1 path; the budget is checked between these rounds.
    Bad input raises :class:`~animkit.IKError`; a target out of reach is a result with ``reachable=False``.
    """
    t0 = time.perf_counter()
    s = _setup(figure, pose, effector, target, batched=False, chain=chain, solver=solver, tol=tol,
               orientation_tol=orientation_tol, max_iter=max_iter,
               orientation_weight=orientation_weight, weights=weights, priority=priority, pole=pole,
               damping=damping, step=step, step_size=step_size, max_step=max_step, desired=desired, gains=gains,
               relax=relax)
    if isinstance(restarts, bool) or not isinstance(restarts, (int, np.integer)) or restarts < 0:
        raise IKError(f"restarts must be an integer >= 0, got {restarts!r}")
    if time_budget is not None:
        if restarts == 0:
            raise IKError("time_budget= bounds random restarts: give restarts= > 0 with it")
        _positive("time_budget", time_budget)
    model, P, R = s.model, s.P[None], None if s.R is None else s.R[None]
    q0 = s.pose[model.dofs][None]
    deadline = None if time_budget is None else t0 + time_budget
    # with restarts, every run (the first included) ends at convergence, a stall, or RESTART_MAX_ITER iterations
    # (Panda 6D, 5 ms budget: a cap of 50 gave 92.5 %, 100 gave 94 %: at ~130 µs per iteration the first run's
    # late convergences are worth more than the few restarts the budget leaves room for)
    opts = s.opts if not restarts else replace(s.opts, max_iter=min(s.opts.max_iter, RESTART_MAX_ITER),
                                               stall_window=RESTART_STALL[0], stall_ratio=RESTART_STALL[1])
    out = _run(model, s.method, q0, P, R, opts)  # never cut by the deadline
    if s.relax:
        out = _relax(model, q0, P, R, opts, out)
    opts = replace(opts, deadline=deadline, pull=RESTART_PULL)
    q_best = out.q
    used = 0
    if restarts and out.reason[0] != "converged":
        rng = np.random.default_rng(seed)
        single = s.method == "lm" and lm_single(model, opts)  # one at a time: each stops early when it stalls
        best_err = out.errors[-1, 0]
        while used < restarts and (deadline is None or time.perf_counter() < deadline):
            k = min(1 if single else _RESTART_BATCH, restarts - used)
            starts = _random_starts(model, q0[0], k, rng)
            o = _run(model, s.method, starts, np.repeat(P, k, 0), None if R is None else np.repeat(R, k, 0), opts,
                     first_success=True)
            conv = [i for i, r in enumerate(o.reason) if r == "converged"]
            pick = conv[0] if conv else int(np.argmin(o.errors[-1]))
            used += pick + 1 if conv else k
            if conv or o.errors[-1, pick] < best_err:
                best_err = o.errors[-1, pick]
                out = LoopOutput(o.q[pick:pick + 1], o.iterations[pick:pick + 1], [o.reason[pick]],
                                 o.position_error[pick:pick + 1], o.orientation_error[pick:pick + 1],
                                 o.errors[:, pick:pick + 1])
                q_best = out.q
            if conv:
                break
    reach, reasons = _reachability(model, out, q_best, P, s.opts.tol)
    full = s.pose.copy()
    full[model.dofs] = q_best[0]
    r = int(reach[0])
    why: Reason = reasons[0]  # type: ignore[assignment]
    return IKResult(full, why == "converged", None if r < 0 else bool(r), int(out.iterations[0]),
                    float(out.position_error[0]), float(out.orientation_error[0]), out.errors[:, 0].copy(), why,
                    s.method, used, time.perf_counter() - t0)


def solve_batch(figure: Figure, pose: ArrayLike, effector: str | Sequence[str], targets: ArrayLike, *,
                chain: str | Iterable[str] | None = None, solver: SolverName | None = None, tol: float = 1e-5,
                orientation_tol: float = 1e-4, max_iter: int | None = None, orientation_weight: float = 1.0,
          weights: ArrayLike | None = None, priority: bool = False,
                pole: ArrayLike | None = None, damping: float | None = None, step: StepPolicy = "full",
                step_size: float | None = None, max_step: float | None = None, desired: ArrayLike | None = None,
                gains: float | ArrayLike | None = None, quiet: bool = False, relax: bool = True) -> IKBatchResult:
    """Solve B problems at once: one start pose (D,) or one per target (B, D); targets (B, 3) or (B, 4, 4).

    Problems iterate together (vectorised) in chunks of :data:`BATCH_CHUNK`, each with its own damping and state;
    a finished problem is frozen. The chain is compiled once, from the first start pose: start poses may differ
    only in its DOFs. Options mean what they mean in :func:`solve`. A progress bar counts solved problems when
    the work takes over a second on a terminal (``quiet`` turns it off).
    """
    t0 = time.perf_counter()
    s = _setup(figure, pose, effector, targets, batched=True, chain=chain, solver=solver, tol=tol,
               orientation_tol=orientation_tol, max_iter=max_iter,
               orientation_weight=orientation_weight, weights=weights, priority=priority, pole=pole,
               damping=damping, step=step, step_size=step_size, max_step=max_step, desired=desired, gains=gains,
               relax=relax)
    model = s.model
    B = s.P.shape[0]
    q0 = np.broadcast_to(s.pose[..., model.dofs], (B, model.n)).copy()
    out = _run_chunked(model, s.method, q0, s.P, s.R, s.opts, quiet=quiet)
    if s.relax:
        out = _relax(model, q0, s.P, s.R, s.opts, out)
    reach, reasons = _reachability(model, out, out.q, s.P, s.opts.tol)
    base = s.pose if s.pose.ndim == 1 else s.pose[0]
    poses = np.repeat(base[None], B, 0)
    poses[:, model.dofs] = out.q
    return IKBatchResult(poses, np.array([r == "converged" for r in reasons]), reach, out.iterations,
                         out.position_error, out.orientation_error, out.errors, tuple(reasons),  # type: ignore
                         s.method, time.perf_counter() - t0)
