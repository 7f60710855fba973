"""Bake IK reaches into clips, and compare movable sets (and solvers) on one reach.

A reach moves the effector from where it is to the target along a smooth path,

    w(t) = e₀ + s(t/T) (x_target − e₀),   s(u) = 3u² − 2u³ (ease in and out),

then holds for ``hold`` seconds. Each frame k solves IK toward w(t_k) warm-started from
frame k−1, and the step is limited to ``max_speed`` rad/s (m/s for prismatic DOFs), so the
joints never pop; DOFs outside the movable set keep their start values. The baked result is
an ordinary :class:`~animkit.keyframes.Clip`.

A comparison bakes the same reach once per movable set (and per solver), and reports for
each: reached or not, final error, iterations, solve time, total joint rotation and the
joints that moved most. It returns clips and metrics and draws nothing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .chains import dof_indices
from .display import html_for
from .errors import AnimkitError, IKError, SceneError
from .figure import Figure
from .ik import LM, IKProblem, IKResult, PosePrior, Solver, solver_from_name
from .ik.natural import NaturalProblem, Priors
from .keyframes import Clip
from .limits import frame_count
from .progress import progress
from .scene import Scene

__all__ = ["ReachResult", "Comparison", "bake_reach", "compare", "smoothstep", "priors_from_scene"]

Array = NDArray[np.float64]


def smoothstep(u: ArrayLike) -> Array:
    """s(u) = 3u² − 2u³ on [0, 1] (zero velocity at both ends), clamped outside."""
    v: Array = np.clip(np.asarray(u, dtype=float), 0.0, 1.0)
    return v * v * (3.0 - 2.0 * v)


@dataclass(frozen=True, eq=False)
class ReachResult:
    """One baked reach: the clip, per-frame poses and effector trail, and the solver's result."""

    label: str
    chain: str | None
    solver: str
    effector: str
    target: Array  # (3,) or (4, 4)
    clip: Clip
    times: Array  # (F,)
    poses: Array  # (F, D)
    waypoints: Array  # (F, 3): where the effector was asked to be at each frame
    trail: Array  # (F, 3): where it was
    result: IKResult  # the solve from the start pose straight to the target (table and plot)
    frame_iterations: int  # IK iterations summed over every frame of the bake
    frame_time_s: float  # time spent solving every frame of the bake
    moved: tuple[tuple[str, float], ...]  # joints by rotation over the clip (degrees), most first
    total_rotation_deg: float
    natural: bool = False  # baked with priors (animkit.ik.natural)
    gaze_deg: float | None = None  # at the last frame: head's forward axis vs the direction to the target
    com_margin: float | None = None  # at the last frame: CoM to the support polygon's edge (m, positive inside)
    effort: float | None = None  # at the last frame: Σ |static gravity torque| over the non-root DOFs (N·m)
    feet_drift: float | None = None  # over the clip: the largest distance a planted foot moved (m)

    def __repr__(self) -> str:
        """One line: label, effector, reached or not, frames."""
        state = "reached" if self.result.converged else f"not reached ({self.result.position_error:.3g})"
        return f"ReachResult({self.label!r}, {self.effector!r} {state}, {len(self.poses)} frames, {self.solver})"

    def _repr_html_(self) -> str | None:
        """In Jupyter: the reach playing, target and trail drawn, labelled with its outcome."""
        return html_for(self)

    @property
    def reached(self) -> bool:
        return bool(self.result.converged)

    @property
    def clip_final_error(self) -> float:
        """Distance from the effector to the target at the clip's last frame."""
        return float(np.linalg.norm(self.trail[-1] - _position(self.target)))

    def metrics(self) -> dict[str, Any]:
        """JSON-ready numbers: exactly the solver result's fields, plus the clip's motion."""
        r = self.result
        return {
            "label": self.label,
            "chain": self.chain,
            "solver": self.solver,
            "reached": bool(r.converged),
            "reachable": None if r.reachable is None else bool(r.reachable),
            "reason": r.reason,
            "final_error": float(r.position_error),
            "orientation_error": float(r.orientation_error),
            "iterations": int(r.iterations),
            "solve_time_s": float(r.time_s),
            "clip_final_error": self.clip_final_error,
            "bake_iterations": int(self.frame_iterations),
            "bake_time_s": float(self.frame_time_s),
            "total_rotation_deg": float(self.total_rotation_deg),
            "moved_most": [{"joint": j, "degrees": float(d)} for j, d in self.moved[:3]],
            "errors": [float(e) for e in r.errors],
            "natural": self.natural,
            "gaze_error_deg": self.gaze_deg,
            "com_margin": self.com_margin,
            "effort": self.effort,
            "feet_drift": self.feet_drift,
        }


@dataclass(frozen=True, eq=False)
class Comparison:
    """Several reaches of one effector toward one target, one per movable set and solver."""

    effector: str
    target: Array
    panels: tuple[ReachResult, ...]
    fps: float
    start_pose: Array = field(repr=False)

    def __repr__(self) -> str:
        """One line: effector, panels (reached or not), frames."""
        panels = ", ".join(f"{p.label} {'reached' if p.result.converged else 'not reached'}" for p in self.panels)
        frames = max((len(p.poses) for p in self.panels), default=0)
        return f"Comparison({self.effector!r}: {panels}; {frames} frames at {self.fps:g} fps)"

    def _repr_html_(self) -> str | None:
        """In Jupyter: the panels side by side, as ``animkit compare`` draws them."""
        return html_for(self)

    def metrics(self) -> dict[str, Any]:
        return {"effector": self.effector, "target": [float(x) for x in np.ravel(self.target)],
                "fps": self.fps, "panels": [p.metrics() for p in self.panels]}

    def table(self) -> str:
        """The metrics as a fixed-width text table, one row per panel."""
        head = (f"{'panel':<22}{'reached':>8}{'error (m)':>12}{'iters':>7}{'time (ms)':>11}{'rotation':>10}"
                f"{'gaze':>7}{'CoM (cm)':>10}{'effort':>8}  moved most")
        rows = [head, "-" * len(head)]

        def opt(v: float | None, fmt: str, width: int) -> str:
            return f"{'–':>{width}}" if v is None else f"{v:>{width}{fmt}}"

        for p in self.panels:
            m = p.metrics()
            moved = ", ".join(f"{j} {d:.0f}°" for j, d in p.moved[:3])
            rows.append(f"{p.label:<22}{'yes' if m['reached'] else 'no':>8}{m['final_error']:>12.4g}"
                        f"{m['iterations']:>7d}{m['solve_time_s'] * 1e3:>11.2f}{m['total_rotation_deg']:>9.0f}°"
                        f"{opt(p.gaze_deg, '.0f', 6)}{'' if p.gaze_deg is None else '°':1}"
                        f"{opt(None if p.com_margin is None else p.com_margin * 100, '.1f', 10)}"
                        f"{opt(p.effort, '.0f', 8)}  {moved}")
        return "\n".join(rows)


def _position(target: Array) -> Array:
    return target[:3, 3] if target.shape == (4, 4) else target


def _check_target(target: ArrayLike) -> Array:
    t = np.asarray(target, dtype=float)
    if t.shape not in ((3,), (4, 4)) or not np.all(np.isfinite(t)):
        raise IKError(f"a reach target is a point (3 numbers) or a 4x4 pose, all finite; got {np.asarray(target)!r}")
    return t


def bake_reach(figure: Figure, effector: str, target: ArrayLike, *, start_pose: ArrayLike | None = None,
               chain: str | Sequence[str] | None = None, solver: Solver | str | None = None, duration: float = 2.0,
               hold: float = 0.5, fps: float = 30.0,
               path: tuple[ArrayLike, ArrayLike] | None = None, max_speed: float = 2.0 * math.pi,
               frame_iterations: int = 30, tol: float = 1e-4, name: str = "reach", label: str | None = None,
               priors: Priors | None = None, quiet: bool = False) -> ReachResult:
    """Bake a reach of ``effector`` toward ``target`` into a clip (see the module docstring).

    ``effector`` is a node or an effector of the figure's rig; ``chain`` a chain of its rig, or joint/node/DOF
    names (None: every DOF from the root to the effector).

    ``path`` = (times (K,), points (K, 3)) gives a moving target instead (e.g. a ball): the effector
    follows the points, linearly interpolated at each frame, and ``target`` is the last point's pose.

    ``priors`` (:class:`~animkit.ik.natural.Priors`) bakes a natural reach instead: every frame and the direct solve
    run :class:`~animkit.ik.natural.NaturalProblem` (stiffness, comfort, spine spread, gaze, planted feet and
    balance; ``solver`` is then used only to decide reachability when the natural solve falls short), and the
    result carries the gaze error, centre-of-mass margin, effort and feet drift.
    """
    if not (duration > 0 and hold >= 0 and fps > 0):
        raise IKError(f"duration and fps must be > 0 and hold >= 0; got duration={duration}, hold={hold}, fps={fps}")
    try:
        frame_count(duration + hold, fps, "reach")
    except AnimkitError as exc:
        raise IKError(str(exc)) from None
    tgt = _check_target(target)
    pose0 = figure.rest_pose() if start_pose is None else figure.check_pose(start_pose).astype(float)
    try:
        effector = figure.effector(effector)
        movable = dof_indices(figure, chain, effector=effector)
    except SceneError as exc:
        raise IKError(str(exc)) from None
    node_index = figure.node_names.index(effector)
    n_frames = int(round((duration + hold) * fps)) + 1
    times = np.arange(n_frames) / fps
    e0 = figure.world_positions(pose0)[0, node_index]
    goal = _position(tgt)
    if path is None:
        s = smoothstep(times / duration)[:, None]
        waypoints = e0 + s * (goal - e0)
    else:
        pt, pp = (np.asarray(a, dtype=float) for a in path)
        if pp.ndim != 2 or pp.shape[1] != 3 or pt.shape != (len(pp),) or np.any(np.diff(pt) <= 0):
            raise IKError("path must be (times (K,), points (K, 3)) with increasing times")
        waypoints = np.stack([np.interp(times, pt, pp[:, k]) for k in range(3)], axis=1)
    orient = tgt[:3, :3] if tgt.shape == (4, 4) else None
    lim = figure.dof_limits()
    step_cap = max_speed / fps
    poses = np.empty((n_frames, figure.dof_count))
    poses[0] = pose0
    iters = 0
    t_solve = 0.0
    # one problem, compiled once, for every frame and the direct solve; the frames run lm without the
    # relaxed-limits retry (a frame's solve must stay near the previous frame: no jump to another branch)
    chain_dofs = list(np.asarray(figure.dof_names)[movable])
    base = solver_from_name(solver) if isinstance(solver, str) else (solver or LM())
    direct_solver = replace(base, max_iter=max(200, frame_iterations)) if hasattr(base, "max_iter") else base
    frame_solver = replace(base, max_iter=frame_iterations, **({"relax": False} if isinstance(base, LM) else {}))
    problem = IKProblem(figure, effector, chain_dofs, pose=pose0, orientation=orient is not None,
                        solver=frame_solver, tol=tol)
    nat = None if priors is None else NaturalProblem(figure, effector, chain_dofs, priors, pose=pose0,
                                                     orientation=orient is not None, tol=tol)
    measure = nat
    if nat is not None and priors is not None and not nat.active and isinstance(base, LM):
        # only stiffness (and the comfort pull) applies: lm has stiffness, and is much faster
        stiff = {k: float(v) for k, v in dict(priors.stiffness).items()
                 if set(figure.joint_dofs.get(k, ())) & set(movable.tolist())} or None
        problem = problem.using(replace(base, max_iter=frame_iterations, relax=False, stiffness=stiff))
        direct_solver = replace(base, max_iter=max(200, frame_iterations), stiffness=stiff)
        nat = None
    for k in progress(range(1, n_frames), f"baking {label or name}", enabled=False if quiet else None):
        w = waypoints[k]
        frame_target = w if orient is None else _pose_matrix(orient, w)
        t0 = time.perf_counter()
        if nat is None:
            r = problem.solve(frame_target, poses[k - 1])
            iters, reached = iters + r.iterations, r.pose
        else:
            rn = nat.solve(frame_target, poses[k - 1], max_iter=NATURAL_FRAME_ITERATIONS, settle=False)
            iters, reached = iters + rn.iterations, rn.pose
        t_solve += time.perf_counter() - t0
        delta = reached - poses[k - 1]
        biggest = float(np.max(np.abs(delta))) if delta.size else 0.0
        if biggest > step_cap:  # keep the direction, bound the speed
            delta *= step_cap / biggest
        poses[k] = np.clip(poses[k - 1] + delta, lim[:, 0], lim[:, 1])
    # the table's numbers: one solve from the start pose straight to the target, as a plain solve() would
    direct = problem.using(direct_solver).solve(tgt, pose0) if nat is None else _natural_direct(nat, problem, tgt,
                                                                                                 pose0)
    trail = figure.world_positions(poses)[:, node_index]
    moved, total = _rotation_summary(figure, poses)
    extra: dict[str, Any] = {}
    if measure is not None:
        extra = {"natural": True, "gaze_deg": measure.gaze_deg(poses[-1], _position(tgt)),
                 "com_margin": measure.com_margin(poses[-1]), "effort": measure.effort(poses[-1]),
                 "feet_drift": measure.feet_drift(poses)}
    chain_name = chain if isinstance(chain, str) else None
    solver_name = direct.solver
    solver = solver if solver is None or isinstance(solver, str) else solver_name
    clip = Clip.from_poses(figure, times, poses, name=name, fps=fps)
    return ReachResult(label or (chain_name or "chain") + ("" if solver is None else f" · {solver_name}"),
                       chain_name, solver_name, effector, tgt, clip, times, poses, waypoints, trail, direct,
                       iters, t_solve, moved, total, **extra)


NATURAL_FRAME_ITERATIONS = 8  # a natural bake's most iterations per frame (warm-started: the waypoints move ~1 cm)
NATURAL_DIRECT_ITERATIONS = 100  # the direct solve (the table's numbers) stops once the target is met (~20)


def _natural_direct(nat: NaturalProblem, problem: IKProblem, target: Array, pose0: Array) -> IKResult:
    """The natural solve from the start as an :class:`IKResult`; reachable when it converged, else (without planted
    feet) the plain solver's verdict on the same movable set, else undecided."""
    r = nat.solve(target, pose0, max_iter=NATURAL_DIRECT_ITERATIONS, settle=False)
    reachable: bool | None = True if r.converged else None
    if not r.converged and not nat.feet_planted:
        reachable = problem.using(replace(problem.solver, max_iter=200) if hasattr(problem.solver, "max_iter")
                                  else problem.solver).solve(target, pose0).reachable
    reason = "converged" if r.converged else "unreachable" if reachable is False else "max_iterations"
    return IKResult(r.pose, r.converged, reachable, r.iterations, r.position_error, r.orientation_error, r.errors,
                    reason, "natural", 0, r.time_s)  # type: ignore[arg-type]


def _pose_matrix(R: Array, p: Array) -> Array:
    M = np.eye(4)
    M[:3, :3] = R
    M[:3, 3] = p
    return M


def _rotation_summary(figure: Figure, poses: Array) -> tuple[tuple[tuple[str, float], ...], float]:
    """Per joint, Σ_frames Σ_revolute DOFs |Δθ| in degrees (most first), and the total over all joints."""
    rev = np.array([d.revolute for d in figure.dofs], dtype=bool)
    travel = np.abs(np.diff(poses, axis=0)).sum(axis=0) if len(poses) > 1 else np.zeros(figure.dof_count)
    travel = np.degrees(np.where(rev, travel, 0.0))
    per_joint = [(j, float(travel[idx].sum())) for j, idx in figure.joint_dofs.items() if idx]
    per_joint = [(j, d) for j, d in per_joint if d > 1e-9]
    per_joint.sort(key=lambda jd: -jd[1])
    return tuple(per_joint), float(travel.sum())


def compare(scene: Scene, *, effector: str | None = None, target: ArrayLike | None = None,
            chains: Sequence[str] | None = None, solvers: Sequence[str | None] | None = None,
            duration: float | None = None, hold: float | None = None, fps: float | None = None,
            start_pose: ArrayLike | None = None, priors: Priors | None | bool = True, quiet: bool = False
            ) -> Comparison:
    """One reach per movable set (× solver), defaults from the scene's ``[reach]`` section.

    ``priors``: True takes the scene's ``[reach.priors]`` (natural reaching; none when the scene has none), False
    or None bakes plain reaches, a :class:`~animkit.ik.natural.Priors` is used as given. Natural reaching runs its
    own prioritised solver, so ``solvers`` given here compare plain reaches: with them, True means no priors, and a
    :class:`~animkit.ik.natural.Priors` is an error (it would make every solver's panel the same)."""
    spec = scene.reach
    eff = effector or (spec.effector if spec else None)
    if eff is None:
        raise IKError(f"{scene.source or 'scene'}: no effector given and the scene has no [reach] effector")
    fig = scene.figure
    try:
        node = fig.effector(eff)
    except SceneError as exc:
        raise IKError(str(exc)) from None
    tgt = target if target is not None else (spec.target if spec else None)
    if tgt is None:
        raise IKError(f"{scene.source or 'scene'}: no target given and the scene has no [reach] target")
    names = list(chains) if chains else list(spec.chains if spec and spec.chains else fig.rig.chains)
    if not names:
        raise IKError(f"{scene.source or 'scene'}: no movable sets: give chains or declare [chains]")
    for c in names:
        try:
            fig.chain(c)  # unknown names fail here, listing the valid ones
        except SceneError as exc:
            raise IKError(str(exc)) from None
    solver_list: list[str | None] = list(solvers) if solvers else (list(spec.solvers) if spec and spec.solvers
                                                                    else [None])
    duration = duration if duration is not None else (spec.duration if spec else 2.0)
    hold = hold if hold is not None else (spec.hold if spec else 0.5)
    fps = fps if fps is not None else (spec.fps if spec else 30.0)
    if start_pose is None and spec is not None and spec.start_clip is not None:
        start_pose = scene.clip(spec.start_clip).sample(np.zeros(1))[0]
    pose0 = scene.figure.rest_pose() if start_pose is None else scene.figure.check_pose(start_pose)
    if solvers and priors not in (True, False, None):
        raise IKError("solvers= compares plain reaches; natural-reaching priors run their own solver (every "
                      "solver's panel would be the same): give priors=False or leave solvers out")
    pri = None if solvers else priors_from_scene(scene) if priors is True else (priors or None)
    panels = []
    for c in names:
        for s in solver_list:
            label = c if len(solver_list) == 1 else f"{c} · {s or 'default'}"
            panels.append(bake_reach(scene.figure, node, tgt, start_pose=pose0, chain=c,
                                     solver=s, duration=duration, hold=hold, fps=fps, name=f"reach-{c}",
                                     label=label, priors=pri, quiet=quiet))
    return Comparison(node, _check_target(tgt), tuple(panels), fps, pose0)


def priors_from_scene(scene: Scene) -> Priors | None:
    """The scene's ``[reach.priors]`` as :class:`~animkit.ik.natural.Priors` (its up axis included); None when the
    scene has none. Bad values raise IKError naming the scene file."""
    spec = scene.reach
    if spec is None or spec.priors is None:
        return None
    kw: dict[str, Any] = dict(spec.priors)
    up = (0.0, 1.0, 0.0) if scene.up == "y" else (0.0, 0.0, 1.0)
    try:
        if isinstance(kw.get("prior"), str):  # "default" or a file relative to the scene (checked when read)
            ref = kw["prior"]
            kw["prior"] = PosePrior.load(None if ref == "default" or scene.source is None
                                         else Path(scene.source).parent / ref)
        return Priors(**kw, up=up)
    except TypeError as exc:
        raise IKError(f"{scene.source or 'scene'}: [reach.priors]: {exc}") from None
    except IKError as exc:
        raise IKError(f"{scene.source or 'scene'}: [reach.priors]: {exc}") from None
